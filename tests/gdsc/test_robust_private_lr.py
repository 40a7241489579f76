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
from dpexp.families.gdsc.stats import clip, sensitivities, sufficient_stats
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
    maximise each term) the L1 change of each release never exceeds the sensitivity the mechanism uses, and each
    bound is attained (so it is not loose by a factor): XᵀX by B_x·1 → 0, Xᵀy by (B_x·1, B_y) → (B_x·1, −B_y),
    yᵀy by B_y → 0."""
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
            for xi, yi in [(c, yv), (X[i], yv), (c, y[i]), (np.zeros(d), 0.0)]:
                X2, y2 = X.copy(), y.copy()
                X2[i], y2[i] = xi, yi
                rel = _released(X2, y2, B_x, B_y)
                ch = [np.abs(a - b).sum() for a, b in zip(base, rel)]
                worst = np.maximum(worst, ch)
    assert worst[0] <= s_xx * (1 + 1e-12) and worst[1] <= s_xy * (1 + 1e-12) and worst[2] <= s_yy * (1 + 1e-12)
    # attained exactly, on a 1-row dataset (the other rows' terms cancel in the change)
    ones, zero = np.full((1, d), B_x), np.zeros((1, d))
    assert np.abs(_released(ones, np.zeros(1), B_x, B_y)[0] - _released(zero, np.zeros(1), B_x, B_y)[0]).sum() \
        == pytest.approx(s_xx, rel=1e-12)
    a, b = _released(ones, np.array([B_y]), B_x, B_y), _released(ones, np.array([-B_y]), B_x, B_y)
    assert np.abs(a[1] - b[1]).sum() == pytest.approx(s_xy, rel=1e-12)
    assert np.abs(_released(ones, np.full(1, B_y), B_x, B_y)[2] - _released(zero, np.zeros(1), B_x, B_y)[2]).sum() \
        == pytest.approx(s_yy, rel=1e-12)


@pytest.mark.parametrize("d", [1, 2, 3, 4, 5])
def test_xx_sensitivity_is_tight_by_optimiser(d):
    """The tight XᵀX bound d(d+1)B²/2 (stats module docstring) against a numerical optimiser over one replaced row
    (x, x′) in a box wider than the clipping box (clipping is part of the release): the largest L1 change of the
    d(d+1)/2 released entries reaches the bound to 1e-6 (relative) and never exceeds it; 20,000 random pairs never
    exceed it either.  The paper's d(d+1)B² (Methods 4.2) is exactly twice it."""
    from brute_force import maximise

    B_x = 0.7
    s_xx = sensitivities(d, B_x, 1.0)[0]
    assert s_xx == pytest.approx(d * (d + 1) * B_x**2 / 2, rel=1e-15)
    assert sensitivities(d, B_x, 1.0, "paper")[0] == pytest.approx(d * (d + 1) * B_x**2, rel=1e-15)

    def change(z):
        a = _released(z[None, :d], np.zeros(1), B_x, 1.0)[0]
        b = _released(z[None, d:], np.zeros(1), B_x, 1.0)[0]
        return np.abs(a - b).sum()

    rng = np.random.default_rng(40 + d)
    lo, hi = np.full(2 * d, -1.5 * B_x), np.full(2 * d, 1.5 * B_x)
    best, _ = maximise(change, lo, hi, rng, restarts=8)
    assert s_xx * (1 - 1e-6) <= best <= s_xx * (1 + 1e-12)
    Z = np.clip(rng.uniform(-1.5 * B_x, 1.5 * B_x, size=(20_000, 2, d)), -B_x, B_x)
    Z[::3] = np.sign(Z[::3]) * B_x           # corners too
    iu = np.triu_indices(d)
    P = Z[:, :, :, None] * Z[:, :, None, :]  # each row's x xᵀ, clipped
    assert np.abs(P[:, 0, iu[0], iu[1]] - P[:, 1, iu[0], iu[1]]).sum(axis=1).max() <= s_xx * (1 + 1e-12)


@pytest.mark.parametrize("d", [1, 3, 5])
def test_xy_and_yy_sensitivities_are_tight_by_optimiser(d):
    """Xᵀy's 2dB_xB_y and yᵀy's B_y² against the optimiser over one replaced row (x, y, x′, y′): attained to 1e-6
    and never exceeded (the same under both rules)."""
    from brute_force import maximise

    B_x, B_y = 0.7, 1.3
    _, s_xy, s_yy = sensitivities(d, B_x, B_y)
    assert sensitivities(d, B_x, B_y, "paper")[1:] == (s_xy, s_yy)

    def change(z, k):
        a = _released(z[None, :d], z[d:d + 1], B_x, B_y)[k]
        b = _released(z[None, d + 1:2 * d + 1], z[2 * d + 1:], B_x, B_y)[k]
        return np.abs(a - b).sum()

    rng = np.random.default_rng(50 + d)
    box = np.array([1.5 * B_x] * d + [1.5 * B_y])
    lo, hi = -np.concatenate([box, box]), np.concatenate([box, box])
    for k, s in ((1, s_xy), (2, s_yy)):
        best, _ = maximise(lambda z: change(z, k), lo, hi, rng, restarts=6)
        assert s * (1 - 1e-6) <= best <= s * (1 + 1e-12)


def test_xx_sensitivity_attained_by_sign_flip():
    d, B = 4, 0.5
    x = np.full((1, d), B)
    x2 = x.copy()
    x2[0, 0] = -B  # changes the d - 1 off-diagonal entries of row/col 0 of the unique triangle by 2B^2 each
    a, b = _released(x, np.zeros(1), B, 1.0)[0], _released(x2, np.zeros(1), B, 1.0)[0]
    assert np.abs(a - b).sum() == pytest.approx(2 * B * B * (d - 1))  # diagonal x0^2 unchanged
    assert 2 * B * B * (d - 1) < sensitivities(d, B, 1.0)[0]          # below B·1 → 0's d(d+1)B²/2


@pytest.mark.parametrize("rule", ["tight", "paper"])
def test_noise_scales_drawn(rule):
    """rplr's release (``release_batch.release_group``, data σ = 1 so B = ω) draws Laplace noise with scale
    Δ₁/(share · ε) for each statistic, the Δ₁ written out here: XᵀX d(d+1)B_x²/2 (tight) or d(d+1)B_x² (paper),
    Xᵀy 2dB_xB_y, yᵀy B_y²; the lower triangle mirrors the upper one (noise counted once per unique entry)."""
    from dpexp.families.gdsc.release_batch import release_group
    from dpexp.privacy.ledger import PrivacyLedger

    d, B_x, B_y, eps = 3, 0.4, 1.1, 2.0
    p1, p2, p3 = 0.35, 0.6, 0.05
    T = 60_000
    lg = PrivacyLedger(np.random.default_rng(7))
    g = release_group([np.zeros((5, d))], [np.zeros(5)], d, T, [lg], np.array([[p1, p2, p3]]), eps,
                      np.array([[B_x, B_y]]), ("data", np.ones(1), np.ones(1)), rule)
    XX, Xy, yy = g.XX[0], g.Xy[0], g.yy[0]
    b_xx = {"tight": d * (d + 1) / 2, "paper": d * (d + 1)}[rule] * B_x**2 / (p1 * eps)
    iu = np.triu_indices(d)
    for sample, scale in [(XX[:, iu[0], iu[1]].ravel(), b_xx), (Xy.ravel(), 2 * d * B_x * B_y / (p2 * eps)),
                          (yy, B_y**2 / (p3 * eps))]:
        assert abs(np.mean(np.abs(sample)) / scale - 1) < 5 / math.sqrt(sample.size)
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
