"""A plain, per-split reference of rplr's release (Honkela et al. 2018, Methods 4.1–4.3), kept as a test oracle for
the one implementation in ``dpexp.families.gdsc.release_batch.release_group`` (array-first over the splits of a
call).  Compared at a stated tolerance, never by bits: the batch may sum and square in another order.

The draws are those of the production code, in its order per cell: σ̂_x, σ̂_y (``sigma: dp``; T each), then X'X's
upper-triangle entries, X'y and y'y (T each), all from one standard-Laplace call per cell."""

from __future__ import annotations

import numpy as np


def reference_release(alg, split, epsilon: float, generator: np.random.Generator, trials: int) -> dict:
    """rplr's private release of one split as plain numpy: {"XX" (T, d, d), "Xy" (T, d), "yy" (T,), "B_x", "B_y"
    (T,) or scalars, "sigma_x", "sigma_y"}.  ``generator``: a numpy Generator in the state of the cell's ledger."""
    p = alg.params
    X, y = split.X_private, split.y_private
    n, d = X.shape
    T = trials
    eps = alg.stats_epsilon(epsilon)
    tn = alg._tune_n(split)
    sp = alg.budget_split(tn, d, eps)
    wx, wy = alg.omegas(tn, d, eps, sp)
    m = d * (d + 1) // 2
    k = (2 * T if p.sigma == "dp" else 0) + T * (m + d + 1)
    L = generator.laplace(0.0, 1.0, size=k)
    j = 0
    if p.sigma == "dp":
        es = p.sigma_share * epsilon / 2.0
        bx, by = p.sigma_bound_x, p.sigma_bound_y
        Sx = np.sum(np.clip(X, -bx, bx) ** 2) + d * bx * bx / es * L[:T]
        Sy = np.sum(np.clip(y, -by, by) ** 2) + by * by / es * L[T:2 * T]
        sx = np.maximum(np.sqrt(np.maximum(Sx, 0.0) / max(n * d, 1)), 1e-12)
        sy = np.maximum(np.sqrt(np.maximum(Sy, 0.0) / max(n, 1)), 1e-12)
        j = 2 * T
    else:
        sx = np.full(T, float(split.meta["sigma_x"]))
        sy = np.full(T, float(split.meta["sigma_y"]))
    B_x, B_y = wx * sx, wy * sy
    # the sensitivities written out (stats module docstring): X'X d(d+1)B²/2 (tight) or d(d+1)B² (paper)
    s_xx = (0.5 if p.sensitivity == "tight" else 1.0) * d * (d + 1) * B_x**2
    s_xy, s_yy = 2.0 * d * B_x * B_y, B_y**2
    iu = np.triu_indices(d)
    XX, Xy, yy = np.empty((T, d, d)), np.empty((T, d)), np.empty(T)
    for t in range(T):
        Xc, yc = np.clip(X, -B_x[t], B_x[t]), np.clip(y, -B_y[t], B_y[t])
        N = np.zeros((d, d))
        N[iu] = s_xx[t] / (sp[0] * eps) * L[j + t * m:j + (t + 1) * m]
        N = N + N.T - np.diag(np.diag(N))
        XX[t] = Xc.T @ Xc + N
    j += T * m
    for t in range(T):
        yc = np.clip(y, -B_y[t], B_y[t])
        Xy[t] = np.clip(X, -B_x[t], B_x[t]).T @ yc + s_xy[t] / (sp[1] * eps) * L[j + t * d:j + (t + 1) * d]
    j += T * d
    for t in range(T):
        yc = np.clip(y, -B_y[t], B_y[t])
        yy[t] = yc @ yc + s_yy[t] / (sp[2] * eps) * L[j + t]
    return {"XX": XX, "Xy": Xy, "yy": yy, "B_x": B_x, "B_y": B_y, "sigma_x": sx, "sigma_y": sy}
