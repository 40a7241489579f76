"""Stress datasets D, D′ for the audit: neighbours at the declared bounds, and the candidates searched.

A ``Design`` holds the public facts of the audit dataset: the declared box of one row (x ∈ [x_lo, x_hi]^d,
y ∈ [y_lo, y_hi]), the number of private rows, the test points and the ``meta`` the algorithm reads.  From it
``candidate_pairs`` builds neighbouring pairs under the algorithm's own relation:

* replace-one (bounded DP): D = base ∪ {z}, D′ = base ∪ {z′} for two distinct corners z ≠ z′ of the box;
* add-remove (unbounded DP): D = base, D′ = base ∪ {z} for a corner z.

Extreme points at the declared bounds maximise every per-row contribution (sums of products such as XᵀX and Xᵀy
are extremal at corners), and a handful of *base* datasets stress different failure modes:

* ``origin``: every base row at the point of the box closest to 0 — statistics near zero, so a release whose
  noise ignores one statistic (e.g. a zero-sensitivity XᵀX diagonal) or whose bound is derived from the data
  shows up as an atom or a scale change;
* ``extreme``: every base row at the upper x corner with y alternating between its bounds — large XᵀX,
  balanced Xᵀy, so a replaced row moves Xᵀy by its full range;
* ``spread``: x evenly spread over the box, y on a line between its bounds — typical, non-degenerate data
  (estimators that need distinct x, e.g. Theil–Sen);
* ``explicit``: the design's own ``explicit_base`` rows (only when a design names it in ``bases``).

The auditor runs a short pilot on every candidate and keeps the pair (and projection) whose outputs separate
most; see ``dpexp.audit.core``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpexp.errors import UserError
from dpexp.types import Split

BASES = ("origin", "extreme", "spread", "explicit")


@dataclass(frozen=True)
class Design:
    """Public facts of the audit dataset (see the module docstring)."""

    x_lo: tuple[float, ...]
    x_hi: tuple[float, ...]
    y_lo: float
    y_hi: float
    n: int = 20
    X_test: tuple[tuple[float, ...], ...] = ((1.0,),)
    meta: dict[str, Any] = field(default_factory=dict)
    bases: tuple[str, ...] = ("origin", "extreme", "spread")
    max_pairs: int = 18
    #: explicit replacement pairs (row z, row z′) as (x₁..x_d, y) tuples, tried on every base before the corner pairs
    extra_pairs: tuple[tuple[tuple[float, ...], tuple[float, ...]], ...] = ()
    #: data-derived meta computed from EACH dataset's own rows (e.g. σ for clipping), merged over ``meta``
    data_meta: Any = None
    #: the n − 1 shared rows (x₁..x_d, y) of the base named "explicit" (a design that needs a particular base, e.g.
    #: DP-GD's rows that keep the iterate where the changed row's gradients stay opposite)
    explicit_base: tuple[tuple[float, ...], ...] = ()

    def __post_init__(self) -> None:
        if len(self.x_lo) != len(self.x_hi) or not self.x_lo:
            raise UserError(f"audit design: x_lo and x_hi must have the same non-zero length, got {self.x_lo}, "
                            f"{self.x_hi}")
        if any(lo > hi for lo, hi in zip(self.x_lo, self.x_hi)) or self.y_lo > self.y_hi:
            raise UserError(f"audit design: lower bounds must not exceed upper bounds, got x {self.x_lo}..{self.x_hi},"
                            f" y {self.y_lo}..{self.y_hi}")
        if self.n < 2:
            raise UserError(f"audit design: n must be >= 2, got {self.n}")
        unknown = set(self.bases) - set(BASES)
        if unknown:
            raise UserError(f"audit design: unknown bases {sorted(unknown)}; valid: {list(BASES)}")
        if "explicit" in self.bases and len(self.explicit_base) != self.n - 1:
            raise UserError(f"audit design: the explicit base needs n - 1 = {self.n - 1} rows, got "
                            f"{len(self.explicit_base)}")

    @property
    def d(self) -> int:
        return len(self.x_lo)


@dataclass(frozen=True)
class NeighbourPair:
    """Two neighbouring splits and a printable description; ``key_d``/``key_dprime`` identify each dataset so that
    pilot runs on the same dataset are shared between pairs."""

    D: Split
    Dprime: Split
    description: str
    key_d: str
    key_dprime: str


def _fmt(z: np.ndarray) -> str:
    return "(" + ",".join(f"{v:g}" for v in z) + ")"


def corners(design: Design) -> np.ndarray:
    """Candidate replacement rows (x₁..x_d, y) at the corners of the declared box, shape (m, d + 1).

    All 2^d x-corners for d ≤ 3; for larger d the all-low, all-high and the two alternating corners.
    """
    lo, hi = np.asarray(design.x_lo, float), np.asarray(design.x_hi, float)
    d = design.d
    if d <= 3:
        xs = np.array(list(itertools.product(*[(lo[j], hi[j]) for j in range(d)])))
    else:
        alt = np.arange(d) % 2 == 0
        xs = np.array([lo, hi, np.where(alt, lo, hi), np.where(alt, hi, lo)])
    ys = np.unique([design.y_lo, design.y_hi])
    rows = [np.concatenate([x, [y]]) for x in xs for y in ys]
    return np.unique(np.array(rows), axis=0)


def base_rows(design: Design, base: str) -> tuple[np.ndarray, np.ndarray]:
    """The n − 1 shared rows (X, y) of the named base dataset."""
    lo, hi = np.asarray(design.x_lo, float), np.asarray(design.x_hi, float)
    m, d = design.n - 1, design.d
    if base == "origin":
        X = np.tile(np.clip(0.0, lo, hi), (m, 1))
        y = np.full(m, float(np.clip(0.0, design.y_lo, design.y_hi)))
    elif base == "extreme":
        X = np.tile(hi, (m, 1))
        y = np.where(np.arange(m) % 2 == 0, design.y_lo, design.y_hi).astype(float)
    elif base == "explicit":
        R = np.asarray(design.explicit_base, dtype=float).reshape(m, d + 1)
        X, y = R[:, :d], R[:, d]
    elif base == "spread":
        t = (np.arange(m) + 0.5) / m
        # coordinate j uses a shifted copy of the grid so columns are not collinear for d > 1
        T = np.stack([np.roll(t, 3 * j) for j in range(d)], axis=1)
        X = lo + (hi - lo) * T
        y = design.y_lo + (design.y_hi - design.y_lo) * T.mean(axis=1)
    else:
        raise UserError(f"unknown audit base {base!r}; valid: {list(BASES)}")
    return X, y


def make_split(design: Design, X: np.ndarray, y: np.ndarray) -> Split:
    """A ``Split`` whose private rows are (X, y); no public rows; test rows and meta from the design."""
    d = design.d
    Xt = np.asarray(design.X_test, dtype=float).reshape(-1, d)
    X, y = np.asarray(X, float).reshape(-1, d), np.asarray(y, float).ravel()
    meta = dict(design.meta)
    if design.data_meta is not None:
        meta.update(design.data_meta(X, y))
    return Split(X_private=X, y_private=y, X_public=np.empty((0, d)), y_public=np.empty(0), X_test=Xt,
                 y_test=np.full(Xt.shape[0], np.nan), meta=meta)


def candidate_pairs(design: Design, relation: str) -> list[NeighbourPair]:
    """Neighbouring pairs under ``relation`` ("replace-one" or "add-remove") over the design's bases; at most
    ``design.max_pairs`` in total, the most distant corner pairs first within each base."""
    if relation not in ("replace-one", "add-remove"):
        raise UserError(f"neighbouring relation must be 'replace-one' or 'add-remove', got {relation!r}")
    Z = corners(design)
    span = np.concatenate([np.asarray(design.x_hi) - np.asarray(design.x_lo), [design.y_hi - design.y_lo]])
    span = np.where(span > 0, span, 1.0)
    per_base = max(1, -(-design.max_pairs // len(design.bases)))
    out: list[NeighbourPair] = []
    for base in design.bases:
        Xb, yb = base_rows(design, base)
        if relation == "replace-one":
            for zi, zj in design.extra_pairs:
                zi, zj = np.asarray(zi, float), np.asarray(zj, float)
                D = make_split(design, np.vstack([Xb, zi[:-1]]), np.append(yb, zi[-1]))
                Dp = make_split(design, np.vstack([Xb, zj[:-1]]), np.append(yb, zj[-1]))
                out.append(NeighbourPair(D, Dp, f"{base} base, row {_fmt(zi)} -> {_fmt(zj)}",
                                         f"{base}+{_fmt(zi)}", f"{base}+{_fmt(zj)}"))
            combos = list(itertools.combinations(range(len(Z)), 2))
            combos.sort(key=lambda ij: -float(np.abs((Z[ij[0]] - Z[ij[1]]) / span).sum()))
            for i, j in combos[:per_base]:
                zi, zj = Z[i], Z[j]
                D = make_split(design, np.vstack([Xb, zi[:-1]]), np.append(yb, zi[-1]))
                Dp = make_split(design, np.vstack([Xb, zj[:-1]]), np.append(yb, zj[-1]))
                out.append(NeighbourPair(D, Dp, f"{base} base, row {_fmt(zi)} -> {_fmt(zj)}",
                                         f"{base}+{_fmt(zi)}", f"{base}+{_fmt(zj)}"))
        else:
            D = make_split(design, Xb, yb)
            for z in Z[:per_base]:
                Dp = make_split(design, np.vstack([Xb, z[:-1]]), np.append(yb, z[-1]))
                out.append(NeighbourPair(D, Dp, f"{base} base, add row {_fmt(z)}", f"{base}", f"{base}+{_fmt(z)}"))
    cap = design.max_pairs + len(design.extra_pairs) * len(design.bases)
    return out[:cap] if len(out) > cap else out
