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
  clipping E[y | u] = E‖x‖·uᵀβ (w = E‖x‖ β, E‖x‖ = √2 Γ((d+1)/2)/Γ(d/2)); with clipping w̃ by Monte Carlo over
  ``MC_ROWS`` rows of the population drawn once per d from a fixed named stream (common random numbers for every
  bound), using E[ũũᵀ] = m₂I (sign and permutation symmetry of u) with m₂ pooled over coordinates.  The centring of
  the pool (means ≈ 0) is ignored.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from scipy import special

from dpexp import cache
from dpexp.models.clipped_normal import clipped_regression_coef
from dpexp.rng import stream

#: population rows of the Monte Carlo target for unit-norm rows, and the root seed of their named stream
MC_ROWS = 600_000
TRUTH_SEED = 20180610


def _unit_norm_population(d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(‖x‖, u = x/‖x‖, standard normal e) for ``MC_ROWS`` rows x ~ N(0, I_d), drawn once per d (memoised)."""
    def compute():
        rng = stream(TRUTH_SEED, "truth", "unit_norm", d)
        x = rng.standard_normal((MC_ROWS, d))
        e = rng.standard_normal(MC_ROWS)
        r = np.linalg.norm(x, axis=1)
        return r, x / r[:, None], e
    return cache.memo("gdsc.truth.unit_norm", int(d), compute, maxsize=4)


def unit_norm_target(beta: np.ndarray, lam: float, B_x: float, B_y: float) -> np.ndarray:
    """w̃ for unit-norm rows of Eq. (10) data clipped at (B_x, B_y) (module docstring): (d,)."""
    beta = np.asarray(beta, dtype=float)
    d = beta.size
    if not (np.isfinite(B_x) or np.isfinite(B_y)):
        return float(math.sqrt(2.0) * math.exp(special.gammaln((d + 1) / 2) - special.gammaln(d / 2))) * beta
    r, u, e = _unit_norm_population(d)
    y = r * (u @ beta) + e / math.sqrt(lam)
    uc = np.clip(u, -B_x, B_x)
    yc = np.clip(y, -B_y, B_y)
    return (uc.T @ yc) / np.sum(uc * uc) * d


def coef_target_eq10(beta: np.ndarray, lam: float, unit_norm: bool) -> Callable[[np.ndarray | None], np.ndarray]:
    """The function the calibration metrics call with an output's ``clip_bounds`` (trials, 2) or None: the target
    coefficients (trials, d), or (d,) for None (no clipping)."""
    beta = np.asarray(beta, dtype=float)

    def target(bounds: np.ndarray | None) -> np.ndarray:
        if bounds is None:
            return unit_norm_target(beta, lam, math.inf, math.inf) if unit_norm else beta.copy()
        b = np.asarray(bounds, dtype=float).reshape(-1, 2)
        if unit_norm:
            return np.stack([unit_norm_target(beta, lam, bx, by) for bx, by in b])
        return clipped_regression_coef(np.broadcast_to(beta, (b.shape[0], beta.size)), lam, b[:, 0], b[:, 1])

    return target
