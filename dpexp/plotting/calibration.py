"""Plot kinds of the calibration metrics (``dpexp.metrics.calibration``; issue 15), for any family whose algorithms
report credible intervals and whose datasets state their true coefficients.

* ``coverage_nominal`` — empirical coverage against the nominal level (the metrics ``<target>_coverage_<L>``), one
  line per algorithm label, the diagonal for perfect calibration; one panel per combination of the varying grid
  columns (n_private × ε, …: never averaged over a grid axis), mean ± s.e.m. over repeats.
* ``interval_width`` — for one nominal level, the interval width against x (default n_private, log scale; median
  and interquartile range over repeats by default) on top and the coverage at that level below (mean ± s.e.m.) with
  the nominal value and a tolerance band; one column per combination of the other varying grid columns (e.g. ε).

Both read only the results table: values are averaged over subsets within a repeat, then over repeats.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field

from dpexp.errors import UserError
from dpexp.plotting import style
from dpexp.plotting.base import SHORT, PlotOptions, axis_label, finish_plot, panels
from dpexp.plotting.looks import Looks
from dpexp.registry import register_plot
from dpexp.results import GRID_COLUMNS, aggregate, default_x, varying_grid_columns

_COVERAGE = re.compile(r"^(coef|pred)_coverage_(\d+)$")
_TARGET_WORDS = {"coef": "coefficients", "pred": "regression function at test rows"}


def _fmt(col: str, v: Any) -> str:
    return f"{SHORT.get(col, col)}={v:g}" if isinstance(v, (int, float, np.integer, np.floating)) else f"{col}={v}"


def _order(df: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(df["label"].unique()))


class CoverageNominalOptions(PlotOptions):
    target: Literal["coef", "pred"] = "coef"
    """coverage of the coefficients or of the regression function at the test rows"""


@register_plot(options=CoverageNominalOptions)
def coverage_nominal(df: pd.DataFrame, spec: Any, manifest: dict[str, Any], out_stem: Path,
                     formats: list[str]) -> list[Path]:
    """Empirical vs nominal coverage (module docstring)."""
    opts = CoverageNominalOptions.model_validate(spec.options)
    levels = sorted({int(m.group(2)) for m in map(_COVERAGE.match, df["metric"].unique())
                     if m and m.group(1) == opts.target})
    if not levels:
        raise UserError(f"coverage_nominal: the results have no {opts.target}_coverage_<L> metrics; add them to the "
                        "config's metrics (dpexp list metrics)")
    d = df[df["metric"].isin([f"{opts.target}_coverage_{lv}" for lv in levels])].copy()
    d["nominal"] = d["metric"].str.rsplit("_", n=1).str[1].astype(float) / 100
    d = d.dropna(subset=["value"])
    facets = [c for c in GRID_COLUMNS if d[c].nunique() > 1]
    per_rep = d.groupby(["label", *facets, "nominal", "repeat"], dropna=False,
                        observed=True)["value"].mean().reset_index()
    agg = per_rep.groupby(["label", *facets, "nominal"], dropna=False,
                          observed=True)["value"].agg(["mean", "std", "count"])
    agg = agg.reset_index()
    groups = list(agg.groupby(facets, sort=True, observed=True)) if facets else [((), agg)]
    fig, axes = panels(len(groups), width="column" if len(groups) == 1 else "page")
    looks = Looks(df, manifest)   # the methods' shared colours and markers, a dagger on non-DP curves
    order = _order(df)
    for ax, (key, g) in zip(axes, groups):
        key = key if isinstance(key, tuple) else (key,)
        ax.plot([0, 1], [0, 1], color="0.6", linestyle=":", linewidth=1, label="nominal")
        for label in sorted(g["label"].unique(), key=lambda s: order.index(s) if s in order else 0):
            h = g[g["label"] == label].sort_values("nominal")
            sem = (h["std"] / np.sqrt(h["count"].clip(lower=1))).fillna(0)
            ax.errorbar(h["nominal"], h["mean"], yerr=sem, capsize=2, label=looks.name(label), **looks.look(label))
        ax.set_xlim(0.4, 1.0)
        ax.set_ylim(0.0, 1.02)
        ax.set_xlabel("nominal level of the credible interval")
        ax.set_ylabel(f"empirical coverage ({_TARGET_WORDS[opts.target]})")
        ax.set_title(", ".join(_fmt(c, v) for c, v in zip(facets, key)) or "all cells", fontsize=style.FONT_SIZE)
    return finish_plot(fig, spec, manifest, out_stem, formats, looks=looks)


class IntervalWidthOptions(PlotOptions):
    level: int = Field(90, ge=1, le=99, description="nominal level (percent) of the intervals")
    target: Literal["coef", "pred"] = "coef"
    band: float = Field(0.05, ge=0, le=0.5, description="tolerance band around the nominal coverage (drawn shaded)")
    logy: bool = Field(True, description="log scale for the width")
    center: Literal["median", "mean"] = "median"
    """centre over repeats of the width (median: a few repeats with a degenerate DP σ̂ can make a mean meaningless);
    coverage is always the mean"""


@register_plot(options=IntervalWidthOptions)
def interval_width(df: pd.DataFrame, spec: Any, manifest: dict[str, Any], out_stem: Path,
                   formats: list[str]) -> list[Path]:
    """Interval width and coverage at one nominal level against x (module docstring)."""
    opts = IntervalWidthOptions.model_validate(spec.options)
    wm, cm = f"{opts.target}_width_{opts.level}", f"{opts.target}_coverage_{opts.level}"
    for m in (wm, cm):
        if not (df["metric"] == m).any():
            raise UserError(f"interval_width: the results have no metric {m!r}; add it to the config's metrics")
    x = spec.x or default_x(df[df["metric"] == wm])
    W, C = aggregate(df, x, wm), aggregate(df, x, cm)
    facets = varying_grid_columns(df[df["metric"] == wm], x)
    keys = sorted(W.groupby(facets, observed=True).groups) if facets else [()]
    style.apply()   # the Agg back-end before pyplot
    import matplotlib.pyplot as plt


    fig, axes = plt.subplots(2, len(keys), figsize=(style.COLUMN if len(keys) == 1 else style.PAGE, 5.0),
                             squeeze=False, layout="constrained", sharex="col")
    looks = Looks(df, manifest)
    order = _order(df)
    nominal = opts.level / 100
    for j, key in enumerate(keys):
        key = key if isinstance(key, tuple) else (key,)
        sel_w, sel_c = W, C
        for c, v in zip(facets, key):
            sel_w, sel_c = sel_w[sel_w[c] == v], sel_c[sel_c[c] == v]
        top, bottom = axes[0, j], axes[1, j]
        for label in [lb for lb in order if lb in set(sel_w["label"])]:
            for ax, sel, centre in ((top, sel_w, opts.center), (bottom, sel_c, "mean")):
                g = sel[sel["label"] == label].sort_values(x)
                if centre == "median":   # bars: the interquartile range over repeats
                    err = np.vstack([g["median"] - g["q25"], g["q75"] - g["median"]])
                else:
                    err = (g["std"] / np.sqrt(g["repeats"].clip(lower=1))).fillna(0)
                ax.errorbar(g[x], g[centre], yerr=err, capsize=2, label=looks.name(label) if ax is top else None,
                            **looks.look(label))
        bottom.axhline(nominal, color="0.4", linestyle=":", linewidth=1)
        bottom.axhspan(nominal - opts.band, min(nominal + opts.band, 1.0), color="0.85", alpha=0.5, linewidth=0)
        bottom.set_ylim(0.0, 1.02)
        if opts.logy:
            top.set_yscale("log")
        where = ", ".join(_fmt(c, v) for c, v in zip(facets, key))
        top.set_title(f"{opts.level} % interval width" + (f" ({where})" if where else ""), fontsize=style.FONT_SIZE)
        bottom.set_title(f"coverage of the {opts.level} % intervals (band ±{opts.band:g})", fontsize=style.FONT_SIZE)
        top.set_ylabel(f"width ({_TARGET_WORDS[opts.target]})")
        bottom.set_ylabel("empirical coverage")
        bottom.set_xlabel(axis_label(x))
        for ax in (top, bottom):
            ax.grid(alpha=0.3)
    return finish_plot(fig, spec, manifest, out_stem, formats, looks=looks)
