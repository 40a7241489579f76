"""Mutants: realistic privacy bugs injected into the real algorithms, to measure the audit's power.

Each ``Mutant`` names a registered algorithm and a context manager that injects one bug *without editing the
algorithm's code*: it patches, for the duration of one audit, a function the algorithm calls (a family's sensitivity
function, the seeded noise source, the privacy map of a mechanism).  Two kinds per DP family:

* ``half-noise`` — every privacy-noise draw of the seeded noise source is halved (``halved_noise``): Laplace,
  Gaussian, Gumbel and Student-t scales, the Gamma norm of output perturbation.  The mechanisms still record the
  spend of the scale they were asked for, so the claim stays ε while the noise is worth 2ε (for the exponential
  mechanism, halving the Gumbel noise of Gumbel-max doubles every log-weight: the exponential mechanism at 2ε);
* ``double-eps`` — the claim and the noise disagree by 2 the way a bug in an algorithm would: a sensitivity (or the
  exponential mechanism's utility sensitivity) understated by 2, so the noise is calibrated to Δ/2 while the ledger
  records ε with Δ/2 (``scaled``); or a privacy map that counts half of the ε the noise was calibrated to — one ε
  share counted once but used twice (``undercounted_spends``).

One ``overspend`` mutant (``rplr/budget-overspend``): budget shares that sum to 1.1, so the noise and the ledger
agree on 1.1ε while the cell asked for ε.  The audit FAILs it by arithmetic (``privacy.budget.check_spend``, the same
check that fails such a cell in a run), not by statistics.

``run_mutants`` audits every mutant with the default settings and prints the table mutant × detected, ending with
``mutants detected: K/N``.  A mutant is *detected* when its audit row FAILs.  Mutants whose bug is provably not a
privacy violation (the algorithm's sensitivity is loose by more than the bug) are listed with ``violation=False``:
they are expected to PASS and are not counted in N (docs/audit.md explains each).  Bugs that are only *partial*
violations (``weak=True``: the most one row can realise with the bug is ``factor``·ε with 1 < factor < 2, e.g. plr's
factor 2 at 25/16 ε, because x² and xy cannot both move by their full range) are listed as "≤ factor×: not
detected" or "detected", not counted, and either verdict is accepted; so are the real
violations the audit's trial count cannot resolve (``unresolved``, with the reason: plr's cross terms forgotten).

The cross-term mutants (``*/cross-terms-forgotten``: DCA's Δ₂, the GDSC family's XᵀX) run on d ≥ 4 designs of their
family (``Mutant.design``): at d = 1 there are no cross terms to forget.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from dpexp.errors import UserError

__all__ = ["Mutant", "MUTANTS", "FAST_MUTANTS", "mutant_names", "audit_mutant", "run_mutants", "halved_noise",
           "scaled", "undercounted_spends"]


# ---------------------------------------------------------------------------------------------------- patches
@contextlib.contextmanager
def _patched(target: Any, attr: str, value: Any) -> Iterator[None]:
    old = getattr(target, attr)
    setattr(target, attr, value)
    try:
        yield
    finally:
        setattr(target, attr, old)


def _resolve(path: str) -> tuple[Any, str]:
    """'pkg.module:Attr.attr' or 'pkg.module:attr' -> (object holding the attribute, attribute name)."""
    mod, _, rest = path.partition(":")
    obj: Any = importlib.import_module(mod)
    *owners, attr = rest.split(".")
    for o in owners:
        obj = getattr(obj, o)
    return obj, attr


@contextlib.contextmanager
def halved_noise() -> Iterator[None]:
    """Every privacy-noise draw of ``SeededNoise`` (the audit's noise source) at half its scale; uniforms,
    integers and the non-privacy ``generator`` are untouched."""
    from dpexp.privacy.noise import SeededNoise as S

    orig = {m: getattr(S, m) for m in ("laplace", "normal", "gumbel", "standard_normal", "standard_t", "gamma",
                                       "standard_gamma", "exponential")}

    def loc_scale(m):
        return lambda self, loc=0.0, scale=1.0, size=None: orig[m](self, loc, np.multiply(scale, 0.5), size)

    def times_half(m):
        return lambda self, *a, **k: 0.5 * np.asarray(orig[m](self, *a, **k))

    new = {"laplace": loc_scale("laplace"), "normal": loc_scale("normal"), "gumbel": loc_scale("gumbel"),
           "standard_normal": times_half("standard_normal"), "standard_t": times_half("standard_t"),
           "standard_gamma": times_half("standard_gamma"),
           "gamma": lambda self, shape, scale=1.0, size=None: orig["gamma"](self, shape, np.multiply(scale, 0.5),
                                                                           size),
           "exponential": lambda self, scale=1.0, size=None: orig["exponential"](self, np.multiply(scale, 0.5),
                                                                                  size)}
    with contextlib.ExitStack() as st:
        for m, f in new.items():
            st.enter_context(_patched(S, m, f))
        yield


def _scale_result(r: Any, factor: float, index: int | None) -> Any:
    if isinstance(r, tuple):
        return tuple(v * factor if (index is None or i == index) else v for i, v in enumerate(r))
    return r * factor


@contextlib.contextmanager
def scaled(*paths: str, factor: float = 0.5, index: int | None = None) -> Iterator[None]:
    """Multiply what the functions at ``paths`` ('module:function' or 'module:Class.method') return by ``factor``
    (a tuple: every entry, or only entry ``index``): e.g. a sensitivity function understated by 2."""
    with contextlib.ExitStack() as st:
        for p in paths:
            obj, attr = _resolve(p)
            f = getattr(obj, attr)

            def g(*a, __f=f, **k):
                return _scale_result(__f(*a, **k), factor, index)

            st.enter_context(_patched(obj, attr, g))
        yield


@contextlib.contextmanager
def undercounted_spends(factor: float = 0.5) -> Iterator[None]:
    """The privacy map counts ``factor`` of the ε its noise was calibrated to (ρ: factor²; δ unchanged): an ε share
    counted once but used twice.  Patches ``PrivacyLedger.record``, through which every spend is written."""
    from dpexp.privacy.ledger import PrivacyLedger

    orig = PrivacyLedger.record

    def record(self, spend):
        if spend.notion in ("pure", "approx", "zcdp"):
            spend = dataclasses.replace(spend, epsilon=spend.epsilon * factor, rho=spend.rho * factor * factor)
        return orig(self, spend)

    with _patched(PrivacyLedger, "record", record):
        yield


#: the modules the mutants patch, named like every other target here (the auditor imports no family: the house
#: stays one-directional; the families are loaded by the registry before any audit)
_MEDIAN = "dpexp.families.slr.dp_median"
_THEIL_SEN = "dpexp.families.slr.algorithms.dp_theil_sen"
_DCA_MODULE = "dpexp.families.dca.algorithms.dlr"
_STATS_MODULE = "dpexp.families.gdsc.stats"
_UNIT_BOX_MODULE = "dpexp.families.gdsc.unit_box"
_RELEASE_BATCH_MODULE = "dpexp.families.gdsc.release_batch"
_ADASSP_MODULE = "dpexp.families.gdsc.algorithms.adassp"


def _target(module: str) -> Any:
    return importlib.import_module(module)


@contextlib.contextmanager
def exp_median_double_eps() -> Iterator[None]:
    """DP Theil–Sen's exponential-mechanism median sampled at 2·ε_med while its spend records ε_med."""
    dp_median, ts = _target(_MEDIAN), _target(_THEIL_SEN)
    rec = dp_median._record_exponential

    def half_record(source, eps, k, label):
        return rec(source, 0.5 * eps, k, label)

    def wrap(f):
        def g(z, eps, *a, **k):
            with _patched(dp_median, "_record_exponential", half_record):
                return f(z, 2.0 * eps, *a, **k)
        return g

    with _patched(ts, "exp_median", wrap(ts.exp_median)), _patched(ts, "exp_median_rows", wrap(ts.exp_median_rows)):
        yield


@contextlib.contextmanager
def median_k_forgotten() -> Iterator[None]:
    """DP Theil–Sen forgets that one datapoint enters k estimates (Lemma 2: the transform is k-Lipschitz): the
    exponential median runs at ε/n_test instead of ε/(n_test k) and records k = 1; the smooth-sensitivity median uses
    the bound S¹ instead of Sᵏ.  The claim stays ε while one point can move k estimates: up to k·ε."""
    ts = _target(_THEIL_SEN)
    em, emr, ssm = ts.exp_median, ts.exp_median_rows, ts.ss_median

    def exp_median(z, eps, *a, k=1, **kw):
        return em(z, eps * k, *a, k=1, **kw)

    def exp_median_rows(Z, eps, *a, k=1, **kw):
        return emr(Z, eps * k, *a, k=1, **kw)

    def ss_median(zs, eps, k, *a, **kw):
        return ssm(zs, eps, 1, *a, **kw)

    with _patched(ts, "exp_median", exp_median), _patched(ts, "exp_median_rows", exp_median_rows), \
            _patched(ts, "ss_median", ss_median):
        yield


@contextlib.contextmanager
def free_data_sigma() -> Iterator[None]:
    """rplr with ``sigma: data`` whose ledger forgets that the clipping σ came from the private rows (the claim
    stays ε): the issue's D/D′ leak."""
    from dpexp.privacy.ledger import PrivacyLedger

    with _patched(PrivacyLedger, "not_dp", lambda self, reason, label="": None):
        yield


@contextlib.contextmanager
def unit_box_unclipped() -> Iterator[None]:
    """oplr/fmlr scale x by B_x and y by B_y but forget to clip them to [−1, 1] (``unit_box.clip_unit``, their one
    clipping step; oplr still projects x onto the unit ball): a bound mismatch — the sensitivity assumes |ỹ| ≤ 1
    while a row can carry any ỹ."""
    with _patched(_target(_UNIT_BOX_MODULE), "clip_unit", lambda a: a):
        yield


@contextlib.contextmanager
def sigma_noiseless_bounds() -> Iterator[None]:
    """rplr's batched σ̂ release records its spends (and draws) but takes the clipping bounds from the noiseless
    RMS of the private rows: the bounds, and so the clipped statistics, move with one row at no cost (issue 27's
    batched-path bug; only ``release_batch.release_sigmas`` is patched, the code ``run_many`` runs)."""
    rb = _target(_RELEASE_BATCH_MODULE)
    real = rb.release_sigmas

    def noiseless(sums, counts, d, bx, by, eps_s, standard, ledgers):
        real(sums, counts, d, bx, by, eps_s, standard, ledgers)   # the spends recorded as the correct code does
        T = standard.shape[1] // 2
        sx = np.sqrt(np.maximum(sums[:, :1], 0.0) / np.maximum(counts * d, 1)[:, None])
        sy = np.sqrt(np.maximum(sums[:, 1:], 0.0) / np.maximum(counts, 1)[:, None])
        return (np.maximum(np.broadcast_to(sx, (len(counts), T)), 1e-12),
                np.maximum(np.broadcast_to(sy, (len(counts), T)), 1e-12))

    with _patched(rb, "release_sigmas", noiseless):
        yield


@contextlib.contextmanager
def adassp_unclipped() -> Iterator[None]:
    """AdaSSP's norm projection forgotten: the row norms it clips with (``row_norms`` as the algorithm module sees
    it) read as 0, so no row is rescaled onto ‖x‖ ≤ B_X, while the sensitivities still assume it."""
    with _patched(_target(_ADASSP_MODULE), "row_norms", lambda X: np.zeros(X.shape[:-1])):
        yield


@contextlib.contextmanager
def stats_unclipped() -> Iterator[None]:
    """The clipped-statistics family forgets the outlier projection (Eq. 9, ``stats.clip``) while the sensitivities
    still assume |x_j| ≤ B_x, |y| ≤ B_y."""
    with _patched(_target(_STATS_MODULE), "clip", lambda X, y, B_x, B_y: (X, y)):
        yield


class _NoClipNumpy:
    """numpy, except that ``clip`` returns its input: the DCA family's clipping step forgotten."""

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)

    @staticmethod
    def clip(a, *args, **kwargs):
        return np.asarray(a)


@contextlib.contextmanager
def dca_unclipped() -> Iterator[None]:
    """The distributed BLR family forgets Alg. 2 step 1 (projection of every record to the assumed bounds) while
    Δ₂ still assumes |x| ≤ c_x, |y| ≤ c_y."""
    with _patched(_target(_DCA_MODULE), "np", _NoClipNumpy()):
        yield


@contextlib.contextmanager
def dca_cross_terms_forgotten() -> Iterator[None]:
    """The distributed BLR family's Δ₂ (supplement eq. (18)) counting the squares x_j² and the x_j y terms but not
    the cross terms x_j x_k (j < k) of XᵀX."""
    dlr = _target(_DCA_MODULE)

    def ss_sensitivity(c_x, c_y, d=None):
        c = np.asarray(c_x, dtype=float)
        c = np.full(int(d), float(c)) if c.ndim == 0 else c
        return float(np.sqrt(np.sum(c**4) + 4.0 * np.sum(c**2) * c_y**2))

    with _patched(dlr, "ss_sensitivity", ss_sensitivity):
        yield


@contextlib.contextmanager
def xx_cross_terms_forgotten() -> Iterator[None]:
    """The clipped-statistics family's XᵀX sensitivity counting only the diagonal, d·B_x², as if the d(d − 1)/2
    cross terms x_j x_k (j < k) did not move with a row.  Wraps ``stats.sensitivities`` (looked up at call time by
    ``release_batch``, the production path): every argument passes through and only the XᵀX entry is replaced, so
    the wrapper follows whatever the real function computes for Xᵀy and yᵀy."""
    stats = _target(_STATS_MODULE)
    real = stats.sensitivities

    def sensitivities(*a, **k):
        s = real(*a, **k)
        d = a[0] if a else k["d"]
        B_x = a[1] if len(a) > 1 else k["B_x"]
        return (d * B_x**2, *tuple(s)[1:])

    with _patched(stats, "sensitivities", sensitivities):
        yield


# ---------------------------------------------------------------------------------------------------- mutants
@dataclass(frozen=True)
class Mutant:
    """One injected bug: ``patch()`` is entered around the whole audit of ``algorithm``; ``params`` update the
    algorithm's audit parameters; ``violation`` False marks a bug that provably leaves the release DP (expected
    PASS; listed with its derivation, not counted); ``weak`` marks one that is a violation of at most ``factor``·ε
    (1 < factor < 2: no row realises the full factor 2; listed, not counted, either verdict accepted);
    ``unresolved`` (a reason) one that is a larger violation than the audit's trials can resolve (the same)."""

    name: str
    algorithm: str
    kind: str
    bug: str
    patch: Callable[[], Any]
    params: dict[str, Any] = field(default_factory=dict)
    violation: bool = True
    weak: bool = False
    #: ``weak``: the largest privacy loss one row can realise with the bug, in units of the claimed ε
    factor: float = 2.0
    #: the audit design to use instead of the plan's ("module:function"), for a bug only another design can show
    design: str | None = None
    #: a real violation (``violation`` True) that this audit cannot resolve at its trial count, with the reason:
    #: listed, not counted, either verdict accepted (the unit tests catch the bug instead)
    unresolved: str | None = None

    def design_fn(self) -> Callable[[Any], Any] | None:
        if self.design is None:
            return None
        obj, attr = _resolve(self.design)
        return getattr(obj, attr)


_GDSC = "dpexp.families.gdsc.stats:sensitivities"
_FM = "dpexp.families.gdsc.algorithms.functional_mechanism:fm_sensitivity"
_OP = ("dpexp.families.gdsc.algorithms.output_perturbation:oplr_sensitivity",)
_DCA = "dpexp.families.dca.algorithms.dlr:ss_sensitivity"
_DCA_SQ = "dpexp.families.dca.algorithms.dlr:sq_sensitivity"
_RPLR_SPLIT = "dpexp.families.gdsc.algorithms.rplr:RobustPrivateLR.budget_split"


def _half(name: str) -> Mutant:
    return Mutant(f"{name}/half-noise", name, "half-noise", "every privacy-noise draw at half its scale (claim "
                  "unchanged)", halved_noise)


def _undercount(name: str, what: str = "each spend") -> Mutant:
    return Mutant(f"{name}/double-eps", name, "double-eps", f"{what} records half the ε its noise was calibrated "
                  "to (an ε share counted once, used twice)", undercounted_spends)


def _build() -> list[Mutant]:
    M: list[Mutant] = []
    for n in ("rplr", "split_search"):
        M += [_half(n), Mutant(f"{n}/double-eps", n, "double-eps", "the X'X, X'y, y'y sensitivities of stats."
                               "sensitivities understated by 2", lambda: scaled(_GDSC))]
    # plr (d = 1, ε/2 for X'X and X'y, no y'y; tight sensitivities B_x², 2B_xB_y): with half the noise the loss of
    # (x, y) -> (x', y') is (|x² − x′²| + |xy − x′y′|/2)·ε in units x/B_x, y/B_y, at most 25/16 ε
    # ((1, 1) -> (1/4, −1)): a 1.5625× violation, not a full factor 2, which the d = 1 design detects (counted)
    plr_why = ("a 25/16 = 1.5625× violation: for d = 1 one row realises at most 25/16 ε with half the noise "
               "((x, y) = (B_x, B_y) → (B_x/4, −B_y); x² and xy cannot both move by their full range)")
    M += [dataclasses.replace(_half("plr"), bug=f"every privacy-noise draw at half its scale: {plr_why}"),
          Mutant("plr/double-eps", "plr", "double-eps", f"the X'X, X'y sensitivities understated by 2: {plr_why}",
                 lambda: scaled(_GDSC))]
    M.append(Mutant("plr/unclipped", "plr", "bound", "rows not projected to the declared bounds (Eq. 9) while the "
                    "sensitivities assume them: the row (B, ±1000B) moves Xᵀy by 2000B² ≫ Δ = 2B² (loss ≫ 2ε)",
                    stats_unclipped))
    M.append(Mutant("rplr/xx-sensitivity-half", "rplr", "named", "only the X'X sensitivity halved, to "
                    "d(d+1)B²/4, half the tight d(d+1)B²/2 (attained by B·1 → 0): X'X's share p1 of the statistics' "
                    "ε is spent twice, at the audit's split (0.05, 0.9, 0.05) a ≤ (1 + p1)·0.9 + 0.1 = 1.045× "
                    "violation (σ̂ at 0.1ε unchanged)",
                    lambda: scaled(_GDSC, index=0), violation=False, weak=True, factor=1.045))
    M.append(Mutant("rplr/sigma-data-free", "rplr", "named", "sigma: data, clipping σ read from the private rows "
                    "at no cost while the claim stays ε", free_data_sigma, params={"sigma": "data"}))
    M.append(Mutant("rplr/budget-overspend", "rplr", "overspend", "the budget shares p1, p2, p3 sum to 1.1: the "
                    "noise is calibrated to, and the ledger records, more than the ε asked (found by the spend "
                    "check, deterministically, before any statistics)", lambda: scaled(_RPLR_SPLIT, factor=1.1)))
    M.append(Mutant("rplr/sigma-noiseless-bounds", "rplr", "named", "the DP σ̂ spends recorded, but the clipping "
                    "bounds taken from the noiseless RMS of the private rows (the batched release only)",
                    sigma_noiseless_bounds))
    # fmlr's tight sensitivity (D + 1)² is attained (d = 1: 9), so its factor-2 noise bugs are full 2× violations;
    # oplr's 2(R + 1)/(λn) is a proof's bound that no row attains (brute force: ≈ 0.48 of it), so halving its
    # noise may or may not be a violation (listed, outside N); each also has a real bound mismatch (clipping
    # forgotten), counted
    # on the unit-box design the audit's scalar projections see little more than ε of that 2ε (ε̂ 0.97–1.12 over
    # seeds 0–3, 11, 22, 33 at 10⁵ runs per side): real violations, listed as beyond the audit's power
    fm_power = ("the 2ε loss is spread over the D(D+1)/2 + D = 5 released coefficients; the audit's scalar "
                "projections realise ≈ 1.0–1.1ε of it (ε̂ 0.97 at seed 33, 1.06–1.12 at seeds 0–3, 11, 22)")
    M += [dataclasses.replace(_half("fmlr"), bug="every privacy-noise draw at half its scale: a 2× violation "
                              "(the tight L1 sensitivity (D + 1)² = 9 is attained by (1, 1, 1) → (1, 0, −1))",
                              unresolved=fm_power),
          Mutant("fmlr/double-eps", "fmlr", "double-eps", "the functional mechanism's tight L1 sensitivity (D + 1)² "
                 "understated by 2: a 2× violation (9/2 vs 9 realised)", lambda: scaled(_FM), unresolved=fm_power),
          Mutant("fmlr/unclipped", "fmlr", "bound", "x, y scaled by B_x, B_y but not clipped to [−1, 1] while the "
                 "sensitivity assumes it: the row (1, ±1000) moves α by 4000 ≫ Δ = (D + 1)² = 9 (loss ≫ 2ε)",
                 unit_box_unclipped)]
    oplr_why = ("not proven DP, nor a proven violation: Δ = 2(R+1)/(λn) is the Lipschitz bound, and the brute "
                "force finds one row moving the fit by ≈ 0.48Δ (tests/gdsc/test_gdsc_privacy.py), so half the "
                "noise realises ≈ 0.96ε there and at most 2ε by the proof")
    M += [dataclasses.replace(_half("oplr"), violation=False, weak=True, factor=2.0,
                              bug=f"every privacy-noise draw at half its scale: {oplr_why}"),
          Mutant("oplr/double-eps", "oplr", "double-eps", "Gamma-norm noise scale and its sensitivity 2(R+1)/(λn) "
                 f"understated by 2: {oplr_why}", lambda: _oplr_patch(), violation=False, weak=True, factor=2.0),
          Mutant("oplr/unclipped", "oplr", "bound", "y scaled by B_y but not clipped to [−1, 1]: at n = 400 "
                 "(Δ = 4/(λn) = 0.2) the row (1, ±1000) pushes the fit to ±R = ±1, true loss up to 2R/Δ·ε = 10ε",
                 unit_box_unclipped)]
    # adassp: its factor-2 bugs stay below what the audit's scalar projections resolve (each sees one release, a
    # 0.3ε share: half-noise 0.66, double-eps 0.23; docs/audit.md); counted: the norm projection forgotten
    adassp_why = ("rows not projected onto ‖x‖ ≤ B_X (clip: norm) while the sensitivities assume it: the row "
                  "(B, ±1000B) moves XᵀX by 10⁶B² ≫ Δ₁ = B²")
    M += [Mutant("adassp/unclipped", "adassp", "bound", adassp_why, adassp_unclipped),
          Mutant("adassp/gaussian-unclipped", "adassp", "bound", f"noise: gaussian, {adassp_why}", adassp_unclipped,
                 params={"noise": "gaussian"})]
    for n in ("noisy_stats", "noisy_intercept"):
        M += [_half(n), _undercount(n, "each Laplace release")]
    M += [_half("dp_exp_theil_sen"), Mutant("dp_exp_theil_sen/double-eps", "dp_exp_theil_sen", "double-eps",
                                            "ε_med × 2: the median sampled at 2ε/(n_test k), recorded at "
                                            "ε/(n_test k)", exp_median_double_eps)]
    M += [_half("dp_wide_theil_sen"), Mutant("dp_wide_theil_sen/double-eps", "dp_wide_theil_sen", "double-eps",
                                             "ε_med × 2 in the widened exponential mechanism",
                                             exp_median_double_eps)]
    M += [_half("dp_ss_theil_sen"), _undercount("dp_ss_theil_sen", "the smooth-sensitivity median")]
    for n in ("dp_exp_theil_sen", "dp_wide_theil_sen", "dp_ss_theil_sen"):
        M.append(Mutant(f"{n}/k-forgotten", n, "bound", "one point enters k = n − 1 estimates but the median is "
                        "calibrated for one changed estimate (Lemma 2's k dropped): up to k·ε = 19ε",
                        median_k_forgotten))
    for n in ("dpgd_pure", "dpgd_approx", "dpgd_zcdp"):
        M += [_half(n), _undercount(n, "each gradient step")]
    for n in ("ta", "ddp"):
        M += [_half(n), Mutant(f"{n}/double-eps", n, "double-eps", "Δ₂ of the statistics (eq. 18, "
                               "ss_sensitivity) understated by 2", lambda: scaled(_DCA))]
    # input perturbation releases the sum of N local messages, noise N(0, Nσ²): a factor-2 bug in each message's
    # noise leaves the sum's σ√N/2 ≥ σ, still within ε for what dpexp releases (the per-message local claim is
    # broken, but no release exposes a message); counted: the clipping step forgotten
    M += [dataclasses.replace(_half("input_perturbation"), violation=False, bug="every privacy-noise draw at half "
                              "its scale: not a violation of the released sum (its noise σ√N/2 ≥ σ for N ≥ 4; only "
                              "the never-released local messages lose)"),
          Mutant("input_perturbation/double-eps", "input_perturbation", "double-eps", "Δ₂ understated by 2: not a "
                 "violation of the released sum (as half-noise)", lambda: scaled(_DCA), violation=False),
          Mutant("input_perturbation/unclipped", "input_perturbation", "bound", "Alg. 2 step 1 (clip each record "
                 "to the assumed bounds) forgotten while Δ₂ assumes it: the record (10, ±10) moves x·y by 200 ≫ Δ₂",
                 dca_unclipped)]
    M += _gdsc_cross_terms()
    M += [Mutant(f"{n}/cross-terms-forgotten", n, "named", "Δ₂ of the statistics (ss_sensitivity) without the "
                 "d(d − 1)/2 cross terms x_j x_k of XᵀX: at d = 4 the record (1,1,1,1,0) → (1,1,−1,−1,0) moves "
                 "only cross terms, by twice the forgotten Δ₂ (a factor-2 violation no d = 1 design sees)",
                 dca_cross_terms_forgotten, design="dpexp.families.dca.audit:bounded_clients_cross")
          for n in ("ta", "ddp")]
    for n in ("ta_proj", "ddp_proj"):
        M += [_half(n), Mutant(f"{n}/double-eps", n, "double-eps", "Δ₂ of both rounds (ss_sensitivity, "
                               "sq_sensitivity) understated by 2", lambda: scaled(_DCA, _DCA_SQ))]
    return M


_GDSC_CROSS_DESIGN = "dpexp.families.gdsc.audit:clipped_statistics_cross"


def _gdsc_cross_terms() -> list[Mutant]:
    """``*/cross-terms-forgotten`` of the clipped-statistics family, on its d = 8 design (``gdsc.audit``)."""
    what = ("X'X's L1 sensitivity counts only the diagonal, d·B², not the d(d − 1)/2 cross terms x_j x_k: "
            "(d + 1)/2 = 4.5× too little noise at d = 8 against the true d(d+1)B²/2 (5.5× at d = 10); the design's "
            "row 1 → (1,1,1,1,−1,−1,−1,−1) moves 16 cross entries by 2B² each, 32B² = 4× the mutant's d·B²")
    # rplr and split_search at p1 = 0.9 (X'X's share 0.81ε after σ̂'s 0.1): the mutant realises up to 3.24ε;
    # rplr's ω_x = 0.7 keeps the clipping bound ω_x σ̂_x below the rows' |x_j| = 1 (split_search's tuned ω_x = 0.1)
    M = [Mutant(f"{n}/cross-terms-forgotten", n, "named", f"{what}: at p1 = 0.9 up to 3.24ε (no d = 1 design "
                "has cross terms)", xx_cross_terms_forgotten, params=params, design=_GDSC_CROSS_DESIGN)
         for n, params in (("rplr", {"p1": 0.9, "p2": 0.05, "p3": 0.05, "omega_x": 0.7}),
                           ("split_search", {"p1": 0.9, "p2": 0.05}))]
    M.append(Mutant("plr/cross-terms-forgotten", "plr", "named", f"{what}: plr's X'X has ε/2, where the row realises "
                    "2ε, and X'y 0.25ε more", xx_cross_terms_forgotten, design=_GDSC_CROSS_DESIGN,
                    unresolved="spread over 20 released numbers of ≤ 0.125ε each (a Gaussian-like μ ≈ 0.5): even "
                    "the exact likelihood-ratio test reaches ε̂ ≈ 1.0–1.25 at 10⁵ runs and ≈ 1.5 at 10⁶"))
    return M


@contextlib.contextmanager
def _oplr_patch() -> Iterator[None]:
    with scaled(*_OP), scaled("dpexp.families.gdsc.algorithms.output_perturbation:OutputPerturbationLR.noise_scale",
                              index=1):
        yield


MUTANTS: list[Mutant] = _build()
#: the fast subset run by `make test` (tests/audit/test_audit_mutants.py)
FAST_MUTANTS = ("noisy_intercept/half-noise", "noisy_stats/half-noise", "rplr/half-noise", "rplr/sigma-data-free",
                "rplr/budget-overspend", "plr/unclipped", "dpgd_pure/half-noise", "ta/half-noise",
                "ta/cross-terms-forgotten", "rplr/cross-terms-forgotten", "dp_exp_theil_sen/double-eps",
                "dp_ss_theil_sen/half-noise")


def mutant_names() -> list[str]:
    return [m.name for m in MUTANTS]


def _get(name: str) -> Mutant:
    for m in MUTANTS:
        if m.name == name:
            return m
    raise UserError(f"unknown mutant {name!r}; valid: {', '.join(mutant_names())}")


def audit_mutant(name: str, trials: int | None = None, confidence: float | None = None, seed: int | None = None):
    """Audit one mutant (the default audit of its algorithm, with the bug injected); returns the ``AuditResult``."""
    from dpexp.audit import DEFAULT_CONFIDENCE, DEFAULT_SEED, audit_entry

    m = _get(name)
    with m.patch():   # the audit's run_many calls share nothing beyond each call (no ``ChunkRows``)
        r = audit_entry(m.algorithm, trials=trials, confidence=confidence or DEFAULT_CONFIDENCE,
                        seed=DEFAULT_SEED if seed is None else seed, params=m.params or None, design=m.design_fn())
    return dataclasses.replace(r, algorithm=m.name)


def injection(name: str, trials: int = 64, seed: int = 7) -> tuple[dict[str, Any], dict[str, Any]]:
    """What the mutant ``name`` changes on a fixed input: the released numbers (predictions and ``coef`` of the
    audit's view) on every candidate pair of its algorithm's design (a clipping bug shows only on a pair with a row
    outside the bounds) and the claimed (ε, δ) of the first pair, run through the audit's production path
    (``core._run_pair``: ``run_many`` with both splits) with the same streams, without and with the bug.  Returns
    (clean, mutated) dicts of ``released`` (one array) and ``claim`` ((ε, δ) or the error).
    A mutant whose two dicts are equal injects nothing (tests/audit/test_mutant_injection.py)."""
    from dpexp.audit import prepare
    from dpexp.audit.core import _run_pair, claimed_budget, features
    from dpexp.audit.neighbours import candidate_pairs
    from dpexp.audit.entries import entry_for
    from dpexp.rng import stream

    m = _get(name)

    def observe() -> dict[str, Any]:
        alg, design, eps, dl = prepare(m.algorithm, seed=seed, params=m.params or None, design=m.design_fn())
        pairs = candidate_pairs(design, entry_for(m.algorithm).relation or "replace-one")
        try:
            claim: Any = claimed_budget(alg, eps, dl, [pairs[0].D, pairs[0].Dprime], seed, m.algorithm)
        except Exception as exc:  # noqa: BLE001 — a refused claim is an observable change too
            claim = f"{type(exc).__name__}: {exc}"
        released: list[Any] = []
        for i, pair in enumerate(pairs):
            try:
                a, b = _run_pair(alg, pair.D, pair.Dprime, eps, dl, stream(seed, "inject", i, "D"),
                                 stream(seed, "inject", i, "D'"), trials, trials)
                released.append(np.concatenate([features(o) for o in a + b]).ravel())
            except Exception as exc:  # noqa: BLE001 — a refused release is an observable change too
                released.append(f"{type(exc).__name__}: {exc}")
        return {"released": released, "claim": claim}

    clean = observe()
    with m.patch():
        mutated = observe()
    return clean, mutated


def format_mutant_table(mutants: list[Mutant], results: list[Any]) -> str:
    head = ["mutant", "kind", "claimed_eps", "eps_lb", "verdict", "detected", "seconds", "bug"]
    rows = []
    for m, r in zip(mutants, results):
        det = r.verdict == "FAIL"
        rows.append([m.name, m.kind, f"{r.claimed_epsilon:g}", f"{r.epsilon_lb:.3f}", r.verdict,
                     (f"{'yes' if det else 'no'} (beyond this audit's power, not counted)" if m.unresolved else
                      ("yes" if det else "NO")) if m.violation else
                     (f"{'yes' if det else 'no'} (a ≤ {m.factor:.4g}× violation, not counted)" if m.weak else
                      ("yes (!)" if det else "no (not counted)")),
                     f"{r.seconds:.1f}", m.bug])
    widths = [max(len(h), *(len(x[i]) for x in rows)) for i, h in enumerate(head[:-1])]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths + [0]))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(x, widths + [0])) for x in rows]
    for m, r in zip(mutants, results):
        if r.verdict == "ERROR":
            lines.append(f"ERROR {m.name}: {r.note}")
    counted = [(m, r) for m, r in zip(mutants, results) if m.violation and not m.unresolved]
    k = sum(r.verdict == "FAIL" for _, r in counted)
    lines.append(f"mutants detected: {k}/{len(counted)}")
    return "\n".join(lines)


def run_mutants(names: list[str] | None = None, trials: int | None = None, confidence: float | None = None,
                seed: int | None = None, jobs: int = 1) -> int:
    """Audit the mutants ``names`` (all when empty), print the table; exit code 0 when every mutant that is a real
    violation is detected and no expected-PASS mutant FAILs (weak and unresolved violations: either verdict), else 1."""
    chosen = [_get(n) for n in names] if names else list(MUTANTS)
    t0 = time.perf_counter()
    if jobs > 1 and len(chosen) > 1:
        from joblib import Parallel, delayed

        results = Parallel(n_jobs=min(jobs, len(chosen)))(delayed(audit_mutant)(m.name, trials, confidence, seed)
                                                          for m in chosen)
    else:
        results = [audit_mutant(m.name, trials, confidence, seed) for m in chosen]
    print(format_mutant_table(chosen, results), flush=True)
    print(f"wall time: {time.perf_counter() - t0:.0f} s", flush=True)
    ok = all((r.verdict == "FAIL") == m.violation for m, r in zip(chosen, results) if not (m.weak or m.unresolved))
    return 0 if ok else 1
