"""Calibration metrics of credible intervals (issue 15): empirical coverage and width of an algorithm's intervals.

An algorithm that reports uncertainty puts equal-tailed intervals on its ``Output`` (``coef_interval`` and
``pred_interval``: nominal level → (lower, upper), ``dpexp.models.intervals``).  A dataset that knows its true
coefficients says so in ``split.meta['coef_target']``: a function of the output's ``clip_bounds`` (trials, 2) or
None returning the coefficients the algorithm estimates — for an algorithm that clips, the population regression of
the clipped data at its bounds (``dpexp.families.gdsc.truth``), else the unclipped one.

* ``coef_coverage_<L>`` — fraction of (trial, coefficient) pairs whose nominal-L % interval contains the target;
* ``pred_coverage_<L>`` — the same for the regression function at the test rows, x_testᵀw̃ (not the noisy y_test);
* ``coef_width_<L>``, ``pred_width_<L>`` — mean interval width (coefficient / response units; comparable between
  algorithms that clip at the same bounds).

L ∈ {50, 80, 90, 95}, widths at 50 and 90.  For an output without intervals (a point estimator) the metrics do not
apply: NaN without an error, so such algorithms can share a config; a split without a target is an error (the
metric row says why).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpexp.components import Metric
from dpexp.registry import register_metric
from dpexp.types import Output, Split

COVERAGE_LEVELS = (50, 80, 90, 95)
WIDTH_LEVELS = (50, 90)


def _intervals(output: Output, kind: str, level: float) -> tuple[np.ndarray, np.ndarray] | None:
    """The output's (lower, upper) at ``level``; None when it reports no intervals at all (point estimators)."""
    table = output.coef_interval if kind == "coef" else output.pred_interval
    if not table:
        return None
    for lv, (lo, hi) in table.items():
        if abs(lv - level) < 1e-9:
            return np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    raise ValueError(f"the algorithm reports no {level:g} interval (levels: {sorted(table)})")


def target_coef(output: Output, split: Split) -> np.ndarray:
    """The true coefficients (trials, d) the output's intervals are compared with (module docstring)."""
    fn = split.meta.get("coef_target")
    if fn is None:
        raise ValueError("the dataset states no true coefficients (split.meta['coef_target'])")
    w = np.asarray(fn(output.clip_bounds), dtype=float)
    return np.broadcast_to(w, (output.trials, split.d))


def coverage(output: Output, split: Split, kind: str, level: float) -> float:
    """Empirical coverage of the nominal-``level`` intervals of ``kind`` ('coef' | 'pred'); NaN for an output
    without intervals (the metric does not apply)."""
    iv = _intervals(output, kind, level)
    if iv is None:
        return float("nan")
    lo, hi = iv
    w = target_coef(output, split)
    truth = w if kind == "coef" else w @ split.X_test.T
    lo, hi = np.broadcast_to(lo, truth.shape), np.broadcast_to(hi, truth.shape)
    ok = np.all(np.isfinite(lo) & np.isfinite(hi), axis=-1)
    if not ok.any():
        return float("nan")
    return float(np.mean((lo[ok] <= truth[ok]) & (truth[ok] <= hi[ok])))


def width(output: Output, kind: str, level: float) -> float:
    """Mean width of the nominal-``level`` intervals of ``kind`` over trials and coordinates (finite ones); NaN for
    an output without intervals."""
    iv = _intervals(output, kind, level)
    if iv is None:
        return float("nan")
    lo, hi = iv
    wd = hi - lo
    return float(np.mean(wd[np.isfinite(wd)])) if np.isfinite(wd).any() else float("nan")


def _make(kind: str, what: str, pct: int) -> type[Metric]:
    subject = "coefficients" if kind == "coef" else "regression function at the test rows"
    if what == "coverage":
        doc = f"empirical coverage of the nominal {pct} % credible intervals of the {subject} (0-1)"

        def call(self: Any, output: Output, split: Split) -> float:
            return coverage(output, split, kind, pct / 100)
    else:
        doc = f"mean width of the nominal {pct} % credible intervals of the {subject}"

        def call(self: Any, output: Output, split: Split) -> float:
            return width(output, kind, pct / 100)

    cls = type(f"{kind.title()}{what.title()}{pct}", (Metric,),
               {"name": f"{kind}_{what}_{pct}", "description": doc, "__call__": call, "__doc__": doc,
                "__module__": __name__})
    return register_metric(cls)


for _pct in COVERAGE_LEVELS:
    for _kind in ("coef", "pred"):
        _make(_kind, "coverage", _pct)
for _pct in WIDTH_LEVELS:
    for _kind in ("coef", "pred"):
        _make(_kind, "width", _pct)
