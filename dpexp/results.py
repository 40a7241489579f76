"""Reading results tables and the aggregation shared by ``dpexp plot`` and ``dpexp summarize``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpexp.errors import UserError

#: columns that identify a curve point besides the x variable and the varying grid columns
GROUP_COLUMNS = ["dataset", "dataset_params", "label", "metric"]
#: grid columns of a cell (requested sizes: a dataset may drop rows per subset, so the rows seen can vary)
GRID_COLUMNS = ["n_private_requested", "epsilon", "n_public_requested", "delta", "n_test_requested"]
X_CHOICES = ["n_private", "n_public", "n_test", "d", "subset", "dataset_params"] + GRID_COLUMNS
_SEEN = {"n_private": "n_private_requested", "n_public": "n_public_requested", "n_test": "n_test_requested"}


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
    if not (df["n_private_requested"] == "all").any():
        df["n_private_requested"] = pd.to_numeric(df["n_private_requested"])
    df["value"] = pd.to_numeric(df["value"], errors="coerce")
    return df


def read_manifest(results_dir: Path) -> dict[str, Any]:
    p = Path(results_dir) / "manifest.json"
    if not p.exists():
        raise UserError(f"{results_dir}: no manifest.json (not a dpexp results directory)")
    return json.loads(p.read_text())


def default_x(df: pd.DataFrame) -> str:
    """The first grid column with more than one value (requested n_private, then epsilon, ...)."""
    for col in GRID_COLUMNS:
        if df[col].nunique() > 1:
            return col
    return "n_private"


def varying_grid_columns(df: pd.DataFrame, x: str) -> list[str]:
    """Grid columns other than ``x`` that vary: each of their values is a separate curve, never averaged over."""
    skip = {x, _SEEN.get(x, x)}
    return [c for c in GRID_COLUMNS if c not in skip and df[c].nunique() > 1]


def aggregate(df: pd.DataFrame, x: str, metric: str | None = None) -> pd.DataFrame:
    """Mean/std/median/IQR over repeats per (dataset, label, metric, other varying grid values, x).

    Where a dataset has subsets (drugs, tracts) values are first averaged over subsets within a repeat, so the
    spread is over Monte Carlo repeats — the paper's convention.  Failed cells (NaN) are counted, not averaged.
    """
    if x not in df.columns:
        raise UserError(f"x must be one of {', '.join(X_CHOICES)}, got {x!r}")
    d = df if metric is None else df[df["metric"] == metric]
    if d.empty:
        have = ", ".join(sorted(df["metric"].unique()))
        raise UserError(f"metric must be one of the results' metrics ({have}), got {metric!r}")
    keys = GROUP_COLUMNS + varying_grid_columns(d, x) + [x]
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
