"""Plain data containers passed between datasets, algorithms and metrics."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpexp.privacy.guarantee import Guarantee


@dataclass(frozen=True)
class Sizes:
    """Requested sizes of one cell. ``max_*`` are the largest values in the experiment's size grid, so a
    dataset can draw pools once per repeat and take nested prefixes (the paper protocols do this)."""

    n_private: int
    n_public: int
    n_test: int
    max_private: int
    max_public: int
    max_test: int

    def pools(self, n: int) -> tuple[slice, slice, slice]:
        """Slices of the requested test, public and private rows among ``n`` rows laid out as a test pool
        (``max_test`` rows), a public pool (``max_public``) and the rest (private): a prefix of each pool, so the
        sizes of one grid are nested; ``n_private`` 'all' (-1) takes every row after the two pools."""
        q0 = self.max_test + self.max_public
        n_priv = n - q0 if self.n_private < 0 else self.n_private
        return slice(0, self.n_test), slice(self.max_test, self.max_test + self.n_public), slice(q0, q0 + n_priv)


_UNCHECKED = object()   # ``Split.nonfinite``'s "not checked yet" (None means "all finite")


@dataclass
class Split:
    """The data one cell sees. ``X_*`` are 2-D (rows x features) and ``y_*`` 1-D float arrays.

    ``meta`` carries dataset facts an algorithm or metric may need and that are *public* (declared bounds, the
    true coefficients of a synthetic model, feature names...).  Anything derived from the
    private rows that is not DP must not go into ``meta`` unless the paper protocol does so and says so.
    """

    X_private: np.ndarray
    y_private: np.ndarray
    X_public: np.ndarray
    y_public: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def d(self) -> int:
        return int(self.X_test.shape[1] if self.X_test.ndim == 2 else self.X_private.shape[1])

    def nonfinite(self) -> str | None:
        """The reason an estimator must refuse this split — ``"non-finite value in private x: 2 rows"`` (several
        parts joined by "; ") — or None when its private and public rows are all finite.  Rows an estimator reads
        are the private and public x and y; the test rows are only predicted at and scored.  A split whose arrays
        are all read-only (the runner's: its datasets freeze them) keeps the answer, since it cannot change; the
        methods of one cell size share their ``Split`` objects, so each is checked once."""
        hit = self.__dict__.get("_nonfinite", _UNCHECKED)
        if hit is not _UNCHECKED:
            return hit
        parts = []
        arrays = (("private x", self.X_private), ("private y", self.y_private),
                  ("public x", self.X_public), ("public y", self.y_public))
        for what, a in arrays:
            a = np.asarray(a)
            if a.size == 0 or a.dtype.kind not in "fc":
                continue
            ok = np.isfinite(a)
            if not ok.all():
                rows = int(np.count_nonzero(~ok.reshape(ok.shape[0], -1).all(axis=1))) if ok.ndim else 1
                parts.append(f"non-finite value in {what}: {rows} row{'s' if rows != 1 else ''}")
        reason = "; ".join(parts) or None
        if all(isinstance(a, np.ndarray) and not a.flags.writeable for _, a in arrays):
            self.__dict__["_nonfinite"] = reason
        return reason

    def vouch_finite(self) -> "Split":
        """Records ``nonfinite``'s answer None without reading the rows: for a dataset that took this split's
        private and public rows from arrays it checked whole (every row and response an estimator could read from
        them finite), once for many splits — the paper's GDSC grids make up to 17,000 splits a repeat, each of whose
        four checks cost more than its fit.  Recorded only when every one of the four arrays is read-only (then
        ``nonfinite`` would keep its own answer too: it cannot change).  Returns the split."""
        arrays = (self.X_private, self.y_private, self.X_public, self.y_public)
        if all(isinstance(a, np.ndarray) and not a.flags.writeable for a in arrays):
            self.__dict__["_nonfinite"] = None
        return self

    @property
    def X_train(self) -> np.ndarray:
        return np.concatenate([self.X_public, self.X_private], axis=0)

    @property
    def y_train(self) -> np.ndarray:
        return np.concatenate([self.y_public, self.y_private], axis=0)


_FLOAT = np.dtype(float)


@dataclass
class Output:
    """What an algorithm returns for one cell.

    ``predictions`` has shape (trials, n_test): one row per independent run ("trial") of the algorithm on the same
    split.  NaN rows mark trials where the algorithm failed (e.g. NoisyStats), never a made-up number.
    ``extras`` are scalar diagnostics written as additional metric rows (e.g. the chosen threshold ``omega_x``).
    ``coef`` optionally holds fitted coefficients with shape (trials, d).
    ``guarantee`` is what the run spent, derived from the mechanisms it called (``ledger.guarantee()``,
    ``dpexp.privacy``); the runner writes it on every row of the cell (docs/privacy.md).

    Uncertainty (optional, for the calibration metrics of ``dpexp.metrics.calibration``): ``coef_interval`` and
    ``pred_interval`` map a nominal level (e.g. 0.9) to equal-tailed credible intervals ``(lower, upper)`` of the
    coefficients, each (trials, d), and of the regression function at the test rows, each (trials, n_test).
    ``clip_bounds`` (trials, 2) are the (B_x, B_y) the private rows were clipped at, per trial: an algorithm that
    clips estimates the regression of the clipped data, which is the truth its intervals are compared with.
    """

    predictions: np.ndarray
    extras: dict[str, float] = field(default_factory=dict)
    coef: np.ndarray | None = None
    guarantee: Guarantee | None = None
    coef_interval: dict[float, tuple[np.ndarray, np.ndarray]] | None = None
    pred_interval: dict[float, tuple[np.ndarray, np.ndarray]] | None = None
    clip_bounds: np.ndarray | None = None

    def __post_init__(self) -> None:
        p = self.predictions
        if type(p) is np.ndarray and p.dtype is _FLOAT and p.ndim == 2:   # already (trials, n_test) floats
            return
        p = np.asarray(p, dtype=float)
        if p.ndim == 1:
            p = p[None, :]
        self.predictions = p

    @property
    def trials(self) -> int:
        return int(self.predictions.shape[0])

    @property
    def failed(self) -> np.ndarray:
        """Boolean mask (trials,) of failed trials."""
        return ~np.all(np.isfinite(self.predictions), axis=1)
