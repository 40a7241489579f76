"""Metrics of the DP simple-linear-regression study (Alabi et al. 2020, §1.1.4 and Eq. 3).

A *trial* is one run of a DP algorithm on a fixed dataset (one row of ``Output.predictions``, columns = the release
points ``X_test``, p25 and p75 by default).  Each metric summarises the trials of one cell:

* ``error_bound`` — the empirical q% error bound Ĉ(q) = min{c : at least q% of trials have |p̃ − p̂_OLS| ≤ c}, i.e.
  the ⌈q·m/100⌉-th smallest of the m trial errors (§1.1.4). ``point`` picks the release point (``p25`` = first
  column, ``p75`` = second, or a column index).  ``normalize: se`` divides by the OLS standard error σ̂(p̂) of
  Eq. 3; ``error_bound_se`` is the same with that default.
* ``error_bound_true`` / ``error_bound_true_se`` — Ĉ_true(q) with the error |p̃ − p_true| against the true line
  (``y_test``, synthetic data only); ``normalize: se_true`` divides by the population standard deviation of p̂,
  σe·sqrt(1/n + (x_new − x_mean)²/(n σx²)), from the generating parameters in ``meta``.
* ``failure_rate`` — share of failed trials (NaN rows; NoisyStats outputs ⊥ when its noisy n·var(x) ≤ 0).
* ``ols_estimate``, ``ols_se`` — p̂ and σ̂(p̂) of the subset (non-private facts, for sorting/centring plots), and
  ``n_var_x`` — n·var(x) (for the Fig 15 ordering by ε·n·var(x)).
* ``output_quantile`` — the ``level``-% quantile of p̃ over the successful trials, and ``prediction`` — p̃ of one
  trial (``trial`` index) or the mean over trials. These carry the raw-output distribution for the output-ECDF
  figures (Figs 8, 9): either many quantile levels from one cell with many trials, or one ``prediction`` row per
  repeat.

Evaluation against private data (``Metric.reads_private``): ``error_bound``, ``error_bound_se``, ``ols_estimate``,
``ols_se``, ``n_var_x`` and any bound with ``normalize: se`` are exact functions of the private rows (the OLS fit
p̂, σ̂(p̂), n·var(x)); their rows say guarantee ``none`` ("evaluation against private data"), whatever the algorithm
spent.  ``error_bound_true`` (with ``normalize: none`` or ``se_true``), ``failure_rate``, ``output_quantile`` and
``prediction`` read only the release and public facts.

Failed trials: by default (``failures: drop``) error bounds and quantiles use the successful trials only and the
failures are reported by ``failure_rate`` (as the paper does for NoisyStats); ``failures: inf`` counts a failed trial
as an infinite error (a conservative bound).  A cell where every trial failed gives NaN.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field

from dpexp.components import Metric, Params
from dpexp.errors import UserError
from dpexp.registry import register_metric
from dpexp.types import Output, Split

Point = Literal["p25", "p75"] | int


def point_index(point: Point, n_test: int) -> int:
    """Column of ``point`` (``p25`` → 0, ``p75`` → 1, or an index); a one-point split always uses column 0."""
    j = {"p25": 0, "p75": 1}.get(point, point) if isinstance(point, str) else int(point)
    if n_test == 1 and isinstance(point, str):
        return 0
    if not 0 <= j < n_test:
        raise UserError(f"metric param point must select one of {n_test} release points, got {point!r}")
    return j


#: residual norms below this (per sqrt(n), relative to max|y|) are rounding error of an exact fit and set to 0
_EXACT_FIT_TOL = 1e-12


def ols_fit(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float, float, int]:
    """OLS slope α̂, intercept β̂, residual norm ||y − α̂x − β̂||₂, n·var(x) and n for 1-D data."""
    x = np.asarray(x, dtype=float).reshape(-1)
    y = np.asarray(y, dtype=float).reshape(-1)
    n = len(x)
    xm, ym = x.mean(), y.mean()
    nvar = float(np.sum((x - xm) ** 2))
    ncov = float(np.sum((x - xm) * (y - ym)))
    slope = ncov / nvar if nvar > 0 else float("nan")
    intercept = ym - slope * xm
    resid = float(np.sqrt(np.sum((y - slope * x - intercept) ** 2))) if nvar > 0 else float("nan")
    if resid <= _EXACT_FIT_TOL * math.sqrt(n) * max(1.0, float(np.max(np.abs(y)))):
        resid = 0.0  # an exact fit (e.g. constant y): rounding residue ~1e-17 is not a standard error
    return slope, intercept, resid, nvar, n


def ols_prediction_and_se(x: np.ndarray, y: np.ndarray, x_new: float) -> tuple[float, float]:
    """p̂(x_new) and its standard error σ̂(p̂) = ||y − α̂x − β̂||₂/√(n−2) · √(1/n + (x_new − x̄)²/(n var(x)))
    (Alabi et al. Eq. 3). NaN when n < 3 or var(x) = 0."""
    slope, intercept, resid, nvar, n = ols_fit(x, y)
    if n < 3 or not nvar > 0:
        return float("nan"), float("nan")
    xm = float(np.mean(x))
    se = resid / math.sqrt(n - 2) * math.sqrt(1.0 / n + (x_new - xm) ** 2 / nvar)
    return slope * x_new + intercept, se


def empirical_bound(errors: np.ndarray, q: float) -> float:
    """Ĉ(q): the smallest c with at least q% of ``errors`` ≤ c = the ⌈q m/100⌉-th order statistic (NaN if m = 0)."""
    e = np.sort(np.asarray(errors, dtype=float))
    m = len(e)
    if m == 0:
        return float("nan")
    k = max(1, math.ceil(q * m / 100.0 - 1e-9))
    return float(e[k - 1])


def _safe_div(a: float, b: float) -> float:
    if not np.isfinite(b) or b <= 0:
        return float("nan") if a == 0 or not np.isfinite(a) else float("inf")
    return a / b


class _PointParams(Params):
    point: Point = Field("p25", description="release point: p25, p75 or a column index of X_test")


class _AtPoint(Metric):
    """A metric of the release at one point x_new (``params.point``)."""

    Params = _PointParams

    def column(self, split: Split) -> int:
        """The column of ``split.X_test`` / of the predictions that holds the release point."""
        return point_index(self.params.point, split.X_test.shape[0])

    def successful(self, output: Output, split: Split) -> np.ndarray:
        """The outputs at the release point of the trials that did not fail."""
        return np.asarray(output.predictions, dtype=float)[~output.failed, self.column(split)]

    def over_successful(self, output: Output, split: Split, stat) -> float:
        """``stat`` of the successful trials' outputs (``successful``), NaN when every trial failed."""
        v = self.successful(output, split)
        return float(stat(v)) if len(v) else float("nan")


class _BoundParams(Params):
    q: float = Field(68.0, gt=0, le=100, description="coverage in percent of the empirical error bound")
    point: Point = Field("p25", description="release point: p25, p75 or a column index of X_test")
    normalize: Literal["none", "se", "se_true"] = Field("none", description="divide by Eq. 3 standard error")
    failures: Literal["drop", "inf"] = Field("drop", description="failed trials: dropped, or infinite error")


class _BoundBase(_AtPoint):
    Params = _BoundParams
    against_truth = False

    @property
    def reads_private(self) -> bool:  # type: ignore[override]
        """Against the OLS of the private rows (``error_bound*``), or normalised by its standard error
        (``normalize: se``): an evaluation against private data.  Against the true line with no or the population
        normalisation (``se_true``): public facts of a synthetic model only."""
        return not self.against_truth or self.params.normalize == "se"

    def _errors(self, output: Output, split: Split, j: int) -> np.ndarray:
        pred = np.asarray(output.predictions, dtype=float)[:, j]
        x, y = split.X_private[:, 0], split.y_private
        x_new = float(split.X_test[j, 0])
        if self.against_truth:
            target = float(np.asarray(split.y_test, dtype=float)[j])
            if not np.isfinite(target):
                raise UserError(f"metric {self.name} needs the true line (y_test), which this dataset does not have")
        else:
            target = ols_prediction_and_se(x, y, x_new)[0]
        err = np.abs(pred - target)
        ok = ~output.failed
        if self.params.failures == "inf":
            return np.where(ok, err, np.inf)
        return err[ok]

    def _scale(self, split: Split, j: int) -> float:
        x_new = float(split.X_test[j, 0])
        if self.params.normalize == "se":
            return ols_prediction_and_se(split.X_private[:, 0], split.y_private, x_new)[1]
        if self.params.normalize == "se_true":
            m = split.meta
            if "sigma_e2" not in m or "sigma_x2" not in m:
                raise UserError(f"metric {self.name}: normalize=se_true needs a synthetic dataset (sigma_e2, sigma_x2)")
            n = len(split.y_private)
            return math.sqrt(m["sigma_e2"] * (1.0 / n + (x_new - m.get("x_mean", 0.5)) ** 2 / (n * m["sigma_x2"])))
        return 1.0

    def __call__(self, output: Output, split: Split) -> float:
        j = self.column(split)
        c = empirical_bound(self._errors(output, split, j), self.params.q)
        return c if self.params.normalize == "none" else _safe_div(c, self._scale(split, j))


@register_metric
class ErrorBound(_BoundBase):
    """Empirical q% error bound Ĉ(q) of |p̃ − p̂_OLS| over the trials of one cell (Alabi et al. §1.1.4)."""

    name = "error_bound"
    description = "empirical q% error bound C(q) of |p_dp - p_ols| over trials (Alabi et al. 1.1.4)"


class _BoundSEParams(_BoundParams):
    normalize: Literal["none", "se", "se_true"] = Field("se", description="divide by Eq. 3 standard error")


@register_metric
class ErrorBoundSE(_BoundBase):
    """Ĉ(q)/σ̂(p̂): the error bound in units of the OLS standard error (Eq. 3), as in Figs 6 and 7."""

    name = "error_bound_se"
    description = "C(q) / OLS standard error of p (Eq. 3); < 1 means privacy noise below sampling error"
    Params = _BoundSEParams


@register_metric
class ErrorBoundTrue(_BoundBase):
    """Ĉ_true(q) of |p̃ − p_true| against the true line (synthetic data; §1.1.4)."""

    name = "error_bound_true"
    description = "empirical q% error bound of |p_dp - p_true| (synthetic data)"
    against_truth = True


@register_metric
class ErrorBoundTrueSE(_BoundBase):
    """Ĉ_true(q)/σ̂(p̂) (Figs 10, 11, 16, 18)."""

    name = "error_bound_true_se"
    description = "C_true(q) / OLS standard error (Eq. 3) (synthetic data, Figs 10-11)"
    against_truth = True
    Params = _BoundSEParams


@register_metric
class FailureRate(Metric):
    """Share of failed trials (rows of NaN), e.g. NoisyStats returning ⊥ (Alabi et al. App. C.2)."""

    name = "failure_rate"
    description = "fraction of trials that failed (NaN output)"

    def __call__(self, output: Output, split: Split) -> float:
        return float(np.mean(output.failed))


class _OLSAtPoint(_AtPoint):
    """One part (``part``: 0 = p̂, 1 = σ̂(p̂)) of the non-private OLS fit of the private rows at the release point."""

    part = 0
    reads_private = True

    def __call__(self, output: Output, split: Split) -> float:
        x_new = float(split.X_test[self.column(split), 0])
        return ols_prediction_and_se(split.X_private[:, 0], split.y_private, x_new)[self.part]


@register_metric
class OLSEstimate(_OLSAtPoint):
    """The non-private OLS prediction p̂ at the release point (for centring output-distribution plots)."""

    name = "ols_estimate"
    description = "OLS prediction at the release point (non-private reference)"


@register_metric
class OLSStandardError(_OLSAtPoint):
    """σ̂(p̂) of Eq. 3 at the release point (for the Fig 12 ordering and the grey bands of Figs 8, 9)."""

    name = "ols_se"
    description = "OLS standard error of the prediction at the release point (Eq. 3)"
    part = 1


@register_metric
class NVarX(Metric):
    """n·var(x) = Σ(x_i − x̄)² of the subset (Fig 15 sorts tracts by ε·n·var(x))."""

    name = "n_var_x"
    description = "n var(x) of the private rows"
    reads_private = True

    def __call__(self, output: Output, split: Split) -> float:
        return ols_fit(split.X_private[:, 0], split.y_private)[3]


class _QuantileParams(_PointParams):
    level: float = Field(50.0, ge=0, le=100, description="quantile level in percent")


class _PredParams(_PointParams):
    trial: int | Literal["mean"] = Field(0, description="trial index, or 'mean' over successful trials")


@register_metric
class OutputQuantile(_AtPoint):
    """The ``level``-% quantile (linear interpolation) of p̃ over the successful trials of a cell."""

    name = "output_quantile"
    description = "quantile of the DP output over trials (output-distribution ECDF, Figs 8-9)"
    Params = _QuantileParams

    def __call__(self, output: Output, split: Split) -> float:
        return self.over_successful(output, split, lambda v: np.percentile(v, self.params.level))


@register_metric
class Prediction(_AtPoint):
    """p̃ of one trial (NaN if it failed) or the mean over successful trials."""

    name = "prediction"
    description = "raw DP prediction of one trial (or mean over trials) at the release point"
    Params = _PredParams

    def __call__(self, output: Output, split: Split) -> float:
        if self.params.trial == "mean":
            return self.over_successful(output, split, np.mean)
        j = self.column(split)
        pred = np.asarray(output.predictions, dtype=float)
        t = int(self.params.trial)
        if not 0 <= t < len(pred):
            raise UserError(f"metric prediction: params.trial must be in [0, {len(pred) - 1}], got {t}")
        return float(pred[t, j])
