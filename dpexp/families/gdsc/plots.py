"""Plot kinds for the drug-sensitivity paper (Honkela et al. 2018) and the thesis (Nieminen 2017).

* ``gdsc_curve`` — Fig. 2/6 (thesis 4.2, 4.3, 4.5, 4.6): metric against x, one line per label with std error bars
  over Monte Carlo repeats (values first averaged over drugs within a repeat), baselines as horizontal dashed lines.
* ``gdsc_tradeoff`` — Fig. 3 a/b/c: heat map over (x = n_private, y = d | n_public | epsilon) of the relative
  improvement (m − m_base)/|m_base| of one method over the best 10-public-point baseline, colour bar, optimum marked.
* ``param_heatmap`` — Fig. 5 (split simplex) and similar: mean metric over two algorithm/dataset parameters (e.g.
  p1 × p2 of rplr), colour bar, optimum marked with a cross.
* ``gdsc_thresholds`` — Fig. 4: several extras metrics (e.g. omega_x, omega_y or B_x, B_y) against n, ± std.

GDSC drops cell lines without a response per drug, so the ``n_private``/``n_public`` a cell *saw* (results columns)
vary by drug.  Configs add the core metrics ``n_private_requested`` / ``n_public_requested``
(``dpexp/metrics/requested.py``); the plots then use the requested sizes as x (``requested_sizes``).  Everything
is computed from the results table alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field

from dpexp.errors import UserError
from dpexp.plotting.base import PlotOptions, axis_label, decorate, new_figure, save, title_of
from dpexp.plotting.heatmap import heat_figure
from dpexp.registry import register_plot

# ----------------------------------------------------------------------------------------------------------------
# requested sizes (rows of the metrics n_private_requested / n_public_requested, dpexp/metrics/requested.py)
# ----------------------------------------------------------------------------------------------------------------
_SIZE_METRICS = {"n_private_requested": "n_private", "n_public_requested": "n_public"}


def requested_sizes(df: pd.DataFrame) -> pd.DataFrame:
    """Replace ``n_private``/``n_public`` by the requested sizes where the table has the ``*_requested`` metric
    rows, and drop those rows.  A cell's rows share all identity columns; cells whose identity coincides (same seen
    sizes) are told apart by their order in the table (the runner writes each cell's metric rows together)."""
    present = [m for m in _SIZE_METRICS if (df["metric"] == m).any()]
    if not present:
        return df
    ident = [c for c in df.columns if c not in ("metric", "value", "error")]
    d = df.copy()
    d["_k"] = d.groupby(ident + ["metric"], sort=False, dropna=False).cumcount()
    out = d[~d["metric"].isin(list(_SIZE_METRICS))].copy()
    for m in present:
        col = _SIZE_METRICS[m]
        req = d[d["metric"] == m][ident + ["_k", "value"]].rename(columns={"value": "_req"})
        out = out.merge(req, on=ident + ["_k"], how="left")
        out[col] = np.where(out["_req"].notna(), out["_req"], out[col]).astype(float).round().astype(int)
        out = out.drop(columns="_req")
    return out.drop(columns="_k")


# ----------------------------------------------------------------------------------------------------------------
# aggregation helpers
# ----------------------------------------------------------------------------------------------------------------
def _params_columns(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Add columns for algorithm parameters named in ``keys`` (parsed from the ``params`` strings 'a=1,b=2')."""
    need = [k for k in keys if k not in df.columns]
    if not need:
        return df
    parsed = df["params"].fillna("").map(lambda s: dict(kv.split("=", 1) for kv in s.split(",") if "=" in kv))
    df = df.copy()
    for k in need:
        vals = parsed.map(lambda p: p.get(k))
        num = pd.to_numeric(vals, errors="coerce")
        df[k] = num if num.notna().all() else vals
    return df


def repeat_means(df: pd.DataFrame, metric: str, keys: list[str]) -> pd.DataFrame:
    """Mean over subsets (drugs) within each repeat, per ``keys``: columns keys + repeat + value."""
    d = df[df["metric"] == metric]
    if d.empty:
        have = ", ".join(sorted(df["metric"].unique()))
        raise UserError(f"metric must be one of the results' metrics ({have}), got {metric!r}")
    return d.groupby(keys + ["repeat"], sort=True, dropna=False)["value"].mean().reset_index()


def summary(df: pd.DataFrame, metric: str, keys: list[str]) -> pd.DataFrame:
    """mean, std (over repeats) and repeat count per ``keys``."""
    r = repeat_means(df, metric, keys)
    return r.groupby(keys, sort=True, dropna=False)["value"].agg(mean="mean", std="std", repeats="count").reset_index()


class BaselineSpec(PlotOptions):
    algorithm: str = Field("lr_public", description="algorithm name of the baseline rows")
    n_public: int | None = Field(10, description="public rows of the baseline (None: any)")
    select: Literal["max", "mean"] = Field("max", description="best (max) or mean over the baseline variants")


def baseline_level(df: pd.DataFrame, metric: str, b: BaselineSpec) -> tuple[float, str]:
    """Level of the reference: per variant (label × dataset params) the mean over drugs, repeats and x, then the max
    (the "best 10-public-point baseline") or mean over variants.  Returns (level, description)."""
    d = df[(df["algorithm"] == b.algorithm) & (df["metric"] == metric)]
    if b.n_public is not None:
        d = d[d["n_public"] == b.n_public]
    if d.empty:
        raise UserError(f"plot baseline: no rows of algorithm {b.algorithm!r} with n_public={b.n_public} and metric "
                        f"{metric!r} in the results")
    per = d.groupby(["label", "dataset_params"], dropna=False)["value"].mean()
    if b.select == "max":
        (label, dparams), level = per.idxmax(), float(per.max())
        return level, f"{label} [{dparams}]"
    return float(per.mean()), f"mean of {len(per)} {b.algorithm} variants"


# ----------------------------------------------------------------------------------------------------------------
# gdsc_curve
# ----------------------------------------------------------------------------------------------------------------
class GdscCurveOptions(PlotOptions):
    baselines: list[str] = Field(default_factory=list, description="labels drawn as horizontal dashed lines")
    error: Literal["std", "sem", "none"] = Field("std", description="error bars over Monte Carlo repeats")
    logx: bool = False
    ylim: list[float] | None = None
    legend: Literal["inside", "outside"] = "outside"


@register_plot(options=GdscCurveOptions)
def gdsc_curve(df: pd.DataFrame, spec: Any, manifest: dict[str, Any], out_stem: Path,
               formats: list[str]) -> list[Path]:
    """Metric vs x (requested n_private by default) per label, mean ± std over repeats of the drug averages;
    ``options.baselines`` labels are drawn as horizontal dashed lines (their mean over x)."""
    o = GdscCurveOptions.model_validate(spec.options)
    df = requested_sizes(df)
    metric = spec.metric or "spearman"
    x = spec.x or "n_private"
    s = summary(df, metric, ["label", "dataset_params", x])
    fig, ax = new_figure(7.0, 4.6)
    import matplotlib   # loaded (with the Agg backend) by new_figure

    order = list(dict.fromkeys(df["label"]))
    # a label drawn on several dataset variants names them; one that runs on one dataset (algorithms[].datasets,
    # e.g. the paper-protocol and our curves of Fig. 2) says which in its label
    multi = s.groupby("label")["dataset_params"].nunique()
    # one colour per label (20 distinct beyond 10 labels); one line style per dataset variant, so curves of the same
    # method on different data paths (the paper protocol and ours) are told apart at a glance
    palette = [f"C{k}" for k in range(10)] if len(order) <= 10 else list(matplotlib.colormaps["tab20"].colors)
    variants = list(dict.fromkeys(s["dataset_params"]))
    styles = ["-", "-.", ":", (0, (5, 1, 1, 1))]
    for (label, dparams), g in sorted(s.groupby(["label", "dataset_params"], sort=False),
                                      key=lambda kv: order.index(kv[0][0]) if kv[0][0] in order else 0):
        g = g.sort_values(x)
        name = f"{label} ({dparams})" if multi[label] > 1 and label not in o.baselines else label
        color = palette[order.index(label) % len(palette)] if label in order else None
        if label in o.baselines:
            ax.axhline(float(g["mean"].mean()), linestyle="--", linewidth=1.3,
                       label=name if "baseline" in name.lower() else f"{name} (baseline)", color=color)
            continue
        err = {"std": g["std"].fillna(0), "sem": (g["std"] / np.sqrt(g["repeats"].clip(lower=1))).fillna(0),
               "none": 0 * g["std"].fillna(0)}[o.error].to_numpy(float)
        ax.errorbar(g[x].to_numpy(float), g["mean"].to_numpy(float), yerr=err, marker="s", markersize=3,
                    capsize=2, label=name, color=color, linestyle=styles[variants.index(dparams) % len(styles)])
    ax.set_xlabel(axis_label(x))
    ax.set_ylabel(axis_label(metric))
    if o.logx:
        ax.set_xscale("log")
    if o.ylim:
        ax.set_ylim(*o.ylim)
    reps = int(s["repeats"].max()) if len(s) else 0
    ndrugs = df["subset"].nunique()
    ax.set_title(f"{title_of(spec, manifest)}\nmean over {ndrugs} subsets, ± {o.error} over {reps} repeats",
                 fontsize=10)
    ax.grid(alpha=0.3)
    if o.legend == "outside":
        ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    else:
        ax.legend(fontsize=8)
    return save(fig, out_stem, formats)


# ----------------------------------------------------------------------------------------------------------------
# heat maps
# ----------------------------------------------------------------------------------------------------------------
class TradeoffOptions(PlotOptions):
    y: str = Field(..., description="second axis: d, n_public or epsilon")
    algorithm: str = Field("rplr", description="the method whose improvement is shown")
    baseline: BaselineSpec = Field(default_factory=BaselineSpec)
    relative: bool = Field(True, description="(m - base)/|base| (True) or m - base")
    annotate: bool = True
    cmap: str = "viridis"


@register_plot(options=TradeoffOptions)
def gdsc_tradeoff(df: pd.DataFrame, spec: Any, manifest: dict[str, Any], out_stem: Path,
                  formats: list[str]) -> list[Path]:
    """Fig. 3: relative improvement of ``algorithm`` over the best baseline, heat map over (x, y)."""
    o = TradeoffOptions.model_validate(spec.options)
    df = requested_sizes(df)
    metric = spec.metric or "spearman"
    x = spec.x or "n_private"
    level, desc = baseline_level(df, metric, o.baseline)
    d = _params_columns(df[df["algorithm"] == o.algorithm], [c for c in (x, o.y) if c not in df.columns])
    if d.empty:
        raise UserError(f"gdsc_tradeoff: no rows of algorithm {o.algorithm!r}")
    s = summary(d, metric, [o.y, x])
    s["z"] = (s["mean"] - level) / (abs(level) if o.relative else 1.0)
    what = "relative improvement" if o.relative else "improvement"
    fig, ax, _ = heat_figure(s, x, o.y, "z", axis_label(x), axis_label(o.y), f"{what} of mean {metric} over baseline",
                             ".2f", o.cmap, o.annotate, "max", (7.0, 5.0))
    ax.set_title(f"{title_of(spec, manifest)}\n{o.algorithm} vs baseline {desc} = {level:.4f} ({metric}); "
                 f"{int(s['repeats'].max())} repeats", fontsize=9)
    return save(fig, out_stem, formats)


class ParamHeatmapOptions(PlotOptions):
    y: str = Field(..., description="row variable (results column or algorithm parameter, e.g. p1)")
    algorithm: str | None = Field(None, description="restrict to this algorithm")
    mark: Literal["max", "min"] = "max"
    annotate: bool = True
    cmap: str = "viridis"
    fmt: str = ".3f"


@register_plot(options=ParamHeatmapOptions)
def param_heatmap(df: pd.DataFrame, spec: Any, manifest: dict[str, Any], out_stem: Path,
                  formats: list[str]) -> list[Path]:
    """Mean metric over a grid of two variables (results columns or algorithm parameters parsed from ``params``),
    optimum marked — Fig. 5's budget-split simplex (x = p2, y = p1; p3 = 1 − p1 − p2; empty cells off-simplex)."""
    o = ParamHeatmapOptions.model_validate(spec.options)
    df = requested_sizes(df)
    metric = spec.metric or "spearman"
    if spec.x is None:
        raise UserError("param_heatmap: plots[].x must name a column or parameter, got None")
    d = df if o.algorithm is None else df[df["algorithm"] == o.algorithm]
    d = _params_columns(d, [spec.x, o.y])
    s = summary(d, metric, [o.y, spec.x])
    fig, ax, (bx, by) = heat_figure(s, spec.x, o.y, "mean", axis_label(spec.x), axis_label(o.y), f"mean {metric}",
                                    o.fmt, o.cmap, o.annotate, o.mark, (7.0, 5.6))
    ax.set_title(f"{title_of(spec, manifest)}\noptimum {spec.x}={bx}, {o.y}={by}; "
                 f"{int(s['repeats'].max())} repeats", fontsize=9)
    return save(fig, out_stem, formats)


class ThresholdOptions(PlotOptions):
    metrics: list[str] = Field(default_factory=lambda: ["omega_x", "omega_y"],
                               description="metric rows (algorithm extras) drawn against x")
    algorithm: str | None = "rplr"
    logx: bool = False


@register_plot(options=ThresholdOptions)
def gdsc_thresholds(df: pd.DataFrame, spec: Any, manifest: dict[str, Any], out_stem: Path,
                    formats: list[str]) -> list[Path]:
    """Fig. 4: chosen thresholds (extras such as omega_x, omega_y) against x, mean ± std over repeats, one line per
    (metric, label)."""
    o = ThresholdOptions.model_validate(spec.options)
    df = requested_sizes(df)
    x = spec.x or "n_private"
    d = df if o.algorithm is None else df[df["algorithm"] == o.algorithm]
    fig, ax = new_figure(6.4, 4.4)
    drawn = 0
    for m in o.metrics:
        if not (d["metric"] == m).any():
            continue
        s = summary(d, m, ["label", x])
        for label, g in s.groupby("label", sort=False):
            g = g.sort_values(x)
            ax.errorbar(g[x].to_numpy(float), g["mean"].to_numpy(float), yerr=g["std"].fillna(0).to_numpy(float),
                        marker="o", markersize=3, capsize=2, label=f"{m} ({label})")
            drawn += 1
    if drawn == 0:
        raise UserError(f"gdsc_thresholds: none of the metrics {o.metrics} is in the results")
    if o.logx:
        ax.set_xscale("log")
    decorate(ax, axis_label(x), "threshold (multiples of σ, or data units for B)", title_of(spec, manifest),
             title_size=10, legend_size=8)
    return save(fig, out_stem, formats)


