"""Analytic budget split and clipping multipliers for the noise-aware model (no auxiliary-data search).

Honkela et al. (2018, Methods 4.3) choose the split (p1, p2, p3) of ε between XᵀX, Xᵀy, yᵀy and the thresholds
B_x = ω_x σ_x, B_y = ω_y σ_y by simulating auxiliary data; the thesis (nieminen2017, §5.3) asks for an analytical
justification instead.  Here the same auxiliary-data *model* (Eq. 10 with λ = λ0 = 1: x ~ N(0, I_d), β ~ N(0, I),
y | x ~ N(xᵀβ, 1)) is used in closed form:

* clipping (Eq. 9) turns the target into the clipped-data regression w̃(β, ω) (``dpexp.models.clipped_normal``), with
  E[x̃x̃ᵀ] = v I, v = E[clip_{ω_x}(Z)²], and residual variance σ̃² = E[ỹ²] − v‖w̃‖²;
* the noise-aware posterior covariance S of w at the population values is that of the fast approximation
  (``dpexp.models.noise_aware_fast``) with μ_A = K = n v I and the entry uncertainty T of the Gram prior
  (``clipped_gaussian_gram_prior``) combined with the release noise:

      T = (s⁻² + (2b_xx²)⁻¹)⁻¹,  Σ_z = n v σ̃² I + 2b_xy² I + W(w̃) T W(w̃)ᵀ,  S = (λ0 I + (n v)² Σ_z⁻¹)⁻¹,  λ0 = d/‖w̃‖²

  with rplr's Laplace scales b_xx = κ d(d+1)B_x²/(p1 ε), b_xy = 2dB_xB_y/(p2 ε) (Methods 4.3), κ = ½ for the tight
  XᵀX sensitivity (``sensitivity="tight"``, rplr's default) and 1 for the paper's (``"paper"``);
* the score is the expected correlation between a test prediction x̃ᵀŵ… evaluated on unclipped test rows, i.e. between
  xᵀŵ and xᵀβ, approximated with ŵ = w̃ + δ, δ ~ N(0, S):  J = E_β[ w̃ᵀβ / (‖β‖ √(‖w̃‖² + tr S)) ]  (Spearman is a
  monotone function of this correlation for jointly normal variables, which is what the paper's tuning maximises).

yᵀy enters only through the estimate of λ, which affects S at second order; the analytic choice therefore gives it
the smallest share allowed (``p3``, default the paper grid's 0.05) and optimises p1 (p2 = 1 − p1 − p3) and
(ω_x, ω_y) on grids.  The answer depends on the Gram prior: a confident prior on the design (small ``rel_sd``,
``corr_sd``) makes XᵀX nearly known, and the budget goes to Xᵀy — which is what rplr's tuning on the same auxiliary
model finds (its auxiliary x have exactly identity covariance).  Everything is deterministic (fixed β draws).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpexp.models.clipped_normal import clipped_moments, clipped_regression_coef
from dpexp.models.gram_prior import clipped_gaussian_gram_prior
from dpexp.models.noise_aware import _w_op_cov

#: ω grid of the paper (Eq. 12) and the split shares it uses (Methods 4.3).
OMEGA_GRID = tuple(round(0.1 * k, 10) for k in range(1, 21))
P_GRID = tuple(round(0.05 * k, 10) for k in range(1, 19))


def _clipped_targets(d: int, omega_x: np.ndarray, omega_y: np.ndarray, n_beta: int, seed: int):
    """β draws and, for every (ω_x, ω_y) (flattened, G), w̃ (G, nb, d), v (G,), σ̃² (G, nb), B_y (G, nb)."""
    beta = np.random.default_rng(seed).standard_normal((n_beta, d))            # fixed draws: deterministic J
    sy = np.sqrt(np.sum(beta**2, -1) + 1.0)                                     # σ_y of each β
    G = omega_x.size
    By = omega_y[:, None] * sy[None, :]
    wt = clipped_regression_coef(np.broadcast_to(beta, (G, n_beta, d)),
                                 1.0, np.broadcast_to(omega_x[:, None], (G, n_beta)), By)
    v, _ = clipped_moments(omega_x)
    ey2, _ = clipped_moments(omega_y)
    resid = np.maximum(ey2[:, None] * sy[None, :] ** 2 - v[:, None] * np.sum(wt**2, -1), 1e-12)
    return beta, wt, v, resid, By


def expected_correlation(n: int, d: int, epsilon: float, p1: np.ndarray, p2: np.ndarray, omega_x: np.ndarray,
                         omega_y: np.ndarray, rel_sd: float = 0.1, corr_sd: float = 0.1, n_beta: int = 32,
                         seed: int = 20180606, sensitivity: str = "tight") -> np.ndarray:
    """J(p1, p2, ω_x, ω_y) of the module docstring: p1, p2 (P,) and ω_x, ω_y (G,) give a (P, G) table;
    ``sensitivity``: the XᵀX sensitivity rule of the release (κ = ½ ``tight``, 1 ``paper``)."""
    kappa = {"tight": 0.5, "paper": 1.0}[sensitivity]
    p1, p2 = (np.atleast_1d(np.asarray(a, dtype=float)) for a in (p1, p2))
    wx, wy = (np.atleast_1d(np.asarray(a, dtype=float)) for a in (omega_x, omega_y))
    beta, wt, v, resid, By = _clipped_targets(d, wx, wy, n_beta, seed)
    s2 = clipped_gaussian_gram_prior(n, d, wx, 1.0, rel_sd, corr_sd).var                  # (G, d, d)
    eye = np.eye(d)
    lam0 = d / np.maximum(np.sum(wt**2, -1), 1e-12)                                        # (G, nb)
    nv = n * v[:, None, None, None]
    out = np.empty((p1.size, wx.size))
    for i, (a1, a2) in enumerate(zip(p1, p2)):
        bxx = kappa * d * (d + 1) * wx**2 / (a1 * epsilon)
        bxy = 2 * d * wx[:, None] * By / (a2 * epsilon)
        T = 1.0 / (1.0 / s2 + 1.0 / (2.0 * bxx[:, None, None] ** 2))
        Sig = (n * v[:, None] * resid + 2.0 * bxy**2)[..., None, None] * eye + _w_op_cov(T[:, None], wt)
        # S = (λ0 I + (nv)² Σ⁻¹)⁻¹ = Σ (λ0 Σ + (nv)² I)⁻¹: one solve
        trS = np.trace(np.linalg.solve(lam0[..., None, None] * Sig + nv**2 * eye, Sig), axis1=-2, axis2=-1)
        J = np.sum(wt * beta, -1) / (np.linalg.norm(beta, axis=-1) * np.sqrt(np.sum(wt**2, -1) + trS))
        out[i] = J.mean(-1)
    return out


def analytic_split(n: int, d: int, epsilon: float, p3: float = 0.05, p_grid: tuple[float, ...] = P_GRID,
                   omegas: tuple[float, ...] = OMEGA_GRID, rel_sd: float = 0.1, corr_sd: float = 0.1,
                   sensitivity: str = "tight") -> dict[str, Any]:
    """Choose (p1, p2, p3) and (ω_x, ω_y) maximising J (module docstring): p3 fixed, p1 on ``p_grid`` with
    p2 = 1 − p1 − p3 > 0, ω on ``omegas``²; ``sensitivity`` as ``expected_correlation``.  Returns ``{"p1", "p2", "p3", "omega_x", "omega_y", "score",
    "table": [[p1, p2, p3, best J, ω_x, ω_y], …]}``."""
    if not (n > d + 1 and d >= 1 and epsilon > 0 and 0 < p3 < 1):
        raise ValueError(f"need n > d + 1, d >= 1, epsilon > 0, 0 < p3 < 1, got n={n}, d={d}, "
                         f"epsilon={epsilon}, p3={p3}")
    p1s = np.array([p for p in p_grid if 0 < p < 1 - p3 - 1e-9])
    om = np.asarray(omegas, dtype=float)
    WX, WY = np.meshgrid(om, om, indexing="ij")
    J = expected_correlation(n, d, epsilon, p1s, 1.0 - p3 - p1s, WX.ravel(), WY.ravel(), rel_sd, corr_sd,
                             sensitivity=sensitivity)
    table = []
    for i, p in enumerate(p1s):
        j, k = np.unravel_index(int(np.argmax(J[i])), WX.shape)
        table.append([float(p), float(1 - p3 - p), float(p3), float(J[i].reshape(WX.shape)[j, k]), float(om[j]),
                      float(om[k])])
    best = max(table, key=lambda r: r[3])
    return {"p1": best[0], "p2": best[1], "p3": best[2], "score": best[3], "omega_x": best[4],
            "omega_y": best[5], "table": table}
