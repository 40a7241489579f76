"""What the methods compared in Honkela et al. 2018 (Methods 4.6) share: the data are scaled into the unit box with
*public* bounds (``scale_unit``, ``public_bounds``), the releases are ε-DP under replace-one neighbours of the private
rows, and they are audited on the unit-box design (``audit.UNIT_BOX``).  ``UnitBoxLR`` states these facts once for
``oplr`` and ``fmlr``."""

from __future__ import annotations

import numpy as np

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


def clip_unit(a: np.ndarray) -> np.ndarray:
    """``a`` clipped to [−1, 1] in place (the one clipping step of oplr's and fmlr's scaling into the unit box,
    looked up here at call time: the audit's ``*/unclipped`` mutants patch it)."""
    return np.clip(a, -1.0, 1.0, out=a)


def scale_unit(X: np.ndarray, y: np.ndarray | None, B_x: float, B_y: float, l2_ball: bool
               ) -> tuple[np.ndarray, np.ndarray | None]:
    """x ← clip(x/B_x, −1, 1) (then onto the unit L2 ball if ``l2_ball``), y ← clip(y/B_y, −1, 1)."""
    Xs = clip_unit(X / B_x)   # a new array: clipped and projected in place (the same floats as new arrays)
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
    return clip_unit(y / B_y)


def public_bounds(split: Split, bound_x: float | None, bound_y: float, who: str) -> tuple[float, float]:
    """(B_x, B_y): the parameter B_x or the dataset's declared ``meta['x_bound']``, and the declared B_y."""
    B_x = bound_x if bound_x is not None else split.meta.get("x_bound")
    if B_x is None:
        raise UserError(f"{who}: params.bound_x must be given (the dataset declares no meta['x_bound']), got None")
    return float(B_x), float(bound_y)


def unit_box_rows(X: np.ndarray, B_x: float, bias: bool) -> np.ndarray:
    """``scale_unit``'s x ← clip(x/B_x, −1, 1) of rows (N, d), after a bias column of ones if ``bias``
    (``with_bias`` of the scaled rows): (N, d + 1) or (N, d), a new array."""
    Xs = clip_unit(X / B_x)
    return np.concatenate([np.ones((Xs.shape[0], 1)), Xs], axis=1) if bias else Xs


