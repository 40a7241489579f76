"""Functional-mechanism linear regression (``fmlr``): Zhang et al. 2012 (PVLDB 5(11)), as compared in Honkela et
al. 2018 (Methods 4.6).

The least-squares objective over the training rows, with a bias column z = (1, x̃) ∈ [−1, 1]^D, D = d + 1, is the
polynomial

    f(w) = Σ_i (ỹ_i − z_iᵀw)² = Σ_i ỹ_i²  −  Σ_i 2ỹ_i z_iᵀ w  +  wᵀ (Σ_i z_i z_iᵀ) w          (Zhang et al. §5.1)

with monomial coefficients α = −2Σ ỹ_i z_i (degree 1, D entries) and M = Σ z_i z_iᵀ (degree 2, one coefficient per
*ordered* pair (j, l), D² entries); the constant Σỹ² does not influence the minimiser and is not released.
x and y are scaled into [−1, 1] with public bounds: x̃ = clip(x/B_x, −1, 1), ỹ = clip(y/B_y, −1, 1).

Neighbouring relation: bounded DP, replace-one (one private row replaced).

Sensitivity (Zhang et al. 2012, Lemma 1 and §5.1): one row contributes Σ_{j,l}|z_j z_l| + Σ_j |2ỹ z_j| ≤ D² + 2D
to the L1 norm of the coefficient vector, so replacing a row changes it by at most Δ = 2(D² + 2D) = 2D² + 4D
(the brief's "(2d² + 4d)/ε" with d counting the bias column).  Adding Lap(Δ/ε) to each of the D² + D coefficients
of the *private* rows is ε-DP (Laplace mechanism); the exact coefficients of the public rows are then added.

Post-processing (no privacy cost, Zhang et al. §5.2–5.3): symmetrise M̃ ← (M̃ + M̃ᵀ)/2, regularise M̃ ← M̃ + reg·I,
eigendecompose M̃ = QΛQᵀ and drop the directions with Λ_k ≤ 0 (they make the noisy objective unbounded below);
minimise over the remaining span: w = −½ Q₊ Λ₊⁻¹ Q₊ᵀ α̃.  Prediction ŷ = B_y · z_testᵀ w.  With ``n_private = 0`` no
private coefficient is released and no noise is added.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from dpexp.components import Params
from dpexp.families.gdsc.unit_box import UnitBoxLR, public_bounds, scale_unit
from dpexp.privacy.mechanisms import laplace
from dpexp.registry import register_algorithm
from dpexp.types import Output, Split


def fm_sensitivity(D: int) -> float:
    """L1 sensitivity 2D² + 4D of the (D² quadratic + D linear) coefficients, D = columns incl. bias."""
    return 2.0 * D * D + 4.0 * D


def with_bias(X: np.ndarray) -> np.ndarray:
    return np.concatenate([np.ones((X.shape[0], 1)), X], axis=1)


def trimmed_minimiser(M: np.ndarray, alpha: np.ndarray, reg: float, tol: float = 0.0) -> np.ndarray:
    """argmin of wᵀMw + αᵀw over the span of M's eigen-directions with eigenvalue > ``tol`` after symmetrising and
    adding reg·I; batched over leading axes: M (…,D,D), α (…,D) → (…,D)."""
    Ms = 0.5 * (M + np.swapaxes(M, -1, -2)) + reg * np.eye(M.shape[-1])
    ev, Q = np.linalg.eigh(Ms)
    pos = ev > tol
    inv = np.where(pos, 1.0 / np.where(pos, ev, 1.0), 0.0)
    c = np.einsum("...ji,...j->...i", Q, alpha)
    return -0.5 * np.einsum("...ij,...j->...i", Q, inv * c)


class _FMParams(Params):
    reg: float = Field(1.0, ge=0, description="ridge term added to the noisy quadratic (Zhang et al. 5.2)")
    bound_x: float | None = Field(None, gt=0, description="public bound B_x on |x_j| (None: meta['x_bound'])")
    bound_y: float = Field(..., gt=0, description="public bound B_y on |y| (declared; larger values are clipped)")


@register_algorithm
class FunctionalMechanismLR(UnitBoxLR):
    """Functional mechanism LR (Zhang et al. 2012): Laplace noise of scale (2D²+4D)/ε on the quadratic
    objective's coefficients (D = d + 1 with bias), symmetrised, regularised, non-positive eigen-directions removed.

    ε-DP under replace-one neighbours; sensitivity derivation in the module docstring.
    """

    name = "fmlr"
    description = "functional mechanism LR: Laplace-perturbed objective coefficients (Zhang et al. 2012)"
    guarantee_text = "pure ε-DP, replace-one"
    Params = _FMParams

    def noise_scale(self, d: int, epsilon: float) -> float:
        """Laplace scale b = (2D² + 4D)/ε with D = d + 1."""
        return fm_sensitivity(d + 1) / epsilon

    def run_many(self, splits: list[Split], epsilon: float, delta: float, ledgers: list,
                 trials: int = 1) -> list[Output | Exception]:
        return self.each_split(splits, epsilon, ledgers, lambda s, ledger: self._fit(s, epsilon, ledger, trials))

    def _fit(self, s: Split, epsilon: float, ledger, trials: int) -> Output:
        B_x, B_y = public_bounds(s, self.params.bound_x, self.params.bound_y, "fmlr")
        D = s.d + 1
        Zv, yv = scale_unit(s.X_private, s.y_private, B_x, B_y, l2_ball=False)
        Zu, yu = scale_unit(s.X_public, s.y_public, B_x, B_y, l2_ball=False)
        Zv, Zu = with_bias(Zv), with_bias(Zu)
        M = np.broadcast_to(Zv.T @ Zv + Zu.T @ Zu, (trials, D, D)).copy()
        a = np.broadcast_to(-2.0 * (Zv.T @ yv + Zu.T @ yu), (trials, D)).copy()
        if Zv.shape[0] > 0:   # M and α released together under one budget: one Laplace mechanism
            dM, da = laplace((np.zeros((D, D)), np.zeros(D)), fm_sensitivity(D), epsilon, ledger,
                             size=trials, scale=self.noise_scale(s.d, epsilon), label="objective")
            M += dM
            a += da
        else:
            ledger.public_only()
        w = trimmed_minimiser(M, a, self.params.reg)
        Zt, _ = scale_unit(s.X_test, None, B_x, B_y, l2_ball=False)
        return Output(predictions=B_y * (w @ with_bias(Zt).T), coef=w[:, 1:], guarantee=ledger.guarantee())
