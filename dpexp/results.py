"""The results schema (one named record, ``Row``), the rendering of a chunk's cells into rows and CSV bytes
(``ChunkRecords``, ``records_text``), reading results tables, and the aggregation shared by ``dpexp plot`` and
``dpexp summarize``."""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import operator
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from dpexp.errors import UserError
from dpexp.privacy.guarantee import GUARANTEE_COLUMNS, evaluation_columns
from dpexp.results_table import REPEATED_COLUMNS, ResultsTable, results_file  # noqa: F401  (this module's API)
from dpexp.results_table import NUMBER_COLUMNS, check_table, opened, parsed


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


def read_results(results_dir: Path, compact: bool = False) -> pd.DataFrame:
    """The tidy results table with typed columns (``value`` NaN for failed cells).

    ``compact`` (what ``dpexp plot``, ``summarize`` and ``report`` read): the ``REPEATED_COLUMNS`` as categoricals
    whose categories are the distinct values sorted (so a sort or a ``groupby(sort=True)`` gives the order of the
    strings; group with ``observed=True``), ``n_private_requested`` parsed once per distinct value, and no
    ``seed_key`` (a near-unique string per cell that no plot reads): about a tenth of the memory, read in chunks
    (``results_table.ResultsTable``; a reader of a few metrics takes ``ResultsTable.frame(metrics)`` instead)."""
    if compact:
        return ResultsTable.read(results_dir).frame()
    path = results_file(results_dir)
    text = {"dataset_params": str, "params": str, "subset": str, "error": str, "label": str,
            "n_private_requested": str, "guarantee": str, "privacy_note": str}
    with parsed(path), opened(path) as source:
        df = pd.read_csv(source, dtype=text, keep_default_na=False, na_values={c: [""] for c in NUMBER_COLUMNS})
    check_table(path, df)
    req = df["n_private_requested"]
    if not (req == "all").any():
        df["n_private_requested"] = pd.to_numeric(req)
    for c in NUMBER_COLUMNS:
        if c in df.columns:   # results written before the guarantee columns (schema 1) have none
            df[c] = pd.to_numeric(df[c], errors="coerce")
    return df


def map_unique(s: pd.Series, f: Any) -> pd.Series:
    """``s.map(f)``, with ``f`` called once per distinct value: a results column repeats a few values over millions
    of rows.  Same values and dtype as ``s.map(f)`` of the column read as strings (the distinct values are mapped as
    a Series, then taken); a categorical ``s`` (``read_results(compact=True)``) maps the categories it holds, as
    strings, so the result is never categorical."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        codes = s.cat.codes.to_numpy()
        if (codes < 0).any():   # a missing value: map it as the string column would hold it
            s = s.astype(s.cat.categories.dtype)
        else:
            k, held = pd.factorize(codes)
            out = pd.Series(s.cat.categories.take(held)).map(f).iloc[k]
            out.index, out.name = s.index, s.name
            return out
    codes, uniques = pd.factorize(s, use_na_sentinel=False)
    out = pd.Series(uniques, dtype=s.dtype).map(f).iloc[codes]
    out.index, out.name = s.index, s.name
    return out


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
    per_repeat = d.groupby(keys + ["repeat"], sort=True, dropna=False, observed=True)["value"].mean().reset_index()
    grouped = per_repeat.groupby(keys, sort=True, dropna=False, observed=True)
    g = grouped["value"]
    out = g.agg(mean="mean", std="std", median="median", repeats="count").reset_index()
    codes = grouped.ngroup().to_numpy()
    q25, q75 = group_nanquantiles(codes, per_repeat["value"].to_numpy(dtype=float), len(out), (0.25, 0.75))
    out.insert(out.columns.get_loc("repeats"), "q25", q25)
    out.insert(out.columns.get_loc("repeats"), "q75", q75)
    out["iqr"] = out["q75"] - out["q25"]
    failed = d[d["value"].isna()].groupby(keys, dropna=False, observed=True).size().rename("failed_rows")
    out = out.merge(failed.reset_index(), on=keys, how="left")
    out["failed_rows"] = out["failed_rows"].fillna(0).astype(int)
    # the compact table's categoricals as plain strings: the summary is small, and a categorical's ``map`` would
    # call its function once per category in category order, not per row in row order (the footnotes' order)
    for c in out.columns:
        if isinstance(out[c].dtype, pd.CategoricalDtype):
            out[c] = out[c].astype(object)
    return out


def group_nanquantiles(codes: np.ndarray, values: np.ndarray, n_groups: int,
                       qs: tuple[float, ...]) -> list[np.ndarray]:
    """``np.nanquantile(values[codes == g], q)`` (method 'linear') for every group ``g`` in ``range(n_groups)`` and
    every ``q``, NaN for a group without a finite value, in one sort instead of one call per group.

    It repeats numpy's own steps (``numpy/lib/_function_base_impl.py``: the virtual index ``(n - 1) q``, the
    neighbours ``floor`` and ``floor + 1`` clamped to the last value, and ``_lerp``'s two-sided interpolation);
    ``tests/core/test_aggregate.py`` holds it to ``np.nanquantile`` at rtol 1e-14 on groups of every size with
    NaNs, ties and signed zeros, and fails if numpy changes its method.
    """
    keep = ~np.isnan(values)
    c, v = codes[keep], values[keep]
    order = np.lexsort((v, c))
    ordered = v[order]
    n = np.bincount(c, minlength=n_groups)
    start = np.cumsum(n) - n
    empty = n == 0
    out = []
    for q in qs:
        virtual = (n - 1) * q
        below = np.floor(virtual)
        above = below + 1
        at_top = virtual >= n - 1           # numpy takes the last value for both neighbours (index -1)
        below[at_top] = -1
        above[at_top] = -1
        below[virtual < 0] = 0
        above[virtual < 0] = 0
        gamma = virtual - below             # numpy's gamma, computed from the clamped index as numpy does
        lo = np.where(below < 0, n + below, below).astype(np.intp)
        hi = np.where(above < 0, n + above, above).astype(np.intp)
        where_lo = np.where(empty, 0, start + lo)
        where_hi = np.where(empty, 0, start + hi)
        a = ordered[where_lo] if ordered.size else np.full(n_groups, np.nan)
        b = ordered[where_hi] if ordered.size else np.full(n_groups, np.nan)
        diff = b - a
        value = a + diff * gamma
        value = np.where(gamma >= 0.5, b - diff * (1 - gamma), value)
        value[empty] = np.nan
        out.append(value)
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


# ---------------------------------------------------------------------------------- rendering rows (CSV)
def fmt(x: Any) -> str:
    """A value's text in results.csv: floats by ``repr`` (NaN, a failed value, an empty field), others by ``str``."""
    if type(x) is float:
        return repr(x) if x == x else ""  # NaN (a failed value) is an empty field
    if isinstance(x, float):
        return "" if math.isnan(x) else repr(x)
    return str(x)


#: one cell's rows for one (epsilon, delta) target: (the fields before ``metric``, [(metric, value, error)], seed_key)
#: and optionally (as ``ChunkRecords`` makes them) those fields' CSV text, each followed by its comma
#: (``head_text``, from texts shared by many cells), and their ``SUMMARY_FIELDS`` as one tuple shared by every
#: record of equal ones
Record = tuple[Any, ...]


#: the fields of a row that the manifest's privacy summary groups by (from ``Row``)
SUMMARY_FIELDS = ("dataset", "dataset_params", "algorithm", "label", "params", "epsilon", "delta", "guarantee",
                  "epsilon_spent", "delta_spent", "rho_spent", "privacy_note")
SUMMARY_INDEX = [COLUMNS.index(c) for c in SUMMARY_FIELDS]
#: a record head's ``SUMMARY_FIELDS``
summary_fields = operator.itemgetter(*SUMMARY_INDEX)
_error_of = operator.itemgetter(2)   # of a record's (metric, value, error)


#: where a record's head holds its guarantee columns
_GUARANTEE_AT = COLUMNS.index("guarantee")


def mark_evaluation(labels: set[str], records: list[Record]) -> list[Record]:
    """``records`` with the rows of evaluation metrics (``Metric.reads_private``) given the guarantee columns of an
    evaluation (``evaluation_columns``: ``none``, "evaluation against private data", the release named in the note),
    in the same row order: a record whose metrics mix both is cut into consecutive runs, an evaluation run made a
    plain (head, values, seed key) record.  A failed cell (every value an error) keeps its rows as they are.  No
    evaluation metric (``labels``: the labels of the metrics that read private rows; none, the usual): ``records``
    unchanged."""
    if not labels:
        return records
    g0, g1 = _GUARANTEE_AT, _GUARANTEE_AT + len(GUARANTEE_COLUMNS)
    heads: dict[int, tuple[Any, tuple[Any, ...]]] = {}
    out: list[Record] = []
    for rec in records:
        values = rec[1]
        if not any(m in labels for m, _, _ in values) or all(e for _, _, e in values):
            out.append(rec)
            continue
        head = rec[0]
        got = heads.get(id(head))
        if got is None or got[0] is not head:
            got = heads[id(head)] = (head, (*head[:g0], *evaluation_columns(head[g0:g1]), *head[g1:]))
        for is_eval, run in itertools.groupby(values, key=lambda v: v[0] in labels):
            run = list(run)
            out.append((got[1], run, rec[2]) if is_eval else (*rec[:1], run, *rec[2:]))
    return out


def head_text(fields: tuple[Any, ...]) -> bytes:
    """The CSV text of consecutive fields of a row's head, each followed by its comma, as ``records_to_csv``
    writes them (``csv_field`` of ``fmt``), UTF-8: the texts of consecutive parts of a head concatenate into the
    text of the whole."""
    if all(type(x) is int for x in fields):   # sizes and counts: plain decimal
        return ("%d," * len(fields) % fields).encode("ascii")
    return "".join([csv_field(fmt(x)) + "," for x in fields]).encode("utf-8")


def _guarantee_columns(rows_of: dict[Any, tuple[Any, ...]], statement: Any, g: Any) -> tuple[Any, ...]:
    """The guarantee columns of a cell with the dataset's statement; equal guarantees (most cells of a variant)
    give equal columns, so they are computed once per chunk (``rows_of``)."""
    try:
        row = rows_of.get(g)
    except TypeError:   # an unhashable guarantee (notes given as a list): its columns directly
        return statement.apply(g).row()
    if row is None:
        row = rows_of[g] = statement.apply(g).row()
    return row


#: the rows of one cell share every field before the metric's: formatted once per cell
_SHARED = COLUMNS.index("metric")


def _quoted_chars() -> frozenset[str]:
    """The characters that make ``csv.writer`` (QUOTE_MINIMAL, line terminator "\\n") quote a field inside a row,
    asked of this Python's csv module (",", '"' and "\\n"; some versions add "\\r")."""
    found = set()
    for c in map(chr, range(1, 128)):
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow(["a", c, "b"])
        if buf.getvalue() != f"a,{c},b\n":
            found.add(c)
    return frozenset(found)


_QUOTE_CHARS = _quoted_chars()


def csv_field(s: str) -> str:
    """One text field as ``csv.writer`` (QUOTE_MINIMAL) writes it inside a row: quoted, with doubled quotes, when
    it holds a comma, a quote or a line break; else as is."""
    if _QUOTE_CHARS.isdisjoint(s):
        return s
    return '"' + s.replace('"', '""') + '"'


class _MetricTexts(dict):
    """A metric name's CSV field and the comma after it, UTF-8, made on first use (names are few, rows many); None
    for a name whose field holds a line break (its rows leave ``records_text``'s joined path)."""

    def __missing__(self, name: Any) -> bytes | None:
        field = csv_field(name)
        text = None if "\n" in field else (field + ",").encode("utf-8")
        if type(name) is str:   # a str's text depends on its value only
            self[name] = text
        return text


class _KeyTexts(dict):
    """A seed key's CSV field between its commas, then the line break, UTF-8 (``,key,\\n``), made on first use (a
    cell's key is one string object shared by every size of the chunk); None for a key ``csv.writer`` quotes (its
    rows leave ``records_text``'s joined path)."""

    def __missing__(self, key: str) -> bytes | None:
        text = self[key] = f",{key},\n".encode("utf-8") if _QUOTE_CHARS.isdisjoint(key) else None
        return text


def _row_tail(metric: Any, value: Any, err: str, key_text: str) -> str:
    """The fields of a row after its prefix (metric, value, seed_key, error), without the line break."""
    v = (repr(value) if value == value else "") if type(value) is float else csv_field(fmt(value))
    return f"{csv_field(metric)},{v}{key_text}{csv_field(err)}"


def records_to_csv(records: list[Record], header: bool = False) -> bytes:
    """The rows of ``records`` as CSV bytes (``records_text``)."""
    return records_text(records, header)[0]


def records_text(records: list[Record], header: bool = False) -> tuple[bytes, int]:
    """The rows of ``records`` as CSV bytes, the same bytes as ``csv.writer`` (line terminator "\\n") on whole
    rows, and the number of line breaks in them.  QUOTE_MINIMAL quotes each field on its own, so a line is its
    prefix (the shared fields, once per record), then metric, value, seed_key and error.  A field's text is kept per
    object (``id``: every record stays alive during the call, so an id names one object): the names, labels and
    budgets shared by thousands of records are formatted once (formatting every field of every row was a tenth of a
    GDSC run's time).  A record that carries its head's text (``ChunkRecords``') is written with it.

    The common record (its rows' values plain floats, no error, no line break in its prefix, key or metric names)
    is written as prefix, then its rows' tails ``metric,value`` joined by ``,key,\\n`` + prefix, then ``,key,\\n``
    (a key's text made once per key string, ``_KeyTexts``):
    one ``bytes.join`` in C, the text made as bytes from the start (UTF-8 of a concatenation is the concatenation
    of the UTF-8s; a float's repr is ASCII), and each row one line, so the line breaks are counted without reading
    the text again (the merge's row count of a compressed part, ``_chunk_done``).  Any other record is written
    row by row and its line breaks counted in its text."""
    texts: dict[int, str] = {}
    metric_texts, key_texts = _MetricTexts(), _KeyTexts()
    out: list[bytes] = [(",".join(COLUMNS) + "\n").encode("utf-8")] if header else []
    lines = len(out)
    append = out.append
    plain = _QUOTE_CHARS.isdisjoint
    for rec in records:
        values, key = rec[1], rec[2]
        if not values:
            continue
        if len(rec) > 3:   # the head's text, made by ``ChunkRecords``
            prefix = rec[3]
        else:
            parts = []
            for x in rec[0]:
                t = texts.get(id(x))
                if t is None:
                    t = texts[id(x)] = csv_field(fmt(x))
                parts.append(t)
            parts.append("")
            prefix = ",".join(parts).encode("utf-8")
        key_nl = key_texts[key]
        if key_nl is not None and b"\n" not in prefix:
            try:   # a row of another kind gives None, which the join refuses (TypeError): written row by row below
                body = (key_nl + prefix).join([
                    metric_texts[m] + (repr(v).encode("ascii") if v == v else b"")   # NaN: an empty field
                    if type(v) is float and not e else None for m, v, e in values])
            except TypeError:
                pass
            else:
                append(prefix)   # the pieces are copied once, by the final join
                append(body)
                append(key_nl)
                lines += len(values)
                continue
        key_str = f",{key if plain(key) else csv_field(key)},"
        text = b"".join([prefix + _row_tail(m, v, e, key_str).encode("utf-8") + b"\n" for m, v, e in values])
        append(text)
        lines += text.count(b"\n")
    return b"".join(out), lines


def records_summary(records: list[Record]) -> dict[str, list[Any]]:
    """What ``_summarise`` finds in the CSV of ``records``, from the records themselves: ``rows`` = [[the
    ``SUMMARY_FIELDS`` as written, number of rows], ...] and ``failures`` = [[the ``CELL_COLUMNS`` of a failed cell,
    its first error], ...], both in first-seen row order (JSON-able: the driver keeps it beside the part).  A field's
    text is what ``csv.reader`` reads back from ``records_to_csv``'s line: ``fmt`` of the value."""
    # counted by the field objects and their types first (C-level tuple building; equal objects of one type write
    # the same text), then merged by text in first-seen order
    # a record's summary fields as one shared tuple (5th, ``ChunkRecords``) are counted by that tuple's id (held by
    # the records), others by their fields and types
    first: dict[Any, list[Any]] = {}
    failures: dict[tuple[str, ...], str] = {}
    for rec in records:
        values = rec[1]
        if len(rec) > 4:
            fields = rec[4]
            key = id(fields)
        else:
            fields = summary_fields(rec[0])
            key = (fields, tuple(map(type, fields)))
        got = first.get(key)
        if got is None:
            first[key] = [fields, len(values)]
        else:
            got[1] += len(values)
        if any(map(_error_of, values)):   # rare: a failed cell or metric
            for _, _, err in values:
                if err:
                    failures.setdefault(tuple(fmt(rec[0][i]) for i in _CELL_INDEX), err)
    by_object: dict[tuple[Any, ...], int] = {}
    for fields, n in first.values():
        key = (fields, tuple(map(type, fields)))
        by_object[key] = by_object.get(key, 0) + n
    spent: dict[tuple[str, ...], int] = {}
    for (fields, _), n in by_object.items():
        k = tuple(map(fmt, fields))
        spent[k] = spent.get(k, 0) + n
    return {"rows": [[list(k), n] for k, n in spent.items()], "failures": [[list(k), e] for k, e in failures.items()]}


def add_summary(summary: dict[str, list[Any]], spent: dict[tuple[str, ...], int],
                 failures: dict[tuple[str, ...], str]) -> None:
    """Add one part's ``records_summary`` to the run's counts, as ``_summarise`` would add its rows."""
    for key, n in summary["rows"]:
        k = tuple(key)
        spent[k] = spent.get(k, 0) + int(n)
    for cell, err in summary["failures"]:
        failures.setdefault(tuple(cell), err)


def rows_to_csv(rows: list[Row], header: bool) -> bytes:
    """``Row``s as CSV bytes (``records_to_csv``; consecutive rows whose leading fields are the same objects share
    one formatted prefix)."""
    records: list[Record] = []
    prev: tuple[Any, ...] = ()
    for r in rows:
        head = r[:_SHARED]
        same = (records and len(head) == len(prev) and all(map(operator.is_, head, prev))
                and r.seed_key == records[-1][2])
        if not same:
            records.append((head, [], r.seed_key))
            prev = head
        records[-1][1].append((r.metric, r.value, r.error))
    return records_to_csv(records, header)


# ------------------------------------------------------------------------------------------- a chunk's rows
@dataclass(frozen=True)
class CellGroup:
    """What the runner computed for the cells of one algorithm variant and budget over a chunk's splits at one size
    (one cell per split, in the subsets' order), as ``ChunkRecords`` renders it: the variant's (name, label, params),
    the targets its rows are written for (one (ε, δ); every target of the run for a non-private variant, computed
    once), each cell's guarantee, metric values [(metric, value, error)], sizes seen (n_private, n_public, n_test, d)
    and seed key, and ``tail``: the size's (repeat, trials, n_private, n_public, n_test asked), one tuple per size."""

    variant: tuple[Any, ...]
    targets: list[tuple[Any, Any]]
    guarantees: list[Any]
    values: list[list[tuple[str, float, str]]]
    seen: list[tuple[int, int, int, int]]
    tail: tuple[Any, ...]
    seed_keys: list[str]


class ChunkRecords:
    """The ``Record``s of one chunk's ``CellGroup``s, in the order they are added.  One instance per chunk: it
    keeps the texts shared by many cells while the chunk's rows are made, and holds the guarantee objects it keys
    by identity (so an id names one object while it lives).

    A record holds the fields a cell's rows share once, their CSV text put together from texts shared by many cells
    (a variant's names and budget per subset once per chunk, a size's fields once per distinct sizes seen, a
    guarantee's columns once per object: ``records_text``) and their privacy-summary fields as one tuple shared by
    the records of a variant, budget and guarantee (``records_summary``).  A group's records are made by ``zip``,
    not cell by cell in Python: when its cells carry one guarantee object (the usual), a head and its text are one
    concatenation each (``map`` in C) of the part up to the guarantee columns, made once per chunk per variant,
    target and guarantee, and the part of the sizes; a group with several guarantees (a failed cell among good
    ones) is put together cell by cell.  ``evaluation``: the labels of the metrics that read private rows
    (``mark_evaluation``)."""

    def __init__(self, names: tuple[Any, ...], subsets: tuple[str, ...], statement: Any,
                 evaluation: set[str] | None = None) -> None:
        self.names, self.subsets, self.statement = names, subsets, statement
        self.evaluation = evaluation or set()
        self.records: list[Record] = []
        self._names_text = head_text(names)
        self._subset_texts = [head_text((subset,)) for subset in subsets]
        self._rows_of: dict[Any, tuple[Any, ...]] = {}   # guarantee -> its columns with the dataset's statement
        # the same by the guarantee object (most cells of a variant carry one memoised object: no dataclass hash
        # per cell), with the columns' text; each entry holds its guarantee
        self._by_guarantee: dict[int, tuple[Any, tuple[Any, ...], bytes]] = {}
        self._target_texts: dict[tuple[Any, Any], bytes] = {}
        # per variant and target, the subsets' (names, subset, variant, ε, δ) fields and their texts
        self._befores: dict[tuple[Any, ...], tuple[list[tuple[Any, ...]], list[bytes]]] = {}
        # the same followed by one guarantee's columns (per variant, target and guarantee object)
        self._guaranteed: dict[tuple[Any, ...], tuple[Any, ...]] = {}   # (and their evaluation rows')
        self._sizes: dict[tuple[Any, ...], tuple[list[tuple[Any, ...]], list[bytes]]] = {}   # by ``tail``

    def add(self, group: CellGroup) -> None:
        """Make the records of ``group``'s cells (one per cell and target; a cell's targets in turn)."""
        guarantees, variant, names = group.guarantees, group.variant, self.names
        # per guarantee object: (it, its columns, their text, the ``SUMMARY_FIELDS`` of each target: one tuple
        # shared by the records of a summary key); ``guarantees`` holds every object while ``hits`` is used
        hits: dict[int, tuple[Any, ...]] = {}
        g0 = guarantees[0]
        one = all(map(operator.is_, guarantees, itertools.repeat(g0)))   # the usual: one object for all
        for guarantee in ((g0,) if one else guarantees):
            if id(guarantee) not in hits:
                col = self._by_guarantee.get(id(guarantee))
                if col is None or col[0] is not guarantee:
                    g = _guarantee_columns(self._rows_of, self.statement, guarantee)
                    col = self._by_guarantee[id(guarantee)] = (guarantee, g, head_text(g))
                hits[id(guarantee)] = (*col, [(*names[1:], *variant, e, d, *col[1]) for e, d in group.targets])
        seen, seen_texts = self._size_parts(group.seen, group.tail)
        per_target = []
        if one:   # each head and text = (the subset's part with the guarantee's, made once per chunk) + sizes'
            col = hits[id(g0)]
            n = len(guarantees)
            for t, (e, d) in enumerate(group.targets):
                got = self._guaranteed.get((variant, e, d, id(g0)))
                if got is None:   # ``_by_guarantee`` holds ``g0`` while the chunk's rows are made: its id names it
                    befores, bt = self._before(variant, e, d)
                    got = self._guaranteed[(variant, e, d, id(g0))] = ([(*b, *col[1]) for b in befores],
                                                                       [b + col[2] for b in bt])
                bg, bgt = got
                per_target.append((list(map(operator.add, bg, seen)), list(map(operator.add, bgt, seen_texts)),
                                   [col[3][t]] * n))
        else:     # guarantees differ between cells (e.g. a failed cell among good ones): cell by cell
            cols = [hits[id(guarantee)] for guarantee in guarantees]
            for t, (e, d) in enumerate(group.targets):
                befores, bt = self._before(variant, e, d)
                per_target.append(([(*b, *c[1], *sn) for b, c, sn in zip(befores, cols, seen)],
                                   [b + c[2] + sn for b, c, sn in zip(bt, cols, seen_texts)],
                                   [c[3][t] for c in cols]))
        vals, keys = group.values, group.seed_keys
        runs = self._evaluation_runs(vals) if self.evaluation and one else None
        if runs is None and self.evaluation:   # marked after the fact (``mark_evaluation``): rare groups
            made = list(itertools.chain.from_iterable(zip(*(zip(heads, vals, keys, texts, groups)
                                                            for heads, texts, groups in per_target))))
            self.records.extend(mark_evaluation(self.evaluation, made))
        elif runs:   # each cell's rows cut into runs of release and evaluation metrics, a record per run
            col = hits[id(g0)]
            parts = []
            for t, (e, d) in enumerate(group.targets):
                heads, texts, groups = per_target[t]
                for start, stop, is_eval in runs:
                    cut = [v[start:stop] for v in vals]
                    if is_eval:
                        eh, et, eg = self._evaluation_heads(variant, e, d, col, seen, seen_texts)
                        parts.append(zip(eh, cut, keys, et, [eg] * len(vals)))
                    else:
                        parts.append(zip(heads, cut, keys, texts, groups))
            self.records.extend(itertools.chain.from_iterable(zip(*parts)))
        elif len(per_target) == 1:   # the usual: one record per cell, made by ``zip`` in C
            heads, texts, groups = per_target[0]
            self.records.extend(zip(heads, vals, keys, texts, groups))
        else:                      # a non-private variant under several targets: a cell's records in turn
            self.records.extend(itertools.chain.from_iterable(zip(*(zip(heads, vals, keys, texts, groups)
                                                                    for heads, texts, groups in per_target))))

    def done(self) -> list[Record]:
        """The records made, the rows of evaluation metrics marked (``mark_evaluation``'s records, group by group)."""
        return self.records

    def _evaluation_runs(self, vals: list[list[tuple[str, float, str]]]) -> list[tuple[int, Any, bool]] | None:
        """Where ``mark_evaluation`` cuts every cell's rows of a group, as (start, stop, is evaluation) slices:
        [] when no row is an evaluation metric's; None when the cut can differ between cells (a failed cell, or an
        evaluation metric last with extras after it on some cells), for ``mark_evaluation`` itself.  A
        group's cells are scored with the same metrics in the same order (``runner._metric_table``), then their
        own extras, which no evaluation metric labels: the cuts are the first cell's, the last run open-ended."""
        if any([v[0][2] for v in vals if v]) or not all(vals):   # an error first: maybe a failed cell
            return None
        flags = [m in self.evaluation for m, _, _ in vals[0]]
        if not any(flags):
            return []
        if flags[-1] and any([len(v) != len(flags) for v in vals]):
            return None
        runs, start = [], 0
        for i in range(1, len(flags)):
            if flags[i] != flags[start]:
                runs.append((start, i, flags[start]))
                start = i
        runs.append((start, None, flags[start]))
        return runs

    def _evaluation_heads(self, variant: tuple[Any, ...], e: Any, d: Any, col: tuple[Any, ...],
                          seen: list[tuple[Any, ...]], seen_texts: list[bytes]
                          ) -> tuple[list[tuple[Any, ...]], list[bytes], tuple[Any, ...]]:
        """The heads, texts and summary fields of the evaluation rows of a group whose cells carry one guarantee
        (``col``: it, its columns, their text, ...): the guarantee columns replaced by ``evaluation_columns``, as
        ``mark_evaluation`` makes them; the part before the sizes made once per chunk per variant, target and
        guarantee."""
        key = ("evaluation", variant, e, d, col[1])   # by the guarantee's columns' values: all the heads depend on
        got = self._guaranteed.get(key)
        if got is None:
            ecol = evaluation_columns(col[1])
            befores, bt = self._before(variant, e, d)
            etext = head_text(ecol)
            got = self._guaranteed[key] = ([(*b, *ecol) for b in befores], [b + etext for b in bt],
                                           (*self.names[1:], *variant, e, d, *ecol))
        bg, bgt, summary = got
        return list(map(operator.add, bg, seen)), list(map(operator.add, bgt, seen_texts)), summary

    def _before(self, variant: tuple[Any, ...], e: Any, d: Any) -> tuple[list[tuple[Any, ...]], list[bytes]]:
        """The heads' fields before the guarantee columns of a variant's cells under one target (names, subset,
        variant, ε, δ), one per subset of the chunk, and their text: made once per chunk, the text from the names',
        subsets', variant's and target's own (``head_text`` of consecutive fields concatenates)."""
        got = self._befores.get((variant, e, d))
        if got is None:
            et = self._target_texts.get((e, d))
            if et is None:
                et = self._target_texts[(e, d)] = head_text((e, d))
            vt = head_text(variant)
            got = self._befores[(variant, e, d)] = ([(*self.names, subset, *variant, e, d) for subset in self.subsets],
                                                    [self._names_text + st + vt + et for st in self._subset_texts])
        return got

    def _size_parts(self, seen: list[tuple[Any, ...]], tail: tuple[Any, ...]
                    ) -> tuple[list[tuple[Any, ...]], list[bytes]]:
        """The heads' fields after the guarantee columns of each cell (its sizes seen, then ``tail``) and their
        text, once per size (``tail``); cells of equal sizes share one tuple and one text."""
        got = self._sizes.get(tail)
        if got is None:
            distinct = dict.fromkeys(seen)   # keyed by value: sizes are ints, and equal ints write one text
            tail_text = head_text(tail)
            heads = {s: (*s, *tail) for s in distinct}
            texts = {s: head_text(s) + tail_text for s in distinct}
            got = self._sizes[tail] = (list(map(heads.__getitem__, seen)), list(map(texts.__getitem__, seen)))
        return got
