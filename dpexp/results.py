"""Reading results tables and the aggregation shared by ``dpexp plot`` and ``dpexp summarize``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpexp.errors import UserError

#: columns that identify a curve point besides the x variable
GROUP_COLUMNS = ["dataset", "dataset_params", "label", "metric"]
X_CHOICES = ["n_private", "n_private_requested", "n_public", "n_test", "epsilon", "delta", "d", "dataset_params",
             "subset"]


def results_file(results_dir: Path) -> Path:
    for name in ("results.csv", "results.csv.gz"):
        p = Path(results_dir) / name
        if p.exists():
            return p
    raise UserError(f"{results_dir}: no results.csv or results.csv.gz (run `dpexp run CONFIG --out {results_dir}`)")


def read_results(results_dir: Path) -> pd.DataFrame:
    """The tidy results table with typed columns (``value`` NaN for failed cells)."""
    path = results_file(results_dir)
    df = pd.read_csv(path, dtype={"dataset_params": str, "params": str, "subset": str, "error": str,
                                  "label": str, "n_private_requested": str}, keep_default_na=False,
                     na_values={"value": [""]})
    if "n_private_requested" in df.columns and not (df["n_private_requested"] == "all").any():
        df["n_private_requested"] = pd.to_numeric(df["n_private_requested"])
    df["value"] = pd.to_numeric(df["value"], errors="coerce")
    return df


def read_manifest(results_dir: Path) -> dict[str, Any]:
    p = Path(results_dir) / "manifest.json"
    if not p.exists():
        raise UserError(f"{results_dir}: no manifest.json (not a dpexp results directory)")
    return json.loads(p.read_text())


def default_x(df: pd.DataFrame) -> str:
    """The varying size/privacy column (first of n_private, epsilon, ... with more than one value).

    When datasets drop rows per subset (GDSC drops untested cell lines per drug) the rows seen vary by subset, so the
    requested size is the x variable; otherwise the two are the same.
    """
    if "n_private_requested" in df.columns and df["n_private_requested"].nunique() > 1 and \
            df["n_private"].nunique() > df["n_private_requested"].nunique():
        return "n_private_requested"
    for col in ["n_private", "epsilon", "n_public", "d", "delta", "n_test"]:
        if df[col].nunique() > 1:
            return col
    return "n_private"


def aggregate(df: pd.DataFrame, x: str, metric: str | None = None) -> pd.DataFrame:
    """Mean/std/median/IQR over repeats per (dataset, label, metric, x).

    Where a dataset has subsets (drugs, tracts) values are first averaged over subsets within a repeat, so the
    spread is over Monte Carlo repeats — the paper's convention.  Failed cells (NaN) are counted, not averaged.
    """
    if x not in df.columns:
        raise UserError(f"x must be one of {', '.join(X_CHOICES)}, got {x!r}")
    d = df if metric is None else df[df["metric"] == metric]
    if d.empty:
        have = ", ".join(sorted(df["metric"].unique()))
        raise UserError(f"metric must be one of the results' metrics ({have}), got {metric!r}")
    keys = GROUP_COLUMNS + [x]
    per_repeat = d.groupby(keys + ["repeat"], sort=True, dropna=False)["value"].mean().reset_index()
    g = per_repeat.groupby(keys, sort=True, dropna=False)["value"]
    out = g.agg(mean="mean", std="std", median="median",
                q25=lambda v: np.nanquantile(v, 0.25) if v.notna().any() else np.nan,
                q75=lambda v: np.nanquantile(v, 0.75) if v.notna().any() else np.nan,
                repeats="count").reset_index()
    out["iqr"] = out["q75"] - out["q25"]
    failed = d[d["value"].isna()].groupby(keys, dropna=False).size().rename("failed_rows")
    out = out.merge(failed.reset_index(), on=keys, how="left")
    out["failed_rows"] = out["failed_rows"].fillna(0).astype(int)
    return out


def to_markdown(df: pd.DataFrame, floatfmt: str = ".4g") -> str:
    """A GitHub-flavoured Markdown table (no extra dependency)."""
    cols = list(df.columns)

    def cell(v: Any) -> str:
        if isinstance(v, (float, np.floating)):
            return "" if np.isnan(v) else format(float(v), floatfmt)
        return str(v)

    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(cell(v) for v in row) + " |")
    return "\n".join(lines) + "\n"
