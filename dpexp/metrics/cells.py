"""The cells of one metric call grouped by their test responses, shared by the metrics that rank predictions.

The runner scores a chunk's cells with every metric's ``many`` (``dpexp.runner._metric_table``); the algorithms,
budgets and sizes of one drug share its test responses.  ``response_groups(outputs, splits)`` groups the cells with
one trial of real-valued predictions (as floats) by the *values* of their test responses, stacks each group's
predictions (k, n) and ranks them once (one ``argsort``): average ranks (Spearman) and dense integer codes (the sign
matrices of the wpc index); rows with equal predictions (a baseline that ignores n_private, at every size) are ranked
once (``distinct_rows``) and wpc sums their sign matrix once.  The runner scores a group's cells with every metric
inside ``scored_together()``, which holds the table made by the first metric for the others handed the same lists
(outside it, each call makes its own).  Values are unchanged: the ranks are the ones each
metric computed on its own (``average_ranks``), and every metric still scores each cell with its own arithmetic.
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from dpexp import cache
from dpexp.metrics.ranks import sorted_ranks


@dataclass
class ResponseGroup:
    """Cells whose test responses have equal values (``y`` is one of their arrays)."""

    y: np.ndarray
    key: tuple                                           # dpexp.cache.array_key(y): memo keys of its terms
    cells: list[int] = field(default_factory=list)       # positions (in the call's lists) of the finite rows
    nonfinite: list[int] = field(default_factory=list)   # cells with a non-finite prediction
    ranks: np.ndarray | None = None                      # (len(cells), n) average ranks, 1-based (ties: mean)
    codes: np.ndarray | None = None                      # (len(cells), n) int16 dense ranks (None if n > 32767)
    # cells with equal predictions (a baseline that ignores n_private, at every size): the codes of the distinct
    # rows (m, n) and each cell's row among them (len(cells),); both None when every row differs
    unique_codes: np.ndarray | None = None
    inverse: np.ndarray | None = None


@dataclass
class CellTable:
    groups: list[ResponseGroup]
    other: list[int]    # cells that are not one trial of real predictions matching their responses


#: the table of the metric calls inside ``scored_together``: [outputs, splits, table], empty before the first
_TOGETHER: contextvars.ContextVar[list | None] = contextvars.ContextVar("dpexp_scored_together", default=None)


@contextlib.contextmanager
def scored_together() -> Iterator[None]:
    """Inside: the metrics scoring the same lists of outputs and splits (the runner's metric call of one group) share
    one ``response_groups`` table, made by the first of them and dropped on leaving."""
    token = _TOGETHER.set([])
    try:
        yield
    finally:
        _TOGETHER.reset(token)


def response_groups(outputs: list[Any], splits: list[Any]) -> CellTable:
    """The ``CellTable`` of a metric call (module docstring); inside ``scored_together`` made once for the calls
    handed these lists."""
    held = _TOGETHER.get()
    if held and held[0] is outputs and held[1] is splits:
        return held[2]
    table = _response_groups(outputs, splits)
    if held is not None:
        held[:] = [outputs, splits, table]
    return table


def _response_groups(outputs: list[Any], splits: list[Any]) -> CellTable:
    try:
        preds = tuple([o.predictions for o in outputs])
        ys = tuple([s.y_test for s in splits])
    except AttributeError:
        preds = tuple([getattr(o, "predictions", None) for o in outputs])
        ys = tuple([getattr(s, "y_test", None) for s in splits])
    return _table(preds, ys)


def _table(preds: tuple, ys: tuple) -> CellTable:
    ndarray = np.ndarray
    by_id: dict[int, tuple] = {}        # id(y) -> (its group or None, the prediction shape (1, n) of one trial)
    by_value: dict[tuple, ResponseGroup] = {}
    other: list[int] = []
    for k, (P, y) in enumerate(zip(preds, ys)):
        got = by_id.get(id(y))
        if got is None:                                # each response array checked and hashed once
            if type(y) is ndarray and y.ndim == 1:
                key = cache.array_key(y)
                g = by_value.get(key)
                if g is None:
                    g = by_value[key] = ResponseGroup(y, key)
                got = (g, (1, y.shape[0]))
            else:
                got = (None, None)
            by_id[id(y)] = got
        if got[0] is not None and type(P) is ndarray and P.shape == got[1]:
            got[0].cells.append(k)
        else:
            other.append(k)
    groups = []
    for g in by_value.values():
        if not g.cells:
            continue
        P = np.concatenate([preds[k] for k in g.cells])
        if P.dtype.kind not in "biuf":                 # not real numbers: scored one by one
            other += g.cells
            continue
        P = P.astype(float, copy=False)                # as the per-cell paths convert them
        ok = np.isfinite(P).all(axis=1)
        if not ok.all():
            g.nonfinite = [k for k, f in zip(g.cells, ok) if not f]
            g.cells = [k for k, f in zip(g.cells, ok) if f]
            P = P[ok]
        if g.cells:
            first, inverse = distinct_rows(P)
            if first is None:
                g.ranks, g.codes = ranks_and_codes(P)
            else:   # equal rows ranked once: their ranks and codes are the same values
                ranks, codes = ranks_and_codes(P[first])
                g.ranks, g.inverse = ranks[inverse], inverse
                if codes is not None:
                    g.codes, g.unique_codes = codes[inverse], codes
        groups.append(g)
    other.sort()
    return CellTable(groups, other)


def distinct_rows(P: np.ndarray) -> tuple[list[int] | None, np.ndarray | None]:
    """(first, inverse) of the rows of ``P`` (k, n) with equal bytes: the position of each distinct row's first
    occurrence and every row's index among them; (None, None) when all rows differ.  Equal bytes are equal
    values (−0 and 0 differ: only fewer rows shared)."""
    k = P.shape[0]
    if k < 2:
        return None, None
    b = np.ascontiguousarray(P).tobytes()
    w = len(b) // k
    seen: dict[bytes, int] = {}
    first: list[int] = []
    inverse = []
    for i in range(k):
        row = b[i * w:(i + 1) * w]
        j = seen.get(row)
        if j is None:
            j = seen[row] = len(first)
            first.append(i)
        inverse.append(j)
    if len(first) == k:
        return None, None
    return first, np.array(inverse, dtype=np.intp)


def ranks_and_codes(A: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Average ranks (1-based, ties get the mean of their ranks: ``average_ranks``'s values) and dense integer
    codes (0-based, equal values equal codes; int8 up to 127 columns, else int16, None past 32767) of every finite
    row of ``A`` (m, n), from one sort.  sign(c_i − c_j) = sign(a_i − a_j) for finite rows."""
    m, n = A.shape
    order, starts, ranks = sorted_ranks(A, kind="finite")   # finite rows: a faster sort, the same ranks
    if n > 32767:
        return ranks, None
    dtype = np.int8 if n <= 127 else np.int16
    if starts is None:  # no ties: the ranks less one (integers below n)
        return ranks, (ranks - 1.0).astype(dtype)
    codes = np.empty((m, n), dtype=dtype)
    dense = np.cumsum(starts, axis=1, dtype=np.int16)
    dense -= 1
    np.put_along_axis(codes, order, dense, axis=1)
    return ranks, codes
