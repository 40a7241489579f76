"""A results table read in bounded memory and held per metric: what ``dpexp plot``, ``summarize`` and ``report`` read.

A full-scale GDSC table has about 12 million rows (18 metrics per cell, 200 MB gzipped).  Parsed whole with pandas it
took 3.3 GiB while parsing and 1.6 GiB after, and a figure then copied the rows it drew.  Every reader here needs
the rows of one metric or a few at a time, plus, for the privacy marks, the distinct rows of the privacy columns
(``PRIVACY_COLUMNS``).  So ``ResultsTable.read`` parses the file in chunks of ``CHUNK_ROWS`` rows and keeps:

* each chunk's rows split by metric, with every column but ``value`` held as a categorical (a repeated value costs
  an int8/int16 code per row instead of 8 bytes; the string columns of ``REPEATED_COLUMNS`` already are): about
  40 bytes a row instead of 130;
* the first row of every distinct tuple of ``PRIVACY_COLUMNS`` in the table, whole.  Every label, algorithm and
  metric appears first in such a row, so a frame that holds them sees the labels, metrics and guarantees in the
  order of the full table.

``frame(metrics)`` gives the rows of ``metrics`` plus those first rows, in the table's order, with the types of
``read_results(compact=True)`` and the table's row numbers as index: exactly ``full[mask]`` of the full table read
at once (``tests/core/test_results_table.py`` holds it to that).  Its peak memory is the held table plus that
frame, not the whole table at its parsed width.
"""

from __future__ import annotations

import contextlib
import gzip
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np
import pandas as pd
from isal import igzip, igzip_lib
from pandas.api.types import union_categoricals

from dpexp.errors import UserError

#: string columns whose few distinct values repeat over millions of rows: held as categoricals (an int8/int16 code
#: per row) instead of a Python string object per row
REPEATED_COLUMNS = ("experiment", "dataset", "dataset_params", "subset", "algorithm", "label", "params",
                    "guarantee", "privacy_note", "metric", "error")
#: rows parsed at a time: a chunk's parse costs ≈ 150 MB at the widest table
CHUNK_ROWS = 500_000
#: the columns whose distinct rows say what a curve spent (``dpexp.plotting.privacy.curve_privacy`` reads them)
PRIVACY_COLUMNS = ("label", "algorithm", "error", "metric", "guarantee", "epsilon_spent", "delta_spent",
                   "rho_spent", "privacy_note")
#: numeric columns kept as they are (``value`` rarely repeats)
_PLAIN = ("value",)
#: the columns every reader needs
REQUIRED_COLUMNS = ("experiment", "label", "algorithm", "metric", "value")
#: what a row spent (empty where not applicable)
_SPENT = ("epsilon_spent", "delta_spent", "rho_spent")
#: the columns that hold numbers or nothing (a failed cell's value, a non-private row's spend)
NUMBER_COLUMNS = ("value", *_SPENT)


def results_file(results_dir: Path) -> Path:
    """The results table of a results directory: ``results.csv``, or ``results.csv.gz``."""
    for name in ("results.csv", "results.csv.gz"):
        p = Path(results_dir) / name
        if p.exists():
            return p
    raise UserError(f"{results_dir}: no results.csv or results.csv.gz (run `dpexp run CONFIG --out {results_dir}`)")


@contextlib.contextmanager
def opened(path: Path) -> Iterator[object]:
    """What a reader hands ``pd.read_csv`` for a results table: a ``.gz`` table as an ISA-L stream (it inflates
    about 4x faster than Python's gzip, whose inflate and CRC were a tenth of a read), a plain one as its path."""
    if Path(path).suffix != ".gz":
        yield path
        return
    with igzip.open(path, "rb") as f:
        yield f


@contextlib.contextmanager
def parsed(path: Path) -> Iterator[None]:
    """A table that cannot be parsed (cut short, not CSV, not gzip) as one line naming the file and the parser's
    reason (its line number where it gives one), not a traceback."""
    try:
        yield
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, EOFError, zlib.error,
            gzip.BadGzipFile, igzip_lib.IsalError) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise UserError(f"{path}: not a readable results table ({reason}); rerun its `dpexp run` with --force to "
                        "write it again") from None


def check_table(path: Path, frame: pd.DataFrame, first_row: int = 0) -> None:
    """``UserError`` naming the file, row and column when ``frame`` (rows of ``path`` from data row ``first_row``,
    parsed with the number columns as text or numbers) lacks a column every reader needs, or holds text that is not
    a number in a number column: such a value would otherwise become a silent NaN, read as a failed cell.  Rows are
    counted after the header from 1 (not lines: a quoted error message may hold a line break)."""
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise UserError(f"{path}: not a dpexp results table (no column {', '.join(missing)})")
    for c in NUMBER_COLUMNS:
        if c not in frame.columns or frame[c].dtype.kind in "fiu":
            continue
        col = frame[c]   # text where some field is not a number; the empty fields are NaN already
        bad = (pd.to_numeric(col, errors="coerce").isna() & col.notna()).to_numpy()
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise UserError(f"{path}: row {first_row + i + 1}, column {c}: {str(col.iloc[i])!r} is not a number")


class _TextColumn(Exception):
    """A repeated column whose values in some chunk all read as numbers (or booleans): pandas' categorical parse
    gave them numeric categories, which would lose their text ("007" → 7).  The table is parsed again with that
    column as text."""

    def __init__(self, column: str) -> None:
        super().__init__(column)
        self.column = column


def _is_text(index: pd.Index) -> bool:
    return index.dtype == object or isinstance(index.dtype, pd.StringDtype)


@dataclass
class _Piece:
    """Rows of one chunk (and one metric): the categorical frame, the table's row numbers, and the dtype each
    numeric column is restored to (its categoricals' categories keep the exact values)."""

    frame: pd.DataFrame
    rows: np.ndarray
    dtypes: dict[str, np.dtype]

    @staticmethod
    def of(chunk: pd.DataFrame, dtypes: dict[str, np.dtype]) -> "_Piece":
        """Rows of a chunk already made compact by ``ResultsTable._compact`` (``dtypes``: its numeric columns'
        parsed types)."""
        rows = chunk.index.to_numpy(dtype=np.int64)
        small = len(rows) == 0 or rows[-1] < 2**31     # the row numbers of a chunk increase
        return _Piece(chunk, rows.astype(np.int32) if small else rows, dtypes)

    def column(self, c: str) -> np.ndarray:
        """Column ``c`` (not one of the string categoricals) with its parsed values and dtype."""
        values = self.frame[c]
        if c in self.dtypes:
            return np.asarray(values.array).astype(self.dtypes[c], copy=False)
        return values.to_numpy()


class ResultsTable:
    """One results table, held per metric (module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.categorical = {*REPEATED_COLUMNS, "n_private_requested"}
        self.by_metric: dict[str, list[_Piece]] = {}
        self.first: list[_Piece] = []
        self.columns: list[str] = []
        self.rows = 0
        self.any_all = False       # "all" among the requested private sizes (whole datasets): the column stays text
        self.text: set[str] = set()   # repeated columns parsed as text (the others as pandas categoricals)

    @classmethod
    def read(cls, results_dir: Path) -> "ResultsTable":
        path = results_file(results_dir)
        text = {"n_private_requested"}        # numbers, or "all": always parsed as text, typed in ``_typed``
        while True:
            table = cls(path)
            table.text = set(text)
            seen: set[tuple] = set()
            try:
                with parsed(table.path), opened(table.path) as source:
                    for chunk in pd.read_csv(source, dtype=table._dtypes(), usecols=lambda c: c != "seed_key",
                                             keep_default_na=False, na_values={c: [""] for c in ["value", *_SPENT]},
                                             chunksize=CHUNK_ROWS):
                        check_table(table.path, chunk, table.rows)
                        table._add(chunk, seen)
                return table
            except _TextColumn as again:       # rare: a repeated column of number-like text (``_TextColumn``)
                text.add(again.column)

    @property
    def metrics(self) -> list[str]:
        """The metrics in the order first seen."""
        return list(self.by_metric)

    def frame(self, metrics: Iterable[str] | None = None) -> pd.DataFrame:
        """The rows of ``metrics`` (every metric when None) and the first row of every distinct privacy tuple, in
        the table's order, typed as ``read_results(compact=True)``, indexed by row number.

        Built column by column from the held pieces, in the table's order: the peak is the held table, the frame
        and one column, never the pieces at their full width."""
        want = self.metrics if metrics is None else [m for m in dict.fromkeys(metrics) if m in self.by_metric]
        pieces = [p for m in want for p in self.by_metric[m]]
        wanted = set(want)
        for p in self.first:   # the first rows of the other metrics (those of ``metrics`` are in their pieces)
            keep = ~p.frame["metric"].isin(wanted).to_numpy()
            if keep.any():
                pieces.append(_Piece(p.frame[keep], p.rows[keep], p.dtypes))
        if not pieces:
            return self._typed(pd.DataFrame({c: pd.Series(dtype=object) for c in self.columns}))
        rows = np.concatenate([p.rows for p in pieces]).astype(np.int64)
        order = np.argsort(rows, kind="stable")
        out: dict[str, object] = {}
        for c in self.columns:
            if c in self.categorical:
                cat = union_categoricals([p.frame[c].array for p in pieces], sort_categories=True)
                out[c] = pd.Categorical.from_codes(cat.codes[order], dtype=cat.dtype)
            else:
                out[c] = np.concatenate([p.column(c) for p in pieces])[order]
        index = pd.RangeIndex(len(rows)) if metrics is None else pd.Index(rows[order])
        return self._typed(pd.DataFrame(out, index=index, copy=False))

    # ------------------------------------------------------------------------------------------------------------

    def _dtypes(self) -> dict[str, object]:
        # pandas' "category" parse hashes the parser's own bytes, making no Python string per field (a third of the
        # read, with text and then ``pd.Categorical``); it infers the categories' type per chunk, so a chunk whose
        # values all look like numbers gets numeric categories: ``_add`` checks, and ``read`` parses such a column
        # as text (the requested private sizes always are)
        return {c: (str if c in self.text else "category") for c in self.categorical}

    def _add(self, chunk: pd.DataFrame, seen: set[tuple]) -> None:
        if not self.columns:
            self.columns = list(chunk.columns)
        self.rows += len(chunk)
        for c in self.categorical & set(chunk.columns):
            if c in self.text:
                chunk[c] = pd.Categorical(chunk[c])
            elif not _is_text(chunk[c].cat.categories):
                raise _TextColumn(c)
        dtypes = self._compact(chunk)
        req = chunk.get("n_private_requested")
        if req is not None and "all" in set(req.cat.categories):
            self.any_all = True
        # the first row of every distinct privacy tuple (NaN spent as None, so that equal tuples compare equal)
        cols = [c for c in PRIVACY_COLUMNS if c in chunk.columns]
        distinct = chunk[cols].drop_duplicates()
        new = []
        for i, tup in zip(distinct.index, distinct.itertuples(index=False)):
            key = tuple(None if isinstance(v, float) and v != v else v for v in tup)
            if key not in seen:
                seen.add(key)
                new.append(i)
        if new:
            self.first.append(_Piece.of(chunk.loc[new], dtypes))
        codes = chunk["metric"].cat.codes.to_numpy()
        names = chunk["metric"].cat.categories
        # metrics in the order first seen in this chunk (a new metric's first row is also a first row above)
        for k in pd.unique(codes):
            piece = chunk[codes == k]
            self.by_metric.setdefault(str(names[k]), []).append(_Piece.of(piece, dtypes))

    def _compact(self, chunk: pd.DataFrame) -> dict[str, np.dtype]:
        """Makes every numeric column of ``chunk`` but ``value`` a categorical of its values, once per chunk (its
        metrics' pieces then take codes); returns their parsed dtypes, which ``_Piece.column`` restores."""
        dtypes = {}
        for c in chunk.columns:
            col = chunk[c]
            if c in self.categorical or c in _PLAIN or col.dtype == object:
                continue
            dtypes[c] = col.dtype
            chunk[c] = pd.Categorical(col.to_numpy())
        return dtypes

    def _typed(self, df: pd.DataFrame) -> pd.DataFrame:
        """``read_results``' typing after the parse: the requested private sizes as numbers unless a whole dataset
        ("all") appears anywhere in the table; the spent and value columns as numbers."""
        if "n_private_requested" in df.columns and not self.any_all:
            req = df["n_private_requested"]
            if isinstance(req.dtype, pd.CategoricalDtype):
                cats = pd.to_numeric(pd.Series(req.cat.categories))
                df["n_private_requested"] = cats.iloc[req.cat.codes.to_numpy()].to_numpy()
            else:
                df["n_private_requested"] = pd.to_numeric(req)
        for c in ["value", *_SPENT]:
            if c in df.columns:
                df[c] = pd.to_numeric(df[c], errors="coerce")
        return df

