"""Empirical CDF helpers shared by the plot kinds that draw distributions (SLR Figs 6–9): the ECDF itself, and
marks at the axis edges that say how much of a curve lies beyond the axis, so a figure never cuts data silently."""

from __future__ import annotations

from typing import Any

import numpy as np

CLIP_NOTE = ("▸ n% at an edge of a panel: the share of that curve's values beyond the axis (not drawn); "
             "◂ on the left edge likewise")
FAILED_NOTE = "A curve ending below 1: the share of {what} without a value (every trial failed)"


def ecdf(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Points (x, F(x)) of the empirical CDF over *all* ``values``: the sorted non-NaN values and their cumulative
    share of every value.  A NaN (a failed run or subset) counts in the total but is never reached, so the curve
    stops below 1 by the failed share instead of hiding it."""
    v = np.asarray(values, dtype=float)
    x = np.sort(v[~np.isnan(v)])
    return x, np.arange(1, x.size + 1) / max(v.size, 1)


def beyond(xs: np.ndarray, ys: np.ndarray, lo: float, hi: float) -> tuple[float, float, float, float]:
    """For a step curve (x sorted, F(x) non-decreasing): (share left of ``lo``, F just left of lo, share right of
    ``hi``, F at hi)."""
    xs, ys = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    if xs.size == 0:
        return 0.0, 0.0, 0.0, 0.0
    i_lo = np.searchsorted(xs, lo, side="left")     # points strictly left of lo
    f_lo = float(ys[i_lo - 1]) if i_lo > 0 else 0.0
    i_hi = np.searchsorted(xs, hi, side="right")    # points at or left of hi
    f_hi = float(ys[i_hi - 1]) if i_hi > 0 else 0.0
    return f_lo, f_lo, float(ys[-1]) - f_hi, f_hi


def mark_beyond(ax: Any, curves: list[tuple[np.ndarray, np.ndarray, str]], min_share: float = 0.005) -> bool:
    """For each (x, F, colour) curve of ``ax``, a triangle and the share at the left/right edge of the x axis when
    part of it lies beyond; True when something was marked (the figure's notes then explain the marks)."""
    lo, hi = sorted(ax.get_xlim())
    marked = False
    for xs, ys, colour in curves:
        left, f_lo, right, f_hi = beyond(xs, ys, lo, hi)
        for share, x, y, marker, ha in ((left, 0.0, f_lo, "<", "left"), (right, 1.0, f_hi, ">", "right")):
            if share < min_share:
                continue
            text = f"◂{share:.0%}" if ha == "left" else f"{share:.0%}▸"
            ax.plot([x], [y], marker=marker, color=colour, markersize=4, linestyle="none", clip_on=False,
                    transform=ax.get_yaxis_transform(), label="_beyond")
            ax.annotate(text, (x, y), xycoords=ax.get_yaxis_transform(), xytext=(-6 if ha == "right" else 6, 3),
                        textcoords="offset points", ha=ha, va="bottom", fontsize=6, color=colour)
            marked = True
    return marked
