"""The rows of many splits laid out group by group of equal n, and their Gram products as stacked calls (the
compared methods and baselines: ``fmlr``, ``oplr``, their paper-protocol versions, ``plr_paper``).

A ``run_many`` call holds the splits of one size; lines untested for a drug are dropped, so their n differ but
repeat (a few distinct n per call).  ``Blocks`` concatenates per-split arrays once with the splits of equal n next
to each other, so that a group's rows are one block and its (G, n, D) stack a reshape of it (no gather).
``gram`` gives every split's ZᵀZ and Zᵀy as one stacked product per group: numpy calls BLAS on each matrix of a
C-contiguous stack as on the split's own (n, D) rows (syrk for ZᵀZ, the same kernel for Zᵀy), so each result
equals the split's ``Z.T @ Z``, ``Z.T @ y`` to the bit (tests/gdsc/test_blocks.py).  ``row_norms``: the rows'
Euclidean norms as ``np.linalg.norm(X, axis=-1)`` computes them, to the bit, column by column.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


class Blocks:
    """The layout of S row sets of ``counts[i]`` rows: groups of equal n in order of first appearance, each group's
    sets in their own order.  ``blocks`` [(n, members, first row)], ``order`` the sets in layout order, ``first[i]``
    set i's first row in the layout."""

    def __init__(self, counts: Sequence[int]) -> None:
        self.counts = [int(c) for c in counts]
        groups: dict[int, list[int]] = {}
        for i, n in enumerate(self.counts):
            groups.setdefault(n, []).append(i)
        self.blocks: list[tuple[int, list[int], int]] = []
        self.order: list[int] = []
        self.first = [0] * len(self.counts)
        start = 0
        for n, members in groups.items():
            self.blocks.append((n, members, start))
            for j, i in enumerate(members):
                self.first[i] = start + j * n
            self.order += members
            start += n * len(members)

    def cat(self, parts: Sequence[np.ndarray | tuple[np.ndarray, ...]]) -> np.ndarray:
        """The sets' arrays (``parts[i]`` of ``counts[i]`` rows; a tuple: arrays whose rows follow each other, e.g.
        a split's public then private rows) concatenated in layout order (a new array)."""
        return np.concatenate([a for i in self.order for a in (parts[i] if isinstance(parts[i], tuple)
                                                                 else (parts[i],))])

    def parts(self, A: np.ndarray) -> list[np.ndarray]:
        """Each set's rows of an array laid out as ``cat``'s result (views), in the sets' own order."""
        return [A[f:f + n] for f, n in zip(self.first, self.counts)]

    def gram(self, Z: np.ndarray, y: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray | None]:
        """ZᵀZ (S, D, D) and Zᵀy (S, D) (None without ``y``) of each set's rows of ``Z`` (N, D) and ``y`` (N,),
        laid out as ``cat``'s result: one stacked product per group of equal n."""
        Z = np.ascontiguousarray(Z)
        S, D = len(self.counts), Z.shape[1]
        ZZ = np.empty((S, D, D))
        for n, members, a in self.blocks:
            G = len(members)
            if G == 1:
                Zi = Z[a:a + n]
                ZZ[members[0]] = Zi.T @ Zi
                continue
            Zg = Z[a:a + G * n].reshape(G, n, D)
            ZZ[members] = np.swapaxes(Zg, -1, -2) @ Zg
        return ZZ, None if y is None else self.matvec(Z, y)

    def matvec(self, Z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Zᵀy (S, D) of each set's rows of ``Z`` (N, D) and ``y`` (N,), laid out as ``cat``'s result."""
        Z, y = np.ascontiguousarray(Z), np.ascontiguousarray(y)
        S, D = len(self.counts), Z.shape[1]
        Zy = np.empty((S, D))
        for n, members, a in self.blocks:
            G = len(members)
            if G == 1:
                Zy[members[0]] = Z[a:a + n].T @ y[a:a + n]
                continue
            Zg = Z[a:a + G * n].reshape(G, n, D)
            Zy[members] = (np.swapaxes(Zg, -1, -2) @ y[a:a + G * n].reshape(G, n, 1))[..., 0]
        return Zy


def row_norms(X: np.ndarray) -> np.ndarray:
    """``np.linalg.norm(X, axis=-1)`` of an (N, d) float array, to the bit, at a fraction of its cost: numpy sums
    each row's squares (a reduction over a short contiguous axis: one inner-loop call per row) by its pairwise
    summation — for d ≤ 128 eight running sums r_j = Σ_k x²_{j+8k} over the first d − d mod 8 entries, combined as
    ((r₀ + r₁) + (r₂ + r₃)) + ((r₄ + r₅) + (r₆ + r₇)), then the rest added in order (d < 8: added in order from
    0).  The same additions are made here column by column for all rows at once (tests/gdsc/test_blocks.py holds
    it to ``np.linalg.norm`` for d = 1…130).  Any other input: ``np.linalg.norm``."""
    N, d = X.shape if X.ndim == 2 else (0, 0)
    if X.ndim != 2 or X.dtype != np.float64 or not 1 <= d <= 128 or N == 0:
        return np.linalg.norm(X, axis=-1)
    Q = X * X   # the squares (a new array: X untouched); its columns are the running sums below
    if d < 8:
        res = np.zeros(N)
        for i in range(d):
            res += Q[:, i]
        return np.sqrt(res, out=res)
    i = 8
    while i < d - d % 8:
        Q[:, :8] += Q[:, i:i + 8]
        i += 8
    res = ((Q[:, 0] + Q[:, 1]) + (Q[:, 2] + Q[:, 3])) + ((Q[:, 4] + Q[:, 5]) + (Q[:, 6] + Q[:, 7]))
    for k in range(i, d):
        res += Q[:, k]
    return np.sqrt(res, out=res)
