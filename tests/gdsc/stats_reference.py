"""Plain, per-cell references of the clipped-statistics releases (Honkela et al. 2018, Methods 4.2) and of the
functional mechanism's objective noise, kept as test oracles for the one implementation in ``dpexp`` (the batched
``release_batch.perturbed_stats_many`` / ``release_group`` and ``functional_mechanism.objective_noise_rows``).
Compared at a stated tolerance where the batch may sum in another order; the sensitivities are written out here,
not taken from ``stats.sensitivities``, so the oracle does not share the code it checks."""

from __future__ import annotations

import numpy as np

from dpexp.privacy.ledger import as_ledger
from dpexp.privacy.mechanisms import laplace


def xx_sensitivity(d: int, B_x, rule: str = "tight"):
    """XᵀX's L1 sensitivity over its d(d+1)/2 unique entries: d(d+1)B_x²/2 (tight) or d(d+1)B_x² (paper)."""
    return {"tight": 0.5, "paper": 1.0}[rule] * d * (d + 1) * np.asarray(B_x, dtype=float) ** 2


def clipped_stats(X: np.ndarray, y: np.ndarray, B_x, B_y, trials: int):
    """(XᵀX, Xᵀy, yᵀy) of the rows clipped to [−B_x, B_x], [−B_y, B_y]: (d, d), (d,), float for scalar bounds;
    (trials, d, d), (trials, d), (trials,) for bounds given per trial (arrays of shape (trials,))."""
    if np.ndim(B_x) == 0 and np.ndim(B_y) == 0:
        Xc, yc = np.clip(X, -B_x, B_x), np.clip(y, -B_y, B_y)
        return Xc.T @ Xc, Xc.T @ yc, float(yc @ yc)
    bx = np.broadcast_to(np.asarray(B_x, dtype=float), (trials,))
    by = np.broadcast_to(np.asarray(B_y, dtype=float), (trials,))
    out = [clipped_stats(X, y, float(a), float(b), 1) for a, b in zip(bx, by)]
    return (np.stack([o[0] for o in out]), np.stack([o[1] for o in out]), np.array([o[2] for o in out]))


def perturbed_stats(X: np.ndarray, y: np.ndarray, B_x, B_y, eps_xx: float, eps_xy: float, eps_yy: float | None,
                    ledger, trials: int, rule: str = "tight"):
    """Clip, compute and perturb the statistics ``trials`` times through ``ledger`` (a numpy Generator is wrapped):
    XᵀX's upper triangle (mirrored) at ``eps_xx`` with ``xx_sensitivity``, Xᵀy at ``eps_xy`` with 2dB_xB_y, yᵀy at
    ``eps_yy`` with B_y² (None: not released, NaN), in that order.  Returns (trials, d, d), (trials, d), (trials,)."""
    ledger = as_ledger(ledger)
    d = X.shape[1]
    XX, Xy, yy = clipped_stats(X, y, B_x, B_y, trials)
    iu = np.triu_indices(d)
    N = np.zeros((trials, d, d))
    N[:, iu[0], iu[1]] = laplace(np.zeros(iu[0].size), xx_sensitivity(d, B_x, rule), eps_xx, ledger, size=trials,
                                 label="X'X")
    N_xx = N + np.swapaxes(N, -1, -2) - N * np.eye(d)
    N_xy = laplace(np.zeros(d), 2.0 * d * np.asarray(B_x) * np.asarray(B_y), eps_xy, ledger, size=trials,
                   label="X'y")
    XXn = (XX[None] if np.ndim(XX) == 2 else XX) + N_xx
    Xyn = (Xy[None] if np.ndim(Xy) == 1 else Xy) + N_xy
    if eps_yy is None:
        return XXn, Xyn, np.full(trials, np.nan)
    return XXn, Xyn, yy + laplace(0.0, np.asarray(B_y) ** 2, eps_yy, ledger, size=trials, label="y'y")


def objective_noise(D: int, trials: int, sensitivity: float, epsilon: float, ledger):
    """The functional mechanism's Laplace release of (M, α), D × D and D, for ``trials`` runs of one cell: one
    mechanism (Δ₁ = ``sensitivity``), drawn as one flat vector (M's trials·D² numbers, then α's trials·D)."""
    flat = laplace(np.zeros(trials * (D * D + D)), sensitivity, epsilon, ledger, label="objective")
    k = trials * D * D
    return flat[:k].reshape(trials, D, D), flat[k:].reshape(trials, D)
