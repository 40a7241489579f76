"""The results schema (one named record, ``Row``), reading results tables, and the aggregation shared by
``dpexp plot`` and ``dpexp summarize``."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from dpexp.errors import UserError


#: version of the results format; a run directory written with another version is never resumed into
#: (1: before the guarantee columns; 2: ``guarantee`` … ``privacy_note`` after ``delta``)
SCHEMA_VERSION = 2


class Row(NamedTuple):
    """One row of ``results.csv``: one metric of one cell (tidy long format).

    ``epsilon``/``delta`` are the budget the cell *asked for*; ``guarantee`` (pure, approx, zcdp or none),
    ``epsilon_spent``, ``delta_spent``, ``rho_spent`` (NaN where not applicable) and ``privacy_note`` are what the
    run *spent*, derived from the mechanisms it called (``Output.guarantee``, docs/privacy.md), with the dataset's
    preprocessing statement; a ``none`` row says why in ``privacy_note``.  ``n_*`` and ``d`` are the sizes the
    algorithm actually saw; the ``*_requested`` fields hold the grid values asked for ("all" for whole datasets).
    ``value`` is NaN and ``error`` holds the message when the cell (or this metric) failed; ``seed_key`` identifies
    the cell's noise stream (``dpexp.rng.key_hex``; empty in secure noise mode, where no seed regenerates it).
    """

    experiment: str
    dataset: str
    dataset_params: str
    subset: str
    algorithm: str
    label: str
    params: str
    epsilon: float
    delta: float
    guarantee: str
    epsilon_spent: float
    delta_spent: float
    rho_spent: float
    privacy_note: str
    n_private: int
    n_public: int
    n_test: int
    d: int
    repeat: int
    trials: int
    n_private_requested: int | str
    n_public_requested: int
    n_test_requested: int
    metric: str
    value: float
    seed_key: str
    error: str


#: the header of results.csv, in order
COLUMNS: list[str] = list(Row._fields)
#: the fields that identify a cell: failures.csv lists each failed cell once with these and its error
CELL_COLUMNS: list[str] = ["experiment", "dataset", "dataset_params", "subset", "algorithm", "label", "params",
                           "epsilon", "delta", "n_private", "n_public", "n_test", "d", "repeat"]
FAILURE_COLUMNS: list[str] = CELL_COLUMNS + ["error"]
_CELL_INDEX = [COLUMNS.index(c) for c in CELL_COLUMNS]


def cell_of(fields: list[str]) -> tuple[str, ...]:
    """The cell-identifying fields (``CELL_COLUMNS``) of one results row given as its list of CSV fields."""
    return tuple(fields[i] for i in _CELL_INDEX)


#: columns that identify a curve point besides the x variable and the varying grid columns
GROUP_COLUMNS = ["dataset", "dataset_params", "label", "metric"]
#: grid columns of a cell (requested sizes: a dataset may drop rows per subset, so the rows seen can vary)
GRID_COLUMNS = ["n_private_requested", "epsilon", "n_public_requested", "delta", "n_test_requested"]
X_CHOICES = ["n_private", "n_public", "n_test", "d", "subset", "dataset_params"] + GRID_COLUMNS
#: the grid column holding the requested value of a seen size (GDSC drops lines per drug: seen sizes vary)
REQUESTED = {"n_private": "n_private_requested", "n_public": "n_public_requested", "n_test": "n_test_requested"}


def results_file(results_dir: Path) -> Path:
    for name in ("results.csv", "results.csv.gz"):
        p = Path(results_dir) / name
        if p.exists():
            return p
    raise UserError(f"{results_dir}: no results.csv or results.csv.gz (run `dpexp run CONFIG --out {results_dir}`)")


def read_results(results_dir: Path) -> pd.DataFrame:
    """The tidy results table with typed columns (``value`` NaN for failed cells)."""
    path = results_file(results_dir)
    spent = [c for c in ("epsilon_spent", "delta_spent", "rho_spent")]
    df = pd.read_csv(path, dtype={"dataset_params": str, "params": str, "subset": str, "error": str,
                                  "label": str, "n_private_requested": str, "guarantee": str, "privacy_note": str},
                     keep_default_na=False, na_values={c: [""] for c in ["value", *spent]})
    if not (df["n_private_requested"] == "all").any():
        df["n_private_requested"] = pd.to_numeric(df["n_private_requested"])
    for c in ["value", *spent]:
        if c in df.columns:   # results written before the guarantee columns (schema 1) have none
            df[c] = pd.to_numeric(df[c], errors="coerce")
    return df


def read_manifest(results_dir: Path) -> dict[str, Any]:
    p = Path(results_dir) / "manifest.json"
    if not p.exists():
        raise UserError(f"{results_dir}: no manifest.json (not a dpexp results directory)")
    return json.loads(p.read_text())


def find_results_dirs(inputs: list[Path]) -> list[Path]:
    """The results directories named by ``inputs``: each input that holds a ``manifest.json``, or else its direct
    sub-folders that do (``results/``, ``results/fast/``), sorted; each directory once.  ``UserError`` for a missing
    path or a folder with neither."""
    found: list[Path] = []
    seen: set[Path] = set()
    for p in inputs:
        if not p.exists():
            raise UserError(f"{p}: no such directory")
        if not p.is_dir():
            raise UserError(f"{p}: not a directory (give a results directory or a folder of them)")
        if (p / "manifest.json").is_file():
            here = [p]
        else:
            here = sorted(c for c in p.iterdir() if c.is_dir() and (c / "manifest.json").is_file())
        if not here:
            raise UserError(f"{p}: no dpexp results directories (no manifest.json in it or in its sub-folders; "
                            "run `dpexp run CONFIG --out DIR` first)")
        for d in here:
            key = d.resolve()
            if key not in seen:
                seen.add(key)
                found.append(d)
    return found


def default_x(df: pd.DataFrame) -> str:
    """The first grid column with more than one value (requested n_private, then epsilon, ...)."""
    for col in GRID_COLUMNS:
        if df[col].nunique() > 1:
            return col
    return "n_private"


def varying_grid_columns(df: pd.DataFrame, x: str) -> list[str]:
    """Grid columns other than ``x`` that vary: each of their values is a separate curve, never averaged over."""
    skip = {x, REQUESTED.get(x, x)}
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


_KV = re.compile(r"(?:^|,)([A-Za-z_][A-Za-z0-9_]*)=")


def parse_params(s: Any) -> dict[str, Any]:
    """Parse a ``k=v,k2=v2`` params string (values may contain commas inside brackets) into a dict."""
    if not isinstance(s, str) or not s:
        return {}
    out: dict[str, Any] = {}
    parts, depth, cur = [], 0, ""
    for ch in s:
        depth += ch in "[("
        depth -= ch in "])"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    merged: list[str] = []
    for p in parts:  # a part without '=' continues the previous value
        if "=" in p.split("[")[0] or not merged:
            merged.append(p)
        else:
            merged[-1] += "," + p
    for p in merged:
        k, _, v = p.partition("=")
        try:
            out[k] = float(v)
        except ValueError:
            out[k] = v
    return out
