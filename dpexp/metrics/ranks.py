"""Ranks of the rows of a matrix, ties given the mean of their ranks: the one ranking shared by the rank metrics
(``accuracy.Spearman``) and the grouping of cells by their responses (``cells``)."""

from __future__ import annotations

import numpy as np


def average_ranks(A: np.ndarray) -> np.ndarray:
    """1-based ranks of every row of ``A`` (m, n), ties given the mean of their ranks — the values of
    ``scipy.stats.rankdata(A, axis=1)`` (exact: integers and halves), without its per-call overhead (it dominated
    the cost of a GDSC cell).  A tie group spanning sorted positions i..j gets (i + j)/2 + 1."""
    m, n = A.shape
    if m == 1:  # one trial (most cells): plain indexing, no *_along_axis overhead
        order1 = np.argsort(A[0], kind="stable")
        s1 = A[0][order1]
        if not (s1[1:] == s1[:-1]).any():
            r = np.empty((1, n))
            r[0, order1] = np.arange(1.0, n + 1.0)
            return r
    return sorted_ranks(A)[2]


def sorted_ranks(A: np.ndarray, kind: str | None = "stable") -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """(order, starts, ranks) of every row of ``A`` (m, n): the ``argsort`` (stable by default; for finite rows any
    kind gives the same ranks, ties get their mean), the flags of the sorted positions that start a new value (None
    when no row has ties) and ``average_ranks``'s values."""
    m, n = A.shape
    order = np.argsort(A, axis=1, kind=kind)
    # flat positions of the sorted entries: one 1-d take / put (the *_along_axis helpers index in 2-d, slower)
    flat = order + np.arange(m)[:, None] * n if m > 1 else order
    s = np.ascontiguousarray(A).reshape(-1).take(flat)
    starts = np.ones((m, n), dtype=bool)
    np.not_equal(s[:, 1:], s[:, :-1], out=starts[:, 1:])
    ranks = np.empty((m, n))
    if starts.all():  # no ties (the usual case for real-valued predictions): ranks are the sorted positions
        ranks.put(flat, np.arange(1.0, n + 1.0))   # put repeats the n values over the m rows (np.tile's values)
        return order, None, ranks
    pos = np.broadcast_to(np.arange(n), (m, n))
    ends = np.ones((m, n), dtype=bool)
    ends[:, :-1] = starts[:, 1:]
    first = np.maximum.accumulate(np.where(starts, pos, 0), axis=1)
    last = np.minimum.accumulate(np.where(ends, pos, n - 1)[:, ::-1], axis=1)[:, ::-1]
    ranks.reshape(-1)[flat.reshape(-1)] = ((first + last) / 2.0 + 1.0).reshape(-1)
    return order, starts, ranks
