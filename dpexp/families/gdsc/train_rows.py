"""The training rows of one size's splits (each split's public then private rows, ``Split.X_train``) laid out once
and shared by the non-private methods that read them all: ``lr`` (fixed and gamma: their exact statistics) and
``rlr`` (clipped copies of them).

The layout (``release_batch.RowBlocks``: the splits of equal n adjacent, a group's rows one contiguous block) is
kept in the chunk's scratch under the names of the rows (``dpexp.chunk.ChunkRows``; one entry: the methods of a
size run one after the other), its rows read-only — a method that clips copies them (``clipped``).  The exact
statistics are a pure function of the rows, computed once for all readers (each split's summed as by its own
``sufficient_stats``: equal to the bit; tests/gdsc/test_shared_rows.py).  Nothing private is released here: these methods are not DP.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from dpexp.chunk import ChunkRows
from dpexp.families.gdsc.release_batch import RowBlocks

class TrainRows:
    """``RowBlocks`` of the splits' (public, private) parts: ``rows`` (its X, y read-only), ``floats`` (2-D float64
    X and 1-D float64 y, each split's y parts as long as its X parts: the layout's statistics apply), ``stats()``
    the exact statistics kept after their first call."""

    def __init__(self, Xs: Sequence[tuple[np.ndarray, ...]], ys: Sequence[tuple[np.ndarray, ...]]) -> None:
        self.rows = rows = RowBlocks(list(Xs), list(ys))
        rows.X.flags.writeable = rows.y.flags.writeable = False
        self.floats = bool(rows.X.dtype == rows.y.dtype == np.float64 and rows.X.ndim == 2 and rows.y.ndim == 1
                           and [len(a) for i in rows.order.tolist() for a in ys[i]] == rows.part_rows)
        self._stats: tuple[np.ndarray, ...] | None = None

    def stats(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """(XX (S, d, d), Xy (S, d), yy (S,), counts (S,)) of the rows as given (read-only, computed once), or None
        when not ``floats`` (the caller's per-split path)."""
        if not self.floats:
            return None
        if self._stats is None:
            got = (*self.rows.stats(), self.rows.counts)
            for a in got:
                a.flags.writeable = False
            self._stats = got
        return self._stats  # type: ignore[return-value]

    def clipped(self, bounds_x: list[float], bounds_y: list[float]) -> tuple[np.ndarray, np.ndarray]:
        """New X, y of the layout with part i (``rows.part_rows``' order) clipped to [−b, b] at its bounds
        (``bounds_x[i]``, ``bounds_y[i]``): ``np.clip`` of each part into a new array (exact: the same floats as
        clipping a copy in place), neighbouring parts of one bound in one call, an infinite bound copied."""
        rows = self.rows
        return _clip_into(rows.X, rows.part_rows, bounds_x), _clip_into(rows.y, rows.part_rows, bounds_y)


def _clip_into(A: np.ndarray, counts: list[int], bounds: list[float]) -> np.ndarray:
    """``A`` with its consecutive row blocks (``counts[i]`` rows each) clipped to [−bounds[i], bounds[i]], as a new
    array (``baselines._clip_parts`` of a copy, to the bit); NaN bounds are never equal, so each such block alone,
    as there."""
    out = np.empty_like(A)
    start = 0
    i, n = 0, len(counts)
    while i < n:
        b, stop = bounds[i], start + counts[i]
        i += 1
        while i < n and bounds[i] == b:
            stop += counts[i]
            i += 1
        if stop > start:
            if b == np.inf:
                out[start:stop] = A[start:stop]
            else:
                np.clip(A[start:stop], -b, b, out=out[start:stop])
        start = stop
    return out


def shared_train_rows(Xs: Sequence[tuple[np.ndarray, np.ndarray]], ys: Sequence[tuple[np.ndarray, np.ndarray]],
                      chunk: ChunkRows | None, ks: Sequence[int]) -> TrainRows:
    """``TrainRows(Xs, ys)`` of the (public, private) rows of the splits ``ks`` of a call, shared by every call of
    the chunk with the same rows (``chunk.rows``; one entry); without a chunk, this call's own."""
    if chunk is None:
        return TrainRows(Xs, ys)
    names = (chunk.rows("public", ks), chunk.rows("private", ks))
    return chunk.kept("gdsc.train_rows", names, lambda: TrainRows(Xs, ys), maxsize=1)
