"""The noise each mechanism *actually draws* (through a ledger, seeded) has the scale its privacy map claims.

Every check has a stated tolerance of about 5 standard errors (failure probability < 1e-6 for a correct mechanism
under the normal approximation) and is at most a few percent of the scale, so a factor-2 error in a scale (noise
halved, or ε doubled) fails it; ``test_scale_checks_catch_a_factor_two`` runs the same checks on deliberately wrong
draws to prove it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpexp.privacy import mechanisms as mech
from dpexp.errors import UserError
from dpexp.privacy.guarantee import PrivacyAccountingError
from dpexp.privacy.ledger import PrivacyLedger

N = 100_000


def ledger(seed: int) -> PrivacyLedger:
    return PrivacyLedger(np.random.default_rng(seed))


def laplace_ok(x: np.ndarray, b: float) -> bool:
    """E|X| = b and sd(|X|) = b for Lap(0, b)."""
    return abs(np.mean(np.abs(x)) - b) < 5 * b / math.sqrt(x.size)


def normal_ok(x: np.ndarray, sigma: float) -> bool:
    """sd(s²) ≈ σ² sqrt(2/n)."""
    return abs(np.mean(x * x) - sigma**2) < 5 * sigma**2 * math.sqrt(2 / x.size)


def test_laplace_draws_delta_over_epsilon():
    L = ledger(1)
    x = mech.laplace(np.zeros(4), 3.0, 0.7, L, size=N // 4).ravel()
    assert laplace_ok(x, 3.0 / 0.7) and L.spends[0].scale == 3.0 / 0.7


def test_laplace_per_trial_scale_is_drawn_per_trial():
    L = ledger(2)
    sens = np.where(np.arange(N) % 2 == 0, 1.0, 4.0)
    x = mech.laplace(0.0, sens, 2.0, L, size=N)
    assert laplace_ok(x[::2], 0.5) and laplace_ok(x[1::2], 2.0)


def test_laplace_parts_share_the_scale():
    L = ledger(3)
    a, b = mech.laplace((np.zeros((3, 3)), np.zeros(3)), 30.0, 1.5, L, size=N // 9)
    assert laplace_ok(a.ravel(), 20.0) and laplace_ok(b.ravel(), 20.0)


def test_laplace_rows_draw_delta_over_epsilon_per_cell_and_trial():
    """The batched release (``standard_laplace_rows`` + ``laplace_rows``, rplr's and narplr's release of many cells
    at once) draws b = Δ₁/ε for each cell and trial, and records that b."""
    cells = [ledger(20 + i) for i in range(4)]
    sens = np.array([[1.0, 4.0], [2.0, 2.0], [0.5, 0.5], [3.0, 6.0]])          # (cells, trials)
    eps = np.array([0.5, 1.0, 2.0, 1.5])
    k = N // 8                                                                  # draws per trial
    L = mech.standard_laplace_rows(cells, 2 * k).reshape(4, 2, k)
    x = mech.laplace_rows(np.zeros((4, 2, k)), L, sens, eps, cells)
    for i in range(4):
        for t in range(2):
            assert laplace_ok(x[i, t], sens[i, t] / eps[i])
        assert cells[i].spends[0].scale == sens[i].min() / eps[i] and cells[i].spends[0].epsilon == eps[i]


def test_gaussian_approx_draws_the_calibrated_sigma():
    for calibration, seed in (("analytic", 4), ("classic", 5)):
        L = ledger(seed)
        x = mech.gaussian_approx(np.zeros(2), 1.5, 0.5, 1e-5, L, size=N // 2, calibration=calibration).ravel()
        sigma = 1.5 * (mech.analytic_gaussian_sigma(1.0, 0.5, 1e-5) if calibration == "analytic"
                       else mech.gaussian_sigma_classic(1.0, 0.5, 1e-5))
        assert normal_ok(x, sigma) and L.spends[0].scale == pytest.approx(sigma, rel=1e-12)


def test_gaussian_zcdp_draws_delta_over_sqrt_two_rho():
    L = ledger(6)
    x = mech.gaussian_zcdp(np.zeros(2), 2.0 * math.sqrt(2.0), 0.02, L, size=N // 2).ravel()
    assert normal_ok(x, 2.0 * math.sqrt(2.0) / math.sqrt(0.04))


def test_gamma_norm_draws_norm_gamma_d_delta_over_epsilon():
    d, sens, eps = 5, 2.0, 0.8
    L = ledger(7)
    b = mech.gamma_norm(np.zeros(d), sens, eps, L, size=N)
    r = np.linalg.norm(b, axis=1)
    scale = sens / eps
    assert abs(r.mean() - d * scale) < 5 * math.sqrt(d) * scale / math.sqrt(N)   # Gamma(d, s): mean ds, sd √d s
    assert np.all(np.abs(b.mean(axis=0)) < 5 * r.std() / math.sqrt(N) + 5 * scale / math.sqrt(N))


def test_smooth_t_draws_bound_over_s_times_t():
    L = ledger(8)
    S, s, df = 0.04, 0.3, 3.0
    x = mech.smooth_sensitivity_t(0.5, S, 0.05, s, df, L, size=N)
    assert stats.kstest((x - 0.5) * s / S, stats.t(df).cdf).pvalue > 1e-4


def test_exponential_probabilities_match_epsilon_over_two_delta_u():
    L = ledger(9)
    u = np.array([0.0, -1.0, -2.0, -4.0])
    eps, du = 1.2, 2.0
    idx = mech.exponential(u, du, eps, L, size=N)
    counts = np.bincount(idx, minlength=4)
    p = np.exp(eps * u / (2 * du))
    p /= p.sum()
    assert stats.chisquare(counts, p * N).pvalue > 1e-4


def test_heuristic_laplace_draws_its_scale_per_column():
    L = ledger(10)
    x = mech.heuristic_laplace(np.zeros(2), np.array([0.5, 2.0]), L, size=N, reason="heuristic")
    assert laplace_ok(x[:, 0], 0.5) and laplace_ok(x[:, 1], 2.0)


def test_scale_checks_catch_a_factor_two():
    """The checks above reject noise at half (or double) the claimed scale — they can fail."""
    g = np.random.default_rng(11)
    lap, nor = g.laplace(0.0, 1.0, N), g.normal(0.0, 1.0, N)
    for wrong in (0.5, 2.0):
        assert not laplace_ok(lap * wrong, 1.0) and not normal_ok(nor * wrong, 1.0)
    t = g.standard_t(3.0, N)
    assert stats.kstest(0.5 * t, stats.t(3.0).cdf).pvalue < 1e-30
    u = np.array([0.0, -1.0, -2.0, -4.0])
    idx = mech.exponential(u, 2.0, 2.4, g, size=N)                           # ε doubled
    p = np.exp(1.2 * u / 4.0)
    assert stats.chisquare(np.bincount(idx, minlength=4), p / p.sum() * N).pvalue < 1e-30


def test_laplace_rows_with_given_scales_are_the_laplace_calls():
    """``laplace_rows(scale=)`` (issue 31: NoisyStats over the splits of a call) against one ``laplace(scale=)`` per
    cell: the same floats, spends and stream positions; a NaN scale is a ⊥ trial (NaN released, ignored by the
    spend), a cell of ⊥ trials only records NaN sensitivity and scale as ``laplace`` does."""
    from dpexp.privacy.mechanisms import laplace, laplace_rows, standard_laplace_rows

    S, T, eps = 4, 5, 0.3
    r = np.random.default_rng(2)
    v0 = r.normal(size=S)   # one value per cell, released in T trials
    val = np.repeat(v0[:, None], T, axis=1)
    sens = r.uniform(0.1, 1.0, (S, T))
    sens[1, [0, 3]] = np.nan
    sens[2] = np.nan          # every trial ⊥
    sc = 3.0 * sens / (3 * eps)
    for s_arg, b_arg in ((sens, sc), (np.full(S, 0.5), np.full(S, 0.5 / eps))):
        la = [PrivacyLedger(np.random.default_rng(20 + i)) for i in range(S)]
        lb = [PrivacyLedger(np.random.default_rng(20 + i)) for i in range(S)]
        got = laplace_rows(val, standard_laplace_rows(la, T), s_arg, eps, la, "x", scale=b_arg)
        for i in range(S):
            ref = laplace(float(v0[i]), s_arg[i], eps, lb[i], size=T, scale=b_arg[i], label="x")
            assert got[i].tobytes() == ref.tobytes()
            assert repr(la[i].spends) == repr(lb[i].spends)
            assert la[i].noise.generator.random() == lb[i].noise.generator.random()
        if s_arg is sens:
            assert np.isnan(got[2]).all() and np.isnan(got[1, [0, 3]]).all() and np.isfinite(got[1, [1, 2, 4]]).all()
            assert math.isnan(la[2].spends[0].sensitivity) and math.isnan(la[2].spends[0].scale)
    la = [PrivacyLedger(np.random.default_rng(0)) for _ in range(S)]
    with pytest.raises(PrivacyAccountingError):   # a scale below Δ/ε in one trial: refused before recording
        bad = sc.copy()
        bad[3, 1] *= 0.5
        laplace_rows(val, standard_laplace_rows(la, T), sens, eps, la, "x", scale=bad)
    assert all(not x.spends for x in la)
    with pytest.raises(UserError):   # a release without a sensitivity
        s2 = sens.copy()
        s2[0, 0] = np.nan
        laplace_rows(val, standard_laplace_rows(la, T), s2, eps, la, "x", scale=np.where(np.isnan(s2), 1.0, sc))
    assert all(not x.spends for x in la)


def _one_cell(k: int):
    from dpexp.privacy.ledger import PrivacyLedger
    from dpexp.privacy.mechanisms import standard_laplace_rows

    led = [PrivacyLedger(np.random.default_rng(0))]
    return led, standard_laplace_rows(led, k)


@pytest.mark.parametrize("value, sens, scale", [
    (np.full((1, 1), 0.7), [[1.0, 1.0]], [[1.0, 2.0]]),   # a trial axis of 2 for one trial
    (np.full((1, 1), 0.7), [[1.0, 2.0]], None),
    (np.array([[[0.3, 0.9]]]), [1.0], [[[1.0, 2.0]]]),    # one b per entry: not a trial's
])
def test_rows_refuse_a_trial_axis_that_would_reuse_a_draw(value, sens, scale):
    """Sensitivities or scales with another trial axis than the values' would broadcast one standard draw over
    several released numbers with different b (the value then solvable from two of them): refused before anything
    is recorded, for ``laplace_rows`` and ``gaussian_rows``."""
    from dpexp.privacy.mechanisms import gaussian_rows, laplace_rows

    led, std = _one_cell(value.size)
    with pytest.raises(ValueError, match="expected"):
        laplace_rows(value, std.reshape(value.shape), sens, 1.0, led, "x", scale=scale)
    with pytest.raises(ValueError, match="expected"):
        gaussian_rows(value, std.reshape(value.shape), sens if scale is None else scale, sens, 1.0, 1e-6, led, label="x")
    assert led[0].spends == []


def test_a_negative_zero_scale_releases_nothing():
    """b = -0.0 passes a ``>= 0`` check and Δ/b = -inf passes an ``<= ε`` one: it must imply ε = inf instead
    (``laplace_rows``, ``gamma_norm``), so the value is never released without noise."""
    led, std = _one_cell(3)
    with pytest.raises(PrivacyAccountingError, match="inf"):
        mech.laplace_rows(np.full((1, 3), 0.7), std, [1.0], 1.0, led, "x", scale=-0.0)
    one = PrivacyLedger(np.random.default_rng(0))
    with pytest.raises(PrivacyAccountingError, match="inf"):
        mech.gamma_norm(np.array([0.3, 0.4]), 1.0, 1.0, one, scale=-0.0)
    assert led[0].spends == [] and one.spends == []


def test_laplace_refuses_a_nan_sensitivity_for_a_trial_that_releases():
    """``laplace(scale=)`` with a NaN Δ and a finite b released the value under a spend that covers nothing
    (its implied ε NaN, ignored); it is refused, as ``laplace_rows`` refuses it.  A NaN b (⊥) with it stays NaN."""
    one = PrivacyLedger(np.random.default_rng(0))
    with pytest.raises(UserError, match="NaN sensitivity"):
        mech.laplace(0.7, float("nan"), 1.0, one, size=2, scale=1e-9)
    assert one.spends == []
    assert np.isnan(mech.laplace(0.7, float("nan"), 1.0, one, size=2, scale=float("nan"))).all()
