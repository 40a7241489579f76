"""The SLR algorithms as arrays (issue 31): ``run_many`` over a chunk's splits gives each split what it gives alone
(the same bits, the same guarantee), and the batched kernels against per-split reference forms (oracles here)."""

from __future__ import annotations

import numpy as np
import pytest

from dpexp.errors import UserError
from dpexp.families.slr.algorithms.dp_gd import GradientBatch, dp_gradient_descent
from dpexp.privacy.ledger import PrivacyLedger
from dpexp.registry import get
from dpexp.types import Split
from tests.slr.test_slr_algorithms import VARIANTS, make_split


def _splits():
    """Splits of different sizes (one with ties in x, one of two points) as a chunk holds them."""
    out = [make_split(n=n, seed=s) for n, s in ((40, 1), (7, 2), (123, 3), (2, 4))]
    x = np.repeat([0.2, 0.4, 0.6, 0.8], 5)
    out.append(make_split(x=x, y=np.clip(0.3 + 0.5 * x + 0.01 * np.arange(20) % 0.05, 0, 1)))
    return out


@pytest.mark.parametrize("name,params", VARIANTS, ids=[f"{n}-{p}" for n, p in VARIANTS])
def test_run_many_is_each_split_alone(name, params):
    alg = get("algorithm", name)(**params)
    splits = _splits()
    alone = [alg.run(s, 1.0, 1e-6, PrivacyLedger(np.random.default_rng(10 + i)), 6) for i, s in enumerate(splits)]
    many = alg.run_many(splits, 1.0, 1e-6, [PrivacyLedger(np.random.default_rng(10 + i)) for i in range(len(splits))],
                        6)
    for a, m in zip(alone, many):
        assert not isinstance(m, Exception), m
        assert a.predictions.tobytes() == m.predictions.tobytes()
        assert a.guarantee == m.guarantee


def _old_gradient_sum(p, x, y, tau):
    """The per-split form before the batch (reference): one (trials, n) pass, numpy's row sums."""
    a, b = 0.75 - x, x - 0.25
    r2 = 2.0 * (y[None, :] - 2.0 * (p[:, :1] * a[None, :] + p[:, 1:] * b[None, :]))
    return np.stack([np.clip(r2 * a, -tau, tau).sum(axis=1), np.clip(r2 * b, -tau, tau).sum(axis=1)], axis=1)


@pytest.mark.parametrize("n", [1, 5, 9, 130, 2000])
def test_gradient_batch_matches_reference(n):
    r = np.random.default_rng(n)
    x, y = r.random(n), r.random(n)
    P = r.uniform(-1, 2, (7, 2))
    got = GradientBatch([x], [y], 7).gradient_sums(P, 0.3)
    np.testing.assert_allclose(got, _old_gradient_sum(P, x, y, 0.3), rtol=1e-12, atol=1e-12 * n)


def test_gradient_batch_segments_do_not_mix():
    r = np.random.default_rng(0)
    xs = [r.random(n) for n in (3, 0, 50, 1)]
    ys = [r.random(n) for n in (3, 0, 50, 1)]
    P = r.uniform(-1, 2, (4 * 2, 2))
    many = GradientBatch(xs, ys, 2).gradient_sums(P, 0.5)
    for i, (x, y) in enumerate(zip(xs, ys)):
        alone = GradientBatch([x], [y], 2).gradient_sums(P[2 * i:2 * i + 2], 0.5)
        assert many[2 * i:2 * i + 2].tobytes() == alone.tobytes()
    assert np.all(many[2:4] == 0)   # the empty split: no rows, no gradient


def test_dp_gradient_descent_noise_free_converges_to_ols():
    split = make_split(n=80, seed=6)
    x, y = split.X_private[:, 0], split.y_private
    P = dp_gradient_descent(x, y, 400, 100.0, lambda s: np.zeros(s), (0.5, 0.5), trials=2)
    a, b = np.polyfit(x, y, 1)
    np.testing.assert_allclose(P[1], [a * 0.25 + b, a * 0.75 + b], atol=0.01)


def _old_smooth_sensitivity(zs, k, t, r_l, r_u):
    """The scalar search of Lemma 7 one l at a time (reference form)."""
    N = zs.size
    bp = np.concatenate([[r_l], np.clip(zs, r_l, r_u), [r_u]])
    at = lambda idx: bp[np.clip(idx, 0, N + 1)]   # noqa: E731
    m, span = (N + 1) // 2, r_u - r_l
    S = float(max(at(m + k) - at(m), at(m) - at(m - k)))
    for l in range(1, -(-(N + 1) // k) + 1):
        decay = np.exp(-l * t)
        if decay * span <= S:
            return S
        w = (l + 1) * k
        W = float(np.max(at(m + np.arange(w + 1)) - at(m - w + np.arange(w + 1))))
        S = max(S, decay * W)
        if W >= span:
            return S
    raise AssertionError("no exit")


def test_smooth_sensitivity_rows_match_the_scalar_search():
    from dpexp.families.slr.dp_median import smooth_sensitivity_rows

    r = np.random.default_rng(3)
    for k, t in ((1, 0.0), (3, 0.0625), (10, 0.0625), (7, 0.5), (2, 3.0)):
        Ns = r.integers(0, 150, size=12)
        Z = np.full((12, int(Ns.max())), np.nan)
        for i, n in enumerate(Ns):
            Z[i, :n] = np.sort(r.normal(0.4, r.choice([0.01, 0.5, 4.0]), n))
        got = smooth_sensitivity_rows(Z, Ns, k, t, -2, 2)   # integer range: computed in floats
        want = [_old_smooth_sensitivity(Z[i, :n], k, t, -2.0, 2.0) for i, n in enumerate(Ns)]
        np.testing.assert_allclose(got, want, rtol=1e-15, atol=0)


def _old_all_pairs(x, y, x0):
    """Every pair j < l by a double loop (reference form)."""
    out = [((y[l] - y[j]) / (x[l] - x[j])) * (x0 - 0.5 * (x[l] + x[j])) + 0.5 * (y[l] + y[j])
           for j in range(x.size) for l in range(j + 1, x.size) if x[l] != x[j]]
    return np.array(out)


@pytest.mark.parametrize("n,block", [(0, 4), (1, 4), (2, 1), (30, 1), (30, 7), (30, 1000), (90, 50)])
def test_all_pair_estimates_in_blocks(n, block):
    from dpexp.families.slr.matchings import all_pair_estimates

    r = np.random.default_rng(n)
    x, y = np.round(r.random(n), 1), r.random(n)   # rounding: vertical pairs, dropped
    got = all_pair_estimates(x, y, 0.25, block=block)
    np.testing.assert_allclose(got, _old_all_pairs(x, y, 0.25).reshape(-1), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("name", ["dpgd_pure", "dpgd_zcdp", "dpgd_approx"])
def test_step_noise_is_t_steps_drawn_and_recorded_one_by_one(name):
    alg = get("algorithm", name)(T=5)
    one, many = PrivacyLedger(np.random.default_rng(2)), PrivacyLedger(np.random.default_rng(2))
    draw = alg.noise_fn(0.8, 1e-6, one)
    steps = [draw((3, 2)) for _ in range(5)]
    got = alg.step_noise(0.8, 1e-6, many, 3)
    assert got.shape == (5, 3, 2) and np.stack(steps).tobytes() == got.tobytes()
    assert [s.to_dict() for s in one.spends] == [s.to_dict() for s in many.spends] and len(many.spends) == 5
    assert one.guarantee() == many.guarantee()


@pytest.mark.parametrize("n,k,trials,block", [(2, 1, 3, 1), (7, 3, 5, 4), (101, 10, 20, 300), (1000, 5, 7, 1)])
def test_matching_lines_in_trial_blocks_are_the_sampled_matchings(n, k, trials, block):
    from dpexp.families.slr.matchings import line_estimates, matching_lines, pair_estimates, sample_matchings

    r = np.random.default_rng(n)
    x, y = np.round(r.random(n), 2), r.random(n)
    a, b = sample_matchings(n, k, np.random.default_rng(1), trials)
    got = line_estimates(matching_lines(x, y, k, np.random.default_rng(1), trials, block=block), 0.25)
    assert got.tobytes() == pair_estimates(x, y, a, b, 0.25).tobytes()


def test_exp_median_rows_in_blocks_draw_as_one_array():
    from dpexp.families.slr.dp_median import exp_median_rows

    r = np.random.default_rng(0)
    Z = r.normal(0.5, 1.0, (9, 40))
    Z[r.random(Z.shape) < 0.1] = np.nan
    for theta in (0.0, 0.05):
        whole = exp_median_rows(Z, 0.7, -2, 2, np.random.default_rng(3), theta=theta, block=10 ** 6)
        rows = exp_median_rows(Z, 0.7, -2, 2, np.random.default_rng(3), theta=theta, block=1)
        assert whole.tobytes() == rows.tobytes()


# ------------------------------------------- NoisyStats, NoisyIntercept, OLS over the splits of a call (issue 31)
def _ref_noisy_stats(x, y, xs, eps, ledger, trials):
    """The per-split form of Algorithm 1 before the batch (reference): numpy's sums on the split alone, three
    ``laplace`` calls on its ledger."""
    from dpexp.privacy.mechanisms import laplace

    n = x.size
    d = 1.0 - 1.0 / n
    b = 3.0 * d / eps
    xm, ym = x.mean(), y.mean()
    nvar, ncov = float(np.sum((x - xm) ** 2)), float(np.sum((x - xm) * (y - ym)))
    ncov_t = laplace(ncov, d, eps / 3.0, ledger, size=trials, scale=b, label="ncov")
    den = laplace(nvar, d, eps / 3.0, ledger, size=trials, scale=b, label="nvar")
    ok = den > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = np.where(ok, ncov_t / np.where(ok, den, 1.0), np.nan)
    d3 = (1.0 + np.abs(alpha)) / n
    beta = (ym - alpha * xm) + laplace(0.0, d3, eps / 3.0, ledger, size=trials, scale=3.0 * d3 / eps,
                                       label="intercept")
    pred = alpha[:, None] * xs[None, :] + beta[:, None]
    pred[~ok] = np.nan
    return pred, ~ok


def _ref_noisy_intercept(y, xs, eps, ledger, trials):
    from dpexp.privacy.mechanisms import laplace

    n = y.size
    yt = laplace(y.mean(), 1.0 / n, eps, ledger, size=trials, scale=1.0 / (eps * n), label="mean y")
    return np.tile(yt[:, None], (1, xs.size))


def _ref_ols(x, y, xs):
    if x.size < 2:
        return np.full(xs.size, np.nan)
    xm, ym = x.mean(), y.mean()
    nvar = float(np.sum((x - xm) ** 2))
    if nvar <= 0:
        return np.full(xs.size, np.nan)
    a = float(np.sum((x - xm) * (y - ym))) / nvar
    return a * xs + float(ym - a * xm)


def _varied_splits():
    """Splits as a chunk of tracts holds them: different n (one of 2 points, one of 3000), ties, a constant x."""
    out = _splits() + [make_split(n=3000, seed=9), make_split(x=np.full(5, 0.3), y=np.linspace(0, 1, 5))]
    return out


@pytest.mark.parametrize("eps", [0.05, 1.0, 16.0])   # 0.05: most trials of the small splits fail (⊥)
def test_noisy_stats_batch_is_the_per_split_reference_to_the_bit(eps):
    splits = _varied_splits()
    alg = get("algorithm", "noisy_stats")()
    many = alg.run_many(splits, eps, 0.0, [PrivacyLedger(np.random.default_rng(i)) for i in range(len(splits))], 9)
    for i, (s, m) in enumerate(zip(splits, many)):
        L = PrivacyLedger(np.random.default_rng(i))
        x, y = s.X_private[:, 0], s.y_private
        pred, failed = _ref_noisy_stats(x, y, s.X_test[:, 0], eps, L, 9)
        assert m.predictions.tobytes() == pred.tobytes()
        assert m.extras["noisy_stats_failures"] == failed.sum()
        assert m.guarantee == L.guarantee()
        assert repr(m.guarantee) == repr(L.guarantee())


def test_noisy_intercept_and_ols_batches_are_the_per_split_references_to_the_bit():
    splits = _varied_splits()
    ni = get("algorithm", "noisy_intercept")()
    many = ni.run_many(splits, 0.7, 0.0, [PrivacyLedger(np.random.default_rng(i)) for i in range(len(splits))], 5)
    for i, (s, m) in enumerate(zip(splits, many)):
        L = PrivacyLedger(np.random.default_rng(i))
        assert m.predictions.tobytes() == _ref_noisy_intercept(s.y_private, s.X_test[:, 0], 0.7, L, 5).tobytes()
        assert m.guarantee == L.guarantee()
    ols = get("algorithm", "ols")().run_many(splits, 1.0, 0.0, [np.random.default_rng(0)] * len(splits), 3)
    for s, m in zip(splits, ols):
        ref = _ref_ols(s.X_private[:, 0], s.y_private, s.X_test[:, 0])
        assert m.predictions.tobytes() == np.tile(ref, (3, 1)).tobytes()


def test_split_moments_are_each_splits_own_sums():
    from dpexp.families.slr.moments import split_means, split_moments

    r = np.random.default_rng(3)
    lengths = (0, 1, 7, 128, 129, 1000, 4099)
    xs = [r.random(n) for n in lengths]
    ys = [r.random(n) for n in lengths]
    xs[2][:] = 0.5   # nvar = 0 (and ncov = ±0: the sign kept)
    n, xm, ym, nvar, ncov = split_moments(xs, ys)
    for i, (x, y) in enumerate(zip(xs, ys)):
        assert n[i] == x.size
        if not x.size:
            assert np.isnan(xm[i]) and np.isnan(ym[i])
            continue
        a, b = x.mean(), y.mean()
        for got, ref in ((xm[i], a), (ym[i], b), (nvar[i], np.sum((x - a) ** 2)), (ncov[i], np.sum((x - a) * (y - b)))):
            assert np.float64(got).tobytes() == np.float64(ref).tobytes()
    assert split_means(ys)[1][1:].tobytes() == np.array([y.mean() for y in ys[1:]]).tobytes()


def _uniform_split(seed: int, n: int = 10) -> Split:
    r = np.random.default_rng(seed)
    x, y = r.uniform(size=n), r.uniform(size=n)
    return Split(x[:, None], y, np.zeros((0, 1)), np.zeros(0), np.array([[0.5]]), np.array([0.5]), {})


def test_noisy_stats_split_whose_intercept_scale_overflows_fails_alone():
    """At ε = 1e-306 split 1's intercept scale 3Δ3/ε overflows in some trial (its ``laplace`` alone refuses it):
    in a call with split 0, only split 1 fails, and split 0's output and spends are those of its call alone."""
    alg = get("algorithm", "noisy_stats")()

    def call(seeds):
        ledgers = [PrivacyLedger(np.random.default_rng(100 + s)) for s in seeds]
        return alg.run_many([_uniform_split(s) for s in seeds], 1e-306, 0.0, ledgers, 200), ledgers

    (alone0,), (l0,) = call([0])
    (alone1,), _ = call([1])
    assert isinstance(alone1, UserError) and not isinstance(alone0, Exception)
    (both0, both1), (m0, _) = call([0, 1])
    assert isinstance(both1, UserError) and str(both1) == str(alone1)
    np.testing.assert_array_equal(both0.predictions, alone0.predictions)
    assert m0.spends == l0.spends


def test_noisy_stats_intercept_is_released_by_the_mechanism_with_its_value(monkeypatch):
    """The intercept ȳ − α̃x̄ goes into ``laplace_rows`` as its value (secure mode adds OpenDP's noise to the data
    value itself, floating-point safe), not as noise drawn around 0 and added afterwards."""
    from dpexp.families.slr.algorithms import noisy_stats as ns

    seen = {}
    real = ns.laplace_rows

    def spy(value, standard, sensitivity, epsilon, sources, label="", **kw):
        seen[label] = np.array(value)
        return real(value, standard, sensitivity, epsilon, sources, label, **kw)

    monkeypatch.setattr(ns, "laplace_rows", spy)
    sp = _uniform_split(3, n=50)
    out = get("algorithm", "noisy_stats")().run_many([sp], 1.0, 0.0, [PrivacyLedger(np.random.default_rng(0))], 5)[0]
    assert np.isfinite(out.predictions).any() and np.all(seen["intercept"] != 0.0)
