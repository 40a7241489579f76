"""Tests of the mean-field VB engine for Gamma-prior Bayesian LR (dpexp.models.vb)."""

from __future__ import annotations

import numpy as np
import pytest

from dpexp.models.bayes_lr import posterior_mean_fixed
from dpexp.models.vb import PAPER_PRIOR, fit_vb, posterior_mean_gamma


def _data(n=200, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    beta = rng.normal(size=d)
    y = X @ beta + rng.normal(size=n)
    return X, y


def _stats(X, y):
    return X.T @ X, X.T @ y, float(y @ y), X.shape[0]


def exact_posterior_mean(S, r, t, n, prior=PAPER_PRIOR, grid=300):
    """Exact E[β | data] of the Gamma-prior model by 2-D quadrature over (log λ, log λ0).

    β | λ, λ0 is Gaussian with mean (λ0 I + λS)⁻¹ λ r, and the marginal density of (λ, λ0) is
    p(λ)p(λ0) λ^{n/2} λ0^{d/2} |λ0 I + λS|^{-1/2} exp(−λt/2 + λ² rᵀ(λ0 I + λS)⁻¹ r / 2).
    """
    a, b, a0, b0 = prior
    d = S.shape[0]
    s, V = np.linalg.eigh(S)
    rr = V.T @ r
    # locate the mode roughly with a coarse grid, then integrate on a fine one around it
    def logpost(L, L0):
        prec = L0[..., None] + L[..., None] * s
        quad = np.sum((L[..., None] * rr) ** 2 / prec, -1)
        return ((a - 1 + n / 2) * np.log(L) - b * L + (a0 - 1 + d / 2) * np.log(L0) - b0 * L0
                - 0.5 * np.sum(np.log(prec), -1) - 0.5 * L * t + 0.5 * quad + np.log(L) + np.log(L0))

    lo, hi = np.log(1e-4), np.log(1e4)
    for _ in range(3):
        u = np.linspace(lo, hi, grid)
        U, U0 = np.meshgrid(u, np.linspace(lo, hi, grid) if _ == 0 else u0, indexing="ij")
        lp = logpost(np.exp(U), np.exp(U0))
        w = np.exp(lp - lp.max())
        w /= w.sum()
        # shrink the window to where the mass is
        mu, mu0 = np.sum(w * U), np.sum(w * U0)
        sd, sd0 = np.sqrt(np.sum(w * (U - mu) ** 2)), np.sqrt(np.sum(w * (U0 - mu0) ** 2))
        lo, hi = mu - 10 * sd, mu + 10 * sd
        u0 = np.linspace(mu0 - 10 * sd0, mu0 + 10 * sd0, grid)
    L, L0 = np.exp(U), np.exp(U0)
    prec = L0[..., None] + L[..., None] * s
    mk = (L[..., None] * rr) / prec
    m_eig = np.sum(w[..., None] * mk, axis=(0, 1))
    return V @ m_eig


def test_concentrated_priors_reduce_to_fixed_precision_closed_form():
    """Known value: with Gamma priors concentrated at λ = 2, λ0 = 0.5 (shape 1e9), VB equals Eqs. 3–4."""
    X, y = _data()
    S, r, t, n = _stats(X, y)
    prior = (2e9, 1e9, 0.5e9, 1e9)
    m = posterior_mean_gamma(S, r, t, n, prior=prior)
    ref = posterior_mean_fixed(S, r, lam=2.0, lam0=0.5)
    np.testing.assert_allclose(m, ref, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("n,seed", [(30, 1), (200, 2)])
def test_vb_matches_exact_posterior_mean(n, seed):
    """VB posterior mean vs the exact Gamma-prior posterior mean by quadrature.

    Mean-field VB on this model is accurate to O(1/n) in the precisions; the stated tolerance (2% of ‖β‖ at n = 30,
    0.2% at n = 200) is deterministic for these fixed seeds.
    """
    X, y = _data(n=n, d=4, seed=seed)
    S, r, t, nn = _stats(X, y)
    res = fit_vb(S, r, t, nn)
    assert bool(res.converged)
    ref = exact_posterior_mean(S, r, t, nn)
    tol = 0.02 if n == 30 else 0.002
    assert np.linalg.norm(res.mean - ref) <= tol * np.linalg.norm(ref)


def test_fixed_point_equations_hold():
    X, y = _data(n=50, d=3, seed=3)
    S, r, t, n = _stats(X, y)
    res = fit_vb(S, r, t, n, return_cov=True)
    a, b, a0, b0 = PAPER_PRIOR
    cov = np.linalg.inv(res.E_lam0 * np.eye(3) + res.E_lam * S)
    np.testing.assert_allclose(res.cov, cov, rtol=1e-8)
    np.testing.assert_allclose(res.mean, res.E_lam * cov @ r, rtol=1e-8)
    m = res.mean
    R = t - 2 * m @ r + np.trace(S @ (cov + np.outer(m, m)))
    np.testing.assert_allclose(res.b_lam, b + 0.5 * R, rtol=1e-7)
    np.testing.assert_allclose(res.b_lam0, b0 + 0.5 * (m @ m + np.trace(cov)), rtol=1e-7)
    np.testing.assert_allclose(res.a_lam, a + n / 2)


def test_batched_equals_loop():
    rng = np.random.default_rng(4)
    S, r, t, n = [], [], [], []
    for k in range(6):
        X, y = _data(n=20 + 10 * k, d=3, seed=10 + k)
        s_, r_, t_, n_ = _stats(X, y)
        S.append(s_), r.append(r_), t.append(t_), n.append(n_)
    S, r, t, n = np.array(S).reshape(2, 3, 3, 3), np.array(r).reshape(2, 3, 3), np.array(t).reshape(2, 3), \
        np.array(n).reshape(2, 3)
    batched = fit_vb(S, r, t, n).mean
    for i in range(2):
        for j in range(3):
            np.testing.assert_allclose(batched[i, j], fit_vb(S[i, j], r[i, j], t[i, j], n[i, j]).mean, rtol=1e-10)
    assert rng is not None


def test_robust_on_indefinite_statistics_and_negative_residual():
    """Perturbed stats: indefinite nXX (eigenvalue −5), asymmetric, and nyy so small the residual is negative."""
    X, y = _data(n=10, d=4, seed=5)
    S, r, t, n = _stats(X, y)
    w, V = np.linalg.eigh(S)
    w[0] = -5.0
    S_bad = V @ np.diag(w) @ V.T
    S_bad[0, 1] += 0.3  # asymmetric
    res = fit_vb(S_bad, r, -100.0, n)
    assert np.all(np.isfinite(res.mean)) and bool(res.converged)
    assert int(res.n_floored) >= 1
    a, b, *_ = PAPER_PRIOR
    assert res.b_lam >= b  # rate never below the prior rate
    # joint projection: the fit equals the fit on the PSD projection of [[S, r], [r', t]] (which is consistent)
    d = S.shape[0]
    M = np.zeros((d + 1, d + 1))
    M[:d, :d] = 0.5 * (S_bad + S_bad.T)
    M[:d, d] = M[d, :d] = r
    M[d, d] = -100.0
    w, U = np.linalg.eigh(M)
    Mp = U @ np.diag(np.maximum(w, 0)) @ U.T
    ref = fit_vb(Mp[:d, :d], Mp[:d, d], Mp[d, d], n, project="xx")
    np.testing.assert_allclose(res.mean, ref.mean, rtol=1e-6, atol=1e-10)
    # the residual-only floor variant stays finite here too
    res_xx = fit_vb(S_bad, r, -100.0, n, project="xx")
    assert np.all(np.isfinite(res_xx.mean)) and bool(res_xx.resid_floored)


def test_zero_data_gives_prior():
    d = 3
    res = fit_vb(np.zeros((d, d)), np.zeros(d), 0.0, 0)
    np.testing.assert_allclose(res.mean, 0.0)
    a, b, a0, b0 = PAPER_PRIOR
    np.testing.assert_allclose(res.E_lam, a / b)


def test_many_noisy_problems_all_finite():
    """A large batch of heavily perturbed statistics never yields NaN/inf."""
    rng = np.random.default_rng(6)
    d = 5
    S = rng.laplace(0, 50.0, size=(500, d, d))
    r = rng.laplace(0, 20.0, size=(500, d))
    t = rng.laplace(0, 10.0, size=500)
    res = fit_vb(S, r, t, 100)
    assert np.all(np.isfinite(res.mean))
    assert res.converged.mean() > 0.99


def _reference_updates(S, r, t, nn, a, b, a0, b0, d, tol, max_iter):
    """fit_vb's coordinate updates as first written (one numpy call per term, λ and λ0 apart): the fast loop must
    reproduce them to the bit."""
    s, V = np.linalg.eigh(S)
    s = np.maximum(s, 0.0)
    rr = np.einsum("...dk,...d->...k", V, r)
    batch = t.shape
    a_lam, a_lam0 = a + 0.5 * nn, np.full(batch, a0 + 0.5 * d)
    E_lam, E_lam0 = np.full(batch, a / b), np.full(batch, a0 / b0)
    for it in range(1, max_iter + 1):
        prec = E_lam0[..., None] + E_lam[..., None] * s
        var = 1.0 / prec
        mk = E_lam[..., None] * rr * var
        resid = t - 2.0 * np.sum(mk * rr, axis=-1) + np.sum(s * (var + mk * mk), axis=-1)
        floored = resid < 0.0
        b_lam = b + 0.5 * np.maximum(resid, 0.0)
        b_lam0 = b0 + 0.5 * np.sum(mk * mk + var, axis=-1)
        new_lam, new_lam0 = a_lam / b_lam, a_lam0 / b_lam0
        change = np.maximum(np.abs(new_lam - E_lam) / new_lam, np.abs(new_lam0 - E_lam0) / new_lam0)
        E_lam, E_lam0 = new_lam, new_lam0
        if (change < tol).all():
            break
    var = 1.0 / (E_lam0[..., None] + E_lam[..., None] * s)
    mean = np.einsum("...dk,...k->...d", V, E_lam[..., None] * rr * var)
    return mean, b_lam, b_lam0, it, change < tol, floored


@pytest.mark.parametrize("batch, d, max_iter", [((), 4, 2000), ((), 10, 2000), ((), 1, 2000), ((), 17, 2000),
                                                  ((), 10, 3), ((9,), 4, 2000), ((4, 3), 4, 2000),
                                                  ((37, 1), 10, 2000), ((5, 2), 17, 2000), ((6,), 10, 3),
                                                  ((3,), 1, 2000), ((0,), 4, 2000)])
def test_fit_vb_loop_equals_the_reference_updates_to_the_bit(batch, d, max_iter):
    """Also at a run's shapes (37 drugs x 1 trial, d = 10: the sums' unrolled pairwise path), d past 16, d = 1,
    stopped before convergence (max_iter = 3) and an empty batch."""
    rng = np.random.default_rng(11)
    n = 25
    X = rng.normal(size=batch + (n, d))
    y = X @ rng.normal(size=d) + rng.normal(size=batch + (n,))
    S = np.swapaxes(X, -1, -2) @ X + rng.laplace(size=batch + (d, d))
    S = 0.5 * (S + np.swapaxes(S, -1, -2))
    r = np.einsum("...nd,...n->...d", X, y)
    t = np.einsum("...n,...n->...", y, y) - 30.0           # some residuals floored
    with np.errstate(all="ignore"):   # d = 17 > n - 8: the "xx" fit diverges on some problems (NaN both ways)
        res = fit_vb(S, r, t, float(n), project="xx", prior=(2.0, 1.5, 3.0, 0.5), max_iter=max_iter)
        mean, b_lam, b_lam0, it, conv, floored = _reference_updates(S, r, t, np.full(batch, float(n)), 2.0, 1.5,
                                                                     3.0, 0.5, d, 1e-9, max_iter)
    assert res.n_iter == it
    for got, ref in ((res.mean, mean), (res.b_lam, b_lam), (res.b_lam0, b_lam0), (res.converged, conv),
                     (res.resid_floored, floored)):
        assert np.shape(got) == np.shape(ref) and np.asarray(got).tobytes() == np.asarray(ref).tobytes()


def test_pairwise_sum_is_numpys_reduction():
    """fit_vb's one-problem loop sums in Python floats in numpy's order: the same float as np.add.reduce at every
    length (below 8, up to 128, recursive halves beyond), on magnitudes spread over 17 decades (order-sensitive)."""
    from dpexp.models.vb import _fsum

    rng = np.random.default_rng(3)
    for n in list(range(1, 300)) * 3:
        x = rng.normal(size=n) * 10.0 ** rng.integers(-5, 12, size=n)
        assert _fsum(x.tolist()) == np.add.reduce(x)
    for n in (1, 2, 7, 8, 9, 17, 200):   # signed zeros: numpy's sum of only −0 entries is +0
        for x in (np.full(n, -0.0), np.where(np.arange(n) % 2, -0.0, 0.0)):
            assert str(_fsum(x.tolist())) == str(np.add.reduce(x)) == str(np.add.reduce(x[None], axis=-1)[0])


@pytest.mark.parametrize("project", ["joint", "xx"])
def test_one_problem_loop_equals_the_array_loop_to_the_bit(project):
    """A problem alone (batch shape (): the Python-float loop) gives the floats the array loop gives it in a batch
    of one, every field, on exact, noisy (indefinite, negative residual) and empty statistics, d from 1 to 20."""
    rng = np.random.default_rng(4)
    cases = []
    for d in (1, 3, 10, 10, 10, 17, 20):   # (lengths past 128: test_pairwise_sum_is_numpys_reduction)
        n = int(rng.integers(5, 200))
        X = rng.normal(size=(n, d)) / np.sqrt(d)
        y = X @ rng.normal(size=d) + rng.normal(size=n)
        S, r, t = X.T @ X, X.T @ y, float(y @ y)
        cases.append((S, r, t, float(n)))
        cases.append((S + rng.laplace(0, 3.0, size=(d, d)), r + rng.laplace(0, 3.0, size=d), t - 40.0, float(n)))
    cases.append((np.zeros((4, 4)), np.zeros(4), 0.0, 0.0))
    for S, r, t, n in cases:
        with np.errstate(all="ignore"):
            one = fit_vb(S, r, t, n, project=project, return_cov=True, max_iter=100)   # some stop unconverged
            arr = fit_vb(S[None], r[None], np.array([t]), np.array([n]), project=project, return_cov=True,
                         max_iter=100)
        assert one.n_iter == arr.n_iter
        for f in ("mean", "cov", "a_lam", "b_lam", "a_lam0", "b_lam0", "converged", "n_floored", "resid_floored"):
            got, ref = np.asarray(getattr(one, f)), np.asarray(getattr(arr, f))[0]
            assert got.shape == ref.shape and got.dtype == ref.dtype and got.tobytes() == ref.tobytes(), f


_FIELDS = ("mean", "cov", "a_lam", "b_lam", "a_lam0", "b_lam0", "converged", "n_floored", "resid_floored")


def _same_result(one, got) -> None:
    """Every VBResult field equal to the bit, with its type (0-d array, numpy scalar, int), shape and dtype."""
    assert type(got.n_iter) is type(one.n_iter) and got.n_iter == one.n_iter
    for f in _FIELDS:
        x, y = getattr(one, f), getattr(got, f)
        assert type(x) is type(y), f
        if x is not None:
            assert np.shape(x) == np.shape(y) and np.asarray(x).dtype == np.asarray(y).dtype, f
            assert np.asarray(x).tobytes() == np.asarray(y).tobytes(), f


def _problems(rng, B, d):
    """B problems of one d: exact statistics on scales over 3 decades (they converge after very different numbers
    of iterations), noisy ones (indefinite, negative residual), empty ones (the prior)."""
    S, R, T = [], [], []
    n = rng.integers(2, 300, size=B).astype(float)
    for i in range(B):
        m = int(n[i])
        X = rng.normal(size=(m, d)) * rng.choice([0.01, 1.0, 30.0])
        y = X @ rng.normal(size=d) + rng.normal(size=m) * rng.choice([0.01, 1.0, 10.0])
        XX, Xy, yy = X.T @ X, X.T @ y, float(y @ y)
        kind = rng.integers(0, 6)
        if kind == 0:
            XX, Xy, yy = XX + rng.laplace(0, 5, size=(d, d)), Xy + rng.laplace(0, 5, size=d), yy - 50.0
        elif kind == 1:
            XX, Xy, yy = np.zeros((d, d)), np.zeros(d), 0.0
        S.append(XX)
        R.append(Xy)
        T.append(yy)
    return np.array(S), np.array(R), np.array(T), n


@pytest.mark.parametrize("project", ["joint", "xx"])
def test_fit_vb_each_is_fit_vb_of_each_problem_alone_to_the_bit(project):
    """fit_vb_each of a batch = fit_vb of every problem alone, every field (types included) and its own n_iter:
    problems converging after 1 to hundreds of iterations side by side, max_iter hits, batches of 1, d = 1 to 64
    (sums below 8, unrolled, recursive), with and without the covariance."""
    from dpexp.models.vb import fit_vb_each

    rng = np.random.default_rng(21)
    iters = set()
    for _ in range(30):
        d, B = int(rng.choice([1, 2, 5, 8, 10, 10, 17, 33])), int(rng.choice([1, 2, 7, 25]))
        S, R, T, n = _problems(rng, B, d)
        max_iter, cov = int(rng.choice([2000, 2000, 37, 5, 1])), bool(rng.integers(0, 2))
        with np.errstate(all="ignore"):
            each = fit_vb_each(S, R, T, n, project=project, max_iter=max_iter, return_cov=cov)
            for i in range(B):
                one = fit_vb(S[i], R[i], T[i], n[i], project=project, max_iter=max_iter, return_cov=cov)
                iters.add(one.n_iter)
                _same_result(one, each[i])
    assert min(iters) <= 5 and max(iters) >= 60   # spread of convergence points (and max_iter hits) covered


def test_fit_vb_each_zero_rate_nan_and_no_update_problems():
    """A zero shape a + n/2 (a = 0, n = 0: E λ = 0, the one-problem loop's ZeroDivisionError, then fit_vb's array
    loop in NaN arithmetic), a NaN y'y and an empty problem beside good ones, max_iter = 0 and 1, an empty batch:
    each as fit_vb of that problem alone; a zero prior rate raises as fit_vb does; and a batched fit_vb differs
    from the problems alone (why fit_vb_each exists)."""
    from dpexp.models.vb import fit_vb_each

    rng = np.random.default_rng(5)
    S, R, T, n = _problems(rng, 12, 4)
    S[3], R[3], T[3], n[3] = 0.0, 0.0, 0.0, 0.0
    T[7] = np.nan
    for prior, max_iter in (((0.0, 1.0, 2.0, 0.5), 2000), (PAPER_PRIOR, 2000), (PAPER_PRIOR, 0), (PAPER_PRIOR, 1)):
        with np.errstate(all="ignore"):
            each = fit_vb_each(S, R, T, n, prior=prior, project="xx", max_iter=max_iter, return_cov=True)
            for i in range(12):
                one = fit_vb(S[i], R[i], T[i], n[i], prior=prior, project="xx", max_iter=max_iter, return_cov=True)
                _same_result(one, each[i])
    with np.errstate(all="ignore"):
        zero = fit_vb_each(S, R, T, n, prior=(0.0, 1.0, 2.0, 0.5), project="xx")[3]
    assert zero.E_lam == 0.0 and zero.n_iter == 2000 and not zero.converged   # rel λ = 0/0: never converged
    assert np.isnan(each[7].mean).all() and each[7].n_iter == 1
    for error, fit in ((ZeroDivisionError, lambda: fit_vb(S[0], R[0], T[0], n[0], prior=(2.0, 0.0, 2.0, 2.0))),
                       (ZeroDivisionError, lambda: fit_vb_each(S, R, T, n, prior=(2.0, 0.0, 2.0, 2.0), project="xx")),
                       (np.linalg.LinAlgError, lambda: fit_vb(S[7], R[7], T[7], n[7])),    # NaN in the joint eigh
                       (np.linalg.LinAlgError, lambda: fit_vb_each(S, R, T, n))):
        with pytest.raises(error):
            fit()
    assert fit_vb_each(S[:0], R[:0], T[:0], n[:0]) == []
    S, R, T, n = _problems(np.random.default_rng(8), 20, 10)
    both = fit_vb(S, R, T, n)
    alone = [fit_vb(S[i], R[i], T[i], n[i]) for i in range(20)]
    assert any(both.b_lam[i] != alone[i].b_lam for i in range(20))
    for i, res in enumerate(fit_vb_each(S, R, T, n)):
        _same_result(alone[i], res)


def _projected_reference(S, r, t):
    """The joint projection of every problem, as it was computed before the shortcut: M = [[S, r], [rᵀ, t]]
    symmetrised, its eigenvalues floored at 0, the projected S decomposed again.  Returns (s, V, rr, t, n_floored)."""
    d = S.shape[-1]
    S = 0.5 * (S + np.swapaxes(S, -1, -2))
    M = np.empty(S.shape[:-2] + (d + 1, d + 1))
    M[..., :d, :d], M[..., :d, d], M[..., d, :d], M[..., d, d] = S, r, r, t
    w, U = np.linalg.eigh(M)
    M = (U * np.maximum(w, 0.0)[..., None, :]) @ np.swapaxes(U, -1, -2)
    s, V = np.linalg.eigh(M[..., :d, :d])
    return np.maximum(s, 0.0), V, np.einsum("...dk,...d->...k", V, M[..., :d, d]), M[..., d, d], np.sum(w < 0, -1)


def test_joint_projection_shortcut_is_the_projection():
    """The problems whose M is certified positive definite (nXX well conditioned, Schur complement above the margin)
    skip the projection's two eigendecompositions; every fit agrees with the projection computed for every problem
    (the reference above, in the fit's own loop) to 1e-10, the certified ones have n_floored 0, and a batch mixing
    both kinds gives each problem the floats it gets alone."""
    from dpexp.models import vb

    rng = np.random.default_rng(8)
    S, R, T, n = _problems(rng, 200, 6)
    with np.errstate(all="ignore"):
        _, _, s, V, rr, t, _, nf = vb._eigenbasis(S, R, T, n, "joint")
        s0, V0, rr0, t0, nf0 = _projected_reference(S, R, T)
        certified = nf == 0
        assert 0.2 < certified.mean() < 1.0 and np.all(nf0[~certified] == nf[~certified])
        # the same posterior: Σ, m and t in the original basis (eigenvectors are unique up to sign and rotation
        # within an eigenspace, so compare what the fit uses, V diag(f(s)) Vᵀ and V rr)
        np.testing.assert_allclose(np.einsum("bij,bj,bkj->bik", V, s, V), np.einsum("bij,bj,bkj->bik", V0, s0, V0),
                                   rtol=1e-10, atol=1e-10 * np.abs(S).max())
        np.testing.assert_allclose(np.einsum("bij,bj->bi", V, rr), np.einsum("bij,bj->bi", V0, rr0), rtol=1e-10,
                                   atol=1e-9 * np.abs(R).max())
        np.testing.assert_allclose(t, t0, rtol=1e-10, atol=1e-10 * np.abs(T).max())
        for i in range(0, 200, 7):
            one = vb._eigenbasis(S[i], R[i], T[i], n[i], "joint")
            for a, b in zip((*one[2:6], one[7]), (s[i], V[i], rr[i], t[i], nf[i])):
                assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    # a problem at the boundary (y exactly in the span of x: Schur complement 0 up to rounding) takes the projection
    X = rng.normal(size=(30, 3))
    y = X @ np.array([1.0, -2.0, 0.5])
    _, _, _, _, _, _, _, nf = vb._eigenbasis(X.T @ X, X.T @ y, float(y @ y), 30.0, "joint")
    s_ref = _projected_reference(X.T @ X, X.T @ y, float(y @ y))
    assert nf == s_ref[4]


def test_ridge_eigendecomposition_given_to_the_fit():
    """``ridge_stabilised(..., with_eig=True)``'s (s, V) handed to ``fit_vb`` give the fit of its matrix computed
    from scratch (to 1e-10), with no ``eigh`` of nXX's size in the fit for the certified problems."""
    from dpexp.models.vb import noise_ridge, ridge_stabilised

    rng = np.random.default_rng(3)
    S, R, T, n = _problems(rng, 60, 5)
    rho = noise_ridge(5, rng.uniform(0.1, 3.0, size=60))
    with np.errstate(all="ignore"):
        Rm, eig = ridge_stabilised(S, rho, with_eig=True)
        assert Rm.tobytes() == ridge_stabilised(S, rho).tobytes()
        np.testing.assert_allclose(np.einsum("bij,bj,bkj->bik", eig[1], eig[0], eig[1]), Rm, rtol=1e-12,
                                   atol=1e-12 * np.abs(Rm).max())
        given = fit_vb(Rm, R, T, n, eig=eig, return_cov=True)
        fresh = fit_vb(Rm, R, T, n, return_cov=True)
    np.testing.assert_allclose(given.mean, fresh.mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(given.cov, fresh.cov, rtol=1e-8, atol=1e-10)
    assert np.array_equal(given.n_floored, fresh.n_floored)
