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

import functools
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
    r, wt = cache.memo("gdsc.truth.laguerre", (int(nodes), int(d)), lambda: _laguerre(nodes, d), maxsize=8)
    return clipped_mean(s[:, None] * r[None, :], 1.0 / math.sqrt(lam), B_y) @ wt


def _laguerre(nodes: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """The nodes r = √(2t) and weights of ``nodes``-point Gauss–Laguerre quadrature against Gamma(d/2) (the law of
    r²/2 for r ~ χ_d); read-only, shared by every target of that d."""
    t, wt = special.roots_genlaguerre(nodes, d / 2 - 1)
    wt = wt / math.exp(special.gammaln(d / 2))
    r = np.sqrt(2.0 * t)
    r.flags.writeable = wt.flags.writeable = False
    return r, wt


#: points of the grid of s = uᵀβ on which g is evaluated and then interpolated linearly
GRID_POINTS = 2001


def unit_norm_target(beta: np.ndarray, lam: float, B_x: float, B_y: float) -> np.ndarray:
    """w̃ for unit-norm rows of Eq. (10) data clipped at (B_x, B_y) (module docstring): (d,)."""
    return unit_norm_targets(beta, lam, np.array([[B_x, B_y]], dtype=float))[0]


def unit_norm_targets(beta: np.ndarray, lam: float, bounds: np.ndarray) -> np.ndarray:
    """w̃ for each row (B_x, B_y) of ``bounds`` (T, 2): (T, d).

    E[ũ_j ỹ] = E[ũ_j g(uᵀβ)] with g the response integrated over ‖x‖ and the noise (``_clipped_response``, on a
    grid of s and interpolated linearly), so the Monte Carlo is over the direction u only; E[ũ_j²] is pooled over j.
    The sums over the ``MC_ROWS`` directions are one compiled pass per bound (``_moments``; numpy's clip, matrix
    product and interpolation made three passes over the population and a copy of it)."""
    beta = np.asarray(beta, dtype=float)
    b = np.asarray(bounds, dtype=float).reshape(-1, 2)
    if not np.all(np.isfinite(beta)) or np.isnan(b).any():   # the compiled pass indexes by s: no NaN in it
        raise ValueError(f"the target needs finite coefficients and bounds that are numbers, got beta={beta}, "
                         f"bounds={b.tolist()}")
    d = beta.size
    out = np.empty((b.shape[0], d))
    free = ~(np.isfinite(b[:, 0]) | np.isfinite(b[:, 1]))
    out[free] = _mean_norm(d) * beta                 # no clipping: E‖x‖ β exactly
    if free.all():
        return out
    u = _unit_norm_population(d)
    nb = float(np.linalg.norm(beta))
    grid = np.linspace(-nb, nb, GRID_POINTS)
    clipped = b[~free]
    g = np.stack([_clipped_response(grid, d, lam, by) if np.isfinite(by) else grid * _mean_norm(d)
                  for by in clipped[:, 1]])
    def projections() -> np.ndarray:
        sb = u @ beta
        sb.flags.writeable = False   # kept for later calls
        return sb

    # s = uᵀβ of every direction: the same for every bound of this β (a cell's methods, sizes and budgets)
    sb = cache.memo("gdsc.truth.projections", (d, beta.tobytes()), projections, maxsize=4)
    num, den = _compiled()(u, sb, nb, g, clipped[:, 0])
    out[~free] = num / den[:, None] * d
    return out


def _moments(u: np.ndarray, s: np.ndarray, nb: float, g: np.ndarray, bx: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """For each bound t: (Σ_i clip(u_i, ±bx_t) g_t(s_i), Σ_ij clip(u_ij, ±bx_t)²), with g_t tabulated on the uniform
    grid of ``g.shape[1]`` points over [−nb, nb] and interpolated linearly (|s_i| ≤ nb as ‖u_i‖ = 1; ``nb`` = 0: g
    at s = 0).  Sums in row order (a fixed order: the same bits on every CPU)."""
    n, d = u.shape
    T, K = g.shape
    num = np.zeros((T, d))
    den = np.zeros(T)
    scale = (K - 1) / (2.0 * nb) if nb > 0 else 0.0
    for t in range(T):
        b = bx[t]
        acc = 0.0
        for i in range(n):
            pos = (s[i] + nb) * scale
            pos = min(max(pos, 0.0), K - 1.0)
            k = min(int(pos), K - 2)
            f = pos - k
            gi = g[t, k] + f * (g[t, k + 1] - g[t, k])
            for j in range(d):
                c = min(max(u[i, j], -b), b)
                num[t, j] += c * gi
                acc += c * c
        den[t] = acc
    return num, den


@functools.cache
def _compiled():
    """``_moments`` compiled by numba (cached on disk), made at the first target: importing numba (≈ 0.5 s) is not
    paid by a process that computes no target."""
    import numba

    return numba.njit(cache=True, error_model="numpy")(_moments)


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
            return unit_norm_targets(beta, lam, b)
        return clipped_regression_coef(np.broadcast_to(beta, (b.shape[0], beta.size)), lam, b[:, 0], b[:, 1])

    def target(bounds: np.ndarray | None) -> np.ndarray:
        # every calibration metric of a cell asks for the same bounds: compute once (memo keyed by β's value)
        key = (named, unit_norm, float(lam), None if bounds is None else np.asarray(bounds, dtype=float).tobytes())
        return cache.memo("gdsc.truth.target", key, lambda: compute(bounds), maxsize=64)

    return target
