"""Contract, noise-scale and failure-handling tests of the simple-LR algorithms (Alabi et al. 2020)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpexp.errors import UserError
from dpexp.families.slr.algorithms import dp_theil_sen
from dpexp.families.slr.algorithms.dp_gd import DPGDApprox, DPGDPure, DPGDzCDP, approx_eps_of_rho, rho_for_approx
from dpexp.families.slr.algorithms.noisy_stats import NoisyIntercept, NoisyStats
from dpexp.families.slr.algorithms.oi_mos import OIMaxObservedSensitivity, scaled_local_sensitivity
from dpexp.families.slr.matchings import all_pair_estimates, n_rounds, pair_estimates, round_robin, sample_matchings
from dpexp.privacy.accounting import approx_dp_to_zcdp
from dpexp.privacy.ledger import as_ledger
from dpexp.privacy.noise import SeededNoise
from dpexp.registry import get
from dpexp.types import Split

SLR = ["ols", "theil_sen", "theil_sen_kmatch", "noisy_stats", "noisy_intercept", "dp_exp_theil_sen",
       "dp_wide_theil_sen", "dp_ss_theil_sen", "dpgd_pure", "dpgd_approx", "dpgd_zcdp", "oi_mos"]
VARIANTS = [(n, {}) for n in SLR] + [(n, {"k": k}) for n in ("dp_exp_theil_sen", "dp_wide_theil_sen",
                                                             "dp_ss_theil_sen", "theil_sen_kmatch")
                                     for k in (1, 10)]


def make_split(n: int = 40, seed: int = 0, x=None, y=None, meta=None) -> Split:
    r = np.random.default_rng(seed)
    if x is None:
        x = np.clip(r.normal(0.5, 0.15, n), 0, 1)
        y = np.clip(0.5 * x + 0.2 + r.normal(0, 0.05, n), 0, 1)
    return Split(np.asarray(x, float)[:, None], np.asarray(y, float), np.zeros((0, 1)), np.zeros(0),
                 np.array([[0.25], [0.75]]), np.full(2, np.nan), meta or {})


class OnesRNG(SeededNoise):
    """Stand-in noise source whose Laplace/normal draws are loc + scale (standard draws all ones): exposes the scale
    a mechanism draws with."""

    def __init__(self) -> None:
        super().__init__(np.random.default_rng(0))

    def laplace(self, loc=0.0, scale=1.0, size=None):
        return np.full(size, loc + scale, dtype=float)

    def normal(self, loc=0.0, scale=1.0, size=None):
        return np.full(size, loc + scale, dtype=float)


@pytest.mark.parametrize("name,kw", VARIANTS)
def test_contract_shape_determinism_no_global_rng(name, kw):
    split = make_split()
    algo = get("algorithm", name)(**kw)
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    o1 = algo.run(split, 2.0, 0.0, np.random.default_rng(7), trials=6)
    after = np.random.get_state()[1]
    assert np.array_equal(before, after), "global numpy RNG was used"
    o2 = get("algorithm", name)(**kw).run(split, 2.0, 0.0, np.random.default_rng(7), trials=6)
    assert o1.predictions.shape == (6, 2)
    assert np.array_equal(o1.predictions, o2.predictions, equal_nan=True)
    fin = np.isfinite(o1.predictions)
    if name == "noisy_stats":  # may fail (whole NaN rows), never a partial row
        assert np.array_equal(fin[:, 0], fin[:, 1])
    else:
        assert fin.all()
    if algo.private and name != "noisy_intercept":
        o3 = get("algorithm", name)(**kw).run(split, 2.0, 0.0, np.random.default_rng(8), trials=6)
        assert not np.array_equal(o1.predictions, o3.predictions)


def test_flags():
    assert get("algorithm", "oi_mos").formally_dp is False
    assert "NOT formally DP" in get("algorithm", "oi_mos").description
    for n in ("ols", "theil_sen", "theil_sen_kmatch"):
        assert get("algorithm", n).private is False
    for n in SLR[3:11]:
        assert get("algorithm", n).neighbouring == "replace-one"


def test_references_match_closed_forms():
    split = make_split(n=30, seed=3)
    x, y = split.X_private[:, 0], split.y_private
    a, b = np.polyfit(x, y, 1)
    p = get("algorithm", "ols")().run(split, 1.0, 0.0, np.random.default_rng(0)).predictions[0]
    np.testing.assert_allclose(p, [a * 0.25 + b, a * 0.75 + b], rtol=1e-10)
    i, j = np.triu_indices(30, 1)
    s = (y[j] - y[i]) / (x[j] - x[i])
    z = s * (0.25 - (x[i] + x[j]) / 2) + (y[i] + y[j]) / 2
    ts = get("algorithm", "theil_sen")().run(split, 1.0, 0.0, np.random.default_rng(0)).predictions[0]
    assert ts[0] == pytest.approx(np.median(z), abs=1e-12)


def test_round_robin_is_a_decomposition():
    for n in (2, 5, 6, 9, 10):
        a, b = round_robin(n)
        assert a.shape[0] == n_rounds(n)
        edges = {tuple(sorted(e)) for e in zip(a.ravel().tolist(), b.ravel().tolist())}
        assert len(edges) == a.size == n * (n - 1) // 2  # every edge exactly once
        for r in range(a.shape[0]):  # each round is a matching
            v = np.concatenate([a[r], b[r]])
            assert len(set(v.tolist())) == v.size


def test_sample_matchings_k_lipschitz_and_no_repeated_edges():
    rng = np.random.default_rng(0)
    n, k = 11, 4
    a, b = sample_matchings(n, k, rng, trials=5)
    for t in range(5):
        counts = np.bincount(np.concatenate([a[t], b[t]]), minlength=n)
        assert counts.max() <= k
        edges = {tuple(sorted(e)) for e in zip(a[t].tolist(), b[t].tolist())}
        assert len(edges) == a.shape[1]


def test_all_pair_estimates_drops_vertical_pairs():
    x = np.array([0.1, 0.1, 0.5, 0.9])
    y = np.array([0.2, 0.4, 0.5, 0.1])
    z = all_pair_estimates(x, y, 0.25)
    assert z.size == 5
    i, j = np.array([0, 0, 0, 1, 1, 2]), np.array([1, 2, 3, 2, 3, 3])
    zz = pair_estimates(x, y, i, j, 0.25)
    np.testing.assert_allclose(np.sort(z), np.sort(zz[np.isfinite(zz)]))


# ----------------------------------------------------------------------------------------------------- NoisyStats

def test_noisy_stats_draws_the_stated_scales():
    split = make_split(n=25, seed=4)
    x, y = split.X_private[:, 0], split.y_private
    n, eps = x.size, 0.7
    pred = NoisyStats().run(split, eps, 0.0, OnesRNG(), trials=3).predictions
    d = 1 - 1 / n
    nvar = np.sum((x - x.mean()) ** 2)
    ncov = np.sum((x - x.mean()) * (y - y.mean()))
    alpha = (ncov + 3 * d / eps) / (nvar + 3 * d / eps)  # L1 = L2 = scale (standard draws = 1)
    beta = y.mean() - alpha * x.mean() + 3 * (1 + abs(alpha)) / (n * eps)
    np.testing.assert_allclose(pred, np.tile([alpha * 0.25 + beta, alpha * 0.75 + beta], (3, 1)), rtol=1e-12)


def test_noisy_intercept_scale():
    split = make_split(n=25, seed=4)
    pred = NoisyIntercept().run(split, 0.5, 0.0, OnesRNG(), trials=2).predictions
    np.testing.assert_allclose(pred, split.y_private.mean() + 1 / (0.5 * 25))


def test_noisy_stats_failures_are_nan_rows():
    # nvar(x) = 0: the noisy denominator is Lap(3Δ/ε) > 0 with probability 1/2 exactly
    split = make_split(x=np.full(20, 0.5), y=np.linspace(0, 1, 20))
    out = NoisyStats().run(split, 1.0, 0.0, np.random.default_rng(0), trials=4000)
    bad = np.isnan(out.predictions)
    assert np.array_equal(bad[:, 0], bad[:, 1])  # whole rows
    assert np.all(np.isfinite(out.predictions[~bad[:, 0]]))
    assert out.extras["noisy_stats_failures"] == bad[:, 0].sum()
    # Binomial(4000, 1/2): |rate - 1/2| > 0.04 has probability < 1e-6
    assert abs(bad[:, 0].mean() - 0.5) < 0.04
    # failure rate falls with epsilon on a dataset with small nvar
    r = np.random.default_rng(1)
    s2 = make_split(x=np.clip(0.5 + 0.02 * r.standard_normal(30), 0, 1), y=r.random(30))
    rates = [np.isnan(NoisyStats().run(s2, e, 0.0, np.random.default_rng(2), trials=4000).predictions[:, 0]).mean()
             for e in (0.1, 10.0, 1000.0)]
    assert rates[0] > rates[1] > rates[2]


def test_data_outside_unit_box_is_a_user_error():
    split = make_split(x=np.array([0.1, 1.5, 0.3]), y=np.array([0.1, 0.2, 0.3]))
    for name in ("noisy_stats", "dpgd_pure", "oi_mos", "noisy_intercept"):
        with pytest.raises(UserError, match=r"\[0, 1\]"):
            get("algorithm", name)().run(split, 1.0, 0.0, np.random.default_rng(0))
    with pytest.raises(UserError, match="epsilon"):
        get("algorithm", "dp_exp_theil_sen")().run(make_split(), -1.0, 0.0, np.random.default_rng(0))


def test_params_validation():
    with pytest.raises(Exception, match="r_l"):
        get("algorithm", "dp_exp_theil_sen")(r_l=1.0, r_u=0.0)
    with pytest.raises(Exception):
        get("algorithm", "dp_wide_theil_sen")(theta=-1)
    with pytest.raises(Exception):
        get("algorithm", "dp_ss_theil_sen")(beta=1.0)
    assert get("algorithm", "dp_ss_theil_sen")(k="all", d=3).params.k == "all"


# ------------------------------------------------------------------------------------------------- DP Theil–Sen

@pytest.mark.parametrize("k,n,expect_c", [("all", 10, 9), (3, 10, 3), (1, 9, 1), (20, 9, 8)])
def test_dp_theil_sen_budget_split(monkeypatch, k, n, expect_c):
    seen = []
    monkeypatch.setattr(dp_theil_sen, "exp_median", lambda z, eps, *a, **kw: seen.append(eps) or np.zeros(kw["size"]))
    monkeypatch.setattr(dp_theil_sen, "exp_median_rows", lambda Z, eps, *a, **kw: seen.append(eps) or np.zeros(len(Z)))
    get("algorithm", "dp_exp_theil_sen")(k=k).run(make_split(n=n), 2.0, 0.0, np.random.default_rng(0), trials=3)
    assert seen == pytest.approx([2.0 / 2 / expect_c] * 2)  # half per prediction, then / k
    seen_ss = []

    def fake_ss(zs, eps, kk, *a, **kw):
        seen_ss.append((eps, kk))
        return np.zeros(kw["size"])

    def fake_ss_rows(Z, eps, kk, *a, **kw):   # k matchings: one estimate set per trial
        seen_ss.append((eps, kk))
        return np.zeros(len(Z))

    monkeypatch.setattr(dp_theil_sen, "ss_median", fake_ss)
    monkeypatch.setattr(dp_theil_sen, "ss_median_rows", fake_ss_rows)
    get("algorithm", "dp_ss_theil_sen")(k=k).run(make_split(n=n), 2.0, 0.0, np.random.default_rng(0), trials=2)
    assert {e for e, _ in seen_ss} == {1.0} and {c for _, c in seen_ss} == {expect_c}


def test_dp_exp_theil_sen_concentrates_at_large_epsilon():
    split = make_split(n=60, seed=5)
    ts = get("algorithm", "theil_sen")().run(split, 1.0, 0.0, np.random.default_rng(0)).predictions[0]
    out = get("algorithm", "dp_exp_theil_sen")().run(split, 5000.0, 0.0, np.random.default_rng(1), trials=50)
    assert np.max(np.abs(out.predictions - ts)) < 0.02


# --------------------------------------------------------------------------------------------------------- DP-GD

def test_dpgd_noise_scales():
    rng = np.random.default_rng(0)
    eps, T, tau = 2.0, 80, 1.0
    m = 200_000  # relative sd of the sample sd: Laplace ~0.0025, Gaussian ~0.0016; tolerance 2% (>= 8 sd)
    lap = DPGDPure().noise_fn(eps, 0.0, as_ledger(rng))((m // 2, 2))
    assert np.std(lap) == pytest.approx(math.sqrt(2) * 4 * tau * T / eps, rel=0.02)
    g = DPGDzCDP().noise_fn(eps, 0.0, as_ledger(rng))((m // 2, 2))
    assert np.std(g) == pytest.approx(2 * tau / math.sqrt((eps ** 2 / 2) / T), rel=0.02)
    rho = rho_for_approx(eps, 2.0 ** -30)
    g = DPGDApprox().noise_fn(eps, 0.0, as_ledger(rng))((m // 2, 2))
    assert np.std(g) == pytest.approx(2 * tau / math.sqrt(rho / T), rel=0.02)


def test_dpgd_approx_conversion():
    for eps in (0.1, 1.0, 10.0):
        d = 2.0 ** -30
        rho = rho_for_approx(eps, d)
        assert approx_eps_of_rho(rho, d) <= eps * (1 + 1e-9)
        assert approx_eps_of_rho(rho * 1.001, d) > eps
        assert rho >= approx_dp_to_zcdp(eps, d) * (1 - 1e-9)  # at least as good as Prop. 1.3
    # what the runs spend, derived by the ledger from the T Gaussian steps
    split = make_split(n=20, seed=1)
    g = DPGDApprox().run(split, 1.0, 0.0, np.random.default_rng(0), trials=2).guarantee
    assert g.kind == "approx" and g.delta == 2.0 ** -30 and g.epsilon <= 1.0 * (1 + 1e-9)
    assert g.epsilon == pytest.approx(1.0, rel=1e-9) and g.rho == pytest.approx(rho_for_approx(1.0, 2.0 ** -30))
    assert DPGDApprox().run(split, 1.0, 1e-5, np.random.default_rng(0)).guarantee.delta == 1e-5
    g = DPGDzCDP().run(split, 2.0, 0.0, np.random.default_rng(0)).guarantee
    assert (g.kind, g.rho) == ("zcdp", pytest.approx(2.0))
    g = DPGDPure().run(split, 2.0, 0.0, np.random.default_rng(0)).guarantee
    assert (g.kind, g.epsilon) == ("pure", 2.0)   # 80 steps at ε/80, composed (tidied) to ε


def test_dpgd_converges_to_ols_without_noise():
    from dpexp.families.slr.algorithms.dp_gd import dp_gradient_descent

    split = make_split(n=80, seed=6)
    x, y = split.X_private[:, 0], split.y_private
    P = dp_gradient_descent(x, y, 400, 100.0, lambda s: np.zeros(s), (0.5, 0.5), trials=2)
    a, b = np.polyfit(x, y, 1)
    np.testing.assert_allclose(P[0], [a * 0.25 + b, a * 0.75 + b], atol=0.01)


# ------------------------------------------------------------------------------------------------------- OI MOS

def _brute_ls(x, y, x0):
    a, b = np.polyfit(x, y, 1)
    base = a * x0 + b
    worst = 0.0
    for gx in np.linspace(0, 1, 11):
        for gy in np.linspace(0, 1, 11):
            a2, b2 = np.polyfit(np.append(x, gx), np.append(y, gy), 1)
            worst = max(worst, abs(a2 * x0 + b2 - base))
    return worst


def test_oi_mos_sensitivity_and_noise_scale(monkeypatch):
    r = np.random.default_rng(9)
    tracts = [(r.random(n), r.random(n)) for n in (12, 20, 35)]
    xs = np.array([0.25, 0.75])
    sls = scaled_local_sensitivity(tracts, xs)
    for t, (x, y) in enumerate(tracts):
        for c, x0 in enumerate(xs):
            assert sls[t, c] == pytest.approx(x.size * _brute_ls(x, y, x0), rel=1e-8)
    x, y = tracts[1]
    from dpexp import cache

    cache.clear("slr.oi_mos")
    group = {"group_id": "IL", "group_data": tracts, "group_key": ("test_oi_mos", "IL")}   # as the dataset names it
    split = make_split(x=x, y=y, meta=dict(group))
    algo = OIMaxObservedSensitivity()
    out = algo.run(split, 16.0, 0.0, OnesRNG(), trials=2)
    a, b = np.polyfit(x, y, 1)
    mos = sls.max(axis=0)
    np.testing.assert_allclose(out.predictions[0], a * xs + b + mos / (x.size * 8.0), rtol=1e-8)
    assert out.extras["formally_dp"] == 0.0
    # the MOS is computed once per group (named by ``group_key``): a second cell of the same group reuses it; a
    # group without a name is computed for its cell
    from dpexp.families.slr.algorithms import oi_mos

    calls = []
    monkeypatch.setattr(oi_mos, "max_observed_sensitivity", lambda t, x: calls.append(1) or mos)
    other = make_split(x=tracts[2][0], y=tracts[2][1], meta=dict(group))
    algo.run(other, 16.0, 0.0, OnesRNG(), trials=1)
    assert calls == []
    unnamed = make_split(x=tracts[2][0], y=tracts[2][1], meta={"group_id": "IL", "group_data": tracts})
    algo.run(unnamed, 16.0, 0.0, OnesRNG(), trials=1)
    assert calls == [1]


@pytest.mark.parametrize("n", [2, 3, 4, 7, 10, 11, 64])
def test_round_edges_are_the_rounds_of_round_robin(n):
    """``round_edges`` builds only the sampled rounds, equal to those rows of the whole decomposition."""
    from dpexp.families.slr.matchings import n_rounds, round_edges, round_robin

    a, b = round_robin(n)
    rounds = np.random.default_rng(n).integers(0, n_rounds(n), size=(3, 2))
    ra, rb = round_edges(n, rounds)
    assert np.array_equal(ra, a[rounds]) and np.array_equal(rb, b[rounds])
    edges = {frozenset(e) for e in zip(a.ravel().tolist(), b.ravel().tolist())}
    assert len(edges) == n * (n - 1) // 2 and a.size == n * (n - 1) // 2      # every edge exactly once
