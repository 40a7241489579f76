"""Figure kinds of the DP simple-linear-regression study (Alabi et al. 2020), drawn from the results table only.

* ``slr_ecdf`` — ECDF over subsets (cells, tracts, bikeshare hours) of a per-subset metric, by default
  ``error_bound_se`` = Ĉ(68)/σ̂(p̂), one curve per algorithm, with the dotted "noise = standard error" line at 1
  (Figs 6, 7).  A subset's value is first averaged over repeats.  Panels: one per ``facet`` value
  (``dataset_params`` and ``epsilon`` by default when they vary).  The x axis spans every value (log axis), so no
  curve is cut; with ``xlim`` the share beyond each edge is marked.
* ``slr_output_ecdf`` — ECDF of the DP output p̃25 itself (Figs 8, 9): from metrics whose label starts with
  ``quantile_prefix`` (``output_quantile`` at many levels of one cell with many trials; label ``q05`` = level 5) or,
  with ``source: values``, from the values of ``metric`` (e.g. ``prediction``) over repeats.  The grey band is
  p̂ ± σ̂(p̂) and the "standard error" curve the Gaussian CDF N(p̂, σ̂²) (metrics ``ols_estimate``/``ols_se``).
  When the curves' spreads differ by orders of magnitude (ε = 0.01 beside ε = 1, or a method far wider than the
  others) a linear axis collapses all but the widest into one vertical line: ``scale: auto`` then draws
  p̃ − p̂ on an asinh axis (linear within ± σ̂, logarithmic beyond) that shows every curve whole; on a linear axis
  the share of each curve beyond the window is marked at the edges.
* ``slr_curve`` — mean (± s.e.m. over repeats) of a metric against ``x``: a results column (n_private, epsilon)
  or a dataset/algorithm parameter (sigma_x2, sigma_e2, x_new, theta, beta ...), or ``env`` = ε·n·σx²;
  panels by ``facet`` (Figs 10, 11, 16, 18).
* ``slr_sorted`` — per-subset values sorted by ``sort_by`` (default ``ols_se``), one dot per algorithm on the
  same vertical line, plus the sort metric itself (Fig 12).
* ``slr_failure`` — NoisyStats failure rate: ``mode: epsilon`` against ε for the subsets with the lowest and highest
  n·var(x) (Figs 13, 14); ``mode: sorted`` against the subsets sorted by ε·n·var(x), one series per ε (Fig 15).

Curves that are not DP (non-private references, ``oi_mos``) carry a dagger and a footnote (``dpexp.plotting.looks``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field

from dpexp.errors import UserError
from dpexp.plotting.base import PlotOptions, auto_width, axis_label, decorate, finish_plot, new_figure, panels
from dpexp.plotting.curve import grid_ticks
from dpexp.plotting.ecdf import CLIP_NOTE, FAILED_NOTE, ecdf, mark_beyond
from dpexp.plotting.looks import Looks
from dpexp.plotting.titles import plural
from dpexp.registry import register_plot
from dpexp.results import map_unique, parse_params

SLR_LABELS = {
    "error_bound": "Ĉ(68) of |p̃25 − p̂25|  (y units, y ∈ [0, 1])",
    "error_bound_se": "Ĉ(68) / σ̂(p̂25)  (privacy error in standard errors)",
    "error_bound_true": "Ĉ_true(68) of |p̃25 − p25|  (y units, y ∈ [0, 1])",
    "error_bound_true_se": "Ĉ_true(68) / σ̂(p̂25)",
    "failure_rate": "failure rate (share of trials returning ⊥)",
    "ols_se": "OLS standard error σ̂(p̂25) (Eq. 3)",
    "sigma_x2": "σx² (variance of x)",
    "sigma_e2": "σe² (noise variance)",
    "x_new": "x_new (prediction point)",
    "theta": "widening θ",
    "beta": "smooth-sensitivity β",
    "env": "ε·n·σx²",
}


def _label(name: str) -> str:
    return SLR_LABELS.get(name) or axis_label(name)


def _column(df: pd.DataFrame, x: str) -> pd.Series:
    """A results column, or a parameter parsed from dataset_params/params, or env = ε·n·σx²."""
    if x in df.columns:
        return df[x]
    if x == "env":
        s2 = map_unique(df["dataset_params"], lambda s: parse_params(s).get("sigma_x2", np.nan))
        return df["epsilon"].astype(float) * df["n_private"].astype(float) * s2.astype(float)
    dp = map_unique(df["dataset_params"], lambda s: parse_params(s).get(x, np.nan))
    ap = map_unique(df["params"], lambda s: parse_params(s).get(x, np.nan))
    col = dp.where(dp.notna(), ap)
    if col.isna().all():
        raise UserError(f"plot x/facet must be a results column or a dataset/algorithm parameter, got {x!r}")
    return col


def _where(d: pd.DataFrame, where: dict[str, Any]) -> pd.DataFrame:
    """Rows whose column/parameter equals each ``where`` value (numbers compared with a relative tolerance)."""
    for key, val in where.items():
        col = _column(d, key)
        if isinstance(val, (int, float)) and not isinstance(val, bool):
            num = pd.to_numeric(col, errors="coerce")
            d = d[np.isclose(num.to_numpy(float), float(val), rtol=1e-9, atol=0.0)]
        else:
            d = d[col.astype(str) == str(val)]
    return d


def _metric_rows(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    d = df[df["metric"] == metric]
    if d.empty:
        have = ", ".join(sorted(df["metric"].unique()))
        raise UserError(f"plot metric must be one of the results' metrics ({have}), got {metric!r}")
    return d


def _facet_values(d: pd.DataFrame, facet: str | None) -> list[tuple[str, pd.DataFrame]]:
    if facet is None or facet == "none":
        return [("", d)]
    col = _column(d, facet)
    name = {"env": "ε·n·σx²", "epsilon": "ε"}.get(facet, facet)
    out = []
    for v in sorted(col.dropna().unique(), key=lambda v: (str(type(v)), v)):
        if facet == "dataset_params":  # "source=simulated,state=IL" reads better without a prefix
            out.append((str(v).replace(",", ", ") or "(default parameters)", d[col == v]))
            continue
        out.append((f"{name} = {v:g}" if isinstance(v, (float, int)) else f"{name} = {v}", d[col == v]))
    return out


def _auto_facet(d: pd.DataFrame) -> str | None:
    for c in ("dataset_params", "epsilon", "dataset"):
        if d[c].nunique() > 1:
            return c
    return None


def _order(df: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(df["label"].unique()))


def _labels(d: pd.DataFrame, labels: list[str] | None) -> pd.DataFrame:
    """Only the rows of these algorithm labels (all when None)."""
    return d[d["label"].isin(labels)] if labels else d


def _facets(d: pd.DataFrame, facet: str | None, size: str | None = None
            ) -> tuple[Any, list[tuple[Any, str, pd.DataFrame]], str | None]:
    """One panel per value of ``facet`` ("auto": the first of dataset_params, ε, dataset that varies; None/"none":
    one panel): (figure, [(axes, panel title, rows)], the facet used).  One panel is a column wide, several a
    page (``size`` overrides)."""
    facet = _auto_facet(d) if facet == "auto" else facet
    values = _facet_values(d, facet)
    if len(values) == 1:
        fig, ax = new_figure(size or auto_width(d["label"].nunique()))
        axes = [ax]
    else:
        fig, axes = panels(len(values), width=size or "page")
    return fig, [(ax, title, rows) for ax, (title, rows) in zip(axes, values)], facet


# ------------------------------------------------------------------------------------------------------ ECDF over subsets
class EcdfOptions(PlotOptions):
    facet: str | None = Field("auto", description="results column/parameter giving one panel per value; none")
    ref_line: float | None = Field(1.0, description="x of the 'noise = standard error' line (None: no line)")
    logx: bool = True
    labels: list[str] | None = Field(None, description="only these algorithm labels (default: all)")
    xlim: list[float] | None = None
    xlabel: str | None = None


@register_plot(options=EcdfOptions)
def slr_ecdf(df: pd.DataFrame, spec: Any, manifest: dict[str, Any], out_stem: Path, formats: list[str]) -> list[Path]:
    """Empirical CDF over subsets of a per-subset metric (Alabi et al. Figs 6, 7); the x axis spans every value."""
    opts = EcdfOptions.model_validate(spec.options)
    metric = spec.metric or "error_bound_se"
    d = _labels(_metric_rows(df, metric), opts.labels)
    fig, cells, _ = _facets(d, opts.facet, opts.size)
    looks = Looks(df, manifest)
    order = _order(d)
    clipped = failed = hidden = False
    for ax, ptitle, pd_ in cells:
        per_subset = pd_.groupby(["label", "algorithm", "subset"], sort=False,
                                 observed=True)["value"].mean().reset_index()
        drawn = []
        for label in order:
            g = per_subset[per_subset["label"] == label]
            if g.empty:
                continue
            v, y = ecdf(g["value"].to_numpy(float))   # subsets where every trial failed keep the curve below 1
            if opts.logx:
                keep = v > 0                          # a log axis cannot show 0: counted in the note
                hidden |= bool((~keep).any())
                v, y = v[keep], y[keep]
            if len(v) == 0:
                continue
            failed |= bool(y[-1] < 1 - 1e-12) and not hidden
            (line,) = ax.step(v, y, where="post", label=looks.name(label), **_step_look(looks, label))
            drawn.append((v, y, line.get_color()))
        if opts.ref_line is not None:
            ax.axvline(opts.ref_line, linestyle=":", color="k", linewidth=1.0, label="noise = standard error")
        if opts.logx:
            ax.set_xscale("log")
        if opts.xlim:
            ax.set_xlim(*opts.xlim)
        else:  # every value on the axis: nothing is cut
            v = np.concatenate([c[0] for c in drawn]) if drawn else np.array([])
            if len(v):
                lo, hi = float(v.min()), float(v.max())
                if opts.ref_line is not None:
                    lo, hi = min(lo, opts.ref_line), max(hi, opts.ref_line)
                if opts.logx:
                    ax.set_xlim(lo / 1.4, hi * 1.4)
                elif hi > lo:
                    ax.set_xlim(lo - 0.03 * (hi - lo), hi + 0.03 * (hi - lo))
        clipped |= mark_beyond(ax, drawn)
        ax.set_ylim(0, 1.02)
        n_sub = pd_["subset"].nunique()
        decorate(ax, opts.xlabel or _label(metric), "fraction of subsets (ECDF)",
                 f"{ptitle}  ({n_sub} subsets)".strip())
    notes = [CLIP_NOTE if clipped else "", FAILED_NOTE.format(what="subsets") if failed else "",
             "Values ≤ 0 cannot be drawn on the log axis: their curves start above 0." if hidden else ""]
    return finish_plot(fig, spec, manifest, out_stem, formats, looks=looks,
                       subtitle=f"per-subset value averaged over {plural(int(d['repeat'].nunique()), 'repeat')}",
                       notes=notes)


def _step_look(looks: Looks, label: str) -> dict[str, Any]:
    """A curve's look for a step ECDF: colour and line style, no markers (hundreds of steps)."""
    kw = looks.look(label)
    kw.pop("marker", None)
    kw.pop("markerfacecolor", None)
    return kw


# ------------------------------------------------------------------------------------------------------ output ECDF
class OutputEcdfOptions(PlotOptions):
    source: Literal["quantiles", "values"] = "quantiles"
    quantile_prefix: str = Field("q", description="labels <prefix><level> of output_quantile metrics")
    facet: str | None = "auto"
    where: dict[str, Any] = Field(default_factory=dict, description="keep rows whose column/parameter equals")
    labels: list[str] | None = None
    xlim: list[float] | None = None
    scale: Literal["auto", "linear", "asinh"] = "auto"
    """x axis: linear in p̃; asinh in p̃ − p̂ (linear within ± σ̂, logarithmic beyond: curves whose spreads differ by
    orders of magnitude all show); auto: asinh when the curves' central 68% widths differ more than 30-fold"""
    window: Literal["se", "outputs"] = "se"
    """linear x range: p̂ ± window_se·σ̂ (se), or the central 68% of every drawn algorithm's outputs plus p̂ ± 3σ̂
    (outputs)"""
    window_se: float = Field(10.0, gt=0, description="half-width of the 'se' window in standard errors")
    xlabel: str = "DP estimate p̃25  (y units, y ∈ [0, 1])"


def _output_curves(d: pd.DataFrame, opts: OutputEcdfOptions) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(label, x, F) of each algorithm's output distribution in ``d`` (finite points only)."""
    out = []
    for label in _order(d):
        g = d[d["label"] == label]
        if opts.source == "quantiles":
            g = g.groupby("level", observed=True)["value"].mean().reset_index().sort_values("level")
            xs, ys = g["value"].to_numpy(float), g["level"].to_numpy(float)
        else:
            xs, ys = ecdf(g["value"].to_numpy(float))
        ok = np.isfinite(xs)
        if ok.any():
            out.append((label, xs[ok], ys[ok]))
    return out


def _decade_ticks(ax: Any, lo: float, hi: float, unit: float, most: int = 9) -> None:
    """Ticks of an asinh axis (linear width ``unit``): 0 and ± powers of ten, kept only where they are at least
    1/``most`` of the axis apart (the default locator crowds the linear part with overlapping labels)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    def pos(t: float) -> float:
        return float(np.arcsinh(t / unit))

    gap = (pos(hi) - pos(lo)) / (most + 1)
    k0 = int(np.floor(np.log10(unit))) - 1
    k1 = int(np.ceil(np.log10(max(abs(lo), abs(hi), unit))))
    ticks = [0.0]
    for sign, end in ((1.0, hi), (-1.0, lo)):
        last = 0.0
        for k in range(k0, k1 + 1):
            t = sign * 10.0 ** k
            if abs(t) <= abs(end) and abs(pos(t) - last) >= gap:
                ticks.append(t)
                last = pos(t)
    ax.xaxis.set_major_locator(FixedLocator(sorted(ticks)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda t, _p: "0" if t == 0 else f"{t:g}"))
    ax.xaxis.set_minor_locator(NullLocator())


def _central(xs: np.ndarray, ys: np.ndarray) -> tuple[float, float]:
    return float(np.interp(0.16, ys, xs)), float(np.interp(0.84, ys, xs))


@register_plot(options=OutputEcdfOptions)
def slr_output_ecdf(df: pd.DataFrame, spec: Any, manifest: dict[str, Any], out_stem: Path,
                    formats: list[str]) -> list[Path]:
    """ECDF of the DP output p̃ (Figs 8, 9) with the p̂ ± σ̂ band and the N(p̂, σ̂²) 'standard error' curve; the
    x axis shows every curve (asinh) or marks what lies beyond it (linear); see the module docstring."""
    from scipy.stats import norm

    opts = OutputEcdfOptions.model_validate(spec.options)
    if opts.source == "quantiles":
        pat = re.compile(rf"^{re.escape(opts.quantile_prefix)}(\d+(?:\.\d+)?)$")
        d = df[map_unique(df["metric"], lambda m: bool(pat.match(str(m))))].copy()
        if d.empty:
            raise UserError(f"slr_output_ecdf: no metrics labelled {opts.quantile_prefix}<level> in the results")
        d["level"] = map_unique(d["metric"], lambda m: float(pat.match(m).group(1)) / 100.0)
    else:
        d = _metric_rows(df, spec.metric or "prediction").copy()
    d = _labels(_where(d, opts.where), opts.labels)
    if d.empty:
        raise UserError(f"slr_output_ecdf: no rows left after options.where {opts.where} and labels")
    fig, cells, facet = _facets(d, opts.facet, opts.size)
    looks = Looks(df, manifest)
    panels_data = []
    for ax, ptitle, pd_ in cells:
        sel = df[(df["metric"].isin(["ols_estimate", "ols_se"]))]
        if facet and facet != "none":
            sel = sel[_column(sel, facet).isin(_column(pd_, facet).unique())]
        p_hat = float(sel[sel["metric"] == "ols_estimate"]["value"].mean())
        se = float(sel[sel["metric"] == "ols_se"]["value"].mean())
        panels_data.append((ax, ptitle, _output_curves(pd_, opts), p_hat, se))
    widths = [b - a for *_, curves, _p, _s in panels_data for _lb, xs, ys in curves for a, b in [_central(xs, ys)]]
    widths = [w for w in widths if w > 0]
    asinh = opts.scale == "asinh" or (opts.scale == "auto" and not opts.xlim and len(widths) > 1
                                      and max(widths) / min(widths) > 30)
    clipped = False
    for ax, ptitle, curves, p_hat, se in panels_data:
        has_ref = np.isfinite(p_hat) and np.isfinite(se) and se > 0
        shift = p_hat if (asinh and has_ref) else 0.0
        drawn = []
        for label, xs, ys in curves:
            (line,) = ax.step(xs - shift, ys, where="post", label=looks.name(label), **_step_look(looks, label))
            drawn.append((xs - shift, ys, line.get_color()))
        if has_ref:
            ax.axvspan(p_hat - se - shift, p_hat + se - shift, color="0.85", zorder=0, label="p̂ ± 1 standard error")
            grid = np.linspace(p_hat - 4 * se, p_hat + 4 * se, 200)
            ax.plot(grid - shift, norm.cdf(grid, p_hat, se), "k--", linewidth=1, label="standard error")
            ax.axvline(p_hat - shift, color="k", linewidth=0.8)
        lo_hi = [v for xs, _ys, _c in drawn for v in (xs.min(), xs.max())]
        if opts.xlim:
            ax.set_xlim(*opts.xlim)
        elif asinh:
            ax.set_xscale("asinh", linear_width=se if has_ref else 1e-3)
            if lo_hi:
                a, b = min(lo_hi), max(lo_hi)
                pad = 0.05 * (abs(a) + abs(b)) + (se if has_ref else 0)
                ax.set_xlim(a - pad, b + pad)
                _decade_ticks(ax, a - pad, b + pad, se if has_ref else 1e-3)
        elif opts.window == "outputs" and curves:
            cs = [_central(xs, ys) for _lb, xs, ys in curves]
            a, b = min(c[0] for c in cs), max(c[1] for c in cs)
            if has_ref:
                a, b = min(a, p_hat - 3 * se), max(b, p_hat + 3 * se)
            pad = 0.05 * (b - a) if b > a else 1e-3
            ax.set_xlim(a - pad, b + pad)
        elif lo_hi and has_ref:
            w = opts.window_se * se
            ax.set_xlim(max(min(lo_hi), p_hat - w), min(max(lo_hi), p_hat + w))
        clipped |= mark_beyond(ax, drawn)
        xlabel = ("p̃25 − p̂25: DP estimate minus the OLS estimate (asinh axis: linear within ± σ̂, "
                  "logarithmic beyond)" if asinh and has_ref else opts.xlabel)
        decorate(ax, xlabel, "empirical CDF over trials", ptitle)
    notes = [CLIP_NOTE if clipped else ""]
    trials = int((manifest.get("config") or {}).get("trials") or 0)
    reps = (f"distribution of the DP estimate over {plural(trials, 'trial')}" if opts.source == "quantiles" and trials
            else "distribution of the DP estimate over trials" if opts.source == "quantiles"
            else "distribution of the outputs over repeats")
    return finish_plot(fig, spec, manifest, out_stem, formats, looks=looks, subtitle=reps, notes=notes)


# ------------------------------------------------------------------------------------------------------ curves
class SlrCurveOptions(PlotOptions):
    facet: str | None = Field(None, description="one panel per value of this column/parameter")
    where: dict[str, Any] = Field(default_factory=dict, description="keep rows whose column/parameter equals")
    logx: bool = True
    logy: bool = True
    labels: list[str] | None = None
    ylim: list[float] | None = None
    xlabel: str | None = None
    ylabel: str | None = None


@register_plot(options=SlrCurveOptions)
def slr_curve(df: pd.DataFrame, spec: Any, manifest: dict[str, Any], out_stem: Path,
              formats: list[str]) -> list[Path]:
    """Mean ± s.e.m. over repeats of a metric against a column or parameter (Figs 10, 11, 16, 18)."""
    opts = SlrCurveOptions.model_validate(spec.options)
    metric = spec.metric or "error_bound_true_se"
    if not spec.x:
        raise UserError("slr_curve: plots[].x is required (a results column or a dataset/algorithm parameter)")
    d = _labels(_where(_metric_rows(df, metric), opts.where), opts.labels).copy()
    if d.empty:
        raise UserError(f"slr_curve: no {metric} rows left after options.labels/where")
    d["_x"] = pd.to_numeric(_column(d, spec.x), errors="coerce")
    d = d[d["_x"].notna()]
    x_in_algo = map_unique(d["params"], lambda s: spec.x in parse_params(s)).any()
    d["_line"] = map_unique(d["label"], lambda s: s.split("[")[0]) if x_in_algo else d["label"]
    line_label = d.groupby("_line", sort=False,
                           observed=True)["label"].first().to_dict()   # a label of the line, for its look
    fig, cells, _ = _facets(d, opts.facet, opts.size)
    looks = Looks(df, manifest)
    reps = 0
    for ax, ptitle, pd_ in cells:
        per_rep = pd_.groupby(["_line", "algorithm", "_x", "repeat"], sort=False,
                              observed=True)["value"].mean().reset_index()
        for line in dict.fromkeys(pd_["_line"]):
            g = per_rep[per_rep["_line"] == line]
            s = g.groupby("_x", observed=True)["value"].agg(["mean", "std", "count"]).reset_index().sort_values("_x")
            sem = (s["std"] / np.sqrt(s["count"].clip(lower=1))).fillna(0)
            ax.errorbar(s["_x"], s["mean"], yerr=sem, label=looks.name(line_label.get(line, line)) if not x_in_algo
                        else line, **looks.look(line_label.get(line, line)))
        if opts.logx:
            ax.set_xscale("log")
            grid_ticks(ax, pd_["_x"].to_numpy(float), max_ticks=11)   # the grid values, not decades only
        if opts.logy:
            ax.set_yscale("log")
        if opts.ylim:
            ax.set_ylim(*opts.ylim)
        reps = max(reps, int(pd_["repeat"].nunique()))
        decorate(ax, opts.xlabel or _label(spec.x), opts.ylabel or _label(metric), ptitle)
    return finish_plot(fig, spec, manifest, out_stem, formats, looks=looks,
                       subtitle=f"mean ± s.e.m. over {plural(reps, 'simulated dataset')}")


# ------------------------------------------------------------------------------------------------------ sorted by SE
class SortedOptions(PlotOptions):
    sort_by: str = Field("ols_se", description="metric ordering the subsets (drawn as a line)")
    labels: list[str] | None = None
    facet: str | None = "auto"
    logy: bool = True


@register_plot(options=SortedOptions)
def slr_sorted(df: pd.DataFrame, spec: Any, manifest: dict[str, Any], out_stem: Path,
               formats: list[str]) -> list[Path]:
    """Per-subset metric values with subsets sorted by ``sort_by`` (Fig 12: Ĉ(68) of exp vs widened
    DP Theil–Sen, bikeshare subsets sorted by their OLS standard error)."""
    opts = SortedOptions.model_validate(spec.options)
    metric = spec.metric or "error_bound"
    d = _labels(_metric_rows(df, metric), opts.labels)
    key = _metric_rows(df, opts.sort_by).groupby("subset", observed=True)["value"].mean().sort_values()
    rank = {s: i for i, s in enumerate(key.index)}
    fig, cells, _ = _facets(d, opts.facet, opts.size)
    looks = Looks(df, manifest)
    for ax, ptitle, pd_ in cells:
        per = pd_.groupby(["label", "algorithm", "subset"], sort=False, observed=True)["value"].mean().reset_index()
        for label in _order(pd_):
            g = per[per["label"] == label]
            kw = looks.look(label)
            kw["linestyle"] = "none"
            ax.plot(map_unique(g["subset"], lambda v: rank.get(v, np.nan)), g["value"], markersize=2.5,
                    label=looks.name(label), **kw)
        ax.plot(np.arange(len(key)), key.to_numpy(float), "k-", linewidth=1, label=_label(opts.sort_by))
        if opts.logy:
            ax.set_yscale("log")
        decorate(ax, f"subset, sorted by {_label(opts.sort_by)}", _label(metric), ptitle)
    return finish_plot(fig, spec, manifest, out_stem, formats, looks=looks,
                       subtitle=f"one dot per subset and algorithm; {len(key)} subsets")


# ------------------------------------------------------------------------------------------------------ failures
class FailureOptions(PlotOptions):
    mode: Literal["epsilon", "sorted"] = "epsilon"
    labels: list[str] | None = Field(None, description="algorithm labels (default: all with failures recorded)")
    subsets: list[str] | None = Field(None, description="mode epsilon: these subsets (default lowest/highest nvar)")
    epsilons: list[float] | None = Field(None, description="mode sorted: only these ε (default: all)")


@register_plot(options=FailureOptions)
def slr_failure(df: pd.DataFrame, spec: Any, manifest: dict[str, Any], out_stem: Path,
                formats: list[str]) -> list[Path]:
    """Failure rate against ε for low/high n·var(x) subsets (Figs 13, 14) or over subsets sorted by ε·n·var(x)
    (Fig 15). Needs the ``failure_rate`` and ``n_var_x`` metrics."""
    opts = FailureOptions.model_validate(spec.options)
    fr = _metric_rows(df, spec.metric or "failure_rate")
    fr = _labels(fr, opts.labels)
    nvar = _metric_rows(df, "n_var_x").groupby(["dataset_params", "subset"], observed=True)["value"].mean()
    groups = list(fr.groupby("dataset_params", sort=False, observed=True))
    n_panels = len(groups) * (2 if opts.mode == "epsilon" else 1)
    fig, axes = panels(n_panels, width=opts.size or "page") if n_panels > 1 else \
        (lambda f: (f[0], [f[1]]))(new_figure(opts.size or "column"))
    looks = Looks(df, manifest)
    ai = 0
    eps_colours: dict[float, int] = {}
    for dparams, g in groups:
        nv = nvar.loc[dparams] if dparams in nvar.index.get_level_values(0) else pd.Series(dtype=float)
        tag = str(dparams).replace(",", ", ") or str(g["dataset"].iloc[0])
        if opts.mode == "epsilon":
            chosen = opts.subsets or ([nv.idxmin(), nv.idxmax()] if len(nv) else sorted(g["subset"].unique())[:2])
            for s in chosen:
                ax = axes[ai]
                ai += 1
                gs = g[g["subset"] == s]
                for label in _order(gs):
                    r = gs[gs["label"] == label].groupby("epsilon", observed=True)["value"].mean()
                    ax.plot(r.index, r.to_numpy(float), label=looks.name(label), **looks.look(label))
                ax.set_xscale("log", base=2)
                ax.set_ylim(-0.02, 1.02)
                n_s = int(gs["n_private"].iloc[0]) if len(gs) else 0
                decorate(ax, "privacy budget ε", _label("failure_rate"),
                         f"{tag}: {s}\nn = {n_s}, n·var(x) = {nv.get(s, float('nan')):.4g}")
        else:
            ax = axes[ai]
            ai += 1
            for (label, eps), ge in g.groupby(["label", "epsilon"], sort=True, observed=True):
                if opts.epsilons and not np.isclose(opts.epsilons, eps).any():
                    continue
                r = ge.groupby("subset", observed=True)["value"].mean()
                env = eps * nv.reindex(r.index).to_numpy(float)
                o = np.argsort(env)
                k = eps_colours.setdefault(float(eps), len(eps_colours))
                from dpexp.plotting import style

                ax.plot(env[o], r.to_numpy(float)[o], ".", markersize=3, color=style.PALETTE[k % len(style.PALETTE)],
                        label=f"{looks.name(label)}, ε = {eps:g}")
            ax.set_xscale("log")
            decorate(ax, "ε·n·var(x) of the subset (sorted)", _label("failure_rate"), tag)
    return finish_plot(fig, spec, manifest, out_stem, formats, looks=looks)
