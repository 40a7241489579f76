"""Tests of the analytic budget split (dpexp.models.budget_split)."""

from __future__ import annotations

import numpy as np
import pytest

from dpexp.models.budget_split import analytic_split, expected_correlation


def test_score_is_a_correlation_and_grows_with_epsilon_and_n():
    wx = wy = np.array([0.3, 1.0])
    J = [expected_correlation(n, 5, eps, [0.3], [0.65], wx, wy)[0] for n, eps in ((200, 0.5), (200, 2.0),
                                                                                   (800, 2.0), (800, 1e6))]
    assert np.all((np.abs(np.asarray(J)) <= 1.0))
    assert np.all(J[0] < J[1]) and np.all(J[1] < J[2]) and np.all(J[2] < J[3])


def test_noiseless_limit_is_the_clipping_loss_only():
    """ε → ∞ and no prior uncertainty: S → the sampling covariance only, and J → the correlation of the clipped
    coefficients with β (< 1 because clipping bends the regression), close to 1 for mild clipping."""
    J = expected_correlation(10_000, 4, 1e9, [0.45], [0.5], np.array([3.0]), np.array([3.0]), 0.0, 0.0)
    assert 0.99 < J[0, 0] <= 1.0


def test_the_split_follows_the_confidence_about_the_design():
    """Paper case (n = 500, d = 10, ε = 2): a confident Gram prior makes XᵀX nearly known and the budget goes to
    Xᵀy (p1 at the grid minimum, as rplr's auxiliary-data tuning finds); an uninformative one moves most of it to
    XᵀX.  Deterministic (fixed β draws)."""
    confident = analytic_split(500, 10, 2.0, rel_sd=0.0, corr_sd=0.0)
    flat = analytic_split(500, 10, 2.0, rel_sd=1e3, corr_sd=1e3)
    assert (confident["p1"], confident["p3"]) == (0.05, 0.05) and confident["p2"] == pytest.approx(0.9)
    assert flat["p1"] >= 0.5
    assert confident["score"] > flat["score"]
    assert len(confident["table"]) == 18 and all(abs(r[0] + r[1] + r[2] - 1) < 1e-12 for r in confident["table"])


@pytest.mark.parametrize("kw", [dict(n=10, d=10, epsilon=1.0), dict(n=100, d=5, epsilon=0.0),
                                dict(n=100, d=5, epsilon=1.0, p3=1.0)])
def test_bad_input(kw):
    with pytest.raises(ValueError):
        analytic_split(**kw)
