"""The plot kind ``curve``: a metric against a grid column, one line per algorithm label, centre ± spread over
repeats (shared by every family; ``dca_accuracy`` is a preset of it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field

from dpexp.plotting.base import SHORT, PlotOptions, axis_label, new_figure, save, title_of
from dpexp.registry import register_plot
from dpexp.results import aggregate, default_x, varying_grid_columns


class CurveOptions(PlotOptions):
    center: Literal["mean", "median"] = "mean"
    error: Literal["std", "sem", "iqr", "none"] = Field("std", description="error bars over repeats")
    baselines: list[str] = Field(default_factory=list, description="labels drawn as horizontal lines")
    logx: bool = False
    logy: bool = False
    ylim: list[float] | None = None
    xlabel: str | None = None
    ylabel: str | None = None


@register_plot(options=CurveOptions)
def curve(df: pd.DataFrame, spec: Any, manifest: dict[str, Any], out_stem: Path, formats: list[str]) -> list[Path]:
    """Metric against x (n_private, epsilon, ...), one line per algorithm label, centre ± spread over repeats
    (values averaged over subsets within a repeat first).  Labels in ``options.baselines`` are drawn as horizontal
    lines at their average over x (e.g. public-data-only baselines)."""
    opts = CurveOptions.model_validate(spec.options)
    metric = spec.metric or str(df["metric"].iloc[0])
    x = spec.x or default_x(df[df["metric"] == metric])
    agg = aggregate(df, x, metric)
    fig, ax = new_figure()
    multi_ds = agg[["dataset", "dataset_params"]].drop_duplicates().shape[0] > 1
    extra = varying_grid_columns(df[df["metric"] == metric], x)
    order = list(dict.fromkeys(df["label"]))
    keys = ["dataset", "dataset_params", "label"] + extra
    colour = 0  # explicit colours: axhline does not advance the colour cycle, so a baseline shared C0 with a curve
    for key, g in sorted(agg.groupby(keys, sort=False),
                         key=lambda kv: (order.index(kv[0][2]) if kv[0][2] in order else 0, kv[0][3:])):
        dataset, dparams, label = key[:3]
        g = g.sort_values(x)
        name = f"{label} ({dataset} {dparams})" if multi_ds else label
        if extra:
            name += " (" + ", ".join(f"{SHORT.get(c, c)}={v:g}" if isinstance(v, (int, float)) else f"{c}={v}"
                                     for c, v in zip(extra, key[3:])) + ")"
        centre = g[opts.center].to_numpy(float)
        if opts.error == "std":
            lo = hi = g["std"].fillna(0).to_numpy(float)
        elif opts.error == "sem":
            lo = hi = (g["std"] / np.sqrt(g["repeats"].clip(lower=1))).fillna(0).to_numpy(float)
        elif opts.error == "iqr":
            lo, hi = centre - g["q25"].to_numpy(float), g["q75"].to_numpy(float) - centre
        else:
            lo = hi = np.zeros_like(centre)
        color, colour = f"C{colour % 10}", colour + 1
        if label in opts.baselines:
            level = float(np.nanmean(centre))
            ax.axhline(level, linestyle="--", linewidth=1.2, color=color,
                       label=name if "baseline" in name.lower() else f"{name} (baseline)")
            continue
        xs = g[x].to_numpy()
        ax.errorbar(xs, centre, yerr=np.vstack([lo, hi]), marker="o", markersize=3, capsize=2, label=name,
                    color=color)
    ax.set_xlabel(opts.xlabel or axis_label(x))
    ax.set_ylabel(opts.ylabel or axis_label(metric))
    if opts.logx:
        ax.set_xscale("log")
    if opts.logy:
        ax.set_yscale("log")
    if opts.ylim:
        ax.set_ylim(*opts.ylim)
    spread = {"std": " ± std", "sem": " ± s.e.m.", "iqr": " with IQR bars", "none": ""}[opts.error]
    reps = int(agg["repeats"].max()) if len(agg) else 0
    ax.set_title(f"{title_of(spec, manifest)}\n{opts.center}{spread} over {reps} repeats", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save(fig, out_stem, formats)
