"""Empirical CDF helper shared by the plot kinds that draw distributions (SLR Figs 6–9)."""

from __future__ import annotations

import numpy as np


def ecdf(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Points (x, F(x)) of the empirical CDF over *all* ``values``: the sorted non-NaN values and their cumulative
    share of every value.  A NaN (a failed run or subset) counts in the total but is never reached, so the curve
    stops below 1 by the failed share instead of hiding it."""
    v = np.asarray(values, dtype=float)
    x = np.sort(v[~np.isnan(v)])
    return x, np.arange(1, x.size + 1) / max(v.size, 1)
