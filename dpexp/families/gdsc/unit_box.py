"""What the methods compared in Honkela et al. 2018 (Methods 4.6) share: the data are scaled into the unit box with
*public* bounds (``scale_unit``, ``public_bounds``), the releases are ε-DP under replace-one neighbours of the private
rows, and they are audited on the unit-box design (``audit.UNIT_BOX``).  ``UnitBoxLR`` states these facts once for
``oplr`` and ``fmlr``."""

from __future__ import annotations

import numpy as np

from dpexp import cache
from dpexp.components import BatchedAlgorithm
from dpexp.errors import UserError
from dpexp.families.gdsc.audit import UNIT_BOX
from dpexp.families.gdsc.batching import run_grouped
from dpexp.families.gdsc.blocks import row_norms
from dpexp.types import Output, Split


class UnitBoxLR(BatchedAlgorithm):
    """Base of the compared methods: GDSC family, replace-one neighbours, audited on the unit box, and a
    ``run_many`` that checks ε once and hands each group of splits sharing (d, B_x, B_y) to ``_run_group``, which
    scales their rows in one call and fits them in one batched call (``batching``)."""

    family = "gdsc"
    neighbouring = "replace-one"
    audit = UNIT_BOX

    def run_many(self, splits: list[Split], epsilon: float, delta: float, ledgers: list,
                 trials: int = 1) -> list[Output | Exception]:
        def key(k: int) -> tuple[int, float, float]:
            return (splits[k].d,) + public_bounds(splits[k], self.params.bound_x, self.params.bound_y, self.name)

        return run_grouped(self.name, splits, epsilon, ledgers, key, lambda g, group, eps, lgs, out: self._run_group(
            *g, group, splits, eps, lgs, trials, out))

    def _run_group(self, d: int, B_x: float, B_y: float, ks: list[int], splits: list[Split], epsilon: float,
                   ledgers: list, trials: int, out: list) -> None:
        """The splits ``ks``, all of dimension d and bounds (B_x, B_y): ``out[k]`` an ``Output`` or the exception."""
        raise NotImplementedError


def scale_unit(X: np.ndarray, y: np.ndarray | None, B_x: float, B_y: float, l2_ball: bool
               ) -> tuple[np.ndarray, np.ndarray | None]:
    """x ← clip(x/B_x, −1, 1) (then onto the unit L2 ball if ``l2_ball``), y ← clip(y/B_y, −1, 1)."""
    Xs = X / B_x   # a new array: clipped and projected in place (the same floats as new arrays)
    np.clip(Xs, -1.0, 1.0, out=Xs)
    if l2_ball and Xs.size:
        # row by row, so in blocks of rows that stay in cache (row_norms makes d column passes over its rows)
        for a in range(0, Xs.shape[0], _NORM_ROWS):
            blk = Xs[a:a + _NORM_ROWS]
            nrm = row_norms(blk)[..., None]   # np.linalg.norm(blk, axis=-1, keepdims=True), to the bit
            blk /= np.maximum(nrm, 1.0)
    return Xs, None if y is None else unit_box_y(y, B_y)


#: rows per block of ``scale_unit``'s projection (4096 rows of 10 floats: 330 kB)
_NORM_ROWS = 4096


def unit_box_y(y: np.ndarray, B_y: float) -> np.ndarray:
    """y ← clip(y/B_y, −1, 1) (a new array)."""
    ys = y / B_y
    np.clip(ys, -1.0, 1.0, out=ys)
    return ys


def public_bounds(split: Split, bound_x: float | None, bound_y: float, who: str) -> tuple[float, float]:
    """(B_x, B_y): the parameter B_x or the dataset's declared ``meta['x_bound']``, and the declared B_y."""
    B_x = bound_x if bound_x is not None else split.meta.get("x_bound")
    if B_x is None:
        raise UserError(f"{who}: params.bound_x must be given (the dataset declares no meta['x_bound']), got None")
    return float(B_x), float(bound_y)


def whole_rows(a: np.ndarray) -> np.ndarray | None:
    """The read-only array whose first rows ``a`` is: ``a`` itself if it owns its (read-only) data, the array it is
    a view of if it is that array's first rows (``whole[:m]``: same dtype, columns and strides, same first row; the GDSC
    path's private rows, ``datasets.gdsc``); None for any other array (writeable ones included: what is computed
    from the whole is memoised by its identity, so it must not change; a view of a read-only array is read-only)."""
    if type(a) is not np.ndarray:
        return None
    b = a.base
    if b is None:
        return None if a.flags.writeable else a
    # a view with b's strides and columns lies in b's buffer; it starts at b's first row iff it does not reach b's
    # rows from its own length on (bounds check, no data read; an empty view is an empty prefix)
    if (type(b) is np.ndarray and b.base is None and not b.flags.writeable and b.dtype == a.dtype
            and b.strides == a.strides
            and b.shape[1:] == a.shape[1:] and not _may_share(a, b[a.shape[0]:])):
        return b
    return None


_may_share = np.may_share_memory


def split_wholes(splits: list[Split], ks: list[int]) -> tuple[np.ndarray, ...] | None:
    """For the splits ``ks``: (X_public, y_public, whole X_private, whole y_private, X_test) of each, flattened, when
    each is a float64 array owning its read-only data (the private rows: the first rows of one, ``whole_rows``) —
    the rows a chunk's ``run_many`` calls share at every n_private (``datasets.gdsc``); else None.  Looked up once
    for the arrays of these splits (``cache.memo_objects``, by their identities: oplr and fmlr are handed the same
    splits of a size; a base and its read-only flag are fixed once checked, as ``_scaled_wholes``' memos assume)."""
    own = tuple(a for k in ks for s in (splits[k],) for a in (s.X_public, s.y_public, s.X_private, s.y_private,
                                                              s.X_test))
    return cache.memo_objects("gdsc.split_wholes", own, None, lambda: _split_wholes(splits, ks), maxsize=1)


def _split_wholes(splits: list[Split], ks: list[int]) -> tuple[np.ndarray, ...] | None:
    out: list[np.ndarray] = []
    for k in ks:
        s = splits[k]
        row = (s.X_public, s.y_public, whole_rows(s.X_private), whole_rows(s.y_private), s.X_test)
        for a in row:
            if type(a) is not np.ndarray or a.dtype != _F64 or a.base is not None or a.flags.writeable:
                return None
        if not (row[0].ndim == row[2].ndim == row[4].ndim == 2 and row[1].ndim == row[3].ndim == 1):
            return None
        out += row
    return tuple(out)


_F64 = np.dtype(np.float64)


def unit_box_rows(X: np.ndarray, B_x: float, bias: bool) -> np.ndarray:
    """``scale_unit``'s x ← clip(x/B_x, −1, 1) of rows (N, d), after a bias column of ones if ``bias``
    (``with_bias`` of the scaled rows): (N, d + 1) or (N, d), a new array."""
    Xs = X / B_x
    np.clip(Xs, -1.0, 1.0, out=Xs)
    return np.concatenate([np.ones((Xs.shape[0], 1)), Xs], axis=1) if bias else Xs


