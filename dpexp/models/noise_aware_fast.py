"""Fast Gaussian approximation of the noise-aware posterior (errors-in-variables variational Bayes).

Same model as ``dpexp.models.noise_aware`` (model G), two approximations that make it closed form:

1. each Laplace(b) noise variable is replaced by a normal of the same variance 2b²;
2. mean-field q(w) q(λ) q(λ0) with q(w) = N(m, S), Gamma q(λ), q(λ0), as in ``dpexp.models.vb``, after integrating
   the latent private statistics out *given w*.

Integrating A and c out.  With normal noise the entries of A given the release are N(μ_A, T) independently
(T = (s⁻² + (2b_xx²)⁻¹)⁻¹, μ_A = T(m/s² + Z/(2b_xx²)); μ_A before flooring is the plug-in K of the sampler), and
c = A w + g, g ~ N(0, K/λ), z_xy = c + N(0, 2b_xy² I).  For fixed w, A w is linear in A, so

    z_xy | w, λ ~ N(μ_A w, Σ_z(w)),   Σ_z(w) = K/λ + 2b_xy² I + W(w) T W(w)ᵀ

(errors in variables: W(w)TW(w)ᵀ is the covariance of A w over the uncertainty of A; ``noise_aware._w_op_cov``).  The
coordinate updates, with E over q (E[WTWᵀ] uses E[wwᵀ] = mmᵀ + S):

    S = (E[λ0] I + μ_Aᵀ Σ̄⁻¹ μ_A + E[λ] A_p)⁻¹,  m = S(μ_Aᵀ Σ̄⁻¹ z_xy + E[λ] c_p),  Σ̄ = K/E[λ] + 2b_xy² I + E[WTWᵀ]
    q(λ0) = Gamma(a0 + d/2, b0 + ½(mᵀm + tr S))
    q(λ)  = Gamma(a + (n + n_p)/2, b + ½(R̂ + t_p − 2mᵀc_p + tr(A_p(S + mmᵀ))))
    R̂ = max(z_yy − 2mᵀμ_A K⁻¹ z_xy + tr(E[A K⁻¹ A](S + mmᵀ)), R_min)

R̂ is the expected private residual (c − Aw)ᵀK⁻¹(c − Aw) + R of the sampler's λ-conditional with the released
values in place of (c, t); it is floored at R_min = 2(a + n/2)/λ_max·… (see :func:`fit_gaussian`) because a
noisy z_yy can make it negative.  E[A K⁻¹ A] = μ_A K⁻¹ μ_A + (T-terms) is exact for independent entries.

In the noise-free limit (b = 0: T = 0, μ_A = K = Z) these are exactly the updates of ``dpexp.models.vb.fit_vb`` on
the summed statistics, so both give the same posterior.  With noise the approximation is validated against the
Gibbs sampler in tests/models/test_noise_aware_fast.py and docs/noise_aware.md.  Cost: two d×d LU solves per
iteration and problem.  The λ update is a damped step in log λ whose length halves for a problem each time its
direction flips: undamped, the λ ↔ R̂ feedback 2-cycles on some noisy releases (6 % of the n = 100, ε = 1 releases
of the coverage study); the fixed point is the same.

The loop-invariant terms (the plug-in K, its inverse, E[A K⁻¹ A]) are numpy over the batch; the iterations run per
problem in a compiled loop (numba, cached on disk), each problem until its own convergence test passes, so a
problem's result does not depend on the others in its batch.  As numpy arrays over the batch, the ~40 calls an
iteration and the per-matrix LAPACK calls on 10 × 10 systems were the loop's cost, not its arithmetic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np
from scipy import special

from dpexp.models.gram_prior import GramPrior, flat_gram_prior
from dpexp.models.noise_aware import ExactStats, NoisyStats, _sym, plugin_gram
from dpexp.models.vb import PAPER_PRIOR


@dataclass
class GaussianPosterior:
    """q(w) = N(mean, cov) (…, d), (…, d, d) and the means of q(λ), q(λ0) (…)."""

    mean: np.ndarray
    cov: np.ndarray
    E_lam: np.ndarray
    E_lam0: np.ndarray
    n_iter: int
    converged: np.ndarray

    def sd(self) -> np.ndarray:
        return np.sqrt(np.diagonal(self.cov, axis1=-2, axis2=-1))

    def interval(self, level: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
        """Equal-tailed normal credible interval of every coefficient (lower, upper), each (…, d)."""
        if not 0 < level < 1:
            raise ValueError(f"level must be in (0, 1), got {level}")
        z = float(special.ndtri(0.5 + level / 2))
        return self.mean - z * self.sd(), self.mean + z * self.sd()

    def predict_interval(self, X: np.ndarray, level: float = 0.9) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(mean, lower, upper) of the regression function xᵀw at rows X (…, m, d) or (m, d), each (…, m)."""
        X = np.asarray(X, dtype=float)
        z = float(special.ndtri(0.5 + level / 2))
        if X.ndim > 2:
            mu = np.einsum("...md,...d->...m", X, self.mean)
            var = np.einsum("...md,...de,...me->...m", X, self.cov, X)
        else:
            mu = self.mean @ X.T
            var = np.einsum("md,...de,me->...m", X, self.cov, X)
        sd = np.sqrt(np.maximum(var, 0.0))
        return mu, mu - z * sd, mu + z * sd


def _expected_AKA(muA: np.ndarray, T: np.ndarray, Kinv: np.ndarray) -> np.ndarray:
    """E[A K⁻¹ A] for independent entries A_jk ~ N(μ_jk, T_jk) (j ≤ k, mirrored):
    μK⁻¹μ + K⁻¹ ∘ T + diag(Σ_m K⁻¹_mm T_jm) − diag(K⁻¹_jj T_jj)."""
    kd = np.diagonal(Kinv, axis1=-2, axis2=-1)
    extra = Kinv * T
    diag = np.einsum("...jm,...m->...j", T, kd) - kd * np.diagonal(T, axis1=-2, axis2=-1)
    return muA @ Kinv @ muA + extra + diag[..., :, None] * np.eye(muA.shape[-1])


def _terms(stats: NoisyStats, public: ExactStats | None, gram_prior: GramPrior | None, prior: tuple) -> tuple:
    """The loop-invariant terms of ``fit_gaussian`` (module docstring): the inputs broadcast to the batch, T and
    μ_A of the integrated-out A, the plug-in K, E[A K⁻¹ A] and μ_A K⁻¹ z_xy; shared with the tests' plain loop."""
    Z = _sym(np.asarray(stats.XX, dtype=float))
    d = Z.shape[-1]
    public = public if public is not None else ExactStats.empty(d)
    gram_prior = gram_prior if gram_prior is not None else flat_gram_prior(d)
    zxy = np.asarray(stats.Xy, float)
    batch = np.broadcast_shapes(Z.shape[:-2], zxy.shape[:-1], np.shape(stats.yy), np.shape(stats.n),
                                np.shape(stats.b_xx), np.shape(stats.b_xy), np.shape(stats.b_yy),
                                np.shape(public.XX)[:-2], np.shape(public.Xy)[:-1], np.shape(public.yy),
                                np.shape(public.n), np.shape(gram_prior.mean)[:-2], np.shape(gram_prior.var)[:-2],
                                *(np.shape(p) for p in prior))

    def bc(x, core):
        x = np.asarray(x, dtype=float)
        shape = batch + x.shape[x.ndim - core:] if core else batch
        return x if x.shape == shape else np.broadcast_to(x, shape)   # (already that shape: the same values)

    Z, zxy, zyy, n = bc(Z, 2), bc(zxy, 1), bc(stats.yy, 0), bc(stats.n, 0)
    bxx, bxy = bc(stats.b_xx, 0), bc(stats.b_xy, 0)
    Ap, cp, tp, n_p = bc(_sym(np.asarray(public.XX, float)), 2), bc(public.Xy, 1), bc(public.yy, 0), bc(public.n, 0)
    m0, s2 = bc(gram_prior.mean, 2), bc(gram_prior.var, 2)
    a, b, a0, b0 = (bc(p, 0) for p in prior)

    v = 2.0 * bxx[..., None, None] ** 2
    ip = 1.0 / s2
    with np.errstate(divide="ignore", invalid="ignore"):
        T = np.where(v > 0, 1.0 / (ip + 1.0 / np.where(v > 0, v, 1.0)), 0.0)
        muA = np.where(v > 0, T * (ip * m0 + Z / np.where(v > 0, v, 1.0)), Z)
    K = plugin_gram(Z, GramPrior(m0, s2), bxx)
    Kinv = np.linalg.inv(K)
    EAKA = _expected_AKA(muA, T, Kinv)
    kz = ((muA @ Kinv) @ zxy[..., None])[..., 0]          # μ_A K⁻¹ z_xy (constant)
    muAT = np.swapaxes(muA, -1, -2)
    return d, batch, zxy, zyy, n, bxy, Ap, cp, tp, n_p, (a, b, a0, b0), T, muA, K, EAKA, kz, muAT


def _loop_constants(d: int, batch: tuple, terms: tuple) -> list[np.ndarray]:
    """``_terms``' values the loop reads and the constants derived from them (2b_xy² per diagonal entry of Σ̄,
    [z_yy; t_p], the residual floor R_min and the Gamma shapes of q(λ), q(λ0)), each flattened to (B, …) (ZT to
    (2, B)) and C-contiguous: the layout of a batch of these problems alone."""
    _, _, zxy, zyy, n, bxy, Ap, cp, tp, n_p, (a, b, a0, b0), T, muA, K, EAKA, kz, _ = terms
    B = math.prod(batch)
    R_min = 1e-3 * np.maximum(n - d, 1.0) * b / a
    q_lam = a + 0.5 * (n + n_p)
    q_lam0 = a0 + 0.5 * d
    Vxy = 2.0 * bxy[..., None] ** 2 + np.zeros(d)
    ZT = np.stack([zyy, tp])

    def flat(x: np.ndarray, core: int) -> np.ndarray:
        return np.ascontiguousarray(np.reshape(x, (B,) + x.shape[x.ndim - core:]))

    return ([flat(x, 2) for x in (T, muA, K, EAKA, Ap)] + [flat(x, 1) for x in (zxy, cp, kz, Vxy)]
            + [np.ascontiguousarray(np.reshape(ZT, (2, B)))] + [flat(x, 0) for x in (R_min, q_lam, b, b0, q_lam0)])


_jit = numba.njit(cache=True, error_model="numpy")   # IEEE arithmetic: x/0 is ±inf or NaN, as in numpy


@_jit
def _lu_solve(M, R, X, LU, piv):
    """X = M⁻¹ R (M (d, d), R (d, k)) by Gaussian elimination with partial pivoting (LU in ``LU``, row order in
    ``piv``); False where a pivot is exactly 0 (M singular: X is not written)."""
    d = M.shape[0]
    LU[:] = M
    for i in range(d):
        piv[i] = i
    for c in range(d):
        p, big = c, abs(LU[c, c])
        for r in range(c + 1, d):
            if abs(LU[r, c]) > big:
                p, big = r, abs(LU[r, c])
        if big == 0.0:
            return False
        if p != c:
            for j in range(d):
                LU[c, j], LU[p, j] = LU[p, j], LU[c, j]
            piv[c], piv[p] = piv[p], piv[c]
        for r in range(c + 1, d):
            f = LU[r, c] / LU[c, c]
            LU[r, c] = f
            for j in range(c + 1, d):
                LU[r, j] -= f * LU[c, j]
    k = R.shape[1]
    # the substitutions row by row over all right-hand sides at once (contiguous rows: the inner loops vectorise)
    for i in range(d):                           # forward: L Y = P R
        X[i] = R[piv[i]]
        for j in range(i):
            f = LU[i, j]
            for c in range(k):
                X[i, c] -= f * X[j, c]
    for i in range(d - 1, -1, -1):               # back: U X = Y
        for j in range(i + 1, d):
            f = LU[i, j]
            for c in range(k):
                X[i, c] -= f * X[j, c]
        f = LU[i, i]
        for c in range(k):
            X[i, c] /= f
    return True


@_jit
def _nanmax(a, b):
    """np.maximum of two floats: NaN if either is NaN."""
    if a != a or b != b:
        return np.nan
    return a if a > b else b


@_jit
def _iterate(T, muA, K, EAKA, Ap, zxy, cp, kz, Vxy, ZT, R_min, q_lam, b, b0, q_lam0, E0, tol, max_iter):
    """The coordinate updates of the module docstring for every problem of the flattened batch, each until its own
    change (relative change of E[λ] and E[λ0], max |Δm| / max |m|) is below ``tol`` or ``max_iter``, a converged
    problem keeping that iteration's values.  Returns (m (B, d), S (B, d, d), E (2, B), converged (B,), iterations
    (B,), singular (B,): a solve met an exactly singular matrix, the problem's values are then NaN)."""
    B, d = zxy.shape
    M_out, S_out = np.empty((B, d)), np.empty((B, d, d))
    E_out = np.empty((2, B))
    conv, its, sing = np.zeros(B, np.bool_), np.zeros(B, np.int64), np.zeros(B, np.bool_)
    m, m_new, w2, Sd, h = np.empty(d), np.empty(d), np.empty(d), np.empty(d), np.empty(d)
    S, H, G, Prec, X, LU = (np.empty((d, d)), np.empty((d, d)), np.empty((d, d)), np.empty((d, d)),
                            np.empty((d, d)), np.empty((d, d)))
    eye = np.eye(d)
    piv = np.empty(d, np.int64)
    for q in range(B):
        Tq, muAq, Kq, EAKAq, Apq = T[q], muA[q], K[q], EAKA[q], Ap[q]
        el, el0 = E0[0, q], E0[1, q]
        m[:] = 0.0
        for i in range(d):                       # the prior: m = 0, S = I / E[λ0]
            for j in range(d):
                S[i, j] = eye[i, j] / el0
        alpha, prev_step = 1.0, 0.0
        it = 0
        done = False
        for it in range(1, max_iter + 1):
            # Σ̄ = K/E[λ] + 2b_xy² I + E[W T Wᵀ] (T ∘ (S + m mᵀ) off the diagonal, Σ_k T_jk E[w_k²] on it), symmetrised
            for i in range(d):
                w2[i] = m[i] * m[i]
                Sd[i] = S[i, i]
            for i in range(d):
                for j in range(d):
                    H[i, j] = Kq[i, j] / el + Tq[i, j] * (m[i] * m[j]) + Tq[i, j] * S[i, j]
            for i in range(d):
                tw, ts = 0.0, 0.0
                for k in range(d):
                    tw += Tq[i, k] * w2[k]
                    ts += Tq[i, k] * Sd[k]
                H[i, i] += Vxy[q, i] + (tw - Tq[i, i] * w2[i]) + (ts - Tq[i, i] * Sd[i])
            for i in range(d):
                for j in range(i + 1, d):
                    v = 0.5 * (H[i, j] + H[j, i])
                    H[i, j], H[j, i] = v, v
            if not _lu_solve(H, muAq, G, LU, piv):   # G = Σ̄⁻¹ μ_A
                sing[q] = True
                break
            # Prec = E[λ0] I + μ_Aᵀ G + E[λ] A_p, symmetrised; S = Prec⁻¹, symmetrised
            for i in range(d):                   # row i of μ_Aᵀ G = Σ_k μ_A[k, i] G[k, :]
                for j in range(d):
                    Prec[i, j] = el * Apq[i, j]
                for k in range(d):
                    f = muAq[k, i]
                    for j in range(d):
                        Prec[i, j] += f * G[k, j]
                Prec[i, i] += el0
            for i in range(d):
                for j in range(i + 1, d):
                    v = 0.5 * (Prec[i, j] + Prec[j, i])
                    Prec[i, j], Prec[j, i] = v, v
            if not _lu_solve(Prec, eye, X, LU, piv):
                sing[q] = True
                break
            for i in range(d):
                for j in range(d):
                    S[i, j] = 0.5 * (X[i, j] + X[j, i])
            # m = S (Gᵀ z_xy + E[λ] c_p)
            for i in range(d):
                v = 0.0
                for k in range(d):
                    v += G[k, i] * zxy[q, k]
                h[i] = v + el * cp[q, i]
            for i in range(d):
                v = 0.0
                for k in range(d):
                    v += S[i, k] * h[k]
                m_new[i] = v
            # the residuals with E[w wᵀ] = S + m mᵀ, and the sums of q(λ0)
            mkz, mcp, mm, trS, ea, ep = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
            for i in range(d):
                mkz += m_new[i] * kz[q, i]
                mcp += m_new[i] * cp[q, i]
                mm += m_new[i] * m_new[i]
                trS += S[i, i]
                for j in range(d):
                    eww = S[i, j] + m_new[i] * m_new[j]
                    ea += EAKAq[i, j] * eww
                    ep += Apq[i, j] * eww
            R_hat = _nanmax(ZT[0, q] - 2.0 * mkz + ea, R_min[q])
            pub = ZT[1, q] - 2.0 * mcp + ep
            # damped λ step in log space; the step halves whenever its direction flips (the undamped λ ↔ R̂ feedback
            # has 2-cycles on some noisy releases)
            step = np.log(q_lam[q] / (b[q] + 0.5 * (R_hat + pub))) - np.log(el)
            if step * prev_step < 0:
                alpha *= 0.5
            prev_step = step
            new_el = el * np.exp(alpha * step)
            new_el0 = q_lam0[q] / (b0[q] + 0.5 * (mm + trS))
            dm, am = 0.0, 0.0
            for i in range(d):
                dm = _nanmax(dm, abs(m_new[i] - m[i]))
                am = _nanmax(am, abs(m_new[i]))
            change = _nanmax(_nanmax(abs(new_el - el) / new_el, abs(new_el0 - el0) / new_el0), dm / (am + 1e-300))
            m[:] = m_new
            el, el0 = new_el, new_el0
            if change < tol:                     # NaN: not converged
                done = True
                break
        its[q] = it
        conv[q] = done
        if sing[q]:
            M_out[q] = np.nan
            S_out[q] = np.nan
            E_out[0, q], E_out[1, q] = np.nan, np.nan
        else:
            M_out[q] = m
            S_out[q] = S
            E_out[0, q], E_out[1, q] = el, el0
    return M_out, S_out, E_out, conv, its, sing


def fit_gaussian(stats: NoisyStats, public: ExactStats | None = None, gram_prior: GramPrior | None = None,
                 prior: tuple = PAPER_PRIOR, tol: float = 1e-6,
                 max_iter: int = 500) -> GaussianPosterior:
    """The errors-in-variables Gaussian approximation of the noise-aware posterior (module docstring), batched
    over the leading axes of the inputs (same arguments as ``noise_aware.sample_posterior`` without the sampler
    settings).  The residual floor is R_min = 1e-3 · (n − d) · b/a (a thousandth of the residual sum of squares the
    prior mean of λ implies).

    Every problem's result is that of its own iterations (``_iterate``): it stops when its own convergence test
    passes, so it does not depend on which others are in the batch; ``n_iter`` is the most iterations a problem of
    the batch took.  A system that is exactly singular raises ``numpy.linalg.LinAlgError``, as numpy's solve."""
    terms = _terms(stats, public, gram_prior, prior)
    d, batch = terms[0], terms[1]
    T, muA, K, EAKA, Ap, zxy, cp, kz, Vxy, ZT, R_min, q_lam, b, b0, q_lam0 = _loop_constants(d, batch, terms)
    B = math.prod(batch)
    a_, b_, a0_, b0_ = terms[10]
    E0 = np.ascontiguousarray(np.stack([np.reshape(np.broadcast_to(a_ / b_, batch), B),
                                        np.reshape(np.broadcast_to(a0_ / b0_, batch), B)]))   # the prior means
    m, S, E, conv, its, sing = _iterate(T, muA, K, EAKA, Ap, zxy, cp, kz, Vxy, ZT, R_min, q_lam, b, b0, q_lam0,
                                        E0, float(tol), int(max_iter))
    if sing.any():
        raise np.linalg.LinAlgError(f"Singular matrix in the noise-aware Gaussian fit ({int(sing.sum())} of {B} "
                                    "problems)")
    return GaussianPosterior(mean=m.reshape(batch + (d,)), cov=S.reshape(batch + (d, d)),
                             E_lam=E[0].reshape(batch).copy(), E_lam0=E[1].reshape(batch).copy(),
                             n_iter=int(its.max()) if B else 0, converged=conv.reshape(batch))
