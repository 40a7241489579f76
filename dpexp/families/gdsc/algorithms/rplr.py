"""Robust private linear regression, the proposed method of Honkela et al. 2018 (Methods 4.1–4.3; thesis Alg. 2).

Releases Laplace-perturbed sufficient statistics (XᵀX, Xᵀy, yᵀy) of the *private* rows after projecting
(clipping) x to [−B_x, B_x] and y to [−B_y, B_y] (``dpexp.families.gdsc.stats``: sensitivities and noise), adds the
exact statistics of the public rows, and fits Bayesian linear regression to the sum.

Neighbouring relation: bounded DP — neighbours replace one private row (replace-one), as in the paper.  Sequential
composition of the three releases with p1 + p2 + p3 = 1 gives ε-DP.

Clipping bounds B = ω·σ need σ_x, σ_y.  Default ``sigma: dp``: DP estimates σ̂ from the private rows, released
with the Laplace mechanism at ``sigma_share``·ε (``_dp_sigmas``), drawn per trial (trials are independent runs) —
the whole run is ε-DP end to end from the split it receives.  ``sigma: data`` (the paper's protocol) takes the data
std ``split.meta['sigma_x'|'sigma_y']`` computed from rows that include the private ones, at no cost: **not DP**
(D = 19 zero rows + (1, 1) vs D′ = 20 zero rows: σ = 0 on D′ gives B = 0 and the release 0 with probability 1,
never on D), and every row of such a run says so (guarantee ``none``, "clipping σ from private rows").

The paper protocol (the authors' Python scripts; docs/reproduction.md) is a set of explicit parameters:
``sigma: data`` on the ``gdsc`` dataset with ``protocol: python`` (whose σ_y is pooled over all drugs), the code's
split ``p1, p2, p3 = 0.35, 0.60, 0.05``, ``clip_public: true`` (public lines clipped with the private bounds),
``tune_aux: preprocessed`` and ``tune_solver: direct`` (the authors' threshold tuning), ``stabilize: none`` (no
ridge) and, with ``engine: pymc``, ``repair: none`` (ADVI on the statistics as released).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from dpexp import cache
from dpexp.audit.plan import AuditPlan
from dpexp.chunk import ChunkRows
from dpexp.components import BatchedAlgorithm, Params
from dpexp.errors import UserError
from dpexp.families.gdsc.analytic import analytic_choice
from dpexp.families.gdsc.audit import clipped_statistics, released_statistics
from dpexp.families.gdsc.model import FixedPrecisionParams, fit_posterior, fit_weights
from dpexp.families.gdsc.batching import record_each
from dpexp.families.gdsc.release_batch import clipped_stats_many, release_group, shared_sufficient_stats
from dpexp.families.gdsc.stats import sensitivities
from dpexp.families.gdsc.tuning import PAPER_SPLIT_CASE, tune_split, tune_thresholds
from dpexp.metrics.accuracy import spearman_rows
from dpexp.models.intervals import gaussian_intervals_many
from dpexp.models.vb import noise_ridge
from dpexp.privacy.ledger import PrivacyLedger, as_ledger
from dpexp.privacy.mechanisms import laplace
from dpexp.registry import register_algorithm
from dpexp.types import Output, Split

#: former explicit defaults of rplr (the published code's split), used for p's not given with an explicit split
EXPLICIT_SPLIT_DEFAULT = (0.35, 0.60, 0.05)


class SigmaParams(Params):
    """How the clipping bounds B = ω·σ get their σ_x, σ_y (``clip_sigmas``): rplr's interface, shared by the methods
    that clip as it does (``narplr``, ``adassp``)."""

    sigma: Literal["dp", "data"] = "dp"
    """DP estimates of sigma_x, sigma_y spending sigma_share of epsilon, per trial (default), or the data std without
    budget (the paper's protocol: NOT DP)"""
    sigma_share: float = Field(0.1, gt=0, lt=1, description="share of epsilon for the DP sigma estimates (sigma: dp)")
    sigma_bound_x: float = Field(1.0, gt=0)
    """public bound on |x_j| for the DP sigma_x (sigma: dp); 1 holds by construction for unit-norm rows (GDSC, Eq. 10
    data)"""
    sigma_bound_y: float = Field(5.0, gt=0)
    """public bound on |y| for the DP sigma_y (sigma: dp); larger values are clipped for the estimate only
    (docs/privacy.md)"""


class SensitivityParams(Params):
    """Which XᵀX sensitivity the release is calibrated to (``stats.sensitivities``): shared by the methods of the
    clipped-statistics family (rplr, narplr, rlr's tuning, split_search, plr)."""

    sensitivity: Literal["tight", "paper"] = Field("tight", json_schema_extra={"key_omits": "paper"})
    """X'X's L1 sensitivity: d(d+1)B_x^2/2, the tight bound (ours, default; proof in stats) or d(d+1)B_x^2 (the
    paper's Methods 4.2: the paper protocol); also the scales the tuning simulates.  'paper' is what every run
    before this parameter did, so it stays out of the row's params and noise-stream key (components.key_omitted)"""


class TuneParams(Params):
    """How the auxiliary-data tuning simulates (``dpexp.families.gdsc.tuning``): shared by rplr and split_search."""

    tune_aux: Literal["eq10", "preprocessed"] = "eq10"
    """auxiliary data of the tuning: Eq. (10) as drawn (the text) or preprocessed like the real data (the authors'
    code); dpexp.families.gdsc.tuning"""
    tune_solver: Literal["psd_floor", "direct"] = "psd_floor"
    """fixed-precision fit of the threshold tuning: floor the noisy X'X at 0 or solve as released (the authors' code)"""


class _RPLRParams(FixedPrecisionParams, SigmaParams, TuneParams, SensitivityParams):
    prior: Literal["gamma", "fixed"] = "gamma"
    """Gamma(2,2) priors on lambda, lambda0 (proposed method) or fixed lam, lam0"""
    engine: Literal["vb", "pymc"] = Field("vb", description="inference for prior: gamma (vb fast; pymc = ADVI)")
    stabilize: Literal["noise_ridge", "none"] = "noise_ridge"
    """prior: gamma with vb: add the noise-calibrated ridge 2 sqrt(2d) b_xx to the perturbed X'X
    (dpexp.models.vb.noise_ridge) or fit the projected statistics as is"""
    split: Literal["auto", "analytic"] | None = None
    """'auto' (default when p1-p3 are not given): tune the budget split on auxiliary data; 'analytic': split and (unless
    omega_x/omega_y or omega: auto are given) thresholds from the closed-form risk of the noise-aware model
    (dpexp.families.gdsc.analytic), no search"""
    analytic_sd: float = Field(0.1, ge=0, le=10)
    """split: analytic: design uncertainty (relative sd of the Gram matrix entries) the closed-form score assumes"""
    p1: float | None = Field(None, gt=0, lt=1, description="share of epsilon for X'X (explicit split)")
    p2: float | None = Field(None, gt=0, lt=1, description="share of epsilon for X'y (explicit split)")
    p3: float | None = Field(None, gt=0, lt=1, description="share of epsilon for y'y (explicit split)")
    split_tuning: Literal["paper", "case"] = "paper"
    """split: auto tunes once at n=500, d=10, eps=2 (paper) or at each test case"""
    omega: Literal["auto"] | None = None
    """'auto' (default when omega_x/omega_y are not given): tune the thresholds per test case"""
    omega_x: float | None = Field(None, gt=0, description="clipping threshold B_x = omega_x * sigma_x (explicit)")
    omega_y: float | None = Field(None, gt=0, description="clipping threshold B_y = omega_y * sigma_y (explicit)")
    tune_n: Literal["requested", "actual"] = "requested"
    """n of the threshold tuning: the requested n_private (GDSC drops untested lines per drug; tuning per distinct n
    would be wasteful) or the rows actually present"""
    tune_reps: tuple[int, int] = Field((20, 20), description="auxiliary data sets x noise draws, threshold tuning")
    split_reps: tuple[int, int] = Field((5, 5), description="auxiliary data sets x noise draws, split tuning")
    clip_public: bool = False
    """clip the public lines with the private bounds too (the authors' code) or add their exact statistics unclipped
    (default)"""
    repair: Literal["joint", "none"] = "joint"
    """prior: gamma: joint PSD projection of the released statistics before the fit, or none (the authors' ADVI on the
    statistics as released; engine: pymc only — VB needs a proper posterior)"""
    cross_check: bool = False
    """engine: pymc: also fit the vb engine (without / with the noise ridge) to the same released statistics; extras
    vb_* and vb_ridge_*"""

    @model_validator(mode="after")
    def _explicit_or_auto(self) -> "_RPLRParams":
        # backwards compatible: giving some of p1-p3 (omega_x/omega_y) makes the split (thresholds) explicit, and
        # the ones not given take the former defaults p = (0.35, 0.60, 0.05), omega = 1.0
        ps = [self.p1, self.p2, self.p3]
        if any(p is not None for p in ps):
            if self.split is not None:
                raise ValueError(f"give split: {self.split} or explicit p1, p2, p3, not both")
            for name, default in zip(("p1", "p2", "p3"), EXPLICIT_SPLIT_DEFAULT):
                if getattr(self, name) is None:
                    object.__setattr__(self, name, default)
            total = float(self.p1 + self.p2 + self.p3)  # type: ignore[operator]
            if not math.isclose(total, 1.0, abs_tol=1e-9):
                raise ValueError(f"p1 + p2 + p3 must equal 1, got {total:g}")
        ws = [self.omega_x, self.omega_y]
        if any(w is not None for w in ws):
            if self.omega == "auto":
                raise ValueError("give omega: auto or explicit omega_x, omega_y, not both")
            for name in ("omega_x", "omega_y"):
                if getattr(self, name) is None:
                    object.__setattr__(self, name, 1.0)
        if min(self.tune_reps) < 1 or min(self.split_reps) < 1:
            raise ValueError(f"tune_reps and split_reps must be >= 1, got {self.tune_reps}, {self.split_reps}")
        if self.repair == "none" and not (self.prior == "gamma" and self.engine == "pymc"):
            raise ValueError("repair: none needs prior: gamma with engine: pymc (the vb engine needs a proper "
                             f"posterior: repair: joint), got prior: {self.prior}, engine: {self.engine}")
        if self.cross_check and not (self.prior == "gamma" and self.engine == "pymc"):
            raise ValueError(f"cross_check needs prior: gamma with engine: pymc, got prior: {self.prior}, "
                             f"engine: {self.engine}")
        return self

    @property
    def auto_split(self) -> bool:
        return self.p1 is None

    @property
    def auto_omega(self) -> bool:
        return self.omega_x is None

    @property
    def analytic_omega(self) -> bool:
        """Thresholds from the analytic choice: ``split: analytic`` with neither explicit ω nor ``omega: auto``."""
        return self.split == "analytic" and self.omega is None and self.omega_x is None


def _dp_sigmas(X: np.ndarray, y: np.ndarray, Bx: float, By: float, eps_x: float, eps_y: float, ledger,
               trials: int | None = None) -> tuple[np.ndarray | float, np.ndarray | float]:
    """DP estimates of σ_x (over all entries) and σ_y as root mean squares of clipped, centred-by-preprocessing data.

    Releases S_x = Σ_ij clip(x_ij, ±Bx)² + Lap(d Bx²/eps_x) and S_y = Σ_i clip(y_i, ±By)² + Lap(By²/eps_y) with the
    Laplace mechanism (``dpexp.privacy.mechanisms.laplace``, recorded in ``ledger``), ``trials`` independent times
    (arrays of shape (trials,); None: one release, floats).  Replace-one sensitivity: one row changes S_x by at most
    d·Bx² (each of its d terms lies in [0, Bx²]) and S_y by By².  σ = sqrt(max(S, 0)/count); counts are public under
    bounded DP.  The data are assumed centred (GDSC and the Eq. 10 generator are), so the second moment about 0 is
    the variance.  ε = eps_x + eps_y (sequential composition).
    """
    n, d = X.shape
    Sx = laplace(float(np.sum(np.clip(X, -Bx, Bx) ** 2)), d * Bx * Bx, eps_x, ledger, size=trials, label="sigma_x")
    Sy = laplace(float(np.sum(np.clip(y, -By, By) ** 2)), By * By, eps_y, ledger, size=trials, label="sigma_y")
    sx = np.sqrt(np.maximum(Sx, 0.0) / max(n * d, 1))
    sy = np.sqrt(np.maximum(Sy, 0.0) / max(n, 1))
    return (float(sx), float(sy)) if trials is None else (sx, sy)


#: the reason written on every row of an rplr run with ``sigma: data``
SIGMA_DATA_REASON = "clipping σ from private rows (sigma: data)"


def clip_sigmas(p: SigmaParams, split: Split, epsilon: float, ledger: PrivacyLedger, trials: int) -> tuple[Any, Any]:
    """σ_x, σ_y of the clipping bounds: ``sigma: dp`` releases them (``_dp_sigmas``, sigma_share·ε, per trial:
    (trials,) arrays, floored at 1e-12); ``sigma: data`` takes ``split.meta`` and marks the run not DP."""
    if p.sigma == "dp":
        sh = p.sigma_share * epsilon / 2.0
        sx, sy = _dp_sigmas(split.X_private, split.y_private, p.sigma_bound_x, p.sigma_bound_y, sh, sh, ledger,
                            trials)
        return np.maximum(sx, 1e-12), np.maximum(sy, 1e-12)
    ledger.not_dp(SIGMA_DATA_REASON)
    return float(split.meta["sigma_x"]), float(split.meta["sigma_y"])


@dataclass
class Release:
    """What rplr's release produced for one split: the noisy statistics of the *private* rows only, XX (trials, d, d),
    Xy (trials, d), yy (trials,) (zeros when there are no private rows), the exact statistics of the
    public rows ``public`` = (XᵀX, Xᵀy, yᵀy) (unclipped; per trial, clipped with the private bounds, under
    ``clip_public``; None where ``release_many`` was told that its caller does not read them), the extras, the
    budget ``split`` (p1, p2, p3) of the statistics' ε ``eps``, and the clipping bounds B_x, B_y and σ_x, σ_y they
    came from (floats, or (trials,) arrays when σ̂ is drawn per trial; None when nothing private was released)."""

    XX: np.ndarray
    Xy: np.ndarray
    yy: np.ndarray
    public: tuple[np.ndarray, np.ndarray, float] | None   # None: not asked for (``release_many(public_stats=False)``)
    extras: dict[str, float]
    split: tuple[float, float, float]
    eps: float
    B_x: Any
    B_y: Any
    sigma_x: Any
    sigma_y: Any
    batch: Any = None   # (token, row): a batched release's row of its group's stacked arrays (``_naive_group``)

    def clip_bounds(self, trials: int) -> np.ndarray | None:
        """(trials, 2) array of the (B_x, B_y) of every trial (``Output.clip_bounds``); None without a release."""
        if self.B_x is None:
            return None
        return np.stack([np.broadcast_to(np.asarray(self.B_x, dtype=float), (trials,)),
                         np.broadcast_to(np.asarray(self.B_y, dtype=float), (trials,))], axis=-1)


@register_algorithm
class RobustPrivateLR(BatchedAlgorithm):
    """Robust private LR, the proposed method of Honkela et al. 2018 (Methods 4.1–4.3; thesis Alg. 2).

    Clip the private rows to B_x = ω_x σ_x, B_y = ω_y σ_y (Eqs. 9, 11), release XᵀX, Xᵀy, yᵀy with the Laplace
    mechanism at budget shares p1, p2, p3 (sensitivities and scales in ``stats``), add the exact public statistics and
    fit Bayesian LR — Gamma(2, 2) priors on λ, λ0 (``prior: gamma``, default, ``vb`` engine) or fixed λ, λ0.
    With the default ``sigma: dp`` the run is ε-DP under replace-one (bounded) neighbours of the private rows:
    sequential composition of the two σ releases (``sigma_share``·ε) and the three statistics (the rest); with
    ``sigma: data`` (the paper) it is not DP (module docstring) and reports guarantee ``none``.

    Parameters: ``split: auto`` (default unless p1, p2, p3 are given) chooses the split on auxiliary data
    (``tuning.tune_split``; ``split_tuning: paper`` = once at n = 500, d = 10, ε = 2 as the paper, ``case`` = at the
    test case); ``omega: auto`` (default unless omega_x, omega_y are given) chooses the thresholds per test case
    (n, d, ε, split) with ``tuning.tune_thresholds`` — no private data is used, no budget spent.  ``split:
    analytic`` takes the split, and the thresholds unless they are given or ``omega: auto``, from the closed-form
    risk of ``dpexp.families.gdsc.analytic`` (no auxiliary-data search; ``analytic_sd`` its design uncertainty).
    σ_x, σ_y: ``sigma: dp`` (default) spends ``sigma_share`` of ε on Laplace estimates drawn per trial
    (``_dp_sigmas``; public bounds ``sigma_bound_x|y``) and splits the rest by p1, p2, p3; ``sigma: data`` takes
    ``split.meta['sigma_x'|'sigma_y']`` (the paper: data std without budget — not DP).  Extras: p1, p2, p3,
    omega_x, omega_y, B_x, B_y (means over trials when σ̂ is drawn per trial).
    """

    name = "rplr"
    family = "gdsc"
    # the tuned defaults (split/omega: auto) depend only on public facts (n, d, ε); fixing them audits the same
    # code without running the tuner on every call.  The split puts 90% on X'y, whose sensitivity 2dB_xB_y one row
    # realises in full together with most of y'y's (docs/audit.md).  sigma: dp (the default) estimates σ from each dataset of the pair.
    audit = AuditPlan(design=clipped_statistics, view=released_statistics,
                      params={"p1": 0.05, "p2": 0.9, "p3": 0.05, "omega_x": 1.0, "omega_y": 1.0})
    description = "robust private LR: clipped, Laplace-perturbed sufficient statistics (Honkela et al. 2018)"
    neighbouring = "replace-one"
    guarantee_text = ("pure ε-DP, replace-one (σ̂ released at sigma_share·ε, per trial); "
                      "sigma: data → not DP (clipping σ from private rows, the paper's protocol)")
    Params = _RPLRParams

    # ------------------------------------------------------------------ choices that depend only on public facts
    def stats_epsilon(self, epsilon: float) -> float:
        """The part of ε spent on the sufficient statistics."""
        return epsilon * (1.0 - self.params.sigma_share) if self.params.sigma == "dp" else epsilon

    def budget_split(self, n: int, d: int, epsilon: float) -> tuple[float, float, float]:
        # asked once per cell: the in-process memo skips tuning's key hashing and cache look-up (a pure function)
        return cache.memo("gdsc.rplr_budget_split", (self.params, int(n), int(d), float(epsilon)),
                          lambda: self._budget_split(n, d, epsilon), maxsize=4096)

    def _budget_split(self, n: int, d: int, epsilon: float) -> tuple[float, float, float]:
        p = self.params
        if not p.auto_split:
            return float(p.p1), float(p.p2), float(p.p3)  # type: ignore[arg-type]
        if p.split == "analytic":
            r = analytic_choice(n, d, epsilon, p.analytic_sd, sensitivity=p.sensitivity)   # memoised by dpexp.cache
            return float(r["p1"]), float(r["p2"]), float(r["p3"])
        case = PAPER_SPLIT_CASE if p.split_tuning == "paper" else {"n": max(n, 2), "d": d, "epsilon": epsilon}
        r = tune_split(case["n"], case["d"], case["epsilon"], n_aux=p.split_reps[0], n_noise=p.split_reps[1],
                       stabilize=p.stabilize if p.prior == "gamma" else "none", aux=p.tune_aux,
                       solver=p.tune_solver, sensitivity=p.sensitivity)   # memoised by dpexp.cache
        return float(r["p1"]), float(r["p2"]), float(r["p3"])

    def omegas(self, n: int, d: int, epsilon: float, split: tuple[float, float, float]) -> tuple[float, float]:
        return cache.memo("gdsc.rplr_omegas", (self.params, int(n), int(d), float(epsilon), tuple(split)),
                          lambda: self._omegas(n, d, epsilon, split), maxsize=4096)

    def _omegas(self, n: int, d: int, epsilon: float, split: tuple[float, float, float]) -> tuple[float, float]:
        p = self.params
        if not p.auto_omega:
            return float(p.omega_x), float(p.omega_y)  # type: ignore[arg-type]
        if n < 2:
            return float("nan"), float("nan")  # no private rows: nothing is clipped or released
        if p.analytic_omega:
            r = analytic_choice(n, d, epsilon, p.analytic_sd, sensitivity=p.sensitivity)
            return float(r["omega_x"]), float(r["omega_y"])
        r = tune_thresholds(n, d, epsilon, split, n_aux=p.tune_reps[0], n_noise=p.tune_reps[1], aux=p.tune_aux,
                            solver=p.tune_solver, sensitivity=p.sensitivity)  # memoised
        return float(r["omega_x"]), float(r["omega_y"])

    def _tune_n(self, split: Split) -> int:
        n = int(split.X_private.shape[0])
        if self.params.tune_n == "requested":
            n = int((split.meta.get("n_requested") or {}).get("n_private", n))
        return n

    def bounds(self, split: Split, epsilon: float | None = None) -> tuple[float, float]:
        """(B_x, B_y) with the data σ of ``split.meta`` (used by ``rlr`` and the audit; for omega: auto the
        thresholds are those tuned at ``epsilon``, default 1)."""
        if not self.params.auto_omega:
            return float(self.params.omega_x) * split.meta["sigma_x"], float(self.params.omega_y) * split.meta["sigma_y"]
        # omega: auto depends on epsilon; without one (e.g. the audit's probe) the thresholds tuned at ε = 1 are used
        eps = self.stats_epsilon(float(epsilon if epsilon is not None else 1.0))
        sp = self.budget_split(self._tune_n(split), split.d, eps)
        wx, wy = self.omegas(self._tune_n(split), split.d, eps, sp)
        return wx * split.meta["sigma_x"], wy * split.meta["sigma_y"]

    # ------------------------------------------------------------------------------------------------ running
    def release(self, split: Split, epsilon: float, ledger: PrivacyLedger, trials: int) -> "Release":
        """``release_many`` of one split (a batch of one); raises the split's error."""
        r = self.release_many([split], epsilon, [ledger], trials)[0]
        if isinstance(r, Exception):
            raise r
        return r

    def _release(self, split: Split, epsilon: float, ledger: PrivacyLedger, trials: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, float], np.ndarray | None]:
        """The fit's inputs of one split (``_naive_group`` of a batch of one): private + public statistics
        (trials, d, d), (trials, d), (trials,), the extras and the ridge (trials,) or (1,) (None without one)."""
        XX, Xy, yy, extras, ridge = self._naive_group([split], [self.release(split, epsilon, ledger, trials)], trials)
        return XX[0], Xy[0], yy[0], extras[0], None if ridge is None else ridge[0]

    def release_many(self, splits: list[Split], epsilon: float, ledgers: list, trials: int,
                     public_stats: bool = True, chunk: ChunkRows | None = None) -> list["Release | Exception"]:
        """Clip and release the private statistics of every split through its own ledger (the only private draws of
        rplr and of the methods that reuse its release, e.g. ``narplr``), kept apart from the exact statistics of
        the public rows (``Release``).  The splits with private rows are released per d as one batch
        (``release_batch.release_group``; a single split is a batch of one).  A split fails alone, with its
        message: before any draw when ε, the budget split or the thresholds are not positive finite numbers, or
        (``sigma: data``) σ or the sensitivities are not finite; after its σ̂ draws (recorded) when σ̂ gives
        sensitivities that are not finite.  ``public_stats=False``: the caller does not read ``Release.public``
        (e.g. narplr, which clips the public rows itself): it is left None (nothing drawn or spent differs).
        ``chunk``: the splits' ``ChunkRows`` (their rows' layout and public statistics shared in it)."""
        p = self.params
        ledgers = [as_ledger(lg) for lg in ledgers]
        eps = self.stats_epsilon(epsilon)
        if not (math.isfinite(eps) and eps > 0):
            return [UserError(f"{self.name}: epsilon must be > 0 and finite, got {epsilon}") for _ in splits]
        out: list[Release | Exception] = [UserError("not run")] * len(splits)
        groups: dict[int, list[tuple[Any, ...]]] = {}
        empty: list[tuple[Any, ...]] = []   # the splits without private rows
        ready: list[tuple[Any, ...]] = []   # the splits with private rows, to release
        data_sigmas: list[tuple[float, float, float, float]] = []   # sigma: data: (σ_x, σ_y, ω_x, ω_y) of ``ready``
        # the split and thresholds depend on (n, d) only (pure, public): asked once per distinct pair of the call,
        # with whether they are positive finite numbers
        choices: dict[tuple[int, int], tuple[tuple[float, float, float], float, float, bool]] = {}
        for k, (s, ledger) in enumerate(zip(splits, ledgers)):
            try:
                d, tn = s.d, self._tune_n(s)
                c = choices.get((tn, d))
                if c is None:
                    sp = self.budget_split(tn, d, eps)
                    wx, wy = self.omegas(tn, d, eps, sp)
                    c = choices[(tn, d)] = (sp, wx, wy, min(sp) > 0 and all(math.isfinite(v) and v > 0
                                                                             for v in (*sp, wx, wy)))
                sp, wx, wy, valid = c
                if s.X_private.shape[0] == 0:   # nothing private: no release, the public rows' statistics
                    empty.append((k, s, ledger, sp))
                    continue
                if not valid:
                    raise UserError(f"{self.name}: the budget split {sp} and thresholds omega_x = {wx}, omega_y = "
                                    f"{wy} must be positive finite numbers")
                if p.sigma == "data":   # checked below, all splits of the call at once
                    data_sigmas.append((float(s.meta["sigma_x"]), float(s.meta["sigma_y"]), wx, wy))
                ready.append((k, s, ledger, sp, wx, wy))
            except Exception as exc:  # recorded per cell (nothing drawn for it)
                out[k] = exc
        if data_sigmas:
            bad = self._data_bounds_fail(np.array(data_sigmas), [it[1].d for it in ready])
            for i in np.flatnonzero(bad).tolist():
                sx, sy = data_sigmas[i][:2]
                out[ready[i][0]] = UserError(f"{self.name} (sigma: data): sigma_x = {sx}, sigma_y = {sy} must be >= 0 "
                                             "and give clipping bounds whose sensitivities are finite")
            ready = [it for it, b in zip(ready, bad.tolist()) if not b]
        for it in ready:
            groups.setdefault(it[1].d, []).append(it)
        if empty:
            self._public_only_many(empty, eps, trials, out, chunk)
        for items in groups.values():
            try:
                self._release_group(items, epsilon, eps, trials, out, public_stats, chunk)
            except Exception as exc:  # recorded for the cells of the group
                for it in items:
                    out[it[0]] = exc
        return out

    def _public_only_many(self, items: list[tuple[Any, ...]], eps: float, trials: int, out: list,
                          chunk: ChunkRows | None = None) -> None:
        """The splits without private rows (``items``: (k, split, ledger, budget split)): nothing drawn, each ledger
        records ``public_only`` and its ``Release`` carries zeros, the budget split's extras and the public rows'
        exact statistics (one ``shared_sufficient_stats`` call)."""
        pubs = shared_sufficient_stats([it[1].X_public for it in items], [it[1].y_public for it in items], chunk,
                                       () if chunk is None else chunk.rows("public", [it[0] for it in items]))
        T = trials
        for (k, s, ledger, sp), pub in zip(items, pubs):
            d = s.d
            ledger.public_only()
            out[k] = Release(np.zeros((T, d, d)), np.zeros((T, d)), np.zeros(T), pub,
                             {"p1": sp[0], "p2": sp[1], "p3": sp[2]}, sp, eps, None, None, None, None)

    def _data_bounds_fail(self, sw: np.ndarray, ds: list[int]) -> np.ndarray:
        """``sigma: data``: (S,) bool, True where a split must fail before any draw — its data σ of ``split.meta``
        not finite or negative (σ = 0 clips every row to 0: the paper protocol's leak, docs/privacy.md), or the
        sensitivities at B = ω·σ not finite; ``sw`` (S, 4) the splits' (σ_x, σ_y, ω_x, ω_y), ``ds`` their d.
        All splits of a call in one pass (``stats.sensitivities`` on arrays: the products of each split's own)."""
        sx, sy, wx, wy = sw.T
        with np.errstate(over="ignore", invalid="ignore"):
            sens = sensitivities(np.array(ds), wx * sx, wy * sy, self.params.sensitivity)
            finite = np.isfinite(sx) & np.isfinite(sy) & (sx >= 0) & (sy >= 0)
            for v in sens:
                finite &= np.isfinite(v)
        return ~finite

    def _release_group(self, items: list[tuple[Any, ...]], epsilon: float, eps: float, trials: int,
                       out: list, public_stats: bool = True, chunk: ChunkRows | None = None) -> None:
        """``release_many`` of splits of equal d (all with private rows and valid bounds)."""
        p = self.params
        ss, lgs = [it[1] for it in items], [it[2] for it in items]
        sp = np.array([it[3] for it in items], dtype=float)
        w = np.array([(it[4], it[5]) for it in items])
        if p.sigma == "dp":
            sigma: tuple = ("dp", p.sigma_bound_x, p.sigma_bound_y, p.sigma_share * epsilon / 2.0)
        else:
            record_each(lgs, lambda lg: lg.not_dp(SIGMA_DATA_REASON))
            sigma = ("data", np.array([float(s.meta["sigma_x"]) for s in ss]),
                     np.array([float(s.meta["sigma_y"]) for s in ss]))
        ks = [it[0] for it in items]
        g = release_group([s.X_private for s in ss], [s.y_private for s in ss], ss[0].d, trials, lgs, sp, eps, w,
                          sigma, p.sensitivity, chunk, () if chunk is None else chunk.rows("private", ks))
        if p.clip_public and public_stats:   # the authors' code: the public lines clipped with the same bounds
            XXp, Xyp, yyp = clipped_stats_many([s.X_public for s in ss], [s.y_public for s in ss], g.B_x, g.B_y,
                                               trials)
        elif public_stats:
            # the public rows' exact statistics: the same for rplr ours, fixed and narplr on these splits (shared)
            pubs = shared_sufficient_stats([s.X_public for s in ss], [s.y_public for s in ss], chunk,
                                           () if chunk is None else chunk.rows("public", ks))
        per_trial = g.B_x.ndim == 2
        Bxm, Bym = (g.B_x.mean(axis=1), g.B_y.mean(axis=1)) if per_trial else (g.B_x, g.B_y)
        Bxm, Bym = Bxm.tolist(), Bym.tolist()
        if per_trial:
            sxm, sym = g.sigma_x.mean(axis=1).tolist(), g.sigma_y.mean(axis=1).tolist()
            bounds_of = list(zip(list(g.B_x), list(g.B_y), list(g.sigma_x), list(g.sigma_y)))
        else:
            bounds_of = list(zip(g.B_x.tolist(), g.B_y.tolist(), g.sigma_x.tolist(), g.sigma_y.tolist()))
        # the group's stacked arrays, for ``_naive_group`` (which then need not stack the rows back)
        token = (g, (XXp, Xyp, yyp) if public_stats and p.clip_public else None)
        if public_stats and p.clip_public:
            publics = list(zip(list(XXp), list(Xyp), list(yyp) if per_trial else yyp.tolist()))
        sig = p.sigma == "dp"
        for i, (k, s, _, spt, wx, wy), XXi, Xyi, yyi in zip(range(len(items)), items, list(g.XX), list(g.Xy),
                                                          list(g.yy)):
            if i in g.failed:   # σ̂ drawn (and recorded) gave bounds that cannot be released
                out[k] = g.failed[i]
                continue
            extras = {"p1": spt[0], "p2": spt[1], "p3": spt[2], "omega_x": wx, "omega_y": wy,
                      "B_x": Bxm[i], "B_y": Bym[i]}
            if sig:
                extras["sigma_x_dp"] = sxm[i]
                extras["sigma_y_dp"] = sym[i]
            if not public_stats:
                public = None
            elif p.clip_public:
                public = publics[i]
            else:
                public = pubs[i]
            out[k] = Release(XXi, Xyi, yyi, public, extras, spt, eps, *bounds_of[i], batch=(token, i))

    def _naive_group(self, splits: list[Split], rs: list[Release], trials: int
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, float]], np.ndarray | None]:
        """The fit's inputs of splits of equal d (private + public statistics summed), stacked: XX (S, T, d, d),
        Xy (S, T, d), yy (S, T), the extras and the ridge (S, T), or (S, 1) when no split's bounds vary per trial
        (the releases without private rows stacked by ``_public_group``)."""
        p = self.params
        d = splits[0].d
        with_ridge = p.prior == "gamma" and ((p.engine == "vb" and p.stabilize == "noise_ridge") or p.cross_check)
        priv = [i for i, r in enumerate(rs) if r.B_x is not None]
        XX, Xy, yy = [None] * len(rs), [None] * len(rs), [None] * len(rs)
        ridge = np.zeros((len(rs), trials)) if with_ridge else None
        extras = [r.extras for r in rs]
        per_trial = False
        empty = [i for i, r in enumerate(rs) if r.B_x is None]
        if empty:
            got = _public_group([rs[i] for i in empty], d, trials)
            if not priv:   # no split released: the stacked public statistics are the sums
                return (*got, extras, None if ridge is None else ridge[:, :1])
            else:
                for j, i in enumerate(empty):
                    XX[i], Xy[i], yy[i] = got[0][j], got[1][j], got[2][j]
        if priv:
            pr = [rs[i] for i in priv]
            tok = _whole_batch(pr)   # all rows of one batched release, in order: its arrays are the stacks
            if tok is not None and tok[1] is not None:
                PX, PXy, Pyy = tok[1]
            else:
                PX = np.stack([r.public[0] for r in pr])
                PXy = np.stack([r.public[1] for r in pr])
                Pyy = np.array([r.public[2] for r in pr], dtype=float)
            if tok is not None:
                rXX, rXy, ryy = tok[0].XX, tok[0].Xy, tok[0].yy
            else:
                rXX, rXy, ryy = np.stack([r.XX for r in pr]), np.stack([r.Xy for r in pr]), np.stack([r.yy for r in pr])
            sXX = rXX + (PX[:, None] if PX.ndim == 3 else PX)
            sXy = rXy + (PXy[:, None] if PXy.ndim == 2 else PXy)
            syy = ryy + (Pyy[:, None] if Pyy.ndim == 1 else Pyy)
            if empty:   # the sums go into the per-split lists (stacked with the others' below)
                for j, i in enumerate(priv):
                    XX[i], Xy[i], yy[i] = sXX[j], sXy[j], syy[j]
            if with_ridge:
                per_trial = np.ndim(pr[0].B_x) > 0
                e = np.array([r.split[0] * r.eps for r in pr])
                if per_trial:
                    # a whole batch's bounds are its (S, T) array, whose rows the releases carry (the same floats)
                    B = tok[0].B_x if tok is not None else np.stack([r.B_x for r in pr])
                    rg = noise_ridge(d, sensitivities(d, B, B, p.sensitivity)[0] / e[:, None])
                else:
                    rg = noise_ridge(d, sensitivities(d, np.array([r.B_x for r in pr]), 0.0, p.sensitivity)[0]
                                     / e)[:, None]
                ridge[priv] = rg
                for j, m in enumerate(rg.mean(axis=1).tolist()):
                    extras[priv[j]]["ridge"] = m
        if ridge is not None and not per_trial:   # one ridge per split: the former (items, 1) shape
            ridge = ridge[:, :1]
        if len(priv) == len(rs):   # every split released: the sums are the stacked arrays already (no re-stacking)
            return sXX, sXy, syy, extras, ridge
        return np.stack(XX), np.stack(Xy), np.stack(yy), extras, ridge

    def run_many(self, splits: list[Split], epsilon: float, delta: float, ledgers: list,
                 trials: int = 1, chunk: ChunkRows | None = None) -> list[Output | Exception]:
        """Release each split's statistics through its own ledger (same draws as ``run``, ``release_many``), then
        fit all splits × trials of equal d in one batched call; each output carries its ledger's guarantee and,
        where the engine keeps one (vb, fixed), the intervals of the naive posterior (the statistics treated as
        exact)."""
        p = self.params
        ledgers = [as_ledger(lg) for lg in ledgers]
        out: list[Output | Exception] = [UserError("not run")] * len(splits)
        groups: dict[int, list[int]] = {}
        rels = self.release_many(splits, epsilon, ledgers, trials, chunk=chunk)
        for k, (s, r) in enumerate(zip(splits, rels)):
            if isinstance(r, Exception):
                out[k] = r
            else:
                groups.setdefault(s.d, []).append(k)
        for d, ks in groups.items():
            ss, rs = [splits[k] for k in ks], [rels[k] for k in ks]
            try:
                XX, Xy, yy, extras, ridge = self._naive_group(ss, rs, trials)
                n = np.array([float(s.X_private.shape[0] + s.X_public.shape[0]) for s in ss])[:, None]
                W, C = fit_posterior(XX, Xy, yy, n, p.prior, p.lam, p.lam0, p.engine,
                                     ledgers[ks[0]].noise.generator, ridge if p.engine == "vb" else None,
                                     p.solver, project=p.repair)
                # cross_check: the vb engine on the same released statistics, without and with the noise ridge
                W_vb = [fit_weights(XX, Xy, yy, n, "gamma", p.lam, p.lam0, "vb", ridge=r)
                        for r in (None, ridge)] if p.cross_check else None
                X_tests = [s.X_test for s in ss]
                bands = gaussian_intervals_many(W, C, X_tests) if C is not None else None
            except Exception as exc:   # recorded for the cells of the group (counted in the manifest)
                for k in ks:
                    out[k] = exc
                continue
            bounds = _clip_bounds_many(rs, trials)
            for j, k in enumerate(ks):
                w = W[j]
                ex = dict(extras[j])
                if W_vb is not None:
                    for tag, Wv in zip(("vb", "vb_ridge"), W_vb):
                        ex.update(engine_gap(w, Wv[j], splits[k], tag))
                if bands is not None:
                    pred, ci, pi = bands[j]
                else:
                    pred, ci, pi = w @ X_tests[j].T, None, None
                out[k] = Output(predictions=pred, coef=w, extras=ex, guarantee=ledgers[k].guarantee(),
                                coef_interval=ci, pred_interval=pi, clip_bounds=bounds[j])
        return out


def _whole_batch(rs: list[Release]) -> tuple | None:
    """The token of the batched release whose rows ``rs`` are, all of them in order (``Release.batch``; none
    failed): its group's arrays equal the stacks of the releases' rows.  None otherwise."""
    tok = rs[0].batch[0] if rs[0].batch is not None else None
    if tok is None or tok[0].XX.shape[0] != len(rs):
        return None
    for j, r in enumerate(rs):
        if r.batch is None or r.batch[0] is not tok or r.batch[1] != j:
            return None
    return tok


def _public_group(rs: list[Release], d: int, trials: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The statistics of releases without private rows, stacked: each public statistic repeated over the trials,
    XX (S, T, d, d), Xy (S, T, d), yy (S, T)."""
    S = len(rs)
    PX = np.stack([r.public[0] for r in rs])
    PXy = np.stack([r.public[1] for r in rs])
    Pyy = np.array([r.public[2] for r in rs], dtype=float)
    return (np.broadcast_to(PX[:, None], (S, trials, d, d)).copy(), np.broadcast_to(PXy[:, None], (S, trials, d)).copy(),
            np.broadcast_to(Pyy[:, None], (S, trials)).copy())


def _clip_bounds_many(rs: list[Release], trials: int) -> list[np.ndarray | None]:
    """``Release.clip_bounds`` of many releases, as one (S, T, 2) array (None without a release)."""
    idx = [i for i, r in enumerate(rs) if r.B_x is not None]
    out: list[np.ndarray | None] = [None] * len(rs)
    if not idx:
        return out
    tok = _whole_batch(rs) if len(idx) == len(rs) else None
    try:   # the bounds of a batch: all floats or all (trials,) arrays, converted at once (the same values)
        if tok is not None:   # the rows of one batched release: its (S, T) or (S,) arrays hold them already
            bx, by = tok[0].B_x, tok[0].B_y
        else:
            bx = np.array([rs[i].B_x for i in idx], dtype=float)
            by = np.array([rs[i].B_y for i in idx], dtype=float)
        b = np.empty((len(idx), trials, 2))
        b[..., 0] = bx if bx.ndim == 2 else bx[:, None]
        b[..., 1] = by if by.ndim == 2 else by[:, None]
    except ValueError:   # mixed shapes: release by release
        b = np.stack([np.broadcast_to(np.asarray((rs[i].B_x, rs[i].B_y), dtype=float).T, (trials, 2)) for i in idx])
    for i, bi in zip(idx, b):
        out[i] = bi
    return out


def engine_gap(w: np.ndarray, w_vb: np.ndarray, split: Split, tag: str = "vb") -> dict[str, float]:
    """How far the vb engine is from the fit ``w`` (trials, d) on the same released statistics (``cross_check``),
    each the mean over trials: ``<tag>_gap`` = max_j |w_j − w_vb,j| / max_j |w_vb,j|, ``<tag>_rank_agreement`` =
    Spearman correlation of the two engines' test predictions, and ``<tag>_spearman`` = the vb fit's own test
    Spearman (a diagnostic beside the run's ``spearman`` metric: the two engines on identical statistics)."""
    gap = np.max(np.abs(w - w_vb), axis=-1) / np.maximum(np.max(np.abs(w_vb), axis=-1), 1e-300)
    P, P_vb = w @ split.X_test.T, w_vb @ split.X_test.T
    agree = [spearman_rows(P[t][None], P_vb[t])[0] for t in range(P.shape[0])]
    return {f"{tag}_gap": float(np.mean(gap)), f"{tag}_rank_agreement": float(np.mean(agree)),
            f"{tag}_spearman": float(np.mean(spearman_rows(P_vb, split.y_test)))}
