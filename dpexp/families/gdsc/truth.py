"""The true coefficients of Eq. (10) synthetic data as an algorithm that clips estimates them (for the calibration
metrics, ``dpexp.metrics.calibration``; evaluation only — no algorithm reads them).

An algorithm that clips x to [−B_x, B_x] and y to [−B_y, B_y] before computing its statistics (rplr, narplr) sees
only the clipped data; what its statistics identify is the population regression of the clipped response on the
clipped features (docs/noise_aware.md §2.3),

    w̃(B_x, B_y) = E[x̃x̃ᵀ]⁻¹ E[x̃ỹ],

not β.  Its credible intervals are therefore compared with w̃ at the bounds of each trial (``Output.clip_bounds``);
an algorithm that does not clip is compared with the unclipped regression (B = ∞).

* Raw Eq. (10) data (``honkela_synthetic`` with ``preprocess: false``: x ~ N(0, I), y | x ~ N(xᵀβ, 1/λ)): w̃ in closed
  form (``dpexp.models.clipped_normal.clipped_regression_coef``; β without clipping).
* The paper's preprocessing (unit-norm rows u = x/‖x‖, centred): y = ‖x‖uᵀβ + e with ‖x‖ independent of u, so without
  clipping E[y | u] = E‖x‖·uᵀβ (w = E‖x‖ β, E‖x‖ = √2 Γ((d+1)/2)/Γ(d/2)); with clipping w̃_j = E[ũ_j ỹ]/E[ũ_j²]
  (E[ũũᵀ] = m₂I by the sign and permutation symmetry of u, m₂ pooled over coordinates), where E[ỹ | u] = g(uᵀβ) is
  integrated over ‖x‖ and the noise by quadrature and only the direction u is Monte Carlo: ``MC_ROWS`` directions
  drawn once per d from a fixed named stream (common random numbers for every β and bound).  The centring of
  the pool (means ≈ 0) is ignored.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from scipy import special

from dpexp import cache
from dpexp.models.clipped_normal import clipped_mean, clipped_regression_coef
from dpexp.rng import stream

#: population rows of the Monte Carlo target for unit-norm rows, and the root seed of their named stream
MC_ROWS = 200_000
TRUTH_SEED = 20180610


def _unit_norm_population(d: int) -> np.ndarray:
    """u = x/‖x‖ for ``MC_ROWS`` rows x ~ N(0, I_d), drawn once per d (memoised)."""
    def compute():
        x = stream(TRUTH_SEED, "truth", "unit_norm", d).standard_normal((MC_ROWS, d))
        return x / np.linalg.norm(x, axis=1, keepdims=True)
    return cache.memo("gdsc.truth.unit_norm", int(d), compute, maxsize=4)


def _clipped_response(s: np.ndarray, d: int, lam: float, B_y: float, nodes: int = 48) -> np.ndarray:
    """g(s) = E[clip(r s + e, ±B_y)] with r = ‖x‖ ~ χ_d and e ~ N(0, 1/λ) independent (the response of a unit-norm
    row with uᵀβ = s): Gauss–Laguerre quadrature over r²/2 ~ Gamma(d/2) and the clipped-normal mean over e."""
    t, wt = special.roots_genlaguerre(nodes, d / 2 - 1)
    wt = wt / math.exp(special.gammaln(d / 2))
    r = np.sqrt(2.0 * t)
    return clipped_mean(s[:, None] * r[None, :], 1.0 / math.sqrt(lam), B_y) @ wt


def unit_norm_target(beta: np.ndarray, lam: float, B_x: float, B_y: float) -> np.ndarray:
    """w̃ for unit-norm rows of Eq. (10) data clipped at (B_x, B_y) (module docstring): (d,).

    E[ũ_j ỹ] = E[ũ_j g(uᵀβ)] with g the response integrated over ‖x‖ and the noise (``_clipped_response``, on a
    grid of s and interpolated), so the Monte Carlo is over the direction u only; E[ũ_j²] is pooled over j."""
    beta = np.asarray(beta, dtype=float)
    d = beta.size
    if not (np.isfinite(B_x) or np.isfinite(B_y)):
        return _mean_norm(d) * beta
    u = _unit_norm_population(d)
    s = u @ beta
    nb = float(np.linalg.norm(beta))
    grid = np.linspace(-nb, nb, 2001)
    g = np.interp(s, grid, _clipped_response(grid, d, lam, B_y)) if np.isfinite(B_y) else s * _mean_norm(d)
    uc = np.clip(u, -B_x, B_x)
    return (uc.T @ g) / np.sum(uc * uc) * d


def _mean_norm(d: int) -> float:
    """E‖x‖ for x ~ N(0, I_d): √2 Γ((d+1)/2)/Γ(d/2)."""
    return float(math.sqrt(2.0) * math.exp(special.gammaln((d + 1) / 2) - special.gammaln(d / 2)))


def coef_target_eq10(beta: np.ndarray, lam: float, unit_norm: bool) -> Callable[[np.ndarray | None], np.ndarray]:
    """The function the calibration metrics call with an output's ``clip_bounds`` (trials, 2) or None: the target
    coefficients (trials, d), or (d,) for None (no clipping)."""
    beta = np.array(beta, dtype=float)      # this closure's own copy
    named = (beta.shape, beta.tobytes())    # β's value, in the memo's key

    def compute(bounds: np.ndarray | None) -> np.ndarray:
        if bounds is None:
            return unit_norm_target(beta, lam, math.inf, math.inf) if unit_norm else beta.copy()
        b = np.asarray(bounds, dtype=float).reshape(-1, 2)
        if unit_norm:
            return np.stack([unit_norm_target(beta, lam, bx, by) for bx, by in b])
        return clipped_regression_coef(np.broadcast_to(beta, (b.shape[0], beta.size)), lam, b[:, 0], b[:, 1])

    def target(bounds: np.ndarray | None) -> np.ndarray:
        # every calibration metric of a cell asks for the same bounds: compute once (memo keyed by β's value)
        key = (named, unit_norm, float(lam), None if bounds is None else np.asarray(bounds, dtype=float).tobytes())
        return cache.memo("gdsc.truth.target", key, lambda: compute(bounds), maxsize=64)

    return target
