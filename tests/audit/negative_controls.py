"""Negative (and positive) controls for ``dpexp audit`` — deliberately NOT registered with ``dpexp.registry``.

``SSPControl`` is sufficient-statistics perturbation linear regression (the mechanism family of rplr/plr,
Honkela et al. 2018 Methods 4.2 and Supplement Alg. 1; Vu & Slavkovic 2009): clip each row to the declared box
x ∈ [x_lo, x_hi]^d, y ∈ [y_lo, y_hi] (``split.meta['bounds_x'|'bounds_y']``), release the upper triangle of
XᵀX with Laplace noise of budget p·ε and Xᵀy with (1 − p)·ε, and predict with the ridge solution
(A + λI)⁻¹ b (post-processing).

Neighbouring relation: replace-one (bounded DP).  Sensitivity (L1): replacing one row changes the entry
Σ_i f(x_i, y_i) by at most max_box f − min_box f, so Δ₁(XᵀX) = Σ_{j≤k} range(x_j x_k) and Δ₁(Xᵀy) = Σ_j
range(x_j y); for a diagonal entry range(x_j²) = max(lo_j², hi_j²) − (0 if lo_j ≤ 0 ≤ hi_j else min(lo_j²,
hi_j²)).  Laplace with scale Δ₁/ε_i per release and basic composition give ε-DP.

``variant`` breaks it on purpose:

* ``"half_noise"``: every Laplace scale halved (so the release is 2ε-DP, not ε-DP);
* ``"lower_bound_twice"``: the diagonal's upper end computed as lo_j·lo_j (the lower bound used twice) instead
  of max(lo_j², hi_j²) — the open bug of a widely used library; with lo_j = 0 the diagonal gets no noise;
* ``"data_dependent"``: the box is taken from the private data (min/max per column) instead of the declared
  bounds, so the noise scale itself reveals the data (zero noise when all rows agree).

``NoisyMeanControl`` predicts the clipped mean of y at every test point with Laplace (δ = 0) or analytic
Gaussian (δ > 0) noise; sensitivity (y_hi − y_lo)/n under replace-one; ``noise_factor`` < 1 breaks it.
"""

from __future__ import annotations

import numpy as np

from dpexp.components import Algorithm
from dpexp.privacy.guarantee import Guarantee
from dpexp.privacy.mechanisms import analytic_gaussian_sigma, laplace_scale
from dpexp.types import Output, Split


def claimed(epsilon: float, delta: float) -> Guarantee:
    """What a control claims, as a buggy implementation with a wrong privacy map would: the (ε, δ) it was asked
    for, whatever its noise (controls draw from the generator on purpose; they are not registered algorithms)."""
    return Guarantee.pure(epsilon) if delta <= 0 else Guarantee("approx", epsilon, delta)

VARIANTS = ("correct", "half_noise", "lower_bound_twice", "data_dependent")


def _product_range(a: tuple[float, float], b: tuple[float, float]) -> float:
    p = [a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]]
    return max(p) - min(p)


def _square_range(lo: float, hi: float, bug: bool) -> float:
    top = lo * lo if bug else max(lo * lo, hi * hi)
    bottom = 0.0 if lo <= 0.0 <= hi else min(lo * lo, hi * hi)
    return max(top - bottom, 0.0)


class SSPControl(Algorithm):
    """Sufficient-statistics perturbation LR with a switchable bug (module docstring)."""

    name = "control_ssp"
    neighbouring = "replace-one"

    def __init__(self, variant: str = "correct", p: float = 0.3, lam: float = 1.0) -> None:
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
        self.variant, self.p, self.lam = variant, p, lam

    def _box(self, split: Split) -> tuple[np.ndarray, np.ndarray, float, float]:
        d = split.X_private.shape[1]
        if self.variant == "data_dependent":  # BUG on purpose: bounds read off the private rows
            X, y = split.X_private, split.y_private
            return X.min(axis=0), X.max(axis=0), float(y.min()), float(y.max())
        bx, by = split.meta["bounds_x"], split.meta["bounds_y"]
        return np.full(d, bx[0], float), np.full(d, bx[1], float), float(by[0]), float(by[1])

    def sensitivities(self, split: Split) -> tuple[float, float]:
        lo, hi, ylo, yhi = self._box(split)
        d = lo.size
        bug = self.variant == "lower_bound_twice"
        s_xx = sum(_square_range(lo[j], hi[j], bug) if j == k else _product_range((lo[j], hi[j]), (lo[k], hi[k]))
                   for j in range(d) for k in range(j, d))
        s_xy = sum(_product_range((lo[j], hi[j]), (ylo, yhi)) for j in range(d))
        return s_xx, s_xy

    def run(self, split: Split, epsilon: float, delta: float, rng: np.random.Generator, trials: int = 1) -> Output:
        lo, hi, ylo, yhi = self._box(split)
        X = np.clip(split.X_private, lo, hi)
        y = np.clip(split.y_private, ylo, yhi)
        d = X.shape[1]
        s_xx, s_xy = self.sensitivities(split)
        f = 0.5 if self.variant == "half_noise" else 1.0
        b_xx = f * laplace_scale(s_xx, self.p * epsilon)
        b_xy = f * laplace_scale(s_xy, (1.0 - self.p) * epsilon)
        iu = np.triu_indices(d)
        N = np.zeros((trials, d, d))
        N[:, iu[0], iu[1]] = rng.laplace(0.0, 1.0, size=(trials, iu[0].size)) * b_xx
        N = N + np.swapaxes(N, 1, 2) - N * np.eye(d)
        A = X.T @ X + N + self.lam * np.eye(d)
        b = X.T @ y + rng.laplace(0.0, 1.0, size=(trials, d)) * b_xy
        with np.errstate(all="ignore"):
            w = np.linalg.solve(A, b[..., None])[..., 0]
        return Output(predictions=w @ split.X_test.T, coef=w, guarantee=claimed(epsilon, delta))


class NoisyMeanControl(Algorithm):
    """Clipped mean of y at every test point + Laplace (δ = 0) or analytic Gaussian (δ > 0) noise, scaled by
    ``noise_factor`` (1: correct; 0.5: the half-noise control).  Replace-one sensitivity (y_hi − y_lo)/n."""

    name = "control_mean"
    neighbouring = "replace-one"

    def __init__(self, noise_factor: float = 1.0) -> None:
        super().__init__()
        self.noise_factor = noise_factor

    def run(self, split: Split, epsilon: float, delta: float, rng: np.random.Generator, trials: int = 1) -> Output:
        ylo, yhi = split.meta["bounds_y"]
        y = np.clip(split.y_private, ylo, yhi)
        sens = (yhi - ylo) / y.size
        if delta > 0:
            noise = rng.normal(0.0, analytic_gaussian_sigma(sens, epsilon, delta), size=trials)
        else:
            noise = rng.laplace(0.0, laplace_scale(sens, epsilon), size=trials)
        m = y.mean() + self.noise_factor * noise
        return Output(predictions=np.repeat(m[:, None], split.X_test.shape[0], axis=1),
                      guarantee=claimed(epsilon, delta))


class FailsOnDegenerateData(Algorithm):
    """Wraps a correct algorithm and returns NaN (a failed release) whenever every private x is equal — the bug
    ``dp_ss_theil_sen`` had before commit e73b8f2 (an empty estimate set gave NaN deterministically).  A release
    that fails on D but never on its neighbour D′ has unbounded privacy loss: {output is NaN} has probability 1
    under D and 0 under D′.  ``neighbouring`` is that of the wrapped algorithm."""

    name = "control_nan_on_degenerate"

    def __init__(self, inner: Algorithm) -> None:
        super().__init__()
        self.inner = inner
        self.neighbouring = inner.neighbouring

    def run(self, split: Split, epsilon: float, delta: float, rng: np.random.Generator, trials: int = 1) -> Output:
        out = self.inner.run(split, epsilon, delta, rng, trials)
        if np.ptp(split.X_private, axis=0).max() == 0.0:
            return Output(predictions=np.full_like(np.asarray(out.predictions, dtype=float), np.nan),
                          guarantee=out.guarantee)
        return out
