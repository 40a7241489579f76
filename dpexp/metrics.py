"""Accuracy metrics of predictions on held-out rows (one value per cell; trials are averaged)."""

from __future__ import annotations

import numpy as np
from scipy import stats

from dpexp.components import Metric
from dpexp.registry import register_metric
from dpexp.types import Output, Split


def spearman(pred: np.ndarray, truth: np.ndarray) -> float:
    """Spearman rank correlation; 0 when undefined (fewer than 2 points or a constant vector)."""
    pred = np.asarray(pred, dtype=float)
    truth = np.asarray(truth, dtype=float)
    if pred.size < 2 or np.ptp(pred) == 0 or np.ptp(truth) == 0 or not np.all(np.isfinite(pred)):
        return 0.0
    return float(stats.spearmanr(pred, truth).statistic)


@register_metric
class Spearman(Metric):
    """Mean over trials of the Spearman rank correlation between test predictions and test responses
    (Honkela et al. 2018's accuracy measure); 0 when undefined."""

    name = "spearman"
    description = "Spearman rank correlation of test predictions vs truth (0 when undefined)"

    def __call__(self, output: Output, split: Split) -> float:
        return float(np.mean([spearman(p, split.y_test) for p in output.predictions]))


@register_metric
class MAE(Metric):
    """Mean absolute error on the test rows, averaged over trials (Heikkilä et al. 2017)."""

    name = "mae"
    description = "mean absolute error on the test rows"

    def __call__(self, output: Output, split: Split) -> float:
        return float(np.mean(np.abs(output.predictions - split.y_test[None, :])))
