"""Robust private linear regression (Honkela et al. 2018) and its non-private / unprojected references.

The private algorithms release Laplace-perturbed sufficient statistics (XᵀX, Xᵀy, yᵀy) of the *private* rows after
projecting (clipping) x to [−B_x, B_x] and y to [−B_y, B_y], add the exact statistics of the public rows, and fit
Bayesian linear regression to the sum (Methods 4.1–4.2; thesis Alg. 2).

Neighbouring relation: bounded DP — neighbours replace one private row (replace-one), as in the paper.

Sensitivities (L1, replace-one, after clipping each coordinate to [−B_x, B_x] and y to [−B_y, B_y]):

* XᵀX: each of the d(d+1)/2 unique entries Σ x_j x_k changes by at most 2B_x² (one term in [−B_x², B_x²] is
  replaced), so Δ₁ = d(d+1)/2 · 2B_x² = d(d+1)B_x²; Laplace scale d(d+1)B_x²/(p1 ε).
* Xᵀy: d entries, each term in [−B_xB_y, B_xB_y]: Δ₁ = 2dB_xB_y; scale 2dB_xB_y/(p2 ε).
* yᵀy: one entry, each term in [0, B_y²]: Δ₁ = B_y²; scale B_y²/(p3 ε).

Sequential composition of the three releases with p1 + p2 + p3 = 1 gives ε-DP.  Clipping bounds B = ω·σ use the
dataset's σ (``split.meta['sigma_x'|'sigma_y']``), which the paper takes from the data without spending budget.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from dpexp.audit.plan import AuditPlan
from dpexp.components import Algorithm, BatchedAlgorithm, Params
from dpexp.errors import UserError
from dpexp.families.gdsc.audit import clipped_statistics
from dpexp.models.bayes_lr import posterior_mean_fixed
from dpexp.models.vb import fit_vb, noise_ridge, ridge_stabilised
from dpexp.privacy.mechanisms import laplace_scale
from dpexp.registry import register_algorithm
from dpexp.types import Output, Split


def sufficient_stats(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """(XᵀX, Xᵀy, yᵀy) of the rows."""
    return X.T @ X, X.T @ y, float(y @ y)


def clip(X: np.ndarray, y: np.ndarray, B_x: float, B_y: float) -> tuple[np.ndarray, np.ndarray]:
    """Project every coordinate of x to [−B_x, B_x] and y to [−B_y, B_y] (the paper's outlier projection)."""
    return np.clip(X, -B_x, B_x), np.clip(y, -B_y, B_y)


def sensitivities(d: int, B_x: float, B_y: float) -> tuple[float, float, float]:
    """L1 sensitivities (XᵀX unique entries, Xᵀy, yᵀy) under replace-one neighbours; see the module docstring."""
    return d * (d + 1) * B_x**2, 2.0 * d * B_x * B_y, B_y**2


def perturbed_stats(X: np.ndarray, y: np.ndarray, B_x: float, B_y: float, eps_xx: float, eps_xy: float,
                    eps_yy: float | None, rng: np.random.Generator, trials: int
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Clip, compute and perturb the statistics ``trials`` times: (trials,d,d), (trials,d), (trials,).

    Noise for XᵀX is drawn on the d(d+1)/2 upper-triangular entries and mirrored, so the release stays symmetric.
    ``eps_yy=None`` releases no yᵀy (returns NaN), for models that do not need it.
    """
    d = X.shape[1]
    Xc, yc = clip(X, y, B_x, B_y)
    XX, Xy, yy = sufficient_stats(Xc, yc)
    s_xx, s_xy, s_yy = sensitivities(d, B_x, B_y)
    iu = np.triu_indices(d)
    noise = rng.laplace(0.0, laplace_scale(s_xx, eps_xx), size=(trials, iu[0].size))
    N = np.zeros((trials, d, d))
    N[:, iu[0], iu[1]] = noise
    N = N + np.swapaxes(N, 1, 2) - N * np.eye(d)  # mirror, diagonal counted once
    XXn = XX[None] + N
    Xyn = Xy[None] + rng.laplace(0.0, laplace_scale(s_xy, eps_xy), size=(trials, d))
    if eps_yy is None:
        yyn = np.full(trials, np.nan)
    else:
        yyn = yy + rng.laplace(0.0, laplace_scale(s_yy, eps_yy), size=trials)
    return XXn, Xyn, yyn


def _fit_weights(XX: np.ndarray, Xy: np.ndarray, yy: np.ndarray, n: np.ndarray | float, prior: str, lam: float,
                 lam0: float, engine: str = "vb", rng: np.random.Generator | None = None,
                 ridge: np.ndarray | float | None = None, solver: str = "psd_floor") -> np.ndarray:
    """Posterior-mean weights (…, d) from (possibly perturbed) statistics, batched over leading axes.

    ``prior="fixed"``: Eqs. 3–4 with fixed λ, λ0 (``dpexp.models.bayes_lr``).  ``prior="gamma"``: Gamma(2, 2) priors
    on λ and λ0 (Eq. 6), fitted by the ``vb`` engine (``dpexp.models.vb``, default) or PyMC ADVI (``engine="pymc"``,
    the paper's 5000 iterations; optional extra, slow: one fit per problem).
    """
    if prior == "fixed":
        return posterior_mean_fixed(XX, Xy, lam, lam0, solver)
    if engine == "pymc":
        from dpexp.models.pymc_backend import posterior_mean_pymc

        return posterior_mean_pymc(XX, Xy, yy, n, rng if rng is not None else np.random.default_rng(0))
    if ridge is not None:
        XX = ridge_stabilised(XX, ridge)
    return fit_vb(XX, Xy, yy, n).mean


class _FixedPrecision(Params):
    lam: float = Field(1.0, gt=0, description="noise precision lambda (prior: fixed)")
    lam0: float = Field(1.0, gt=0, description="weight precision lambda0 (prior: fixed)")
    solver: Literal["psd_floor", "direct"] = Field(
        "psd_floor", description="prior: fixed: floor the eigenvalues of the perturbed X'X at 0 before the solve "
                                 "(default) or solve Eqs. 3-4 on the statistics as released (the papers' text)")


class _LRParams(_FixedPrecision):
    prior: Literal["fixed", "gamma"] = Field("fixed", description="fixed precisions (Eqs. 3-4) or Gamma(2,2) priors "
                                                                  "on both (Eq. 6, vb engine)")


@register_algorithm
class BayesLR(BatchedAlgorithm):
    """Non-private Bayesian LR on public + private rows (the paper's LR, Methods 4.1): fixed precisions,
    (λ0 I + λ XᵀX)⁻¹ λ Xᵀy (Eqs. 3–4), or ``prior: gamma`` — Gamma(2, 2) priors on λ, λ0 (Eq. 6) fitted by VB."""

    name = "lr"
    family = "gdsc"
    description = "non-private Bayesian linear regression (fixed precisions or Gamma priors), public + private rows"
    private = False
    neighbouring = None
    Params = _LRParams

    def run_many(self, splits: list[Split], epsilon: float, delta: float, rngs: list[np.random.Generator],
                 trials: int = 1) -> list[Output | Exception]:
        p = self.params
        out: list[Output | Exception] = []
        by_d: dict[int, list[int]] = {}
        for k, s in enumerate(splits):
            by_d.setdefault(s.d, []).append(k)
        res: dict[int, np.ndarray] = {}
        for d, ks in by_d.items():
            st = [sufficient_stats(splits[k].X_train, splits[k].y_train) for k in ks]
            W = _fit_weights(np.stack([a[0] for a in st]), np.stack([a[1] for a in st]), np.array([a[2] for a in st]),
                             np.array([float(len(splits[k].y_train)) for k in ks]), p.prior, p.lam, p.lam0)
            res.update(zip(ks, W))
        for k, s in enumerate(splits):
            w = res[k]
            pred = np.broadcast_to(s.X_test @ w, (trials, s.X_test.shape[0]))
            out.append(Output(predictions=pred.copy(), coef=np.broadcast_to(w, (trials, w.size)).copy()))
        return out


#: former explicit defaults of rplr (the published code's split), used for p's not given with an explicit split
EXPLICIT_SPLIT_DEFAULT = (0.35, 0.60, 0.05)


class _RPLRParams(_FixedPrecision):
    prior: Literal["gamma", "fixed"] = Field("gamma", description="Gamma(2,2) priors on lambda, lambda0 (proposed "
                                                                  "method) or fixed lam, lam0")
    engine: Literal["vb", "pymc"] = Field("vb", description="inference for prior: gamma (vb fast; pymc = ADVI)")
    stabilize: Literal["noise_ridge", "none"] = Field(
        "noise_ridge", description="prior: gamma with vb: add the noise-calibrated ridge 2 sqrt(2d) b_xx to the "
                                   "perturbed X'X (dpexp.models.vb.noise_ridge) or fit the projected statistics as is")
    split: Literal["auto"] | None = Field(None, description="'auto' (default when p1-p3 are not given): tune the "
                                                            "budget split on auxiliary data")
    p1: float | None = Field(None, gt=0, lt=1, description="share of epsilon for X'X (explicit split)")
    p2: float | None = Field(None, gt=0, lt=1, description="share of epsilon for X'y (explicit split)")
    p3: float | None = Field(None, gt=0, lt=1, description="share of epsilon for y'y (explicit split)")
    split_tuning: Literal["paper", "case"] = Field(
        "paper", description="split: auto tunes once at n=500, d=10, eps=2 (paper) or at each test case")
    omega: Literal["auto"] | None = Field(None, description="'auto' (default when omega_x/omega_y are not given): "
                                                            "tune the thresholds per test case")
    omega_x: float | None = Field(None, gt=0, description="clipping threshold B_x = omega_x * sigma_x (explicit)")
    omega_y: float | None = Field(None, gt=0, description="clipping threshold B_y = omega_y * sigma_y (explicit)")
    tune_n: Literal["requested", "actual"] = Field(
        "requested", description="n of the threshold tuning: the requested n_private (GDSC drops untested lines per "
                                 "drug; tuning per distinct n would be wasteful) or the rows actually present")
    tune_reps: tuple[int, int] = Field((20, 20), description="auxiliary data sets x noise draws, threshold tuning")
    split_reps: tuple[int, int] = Field((5, 5), description="auxiliary data sets x noise draws, split tuning")
    sigma: Literal["data", "dp"] = Field("data", description="sigma_x, sigma_y from the data without budget (paper) "
                                                             "or DP estimates spending sigma_share of epsilon")
    sigma_share: float = Field(0.1, gt=0, lt=1, description="share of epsilon for the DP sigma estimates (sigma: dp)")
    sigma_bound_x: float = Field(1.0, gt=0, description="public bound on |x_j| for the DP sigma_x (sigma: dp)")
    sigma_bound_y: float = Field(5.0, gt=0, description="public bound on |y| for the DP sigma_y (sigma: dp)")

    @model_validator(mode="after")
    def _explicit_or_auto(self) -> "_RPLRParams":
        # backwards compatible: giving some of p1-p3 (omega_x/omega_y) makes the split (thresholds) explicit, and
        # the ones not given take the former defaults p = (0.35, 0.60, 0.05), omega = 1.0
        ps = [self.p1, self.p2, self.p3]
        if any(p is not None for p in ps):
            if self.split == "auto":
                raise ValueError("give split: auto or explicit p1, p2, p3, not both")
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
        return self

    @property
    def auto_split(self) -> bool:
        return self.p1 is None

    @property
    def auto_omega(self) -> bool:
        return self.omega_x is None


def _dp_sigmas(X: np.ndarray, y: np.ndarray, Bx: float, By: float, eps_x: float, eps_y: float,
               rng: np.random.Generator) -> tuple[float, float]:
    """DP estimates of σ_x (over all entries) and σ_y as root mean squares of clipped, centred-by-preprocessing data.

    Releases S_x = Σ_ij clip(x_ij, ±Bx)² + Lap(d Bx²/eps_x) and S_y = Σ_i clip(y_i, ±By)² + Lap(By²/eps_y).
    Replace-one sensitivity: one row changes S_x by at most d·Bx² (each of its d terms lies in [0, Bx²]) and S_y by
    By².  σ = sqrt(max(S, 0)/count); counts are public under bounded DP.  The data are assumed centred (GDSC and the
    Eq. 10 generator are), so the second moment about 0 is the variance.
    """
    n, d = X.shape
    Sx = float(np.sum(np.clip(X, -Bx, Bx) ** 2)) + rng.laplace(0.0, laplace_scale(d * Bx * Bx, eps_x))
    Sy = float(np.sum(np.clip(y, -By, By) ** 2)) + rng.laplace(0.0, laplace_scale(By * By, eps_y))
    return math.sqrt(max(Sx, 0.0) / max(n * d, 1)), math.sqrt(max(Sy, 0.0) / max(n, 1))


@register_algorithm
class RobustPrivateLR(BatchedAlgorithm):
    """Robust private LR, the proposed method of Honkela et al. 2018 (Methods 4.1–4.3; thesis Alg. 2).

    Clip the private rows to B_x = ω_x σ_x, B_y = ω_y σ_y (Eqs. 9, 11), release XᵀX, Xᵀy, yᵀy with the Laplace
    mechanism at budget shares p1, p2, p3 (scales in the module docstring), add the exact public statistics and fit
    Bayesian LR — Gamma(2, 2) priors on λ, λ0 (``prior: gamma``, default, ``vb`` engine) or fixed λ, λ0.
    ε-DP under replace-one (bounded) neighbours of the private rows: sequential composition of the three releases
    (+ the σ releases when ``sigma: dp``).

    Parameters: ``split: auto`` (default unless p1, p2, p3 are given) chooses the split on auxiliary data
    (``dpexp.families.gdsc.tuning.tune_split``; ``split_tuning: paper`` = once at n = 500, d = 10, ε = 2 as the paper,
    ``case`` = at the test case); ``omega: auto`` (default unless omega_x, omega_y are given) chooses the thresholds
    per test case (n, d, ε, split) with ``dpexp.families.gdsc.tuning.tune_thresholds`` — no private data is used, no budget spent.
    σ_x, σ_y: ``sigma: data`` takes ``split.meta['sigma_x'|'sigma_y']`` (the paper: data std without budget — not
    DP); ``sigma: dp`` spends ``sigma_share`` of ε on Laplace estimates (``_dp_sigmas``; public bounds
    ``sigma_bound_x|y``) and splits the rest by p1, p2, p3.  Extras: p1, p2, p3, omega_x, omega_y, B_x, B_y.
    """

    name = "rplr"
    family = "gdsc"
    # the tuned defaults (split/omega: auto) depend only on public facts (n, d, ε); fixing them audits the
    # same release at the paper's split and ω = 1 without running the tuner on every call
    audit = AuditPlan(design=clipped_statistics, params={"p1": 0.35, "p2": 0.6, "p3": 0.05, "omega_x": 1.0,
                                                              "omega_y": 1.0})
    description = "robust private LR: clipped, Laplace-perturbed sufficient statistics (Honkela et al. 2018)"
    neighbouring = "replace-one"
    Params = _RPLRParams

    # ------------------------------------------------------------------ choices that depend only on public facts
    def stats_epsilon(self, epsilon: float) -> float:
        """The part of ε spent on the sufficient statistics."""
        return epsilon * (1.0 - self.params.sigma_share) if self.params.sigma == "dp" else epsilon

    def budget_split(self, n: int, d: int, epsilon: float) -> tuple[float, float, float]:
        p = self.params
        if not p.auto_split:
            return float(p.p1), float(p.p2), float(p.p3)  # type: ignore[arg-type]
        from dpexp.families.gdsc.tuning import PAPER_SPLIT_CASE, tune_split

        case = PAPER_SPLIT_CASE if p.split_tuning == "paper" else {"n": max(n, 2), "d": d, "epsilon": epsilon}
        memo = self.__dict__.setdefault("_memo", {})  # per-instance shortcut past the tuning cache's key hashing
        mk = ("split", case["n"], case["d"], float(case["epsilon"]))
        if mk not in memo:
            r = tune_split(case["n"], case["d"], case["epsilon"], n_aux=p.split_reps[0], n_noise=p.split_reps[1],
                           stabilize=p.stabilize if p.prior == "gamma" else "none")
            memo[mk] = (float(r["p1"]), float(r["p2"]), float(r["p3"]))
        return memo[mk]

    def omegas(self, n: int, d: int, epsilon: float, split: tuple[float, float, float]) -> tuple[float, float]:
        p = self.params
        if not p.auto_omega:
            return float(p.omega_x), float(p.omega_y)  # type: ignore[arg-type]
        if n < 2:
            return float("nan"), float("nan")  # no private rows: nothing is clipped or released
        from dpexp.families.gdsc.tuning import tune_thresholds

        memo = self.__dict__.setdefault("_memo", {})
        mk = ("omega", int(n), int(d), float(epsilon), tuple(split))
        if mk not in memo:
            r = tune_thresholds(n, d, epsilon, split, n_aux=p.tune_reps[0], n_noise=p.tune_reps[1])
            memo[mk] = (float(r["omega_x"]), float(r["omega_y"]))
        return memo[mk]

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
    def _release(self, split: Split, epsilon: float, rng: np.random.Generator, trials: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, float]]:
        """Noisy private statistics + exact public ones: (trials,d,d), (trials,d), (trials,), extras."""
        p = self.params
        d = split.d
        eps = self.stats_epsilon(epsilon)
        n_priv = int(split.X_private.shape[0])
        sp = self.budget_split(self._tune_n(split), d, eps)
        wx, wy = self.omegas(self._tune_n(split), d, eps, sp)
        extras = {"p1": sp[0], "p2": sp[1], "p3": sp[2]}
        XXp, Xyp, yyp = sufficient_stats(split.X_public, split.y_public)
        if n_priv == 0:
            return (np.broadcast_to(XXp, (trials, d, d)).copy(), np.broadcast_to(Xyp, (trials, d)).copy(),
                    np.full(trials, yyp), extras)
        if p.sigma == "dp":
            sh = p.sigma_share * epsilon / 2.0
            sx, sy = _dp_sigmas(split.X_private, split.y_private, p.sigma_bound_x, p.sigma_bound_y, sh, sh, rng)
            sx, sy = max(sx, 1e-12), max(sy, 1e-12)
        else:
            sx, sy = float(split.meta["sigma_x"]), float(split.meta["sigma_y"])
        B_x, B_y = wx * sx, wy * sy
        XXn, Xyn, yyn = perturbed_stats(split.X_private, split.y_private, B_x, B_y, sp[0] * eps, sp[1] * eps,
                                        sp[2] * eps, rng, trials)
        extras.update({"omega_x": wx, "omega_y": wy, "B_x": B_x, "B_y": B_y})
        if p.prior == "gamma" and p.engine == "vb" and p.stabilize == "noise_ridge":
            extras["ridge"] = float(noise_ridge(d, laplace_scale(sensitivities(d, B_x, B_y)[0], sp[0] * eps)))
        if p.sigma == "dp":
            extras.update({"sigma_x_dp": sx, "sigma_y_dp": sy})
        return XXn + XXp, Xyn + Xyp, yyn + yyp, extras

    def run_many(self, splits: list[Split], epsilon: float, delta: float, rngs: list[np.random.Generator],
                 trials: int = 1) -> list[Output | Exception]:
        """Release each split's statistics from its own generator (same draws as ``run``), then fit all splits ×
        trials of equal d in one batched call."""
        p = self.params
        out: list[Output | Exception] = [UserError("not run")] * len(splits)
        groups: dict[int, list[tuple[int, np.ndarray, np.ndarray, np.ndarray, float, dict[str, float]]]] = {}
        for k, (s, rng) in enumerate(zip(splits, rngs)):
            try:
                XX, Xy, yy, ex = self._release(s, epsilon, rng, trials)
                n_tot = float(s.X_private.shape[0] + s.X_public.shape[0])
                groups.setdefault(s.d, []).append((k, XX, Xy, yy, n_tot, ex))
            except Exception as exc:  # recorded per cell
                out[k] = exc
        for d, items in groups.items():
            XX = np.stack([it[1] for it in items])
            Xy = np.stack([it[2] for it in items])
            yy = np.stack([it[3] for it in items])
            n = np.array([it[4] for it in items])[:, None]
            ridge = None
            if p.prior == "gamma" and p.engine == "vb" and p.stabilize == "noise_ridge":
                ridge = np.array([it[5].get("ridge", 0.0) for it in items])[:, None]
            try:
                W = _fit_weights(XX, Xy, yy, n, p.prior, p.lam, p.lam0, p.engine, rngs[items[0][0]], ridge,
                                 p.solver)
            except Exception as exc:
                for it in items:
                    out[it[0]] = exc
                continue
            for (k, *_, ex), w in zip(items, W):
                out[k] = Output(predictions=w @ splits[k].X_test.T, coef=w, extras=dict(ex))
        return out


class _PLRParams(_FixedPrecision):
    B_y: float = Field(5.0, gt=0, description="declared public bound on |y| covering the whole data range")
    B_x: float = Field(1.0, gt=0, description="bound on |x_j|; 1 for unit-norm rows")


def _fit_predict(split: Split, XXn: np.ndarray, Xyn: np.ndarray, lam: float, lam0: float,
                 solver: str = "psd_floor") -> Output:
    XXp, Xyp, _ = sufficient_stats(split.X_public, split.y_public)
    w = posterior_mean_fixed(XXn + XXp, Xyn + Xyp, lam, lam0, solver)
    return Output(predictions=w @ split.X_test.T, coef=w)


@register_algorithm
class PrivateLR(Algorithm):
    """Private LR without projection (the paper's "private LR"): bounds that cover the whole data range
    (B_x = 1 for unit-norm rows, B_y a declared public bound), ε split evenly between XᵀX and Xᵀy, fixed
    precisions (no yᵀy needed).  ε-DP under replace-one neighbours; sensitivities as in the module docstring."""

    name = "plr"
    family = "gdsc"
    audit = AuditPlan(design=clipped_statistics)
    description = "private LR without projection: whole-range bounds, even split of epsilon"
    neighbouring = "replace-one"
    Params = _PLRParams

    def run(self, split: Split, epsilon: float, delta: float, rng: np.random.Generator, trials: int = 1) -> Output:
        p = self.params
        d = split.d
        if split.X_private.shape[0] == 0:  # nothing private to release (as rplr): the public-only fit
            return _fit_predict(split, np.zeros((trials, d, d)), np.zeros((trials, d)), p.lam, p.lam0, p.solver)
        XXn, Xyn, _ = perturbed_stats(split.X_private, split.y_private, p.B_x, p.B_y, 0.5 * epsilon, 0.5 * epsilon,
                                      None, rng, trials)
        return _fit_predict(split, XXn, Xyn, p.lam, p.lam0, p.solver)


class _SplitSearchParams(Params):
    p1: float = Field(0.35, gt=0, lt=1, description="share of epsilon for X'X (a grid point; p3 = 1 - p1 - p2)")
    p2: float = Field(0.60, gt=0, lt=1, description="share of epsilon for X'y (a grid point)")
    tune_n: int = Field(500, ge=2, description="auxiliary data size of the split search (paper: 500)")
    tune_d: int = Field(10, ge=1, description="auxiliary data dimension of the split search (paper: 10)")
    tune_epsilon: float = Field(2.0, gt=0, description="epsilon of the split search (paper: 2)")
    split_reps: tuple[int, int] = Field((5, 5), description="auxiliary data sets x noise draws (paper: 5 x 5)")

    @model_validator(mode="after")
    def _on_simplex(self) -> "_SplitSearchParams":
        p3 = 1.0 - self.p1 - self.p2
        if p3 < 0.05 - 1e-9:
            raise ValueError(f"p1 + p2 must be <= 0.95 (p3 = 1 - p1 - p2 >= 0.05), got {self.p1 + self.p2:g}")
        return self


@register_algorithm
class SplitSearch(Algorithm):
    """One cell of the budget-split search (Fig. 5; Methods 4.3): the split (p1, p2, 1 − p1 − p2) of the grid
    {0.05, …, 0.90}³.  Extras: ``aux_spearman`` — the mean Spearman of this split on the auxiliary data of
    ``dpexp.families.gdsc.tuning.tune_split`` (the quantity Fig. 5 maps; one cached search serves every cell) — and the thresholds
    ``omega_x``, ``omega_y`` tuned for it there.  Predictions: ``rplr`` (Gamma priors) with this split and those
    thresholds on the cell's own split, so ``spearman`` shows the same split on held-out data.  Off-simplex (p1, p2)
    (p3 < 0.05) are invalid parameters: a config lists the whole p1 × p2 square with ``skip_invalid: true`` and
    those grid points are left out (the heat-map cells stay empty).  ε-DP under replace-one neighbours exactly as ``rplr``."""

    name = "split_search"
    family = "gdsc"
    audit = AuditPlan(design=clipped_statistics)
    description = "budget-split grid point: auxiliary-data score (Fig. 5) + rplr with that split"
    neighbouring = "replace-one"
    Params = _SplitSearchParams

    def _row(self) -> list[float]:
        from dpexp.families.gdsc.tuning import SPLIT_GRID, tune_split

        p = self.params
        p3 = round(1.0 - p.p1 - p.p2, 10)
        for k, sp in enumerate(SPLIT_GRID):
            if max(abs(sp[0] - p.p1), abs(sp[1] - p.p2), abs(sp[2] - p3)) < 1e-9:
                table = tune_split(p.tune_n, p.tune_d, p.tune_epsilon, n_aux=p.split_reps[0],
                                   n_noise=p.split_reps[1])["table"]
                return table[k]
        raise UserError(f"split_search: (p1, p2, p3) = ({p.p1:g}, {p.p2:g}, {p3:g}) is not on the split grid "
                        "{0.05, ..., 0.90}^3 with sum 1 (off-simplex cell)")

    def _rplr(self) -> RobustPrivateLR:
        row = self._row()
        return RobustPrivateLR(p1=row[0], p2=row[1], p3=row[2], omega_x=row[4], omega_y=row[5])

    def bounds(self, split: Split, epsilon: float | None = None) -> tuple[float, float]:
        return self._rplr().bounds(split, epsilon)

    def run(self, split: Split, epsilon: float, delta: float, rng: np.random.Generator, trials: int = 1) -> Output:
        row = self._row()
        out = self._rplr().run(split, epsilon, delta, rng, trials)
        out.extras.update({"aux_spearman": row[3], "omega_x": row[4], "omega_y": row[5]})
        return out
