"""The released quantities of the robust private LR family (Honkela et al. 2018, Methods 4.1–4.3): clipped
sufficient statistics, their sensitivities and their Laplace noise — one definition, used by the algorithms
(``rplr``, ``plr``, ``split_search``, ``narplr``) and by the auxiliary-data tuning (``tuning.py``) alike.

Neighbouring relation: bounded DP — neighbours replace one private row (replace-one), as in the paper.

Sensitivities (L1, replace-one, after clipping each coordinate to [−B_x, B_x] and y to [−B_y, B_y], Eq. 9), under
one of two rules (``SENSITIVITY_RULES``; the algorithms' ``sensitivity`` parameter):

* XᵀX, the d(d+1)/2 unique entries Σ x_j x_k (j ≤ k):

  - ``tight`` (ours, the default): Δ₁ = d(d+1)B_x²/2.  Proof: for a row x replaced by x′ let u = x − x′,
    v = x + x′, a_j = |u_j|, b_j = |v_j|.  Then x_j x_k − x′_j x′_k = ½(u_j v_k + v_j u_k), so a diagonal entry
    changes by a_j b_j and an off-diagonal one (j < k) by at most ½(a_j b_k + a_k b_j); summing,
    Σ_{j≤k} |x_j x_k − x′_j x′_k| ≤ Σ_j a_j b_j + ½ Σ_{j≠k} a_j b_k = ½ Σ_j a_j b_j + ½ (Σ_j a_j)(Σ_k b_k).
    Since a_j + b_j = 2 max(|x_j|, |x′_j|) ≤ 2B_x, AM–GM gives a_j b_j ≤ B_x² and (Σa)(Σb) ≤ ((Σa + Σb)/2)²
    ≤ d²B_x², so the change is ≤ ½dB_x² + ½d²B_x² = d(d+1)B_x²/2.  Attained by x = B_x·1, x′ = 0 (every
    entry moves by B_x²), so it is the sensitivity (tests/gdsc/test_robust_private_lr.py, brute force).
  - ``paper`` (the paper protocol): Δ₁ = d(d+1)B_x², Honkela et al. 2018, Methods 4.2 — each of the d(d+1)/2
    entries bounded by its range 2B_x² separately; twice the tight value (the protocol's noise, kept as written).
* Xᵀy: d entries, each term in [−B_xB_y, B_xB_y]: Δ₁ = 2dB_xB_y under both rules (attained by (B_x·1, B_y) →
  (B_x·1, −B_y)).
* yᵀy: one entry, each term in [0, B_y²]: Δ₁ = B_y² under both rules (attained by B_y → 0).

Sequential composition of the three releases with p1 + p2 + p3 = 1 gives ε-DP (Methods 4.2).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from dpexp import cache

from dpexp.privacy.noise import SeededNoise
from dpexp.types import Split


class Clipping(Protocol):
    """What an algorithm of this family that clips its rows tells others (``rlr``, the audit design): the bounds
    (B_x, B_y) it would use on ``split`` at ``epsilon`` (thresholds may be tuned per ε; None = its default)."""

    def bounds(self, split: Split, epsilon: float | None = None) -> tuple[float, float]: ...


def triu_indices(d: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.triu_indices(d)`` (read-only arrays), built once per d in this process (asked for every release)."""
    def build() -> tuple[np.ndarray, np.ndarray]:
        iu = np.triu_indices(d)
        for a in iu:
            a.setflags(write=False)
        return iu

    return cache.memo("gdsc.triu_indices", int(d), build)


def sufficient_stats(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """(XᵀX, Xᵀy, yᵀy) of the rows."""
    return X.T @ X, X.T @ y, float(y @ y)


def clip(X: np.ndarray, y: np.ndarray, B_x: float, B_y: float) -> tuple[np.ndarray, np.ndarray]:
    """Project every coordinate of x to [−B_x, B_x] and y to [−B_y, B_y] (the paper's outlier projection, Eq. 9)."""
    return np.clip(X, -B_x, B_x), np.clip(y, -B_y, B_y)


#: the sensitivity rules of the XᵀX release (module docstring): ours (the default) and the paper's Methods 4.2
SENSITIVITY_RULES = ("tight", "paper")


def sensitivities(d: int, B_x, B_y, rule: str = "tight"):
    """L1 sensitivities (XᵀX unique entries, Xᵀy, yᵀy) under replace-one neighbours (module docstring): XᵀX
    d(d+1)B_x²/2 (``rule="tight"``, proved there) or d(d+1)B_x² (``"paper"``, Methods 4.2); ``B_x``, ``B_y`` may
    be arrays (the tuning evaluates a whole grid of thresholds at once)."""
    if rule == "tight":
        s_xx = (d * (d + 1) // 2) * B_x**2
    elif rule == "paper":
        s_xx = d * (d + 1) * B_x**2
    else:
        raise ValueError(f"sensitivity rule must be one of {SENSITIVITY_RULES}, got {rule!r}")
    return s_xx, 2.0 * d * B_x * B_y, B_y**2


def noise_scales(d: int, B_x, B_y, split: tuple[float, float, float], epsilon: float, rule: str = "tight"):
    """Laplace scales Δ₁/(p ε) of the three releases at budget shares ``split`` = (p1, p2, p3) (Methods 4.3) under
    the sensitivity ``rule``; vectorised over array-valued ``B_x``, ``B_y`` like ``sensitivities``."""
    s_xx, s_xy, s_yy = sensitivities(d, B_x, B_y, rule)
    p1, p2, p3 = split
    return s_xx / (p1 * epsilon), s_xy / (p2 * epsilon), s_yy / (p3 * epsilon)


def laplace_noise(d: int, rng: np.random.Generator, size: tuple[int, ...], scales=(1.0, 1.0, 1.0),
                  with_yy: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """*Simulated* noise for the auxiliary-data tuning (``tuning.py``: public data, no release, nothing spent):
    the noise of one release of (XᵀX, Xᵀy, yᵀy), ``size`` independent times: shapes size + (d, d), size + (d,)
    and size (None when ``with_yy`` is False), drawn in that order from ``rng``.

    XᵀX noise is Laplace on the d(d+1)/2 upper-triangular entries, mirrored (the diagonal once), so the release stays
    symmetric and each unique entry gets one draw, as its sensitivity counts it.  ``scales`` are the Laplace scales
    (b_xx, b_xy, b_yy); the tuning draws standard noise (scale 1) once and scales it per grid point.
    """
    b_xx, b_xy, b_yy = scales
    src = SeededNoise(rng)   # simulated, so seeded: the same draws as rng.laplace, through the noise module
    iu = triu_indices(d)
    N = np.zeros(size + (d, d))
    N[..., iu[0], iu[1]] = src.laplace(0.0, b_xx, size=size + (iu[0].size,))
    N_xx = N + np.swapaxes(N, -1, -2) - N * np.eye(d)
    N_xy = src.laplace(0.0, b_xy, size=size + (d,))
    N_yy = src.laplace(0.0, b_yy, size=size) if with_yy else None
    return N_xx, N_xy, N_yy
