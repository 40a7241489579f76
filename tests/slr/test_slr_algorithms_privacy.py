"""Privacy tests of the simple-LR mechanisms: brute-force replace-one sensitivities on small n, the exponential-
mechanism sampler against its exact density, and the smooth-sensitivity bound against brute-force local
sensitivity (Alabi et al. 2020, Appendices C–F)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import ndimage, stats

from dpexp.families.slr.algorithms.dp_gd import clipped_gradient_sum
from dpexp.families.slr.dp_median import (_dist, exp_median, interval_lengths, median_index,
                                          sample_intervals_structured, smooth_sensitivity)
from dpexp.families.slr.matchings import all_pair_estimates, pair_estimates

GRID = np.linspace(0, 1, 6)  # replacement values (includes the corners, where the extremes are attained)


def _neighbours(x, y):
    """All replace-one neighbours with the replaced point on GRID x GRID."""
    for i in range(x.size):
        for gx in GRID:
            for gy in GRID:
                x2, y2 = x.copy(), y.copy()
                x2[i], y2[i] = gx, gy
                yield x2, y2


def _nvar_ncov(x, y):
    return np.sum((x - x.mean()) ** 2), np.sum((x - x.mean()) * (y - y.mean()))


@pytest.mark.parametrize("seed", range(4))
def test_noisy_stats_sensitivities_brute_force(seed):
    r = np.random.default_rng(seed)
    n = 5
    x, y = r.random(n), r.random(n)
    if seed % 2:  # include corner points: the bound 1 - 1/n is attained there
        x[:2], y[:2] = [0, 1], [1, 0]
    v, c = _nvar_ncov(x, y)
    alpha = 0.8
    b0 = y.mean() - alpha * x.mean()
    dv = dc = db = 0.0
    for x2, y2 in _neighbours(x, y):
        v2, c2 = _nvar_ncov(x2, y2)
        dv, dc = max(dv, abs(v - v2)), max(dc, abs(c - c2))
        db = max(db, abs(b0 - (y2.mean() - alpha * x2.mean())))
    tol = 1e-12
    assert dv <= 1 - 1 / n + tol and dc <= 1 - 1 / n + tol  # Appendix C.1, Lemma 1
    assert db <= (1 + abs(alpha)) / n + tol  # Δ3 of Algorithm 1


def test_noisy_stats_sensitivity_is_attained():
    # x = (0, 0, 0, 0, 1) -> (0, ..., 0, 0): nvar drops by 1 - 1/n exactly
    x = np.array([0, 0, 0, 0, 1.0])
    v, _ = _nvar_ncov(x, x)
    v2, _ = _nvar_ncov(np.zeros(5), np.zeros(5))
    assert v - v2 == pytest.approx(1 - 1 / 5)


@pytest.mark.parametrize("seed", range(3))
def test_dpgd_clipped_sum_sensitivity_brute_force(seed):
    r = np.random.default_rng(seed)
    n, tau = 5, 0.3
    x, y = r.random(n), r.random(n)
    P = r.uniform(-1, 2, (4, 2))  # several iterates
    g = clipped_gradient_sum(P, x, y, tau)
    l1 = l2 = 0.0
    for x2, y2 in _neighbours(x, y):
        d = g - clipped_gradient_sum(P, x2, y2, tau)
        l1 = max(l1, np.abs(d).sum(axis=1).max())
        l2 = max(l2, np.sqrt((d ** 2).sum(axis=1)).max())
    assert l1 <= 4 * tau + 1e-12  # Laplace scale 4τ/ε_t (Algorithm 6)
    assert l2 <= 2 * math.sqrt(2) * tau + 1e-12  # Gaussian σ = 2τ/sqrt(ρ_t) (Algorithm 7)
    assert l1 >= 0.5 * 4 * tau  # the clip is active: the bound is not vacuous here


# -------------------------------------------------------------------------------------- exponential mechanism

def _exact_cdf(z, eps, r_l, r_u, theta, h=1e-5):
    """CDF on a fine grid of p(r) ∝ exp(-(eps/2) min_{|a-r|<=θ} ceil(|#{z < a} - N/2|)), by brute force."""
    r = np.arange(r_l, r_u, h) + h / 2
    zs = np.sort(np.clip(z, r_l, r_u))
    N = zs.size
    g = np.ceil(np.abs(np.searchsorted(zs, r, side="left") - N / 2))
    if theta > 0:
        w = int(round(theta / h))
        g = ndimage.minimum_filter1d(g, size=2 * w + 1, mode="nearest")
    p = np.exp(-(eps / 2) * (g - g.min()))
    return r, np.cumsum(p) / p.sum()


@pytest.mark.parametrize("theta,size", [(0.0, 20_000), (0.0, 60_000), (0.05, 20_000), (0.05, 60_000)])
def test_exp_median_matches_exact_density(theta, size):
    # size 60k forces the two-level (block) Gumbel-max path; 20k the single-level one
    z = np.array([0.1, 0.2, 0.2, 0.5, 0.9, 2.0])  # a duplicate and a point outside the range (clipped)
    eps, r_l, r_u = 3.0, -0.5, 1.5
    grid, cdf = _exact_cdf(z, eps, r_l, r_u, theta)
    draws = exp_median(z, eps, r_l, r_u, np.random.default_rng(11), size=size, theta=theta)
    assert draws.min() >= r_l and draws.max() <= r_u
    emp = np.searchsorted(np.sort(draws), grid, side="right") / size
    ks = np.max(np.abs(emp - cdf))
    # Kolmogorov-Smirnov: P(D > 1.95/sqrt(n)) ≈ 1e-3; grid discretisation adds < 1e-4
    assert ks < 1.95 / math.sqrt(size) + 1e-4


@pytest.mark.parametrize("c", [0.002, 0.5, 40.0])
def test_two_level_sampler_matches_single_level(c):
    r = np.random.default_rng(3)
    zs = np.sort(r.normal(0.5, 0.2, 3001).clip(-0.5, 1.5))
    zs[100:110] = zs[100]  # zero-length intervals
    L = interval_lengths(zs, -0.5, 1.5)
    with np.errstate(divide="ignore"):
        lw = np.log(L) - c * _dist(np.arange(L.size), zs.size)
    p = np.exp(lw - lw.max())
    p /= p.sum()
    size = 40_000
    idx = sample_intervals_structured(zs, -0.5, 1.5, c, np.random.default_rng(4), size)
    # chi-square over 12 bins of (roughly) equal exact probability; P(false failure) = 1e-4
    edges = np.searchsorted(np.cumsum(p), np.linspace(0, 1, 13)[1:-1])
    bins = np.searchsorted(edges, np.arange(L.size), side="right")
    exp_counts = np.bincount(bins, weights=p, minlength=12) * size
    obs = np.bincount(bins[idx], minlength=12)
    keep = exp_counts > 0
    assert obs[~keep].sum() == 0
    stat = ((obs[keep] - exp_counts[keep]) ** 2 / exp_counts[keep]).sum()
    assert stats.chi2.sf(stat, keep.sum() - 1) > 1e-4


def test_exp_median_is_eps_dp_on_tiny_neighbours():
    # exact interval probabilities of neighbouring inputs (one estimate changed) differ by at most e^eps in density
    eps, r_l, r_u = 1.0, -0.5, 1.5
    z = np.array([0.1, 0.3, 0.35, 0.6])
    grid = np.linspace(r_l, r_u, 4001)[1:-1]

    def dens(zz):
        zs = np.sort(zz)
        g = np.ceil(np.abs(np.searchsorted(zs, grid) - zs.size / 2))
        p = np.exp(-(eps / 2) * g)
        return p / (p.sum() * (grid[1] - grid[0]))

    d0 = dens(z)
    for v in (-0.5, 0.0, 0.32, 1.5):
        for i in range(z.size):
            z2 = z.copy()
            z2[i] = v
            ratio = d0 / dens(z2)
            assert ratio.max() <= math.exp(eps) * 1.01 and ratio.min() >= math.exp(-eps) / 1.01


# ------------------------------------------------------------------------------------------- smooth sensitivity

def _med(z, r_l, r_u):
    """The released median's centre: z_(ceil(N/2)), or the padding r_l for an empty estimate set."""
    zs = np.sort(np.clip(z[np.isfinite(z)], r_l, r_u))
    return r_l if zs.size == 0 else zs[median_index(zs.size) - 1]


def _S(z, k, t, r_l, r_u):
    return smooth_sensitivity(np.sort(z[np.isfinite(z)]), k, t, r_l, r_u)


@pytest.mark.parametrize("seed", range(8))
def test_smooth_sensitivity_bounds_local_sensitivity_and_is_smooth(seed):
    r = np.random.default_rng(seed)
    n = 6 + seed % 2
    x, y = r.random(n), r.random(n)
    if seed >= 3:  # x on the replacement grid: vertical pairs appear/disappear between neighbours
        x = np.round(x * 5) / 5
    if seed >= 6:  # all x equal (no estimate at all) or all but one: empty estimate sets among the neighbours
        x[:] = 0.4
        x[0] = 0.4 if seed == 6 else 0.8
    r_l, r_u, t = -0.5, 1.5, 0.3
    for mode in ("all", "match"):
        if mode == "all":
            Z = lambda xx, yy: all_pair_estimates(xx, yy, 0.25)  # noqa: E731
            k = n - 1
        else:  # one fixed matching (the coupling of Appendix D.1 uses the same matching for both datasets)
            perm = r.permutation(n)
            a, b = perm[0:n - 1:2], perm[1:n:2]
            Z = lambda xx, yy: pair_estimates(xx, yy, a, b, 0.25)  # noqa: E731
            k = 1
        z = Z(x, y)  # empty estimate sets are released too (median r_l, full span): no skipping
        m0, S0 = _med(z, r_l, r_u), _S(z, k, t, r_l, r_u)
        ls = 0.0
        for x2, y2 in _neighbours(x, y):
            z2 = Z(x2, y2)
            ls = max(ls, abs(m0 - _med(z2, r_l, r_u)))
            S2 = _S(z2, k, t, r_l, r_u)
            assert S0 <= math.exp(t) * S2 * (1 + 1e-12) + 1e-15  # t-smoothness (Definition 6)
            assert S2 <= math.exp(t) * S0 * (1 + 1e-12) + 1e-15
        assert ls <= S0 + 1e-12  # upper bound on the local sensitivity (Lemma 7)


def test_ss_median_noise_scale():
    from dpexp.families.slr.dp_median import ss_median, ss_params

    zs = np.sort(np.random.default_rng(0).normal(0.4, 0.1, 501))
    eps, k = 2.0, 3
    t, s = ss_params(eps, 3.0, 0.5)
    assert t == pytest.approx(eps / 8) and s == pytest.approx(eps * math.sqrt(3) / 4)  # Algorithm 5
    S = smooth_sensitivity(zs, k, t, -0.5, 1.5)
    draws = ss_median(zs, eps, k, -0.5, 1.5, np.random.default_rng(1), size=100_000)
    noise = (draws - zs[250]) / (S / s)
    # the standardised noise is Student's t(3): KS test, P(false failure) ≈ 1e-3
    assert stats.kstest(noise, stats.t(3).cdf).pvalue > 1e-3


def test_ss_median_empty_estimate_set_is_noisy_not_nan():
    """Regression for an audit finding: with every pair vertical the release was a deterministic NaN while the
    neighbour's was finite (infinite privacy loss). Now it is r_l plus t-noise scaled by the full span."""
    from dpexp.families.slr.dp_median import smooth_sensitivity, ss_median, ss_params

    rng = np.random.default_rng(0)
    draws = ss_median(np.array([]), 1.0, 1, -0.5, 1.5, rng, size=20_000)
    assert np.all(np.isfinite(draws))
    t, s = ss_params(1.0, 3.0, 0.5)
    assert smooth_sensitivity(np.array([]), 1, t, -0.5, 1.5) == pytest.approx(2.0)
    assert np.median(draws) == pytest.approx(-0.5, abs=0.1)
    # smoothness against a neighbour with one estimate: S(empty) <= e^t S(neighbour)
    assert 2.0 <= np.exp(t) * smooth_sensitivity(np.array([0.3]), 1, t, -0.5, 1.5) + 1e-12


def test_dp_ss_theil_sen_all_x_equal_releases_noisy_padding():
    """End to end: every pair vertical -> finite releases centred at r_l with Student-t scale (r_u - r_l)/s."""
    from dpexp.families.slr.algorithms.dp_theil_sen import DPSSTheilSen
    from dpexp.families.slr.dp_median import ss_params
    from dpexp.types import Split

    n = 12
    x = np.full(n, 0.3)
    y = np.random.default_rng(0).random(n)
    sp = Split(x[:, None], y, np.zeros((0, 1)), np.zeros(0), np.array([[0.25], [0.75]]), np.full(2, np.nan), {})
    eps = 2.0
    out = DPSSTheilSen(k="all").run(sp, eps, 0.0, np.random.default_rng(1), trials=20_000)
    assert np.all(np.isfinite(out.predictions))
    _, s = ss_params(eps / 2, 3.0, 0.5)  # eps/2 per release point
    noise = (out.predictions[:, 0] + 0.5) / (2.0 / s)
    assert stats.kstest(noise, stats.t(3).cdf).pvalue > 1e-3


def test_theil_sen_ledger_records_eps_per_prediction():
    """Each prediction's median is recorded with the exponential mechanism's ε = 2·(ε_med/2)·k = ε/n_test (one
    changed datapoint changes k estimates) or the Student-t map at ε/n_test; the run totals ε, all pairs or k
    matchings, vectorised or per trial (dp_ss_theil_sen with matchings records trial by trial)."""
    from dpexp.families.slr.algorithms.dp_theil_sen import DPExpTheilSen, DPSSTheilSen, DPWideTheilSen
    from dpexp.privacy.ledger import as_ledger
    from dpexp.types import Split

    rng = np.random.default_rng(0)
    x, y = rng.random(15), rng.random(15)
    split = Split(x[:, None], y, np.empty((0, 1)), np.empty(0), np.array([[0.25], [0.75]]), np.full(2, np.nan), {})
    for cls in (DPExpTheilSen, DPWideTheilSen, DPSSTheilSen):
        for k in ("all", 3):
            ledger = as_ledger(np.random.default_rng(1))
            out = cls(k=k).run(split, 1.2, 0.0, ledger, trials=4)
            assert (out.guarantee.kind, out.guarantee.epsilon) == ("pure", pytest.approx(1.2)), (cls.name, k)
            per_trial = cls is DPSSTheilSen and k == 3
            assert {s.trial is not None for s in ledger.spends} == {per_trial}
            eps = [s.epsilon for s in ledger.spends if s.trial in (None, 0)]
            assert eps == pytest.approx([0.6, 0.6]), (cls.name, k, eps)
