"""SLR metrics (Alabi et al. 2020 §1.1.4, Eq. 3): empirical error bounds, standard error, failures, raw outputs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpexp.errors import UserError
from dpexp.families.slr.metrics import (ErrorBound, ErrorBoundSE, ErrorBoundTrue, ErrorBoundTrueSE, FailureRate, NVarX,
                                        OLSEstimate, OLSStandardError, OutputQuantile, Prediction, empirical_bound,
                                        ols_prediction_and_se)
from dpexp.types import Output, Split


def _split(x, y, y_test=(np.nan, np.nan), meta=None):
    x = np.asarray(x, float)
    return Split(x.reshape(-1, 1), np.asarray(y, float), np.empty((0, 1)), np.empty(0),
                 np.array([[0.25], [0.75]]), np.asarray(y_test, float), meta or {})


def test_empirical_bound_definition():
    e = np.arange(1, 101) / 100.0  # 0.01 .. 1.00
    assert empirical_bound(e, 68) == pytest.approx(0.68)
    assert empirical_bound(e, 100) == pytest.approx(1.0)
    assert empirical_bound([0.3, 0.1, 0.2], 50) == pytest.approx(0.2)  # ceil(1.5) = 2nd smallest
    assert empirical_bound([0.3, 0.1, 0.2], 34) == pytest.approx(0.2)
    assert empirical_bound([0.3, 0.1, 0.2], 33) == pytest.approx(0.1)
    assert math.isnan(empirical_bound([], 68))


def test_exact_fit_has_zero_se_and_infinite_normalised_error():
    """Constant y (or an exact line): the rounding residue ~1e-17 must not become a standard error (it gave
    Ĉ/σ̂ ~ 1e18); σ̂ = 0 exactly and any nonzero privacy error is infinitely many standard errors."""
    x = np.linspace(0.02, 0.98, 37)
    for y in (np.full(37, 0.01), 0.1 + 0.3 * x):
        p, se = ols_prediction_and_se(x, y, 0.25)
        assert se == 0.0
        out = Output(predictions=np.tile([p + 0.01, p], (10, 1)))
        assert ErrorBoundSE()(out, _split(x, y)) == math.inf
        assert ErrorBound()(out, _split(x, y)) == pytest.approx(0.01)


def test_ols_se_matches_textbook():
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, 30)
    y = 0.3 + 0.4 * x + rng.normal(0, 0.1, 30)
    p, se = ols_prediction_and_se(x, y, 0.25)
    # textbook: s^2 * [1/n + (x0-xbar)^2/Sxx] with s^2 = RSS/(n-2)
    A = np.c_[np.ones(30), x]
    coef, rss, *_ = np.linalg.lstsq(A, y, rcond=None)
    s2 = rss[0] / 28
    cov = s2 * np.linalg.inv(A.T @ A)
    v = np.array([1, 0.25])
    assert p == pytest.approx(v @ coef)
    assert se == pytest.approx(math.sqrt(v @ cov @ v))


def test_error_bound_and_normalisation():
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 1, 40)
    y = 0.2 + 0.5 * x + rng.normal(0, 0.05, 40)
    sp = _split(x, y, y_test=(0.325, 0.575), meta={"sigma_e2": 0.0025, "sigma_x2": 1 / 12, "x_mean": 0.5})
    p25, se25 = ols_prediction_and_se(x, y, 0.25)
    p75, _ = ols_prediction_and_se(x, y, 0.75)
    offs = np.linspace(-0.1, 0.1, 101)
    out = Output(np.c_[p25 + offs, p75 + 2 * offs])
    c = ErrorBound()(out, sp)
    assert c == pytest.approx(empirical_bound(np.abs(offs), 68))
    assert ErrorBound(point="p75")(out, sp) == pytest.approx(2 * c)
    assert ErrorBoundSE()(out, sp) == pytest.approx(c / se25)
    assert ErrorBound(normalize="se")(out, sp) == pytest.approx(c / se25)
    ct = ErrorBoundTrue()(out, sp)
    assert ct == pytest.approx(empirical_bound(np.abs(p25 + offs - 0.325), 68))
    assert ErrorBoundTrueSE()(out, sp) == pytest.approx(ct / se25)
    true_sd = math.sqrt(0.0025 * (1 / 40 + 0.0625 / (40 / 12)))
    assert ErrorBoundTrue(normalize="se_true")(out, sp) == pytest.approx(ct / true_sd)
    with pytest.raises(UserError, match="true line"):
        ErrorBoundTrue()(out, _split(x, y))


def test_failures_dropped_or_infinite():
    x = np.linspace(0, 1, 10)
    y = 0.5 * x
    sp = _split(x, y)
    pred = np.tile([[0.125, 0.375]], (10, 1))
    pred[:4] = np.nan
    out = Output(pred)
    assert FailureRate()(out, sp) == pytest.approx(0.4)
    assert ErrorBound()(out, sp) == pytest.approx(0.0, abs=1e-12)
    assert ErrorBound(failures="inf")(out, sp) == math.inf  # 40% failed > 32% allowed
    assert math.isnan(ErrorBound()(Output(np.full((3, 2), np.nan)), sp))
    # perfect fit: SE = 0, a zero error gives NaN, a positive one inf
    assert math.isnan(ErrorBoundSE()(out, sp))
    assert ErrorBoundSE()(Output(np.tile([[0.2, 0.375]], (5, 1))), sp) == math.inf


def test_raw_output_summaries():
    rng = np.random.default_rng(2)
    x = rng.uniform(0, 1, 20)
    y = x * 0.3 + 0.1 + rng.normal(0, 0.02, 20)
    sp = _split(x, y)
    pred = np.c_[np.arange(11) / 10.0, np.zeros(11)]
    pred[3] = np.nan
    out = Output(pred)
    assert OutputQuantile(level=50)(out, sp) == pytest.approx(np.median(np.delete(np.arange(11) / 10, 3)))
    assert Prediction(trial=2)(out, sp) == pytest.approx(0.2)
    assert math.isnan(Prediction(trial=3)(out, sp))
    assert Prediction(trial="mean", point="p75")(out, sp) == 0.0
    with pytest.raises(UserError, match="trial"):
        Prediction(trial=11)(out, sp)
    p, se = ols_prediction_and_se(x, y, 0.75)
    assert OLSEstimate(point="p75")(out, sp) == pytest.approx(p)
    assert OLSStandardError(point="p75")(out, sp) == pytest.approx(se)
    assert NVarX()(out, sp) == pytest.approx(20 * np.var(x))
    with pytest.raises(UserError, match="point"):
        OLSEstimate(point=5)(out, sp)
