"""Ranks of the rows of a matrix, ties given the mean of their ranks: the one ranking shared by the rank metrics
(``accuracy.Spearman``) and the grouping of cells by their responses (``cells``)."""

from __future__ import annotations

import numpy as np


#: the size (m·n) from which ``sorted_ranks`` orders finite rows by ``finite_order`` (below it, its dozen numpy
#: calls cost more than the ``argsort`` they replace: measured break-even ≈ 2500)
FINITE_ORDER_SIZE = 4096


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
    kind gives the same ranks, ties get their mean; ``kind="finite"``: rows known finite, ordered by
    ``finite_order`` from ``FINITE_ORDER_SIZE`` values on, else by the default kind), the flags of the sorted
    positions that start a new value (None when no row has ties) and ``average_ranks``'s values."""
    m, n = A.shape
    # kind "finite": rows known finite (``cells.ranks_and_codes``), ordered by ``finite_order`` when large
    order = finite_order(A) if kind == "finite" and m * n >= FINITE_ORDER_SIZE else None
    if order is None:
        order = np.argsort(A, axis=1, kind=None if kind == "finite" else kind)
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


def finite_order(A: np.ndarray) -> np.ndarray | None:
    """An ``argsort`` of every row of ``A`` (m, n) of finite floats from one integer ``sort`` (numpy sorts int64
    several times faster than it argsorts floats), or None where it cannot tell.

    Each value's bits as an order-preserving int64 key (−0 as 0; a negative float's magnitude bits flipped:
    x < y ⇔ key(x) < key(y)) with its lowest b bits replaced by the column index (b bits hold n), sorted: keys
    that differ above those bits sort as their values, and the index is read back from the low bits.  Values that
    differ only in their lowest b bits (within 2^b units in the last place of each other) could sort out of
    order: None when two neighbours after the sort have equal high bits and unequal values (the caller argsorts).
    Equal values sort by index (any order within a tie gives the same average ranks and dense codes)."""
    m, n = A.shape
    if A.dtype != np.float64 or n < 2 or n > 32768:
        return None
    b = (n - 1).bit_length()
    low = (1 << b) - 1
    key = (A + 0.0).view(np.int64)                 # + 0.0: −0 becomes 0 (equal values, equal keys)
    key = key ^ ((key >> 63) & 0x7FFFFFFFFFFFFFFF)
    key &= ~low
    key |= np.arange(n)
    key.sort(axis=1)
    order = key & low
    key ^= order                                   # the sorted high bits
    same = key[:, 1:] == key[:, :-1]
    if same.any():
        flat = order + np.arange(m)[:, None] * n if m > 1 else order
        s = np.ascontiguousarray(A).reshape(-1).take(flat)
        if (same & (s[:, 1:] != s[:, :-1])).any():
            return None
    return order
