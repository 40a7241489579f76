"""A plain per-split AdaSSP, the reference the array-first ``adassp`` (``run_many``; one split is a batch of one) is
compared with at a stated tolerance (never by bits): the same steps as ``dpexp.families.gdsc.algorithms.adassp``
written for one split, releasing through the scalar-call mechanisms ``privacy.mechanisms.laplace`` /
``gaussian`` in the order of the batched draws (σ̂_x, σ̂_y, then λ_min, XᵀX's unique entries, Xᵀy), so that the
same ledger stream gives the same noise."""

from __future__ import annotations

import math

import numpy as np

from dpexp.families.gdsc.algorithms.rplr import clip_sigmas
from dpexp.models import adassp as core
from dpexp.privacy.ledger import PrivacyLedger
from dpexp.privacy.mechanisms import gaussian, laplace
from dpexp.types import Split

LABELS = ("lambda_min(X'X)", "X'X", "X'y")


def clip(alg, X: np.ndarray, y: np.ndarray, B_X, B_x, B_Y, trials: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows clipped per trial, (trials, m, d) and (trials, m): each row projected onto ‖x‖₂ ≤ B_X (``clip:
    norm``) or clipped per coordinate at B_x (``clip: coordinate``); y clipped at B_Y."""
    bX, bx, bY = (np.broadcast_to(np.asarray(b, dtype=float), (trials,))[:, None] for b in (B_X, B_x, B_Y))
    Xt = np.broadcast_to(X, (trials,) + X.shape)
    if alg.params.clip == "norm":
        Xc = Xt * np.minimum(1.0, bX / np.maximum(np.linalg.norm(Xt, axis=-1), 1e-300))[..., None]
    else:
        Xc = np.clip(Xt, -bx[..., None], bx[..., None])
    return Xc, np.clip(np.broadcast_to(y, (trials,) + y.shape), -bY, bY)


def release(XX: np.ndarray, Xy: np.ndarray, cal: core.AdaSSPNoise, ledger: PrivacyLedger, trials: int):
    """The three releases of one data set, one mechanism call each: (trials,), (trials, d, d) mirrored, (trials, d)."""
    XX = 0.5 * (XX + np.swapaxes(XX, -1, -2))
    d = XX.shape[-1]
    iu = np.triu_indices(d)
    scales = (cal.scale_min, cal.scale_xx, cal.scale_xy)

    def draw(shape, i):
        if cal.kind == "gaussian":
            return gaussian(np.zeros(shape), scales[i], ledger, trials, sensitivity=cal.sens[i], epsilon=cal.eps[i],
                            delta=cal.delta[i], calibration="analytic", label=LABELS[i])
        return laplace(np.zeros(shape), cal.sens[i], cal.eps[i], ledger, trials, scale=scales[i], label=LABELS[i])

    lm = np.linalg.eigvalsh(XX)[..., 0] + draw((), 0)
    u = XX[..., iu[0], iu[1]] + draw((iu[0].size,), 1)
    xy = Xy + draw((d,), 2)
    M = np.zeros((trials, d, d))
    M[:, iu[0], iu[1]] = u
    return lm, M + np.swapaxes(np.triu(M, 1), -1, -2), xy


def run(alg, split: Split, epsilon: float, delta: float, ledger: PrivacyLedger, trials: int = 1):
    """(coef (trials, d), predictions (trials, n_test) at the test rows clipped as the fitted rows, extras) of one
    split with private rows (the algorithm's public-only path and its input checks are not repeated here)."""
    p = alg.params
    d = split.d
    sx, sy = clip_sigmas(p, split, epsilon, ledger, trials)
    eps = epsilon * (1.0 - p.sigma_share) if p.sigma == "dp" else epsilon
    B_X, B_x, B_Y = alg._B(d, sx, sy)
    cal = core.calibrate(d, B_X, B_Y, eps, delta if p.noise == "gaussian" else 0.0, p.noise,
                         B_box=B_x if p.clip == "coordinate" else None)
    Xc, yc = clip(alg, split.X_private, split.y_private, B_X, B_x, B_Y, trials)
    lm, XXn, Xyn = release(np.swapaxes(Xc, -1, -2) @ Xc, np.einsum("tnd,tn->td", Xc, yc), cal, ledger, trials)
    lam_t = core.private_lambda_min(lm, cal, p.rho)
    if p.public and split.X_public.shape[0]:
        Pc, pc = clip(alg, split.X_public, split.y_public, B_X, B_x, B_Y, trials)
        XXp = np.swapaxes(Pc, -1, -2) @ Pc
        XXn, Xyn = XXn + XXp, Xyn + np.einsum("tnd,tn->td", Pc, pc)
        lam_t = lam_t + np.linalg.eigvalsh(XXp)[..., 0]
    ridge = core.adaptive_ridge(lam_t, d, cal, p.rho)
    w = core.estimate(XXn, Xyn, ridge)
    extras = {"ridge": float(np.mean(ridge)), "lambda_min_private": float(np.mean(lam_t)),
              "B_X": float(np.mean(B_X)), "B_Y": float(np.mean(B_Y))}
    if p.sigma == "dp":
        extras.update({"sigma_x_dp": float(np.mean(sx)), "sigma_y_dp": float(np.mean(sy))})
    assert math.isfinite(extras["ridge"])
    Xt, _ = clip(alg, split.X_test, np.zeros(split.X_test.shape[0]), B_X, B_x, B_Y, trials)
    return w, np.einsum("td,tnd->tn", w, Xt), extras
