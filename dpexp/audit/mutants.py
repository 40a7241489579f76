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

``run_mutants`` audits every mutant with the default settings and prints the table mutant × detected, ending with
``mutants detected: K/N``.  A mutant is *detected* when its audit row FAILs.  Mutants whose bug is provably not a
privacy violation (the algorithm's sensitivity is loose by more than the bug) are listed with ``violation=False``:
they are expected to PASS and are not counted in N (docs/audit.md explains each).
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


@contextlib.contextmanager
def exp_median_double_eps() -> Iterator[None]:
    """DP Theil–Sen's exponential-mechanism median sampled at 2·ε_med while its spend records ε_med."""
    from dpexp.families.slr import dp_median
    from dpexp.families.slr.algorithms import dp_theil_sen as ts

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
def free_data_sigma() -> Iterator[None]:
    """rplr with ``sigma: data`` whose ledger forgets that the clipping σ came from the private rows (the claim
    stays ε): the issue's D/D′ leak."""
    from dpexp.privacy.ledger import PrivacyLedger

    with _patched(PrivacyLedger, "not_dp", lambda self, reason, label="": None):
        yield


# ---------------------------------------------------------------------------------------------------- mutants
@dataclass(frozen=True)
class Mutant:
    """One injected bug: ``patch()`` is entered around the whole audit of ``algorithm``; ``params`` update the
    algorithm's audit parameters; ``violation`` False marks a bug that is provably still DP (expected PASS)."""

    name: str
    algorithm: str
    kind: str
    bug: str
    patch: Callable[[], Any]
    params: dict[str, Any] = field(default_factory=dict)
    violation: bool = True


_GDSC = "dpexp.families.gdsc.stats:sensitivities"
_FM = "dpexp.families.gdsc.algorithms.functional_mechanism:fm_sensitivity"
_OP = ("dpexp.families.gdsc.algorithms.output_perturbation:oplr_sensitivity",)
_DCA = "dpexp.families.dca.algorithms.dlr:ss_sensitivity"
_DCA_SQ = "dpexp.families.dca.algorithms.dlr:sq_sensitivity"


def _half(name: str) -> Mutant:
    return Mutant(f"{name}/half-noise", name, "half-noise", "every privacy-noise draw at half its scale (claim "
                  "unchanged)", halved_noise)


def _undercount(name: str, what: str = "each spend") -> Mutant:
    return Mutant(f"{name}/double-eps", name, "double-eps", f"{what} records half the ε its noise was calibrated "
                  "to (an ε share counted once, used twice)", undercounted_spends)


def _build() -> list[Mutant]:
    M: list[Mutant] = []
    for n in ("rplr", "plr", "split_search"):
        M += [_half(n), Mutant(f"{n}/double-eps", n, "double-eps", "the X'X, X'y, y'y sensitivities of stats."
                               "sensitivities understated by 2", lambda: scaled(_GDSC))]
    M.append(Mutant("rplr/xx-sensitivity-half", "rplr", "named", "only the X'X sensitivity understated by 2 "
                    "(the declared d(d+1)B² is twice what one row can change: still DP)",
                    lambda: scaled(_GDSC, index=0), violation=False))
    M.append(Mutant("rplr/sigma-data-free", "rplr", "named", "sigma: data, clipping σ read from the private rows "
                    "at no cost while the claim stays ε", free_data_sigma, params={"sigma": "data"}))
    M += [_half("fmlr"), Mutant("fmlr/double-eps", "fmlr", "double-eps", "the functional mechanism's L1 "
                                "sensitivity 2D²+4D understated by 2", lambda: scaled(_FM))]
    M += [_half("oplr"), Mutant("oplr/double-eps", "oplr", "double-eps", "Gamma-norm noise scale and its "
                                "sensitivity (12R+8)/(λn) understated by 2",
                                lambda: scaled(*_OP, "dpexp.families.gdsc.algorithms.output_perturbation:"
                                               "OutputPerturbationLR.noise_scale", index=None))]
    for n in ("noisy_stats", "noisy_intercept"):
        M += [_half(n), _undercount(n, "each Laplace release")]
    M += [_half("dp_exp_theil_sen"), Mutant("dp_exp_theil_sen/double-eps", "dp_exp_theil_sen", "double-eps",
                                            "ε_med × 2: the median sampled at 2ε/(n_test k), recorded at "
                                            "ε/(n_test k)", exp_median_double_eps)]
    M += [_half("dp_wide_theil_sen"), Mutant("dp_wide_theil_sen/double-eps", "dp_wide_theil_sen", "double-eps",
                                             "ε_med × 2 in the widened exponential mechanism",
                                             exp_median_double_eps)]
    M += [_half("dp_ss_theil_sen"), _undercount("dp_ss_theil_sen", "the smooth-sensitivity median")]
    for n in ("dpgd_pure", "dpgd_approx", "dpgd_zcdp"):
        M += [_half(n), _undercount(n, "each gradient step")]
    for n in ("ta", "ddp", "input_perturbation"):
        M += [_half(n), Mutant(f"{n}/double-eps", n, "double-eps", "Δ₂ of the statistics (eq. 18, "
                               "ss_sensitivity) understated by 2", lambda: scaled(_DCA))]
    for n in ("ta_proj", "ddp_proj"):
        M += [_half(n), Mutant(f"{n}/double-eps", n, "double-eps", "Δ₂ of both rounds (ss_sensitivity, "
                               "sq_sensitivity) understated by 2", lambda: scaled(_DCA, _DCA_SQ))]
    return M


def _fix_oplr(m: Mutant) -> Mutant:
    # noise_scale returns (λ, scale): only the scale is understated
    if m.name == "oplr/double-eps":
        return dataclasses.replace(m, patch=lambda: _oplr_patch())
    return m


@contextlib.contextmanager
def _oplr_patch() -> Iterator[None]:
    with scaled(*_OP), scaled("dpexp.families.gdsc.algorithms.output_perturbation:OutputPerturbationLR.noise_scale",
                              index=1):
        yield


MUTANTS: list[Mutant] = [_fix_oplr(m) for m in _build()]
#: the fast subset run by `make test` (tests/audit/test_audit_mutants.py)
FAST_MUTANTS = ("noisy_intercept/half-noise", "noisy_stats/half-noise", "rplr/half-noise", "rplr/sigma-data-free")


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
    with m.patch():
        r = audit_entry(m.algorithm, trials=trials, confidence=confidence or DEFAULT_CONFIDENCE,
                        seed=DEFAULT_SEED if seed is None else seed, params=m.params or None)
    return dataclasses.replace(r, algorithm=m.name)


def format_mutant_table(mutants: list[Mutant], results: list[Any]) -> str:
    head = ["mutant", "kind", "claimed_eps", "eps_lb", "verdict", "detected", "seconds", "bug"]
    rows = []
    for m, r in zip(mutants, results):
        det = r.verdict == "FAIL"
        rows.append([m.name, m.kind, f"{r.claimed_epsilon:g}", f"{r.epsilon_lb:.3f}", r.verdict,
                     ("yes" if det else "NO") if m.violation else ("yes (!)" if det else "no (still DP)"),
                     f"{r.seconds:.1f}", m.bug])
    widths = [max(len(h), *(len(x[i]) for x in rows)) for i, h in enumerate(head[:-1])]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths + [0]))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(x, widths + [0])) for x in rows]
    for m, r in zip(mutants, results):
        if r.verdict == "ERROR":
            lines.append(f"ERROR {m.name}: {r.note}")
    counted = [(m, r) for m, r in zip(mutants, results) if m.violation]
    k = sum(r.verdict == "FAIL" for _, r in counted)
    lines.append(f"mutants detected: {k}/{len(counted)}")
    return "\n".join(lines)


def run_mutants(names: list[str] | None = None, trials: int | None = None, confidence: float | None = None,
                seed: int | None = None, jobs: int = 1) -> int:
    """Audit the mutants ``names`` (all when empty), print the table; exit code 0 when every mutant that is a real
    violation is detected and no expected-PASS mutant FAILs, else 1."""
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
    ok = all((r.verdict == "FAIL") == m.violation for m, r in zip(chosen, results))
    return 0 if ok else 1
