"""The released quantities of the robust private LR family (Honkela et al. 2018, Methods 4.1–4.3): clipped
sufficient statistics, their sensitivities and their Laplace noise — one definition, used by the algorithms
(``rplr``, ``plr``, ``split_search``) and by the auxiliary-data tuning (``tuning.py``) alike.

Neighbouring relation: bounded DP — neighbours replace one private row (replace-one), as in the paper.

Sensitivities (L1, replace-one, after clipping each coordinate to [−B_x, B_x] and y to [−B_y, B_y], Eq. 9):

* XᵀX: each of the d(d+1)/2 unique entries Σ x_j x_k changes by at most 2B_x² (one term in [−B_x², B_x²] is
  replaced), so Δ₁ = d(d+1)/2 · 2B_x² = d(d+1)B_x² (the paper's value, Methods 4.2); Laplace scale
  d(d+1)B_x²/(p1 ε).  Conservative: a diagonal term x_j² lies in [0, B_x²] and changes by at most B_x², so the
  true Δ₁ ≤ d²B_x² (and one row cannot move every off-diagonal entry by 2B_x² at once): the real ε is below ε.
* Xᵀy: d entries, each term in [−B_xB_y, B_xB_y]: Δ₁ = 2dB_xB_y; scale 2dB_xB_y/(p2 ε).
* yᵀy: one entry, each term in [0, B_y²]: Δ₁ = B_y²; scale B_y²/(p3 ε).

Sequential composition of the three releases with p1 + p2 + p3 = 1 gives ε-DP (Methods 4.2).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from dpexp import cache

from dpexp.privacy.ledger import as_ledger
from dpexp.privacy.mechanisms import laplace
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


def sensitivities(d: int, B_x, B_y):
    """L1 sensitivities (XᵀX unique entries, Xᵀy, yᵀy) under replace-one neighbours (module docstring); ``B_x``,
    ``B_y`` may be arrays (the tuning evaluates a whole grid of thresholds at once)."""
    return d * (d + 1) * B_x**2, 2.0 * d * B_x * B_y, B_y**2


def noise_scales(d: int, B_x, B_y, split: tuple[float, float, float], epsilon: float):
    """Laplace scales Δ₁/(p ε) of the three releases at budget shares ``split`` = (p1, p2, p3) (Methods 4.3);
    vectorised over array-valued ``B_x``, ``B_y`` like ``sensitivities``."""
    s_xx, s_xy, s_yy = sensitivities(d, B_x, B_y)
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


def clipped_stats(X: np.ndarray, y: np.ndarray, B_x, B_y, trials: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray | float]:
    """(XᵀX, Xᵀy, yᵀy) of the rows clipped to [−B_x, B_x], [−B_y, B_y]: shapes (d, d), (d,), scalar for scalar
    bounds; (trials, d, d), (trials, d), (trials,) for bounds given per trial (arrays of shape (trials,))."""
    if np.ndim(B_x) == 0 and np.ndim(B_y) == 0:
        Xc, yc = clip(X, y, B_x, B_y)
        return sufficient_stats(Xc, yc)
    bx = np.broadcast_to(np.asarray(B_x, dtype=float), (trials,))
    by = np.broadcast_to(np.asarray(B_y, dtype=float), (trials,))
    Xc = np.clip(X[None], -bx[:, None, None], bx[:, None, None])            # (trials, n, d)
    yc = np.clip(y[None], -by[:, None], by[:, None])                        # (trials, n)
    XcT = np.swapaxes(Xc, -1, -2)
    return XcT @ Xc, (XcT @ yc[..., None])[..., 0], np.einsum("tn,tn->t", yc, yc)


def perturbed_stats(X: np.ndarray, y: np.ndarray, B_x, B_y, eps_xx: float, eps_xy: float,
                    eps_yy: float | None, ledger, trials: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Clip, compute and perturb the statistics ``trials`` times: (trials,d,d), (trials,d), (trials,).

    The three releases are Laplace mechanisms of ``dpexp.privacy.mechanisms`` recorded in ``ledger`` (a
    ``PrivacyLedger``; a numpy Generator is wrapped): XᵀX's d(d+1)/2 upper-triangular entries (mirrored, the
    diagonal once, so the release stays symmetric and each unique entry gets one draw, as its sensitivity counts it)
    at ``eps_xx``, Xᵀy at ``eps_xy``, yᵀy at ``eps_yy`` (None: no yᵀy is released, NaN returned — for models that
    do not need it).  Sensitivities in the module docstring.  ``B_x``, ``B_y`` may be arrays of shape (trials,):
    bounds chosen per trial (rplr's DP σ̂ drawn per trial); the sensitivities and scales are then per trial.
    Draws in this order: XᵀX, Xᵀy, yᵀy (the order and arithmetic of the pre-ledger code: byte-identical results).
    """
    ledger = as_ledger(ledger)
    d = X.shape[1]
    XX, Xy, yy = clipped_stats(X, y, B_x, B_y, trials)
    s_xx, s_xy, s_yy = sensitivities(d, B_x, B_y)
    iu = triu_indices(d)
    N = np.zeros((trials, d, d))
    N[..., iu[0], iu[1]] = laplace(np.zeros(iu[0].size), s_xx, eps_xx, ledger, size=trials, label="X'X")
    N_xx = N + np.swapaxes(N, -1, -2) - N * np.eye(d)
    N_xy = laplace(np.zeros(d), s_xy, eps_xy, ledger, size=trials, label="X'y")
    XXn = (XX[None] if np.ndim(XX) == 2 else XX) + N_xx
    Xyn = (Xy[None] if np.ndim(Xy) == 1 else Xy) + N_xy
    if eps_yy is None:
        return XXn, Xyn, np.full(trials, np.nan)
    return XXn, Xyn, yy + laplace(0.0, s_yy, eps_yy, ledger, size=trials, label="y'y")
