"""The input checks shared by the simple-linear-regression algorithms (Alabi et al. 2020): ``inputs`` at the top of
every algorithm's ``run``, and the parameter types they share.

Every SLR algorithm sees a ``Split`` whose private rows are one-dimensional: ``X_private`` of shape (n, 1) and
``y_private`` of shape (n,).  Predictions are made at the test abscissae ``X_test[:, 0]`` (normally 0.25 and 0.75,
i.e. (p25, p75) of the paper) and returned as an array of shape (trials, n_test).
"""

from __future__ import annotations

import warnings
from typing import Annotated, Literal

import numpy as np
from pydantic import Field, model_validator

from dpexp.components import Params
from dpexp.errors import UserError
from dpexp.types import Split

#: type of the ``k`` parameter: a number of matchings >= 1, or "all" (all n(n-1)/2 pairs, i.e. k = n - 1)
KType = Literal["all"] | Annotated[int, Field(ge=1)]


def xy(split: Split, name: str) -> tuple[np.ndarray, np.ndarray]:
    """The private (x, y) as 1-D float arrays; ``UserError`` if the split is not one-dimensional."""
    X = np.asarray(split.X_private, dtype=float)
    y = np.asarray(split.y_private, dtype=float).reshape(-1)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2 or X.shape[1] != 1:
        raise UserError(f"{name}: simple linear regression needs X_private with 1 column, got shape {X.shape}")
    if X.shape[0] != y.shape[0]:
        raise UserError(f"{name}: X_private has {X.shape[0]} rows but y_private has {y.shape[0]}")
    return X[:, 0], y


def x_new(split: Split, name: str) -> np.ndarray:
    """The prediction abscissae (n_test,) from ``X_test`` (normally [0.25, 0.75])."""
    Xt = np.asarray(split.X_test, dtype=float)
    if Xt.ndim == 1:
        Xt = Xt[:, None]
    if Xt.ndim != 2 or Xt.shape[1] != 1 or Xt.shape[0] == 0:
        raise UserError(f"{name}: X_test must have shape (n_test >= 1, 1), got {Xt.shape}")
    return Xt[:, 0]


def check_unit_box(x: np.ndarray, y: np.ndarray, name: str) -> None:
    """The sensitivity bounds of NoisyStats / DP-GD / MOS assume (x_i, y_i) in [0, 1]^2 (Alabi et al. Sec. 2)."""
    if x.size and (np.nanmin(x) < 0 or np.nanmax(x) > 1 or np.nanmin(y) < 0 or np.nanmax(y) > 1):
        raise UserError(f"{name}: data must lie in [0, 1]^2 (the declared bounds its sensitivity uses); "
                        "rescale/clip the dataset")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise UserError(f"{name}: x and y must be finite")


def check_epsilon(epsilon: float, name: str) -> float:
    if not (np.isfinite(epsilon) and epsilon > 0):
        raise UserError(f"{name}: epsilon must be > 0 and finite, got {epsilon}")
    return float(epsilon)


def inputs(split: Split, name: str, epsilon: float | None = None, unit_box: bool = False
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float | None]:
    """The checked inputs of an SLR algorithm: (x, y, x_new, ε) — ε > 0 when given (None for non-private
    references), x and y one-dimensional, in [0, 1]² when the algorithm's sensitivity assumes it (``unit_box``), and
    the prediction abscissae.  Each failed check is one ``UserError`` naming the algorithm."""
    eps = None if epsilon is None else check_epsilon(epsilon, name)
    x, y = xy(split, name)
    if unit_box:
        check_unit_box(x, y, name)
    return x, y, x_new(split, name), eps


class RangeParams(Params):
    """Output range [r_l, r_u] of the DP medians (Table 1: -0.5, 1.5 for OI/UCI data; -2, 2 for synthetic)."""

    r_l: float = Field(-0.5, description="lower end of the output range of p25/p75 (Table 1)")
    r_u: float = Field(1.5, description="upper end of the output range of p25/p75 (Table 1)")

    @model_validator(mode="after")
    def _range(self):  # noqa: ANN202
        if not (np.isfinite(self.r_l) and np.isfinite(self.r_u) and self.r_l < self.r_u):
            raise ValueError(f"r_l must be < r_u (both finite), got r_l={self.r_l}, r_u={self.r_u}")
        return self


class OutsideRangeWarning(UserWarning):
    """The median of an SLR method's estimates lies outside its declared output range [r_l, r_u], to which its
    release is confined (a diagnostic of the data for the analyst: the counts are not released)."""


_WARNED_RANGE: set[tuple[str, float, float]] = set()


def warn_outside_range(name: str, z: np.ndarray, lo: float, hi: float, x0: float) -> None:
    """Warn (once per process, algorithm and range) when the median of the estimates ``z`` (NaN padding ignored)
    lies outside the output range [lo, hi] of the DP median — half of them or more beyond one end.  Estimates beyond
    the range act as the range's end, which leaves the median where it is while fewer than half lie beyond one end
    (the paper's design); from half on, the release is confined to the range whatever the data say, silently
    otherwise (issue 30: y in [80, 200] against the default [-0.5, 1.5])."""
    key = (name, float(lo), float(hi))
    if key in _WARNED_RANGE:
        return
    finite = np.isfinite(z)
    n = int(np.count_nonzero(finite))
    below, above = int(np.count_nonzero(finite & (z < lo))), int(np.count_nonzero(finite & (z > hi)))
    if n and 2 * max(below, above) >= n:
        _WARNED_RANGE.add(key)
        warnings.warn(f"{name}: {below + above} of {n} pairwise estimates at x = {x0:g} lie outside the output range "
                      f"[r_l, r_u] = [{lo:g}, {hi:g}] ({below} below, {above} above), so their median does and the "
                      "DP median is confined to the range; set r_l, r_u to cover the response's range (or rescale "
                      "the data to [0, 1])", OutsideRangeWarning, stacklevel=3)
