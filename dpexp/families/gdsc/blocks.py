"""The rows of many splits laid out group by group of equal n, and their Gram products as stacked calls (the
compared methods and baselines: ``fmlr``, ``oplr``, their paper-protocol versions, ``plr_paper``).

A ``run_many`` call holds the splits of one size; lines untested for a drug are dropped, so their n differ but
repeat (a few distinct n per call).  ``Blocks`` concatenates per-split arrays once with the splits of equal n next
to each other, so that a group's rows are one block and its (G, n, D) stack a reshape of it (no gather).
``gram`` gives every split's ZᵀZ and Zᵀy as one stacked product per group.  ``row_norms``: the rows' Euclidean
norms.
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
    """The Euclidean norms of the rows of an (N, d) array, sqrt(Σ_j x_ij²) (one ``np.einsum`` pass: a reduction
    over the short row axis, in einsum's summation order)."""
    return np.sqrt(np.einsum("ij,ij->i", X, X))
