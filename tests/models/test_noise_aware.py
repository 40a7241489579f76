"""Tests of the noise-aware Gibbs sampler (dpexp.models.noise_aware): helpers against explicit matrices, the
noise-free limit against the closed-form posterior, the public-only limit, simulation-based calibration (with a
negative control that must fail), reproducibility, shapes and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from dpexp.models.gram_prior import GramPrior, clipped_gaussian_gram_prior, flat_gram_prior
from dpexp.models.noise_aware import (ExactStats, NoisyStats, _mixing_variance, _w_op_adjoint, _w_op_cov,
                                      plugin_gram, sample_posterior)
from dpexp.models.noise_aware_sbc import chi2_uniform, ranks, simulate
from dpexp.models.vb import fit_vb

#: Gamma priors so concentrated that λ = 2, λ0 = 0.5 are effectively fixed (closed-form posterior of w).
FIXED = (2e6, 1e6, 0.5e6, 1e6)


def _vech_operator(w: np.ndarray) -> np.ndarray:
    """Explicit d × d(d+1)/2 matrix of vech(A) ↦ A w (upper-triangle order)."""
    d = w.size
    iu = np.triu_indices(d)
    W = np.zeros((d, iu[0].size))
    for p, (j, k) in enumerate(zip(*iu)):
        W[j, p] += w[k]
        if j != k:
            W[k, p] += w[j]
    return W


def test_linear_map_helpers_match_explicit_operator():
    rng = np.random.default_rng(0)
    d = 4
    iu = np.triu_indices(d)
    w = rng.normal(size=d)
    T = rng.uniform(0.5, 2.0, size=(d, d))
    T = np.triu(T) + np.triu(T, 1).T
    alpha = rng.normal(size=d)
    W = _vech_operator(w)
    np.testing.assert_allclose(_w_op_cov(T, w), W @ np.diag(T[iu]) @ W.T, rtol=1e-12)
    np.testing.assert_allclose(_w_op_adjoint(alpha, w)[iu], W.T @ alpha, rtol=1e-12)
    A = rng.normal(size=(d, d))
    A = np.triu(A) + np.triu(A, 1).T
    np.testing.assert_allclose(A @ w, W @ A[iu], rtol=1e-12)


def test_plugin_gram_is_the_release_without_noise_and_positive_definite_with_it():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 3))
    Z = X.T @ X
    np.testing.assert_allclose(plugin_gram(Z, flat_gram_prior(3), 0.0), Z, rtol=1e-10)
    noisy = Z + np.diag([-200.0, 0.0, 0.0])           # an indefinite release
    K = plugin_gram(noisy, flat_gram_prior(3), 30.0)
    assert np.all(np.linalg.eigvalsh(K) > 0)
    # a tight prior wins over a very noisy release: K is close to the prior mean
    prior = GramPrior(50 * np.eye(3), np.full((3, 3), 1e-4))
    np.testing.assert_allclose(plugin_gram(noisy, prior, 1e6), 50 * np.eye(3), atol=1e-3)


def test_mixing_variance_draws_have_the_inverse_gaussian_moments():
    """1/v | L ~ InverseGaussian(mean 1/(b|L|), shape 1/b²): known mean and variance mean³/shape."""
    rng = np.random.default_rng(2)
    b, L = 1.5, 0.7
    inv = 1.0 / _mixing_variance(np.full(400_000, L), np.full(400_000, b), rng)
    mean, var = 1 / (b * L), (1 / (b * L)) ** 3 * b * b
    assert abs(inv.mean() - mean) < 4 * np.sqrt(var / inv.size)
    assert abs(inv.var() / var - 1) < 0.05


def test_laplace_scale_mixture_marginal():
    """v ~ Exp(rate 1/(2b²)), L | v ~ N(0, v) is Laplace(b): E|L| = b, Var L = 2b² (the model's noise)."""
    rng = np.random.default_rng(3)
    b = 2.0
    v = rng.exponential(2 * b * b, 400_000)
    L = rng.normal(size=v.size) * np.sqrt(v)
    assert abs(np.abs(L).mean() / b - 1) < 0.01
    assert abs(L.var() / (2 * b * b) - 1) < 0.02


def _data(n=150, d=3, seed=4, n_pub=6):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    beta = rng.normal(size=d)
    y = X @ beta + rng.normal(size=n)
    Xp = rng.normal(size=(n_pub, d))
    yp = Xp @ beta + rng.normal(size=n_pub)
    return X, y, Xp, yp


def _closed_form(S, r, lam=2.0, lam0=0.5):
    P = lam0 * np.eye(S.shape[0]) + lam * S
    cov = np.linalg.inv(P)
    return cov @ (lam * r), cov


CHAINS = 16  # independent chains of one problem: the batch axis replicates it (cheaper than one long chain)


def _pooled(dr):
    return dr.w.reshape(-1, dr.w.shape[-1])


@pytest.mark.parametrize("b", [0.0, 1e-7])
def test_noise_free_limit_is_the_exact_posterior(b):
    """b = 0 (exact release) and b → 0: with λ, λ0 effectively fixed the posterior of w is
    N((λ0 I + λ S)⁻¹ λ r, (λ0 I + λ S)⁻¹) on the summed private + public statistics.  Tolerance: 5 Monte Carlo
    standard errors of the mean (16 chains × 150 draws, thin 2; ESS ≥ 1000 here) and 8 % on the standard
    deviations."""
    X, y, Xp, yp = _data()
    stats = NoisyStats(np.broadcast_to(X.T @ X, (CHAINS, 3, 3)), X.T @ y, y @ y, len(y), b, b, b)
    dr = sample_posterior(stats, np.random.default_rng(5), public=ExactStats.of(Xp, yp), prior=FIXED,
                          n_draws=150, burn_in=150, thin=2)
    mean, cov = _closed_form(X.T @ X + Xp.T @ Xp, X.T @ y + Xp.T @ yp)
    sd = np.sqrt(np.diag(cov))
    w = _pooled(dr)
    assert np.all(np.abs(w.mean(0) - mean) < 5 * sd / np.sqrt(1000))
    np.testing.assert_allclose(w.std(0), sd, rtol=0.08)


def test_noise_free_limit_with_gamma_priors_matches_vb():
    """Gamma(2, 2) priors, exact statistics: the sampler's mean agrees with mean-field VB (accurate to O(1/n)
    here, see tests/test_bayes_vb.py) within 3 % of ‖mean‖ and the sds within 10 %."""
    X, y, _, _ = _data(n=300, d=4, seed=6)
    stats = NoisyStats(np.broadcast_to(X.T @ X, (CHAINS, 4, 4)), X.T @ y, y @ y, len(y), 0.0, 0.0, 0.0)
    dr = sample_posterior(stats, np.random.default_rng(7), n_draws=150, burn_in=100, thin=1)
    vb = fit_vb(X.T @ X, X.T @ y, y @ y, len(y), return_cov=True)
    w = _pooled(dr)
    assert np.abs(w.mean(0) - vb.mean).max() < 0.03 * np.linalg.norm(vb.mean)
    np.testing.assert_allclose(w.std(0), np.sqrt(np.diag(vb.cov)), rtol=0.10)


def test_overwhelming_noise_leaves_the_public_posterior():
    """With Laplace scales 1e6 × the statistics' size the private release carries no information about w: the
    posterior is the exact public-only posterior (fixed precisions).  Same tolerances as the noise-free test."""
    X, y, Xp, yp = _data(n=100, d=2, seed=8, n_pub=20)
    stats = NoisyStats(np.broadcast_to(X.T @ X, (CHAINS, 2, 2)), X.T @ y, y @ y, len(y), 1e8, 1e8, 1e8)
    prior = clipped_gaussian_gram_prior(100, 2, 1e9, 1.0, 0.1, 0.1)
    dr = sample_posterior(stats, np.random.default_rng(9), public=ExactStats.of(Xp, yp), gram_prior=prior,
                          prior=FIXED, n_draws=150, burn_in=200, thin=2)
    mean, cov = _closed_form(Xp.T @ Xp, Xp.T @ yp)
    sd = np.sqrt(np.diag(cov))
    w = _pooled(dr)
    assert np.all(np.abs(w.mean(0) - mean) < 5 * sd / np.sqrt(500))
    np.testing.assert_allclose(w.std(0), sd, rtol=0.1)


# ----------------------------------------------------------------------------------- simulation-based calibration
SBC_N, SBC_L = 400, 99
#: (b_xx, b_xy, b_yy, prior relative sd, public rows): noise comparable to the statistics' sampling spread, and a
#: "ridge" case where A is barely known but c is precise (the regime of rplr's tuned split; the ridge moves and
#: their |det A|⁻¹ Jacobian matter there: dropping the Jacobian gives p ≈ 3e-8 for ‖w‖).
SBC_CASES = {"balanced": (5.0, 3.0, 10.0, 0.3, 4), "ridge": (200.0, 0.5, 10.0, 1.0, 2)}


def _sbc(case):
    n, d = 30, 2
    bxx, bxy, byy, rel, n_pub = SBC_CASES[case]
    prior = clipped_gaussian_gram_prior(n, d, 1e9, 1.0, rel, rel)
    sim = simulate(SBC_N, n, d, bxx, bxy, byy, prior, n_pub, np.random.default_rng(11))
    return sim, prior


@pytest.fixture(scope="module")
def sbc_problem():
    return _sbc("balanced")


@pytest.mark.parametrize("case", sorted(SBC_CASES))
def test_simulation_based_calibration(case):
    """Ranks of the true w_1, w_2, w_1 + w_2, ‖w‖, log λ, λ0 among 99 thinned draws are uniform (chi-square over
    10 bins, 400 problems drawn from the model's joint distribution).  Fixed seeds make the test deterministic;
    each p-value must exceed 0.001 (a correct sampler fails one of the six with probability < 0.6 %)."""
    sim, prior = _sbc(case)
    dr = sample_posterior(sim.stats, np.random.default_rng(6), public=sim.public, gram_prior=prior,
                          n_draws=SBC_L, burn_in=500, thin=5)
    pvals = {name: chi2_uniform(ranks(truth, draws), SBC_L) for name, truth, draws in [
        ("w1", sim.w[:, 0], dr.w[..., 0]), ("w2", sim.w[:, 1], dr.w[..., 1]),
        ("w1+w2", sim.w.sum(1), dr.w.sum(-1)), ("|w|", np.linalg.norm(sim.w, axis=1), np.linalg.norm(dr.w, axis=-1)),
        ("log lam", np.log(sim.lam), np.log(dr.lam)), ("lam0", sim.lam0, dr.lam0)]}
    assert min(pvals.values()) > 1e-3, pvals


def test_simulation_based_calibration_detects_the_naive_posterior(sbc_problem):
    """Negative control: the posterior that treats the noisy statistics as exact (rplr's VB, Gaussian q(w)) on the
    same problems gives clearly non-uniform ranks (p < 1e-6), so the SBC test has power."""
    sim, _ = sbc_problem
    st, pub = sim.stats, sim.public
    vb = fit_vb(st.XX + pub.XX, st.Xy + pub.Xy, st.yy + pub.yy, st.n + pub.n, return_cov=True)
    rng = np.random.default_rng(3)
    L = np.linalg.cholesky(vb.cov)
    draws = vb.mean[:, None, :] + np.einsum("bij,bsj->bsi", L, rng.standard_normal((SBC_N, SBC_L, 2)))
    assert chi2_uniform(ranks(sim.w[:, 0], draws[..., 0]), SBC_L) < 1e-6


# ----------------------------------------------------------------------------------- interface
def test_same_seed_same_draws_and_batch_shapes():
    X, y, Xp, yp = _data(n=60, d=3, seed=10)
    rng = np.random.default_rng(11)
    Z = np.stack([X.T @ X + rng.laplace(0, 5, (3, 3)) for _ in range(6)]).reshape(2, 3, 3, 3)
    Z = np.triu(Z) + np.swapaxes(np.triu(Z, 1), -1, -2)
    stats = NoisyStats(Z, X.T @ y, y @ y, 60, 5.0, 2.0, 20.0)
    kw = dict(public=ExactStats.of(Xp, yp), gram_prior=clipped_gaussian_gram_prior(60, 3, 1e9), n_draws=7,
              burn_in=5, thin=1)
    a = sample_posterior(stats, np.random.default_rng(1), **kw)
    b = sample_posterior(stats, np.random.default_rng(1), **kw)
    np.testing.assert_array_equal(a.w, b.w)
    assert a.w.shape == (2, 3, 7, 3) and a.lam.shape == (2, 3, 7) and a.mean().shape == (2, 3, 3)
    lo, hi = a.interval(0.9)
    assert lo.shape == (2, 3, 3) and np.all(lo <= hi)
    mu, plo, phi = a.predict_interval(np.ones((4, 3)), 0.5)
    assert mu.shape == plo.shape == (2, 3, 4) and np.all(plo <= phi)
    assert set(a.accept) == {"ct", "lam", "ridge"}


@pytest.mark.parametrize("kwargs, msg", [
    (dict(n=4), "n_private >= d \\+ 2"),
    (dict(b_xy=np.array([1.0, 0.0])), "all scales > 0 or all = 0"),
    (dict(b_yy=-1.0), "finite and >= 0"),
])
def test_bad_input_is_rejected(kwargs, msg):
    X, y, _, _ = _data(n=40, d=3, seed=12)
    base = dict(XX=X.T @ X, Xy=X.T @ y, yy=y @ y, n=40, b_xx=1.0, b_xy=np.array([1.0, 1.0]), b_yy=1.0)
    base.update(kwargs)
    with pytest.raises(ValueError, match=msg):
        sample_posterior(NoisyStats(**base), np.random.default_rng(0), n_draws=1, burn_in=0)


def test_interval_level_is_checked():
    X, y, _, _ = _data(n=40, d=2, seed=13)
    dr = sample_posterior(NoisyStats(X.T @ X, X.T @ y, y @ y, 40, 0.0, 0.0, 0.0), np.random.default_rng(0),
                          n_draws=5, burn_in=0)
    with pytest.raises(ValueError, match="level"):
        dr.interval(1.5)
