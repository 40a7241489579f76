"""Accuracy metrics of predictions on held-out rows (one value per cell; trials are averaged)."""

from __future__ import annotations

import numpy as np
from scipy import stats

from dpexp.components import Metric
from dpexp.registry import register_metric
from dpexp.types import Output, Split


def spearman(pred: np.ndarray, truth: np.ndarray) -> float:
    """Spearman rank correlation; 0 when undefined (fewer than 2 points or a constant vector)."""
    return float(spearman_rows(np.asarray(pred, dtype=float)[None, :], truth)[0])


def spearman_rows(P: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Spearman correlation of every row of ``P`` (trials, n) with ``truth`` (n,), vectorised: Pearson correlation
    of average ranks (ties get mid-ranks, as scipy.stats.spearmanr).  0 where undefined (n < 2, a constant row or
    constant truth, non-finite predictions)."""
    P = np.asarray(P, dtype=float)
    truth = np.asarray(truth, dtype=float)
    out = np.zeros(P.shape[0])
    if P.shape[1] < 2:
        return out
    ok = np.all(np.isfinite(P), axis=1)
    if not ok.any():
        return out
    rp = stats.rankdata(P[ok], axis=1)
    rt = stats.rankdata(truth)
    rp -= rp.mean(axis=1, keepdims=True)
    rt = rt - rt.mean()
    den = np.sqrt((rp * rp).sum(axis=1) * (rt @ rt))
    num = rp @ rt
    out[ok] = np.divide(num, den, out=np.zeros_like(num), where=den > 0)
    return np.clip(out, -1.0, 1.0)


@register_metric
class Spearman(Metric):
    """Mean over trials of the Spearman rank correlation between test predictions and test responses
    (Honkela et al. 2018's accuracy measure); 0 when undefined."""

    name = "spearman"
    description = "Spearman rank correlation of test predictions vs truth (0 when undefined)"

    def __call__(self, output: Output, split: Split) -> float:
        return float(np.mean(spearman_rows(output.predictions, split.y_test)))


@register_metric
class MAE(Metric):
    """Mean absolute error on the test rows, averaged over trials (Heikkilä et al. 2017)."""

    name = "mae"
    description = "mean absolute error on the test rows"

    def __call__(self, output: Output, split: Split) -> float:
        return float(np.mean(np.abs(output.predictions - split.y_test[None, :])))
