"""The plot kind ``curve``: a metric against a grid column, one line per algorithm label, centre ± spread over
repeats (shared by every family; ``dca_accuracy`` is a preset of it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field

from dpexp.plotting.base import SHORT, PlotOptions, auto_width, axis_label, finish_plot, new_figure
from dpexp.plotting.looks import Looks
from dpexp.plotting.titles import number, plural
from dpexp.registry import register_plot
from dpexp.results import aggregate, default_x, varying_grid_columns

SPREAD_WORDS = {"std": "± std", "sem": "± s.e.m.", "iqr": "with interquartile-range bars", "none": ""}


class CurveOptions(PlotOptions):
    center: Literal["mean", "median"] = "mean"
    error: Literal["std", "sem", "iqr", "none"] = Field("std", description="error bars over repeats")
    baselines: list[str] = Field(default_factory=list, description="labels drawn as horizontal lines")
    logx: bool = False
    logy: bool = False
    ylim: list[float] | None = None
    xlabel: str | None = None
    ylabel: str | None = None


def grid_ticks(ax: Any, xs: np.ndarray, axis: str = "x", max_ticks: int = 9) -> None:
    """On a log axis, label the grid values themselves (1, 1.78, 3.16, 5.62, 10, 31.6) instead of decades only,
    when there are few enough of them, in the one log-axis format (``ticks.LogTicks``); minor tick labels off."""
    from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator

    from dpexp.plotting.ticks import LogTicks

    v = np.unique(np.asarray(xs, dtype=float))
    v = v[np.isfinite(v) & (v > 0)]
    if not 1 < len(v) <= max_ticks:
        return
    a = ax.xaxis if axis == "x" else ax.yaxis
    a.set_major_locator(FixedLocator(v))
    a.set_major_formatter(LogTicks())
    a.set_minor_locator(NullLocator())
    a.set_minor_formatter(NullFormatter())


def spread_text(center: str, error: str, repeats: int) -> str:
    """'mean ± std over 20 repeats' (the subtitle of a curve figure; the config title should not repeat it)."""
    words = SPREAD_WORDS[error]
    return f"{center}{' ' + words if words else ''} over {plural(repeats, 'repeat')}"


def reads_metric(spec: Any, columns: list[str]) -> list[str] | None:
    """A curve reads the rows of its metric (``register_plot(reads=...)``); without one, of the table's first."""
    return [spec.metric] if spec.metric else None


@register_plot(options=CurveOptions, reads=reads_metric)
def curve(df: pd.DataFrame, spec: Any, manifest: dict[str, Any], out_stem: Path, formats: list[str]) -> list[Path]:
    """Metric against x (n_private, epsilon, ...), one line per algorithm label, centre ± spread over repeats
    (values averaged over subsets within a repeat first).  Labels in ``options.baselines`` are drawn as horizontal
    lines at their average over x (e.g. public-data-only baselines).  On a log x axis with few grid values, the
    ticks are the grid values."""
    opts = CurveOptions.model_validate(spec.options)
    metric = spec.metric or str(df["metric"].iloc[0])
    x = spec.x or default_x(df[df["metric"] == metric])
    agg = aggregate(df, x, metric)
    looks = Looks(df, manifest)
    extra = varying_grid_columns(df[df["metric"] == metric], x)
    fig, ax = new_figure(opts.size or auto_width(agg.groupby(["dataset", "dataset_params", "label"] + extra,
                                                             observed=True).ngroups))
    multi_ds = agg[["dataset", "dataset_params"]].drop_duplicates().shape[0] > 1
    order = list(dict.fromkeys(df["label"].unique()))
    keys = ["dataset", "dataset_params", "label"] + extra
    for key, g in sorted(agg.groupby(keys, sort=False, observed=True),
                         key=lambda kv: (order.index(kv[0][2]) if kv[0][2] in order else 0, kv[0][3:])):
        dataset, dparams, label = key[:3]
        g = g.sort_values(x)
        name = looks.name(label)
        if multi_ds:
            name += f" ({dataset} {dparams})"
        if extra:
            name += " (" + ", ".join(f"{SHORT.get(c, c)} = {number(v)}" for c, v in zip(extra, key[3:])) + ")"
        centre = g[opts.center].to_numpy(float)
        if opts.error == "std":
            lo = hi = g["std"].fillna(0).to_numpy(float)
        elif opts.error == "sem":
            lo = hi = (g["std"] / np.sqrt(g["repeats"].clip(lower=1))).fillna(0).to_numpy(float)
        elif opts.error == "iqr":
            lo, hi = centre - g["q25"].to_numpy(float), g["q75"].to_numpy(float) - centre
        else:
            lo = hi = np.zeros_like(centre)
        if label in opts.baselines:
            level = float(np.nanmean(centre))
            ax.axhline(level, linewidth=1.2, label=name if "baseline" in name.lower() else f"{name} (baseline)",
                       **looks.look(label, baseline=True))
            continue
        ax.errorbar(g[x].to_numpy(), centre, yerr=np.vstack([lo, hi]), label=name, **looks.look(label))
    ax.set_xlabel(opts.xlabel or axis_label(x))
    ax.set_ylabel(opts.ylabel or axis_label(metric))
    if opts.logx:
        ax.set_xscale("log")
        grid_ticks(ax, agg[x].to_numpy())
    if opts.logy:
        ax.set_yscale("log")
    if opts.ylim:
        ax.set_ylim(*opts.ylim)
    reps = int(agg["repeats"].max()) if len(agg) else 0
    return finish_plot(fig, spec, manifest, out_stem, formats, looks=looks,
                       subtitle=spread_text(opts.center, opts.error, reps))
