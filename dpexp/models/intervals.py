"""Credible intervals of a fitted posterior in the form ``dpexp.types.Output`` carries them: a dict from the
nominal level to (lower, upper) arrays, for the coefficients and for the regression function at test rows.

Two kinds of posterior: Gaussian N(m, S) (the VB posteriors and the noise-aware fast approximation: equal-tailed
intervals m ± z σ with z = Φ⁻¹((1 + level)/2), and xᵀm ± z √(xᵀSx) at a test row x) and draws (the Gibbs sampler:
empirical (1 − level)/2 and (1 + level)/2 quantiles).

The Gaussian intervals of a batch are computed when first read (``LazyIntervals``): only the calibration metrics read
them, and xᵀSx at every test row is most of a batch's interval cost (a run without those metrics skips it).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
from scipy import special

#: the nominal levels every interval-reporting algorithm gives (the calibration metrics read 0.5, 0.8, 0.9, 0.95)
LEVELS: tuple[float, ...] = (0.5, 0.8, 0.9, 0.95)

Intervals = dict[float, tuple[np.ndarray, np.ndarray]]


def _check(levels: tuple[float, ...]) -> None:
    if not all(0 < lv < 1 for lv in levels):
        raise ValueError(f"levels must lie in (0, 1), got {levels}")


def gaussian_intervals(mean: np.ndarray, cov: np.ndarray, X_test: np.ndarray, levels: tuple[float, ...] = LEVELS
                       ) -> tuple[Intervals, Intervals]:
    """(coefficient intervals, prediction intervals) of N(mean, cov): mean (…, d), cov (…, d, d), X_test (m, d);
    each interval array is (…, d) or (…, m)."""
    _check(levels)
    mean = np.asarray(mean, dtype=float)
    cov = np.asarray(cov, dtype=float)
    X = np.asarray(X_test, dtype=float)
    sd = np.sqrt(np.maximum(np.diagonal(cov, axis1=-2, axis2=-1), 0.0))
    mu = mean @ X.T
    psd = np.sqrt(np.maximum(np.einsum("md,...de,me->...m", X, cov, X), 0.0))
    coef, pred = {}, {}
    for lv in levels:
        z = float(special.ndtri(0.5 + lv / 2))
        coef[lv] = (mean - z * sd, mean + z * sd)
        pred[lv] = (mu - z * psd, mu + z * psd)
    return coef, pred


def draw_intervals(w: np.ndarray, X_test: np.ndarray, levels: tuple[float, ...] = LEVELS
                   ) -> tuple[Intervals, Intervals]:
    """(coefficient intervals, prediction intervals) from posterior draws w (…, S, d) at test rows X_test (m, d):
    equal-tailed empirical quantiles over the S draws."""
    _check(levels)
    w = np.asarray(w, dtype=float)
    P = w @ np.asarray(X_test, dtype=float).T                              # (…, S, m)
    qs = [q for lv in levels for q in ((1 - lv) / 2, (1 + lv) / 2)]
    cq = np.quantile(w, qs, axis=-2)
    pq = np.quantile(P, qs, axis=-2)
    coef = {lv: (cq[2 * i], cq[2 * i + 1]) for i, lv in enumerate(levels)}
    pred = {lv: (pq[2 * i], pq[2 * i + 1]) for i, lv in enumerate(levels)}
    return coef, pred


class _Posterior:
    """One Gaussian posterior's intervals, ``gaussian_intervals`` computed at the first read and kept."""

    __slots__ = ("_args", "_value")

    def __init__(self, mean: np.ndarray, cov: np.ndarray, X_test: np.ndarray, levels: tuple[float, ...]) -> None:
        self._args: tuple[Any, ...] | None = (mean, cov, X_test, levels)
        self._value: tuple[Intervals, Intervals] | None = None

    def value(self) -> tuple[Intervals, Intervals]:
        if self._value is None:
            assert self._args is not None
            self._value = gaussian_intervals(*self._args)
            self._args = None   # the posterior's arrays are no longer needed
        return self._value


class LazyIntervals(Mapping):
    """level → (lower, upper) of one Gaussian posterior (the coefficient table, ``which=0``, or the prediction
    table, ``which=1``), a read-only mapping whose arrays are computed by ``gaussian_intervals`` when first read
    (both tables of a posterior at once), equal to the bit to the eager call.  Pickles and copies as a dict."""

    __slots__ = ("_post", "_which", "_levels")

    def __init__(self, post: _Posterior, which: int, levels: tuple[float, ...]) -> None:
        self._post, self._which, self._levels = post, which, levels

    def _table(self) -> Intervals:
        return self._post.value()[self._which]

    def __getitem__(self, level: float) -> tuple[np.ndarray, np.ndarray]:
        return self._table()[level]

    def __iter__(self) -> Iterator[float]:
        return iter(self._levels)

    def __len__(self) -> int:
        return len(self._levels)

    def __repr__(self) -> str:
        return repr(self._table())

    def __reduce__(self) -> tuple[Any, ...]:
        return dict, (dict(self._table()),)


def lazy_gaussian_intervals(mean: np.ndarray, cov: np.ndarray, X_test: np.ndarray,
                            levels: tuple[float, ...] = LEVELS) -> tuple[LazyIntervals, LazyIntervals]:
    """``gaussian_intervals(mean, cov, X_test, levels)`` as two ``LazyIntervals`` (computed when first read)."""
    _check(levels)
    post = _Posterior(mean, cov, X_test, tuple(levels))
    return LazyIntervals(post, 0, tuple(levels)), LazyIntervals(post, 1, tuple(levels))


def gaussian_intervals_many(mean: np.ndarray, cov: np.ndarray, X_tests: list[np.ndarray],
                            levels: tuple[float, ...] = LEVELS
                            ) -> list[tuple[np.ndarray, LazyIntervals, LazyIntervals]]:
    """``gaussian_intervals`` of S posteriors at once: mean (S, …, d), cov (S, …, d, d), X_tests[i] (m_i, d); per
    posterior (the mean at the test rows xᵀm, coefficient intervals, prediction intervals), each equal to the bit
    to ``gaussian_intervals(mean[i], cov[i], X_tests[i])``: the means now, the intervals when first read
    (``LazyIntervals``)."""
    _check(levels)
    mean = np.asarray(mean, dtype=float)
    cov = np.asarray(cov, dtype=float)
    lv = tuple(levels)
    out = []
    for i, X in enumerate(X_tests):
        X = np.asarray(X, dtype=float)
        post = _Posterior(mean[i], cov[i], X, lv)
        out.append((mean[i] @ X.T, LazyIntervals(post, 0, lv), LazyIntervals(post, 1, lv)))
    return out
