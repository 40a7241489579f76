"""Tests of the AdaSSP core (dpexp.models.adassp): brute-force sensitivities on neighbouring data sets, the noise
scales actually drawn, the budget accounting, the ridge rule and the noiseless limit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpexp.models import adassp as ad
from dpexp.privacy.mechanisms import analytic_gaussian_sigma


def _ball(rng, m, d, B):
    """m rows with ‖x‖ ≤ B, many of them on the sphere (where the sensitivity is attained)."""
    X = rng.normal(size=(m, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X * B * np.where(rng.uniform(size=(m, 1)) < 0.5, 1.0, rng.uniform(size=(m, 1)))


@pytest.mark.parametrize("d", [1, 3, 6])
def test_sensitivities_bound_every_replace_one_neighbour(d):
    """For 3000 random neighbouring pairs (one row replaced, rows in the ball, |y| ≤ B_Y) every change is within the
    stated L1/L2 sensitivity, and the L2 bound of XᵀX is attained by two orthogonal rows on the sphere."""
    rng = np.random.default_rng(d)
    BX, BY = 1.7, 2.5
    X = _ball(rng, 40, d, BX)
    y = rng.uniform(-BY, BY, 40)
    iu = np.triu_indices(d)
    l2 = ad.sensitivities(d, BX, BY, "l2")
    l1 = ad.sensitivities(d, BX, BY, "l1")
    base_min = np.linalg.eigvalsh(X.T @ X)[0]
    worst = np.zeros(5)
    for _ in range(3000):
        i = rng.integers(40)
        X2, y2 = X.copy(), y.copy()
        X2[i] = _ball(rng, 1, d, BX)[0]
        y2[i] = rng.choice([-BY, BY, rng.uniform(-BY, BY)])
        dXX = (X2.T @ X2 - X.T @ X)[iu]
        dXy = X2.T @ y2 - X.T @ y
        dmin = abs(np.linalg.eigvalsh(X2.T @ X2)[0] - base_min)
        worst = np.maximum(worst, [dmin / l2[0], np.linalg.norm(dXX) / l2[1], np.abs(dXX).sum() / l1[1],
                                   np.linalg.norm(dXy) / l2[2], np.abs(dXy).sum() / l1[2]])
    assert np.all(worst <= 1 + 1e-9), worst
    if d > 1:  # attained: x = B e1 replaced by B e2
        e1, e2 = np.eye(d)[0] * BX, np.eye(d)[1] * BX
        assert math.isclose(np.linalg.norm((np.outer(e1, e1) - np.outer(e2, e2))[iu]), l2[1])


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_noise_scales_actually_drawn(noise):
    """The released statistics of an all-zero data set are pure noise: the empirical sd of the Gaussian draws
    (or the mean absolute value of the Laplace draws) matches the calibrated scale within 1.5 % (200,000 draws;
    the relative standard error is ≈ 0.2 %)."""
    d, BX, BY, eps, delta = 4, 1.0, 2.0, 1.5, 1e-5
    cal = ad.calibrate(d, BX, BY, eps, delta, noise)
    rng, T = np.random.default_rng(0), 200_000
    lm, XX, Xy = (a[0] for a in ad.release_rows(np.zeros((1, T, d, d)), np.zeros((1, T, d)), cal,
                                                ad.standard_rows(cal, [rng], d, T), [rng]))
    iu = np.triu_indices(d)
    for draws, scale in [(lm, cal.scale_min), (XX[:, iu[0], iu[1]], cal.scale_xx), (Xy, cal.scale_xy)]:
        got = draws.std() if noise == "gaussian" else np.abs(draws).mean()
        assert abs(got / scale - 1) < 0.015
    np.testing.assert_array_equal(XX, np.swapaxes(XX, 1, 2))          # mirrored
    if noise == "gaussian":
        s1 = analytic_gaussian_sigma(BX**2, eps / 3, delta / 3)
        s2 = analytic_gaussian_sigma(math.sqrt(2) * BX**2, eps / 3, delta / 3)
        s3 = analytic_gaussian_sigma(2 * BX * BY, eps / 3, delta / 3)
        np.testing.assert_allclose([cal.scale_min, cal.scale_xx, cal.scale_xy], [s1, s2, s3])
        assert cal.spent == pytest.approx((eps, delta))
    else:
        np.testing.assert_allclose([cal.scale_min, cal.scale_xx, cal.scale_xy],
                                   [BX**2 / (eps / 3), math.sqrt(13) * BX**2 / (eps / 3),   # c_4 = √13
                                    2 * math.sqrt(d) * BX * BY / (eps / 3)])
        assert cal.spent == pytest.approx((eps, 0.0))


def test_ridge_rule_is_adaptive():
    """Known values: no ridge when the private λ_min exceeds the noise bound, the full bound when λ_min = 0."""
    cal = ad.calibrate(5, 1.0, 1.0, 1.0, 1e-6, "gaussian")
    bound = cal.scale_xx * math.sqrt(5 * math.log(2 * 25 / 0.05))
    np.testing.assert_allclose(ad.adaptive_ridge(np.array([0.0, bound / 2, 10 * bound]), 5, cal),
                               [bound, bound / 2, 0.0])
    shift = cal.scale_min * math.sqrt(math.log(6 / 1e-6))
    np.testing.assert_allclose(ad.private_lambda_min(np.array([shift + 3.0, shift - 1.0]), cal), [3.0, 0.0])


def test_huge_epsilon_recovers_least_squares():
    """Laplace noise scales as 1/ε, so ε = 1e12 is noiseless to ~1e-10; the ridge is 0 (λ_min is large)."""
    rng = np.random.default_rng(3)
    X, y = ad.clip_rows(rng.normal(size=(400, 3)), rng.normal(size=400) * 2, 3.0, 5.0)
    theta, extra = ad.adassp(X, y, 3.0, 5.0, 1e12, np.random.default_rng(4), noise="laplace")
    np.testing.assert_allclose(theta, np.linalg.lstsq(X, y, rcond=None)[0], rtol=1e-7, atol=1e-9)
    assert extra["ridge"] == 0.0 and extra["epsilon_spent"] == pytest.approx(1e12)


def test_trials_and_clipping():
    rng = np.random.default_rng(5)
    X, y = ad.clip_rows(rng.normal(size=(100, 4)) * 3, rng.normal(size=100) * 9, 2.0, 1.0)
    assert np.all(np.linalg.norm(X, axis=1) <= 2.0 + 1e-12) and np.all(np.abs(y) <= 1.0)
    theta, extra = ad.adassp(X, y, 2.0, 1.0, 2.0, rng, noise="laplace", trials=7)
    assert theta.shape == (7, 4) and extra["ridge"].shape == (7,)


@pytest.mark.parametrize("kw, msg", [(dict(noise="gaussian", delta=0.0), "delta"), (dict(noise="cauchy"), "noise"),
                                     (dict(split=(0.5, 0.5, 0.5)), "split")])
def test_bad_input(kw, msg):
    with pytest.raises(ValueError, match=msg):
        ad.calibrate(3, 1.0, 1.0, 1.0, **{"delta": 1e-5, **kw})


def test_rows_outside_the_bounds_are_refused():
    with pytest.raises(ValueError, match="clip them first"):
        ad.adassp(np.ones((5, 2)), np.zeros(5), 1.0, 1.0, 1.0, np.random.default_rng(0), delta=1e-5)
