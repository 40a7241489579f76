"""narplr (noise-aware robust private LR): the same release as rplr, intervals, batching, the design priors, the
analytic split, and a statistical check of its calibration."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from dpexp.families.gdsc import analytic
from dpexp.families.gdsc.algorithms.narplr import NoiseAwareRPLR
from dpexp.families.gdsc.algorithms.rplr import RobustPrivateLR
from dpexp.families.gdsc.datasets.synthetic import HonkelaSynthetic
from dpexp.metrics.calibration import coverage
from dpexp.models.gram_prior import clipped_gaussian_gram_prior, clipping_scaled_prior, empirical_gram_prior
from dpexp.models.row_streams import RowStreams
from dpexp.privacy.ledger import PrivacyLedger
from dpexp.types import Sizes, Split

pytestmark = pytest.mark.usefixtures("isolated_cache")

EXPLICIT = dict(p1=0.35, p2=0.6, p3=0.05, omega_x=1.0, omega_y=1.0)


def _split(seed, n=80, d=3, n_pub=10):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n + n_pub + 20, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = X @ rng.normal(size=d) + 0.3 * rng.normal(size=len(X))
    meta = {"sigma_x": float(X.std()), "sigma_y": float(y.std())}
    return Split(X[:n], y[:n], X[n:n + n_pub], y[n:n + n_pub], X[n + n_pub:], y[n + n_pub:], meta)


@pytest.mark.parametrize("sigma", ["dp", "data"])
def test_releases_exactly_rplrs_statistics_and_guarantee(sigma):
    """Same noise stream → identical released statistics, identical ledger spends and guarantee (the inference is
    post-processing of rplr's release), for the tuned default split and thresholds too."""
    s = _split(1)
    small = dict(tune_reps=(1, 1), split_reps=(1, 1), sigma=sigma)
    la, lb = PrivacyLedger(np.random.default_rng(5)), PrivacyLedger(np.random.default_rng(5))
    ra = RobustPrivateLR(**small).release(s, 1.5, la, 4)
    rb = NoiseAwareRPLR(**small).release(s, 1.5, lb, 4)
    for a, b in [(ra.XX, rb.XX), (ra.Xy, rb.Xy), (ra.yy, rb.yy), (ra.B_x, rb.B_x), (ra.B_y, rb.B_y)]:
        np.testing.assert_array_equal(a, b)
    assert ra.split == rb.split and ra.extras == rb.extras
    assert la.summary() == lb.summary()
    ga = RobustPrivateLR(**small).run(s, 1.5, 0.0, np.random.default_rng(9), 2).guarantee
    gb = NoiseAwareRPLR(**small).run(s, 1.5, 0.0, np.random.default_rng(9), 2).guarantee
    assert ga == gb and ga.kind == ("pure" if sigma == "dp" else "none")


def test_outputs_posterior_means_and_nested_intervals():
    s = _split(2)
    out = NoiseAwareRPLR(sigma="data", **EXPLICIT).run(s, 2.0, 0.0, np.random.default_rng(0), 3)
    assert out.coef.shape == (3, 3) and out.predictions.shape == (3, len(s.y_test))
    np.testing.assert_allclose(out.predictions, out.coef @ s.X_test.T)
    lo50, hi50 = out.coef_interval[0.5]
    lo90, hi90 = out.coef_interval[0.9]
    assert np.all(lo90 < lo50) and np.all(lo50 < out.coef) and np.all(out.coef < hi50) and np.all(hi50 < hi90)
    plo, phi = out.pred_interval[0.9]
    assert np.all(plo < out.predictions) and np.all(out.predictions < phi)
    assert out.clip_bounds.shape == (3, 2) and np.allclose(out.clip_bounds, [out.extras["B_x"], out.extras["B_y"]])


def test_rplr_reports_its_naive_intervals():
    """rplr's intervals are those of its VB posterior: centred on its coefficients."""
    s = _split(3)
    out = RobustPrivateLR(sigma="data", **EXPLICIT).run(s, 2.0, 0.0, np.random.default_rng(0), 2)
    lo, hi = out.coef_interval[0.9]
    np.testing.assert_allclose(0.5 * (lo + hi), out.coef, atol=1e-12)
    assert np.all(hi > lo)


def test_run_many_equals_run_and_gibbs_draws_do_not_depend_on_the_batch():
    """Gaussian inference: batched = one at a time.  Gibbs: a split's draws come from its own ledger's generator
    (RowStreams), so running it alone or with another split gives the same posterior."""
    splits = [_split(s) for s in range(3)]
    alg = NoiseAwareRPLR(sigma="data", **EXPLICIT)
    many = alg.run_many(splits, 2.0, 0.0, [np.random.default_rng(20 + k) for k in range(3)], trials=2)
    for k, s in enumerate(splits):
        one = alg.run(s, 2.0, 0.0, np.random.default_rng(20 + k), trials=2)
        np.testing.assert_allclose(many[k].coef, one.coef, rtol=1e-9)
    gibbs = NoiseAwareRPLR(sigma="data", inference="gibbs", gibbs=(20, 20, 1), **EXPLICIT)
    both = gibbs.run_many(splits[:2], 2.0, 0.0, [np.random.default_rng(7), np.random.default_rng(8)], trials=2)
    alone = gibbs.run_many(splits[1:2], 2.0, 0.0, [np.random.default_rng(8)], trials=2)
    np.testing.assert_array_equal(both[1].coef, alone[0].coef)
    assert not np.array_equal(both[0].coef, both[1].coef)
    assert 0 < both[1].extras["accept_ct"] <= 1


def test_row_streams_serve_each_block_from_its_generator():
    gens = [np.random.default_rng(1), np.random.default_rng(2)]
    rs = RowStreams(gens, [2, 3])
    z = rs.standard_normal((5, 4))
    np.testing.assert_array_equal(z[:2], np.random.default_rng(1).standard_normal((2, 4)))
    np.testing.assert_array_equal(z[2:], np.random.default_rng(2).standard_normal((3, 4)))
    g = rs.gamma(np.arange(1.0, 6.0), 2.0)
    ref = np.random.default_rng(2)
    ref.standard_normal((3, 4))
    np.testing.assert_array_equal(g[2:], ref.gamma(np.arange(3.0, 6.0), 2.0, (3,)))
    with pytest.raises(ValueError, match="leading axis"):
        rs.uniform(size=4)


def test_rejects_rplr_inference_parameters_and_bad_settings():
    with pytest.raises(ValidationError, match="do not apply to narplr"):
        NoiseAwareRPLR(prior="fixed")
    with pytest.raises(ValidationError):
        NoiseAwareRPLR(gibbs=(0, 10, 1))
    s = _split(4, n_pub=1)
    with pytest.raises(Exception, match="at least 2 public rows"):
        NoiseAwareRPLR(sigma="data", design="public", **EXPLICIT).run(s, 2.0, 0.0, np.random.default_rng(0))
    tiny = _split(5, n=4)
    with pytest.raises(Exception, match="gibbs needs n_private >= d \\+ 2"):
        NoiseAwareRPLR(sigma="data", inference="gibbs", **EXPLICIT).run(tiny, 2.0, 0.0, np.random.default_rng(0))


def test_no_private_rows_gives_the_public_posterior():
    s = _split(6, n=0)
    out = NoiseAwareRPLR(sigma="data", **EXPLICIT).run(s, 2.0, 0.0, np.random.default_rng(0), 2)
    assert out.guarantee.kind == "pure" and out.guarantee.epsilon == 0.0
    assert np.all(np.isfinite(out.predictions)) and out.coef_interval is not None


def test_empirical_gram_prior_known_values():
    """Two public rows: mean n·Ŝ, variance n v + n² v / m with v the sample variance of x_j x_k (ddof 1)."""
    X = np.array([[1.0, 2.0], [3.0, -1.0]])
    g = empirical_gram_prior(X, 10.0)
    P = np.stack([np.outer(x, x) for x in X])
    v = P.var(axis=0, ddof=1)
    np.testing.assert_allclose(g.mean, 10.0 * P.mean(axis=0))
    np.testing.assert_allclose(g.var, 10 * v + 100 * v / 2)
    floored = empirical_gram_prior(X, 10.0, floor_var=np.full((2, 2), 100.0))
    np.testing.assert_allclose(floored.var, 10 * np.maximum(v, 100) + 100 * np.maximum(v, 100) / 2)
    with pytest.raises(ValueError, match="at least 2"):
        empirical_gram_prior(X[:1], 10.0)


def test_scaled_precision_prior_in_eq10_units_is_the_clipping_prior():
    """σ_x = 1 and σ_y² = d + 1 are Eq. 10's own units: no further rescaling; unit-norm rows (σ_x² = 1/d) make the
    λ0 rate d times larger (coefficients √d times larger)."""
    d = 10
    base = clipping_scaled_prior(0.3, 0.5)
    same = clipping_scaled_prior(0.3, 0.5, units=(1.0, np.sqrt(d + 1.0), d))
    np.testing.assert_allclose(np.array(same, dtype=float), np.array(base, dtype=float))
    unit = clipping_scaled_prior(0.3, 0.5, units=(1 / np.sqrt(d), np.sqrt(d + 1.0), d))
    np.testing.assert_allclose(unit[3], d * base[3])
    np.testing.assert_allclose(unit[1], base[1])


def test_split_analytic_uses_the_closed_form_choice(monkeypatch):
    calls = []

    def fake(n, d, eps, rel_sd, corr_sd, sensitivity):
        calls.append((n, d, eps, rel_sd, corr_sd, sensitivity))
        return {"p1": 0.55, "p2": 0.4, "p3": 0.05, "omega_x": 0.2, "omega_y": 0.3, "score": 0.8}

    monkeypatch.setattr(analytic, "analytic_split", fake)
    s = _split(7)
    alg = RobustPrivateLR(split="analytic", analytic_sd=0.3, sigma="data")
    out = alg.run(s, 2.0, 0.0, np.random.default_rng(0))
    assert (out.extras["p1"], out.extras["p2"], out.extras["omega_x"], out.extras["omega_y"]) == (0.55, 0.4, 0.2, 0.3)
    assert calls == [(80, 3, 2.0, 0.3, 0.3, "tight")]       # computed once (cached), at the case's n, d, ε
    fixed = RobustPrivateLR(split="analytic", omega_x=1.0, omega_y=2.0, sigma="data")
    assert fixed.omegas(80, 3, 2.0, fixed.budget_split(80, 3, 2.0)) == (1.0, 2.0)
    with pytest.raises(ValidationError, match="not both"):
        RobustPrivateLR(split="analytic", p1=0.5)
    na = NoiseAwareRPLR(split="analytic", analytic_sd=0.3, sigma="data").run(s, 2.0, 0.0, np.random.default_rng(0))
    assert na.extras["p1"] == 0.55


def test_noise_aware_intervals_cover_the_clipped_regression():
    """Statistical check (fixed seeds): on 40 raw Eq. 10 data sets (x ~ N(0, I), closed-form truth), n = 300,
    ε = 2, the noise-aware 90 % intervals cover the clipped-data coefficients 80–97 % of the time (400 intervals:
    s.e. ≈ 1.5 points if independent, more since a data set's coefficients err together), rplr's naive ones
    < 50 %."""
    ds = HonkelaSynthetic(d=10, preprocess=False)
    sizes = Sizes(300, 10, 50, 300, 10, 50)
    na = NoiseAwareRPLR(sigma="data", tune_reps=(2, 2), split_reps=(1, 1))
    rp = RobustPrivateLR(sigma="data", tune_reps=(2, 2), split_reps=(1, 1))
    cov_na, cov_rp = [], []
    for rep in range(40):
        s = ds.split("all", sizes, np.random.default_rng(100 + rep))
        cov_na.append(coverage(na.run(s, 2.0, 0.0, np.random.default_rng(rep)), s, "coef", 0.9))
        cov_rp.append(coverage(rp.run(s, 2.0, 0.0, np.random.default_rng(rep)), s, "coef", 0.9))
    assert 0.80 <= np.mean(cov_na) <= 0.97, np.mean(cov_na)
    assert np.mean(cov_rp) < 0.5, np.mean(cov_rp)


def test_clipped_public_stats_of_any_memory_order_equal_the_c_ordered_ones():
    """The public rows' clipped statistics take the same BLAS calls whatever the rows' memory order: Fortran-ordered
    or strided sets give the bits of their C-ordered copies (sets alone in their shape group included)."""
    from dpexp.families.gdsc.algorithms.narplr import _clipped_public_stats

    rng = np.random.default_rng(5)
    ms, d, T = [1, 4, 5, 5, 10, 0], 3, 2
    base = [rng.normal(size=(m, 2 * d)) * 3 for m in ms]
    ys = [rng.normal(size=m) * 3 for m in ms]
    Bx, By = rng.uniform(0.1, 3, size=(len(ms), T)), rng.uniform(0.1, 3, size=(len(ms), T))
    want = _clipped_public_stats([np.ascontiguousarray(b[:, :d]) for b in base], ys, Bx, By)
    for Xs in ([np.asfortranarray(b[:, :d]) for b in base], [b[:, ::2] for b in base]):
        want_k = _clipped_public_stats([np.ascontiguousarray(X) for X in Xs], ys, Bx, By)
        got = _clipped_public_stats(Xs, ys, Bx, By)
        assert all(a.shape == b.shape and a.tobytes() == b.tobytes() for a, b in zip(got, want_k))
    assert all(a.shape == b.shape for a, b in zip(want, got))
