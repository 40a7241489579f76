"""Clopper–Pearson bounds and the ε lower bound: known counts give known values (closed forms / scipy.stats)."""

import math

import numpy as np
import pytest
from scipy import stats

from dpexp.audit.bounds import clopper_pearson, cp_lower, cp_upper, epsilon_lower_bound
from dpexp.audit.events import Event, audit_samples, count_events, evaluate_events
from dpexp.errors import UserError


def test_cp_edge_counts_closed_form():
    # k = 0: upper bound solves (1 - p)^n = alpha; k = n: lower bound solves p^n = alpha
    assert float(cp_upper(0, 10, 0.05)) == pytest.approx(1 - 0.05 ** 0.1, rel=1e-10)
    assert float(cp_lower(10, 10, 0.05)) == pytest.approx(0.05 ** 0.1, rel=1e-10)
    assert float(cp_lower(0, 10, 0.05)) == 0.0
    assert float(cp_upper(10, 10, 0.05)) == 1.0


def test_cp_two_sided_known_interval():
    lo, hi = clopper_pearson(5, 10, 0.95)
    # the textbook exact 95% interval for 5/10
    assert float(lo) == pytest.approx(0.187086, abs=1e-6)
    assert float(hi) == pytest.approx(0.812914, abs=1e-6)


@pytest.mark.parametrize("k,n", [(1, 7), (37, 1000), (49_000, 50_000), (3, 50_000)])
def test_cp_matches_beta_quantiles(k, n):
    a = 0.01
    assert float(cp_lower(k, n, a)) == pytest.approx(stats.beta.ppf(a, k, n - k + 1), rel=1e-9)
    assert float(cp_upper(k, n, a)) == pytest.approx(stats.beta.ppf(1 - a, k + 1, n - k), rel=1e-9)


def test_epsilon_lower_bound_known_value():
    # all 100 runs on D in S, none on D': p_lo = (α/2)^(1/100), q_hi = 1 - (α/2)^(1/100), α = 0.05
    a = 0.025
    expected = math.log(a ** 0.01 / (1 - a ** 0.01))
    assert float(epsilon_lower_bound(100, 100, 0, 100, 0.0, 0.95)) == pytest.approx(expected, rel=1e-10)
    # delta is subtracted from the lower bound of the numerator
    d = 0.1
    expected_d = math.log((a ** 0.01 - d) / (1 - a ** 0.01))
    assert float(epsilon_lower_bound(100, 100, 0, 100, d, 0.95)) == pytest.approx(expected_d, rel=1e-10)
    # union bound over K events: each side at alpha / (2K)
    k1, n1, k2, n2 = 600, 1000, 200, 1000
    K = 4
    exp_k = math.log(stats.beta.ppf(0.05 / (2 * K), k1, n1 - k1 + 1)
                     / stats.beta.ppf(1 - 0.05 / (2 * K), k2 + 1, n2 - k2))
    assert float(epsilon_lower_bound(k1, n1, k2, n2, 0.0, 0.95, n_events=K)) == pytest.approx(exp_k, rel=1e-9)


def test_uninformative_event_is_minus_inf():
    assert float(epsilon_lower_bound(0, 100, 0, 100, 0.0, 0.95)) == -math.inf
    assert float(epsilon_lower_bound(1, 100, 0, 100, 0.5, 0.95)) == -math.inf


def test_bad_confidence_is_user_error():
    with pytest.raises(UserError, match="confidence"):
        clopper_pearson(1, 2, 1.5)


def test_event_counts_and_atoms():
    x = np.array([0.0, 0.0, 1.0, 2.0, np.nan])  # NaN counts as +inf (a failed run)
    ev = [Event(0.0, 0.0, False), Event(-np.inf, 1.0, False), Event(1.0, np.inf, False), Event(np.inf, np.inf, False)]
    assert count_events(x, ev).tolist() == [2, 3, 3, 1]
    r = evaluate_events(ev[:1], np.zeros(10), np.ones(10), 0.0, 0.95)
    assert (r.k_d, r.k_dprime) == (10, 0)


def test_split_sample_bound_on_laplace_is_valid_and_tight():
    """Lap(1, 1) vs Lap(0, 1): true ε = 1.  The bound must stay below 1 (failure probability ≤ 5% per seed;
    fixed seed) and reach within 0.1 of it with 10⁵ samples per side."""
    rng = np.random.default_rng(12345)
    a, b = 1 + rng.laplace(0, 1, 100_000), rng.laplace(0, 1, 100_000)
    r = audit_samples(a, b, 0.0, 0.95)
    assert 0.9 < r.epsilon_lb <= 1.0
