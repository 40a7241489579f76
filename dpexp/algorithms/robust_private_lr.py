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

import numpy as np
from pydantic import Field, model_validator

from dpexp.components import Algorithm, Params
from dpexp.models.bayes_lr import posterior_mean_fixed
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


class _FixedPrecision(Params):
    lam: float = Field(1.0, gt=0, description="noise precision lambda (fixed)")
    lam0: float = Field(1.0, gt=0, description="weight precision lambda0 (fixed)")


@register_algorithm
class BayesLR(Algorithm):
    """Non-private Bayesian LR with fixed precisions on public + private rows: (λ0 I + λ XᵀX)⁻¹ λ Xᵀy."""

    name = "lr"
    description = "non-private Bayesian linear regression (fixed precisions), public + private rows"
    private = False
    neighbouring = None
    Params = _FixedPrecision

    def run(self, split: Split, epsilon: float, delta: float, rng: np.random.Generator, trials: int = 1) -> Output:
        XX, Xy, _ = sufficient_stats(split.X_train, split.y_train)
        w = posterior_mean_fixed(XX, Xy, self.params.lam, self.params.lam0)
        pred = np.broadcast_to(split.X_test @ w, (trials, split.X_test.shape[0]))
        return Output(predictions=pred.copy(), coef=np.broadcast_to(w, (trials, w.size)).copy())


class _RPLRParams(_FixedPrecision):
    p1: float = Field(0.35, gt=0, lt=1, description="share of epsilon for X'X")
    p2: float = Field(0.60, gt=0, lt=1, description="share of epsilon for X'y")
    p3: float = Field(0.05, gt=0, lt=1, description="share of epsilon for y'y")
    omega_x: float = Field(1.0, gt=0, description="clipping threshold B_x = omega_x * sigma_x")
    omega_y: float = Field(1.0, gt=0, description="clipping threshold B_y = omega_y * sigma_y")

    @model_validator(mode="after")
    def _shares_sum_to_one(self) -> "_RPLRParams":
        total = self.p1 + self.p2 + self.p3
        if not math.isclose(total, 1.0, abs_tol=1e-9):
            raise ValueError(f"p1 + p2 + p3 must equal 1, got {total:g}")
        return self


def _fit_predict(split: Split, XXn: np.ndarray, Xyn: np.ndarray, lam: float, lam0: float) -> Output:
    XXp, Xyp, _ = sufficient_stats(split.X_public, split.y_public)
    w = posterior_mean_fixed(XXn + XXp, Xyn + Xyp, lam, lam0)
    return Output(predictions=w @ split.X_test.T, coef=w)


@register_algorithm
class RobustPrivateLR(Algorithm):
    """Robust private LR (Honkela et al. 2018, Methods 4.2): clip with B = ω·σ, Laplace-perturb XᵀX, Xᵀy, yᵀy
    with budget shares p1, p2, p3 (module docstring has the sensitivities), add public statistics, fit with fixed
    precisions.  ε-DP under replace-one neighbours of the private rows."""

    name = "rplr"
    description = "robust private LR: clipped, Laplace-perturbed sufficient statistics (Honkela et al. 2018)"
    neighbouring = "replace-one"
    Params = _RPLRParams

    def bounds(self, split: Split) -> tuple[float, float]:
        return self.params.omega_x * split.meta["sigma_x"], self.params.omega_y * split.meta["sigma_y"]

    def run(self, split: Split, epsilon: float, delta: float, rng: np.random.Generator, trials: int = 1) -> Output:
        p = self.params
        B_x, B_y = self.bounds(split)
        XXn, Xyn, _ = perturbed_stats(split.X_private, split.y_private, B_x, B_y, p.p1 * epsilon, p.p2 * epsilon,
                                      p.p3 * epsilon, rng, trials)
        out = _fit_predict(split, XXn, Xyn, p.lam, p.lam0)
        out.extras.update({"B_x": B_x, "B_y": B_y})
        return out


class _PLRParams(_FixedPrecision):
    B_y: float = Field(5.0, gt=0, description="declared public bound on |y| covering the whole data range")
    B_x: float = Field(1.0, gt=0, description="bound on |x_j|; 1 for unit-norm rows")


@register_algorithm
class PrivateLR(Algorithm):
    """Private LR without projection (the paper's "private LR"): bounds that cover the whole data range
    (B_x = 1 for unit-norm rows, B_y a declared public bound), ε split evenly between XᵀX and Xᵀy, fixed
    precisions (no yᵀy needed).  ε-DP under replace-one neighbours; sensitivities as in the module docstring."""

    name = "plr"
    description = "private LR without projection: whole-range bounds, even split of epsilon"
    neighbouring = "replace-one"
    Params = _PLRParams

    def run(self, split: Split, epsilon: float, delta: float, rng: np.random.Generator, trials: int = 1) -> Output:
        p = self.params
        XXn, Xyn, _ = perturbed_stats(split.X_private, split.y_private, p.B_x, p.B_y, 0.5 * epsilon, 0.5 * epsilon,
                                      None, rng, trials)
        return _fit_predict(split, XXn, Xyn, p.lam, p.lam0)
