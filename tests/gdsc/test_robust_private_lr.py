"""Robust private LR family: brute-force sensitivity checks and the noise scales actually drawn."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from pydantic import ValidationError

from dpexp.families.gdsc.algorithms.lr import BayesLR
from dpexp.families.gdsc.algorithms.plr import PrivateLR
from dpexp.families.gdsc.algorithms.rplr import RobustPrivateLR
from dpexp.families.gdsc.stats import clip, perturbed_stats, sensitivities, sufficient_stats
from dpexp.models.bayes_lr import posterior_mean_fixed
from dpexp.types import Split


def _released(X, y, B_x, B_y):
    """The vector of released statistics: unique X'X entries, X'y, y'y (after clipping)."""
    Xc, yc = clip(X, y, B_x, B_y)
    XX, Xy, yy = sufficient_stats(Xc, yc)
    iu = np.triu_indices(X.shape[1])
    return XX[iu], Xy, np.array([yy])


@pytest.mark.parametrize("d", [1, 2, 3, 5])
def test_sensitivity_brute_force_replace_one(d):
    """For random data and worst-case replacements (corners of the clipping box, including the sign patterns that
    maximise each term) the L1 change of each release never exceeds the sensitivity the mechanism uses, and the
    bound is attained (so it is not loose by a factor)."""
    rng = np.random.default_rng(10 + d)
    B_x, B_y = 0.7, 1.3
    s_xx, s_xy, s_yy = sensitivities(d, B_x, B_y)
    worst = np.zeros(3)
    corners = [np.array(c) for c in itertools.product([-B_x, B_x], repeat=d)]
    for _ in range(30):
        n = int(rng.integers(2, 8))
        X = rng.normal(scale=1.0, size=(n, d))      # partly outside the box: clipping must bound it
        y = rng.normal(scale=2.0, size=n)
        base = _released(X, y, B_x, B_y)
        i = int(rng.integers(n))
        for c, yv in itertools.product(corners, [-B_y, 0.0, B_y]):
            for xi, yi in [(c, yv), (X[i], yv), (c, y[i])]:
                X2, y2 = X.copy(), y.copy()
                X2[i], y2[i] = xi, yi
                rel = _released(X2, y2, B_x, B_y)
                ch = [np.abs(a - b).sum() for a, b in zip(base, rel)]
                worst = np.maximum(worst, ch)
    assert worst[0] <= s_xx + 1e-9 and worst[1] <= s_xy + 1e-9 and worst[2] <= s_yy + 1e-9
    # attained exactly by the pair (all +B corner, y=+B) -> (same x, y=-B) on a 1-row dataset
    X = np.full((1, d), B_x)
    a, b = _released(X, np.array([B_y]), B_x, B_y), _released(X, np.array([-B_y]), B_x, B_y)
    assert np.abs(a[1] - b[1]).sum() == pytest.approx(s_xy)
    assert np.abs(a[2] - b[2]).sum() <= s_yy
    Xa, Xb = np.array([[B_x] * d]), np.array([[0.0] * d])
    assert np.abs(_released(Xa, np.zeros(1), B_x, B_y)[2] - _released(Xb, np.full(1, B_y), B_x, B_y)[2]).sum() \
        == pytest.approx(s_yy)


def test_xx_sensitivity_attained_by_sign_flip():
    d, B = 4, 0.5
    x = np.full((1, d), B)
    x2 = x.copy()
    x2[0, 0] = -B  # changes the d entries of row/col 0 of the unique triangle by 2B^2 each ... and no others
    a, b = _released(x, np.zeros(1), B, 1.0)[0], _released(x2, np.zeros(1), B, 1.0)[0]
    assert np.abs(a - b).sum() == pytest.approx(2 * B * B * (d - 1))  # diagonal x0^2 unchanged
    # the d(d+1)B^2 bound holds the per-entry worst case 2B^2 for every unique entry, which the brute force confirms


def test_noise_scales_drawn():
    """perturbed_stats draws Laplace noise with scale = sensitivity / (share * eps) for each statistic."""
    rng = np.random.default_rng(7)
    d, B_x, B_y, eps = 3, 0.4, 1.1, 2.0
    p1, p2, p3 = 0.35, 0.6, 0.05
    X = np.zeros((5, d))
    y = np.zeros(5)
    T = 60_000
    XX, Xy, yy = perturbed_stats(X, y, B_x, B_y, p1 * eps, p2 * eps, p3 * eps, rng, T)
    s_xx, s_xy, s_yy = sensitivities(d, B_x, B_y)
    iu = np.triu_indices(d)
    for sample, scale in [(XX[:, iu[0], iu[1]].ravel(), s_xx / (p1 * eps)), (Xy.ravel(), s_xy / (p2 * eps)),
                          (yy, s_yy / (p3 * eps))]:
        assert abs(np.mean(np.abs(sample)) / scale - 1) < 5 / math.sqrt(sample.size)
    # symmetric release; lower triangle mirrors the upper one (noise counted once per unique entry)
    assert np.allclose(XX, np.swapaxes(XX, 1, 2))


def _split(rng, n=50, d=3):
    X = rng.normal(size=(n + 30, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = X @ rng.normal(size=d) + 0.1 * rng.normal(size=n + 30)
    return Split(X[:n], y[:n], X[n:n + 10], y[n:n + 10], X[n + 10:], y[n + 10:],
                 {"sigma_x": float(X.std()), "sigma_y": float(y.std())})


def test_lr_matches_closed_form_and_is_deterministic():
    rng = np.random.default_rng(1)
    s = _split(rng)
    out = BayesLR().run(s, 1.0, 0.0, np.random.default_rng(0), trials=3)
    X, y = s.X_train, s.y_train
    w = np.linalg.solve(np.eye(3) + X.T @ X, X.T @ y)
    assert np.allclose(out.predictions, s.X_test @ w)
    assert out.predictions.shape == (3, 20)


def test_rplr_reproducible_and_converges_with_epsilon():
    rng = np.random.default_rng(2)
    s = _split(rng, n=2000)
    alg = RobustPrivateLR(omega_x=3.0, omega_y=3.0, prior="fixed", p1=0.35, p2=0.6, p3=0.05)
    a = alg.run(s, 2.0, 0.0, np.random.default_rng(5), trials=4).predictions
    b = alg.run(s, 2.0, 0.0, np.random.default_rng(5), trials=4).predictions
    assert np.array_equal(a, b)
    hi = alg.run(s, 1e6, 0.0, np.random.default_rng(5), trials=2).predictions
    ref = BayesLR().run(s, 0, 0, np.random.default_rng(0)).predictions
    assert np.allclose(hi, ref, atol=1e-3)  # no clipping at 3 sigma for these data, negligible noise


def test_rplr_split_must_sum_to_one():
    with pytest.raises(ValidationError, match="must equal 1"):
        RobustPrivateLR(p1=0.5, p2=0.5, p3=0.5)
    with pytest.raises(ValidationError):
        RobustPrivateLR(p1=1.5)


def test_plr_uses_whole_range_bounds():
    s = _split(np.random.default_rng(3))
    out = PrivateLR(B_y=4.0).run(s, 1.0, 0.0, np.random.default_rng(1), trials=2)
    assert out.predictions.shape == (2, 20) and np.all(np.isfinite(out.predictions))


def test_posterior_handles_indefinite_statistics():
    XX = np.array([[[-5.0, 0.0], [0.0, 1.0]]])
    w = posterior_mean_fixed(XX, np.array([[1.0, 1.0]]))
    assert np.all(np.isfinite(w))
    assert w[0, 0] == pytest.approx(1.0)   # eigenvalue floored at 0 -> (1 + 0)^-1 * 1


def test_spearman_matches_scipy_and_edge_cases():
    from scipy import stats

    from dpexp.metrics.accuracy import spearman, spearman_rows

    rng = np.random.default_rng(0)
    P = rng.normal(size=(50, 30))
    P[:, :5] = np.round(P[:, :5])  # ties
    y = np.round(rng.normal(size=30), 1)
    ref = [stats.spearmanr(p, y).statistic for p in P]
    assert np.allclose(spearman_rows(P, y), ref)
    assert spearman(np.ones(5), np.arange(5.0)) == 0.0
    assert spearman(np.array([1.0]), np.array([2.0])) == 0.0
    assert spearman(np.array([1.0, np.nan, 3.0]), np.arange(3.0)) == 0.0
    assert spearman(np.arange(4.0), -np.arange(4.0)) == pytest.approx(-1.0)


def test_fixed_solver_options():
    """psd_floor (default) floors X'X eigenvalues at 0; direct solves Eqs. 3-4 on the statistics as released."""
    XX = np.array([[[-5.0, 0.0], [0.0, 1.0]]])
    Xy = np.array([[1.0, 1.0]])
    direct = posterior_mean_fixed(XX, Xy, solver="direct")
    assert direct[0, 0] == pytest.approx(1.0 / (1.0 - 5.0)) and direct[0, 1] == pytest.approx(0.5)
    with pytest.raises(ValueError):
        posterior_mean_fixed(XX, Xy, solver="qr")
    s = _split(np.random.default_rng(4))
    a = PrivateLR(solver="direct").run(s, 1.0, 0.0, np.random.default_rng(1), trials=2).predictions
    b = PrivateLR().run(s, 1.0, 0.0, np.random.default_rng(1), trials=2).predictions
    assert a.shape == b.shape and not np.allclose(a, b)


def test_plr_without_private_rows_is_the_public_fit():
    s = _split(np.random.default_rng(5))
    s0 = Split(s.X_private[:0], s.y_private[:0], s.X_public, s.y_public, s.X_test, s.y_test, s.meta)
    out = PrivateLR().run(s0, 1.0, 0.0, np.random.default_rng(1), trials=2).predictions
    w = np.linalg.solve(np.eye(3) + s.X_public.T @ s.X_public, s.X_public.T @ s.y_public)
    assert np.allclose(out, s.X_test @ w)
