"""What ``dpexp summarize`` prints: the summary table of one experiment (``dpexp.results.aggregate``) with the curves
that are not DP marked by a dagger and explained in a footnote, and the one-line summary of an experiment used when
summarizing a folder of experiments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from dpexp import results
from dpexp.plotting.base import SHORT
from dpexp.plotting.privacy import DAGGER, NotDP, curve_privacy
from dpexp.plotting.titles import number, split_overrides


def table(df: pd.DataFrame, manifest: dict[str, Any], x: str | None = None,
          metric: str | None = None) -> tuple[pd.DataFrame, str]:
    """(the summary table, its footnote).  Columns: [dataset, dataset_params,] metric, label, other varying grid
    columns, x, mean, std, median, q25, q75, iqr, repeats, failed_rows, guarantee; labels of curves that are not DP
    end in a dagger and the footnote gives the reasons ('' when every curve is DP)."""
    x = x or results.default_x(df)
    agg = results.aggregate(df, x, metric)
    extra = [c for c in results.GRID_COLUMNS if c in agg.columns and c != x]
    cols = ["metric", "label", *extra, x, "mean", "std", "median", "q25", "q75", "iqr", "repeats", "failed_rows"]
    if agg["dataset_params"].nunique() > 1 or agg["dataset"].nunique() > 1:
        cols = ["dataset", "dataset_params"] + cols
    out = agg[cols].copy()
    guarantee = {c.label: c.guarantee for c in curve_privacy(df, manifest)}
    out["guarantee"] = out["label"].map(lambda lb: guarantee.get(lb, "unknown"))
    marks = NotDP(df, manifest)
    out["label"] = out["label"].map(marks.name)
    return out, marks.footnote()


STAT_COLUMNS = ["mean", "std", "median", "q25", "q75", "iqr", "repeats", "failed_rows", "guarantee"]


def combine(tables: list[pd.DataFrame]) -> pd.DataFrame:
    """The tables of several experiments in one frame: identity and grid columns first (in order of appearance),
    the statistics last; a column an experiment lacks is empty in its rows."""
    out = pd.concat(tables, ignore_index=True, sort=False)
    first = [c for c in out.columns if c not in STAT_COLUMNS]
    return out[first + [c for c in STAT_COLUMNS if c in out.columns]]


def markdown(tab: pd.DataFrame, footnote: str) -> str:
    """The table as Markdown, the footnote under it."""
    return results.to_markdown(tab) + (f"\n{footnote}\n" if footnote else "")


def headline(df: pd.DataFrame, manifest: dict[str, Any]) -> str:
    """'spearman at n_private_requested = 800: 0.012 (plr) … 0.31 (LR †)': the range of the mean of the first
    plotted metric over the curves at the largest x (no judgement of which end is better)."""
    plots = (manifest.get("config") or {}).get("plots") or []
    metric = next((p.get("metric") for p in plots if isinstance(p, dict) and p.get("metric")), None)
    metrics = list(dict.fromkeys(df["metric"].unique()))
    metric = metric if metric in metrics else (metrics[0] if metrics else None)
    if metric is None:
        return ""
    d = df[df["metric"] == metric]
    x = next((p.get("x") for p in plots if isinstance(p, dict) and p.get("metric") == metric and p.get("x")), None)
    x = results.REQUESTED.get(x, x) if x else None
    if x not in results.GRID_COLUMNS or d[x].nunique() < 2:
        x = results.default_x(d)
    agg = results.aggregate(d, x, metric)
    try:
        last = agg[x].max()
    except TypeError:   # 'all' among numbers
        last = agg[x].iloc[-1]
    at = agg[(agg[x] == last) & agg["mean"].notna()]
    if at.empty:
        return f"{metric}: no values"
    marks = NotDP(df, manifest)
    lo, hi = at.loc[at["mean"].idxmin()], at.loc[at["mean"].idxmax()]
    where = f" at {SHORT.get(x, x)} = {number(last)}" if agg[x].nunique() > 1 else ""
    if lo["label"] == hi["label"] and len(at) == 1:
        return f"{metric}{where}: {number(round(float(lo['mean']), 4))} ({marks.name(lo['label'])})"
    return (f"{metric}{where}: {number(round(float(lo['mean']), 4))} ({marks.name(lo['label'])}) … "
            f"{number(round(float(hi['mean']), 4))} ({marks.name(hi['label'])})")


def one_line(results_dir: Path, manifest: dict[str, Any], df: pd.DataFrame | None) -> str:
    """One line per experiment: its folder's name (and the experiment's, when another), status, fast/overrides,
    repeats, curves (how many not DP), failed cells, and the headline range (``headline``)."""
    folder, experiment = Path(results_dir).name, str(manifest.get("experiment") or "")
    name = folder if experiment in ("", folder) else f"{folder} (experiment {experiment})"
    fast, _, user = split_overrides(manifest)
    status = str(manifest.get("status") or "unknown")
    if df is None:
        return f"{name}: no results yet (status {status}) [{results_dir}]"
    labels = list(dict.fromkeys(df["label"].unique()))
    not_dp = sum(1 for lb in labels if lb in NotDP(df, manifest))
    failures = (manifest.get("failures") or {}).get("count", 0) if isinstance(manifest.get("failures"), dict) else 0
    bits = [status + (", --fast" if fast else "") + (f", --set {', '.join(user)}" if user else ""),
            _count(int(df["repeat"].nunique()), "repeat"), _count(len(labels), "curve")
            + (f" ({not_dp} not DP {DAGGER})" if not_dp else ""), _count(failures, "failed cell")]
    head = headline(df, manifest)
    return f"{name}: {'; '.join(bits)}" + (f"; {head}" if head else "") + f" [{results_dir}]"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"
