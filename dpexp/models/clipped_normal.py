"""Moments of clipped normal variables, and the population regression of clipped data.

The robust private LR clips every coordinate of x to [−B_x, B_x] and y to [−B_y, B_y] (Honkela et al. 2018,
Eq. 9) before computing the sufficient statistics.  Under the auxiliary-data model of the paper (Eq. 10:
x ~ N(0, σ_x² I), y | x ~ N(xᵀβ, 1/λ)) the moments of the clipped variables have closed forms or one-dimensional
integrals, which the noise-aware model uses for

* the prior of the private Gram matrix (``dpexp.models.gram_prior``: E[clip(x_j)²], E[clip(x_j)⁴]);
* the target of inference on clipped data, w̃ = E[x̃x̃ᵀ]⁻¹ E[x̃ỹ] (:func:`clipped_regression_coef`): the released
  statistics of clipped rows identify the regression of ỹ = clip(y) on x̃ = clip(x), not β;
* the closed-form risk behind the analytic budget split (``dpexp.models.budget_split``).

Formulas (Z ~ N(0, 1), ω > 0, φ/Φ the standard normal pdf/cdf, clip_ω(z) = max(−ω, min(z, ω))):

    E[clip_ω(Z)²] = (2Φ(ω) − 1) − 2ωφ(ω) + 2ω²(1 − Φ(ω))
    E[clip_ω(Z)⁴] = 3(2Φ(ω) − 1) − 2φ(ω)(ω³ + 3ω) + 2ω⁴(1 − Φ(ω))
    E[clip_B(μ + sZ)] = μ(Φ(β) − Φ(α)) + s(φ(α) − φ(β)) + B(1 − Φ(β)) − BΦ(α),   α = (−B − μ)/s, β = (B − μ)/s

and E[clip(x_j) clip(y)] = E_x[clip(x_j) · E[clip(β_j x_j + r) | x_j]] with r ~ N(0, ‖β‖² − β_j² + 1/λ)
independent of x_j, integrated over x_j by Gauss–Hermite quadrature.
"""

from __future__ import annotations

import numpy as np
from scipy import special

_SQRT2 = np.sqrt(2.0)


def _phi(z: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * z * z) / np.sqrt(2.0 * np.pi)


def clipped_moments(omega: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """(E[clip_ω(Z)²], E[clip_ω(Z)⁴]) for Z ~ N(0, 1); ω may be an array (``inf`` gives (1, 3))."""
    w = np.asarray(omega, dtype=float)
    if np.any(w <= 0):
        raise ValueError(f"omega must be > 0, got {omega}")
    fin = np.isfinite(w)
    wf = np.where(fin, w, 0.0)
    inner = special.erf(wf / _SQRT2)                       # 2Φ(ω) − 1
    tail = 0.5 * special.erfc(wf / _SQRT2)                 # 1 − Φ(ω)
    pdf = _phi(wf)
    m2 = inner - 2.0 * wf * pdf + 2.0 * wf**2 * tail
    m4 = 3.0 * inner - 2.0 * pdf * (wf**3 + 3.0 * wf) + 2.0 * wf**4 * tail
    return np.where(fin, m2, 1.0), np.where(fin, m4, 3.0)


def clipped_mean(mu: np.ndarray, s: np.ndarray | float, B: np.ndarray | float) -> np.ndarray:
    """E[clip_B(μ + sZ)], Z ~ N(0, 1), elementwise (s > 0)."""
    mu = np.asarray(mu, dtype=float)
    s = np.asarray(s, dtype=float)
    B = np.asarray(B, dtype=float)
    a = (-B - mu) / s
    b = (B - mu) / s
    Pa = 0.5 * special.erfc(-a / _SQRT2)
    Pb = 0.5 * special.erfc(-b / _SQRT2)
    return mu * (Pb - Pa) + s * (_phi(a) - _phi(b)) + B * (1.0 - Pb) - B * Pa


def clipped_cross_moment(beta: np.ndarray, lam: float | np.ndarray, B_x: float | np.ndarray,
                         B_y: float | np.ndarray, n_nodes: int = 80) -> np.ndarray:
    """E[clip(x_j, B_x) clip(y, B_y)] for x ~ N(0, I_d), y = xᵀβ + e, e ~ N(0, 1/λ): β (…, d) → (…, d).

    B_x, B_y and λ broadcast against the batch shape ``…``.  Gauss–Hermite quadrature over x_j with ``n_nodes``
    nodes (the integrand is piecewise smooth; 80 nodes give ~1e-6 relative accuracy for the bounds used here).
    """
    beta = np.asarray(beta, dtype=float)
    lam = np.asarray(lam, dtype=float)[..., None]
    Bx = np.asarray(B_x, dtype=float)[..., None]
    By = np.asarray(B_y, dtype=float)[..., None]
    s_rest = np.sqrt(np.sum(beta**2, -1, keepdims=True) - beta**2 + 1.0 / lam)        # (…, d)
    z, wq = np.polynomial.hermite_e.hermegauss(n_nodes)                                # ∫ f(z) e^{−z²/2} dz
    wq = wq / np.sqrt(2.0 * np.pi)
    zz = z.reshape((1,) * beta.ndim + (-1,))                                           # (…, d, K)
    inner = clipped_mean(beta[..., None] * zz, s_rest[..., None], By[..., None])
    return np.sum(wq * np.clip(zz, -Bx[..., None], Bx[..., None]) * inner, axis=-1)


def clipped_regression_coef(beta: np.ndarray, lam: float | np.ndarray, B_x: float | np.ndarray,
                            B_y: float | np.ndarray, n_nodes: int = 80) -> np.ndarray:
    """Population coefficients w̃ = E[x̃x̃ᵀ]⁻¹E[x̃ỹ] of the regression of clip(y, B_y) on clip(x, B_x) for
    x ~ N(0, I_d), y | x ~ N(xᵀβ, 1/λ): β (…, d) → (…, d).

    The coordinates of x are independent and symmetric, so E[x̃x̃ᵀ] = E[clip_{B_x}(Z)²] I and w̃_j is the cross
    moment over that second moment.  For data scaled by σ_x (x ~ N(0, σ_x² I)) pass β σ_x and B_x/σ_x and divide the
    result by σ_x.
    """
    m2, _ = clipped_moments(np.asarray(B_x, dtype=float))
    return clipped_cross_moment(beta, lam, B_x, B_y, n_nodes) / np.asarray(m2)[..., None]
