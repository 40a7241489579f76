"""Per-split sums of the rows of several splits at once (the splits of one ``run_many`` call, of different n).

``Segments`` lays the rows of S splits out in one flat array, split i's n_i rows preceded by one slot holding −0.0:
segment i is ``[starts[i], starts[i] + n_i + 1)``.  ``np.add.reduceat`` over a segment computes
v[start] + Σ(v[start + 1 : end]) with numpy's pairwise sum of the rows, and −0.0 is the exact additive identity
(−0.0 + s = s for every float s, also ±0 and NaN), so each split's sum is the float ``np.sum`` gives on that
split's rows alone, bit for bit, whatever the other splits are (a split is a batch of one).  A split without rows
sums to −0.0.

``split_moments`` gives the OLS sufficient statistics of Alabi et al. (2020) Eq. (2) per split from these sums:
x̄ = Σx/n, ȳ = Σy/n, nvar(x) = Σ(x_i − x̄)², ncov(x, y) = Σ(x_i − x̄)(y_i − ȳ) — the floats of
``x.mean()``, ``np.sum((x - x.mean()) ** 2)`` and ``np.sum((x - x̄) * (y - ȳ))`` on one split.
"""

from __future__ import annotations

import numpy as np


class Segments:
    """The flat layout of the rows of splits with ``lengths`` rows each (module docstring)."""

    def __init__(self, lengths: np.ndarray) -> None:
        self.n = np.asarray(lengths, dtype=np.int64)
        seg = self.n + 1
        self.starts = np.cumsum(seg) - seg
        self.size = int(seg.sum())
        self.rows = np.ones(self.size, dtype=bool)
        self.rows[self.starts] = False
        self.owner = np.repeat(np.arange(self.n.size), seg)   # split of each flat entry

    def flat(self, arrays: list[np.ndarray]) -> np.ndarray:
        """The splits' rows laid out flat (their slots −0.0)."""
        out = np.empty(self.size)
        out[self.starts] = -0.0
        if arrays:
            out[self.rows] = np.concatenate([np.asarray(a, dtype=float).reshape(-1) for a in arrays])
        return out

    def sums(self, v: np.ndarray) -> np.ndarray:
        """Σ over each split's rows of the flat ``v`` (its slots are set to −0.0 here, in place): (S,)."""
        if not self.n.size:
            return np.zeros(0)
        v[self.starts] = -0.0
        return np.add.reduceat(v, self.starts)

    def spread(self, per_split: np.ndarray) -> np.ndarray:
        """A value per split repeated over its segment (flat)."""
        return per_split[self.owner]


def split_means(vs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(n, v̄) per split, (S,) each: the floats of ``v.mean()`` on each split alone (NaN for a split without rows)."""
    seg = Segments(np.array([np.size(v) for v in vs], dtype=np.int64))
    with np.errstate(invalid="ignore", divide="ignore"):
        return seg.n, seg.sums(seg.flat(vs)) / seg.n


def split_moments(xs: list[np.ndarray], ys: list[np.ndarray]
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(n, x̄, ȳ, nvar, ncov) per split, (S,) each (module docstring); x̄ and ȳ are NaN for a split without rows,
    nvar and ncov then −0.0."""
    seg = Segments(np.array([np.size(x) for x in xs], dtype=np.int64))
    X, Y = seg.flat(xs), seg.flat(ys)
    with np.errstate(invalid="ignore", divide="ignore"):
        xm = seg.sums(X.copy()) / seg.n
        ym = seg.sums(Y.copy()) / seg.n
    X -= seg.spread(xm)
    Y -= seg.spread(ym)
    Y *= X                     # (x − x̄)(y − ȳ)
    X *= X                     # (x − x̄)²
    return seg.n, xm, ym, seg.sums(X), seg.sums(Y)
