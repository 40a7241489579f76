"""The registered ``adassp`` algorithm: the noise actually drawn through its path, the spends its ledger records,
the clipping interface, the guarantee per noise kind, and the noiseless limit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError

from dpexp.errors import UserError
from dpexp.families.gdsc.algorithms import adassp as alg_mod
from dpexp.families.gdsc.algorithms.adassp import AdaSSP
from dpexp.models import adassp as core
from dpexp.privacy.ledger import PrivacyLedger
from dpexp.types import Split

#: c_3, AdaSSP's XᵀX L1 factor at d = 3 (Δ₁ = c_3 B_X²): √33/2, the eigenvalue spread of M = [[1, ½, ½], [½, 1, ½],
#: [½, ½, −1]] (written out here, not taken from the code)
C3 = math.sqrt(33) / 2


def _split(n=60, d=3, n_pub=0, seed=0, zero=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n + n_pub + 5, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = X @ np.arange(1.0, d + 1) + 0.1 * rng.normal(size=len(X))
    if zero:
        X[:n], y[:n] = 0.0, 0.0
    meta = {"sigma_x": 0.5, "sigma_y": 2.0}
    return Split(X[:n], y[:n], X[n:n + n_pub], y[n:n + n_pub], X[n + n_pub:], y[n + n_pub:], meta)


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_noise_actually_drawn_through_the_algorithm(noise, monkeypatch):
    """All-zero private rows, no public rows: what reaches the estimate is pure noise; its scale matches the
    calibration at the bounds the algorithm derives (B_X = ω_x σ_x √d, B_Y = ω_y σ_y) within 2 % over 40,000
    trials (relative standard error ≈ 0.5 %)."""
    seen = {}
    estimate = core.estimate

    estimate_many = core.estimate_many

    def spy(XX, Xy, ridge):
        seen["XX"], seen["Xy"] = XX, Xy
        return estimate(XX, Xy, ridge)

    def spy_many(XX, Xy, ridge):   # noise: laplace, a batch of one
        seen["XX"], seen["Xy"] = XX[0], Xy[0]
        return estimate_many(XX, Xy, ridge)

    monkeypatch.setattr(alg_mod.core, "estimate", spy)
    monkeypatch.setattr(alg_mod.core, "estimate_many", spy_many)
    s = _split(zero=True)
    d, eps, delta = 3, 1.2, 1e-5
    alg = AdaSSP(sigma="data", noise=noise, omega_x=2.0, omega_y=0.5)
    out = alg.run(s, eps, delta, PrivacyLedger(np.random.default_rng(1)), trials=40_000)
    B_X, B_Y = 2.0 * 0.5 * math.sqrt(d), 0.5 * 2.0
    assert out.extras["B_X"] == pytest.approx(B_X) and out.extras["B_Y"] == pytest.approx(B_Y)
    cal = core.calibrate(d, B_X, B_Y, eps, delta if noise == "gaussian" else 0.0, noise)
    iu = np.triu_indices(d)
    for draws, scale in [(seen["XX"][:, iu[0], iu[1]], cal.scale_xx), (seen["Xy"], cal.scale_xy)]:
        got = draws.std() if noise == "gaussian" else np.abs(draws).mean()
        assert abs(got / scale - 1) < 0.02, (got, scale)


def test_ledger_records_the_three_releases_and_the_sigma_estimates():
    s = _split()
    ledger = PrivacyLedger(np.random.default_rng(2))
    out = AdaSSP().run(s, 2.0, 0.0, ledger, trials=3)       # sigma: dp (default), laplace
    spends = ledger.summary()
    labels = [sp["label"] for sp in spends]
    assert labels == ["sigma_x", "sigma_y", "lambda_min(X'X)", "X'X", "X'y"]
    assert sum(sp["epsilon"] for sp in spends) == pytest.approx(2.0)
    assert [sp["epsilon"] for sp in spends[2:]] == pytest.approx([1.8 / 3] * 3)
    assert out.guarantee.kind == "pure" and out.guarantee.epsilon == pytest.approx(2.0)
    # L1 sensitivities B_X², c_3 B_X², 2√d B_X B_Y (d = 3, c_3 = √33/2: the spread of the best sign pattern,
    # tests/models/test_adassp_sensitivity.py; the worst trial's, σ̂ being drawn per trial)
    assert spends[3]["sensitivity"] == pytest.approx(C3 * spends[2]["sensitivity"])
    data = PrivacyLedger(np.random.default_rng(2))
    AdaSSP(sigma="data").run(s, 2.0, 0.0, data, trials=3)           # fixed bounds: b = Δ₁/(ε/3) for each release
    B_X, B_Y = 1.0 * 0.5 * math.sqrt(3), 0.5 * 2.0
    rec = [sp for sp in data.summary() if sp["label"] in ("lambda_min(X'X)", "X'X", "X'y")]
    assert [sp["sensitivity"] for sp in rec] == pytest.approx([B_X**2, C3 * B_X**2, 2 * math.sqrt(3) * B_X * B_Y])
    box = PrivacyLedger(np.random.default_rng(2))   # coordinate clipping: the box's exact d(d+1)B_x²/2 = 6B_x²
    AdaSSP(sigma="data", clip="coordinate").run(s, 2.0, 0.0, box, trials=3)
    assert [sp["sensitivity"] for sp in box.summary() if sp["label"] == "X'X"] == pytest.approx([6 * 0.5**2])
    assert all(sp["scale"] == pytest.approx(sp["sensitivity"] / (2.0 / 3)) for sp in rec)


def test_guarantees_per_setting():
    s = _split()
    g = AdaSSP(noise="gaussian").run(s, 1.0, 1e-6, np.random.default_rng(0)).guarantee
    assert g.kind == "approx" and g.epsilon == pytest.approx(1.0) and 0 < g.delta <= 1e-6 * (1 + 1e-9)
    g = AdaSSP(sigma="data").run(s, 1.0, 0.0, np.random.default_rng(0)).guarantee
    assert g.kind == "none" and "sigma: data" in g.reason
    with pytest.raises(UserError, match="needs the cell's delta"):
        AdaSSP(noise="gaussian").run(s, 1.0, 0.0, np.random.default_rng(0))
    with pytest.raises(ValidationError):
        AdaSSP(omega_y=0.0)


def test_nearly_noiseless_limit_is_least_squares_and_public_rows_are_used():
    """At ε = 1e9 the estimate is the least-squares fit of the clipped rows (private + public)."""
    s = _split(n=200, n_pub=20)
    out = AdaSSP(sigma="data", omega_x=10.0, omega_y=10.0).run(s, 1e9, 0.0, np.random.default_rng(0))
    X = np.vstack([s.X_private, s.X_public])
    y = np.concatenate([s.y_private, s.y_public])
    np.testing.assert_allclose(out.coef[0], np.linalg.lstsq(X, y, rcond=None)[0], rtol=1e-4)
    alone = AdaSSP(sigma="data", omega_x=10.0, omega_y=10.0, public=False).run(s, 1e9, 0.0, np.random.default_rng(0))
    np.testing.assert_allclose(alone.coef[0], np.linalg.lstsq(s.X_private, s.y_private, rcond=None)[0], rtol=1e-4)


def test_clipping_modes_and_bounds_interface():
    s = _split()
    norm = AdaSSP(omega_x=0.5)
    one = np.ones((1, 1))

    def products(alg, X, y, B_X, B_x, B_Y):   # the clipped row's XᵀX, Xᵀy (a batch of one split, one trial)
        XX, Xy = alg._clip_products(alg_mod._Blocked([X], [y]), B_X * one, B_x * one, B_Y * one, 1)
        return XX[0, 0], Xy[0, 0]

    XX, _ = products(norm, np.array([[3.0, 4.0]]), np.zeros(1), 1.0, 1.0, 1.0)
    np.testing.assert_allclose(XX, np.outer([0.6, 0.8], [0.6, 0.8]))     # projected onto the unit ball
    coord = AdaSSP(clip="coordinate")
    XX, Xy = products(coord, np.array([[3.0, -4.0]]), np.array([5.0]), 2.0, 1.0, 2.0)
    np.testing.assert_allclose(XX, np.outer([1.0, -1.0], [1.0, -1.0]))    # each coordinate at ±B_x, y at B_Y
    np.testing.assert_allclose(Xy, [2.0, -2.0])
    assert norm.bounds(s) == pytest.approx((0.5 * 0.5 * math.sqrt(3), 1.0))
    assert coord.bounds(s) == pytest.approx((0.5, 1.0))


def test_no_private_rows_releases_nothing():
    s = _split(n=0, n_pub=10)
    out = AdaSSP().run(s, 1.0, 0.0, np.random.default_rng(0), trials=2)
    assert out.guarantee.kind == "pure" and out.guarantee.epsilon == 0.0
    assert np.all(np.isfinite(out.predictions))


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_per_trial_bounds_set_each_trials_noise_scale(noise, monkeypatch):
    """``sigma: dp`` gives every trial its own σ̂ and hence its own bounds: the noise each trial draws must be
    calibrated to *that* trial's B_X = ω_x σ̂_x √d, B_Y = ω_y σ̂_y at the statistics' ε = (1 − sigma_share)ε / 3 per
    release.  σ̂ is fixed here (σ̂_x = 0.5 in half the trials, 0.5√2 in the other half, so the XᵀX noise of the second
    half is exactly twice the first's) and the expected scales are written out from the sensitivities
    (λ_min: B_X², XᵀX: c_3 B_X² (L1) or √2 B_X² (L2), Xᵀy: 2√d B_X B_Y (L1) or 2 B_X B_Y (L2)), not taken from
    the calibration code.  Each half matches within 3 % (20,000 trials per half: relative s.e. ≈ 0.3–0.7 %), and
    the ratio of the halves is 2 within 3 % — a scale off by a factor of 2 (or 1/2), or one trial's bounds used for
    all trials, fails."""
    from dpexp.privacy.mechanisms import analytic_gaussian_sigma

    half, d, eps, delta, share = 20_000, 3, 1.5, 1e-5, 0.1
    sx = np.repeat([0.5, 0.5 * math.sqrt(2.0)], half)
    sy = np.full(2 * half, 2.0)
    real_sigmas = alg_mod.release_sigmas

    def fixed_sigmas(*a):   # the σ̂ spends recorded, σ̂ fixed
        real_sigmas(*a)
        return sx[None], sy[None]

    monkeypatch.setattr(alg_mod, "release_sigmas", fixed_sigmas)
    seen = {}
    real_rows = core.release_rows

    def spy_rows(XX, Xy, cal, standard, sources):
        got = real_rows(XX, Xy, cal, standard, sources)
        seen["out"] = tuple(a[0] for a in got)
        return got

    monkeypatch.setattr(alg_mod.core, "release_rows", spy_rows)
    alg = AdaSSP(sigma="dp", sigma_share=share, noise=noise, omega_x=1.0, omega_y=0.5)
    alg.run(_split(zero=True), eps, delta, PrivacyLedger(np.random.default_rng(3)), trials=2 * half)
    lm, XX, Xy = seen["out"]
    iu = np.triu_indices(d)
    e3 = (1 - share) * eps / 3
    B_X, B_Y = sx * math.sqrt(d), 0.5 * sy
    if noise == "laplace":
        want = [B_X**2 / e3, C3 * B_X**2 / e3, 2 * math.sqrt(d) * B_X * B_Y / e3]
    else:
        g = analytic_gaussian_sigma(1.0, e3, delta / 3)         # σ is linear in the sensitivity
        want = [B_X**2 * g, math.sqrt(2) * B_X**2 * g, 2 * B_X * B_Y * g]
    for k, (draws, scale) in enumerate([(lm[:, None], want[0]), (XX[:, iu[0], iu[1]], want[1]), (Xy, want[2])]):
        got = []
        for h in (slice(0, half), slice(half, None)):
            z = draws[h]
            got.append(z.std() if noise == "gaussian" else np.abs(z).mean())
            assert abs(got[-1] / scale[h][0] - 1) < 0.03, (got[-1], scale[h][0])
        if k < 2:   # λ_min and XᵀX scale with B_X²: exactly 2× in the second half
            assert abs(got[1] / got[0] - 2.0) < 0.06, got


def test_audit_view_returns_the_raw_releases_and_restores_the_module():
    """The audit view (``AuditPlan.view``) exposes (noisy λ_min, XᵀX unique entries, Xᵀy, σ̂_x, σ̂_y) per trial:
    on all-zero private rows with no public rows the λ_min column is pure Laplace noise at the calibrated scale
    (mean |noise| within 3 % over 20,000 trials), and ``models.adassp.release_rows`` is the original afterwards."""
    from dpexp.families.gdsc.audit import adassp_releases

    s = _split(zero=True)
    alg = AdaSSP(sigma="data", omega_x=2.0, omega_y=0.5)
    original = core.release_rows
    out = adassp_releases(alg).run(s, 1.5, 0.0, PrivacyLedger(np.random.default_rng(3)), trials=20_000)
    assert core.release_rows is original
    d = 3
    assert out.coef.shape == (20_000, 1 + d * (d + 1) // 2 + d)        # sigma: data releases no σ̂
    cal = core.calibrate(d, 2.0 * 0.5 * math.sqrt(d), 0.5 * 2.0, 1.5, 0.0, "laplace")
    assert abs(np.abs(out.coef[:, 0]).mean() / cal.scale_min - 1) < 0.03
    dp = adassp_releases(AdaSSP()).run(_split(), 2.0, 0.0, PrivacyLedger(np.random.default_rng(4)), trials=5)
    assert dp.coef.shape == (5, 1 + d * (d + 1) // 2 + d + 2)


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_predictions_at_clipped_test_rows_stay_bounded_when_sigma_hat_collapses(noise):
    """n = 100 rows in [−1, 1] at ε = 1 (σ̂ at 0.05ε each): the noisy sums of squares are often ≤ 0, σ̂ is then
    1e-12 and every row is clipped to a norm ~1e-12, so θ̂ grows like B_Y/B_X (~1e11).  At test rows clipped as the
    fitted rows were, the predictions stay within a few B_Y (at unclipped rows they were ~1e10: docs/own_data.md)."""
    rng = np.random.default_rng(5)
    X = rng.uniform(-0.6, 0.6, size=(115, 3))
    y = np.clip(X @ np.array([0.5, -0.3, 0.2]) + 0.1 * rng.normal(size=115), -1, 1)
    s = Split(X[:100], y[:100], X[100:110], y[100:110], X[110:], y[110:], {})
    out = AdaSSP(sigma_bound_y=1.0, noise=noise).run(s, 1.0, 1e-5, PrivacyLedger(np.random.default_rng(6)),
                                                   trials=4000)
    assert np.abs(out.coef).max() > 1e6                          # the collapse happens in some trials
    assert np.abs(out.predictions).max() < 50, np.abs(out.predictions).max()
