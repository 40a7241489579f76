"""Plot kinds for the drug-sensitivity paper (Honkela et al. 2018) and the thesis (Nieminen 2017).

* ``gdsc_curve`` — Fig. 2/6 (thesis 4.2, 4.3, 4.5, 4.6): metric against x, one line per label with std error bars
  over Monte Carlo repeats (values first averaged over drugs within a repeat), baselines as horizontal dashed lines.
* ``gdsc_tradeoff`` — Fig. 3 a/b/c: heat map over (x = n_private, y = d | n_public | epsilon) of the improvement
  of one method over the best 10-public-point baseline: relative, (m − b)/b, only when the baseline b is positive
  (a ratio to b ≤ 0 means nothing: the absolute difference m − b is shown and the figure says why), colour map
  centred at 0, optimum marked.
* ``param_heatmap`` — Fig. 5 (split simplex) and similar: mean metric over two algorithm/dataset parameters (e.g.
  p1 × p2 of rplr), colour bar, optimum marked with a cross.
* ``gdsc_thresholds`` — Fig. 4: several extras metrics (e.g. omega_x, omega_y or B_x, B_y) against n, ± std.

GDSC drops cell lines without a response per drug, so the ``n_private``/``n_public`` a cell *saw* (results columns)
vary by drug.  Every row also carries the sizes the config asked for (the ``n_private_requested`` /
``n_public_requested`` columns), which the plots use as x (``requested_sizes``); a table written before those
columns carries them as the metric rows of ``dpexp/metrics/requested.py`` instead.  Everything is computed from the
results table alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, model_validator

from dpexp import registry
from dpexp.errors import UserError
from dpexp.plotting.base import (SHORT, PlotOptions, auto_width, axis_label, decorate, finish_plot, new_figure,
                                 panels)
from dpexp.plotting import style
from dpexp.plotting.curve import grid_ticks, spread_text
from dpexp.plotting.facets import Panel, PanelSpec, assign, check_panels
from dpexp.plotting.facets import footnote as facet_footnote
from dpexp.plotting.heatmap import heat_figure
from dpexp.plotting.looks import Looks
from dpexp.plotting.titles import number
from dpexp.registry import register_plot
from dpexp.results import map_unique, varying_grid_columns

# ----------------------------------------------------------------------------------------------------------------
# requested sizes (rows of the metrics n_private_requested / n_public_requested, dpexp/metrics/requested.py)
# ----------------------------------------------------------------------------------------------------------------
_SIZE_METRICS = {"n_private_requested": "n_private", "n_public_requested": "n_public"}


def reads_metric(spec: Any, columns: list[str]) -> list[str]:
    """What a GDSC figure of one metric reads (``register_plot(reads=...)``): that metric (spearman by default),
    and the requested-size metric rows when the table predates the ``*_requested`` columns (``requested_sizes``)."""
    sizes = [] if all(f"{c}_requested" in columns for c in _SIZE_METRICS.values()) else list(_SIZE_METRICS)
    return [spec.metric or "spearman", *sizes]


def requested_sizes(df: pd.DataFrame) -> pd.DataFrame:
    """Replace ``n_private``/``n_public`` by the requested sizes and drop the ``*_requested`` metric rows.

    The results schema has the columns ``n_private_requested``/``n_public_requested`` (a whole-dataset "all" keeps
    the seen size); tables written before them carry the requested sizes as metric rows only: a cell's rows share
    all identity columns, and cells whose identity coincides (same seen sizes) are told apart by their order in the
    table (the runner writes each cell's metric rows together).
    """
    if all(f"{col}_requested" in df.columns for col in _SIZE_METRICS.values()):
        out = df[~df["metric"].isin(list(_SIZE_METRICS))]   # a new frame (copy-on-write): no second copy
        for col in _SIZE_METRICS.values():
            req = out[f"{col}_requested"]
            req = req if pd.api.types.is_numeric_dtype(req) else pd.to_numeric(req, errors="coerce")
            out[col] = np.where(req.notna(), req, out[col]).astype(float).round().astype(int)
        return out
    present = [m for m in _SIZE_METRICS if (df["metric"] == m).any()]
    if not present:
        return df
    ident = [c for c in df.columns if c not in ("metric", "value", "error", *_SIZE_METRICS.values())]
    d = df.copy()
    d["_k"] = d.groupby(ident + ["metric"], sort=False, dropna=False, observed=True).cumcount()
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
    parsed = map_unique(df["params"].fillna(""), lambda s: dict(kv.split("=", 1) for kv in s.split(",") if "=" in kv))
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
    return d.groupby(keys + ["repeat"], sort=True, dropna=False, observed=True)["value"].mean().reset_index()


def summary(df: pd.DataFrame, metric: str, keys: list[str]) -> pd.DataFrame:
    """mean, std (over repeats) and repeat count per ``keys``."""
    r = repeat_means(df, metric, keys)
    return r.groupby(keys, sort=True, dropna=False,
                     observed=True)["value"].agg(mean="mean", std="std", repeats="count").reset_index()


class BaselineSpec(PlotOptions):
    algorithm: str = Field("lr_public", description="algorithm name of the baseline rows")
    n_public: int | None = Field(10, description="public rows of the baseline (None: any)")
    select: Literal["max", "mean"] = Field("max", description="best (max) or mean over the baseline variants")


def baseline_level(df: pd.DataFrame, metric: str, b: BaselineSpec) -> tuple[float, str]:
    """Level of the reference: per variant (label × dataset params) the mean over drugs, repeats and x, then the max
    (the "best 10-public-point baseline") or mean over variants.  Returns (level, description); the description
    names the dataset parameters only when several variants share the label."""
    d = df[(df["algorithm"] == b.algorithm) & (df["metric"] == metric)]
    if b.n_public is not None:
        d = d[d["n_public"] == b.n_public]
    if d.empty:
        raise UserError(f"plot baseline: no rows of algorithm {b.algorithm!r} with n_public={b.n_public} and metric "
                        f"{metric!r} in the results")
    per = d.groupby(["label", "dataset_params"], dropna=False, observed=True)["value"].mean()
    if b.select == "max":
        (label, dparams), level = per.idxmax(), float(per.max())
        shared = (per.index.get_level_values(0) == label).sum() > 1
        return level, f"“{label}”" + (f" ({str(dparams).replace(',', ', ')})" if shared and dparams else "")
    return float(per.mean()), f"the mean of {len(per)} {b.algorithm} variants"


def mean_text(df: pd.DataFrame, error: str, repeats: int) -> str:
    """'mean over 265 drugs, ± std over 20 repeats' (GDSC; 'subsets' for other datasets), or 'mean ± std over 20
    repeats' for a single subset."""
    n = int(df["subset"].nunique())
    if n <= 1:
        return spread_text("mean", error, repeats)
    noun = "drugs" if set(df["dataset"].unique()) == {"gdsc"} else "subsets"
    return f"mean over {n} {noun}, " + spread_text("mean", error, repeats).removeprefix("mean ")


# ----------------------------------------------------------------------------------------------------------------
# gdsc_curve
# ----------------------------------------------------------------------------------------------------------------
class GdscCurveOptions(PlotOptions):
    baselines: list[str] = Field(default_factory=list, description="labels drawn as horizontal dashed lines")
    error: Literal["std", "sem", "none"] = Field("std", description="error bars over Monte Carlo repeats")
    logx: bool = False
    ylim: list[float] | None = None
    legend: Literal["inside", "below", "outside"] = "below"
    """below the plot (one legend, columns as fit), inside it, or outside (= below: an outside legend widened the
    figure); a panelled figure has a legend under each panel"""
    panels: list[PanelSpec] = Field(default_factory=list)
    """groups of labels drawn side by side at page width with one y axis, at most 8 curves and a legend each;
    each panel is also written as its own column-width figure <name>_<panel name> (dpexp/plotting/facets.py)"""

    @model_validator(mode="after")
    def _panels(self) -> "GdscCurveOptions":
        check_panels(self.panels)
        return self


@register_plot(options=GdscCurveOptions, reads=reads_metric)
def gdsc_curve(df: pd.DataFrame, spec: Any, manifest: dict[str, Any], out_stem: Path,
               formats: list[str]) -> list[Path]:
    """Metric vs x (requested n_private by default) per label, mean ± std over repeats of the drug averages;
    ``options.baselines`` labels are drawn as horizontal dashed lines (their mean over x).  Another grid column that
    varies (e.g. ``privacy.epsilon: [2, 1]``) gets one panel per value: curves are never averaged over it."""
    o = GdscCurveOptions.model_validate(spec.options)
    df = requested_sizes(df)
    metric = spec.metric or "spearman"
    x = spec.x or "n_private"
    extra = varying_grid_columns(df[df["metric"] == metric], x)
    s = summary(df, metric, ["label", "dataset_params", *extra, x])
    looks = Looks(df, manifest)
    facets = list(s.groupby(extra, sort=True, observed=True)) if extra else [((), s)]
    if o.panels:
        return _panelled(df, s, facets, extra, spec, manifest, out_stem, formats, o, looks, metric, x)
    if extra:
        fig, axes = panels(len(facets))
    else:
        fig, ax = new_figure(o.size or auto_width(s.groupby(["label", "dataset_params"], observed=True).ngroups))
        axes = [ax]
    for ax, (key, sf) in zip(axes, facets):
        key = key if isinstance(key, tuple) else (key,)
        _draw_gdsc_panel(ax, sf, df, x, o, looks)
        decorate(ax, axis_label(x), axis_label(metric),
                 ", ".join(f"{SHORT.get(c, c)} = {number(v)}" for c, v in zip(extra, key)))
        if o.logx:
            ax.set_xscale("log")
            grid_ticks(ax, sf[x].to_numpy(float))
        if o.ylim:
            ax.set_ylim(*o.ylim)
    reps = int(s["repeats"].max()) if len(s) else 0
    subtitle = mean_text(df, o.error, reps)
    return finish_plot(fig, spec, manifest, out_stem, formats, looks=looks, subtitle=subtitle,
                       legend="inside" if o.legend == "inside" else "below")


def _draw_gdsc_panel(ax: Any, s: pd.DataFrame, df: pd.DataFrame, x: str, o: GdscCurveOptions, looks: Looks,
                     panel: Panel | None = None, home: dict[str, str] | None = None) -> None:
    """The curves of one panel of ``gdsc_curve`` (``s``: its summary rows).  ``panel``: the labels to draw, in
    its order, with its legend names; its references are drawn lighter and named "(as in (b))" after their home
    panel's letter (``home``: label -> letter)."""
    order = panel.curves if panel is not None else list(dict.fromkeys(df["label"].unique()))
    refs = set(panel.references) if panel is not None else set()
    # a label drawn on several dataset variants names them; one that runs on one dataset (algorithms[].datasets,
    # e.g. the paper-protocol and our curves of Fig. 2) says which in its label
    multi = s.groupby("label", observed=True)["dataset_params"].nunique()
    # colours by algorithm, line styles by variant (the paper-protocol and our curves of one method): Looks
    for (label, dparams), g in sorted(s.groupby(["label", "dataset_params"], sort=False, observed=True),
                                      key=lambda kv: order.index(kv[0][0]) if kv[0][0] in order else 0):
        if panel is not None and label not in order:
            continue
        g = g.sort_values(x)
        shown = panel.shown(label) if panel is not None else None
        if shown is not None and label in refs and home and label in home:
            shown += f" (as in ({home[label]}))"
        name = looks.name(label, shown)
        name += f" ({dparams})" if multi[label] > 1 and label not in o.baselines else ""
        light = {"alpha": 0.55, "linewidth": 1.0} if label in refs else {}
        if label in o.baselines:
            ax.axhline(float(g["mean"].mean()), label=name if "baseline" in name.lower() else f"{name} (baseline)",
                       **{"linewidth": 1.2, **looks.look(label, baseline=True), **light})
            continue
        err = {"std": g["std"].fillna(0), "sem": (g["std"] / np.sqrt(g["repeats"].clip(lower=1))).fillna(0),
               "none": 0 * g["std"].fillna(0)}[o.error].to_numpy(float)
        ax.errorbar(g[x].to_numpy(float), g["mean"].to_numpy(float), yerr=err, label=name,
                    **{**looks.look(label), **light})


def _panelled(df: pd.DataFrame, s: pd.DataFrame, facets: list[Any], extra: list[str], spec: Any,
              manifest: dict[str, Any], out_stem: Path, formats: list[str], o: GdscCurveOptions, looks: Looks,
              metric: str, x: str) -> list[Path]:
    """``options.panels``: one figure at page width, a column per panel (a row per value of another varying grid
    column), one y axis, a legend under each panel; then each panel as its own column-width figure
    ``<stem>_<panel name>`` on the same y range (dpexp/plotting/facets.py)."""
    present = [lb for lb in dict.fromkeys(df["label"].unique()) if lb in set(s["label"])]
    groups = assign(present, o.panels)
    home = {lb: p.letter for p in groups for lb in p.labels}
    reasons = looks.not_dp.reasons
    reps = int(s["repeats"].max()) if len(s) else 0
    subtitle = mean_text(df, o.error, reps)

    def draw(axes: list[Any], cols: list[Panel], first_col_ylabel: bool) -> None:
        for i, (key, sf) in enumerate(facets):
            key = key if isinstance(key, tuple) else (key,)
            where = ", ".join(f"{SHORT.get(c, c)} = {number(v)}" for c, v in zip(extra, key))
            for j, p in enumerate(cols):
                ax = axes[i * len(cols) + j]
                _draw_gdsc_panel(ax, sf, df, x, o, looks.within(p.references + p.labels), p, home)
                decorate(ax, axis_label(x) if i == len(facets) - 1 else "",
                         axis_label(metric) if j == 0 or not first_col_ylabel else "",
                         p.heading + (f", {where}" if where else ""))
                if o.logx:
                    ax.set_xscale("log")
                    grid_ticks(ax, sf[x].to_numpy(float))
                if o.ylim:
                    ax.set_ylim(*o.ylim)

    fig, axes = panels(len(groups) * len(facets), o.size or "page", shape=(len(facets), len(groups)), sharey=True)
    draw(axes, groups, True)
    ylim = axes[0].get_ylim()
    written = finish_plot(fig, spec, manifest, out_stem, formats, subtitle=subtitle, legend="panels",
                          notes=[facet_footnote(groups, reasons)])
    for p in groups:   # each panel alone, a column wide, on the shared y range
        fig, axes = panels(len(facets), "column", shape=(len(facets), 1), height=0.85 * style.COLUMN
                           if len(facets) == 1 else None)
        draw(axes, [p], False)
        for ax in axes:
            ax.set_ylim(*ylim)
        written += finish_plot(fig, spec, manifest, out_stem.with_name(f"{out_stem.name}_{p.name}"), formats,
                               subtitle=subtitle, notes=[facet_footnote([p], reasons)])
    return written


# ----------------------------------------------------------------------------------------------------------------
# heat maps
# ----------------------------------------------------------------------------------------------------------------
class TradeoffOptions(PlotOptions):
    y: str = Field(..., description="second axis: d, n_public or epsilon")
    algorithm: str = Field("rplr", description="the method whose improvement is shown")
    baseline: BaselineSpec = Field(default_factory=BaselineSpec)
    relative: bool = Field(True, description="(m - base)/base when the baseline is positive (True) or m - base")
    annotate: bool = True
    cmap: str = Field("PuOr", description="colour map (diverging: its middle is no improvement)")


def _method_label(df: pd.DataFrame, algorithm: str) -> str:
    labels = list(dict.fromkeys(df.loc[df["algorithm"] == algorithm, "label"]))
    return f"“{labels[0]}”" if len(labels) == 1 else algorithm


@register_plot(options=TradeoffOptions, reads=reads_metric)
def gdsc_tradeoff(df: pd.DataFrame, spec: Any, manifest: dict[str, Any], out_stem: Path,
                  formats: list[str]) -> list[Path]:
    """Fig. 3: improvement of ``algorithm`` over the best baseline, heat map over (x, y); relative only when the
    baseline is positive (module docstring)."""
    o = TradeoffOptions.model_validate(spec.options)
    df = requested_sizes(df)
    metric = spec.metric or "spearman"
    x = spec.x or "n_private"
    level, desc = baseline_level(df, metric, o.baseline)
    d = _params_columns(df[df["algorithm"] == o.algorithm], [c for c in (x, o.y) if c not in df.columns])
    if d.empty:
        raise UserError(f"gdsc_tradeoff: no rows of algorithm {o.algorithm!r}")
    s = summary(d, metric, [o.y, x])
    relative = o.relative and level > 0
    s["z"] = (s["mean"] - level) / (level if relative else 1.0)
    human = axis_label(metric).split(" (")[0]
    what = "relative improvement (m − b)/b" if relative else "improvement m − b"
    fig, ax, opt, written = heat_figure(s, x, o.y, "z", axis_label(x), axis_label(o.y), what,
                                        ".2f", o.cmap, o.annotate, "max", o.size or "column", center=0.0)
    notes = [f"m: mean {human} of {_method_label(df, o.algorithm)}; b: that of the best baseline, {desc} with "
             f"{o.baseline.n_public} public rows ({level:.3g})."
             + (f" Framed: the largest improvement, at {number(opt.x)}, {number(opt.y)} ({opt.value:.2f})."
                if opt is not None else "")]
    if o.relative and not relative:
        notes.append(f"The baseline's mean {metric} is {level:.3g} ≤ 0: the absolute difference m − b is shown, as "
                     "a ratio to a non-positive baseline has no meaning.")
    if o.annotate and not written:
        notes.append("Cells too small for their numbers: read the values from the colour bar.")
    subtitle = f"{'relative ' if relative else ''}improvement over the best baseline; {int(s['repeats'].max())} repeats"
    return finish_plot(fig, spec, manifest, out_stem, formats, subtitle=subtitle, notes=notes, legend="none")


def _param_label(df: pd.DataFrame, algorithm: str | None, name: str) -> str:
    """Axis label of a grid variable: a results column's label, or ``name: description`` of an algorithm
    parameter (the description before any parenthesis, from the algorithm's Params)."""
    if name in df.columns or name in ("n_private", "n_public", "epsilon", "d"):
        return axis_label(name)
    algos = [algorithm] if algorithm else list(dict.fromkeys(df["algorithm"].unique()))
    for a in algos:
        try:
            field = registry.get("algorithm", a).Params.model_fields.get(name)
        except (UserError, AttributeError):
            continue
        if field is not None and field.description:
            return f"{name}: {field.description.split(' (')[0]}".replace("epsilon", "ε")
    return name


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
    reps = int(s["repeats"].max())
    fig, ax, opt, written = heat_figure(s, spec.x, o.y, "mean", _param_label(df, o.algorithm, spec.x),
                                        _param_label(df, o.algorithm, o.y),
                                        f"{axis_label(metric)}\n(mean over {reps} repeats)", o.fmt, o.cmap,
                                        o.annotate, o.mark, o.size or "column")
    notes = ["Empty cells: grid points that were not run (invalid parameters, e.g. off the simplex)."] \
        if s["mean"].isna().any() or len(s) < s[spec.x].nunique() * s[o.y].nunique() else []
    if o.annotate and not written:
        notes.append("Cells too small for their numbers: read the values from the colour bar.")
    best = (f"{o.mark}imum (framed) at {spec.x} = {number(opt.x)}, {o.y} = {number(opt.y)}: "
            f"{format(opt.value, o.fmt)}" if opt is not None else "no values")
    return finish_plot(fig, spec, manifest, out_stem, formats, subtitle=f"{best}; {reps} repeats", notes=notes,
                       legend="none")


class ThresholdOptions(PlotOptions):
    metrics: list[str] = Field(default_factory=lambda: ["omega_x", "omega_y"])
    """metric rows (algorithm extras) drawn against x"""
    algorithm: str | None = "rplr"
    logx: bool = False


THRESHOLD_LABELS = {"omega_x": "ω_x (x threshold, multiples of σ_x)", "omega_y": "ω_y (y threshold, multiples of σ_y)",
                    "B_x": "B_x (x bound, data units)", "B_y": "B_y (y bound, data units)"}


@register_plot(options=ThresholdOptions)
def gdsc_thresholds(df: pd.DataFrame, spec: Any, manifest: dict[str, Any], out_stem: Path,
                    formats: list[str]) -> list[Path]:
    """Fig. 4: chosen thresholds (extras such as omega_x, omega_y) against x, mean ± std over repeats, one line per
    (metric, label)."""
    o = ThresholdOptions.model_validate(spec.options)
    df = requested_sizes(df)
    x = spec.x or "n_private"
    d = df if o.algorithm is None else df[df["algorithm"] == o.algorithm]
    looks = Looks(df, manifest)
    fig, ax = new_figure(o.size or "column")
    drawn, reps = 0, 0
    # several ε (e.g. Fig. 4's tables at ε = 1 and 2): one line per (label, ε), lighter below the largest ε
    eps = sorted(d["epsilon"].dropna().unique().tolist()) if "epsilon" in d and x != "epsilon" else []
    by_eps = len(eps) > 1
    for k, m in enumerate(o.metrics):
        if not (d["metric"] == m).any():
            continue
        s = summary(d, m, ["label", x] + (["epsilon"] if by_eps else []))
        reps = max(reps, int(s["repeats"].max()))
        labels = list(dict.fromkeys(s["label"]))
        for key, g in s.groupby(["label", "epsilon"] if by_eps else "label", sort=False, observed=True):
            label, e = key if by_eps else (key, None)
            g = g.sort_values(x)
            kw = looks.look(label)
            kw["linestyle"] = ["-", "--", ":", "-."][k % 4]
            kw["marker"] = ["o", "s", "^", "D"][k % 4]
            if by_eps and e != eps[-1]:
                kw["alpha"] = 0.45
            name = THRESHOLD_LABELS.get(m, m) + (f", {looks.name(label)}" if len(labels) > 1 else "")
            name += f", ε = {e:g}" if by_eps else ""
            ax.errorbar(g[x].to_numpy(float), g["mean"].to_numpy(float), yerr=g["std"].fillna(0).to_numpy(float),
                        label=name, **kw)
            drawn += 1
    if drawn == 0:
        raise UserError(f"gdsc_thresholds: none of the metrics {o.metrics} is in the results")
    if o.logx:
        ax.set_xscale("log")
    decorate(ax, axis_label(x), "chosen threshold")
    subtitle = (f"{_method_label(df, o.algorithm)}: " if o.algorithm else "") + mean_text(d, "std", reps)
    paths = finish_plot(fig, spec, manifest, out_stem, formats, looks=looks, subtitle=subtitle)
    table = threshold_table(d, o.metrics, x)
    if table:   # Fig. 4 is a table in the paper: the same numbers as text, one row per (method, ε)
        md = Path(str(out_stem) + ".md")
        md.write_text(table, encoding="utf-8")
        paths.append(md)
    return paths


def threshold_table(df: pd.DataFrame, metrics: list[str], x: str = "n_private") -> str:
    """Markdown: one row per (label, ε), one column per x, each cell the metrics' means joined by " / " (e.g.
    ω_x / ω_y, the paper's Fig. 4 tables); empty when a metric is missing."""
    d = df[df["metric"].isin(metrics)]
    if d.empty or any(not (d["metric"] == m).any() for m in metrics):
        return ""
    keys = ["label"] + (["epsilon"] if "epsilon" in d and x != "epsilon" else [])
    means = d.groupby(keys + [x, "metric"], sort=True, dropna=False,
                      observed=True)["value"].mean()   # non-private: ε NaN
    xs = sorted(d[x].dropna().unique().tolist())
    head = " / ".join({"omega_x": "ω_x", "omega_y": "ω_y"}.get(m, m) for m in metrics)
    lines = [f"| method{', ε' if len(keys) > 1 else ''} ({head}) | " + " | ".join(f"{v:g}" for v in xs) + " |",
             "|---" * (len(xs) + 1) + "|"]
    for key in dict.fromkeys(tuple(k) if isinstance(k, tuple) else (k,) for k in means.index.droplevel([x, "metric"])):
        name = key[0] + (f", ε = {key[1]:g}" if len(key) > 1 and key[1] == key[1] else "")
        cells = []
        for v in xs:
            got = [means.get(key + (v, m)) for m in metrics]
            cells.append("—" if any(g is None for g in got) else " / ".join(f"{g:.3g}" for g in got))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
