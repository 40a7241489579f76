"""Figure kinds of the DP simple-linear-regression study (Alabi et al. 2020), drawn from the results table only.

* ``slr_ecdf`` — ECDF over subsets (cells, tracts, bikeshare hours) of a per-subset metric, by default
  ``error_bound_se`` = Ĉ(68)/σ̂(p̂), one curve per algorithm, with the dotted "noise = standard error" line at 1
  (Figs 6, 7).  A subset's value is first averaged over repeats.  Panels: one per ``facet`` value
  (``dataset_params`` and ``epsilon`` by default when they vary).
* ``slr_output_ecdf`` — ECDF of the DP output p̃25 itself (Figs 8, 9): from metrics whose label starts with
  ``quantile_prefix`` (``output_quantile`` at many levels of one cell with many trials; label ``q05`` = level 5) or,
  with ``source: values``, from the values of ``metric`` (e.g. ``prediction``) over repeats.  The grey band is
  p̂ ± σ̂(p̂) and the "standard error" curve the Gaussian CDF N(p̂, σ̂²) (metrics ``ols_estimate``/``ols_se``).
* ``slr_curve`` — mean (± s.e.m. over repeats) of a metric against ``x``: a results column (n_private, epsilon)
  or a dataset/algorithm parameter (sigma_x2, sigma_e2, x_new, theta, beta ...), or ``env`` = ε·n·σx²;
  panels by ``facet`` (Figs 10, 11, 16, 18).
* ``slr_sorted`` — per-subset values sorted by ``sort_by`` (default ``ols_se``), one dot per algorithm on the
  same vertical line, plus the sort metric itself (Fig 12).
* ``slr_failure`` — NoisyStats failure rate: ``mode: epsilon`` against ε for the subsets with the lowest and highest
  n·var(x) (Figs 13, 14); ``mode: sorted`` against the subsets sorted by ε·n·var(x), one series per ε (Fig 15).

Algorithms with ``formally_dp = False`` in the manifest (``oi_mos``) get "(not DP)" appended to their legend name.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field

from dpexp.errors import UserError
from dpexp.plotting.base import PlotOptions, axis_label, decorate, panels, save_with_title
from dpexp.plotting.ecdf import ecdf
from dpexp.registry import register_plot
from dpexp.results import parse_params

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


def _not_dp(manifest: dict[str, Any]) -> set[str]:
    """Labels/names of algorithms the manifest marks as not formally DP."""
    algos = manifest.get("algorithms") or []
    out = set()
    if isinstance(algos, list):
        for a in algos:
            if isinstance(a, dict) and a.get("formally_dp") is False:
                out.update({str(a.get("label", "")), str(a.get("name", ""))})
    elif isinstance(algos, dict):
        for k, a in algos.items():
            if isinstance(a, dict) and a.get("formally_dp") is False:
                out.add(str(k))
    return out


def _legend_name(label: str, algorithm: str, not_dp: set[str]) -> str:
    return f"{label} (not DP)" if (label in not_dp or algorithm in not_dp) else label


def _column(df: pd.DataFrame, x: str) -> pd.Series:
    """A results column, or a parameter parsed from dataset_params/params, or env = ε·n·σx²."""
    if x in df.columns:
        return df[x]
    if x == "env":
        s2 = df["dataset_params"].map(lambda s: parse_params(s).get("sigma_x2", np.nan))
        return df["epsilon"].astype(float) * df["n_private"].astype(float) * s2.astype(float)
    dp = df["dataset_params"].map(lambda s: parse_params(s).get(x, np.nan))
    ap = df["params"].map(lambda s: parse_params(s).get(x, np.nan))
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
    return list(dict.fromkeys(df["label"]))


def _labels(d: pd.DataFrame, labels: list[str] | None) -> pd.DataFrame:
    """Only the rows of these algorithm labels (all when None)."""
    return d[d["label"].isin(labels)] if labels else d


def _facets(d: pd.DataFrame, facet: str | None, width: float = 5.2
            ) -> tuple[Any, list[tuple[Any, str, pd.DataFrame]], str | None]:
    """One panel per value of ``facet`` ("auto": the first of dataset_params, ε, dataset that varies; None/"none":
    one panel): (figure, [(axes, panel title, rows)], the facet used)."""
    facet = _auto_facet(d) if facet == "auto" else facet
    values = _facet_values(d, facet)
    fig, axes = panels(len(values), width=width)
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
    """Empirical CDF over subsets of a per-subset metric (Alabi et al. Figs 6, 7)."""
    opts = EcdfOptions.model_validate(spec.options)
    metric = spec.metric or "error_bound_se"
    d = _labels(_metric_rows(df, metric), opts.labels)
    fig, cells, _ = _facets(d, opts.facet)
    not_dp = _not_dp(manifest)
    order = _order(d)
    for ax, ptitle, pd_ in cells:
        per_subset = pd_.groupby(["label", "algorithm", "subset"], sort=False)["value"].mean().reset_index()
        for label in order:
            g = per_subset[per_subset["label"] == label]
            if g.empty:
                continue
            v, y = ecdf(g["value"].to_numpy(float))   # subsets where every trial failed keep the curve below 1
            if len(v) == 0:
                continue
            finite = np.isfinite(v)
            ax.step(v[finite], y[finite], where="post",
                    label=_legend_name(label, str(g["algorithm"].iloc[0]), not_dp))
        if opts.ref_line is not None:
            ax.axvline(opts.ref_line, linestyle=":", color="k", linewidth=1.2, label="noise = standard error")
        if opts.logx:
            ax.set_xscale("log")
        if opts.xlim:
            ax.set_xlim(*opts.xlim)
        else:  # the bulk of the curves: 0.5th to 99th percentile of the finite values (outliers off-axis)
            v = pd_["value"].to_numpy(float)
            v = v[np.isfinite(v) & (v > 0)] if opts.logx else v[np.isfinite(v)]
            if len(v):
                lo, hi = np.percentile(v, 0.5), np.percentile(v, 99)
                if opts.logx:
                    ax.set_xlim(lo / 1.5, max(hi * 1.5, (opts.ref_line or 0) * 2))
                elif hi > lo:
                    ax.set_xlim(lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo))
        ax.set_ylim(0, 1.02)
        n_sub = pd_["subset"].nunique()
        decorate(ax, opts.xlabel or _label(metric), "fraction of subsets (ECDF)",
                 f"{ptitle}  ({n_sub} subsets)".strip())
    return save_with_title(fig, spec, manifest, out_stem, formats)


# ------------------------------------------------------------------------------------------------------ output ECDF
class OutputEcdfOptions(PlotOptions):
    source: Literal["quantiles", "values"] = "quantiles"
    quantile_prefix: str = Field("q", description="labels <prefix><level> of output_quantile metrics")
    facet: str | None = "auto"
    labels: list[str] | None = None
    xlim: list[float] | None = None
    window: Literal["se", "outputs"] = Field("se", description="x range: p̂ ± window_se·σ̂ (se), or the central "
                                             "68% of every drawn algorithm's outputs plus p̂ ± 3σ̂ (outputs)")
    window_se: float = Field(10.0, gt=0, description="half-width of the 'se' window in standard errors")
    xlabel: str = "DP estimate p̃25  (y units, y ∈ [0, 1])"


@register_plot(options=OutputEcdfOptions)
def slr_output_ecdf(df: pd.DataFrame, spec: Any, manifest: dict[str, Any], out_stem: Path,
                    formats: list[str]) -> list[Path]:
    """ECDF of the DP output p̃ (Figs 8, 9) with the p̂ ± σ̂ band and the N(p̂, σ̂²) 'standard error' curve."""
    from scipy.stats import norm

    opts = OutputEcdfOptions.model_validate(spec.options)
    if opts.source == "quantiles":
        pat = re.compile(rf"^{re.escape(opts.quantile_prefix)}(\d+(?:\.\d+)?)$")
        d = df[df["metric"].map(lambda m: bool(pat.match(str(m))))].copy()
        if d.empty:
            raise UserError(f"slr_output_ecdf: no metrics labelled {opts.quantile_prefix}<level> in the results")
        d["level"] = d["metric"].map(lambda m: float(pat.match(m).group(1)) / 100.0)
    else:
        d = _metric_rows(df, spec.metric or "prediction").copy()
    d = _labels(d, opts.labels)
    fig, cells, facet = _facets(d, opts.facet)
    not_dp = _not_dp(manifest)
    for ax, ptitle, pd_ in cells:
        lo_hi, central = [], []
        for label in _order(pd_):
            g = pd_[pd_["label"] == label]
            if opts.source == "quantiles":
                g = g.groupby("level")["value"].mean().reset_index().sort_values("level")
                xs, ys = g["value"].to_numpy(float), g["level"].to_numpy(float)
            else:
                xs, ys = ecdf(g["value"].to_numpy(float))
            ok = np.isfinite(xs)
            if ok.any():
                ax.step(xs[ok], ys[ok], where="post",
                        label=_legend_name(label, str(g.get("algorithm", pd.Series([label])).iloc[0])
                                           if "algorithm" in g else label, not_dp))
                lo_hi += [xs[ok].min(), xs[ok].max()]
                central += [np.interp(0.16, ys[ok], xs[ok]), np.interp(0.84, ys[ok], xs[ok])]
        sel = df[(df["metric"].isin(["ols_estimate", "ols_se"]))]
        if facet and facet != "none":
            sel = sel[_column(sel, facet).isin(_column(pd_, facet).unique())]
        p_hat = sel[sel["metric"] == "ols_estimate"]["value"].mean()
        se = sel[sel["metric"] == "ols_se"]["value"].mean()
        if np.isfinite(p_hat) and np.isfinite(se) and se > 0:
            ax.axvspan(p_hat - se, p_hat + se, color="0.85", zorder=0, label="p̂ ± 1 standard error")
            grid = np.linspace(p_hat - 4 * se, p_hat + 4 * se, 200)
            ax.plot(grid, norm.cdf(grid, p_hat, se), "k--", linewidth=1, label="standard error")
            ax.axvline(p_hat, color="k", linewidth=0.8)
        if opts.xlim:
            ax.set_xlim(*opts.xlim)
        elif opts.window == "outputs" and central:
            a, b = min(central), max(central)
            if np.isfinite(se) and se > 0:
                a, b = min(a, p_hat - 3 * se), max(b, p_hat + 3 * se)
            pad = 0.05 * (b - a) if b > a else 1e-3
            ax.set_xlim(a - pad, b + pad)
        elif lo_hi and np.isfinite(se) and se > 0:
            w = opts.window_se * se
            ax.set_xlim(max(min(lo_hi), p_hat - w), min(max(lo_hi), p_hat + w))
        decorate(ax, opts.xlabel, "empirical CDF over trials", ptitle)
    return save_with_title(fig, spec, manifest, out_stem, formats)


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
    x_in_algo = d["params"].map(lambda s: spec.x in parse_params(s)).any()
    d["_line"] = d["label"].map(lambda s: s.split("[")[0]) if x_in_algo else d["label"]
    fig, cells, _ = _facets(d, opts.facet)
    not_dp = _not_dp(manifest)
    for ax, ptitle, pd_ in cells:
        per_rep = pd_.groupby(["_line", "algorithm", "_x", "repeat"], sort=False)["value"].mean().reset_index()
        for line in dict.fromkeys(pd_["_line"]):
            g = per_rep[per_rep["_line"] == line]
            s = g.groupby("_x")["value"].agg(["mean", "std", "count"]).reset_index().sort_values("_x")
            sem = (s["std"] / np.sqrt(s["count"].clip(lower=1))).fillna(0)
            ax.errorbar(s["_x"], s["mean"], yerr=sem, marker="o", markersize=3, capsize=2,
                        label=_legend_name(line, str(g["algorithm"].iloc[0]), not_dp))
        if opts.logx:
            ax.set_xscale("log")
            xv = np.sort(pd_["_x"].unique())
            xv = xv[xv > 0]
            if len(xv) and xv.max() / xv.min() < 50:  # < 2 decades: label the grid values, no crowded minors
                from matplotlib.ticker import FixedLocator, FormatStrFormatter, NullFormatter
                ax.xaxis.set_major_locator(FixedLocator(xv))
                ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))
                ax.xaxis.set_minor_formatter(NullFormatter())
        if opts.logy:
            ax.set_yscale("log")
        if opts.ylim:
            ax.set_ylim(*opts.ylim)
        reps = int(pd_["repeat"].nunique())
        decorate(ax, opts.xlabel or _label(spec.x), opts.ylabel or _label(metric),
                 f"{ptitle}  (mean ± s.e.m. over {reps} datasets)".strip())
    return save_with_title(fig, spec, manifest, out_stem, formats)


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
    key = _metric_rows(df, opts.sort_by).groupby("subset")["value"].mean().sort_values()
    rank = {s: i for i, s in enumerate(key.index)}
    fig, cells, _ = _facets(d, opts.facet, width=7.0)
    not_dp = _not_dp(manifest)
    for ax, ptitle, pd_ in cells:
        per = pd_.groupby(["label", "algorithm", "subset"], sort=False)["value"].mean().reset_index()
        for label in _order(pd_):
            g = per[per["label"] == label]
            ax.plot(g["subset"].map(rank), g["value"], ".", markersize=4,
                    label=_legend_name(label, str(g["algorithm"].iloc[0]), not_dp))
        ax.plot(np.arange(len(key)), key.to_numpy(float), "k-", linewidth=1, label=_label(opts.sort_by))
        if opts.logy:
            ax.set_yscale("log")
        decorate(ax, f"subset (index), sorted by {_label(opts.sort_by)}", _label(metric), ptitle)
    return save_with_title(fig, spec, manifest, out_stem, formats)


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
    nvar = _metric_rows(df, "n_var_x").groupby(["dataset_params", "subset"])["value"].mean()
    groups = list(fr.groupby("dataset_params", sort=False))
    fig, axes = panels(len(groups) * (2 if opts.mode == "epsilon" else 1))
    ai = 0
    for dparams, g in groups:
        nv = nvar.loc[dparams] if dparams in nvar.index.get_level_values(0) else pd.Series(dtype=float)
        tag = f"{g['dataset'].iloc[0]} {dparams}".strip()
        if opts.mode == "epsilon":
            chosen = opts.subsets or ([nv.idxmin(), nv.idxmax()] if len(nv) else sorted(g["subset"].unique())[:2])
            for s in chosen:
                ax = axes[ai]
                ai += 1
                gs = g[g["subset"] == s]
                for label in _order(gs):
                    r = gs[gs["label"] == label].groupby("epsilon")["value"].mean()
                    ax.plot(r.index, r.to_numpy(float), "o-", markersize=3, label=label)
                ax.set_xscale("log", base=2)
                ax.set_ylim(-0.02, 1.02)
                n_s = int(gs["n_private"].iloc[0]) if len(gs) else 0
                decorate(ax, "privacy budget ε", _label("failure_rate"),
                         f"{tag}: {s}, n = {n_s}, n·var(x) = {nv.get(s, float('nan')):.4g}", title_size=8)
        else:
            ax = axes[ai]
            ai += 1
            for (label, eps), ge in g.groupby(["label", "epsilon"], sort=True):
                if opts.epsilons and not np.isclose(opts.epsilons, eps).any():
                    continue
                r = ge.groupby("subset")["value"].mean()
                env = eps * nv.reindex(r.index).to_numpy(float)
                o = np.argsort(env)
                ax.plot(env[o], r.to_numpy(float)[o], ".", markersize=3, label=f"{label}, ε = {eps:g}")
            ax.set_xscale("log")
            decorate(ax, "ε·n·var(x) of the subset (sorted)", _label("failure_rate"), tag)
    return save_with_title(fig, spec, manifest, out_stem, formats)


