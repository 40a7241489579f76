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
Gibbs sampler in tests/models/test_noise_aware_fast.py and docs/noise_aware.md.  Cost: a few d×d solves per
iteration, batched.  The λ update is a damped step in log λ whose length halves for a problem each time its
direction flips: undamped, the λ ↔ R̂ feedback 2-cycles on some noisy releases (6 % of the n = 100, ε = 1 releases
of the coverage study); the fixed point is the same.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

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


#: np.sum / np.max without their Python wrappers (the same reductions; the loop calls them 7 times an iteration)
_add, _max = np.add.reduce, np.maximum.reduce


def _w_op_cov_eye(T: np.ndarray, Tdiag: np.ndarray, w: np.ndarray, eye: np.ndarray) -> np.ndarray:
    """``noise_aware._w_op_cov(T, w)`` to the bit, with diag(T) and I given: its diagonal term
    ``einsum("...i,ij->...ij", v, I)`` is 0 + v_i·I_ij (einsum accumulates into zeros), i.e. v·I + 0.0 (which turns
    −0 into +0 as einsum does) without einsum's generic loop.  The plain form of the E[WTWᵀ] term that
    :func:`fit_gaussian`'s loop assembles in place (its tests compare the two)."""
    w2 = w * w
    out = T * (w[..., :, None] * w[..., None, :])
    diag = (T @ w2[..., None])[..., 0] - Tdiag * w2
    return out + (diag[..., :, None] * eye + 0.0)


def _diag(M: np.ndarray) -> np.ndarray:
    """The writable diagonal (…, d) of a C-contiguous stack of d×d matrices (a strided view)."""
    d = M.shape[-1]
    return M.reshape(M.shape[:-2] + (d * d,))[..., ::d + 1]


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


def _start(batch: tuple, d: int, E_lam0: np.ndarray, eye: np.ndarray) -> tuple:
    """The loop's starting point: m = 0, S = I / E[λ0] (the prior), nothing converged, step lengths 1."""
    m = np.zeros(batch + (d,))
    S = eye / E_lam0[..., None, None]
    converged = np.zeros(batch, dtype=bool)
    S_prev = np.broadcast_to(S, batch + (d, d))
    alpha, prev_step = np.ones(batch), np.zeros(batch)
    return m, S, converged, S_prev, alpha, prev_step


#: the loop drops its converged (frozen) problems once they are this share of the problems it carries (each drop
#: copies the others' arrays, so not for every problem that converges)
_DROP_SHARE = 0.25

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


def fit_gaussian(stats: NoisyStats, public: ExactStats | None = None, gram_prior: GramPrior | None = None,
                 prior: tuple = PAPER_PRIOR, tol: float = 1e-6,
                 max_iter: int = 500) -> GaussianPosterior:
    """The errors-in-variables Gaussian approximation of the noise-aware posterior (module docstring), batched
    over the leading axes of the inputs (same arguments as ``noise_aware.sample_posterior`` without the sampler
    settings).  The residual floor is R_min = 1e-3 · (n − d) · b/a (a thousandth of the residual sum of squares the
    prior mean of λ implies).

    Every problem's result is that of its own iterations: a problem that has converged is frozen (its values kept
    as they were when it converged), and the loop goes on with the others.  The batch is iterated flattened to one
    axis, and once the frozen problems are ``_DROP_SHARE`` of those it still carries their results are written out
    and the loop's arrays are taken again without them (a batch iterates until its slowest problem converges:
    gdsc_eps2's narplr batches of 111 drugs ~22 iterations, one 43, while a problem needs ~20; the frozen problems
    were ~10 % of the loop's work).  Each problem's arithmetic — elementwise,
    one BLAS or LAPACK call per matrix, one reduction per row — does not depend on which others are in the batch,
    so the results are those of the whole batch iterated together (tests/models/test_noise_aware_fast.py)."""
    terms = _terms(stats, public, gram_prior, prior)
    d, batch = terms[0], terms[1]
    eye = np.eye(d)
    cst = _loop_constants(d, batch, terms)
    B = math.prod(batch)
    T, muA, K, EAKA, Ap, zxy, cp, kz, Vxy, ZT, R_min, q_lam, b, b0, q_lam0 = cst
    E = np.empty((2, B))                                         # [E λ; E λ0], at the prior means
    E[0, ...], E[1, ...] = np.reshape(terms[10][0] / terms[10][1], B), np.reshape(terms[10][2] / terms[10][3], B)
    E_lam, E_lam0 = E[0, ...], E[1, ...]
    m, S, converged, S_prev, alpha, prev_step = _start((B,), d, E_lam0, eye)
    # the results by problem; ``idx``: the problems the loop carries (rows of its arrays)
    res_m, res_S, res_E, res_conv = np.empty((B, d)), np.empty((B, d, d)), np.empty((2, B)), np.zeros(B, dtype=bool)
    idx = np.arange(B)
    it = 0
    first = True
    done = 0                                                     # frozen problems among those the loop carries
    for it in range(1, max_iter + 1):
        if first:
            # the loop's numpy calls are its cost besides the two batched LAPACK calls (tens of problems, ~20
            # iterations): the d×d terms go to buffers allocated once per set of problems (their diagonals are views
            # taken once), the vector sums Σ m kz, Σ m c_p, Σ m², tr S of an iteration are one reduction of a
            # (4, …, d) buffer and the two d×d sums one of a (2, …, d, d) buffer (each row's sum the reduction of that
            # row alone); every value the float of the plain updates (tests/models/test_noise_aware_fast.py compares
            # them bit for bit)
            k = idx.size
            Tdiag, muAT = np.diagonal(T, axis1=-2, axis2=-1), np.swapaxes(muA, -1, -2)
            out, TS, C, Sig, H, X, elAp, Prec, Eww2 = (np.empty((k, d, d)) for _ in range(9))
            out_d, TS_d, C_d, Sig_d, X_d, elAp_d, Prec_d = (_diag(x) for x in (out, TS, C, Sig, X, elAp, Prec))
            SigT, PrecT = Sig.swapaxes(-1, -2), Prec.swapaxes(-1, -2)   # transposed views of the buffers
            V = np.empty((4, k, d))
            W = np.empty((2, k, d, d))
            NEW = np.empty((2, k))                               # [new E λ; new E λ0]
            D = np.empty((2, k, d))
            mm = m[..., :, None] * m[..., None, :]                # m mᵀ of the current m
            first = False
        # Σ̄ = K/E[λ] + 2b_xy² I + E[WTWᵀ] (``_w_op_cov_eye`` + T∘S + diag(T diag S − diag T ∘ diag S)), assembled
        # without d×d products with I: off the diagonal the I-terms only add zeros (for finite b_xy, E[λ0]), i.e.
        # turn −0 into +0 (one ``+ 0.0``); the diagonal is summed from its own terms in the plain form's order and
        # written in place
        Sd = S.diagonal(0, -2, -1)
        w2 = m * m
        np.multiply(T, mm, out=out)
        np.multiply(T, S, out=TS)
        el = E_lam[..., None, None]
        np.divide(K, el, out=C)
        np.add(out, TS, out=Sig)
        np.add(C, Sig, out=Sig)
        np.add(Sig, 0.0, out=Sig)
        dW = (T @ w2[..., None])[..., 0] - Tdiag * w2
        e2 = (T @ Sd[..., None])[..., 0] - Tdiag * Sd
        Sig_d[...] = (C_d + Vxy) + (((out_d + (dW + 0.0)) + TS_d) + e2)
        np.add(Sig, SigT, out=H)
        np.multiply(0.5, H, out=H)                                # _sym(Σ̄)
        G = np.linalg.solve(H, muA)                               # Σ̄⁻¹ μ_A
        # Prec = E[λ0] I + μ_Aᵀ G + E[λ] A_p, the same way
        np.matmul(muAT, G, out=X)
        np.multiply(el, Ap, out=elAp)
        np.add(X, elAp, out=Prec)
        np.add(Prec, 0.0, out=Prec)
        Prec_d[...] = (E_lam0[..., None] + X_d) + elAp_d
        np.add(Prec, PrecT, out=H)
        np.multiply(0.5, H, out=H)
        S = np.linalg.inv(H)
        S = np.add(S, S.swapaxes(-1, -2))
        np.multiply(0.5, S, out=S)                                # _sym(Prec⁻¹)
        h = (G.swapaxes(-1, -2) @ zxy[..., None])[..., 0] + E_lam[..., None] * cp
        m_new = (S @ h[..., None])[..., 0]
        mm_new = m_new[..., :, None] * m_new[..., None, :]
        np.add(S, mm_new, out=Eww2)                               # E[wwᵀ]
        np.multiply(m_new, kz, out=V[0])
        np.multiply(m_new, cp, out=V[1])
        np.multiply(m_new, m_new, out=V[2])
        np.copyto(V[3], S.diagonal(0, -2, -1))
        sv = _add(V, axis=-1)                                     # [Σ m kz; Σ m c_p; mᵀm; tr S]
        np.multiply(EAKA, Eww2, out=W[0])
        np.multiply(Ap, Eww2, out=W[1])
        rp = ZT - 2.0 * sv[:2] + _add(W, axis=(-1, -2))           # [R̂ before its floor; public residual]
        R_hat = np.maximum(rp[0], R_min)
        # damped λ step in log space; the step halves for a problem whenever its direction flips (the undamped
        # λ ↔ R̂ feedback has 2-cycles on some noisy releases)
        step = np.log(q_lam / (b + 0.5 * (R_hat + rp[1]))) - np.log(E_lam)
        np.multiply(alpha, 0.5, out=alpha, where=step * prev_step < 0)   # alpha is this loop's own array
        prev_step = step
        np.multiply(E_lam, np.exp(alpha * step), out=NEW[0, ...])
        np.divide(q_lam0, b0 + 0.5 * (sv[2] + sv[3]), out=NEW[1, ...])
        rel = np.abs(NEW - E) / NEW
        np.subtract(m_new, m, out=D[0])
        np.copyto(D[1], m_new)
        mx = _max(np.abs(D, out=D), axis=-1)                      # [max |Δm|; max |m|]
        change = np.maximum(np.maximum(rel[0], rel[1]), mx[0] / (mx[1] + 1e-300))
        # a converged problem is frozen: m_new, mm_new, S are this iteration's own arrays, so the frozen problems'
        # values are copied back into them (mm of a frozen m is its mm as kept); E and NEW swap buffers
        if done:
            np.copyto(m_new, m, where=converged[..., None])
            np.copyto(mm_new, mm, where=converged[..., None, None])
            np.copyto(S, S_prev, where=converged[..., None, None])
            np.copyto(NEW, E, where=converged)
        m, mm = m_new, mm_new
        E, NEW = NEW, E                                           # NEW is written whole in the next iteration
        E_lam, E_lam0 = E[0, ...], E[1, ...]
        converged = converged | (change < tol)
        done = np.count_nonzero(converged)
        if done == idx.size:
            break
        S_prev = S
        if done and done >= _DROP_SHARE * idx.size:               # write the frozen ones out, go on without them
            at = idx[converged]
            res_m[at], res_S[at], res_E[:, at], res_conv[at] = m[converged], S[converged], E[:, converged], True
            keep = ~converged
            idx = idx[keep]
            T, muA, K, EAKA, Ap, zxy, cp, kz, Vxy = (x[keep] for x in (T, muA, K, EAKA, Ap, zxy, cp, kz, Vxy))
            ZT = ZT[:, keep]
            R_min, q_lam, b, b0, q_lam0, alpha, prev_step = (
                x[keep] for x in (R_min, q_lam, b, b0, q_lam0, alpha, prev_step))
            m, S = m[keep], S[keep]
            S_prev = S
            E = E[:, keep]
            E_lam, E_lam0 = E[0, ...], E[1, ...]
            converged = converged[keep]
            done = 0
            first = True
    res_m[idx], res_S[idx], res_E[:, idx], res_conv[idx] = m, S, E, converged
    return GaussianPosterior(mean=res_m.reshape(batch + (d,)), cov=res_S.reshape(batch + (d, d)),
                             E_lam=res_E[0].reshape(batch).copy(), E_lam0=res_E[1].reshape(batch).copy(),
                             n_iter=it, converged=res_conv.reshape(batch))
