"""Tests of the fast Gaussian (errors-in-variables VB) approximation of the noise-aware posterior."""

from __future__ import annotations

import numpy as np
import pytest

from dpexp.families.gdsc.stats import sensitivities
from dpexp.models.gram_prior import clipped_gaussian_gram_prior
from dpexp.models.noise_aware import ExactStats, NoisyStats, sample_posterior
from dpexp.models.noise_aware_fast import _expected_AKA, fit_gaussian
from dpexp.models.vb import fit_vb


def test_noise_free_limit_is_vb_on_the_summed_statistics():
    """b = 0: the coordinate updates are those of fit_vb on private + public statistics (same fixed point)."""
    rng = np.random.default_rng(0)
    X, Xp = rng.normal(size=(150, 4)), rng.normal(size=(8, 4))
    beta = rng.normal(size=4)
    y, yp = X @ beta + rng.normal(size=150), Xp @ beta + rng.normal(size=8)
    g = fit_gaussian(NoisyStats(X.T @ X, X.T @ y, y @ y, 150, 0.0, 0.0, 0.0), ExactStats.of(Xp, yp))
    vb = fit_vb(X.T @ X + Xp.T @ Xp, X.T @ y + Xp.T @ yp, y @ y + yp @ yp, 158, return_cov=True)
    assert bool(g.converged)
    np.testing.assert_allclose(g.mean, vb.mean, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(g.cov, vb.cov, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(g.E_lam, vb.E_lam, rtol=1e-7)


def test_expected_AKA_matches_monte_carlo():
    rng = np.random.default_rng(1)
    d = 3
    mu = rng.normal(size=(d, d))
    mu = mu + mu.T + 6 * np.eye(d)
    T = rng.uniform(0.1, 1.0, (d, d))
    T = np.triu(T) + np.triu(T, 1).T
    Kinv = np.linalg.inv(mu + np.eye(d))
    E = rng.standard_normal((200_000, d, d))
    E = np.triu(E) + np.swapaxes(np.triu(E, 1), -1, -2)
    A = mu + np.sqrt(T) * E
    mc = (A @ Kinv @ A).mean(0)
    np.testing.assert_allclose(_expected_AKA(mu, T, Kinv), mc, atol=0.02 * np.abs(mc).max())


def _rplr_release(n, d, eps, split, wx, wy, B, seed, n_pub=0):
    """B independent Eq. (10) data sets, clipped and released exactly as rplr (dpexp.families.gdsc.stats);
    with ``n_pub`` also the exact statistics of that many public rows clipped alike."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(B, n + n_pub, d))
    beta = rng.normal(size=(B, d))
    y = np.einsum("bnd,bd->bn", X, beta) + rng.normal(size=(B, n + n_pub))
    Bx0, By0 = wx * X.std(axis=(1, 2)), wy * y.std(axis=1)
    public = ExactStats.of(np.clip(X[:, n:], -Bx0[:, None, None], Bx0[:, None, None]),
                           np.clip(y[:, n:], -By0[:, None], By0[:, None]))
    X, y = X[:, :n], y[:, :n]
    if n_pub:
        return (*_release(X, y, Bx0, By0, n, d, eps, split, rng, wx), public)
    return _release(X, y, Bx0, By0, n, d, eps, split, rng, wx)


def _perturbed(X, y, Bx, By, scales, rng):
    """rplr's release of one data set, plainly: the clipped statistics plus Laplace noise at ``scales`` (XᵀX's
    upper triangle mirrored, then Xᵀy, then yᵀy, drawn from ``rng`` in that order)."""
    d = X.shape[1]
    Xc, yc = np.clip(X, -Bx, Bx), np.clip(y, -By, By)
    iu = np.triu_indices(d)
    N = np.zeros((d, d))
    N[iu] = rng.laplace(0.0, scales[0], size=iu[0].size)
    N = N + N.T - np.diag(np.diag(N))
    return Xc.T @ Xc + N, Xc.T @ yc + rng.laplace(0.0, scales[1], size=d), yc @ yc + rng.laplace(0.0, scales[2])


def _release(X, y, Bx, By, n, d, eps, split, rng, wx):
    B = X.shape[0]
    # the paper rule's scales (the approximation is checked against the sampler; either rule would do)
    sxx, sxy, syy = sensitivities(d, Bx, By, "paper")
    bxx, bxy, byy = sxx / (split[0] * eps), sxy / (split[1] * eps), syy / (split[2] * eps)
    rel = [_perturbed(X[b], y[b], Bx[b], By[b], (bxx[b], bxy[b], byy[b]), rng) for b in range(B)]
    stats = NoisyStats(np.stack([r[0] for r in rel]), np.stack([r[1] for r in rel]), np.array([r[2] for r in rel]),
                       n, bxx, bxy, byy)
    return stats, clipped_gaussian_gram_prior(n, d, Bx, 1.0, 0.1, 0.1)


@pytest.mark.parametrize("split, omega", [((0.35, 0.6, 0.05), (0.5, 0.5)), ((0.05, 0.9, 0.05), (0.1, 0.4))])
def test_agrees_with_the_sampler_on_rplr_releases(split, omega):
    """On rplr's releases (n = 200, d = 5, ε = 2) the approximation's means are within 0.35 posterior sd of the
    sampler's for 80 % of the coefficients and its sds within [0.8, 1.25] × the sampler's for 90 % (measured at
    n = 500, d = 10: median |Δmean| 0.12–0.17 sd, median sd ratio 0.95–0.97; docs/noise_aware.md)."""
    stats, prior = _rplr_release(200, 5, 2.0, split, omega[0], omega[1], B=40, seed=3)
    dr = sample_posterior(stats, np.random.default_rng(4), gram_prior=prior, n_draws=200, burn_in=300, thin=2)
    g = fit_gaussian(stats, gram_prior=prior)
    sd = dr.w.std(-2)
    assert np.all(g.converged)
    assert np.quantile(np.abs(g.mean - dr.mean()) / sd, 0.8) < 0.35
    ratio = g.sd() / sd
    assert np.mean((ratio > 0.8) & (ratio < 1.25)) >= 0.9


def test_intervals_and_predictions():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(80, 3))
    y = X @ np.ones(3) + rng.normal(size=80)
    g = fit_gaussian(NoisyStats(X.T @ X, X.T @ y, y @ y, 80, 0.0, 0.0, 0.0))
    lo, hi = g.interval(0.9)
    np.testing.assert_allclose(hi - lo, 2 * 1.6448536269514722 * g.sd())
    Xt = rng.normal(size=(6, 3))
    mu, plo, phi = g.predict_interval(Xt, 0.5)
    np.testing.assert_allclose(mu, Xt @ g.mean)
    np.testing.assert_allclose(phi - mu, 0.6744897501960817 * np.sqrt(np.einsum("md,de,me->m", Xt, g.cov, Xt)))
    with pytest.raises(ValueError, match="level"):
        g.interval(0.0)


def test_converges_on_very_noisy_releases():
    """Regression test: on rplr's releases at n = 100, ε = 1 (tuned split and thresholds) the undamped λ update
    2-cycled for some problems; with damping every problem converges."""
    stats, prior, public = _rplr_release(100, 10, 1.0, (0.05, 0.9, 0.05), 0.1, 0.3, B=60, seed=7, n_pub=10)
    g = fit_gaussian(stats, public=public, gram_prior=prior, max_iter=1000)
    assert np.all(g.converged) and np.all(np.isfinite(g.cov))


def _plain_fit_gaussian(stats, public, gram_prior, prior, tol=1e-6, max_iter=500):
    """``fit_gaussian``'s coordinate updates in their plain form, as numpy over the batch (d×d products with I, one
    reduction per sum, numpy's solve and inverse, the converged problems masked every iteration): the reference the
    compiled per-problem loop is held to, at a tolerance (``_close_to_plain``)."""
    from dpexp.models.noise_aware import _sym, _w_op_cov
    from dpexp.models.noise_aware_fast import _terms

    # the loop-invariant terms as fit_gaussian computes them (the loop is what this reference restates)
    d, batch, zxy, zyy, n, bxy, Ap, cp, tp, n_p, (a, b, a0, b0), T, muA, K, EAKA, kz, muAT = _terms(
        stats, public, gram_prior, prior)
    Tdiag = np.diagonal(T, axis1=-2, axis2=-1)
    eye = np.eye(d)
    VxyI = (2.0 * bxy[..., None] ** 2)[..., :, None] * eye
    R_min = 1e-3 * np.maximum(n - d, 1.0) * b / a
    q_lam, q_lam0 = a + 0.5 * (n + n_p), a0 + 0.5 * d
    E_lam, E_lam0 = np.broadcast_to(a / b, batch).copy(), np.broadcast_to(a0 / b0, batch).copy()
    m, S = np.zeros(batch + (d,)), np.broadcast_to(eye / E_lam0[..., None, None], batch + (d, d))
    converged, alpha, prev_step = np.zeros(batch, dtype=bool), np.ones(batch), np.zeros(batch)
    S_prev = S
    it = 0
    for it in range(1, max_iter + 1):
        Sd = np.diagonal(S, axis1=-2, axis2=-1)
        ewtw = (_w_op_cov(T, m) + T * S
                + ((T @ Sd[..., None])[..., 0] - Tdiag * Sd)[..., :, None] * eye)
        el = E_lam[..., None, None]
        G = np.linalg.solve(_sym(K / el + VxyI + ewtw), muA)
        S = _sym(np.linalg.inv(_sym(E_lam0[..., None, None] * eye + muAT @ G + el * Ap)))
        h = (np.swapaxes(G, -1, -2) @ zxy[..., None])[..., 0] + E_lam[..., None] * cp
        m_new = (S @ h[..., None])[..., 0]
        Eww = S + m_new[..., :, None] * m_new[..., None, :]
        R_hat = np.maximum(zyy - 2.0 * np.sum(m_new * kz, axis=-1) + np.sum(EAKA * Eww, axis=(-1, -2)), R_min)
        pub = tp - 2.0 * np.sum(m_new * cp, axis=-1) + np.sum(Ap * Eww, axis=(-1, -2))
        step = np.log(q_lam / (b + 0.5 * (R_hat + pub))) - np.log(E_lam)
        alpha = np.where(step * prev_step < 0, 0.5 * alpha, alpha)
        prev_step = step
        new_lam = E_lam * np.exp(alpha * step)
        new_lam0 = q_lam0 / (b0 + 0.5 * (np.sum(m_new * m_new, axis=-1) + np.trace(S, axis1=-2, axis2=-1)))
        change = np.maximum(np.maximum(np.abs(new_lam - E_lam) / new_lam, np.abs(new_lam0 - E_lam0) / new_lam0),
                            np.max(np.abs(m_new - m), axis=-1) / (np.max(np.abs(m_new), axis=-1) + 1e-300))
        act = ~converged
        m = np.where(act[..., None], m_new, m)
        S = np.where(act[..., None, None], S, S_prev)
        E_lam, E_lam0 = np.where(act, new_lam, E_lam), np.where(act, new_lam0, E_lam0)
        converged = converged | (change < tol)
        if converged.all():
            break
        S_prev = S
    return m, S, E_lam, E_lam0, it, converged


def _same(x, y):
    x, y = np.asarray(x), np.asarray(y)
    return x.shape == y.shape and x.dtype == y.dtype and x.tobytes() == y.tobytes()


def _close_to_plain(stats, public, gram, prior, max_iter=500):
    """``fit_gaussian`` of the problems against the plain updates (``_plain_fit_gaussian``): the compiled loop's LU
    solves round differently from numpy's LAPACK ones (≈ 1e-15 a step), so mean, covariance, E[λ] and E[λ0] agree
    to rtol 1e-8 (observed ≤ 1e-12) where a problem stops at the same iteration; a problem whose change crossed
    the 1e-6 test one iteration apart is within 1e-4 (its values move by less than the test's 1e-6 relative change
    a step).  At most one such problem in these batches; the converged flags and the batch's iterations agree.
    Returns the fit."""
    ref = _plain_fit_gaussian(stats, public, gram, prior, max_iter=max_iter)
    got = fit_gaussian(stats, public, gram, prior, max_iter=max_iter)
    assert abs(got.n_iter - ref[4]) <= 1
    flat = lambda x, core: np.reshape(x, (-1,) + np.shape(x)[np.ndim(x) - core:])   # noqa: E731
    close = np.ones(flat(got.E_lam, 0).shape, dtype=bool)
    for x, y, core in zip((got.mean, got.cov, got.E_lam, got.E_lam0), ref, (1, 2, 0, 0)):
        fx, fy = flat(x, core), flat(y, core)
        np.testing.assert_allclose(fx, fy, rtol=1e-4, atol=1e-10)
        close &= np.isclose(fx, fy, rtol=1e-8, atol=1e-12).reshape(len(close), -1).all(axis=1)
    assert (~close).sum() <= 1, np.flatnonzero(~close)
    assert _same(got.converged, ref[5])
    return got


@pytest.mark.parametrize("case", ["rplr", "trials", "noise_free", "flat_one"])
def test_loop_agrees_with_the_plain_updates(case):
    """The compiled loop gives the plain updates' fit (``_close_to_plain``) on rplr's releases with public rows
    (problems converging at different iterations), a (splits, trials) batch, the noise-free limit (T = 0) and one
    problem with a flat design prior."""
    from dpexp.models.gram_prior import flat_gram_prior

    prior = (2.0, 2.0, 2.0, 2.0)
    if case == "rplr":
        stats, gram, public = _rplr_release(100, 10, 1.0, (0.05, 0.9, 0.05), 0.1, 0.3, B=40, seed=7, n_pub=10)
    elif case == "trials":
        stats, gram, public = _rplr_release(60, 4, 2.0, (0.35, 0.6, 0.05), 0.5, 0.5, B=12, seed=9, n_pub=5)
        r = lambda x, core: np.asarray(x).reshape((3, 4) + np.shape(x)[1:]) if np.ndim(x) > core else x
        stats = NoisyStats(r(stats.XX, 2), r(stats.Xy, 1), r(stats.yy, 0), stats.n, r(stats.b_xx, 0),
                           r(stats.b_xy, 0), r(stats.b_yy, 0))
        public = ExactStats(r(public.XX, 2), r(public.Xy, 1), r(public.yy, 0), public.n)
        gram = type(gram)(r(gram.mean, 2), r(gram.var, 2))
        prior = tuple(np.linspace(1.5, 3.0, 4) + np.zeros((3, 4)) for _ in range(4))
    elif case == "noise_free":
        rng = np.random.default_rng(2)
        X, Xp = rng.normal(size=(5, 40, 3)), rng.normal(size=(5, 6, 3))
        X[:, :, 0] = 0.0                                   # a zero column: exact zeros in the products
        y, yp = X.sum(-1) + rng.normal(size=(5, 40)), Xp.sum(-1) + rng.normal(size=(5, 6))
        stats = NoisyStats(X.swapaxes(-1, -2) @ X, np.einsum("bnd,bn->bd", X, y), (y * y).sum(-1), 40, 0.0, 0.0, 0.0)
        public, gram = ExactStats.of(Xp, yp), clipped_gaussian_gram_prior(40, 3, 2.0)
    else:
        stats, _ = _rplr_release(80, 3, 2.0, (0.35, 0.6, 0.05), 0.5, 0.5, B=1, seed=11)
        stats = NoisyStats(stats.XX[0], stats.Xy[0], stats.yy[0], stats.n, stats.b_xx[0], stats.b_xy[0],
                           stats.b_yy[0])
        public, gram = ExactStats.empty(3), flat_gram_prior(3)
    got = _close_to_plain(stats, public, gram, prior)
    if case == "rplr":   # the problems stop at their own iterations
        assert len({fit_gaussian(*_take(stats, public, gram, i), prior).n_iter for i in range(8)}) > 1


def _take(stats, public, gram, i):
    s = slice(i, i + 1)
    return (NoisyStats(stats.XX[s], stats.Xy[s], stats.yy[s], stats.n, stats.b_xx[s], stats.b_xy[s], stats.b_yy[s]),
            ExactStats(public.XX[s], public.Xy[s], public.yy[s], public.n), type(gram)(gram.mean[s], gram.var[s]))


def test_a_problem_fitted_alone_or_in_any_batch_gives_the_same_bits():
    """Each problem iterates on its own, so its fit alone, in its batch, and in the batch reversed is the same to
    the bit (what keeps results byte-identical for any chunking); capped at 30 iterations, the problems stopped
    with some converged and some not still agree with the plain updates."""
    prior = (2.0, 2.0, 2.0, 2.0)
    stats, gram, public = _rplr_release(100, 10, 1.0, (0.05, 0.9, 0.05), 0.1, 0.3, B=40, seed=7, n_pub=10)
    got = fit_gaussian(stats, public, gram, prior)
    rev = slice(None, None, -1)
    back = fit_gaussian(NoisyStats(stats.XX[rev], stats.Xy[rev], stats.yy[rev], stats.n, stats.b_xx[rev],
                                   stats.b_xy[rev], stats.b_yy[rev]),
                        ExactStats(public.XX[rev], public.Xy[rev], public.yy[rev], public.n),
                        type(gram)(gram.mean[rev], gram.var[rev]), prior)
    assert _same(back.mean[rev], got.mean) and _same(back.cov[rev], got.cov) and _same(back.E_lam[rev], got.E_lam)
    for i in range(0, 40, 7):
        one = fit_gaussian(*_take(stats, public, gram, i), prior)
        assert _same(one.mean[0], got.mean[i]) and _same(one.cov[0], got.cov[i])
        assert _same(one.E_lam[0], got.E_lam[i]) and _same(one.E_lam0[0], got.E_lam0[i])
    capped = _close_to_plain(stats, public, gram, prior, max_iter=30)
    assert capped.converged.any() and not capped.converged.all()


def test_lu_solve_and_the_singular_flag():
    """The loop's LU solve (partial pivoting) against numpy's on random and on pivoting-needing systems; an exactly
    singular system is refused (False) and makes ``_iterate`` flag its problem, which ``fit_gaussian`` raises as
    numpy's LinAlgError — never a silent NaN."""
    from dpexp.models.noise_aware_fast import _iterate, _lu_solve

    rng = np.random.default_rng(3)
    for d in (1, 3, 10):
        M, R = rng.normal(size=(d, d)), rng.normal(size=(d, d))
        M[0, 0] = 0.0 if d > 1 else M[0, 0]                  # the first pivot must come from another row
        X = np.empty((d, d))
        assert _lu_solve(M, R, X, np.empty((d, d)), np.empty(d, np.int64))
        np.testing.assert_allclose(X, np.linalg.solve(M, R), rtol=1e-9, atol=1e-12)
    assert not _lu_solve(np.zeros((2, 2)), np.eye(2), np.empty((2, 2)), np.empty((2, 2)), np.empty(2, np.int64))
    z, o = np.zeros((1, 2, 2)), np.ones(1)
    out = _iterate(z, z, z, z, z, np.zeros((1, 2)), np.zeros((1, 2)), np.zeros((1, 2)), np.zeros((1, 2)),
                   np.zeros((2, 1)), o, o, o, o, o, np.ones((2, 1)), 1e-6, 10)
    assert out[5][0] and np.isnan(out[0]).all()
