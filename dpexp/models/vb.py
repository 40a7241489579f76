"""Bayesian linear regression with Gamma priors on both precisions, fitted by mean-field variational Bayes from
(possibly perturbed) sufficient statistics only.  This is the default ``vb`` engine of the proposed method.

Model (Honkela et al. 2018, Methods 4.1, Eqs. 2 and 6; a = b = a0 = b0 = 2 in Methods 4.5)::

    y_i | x_i, β, λ ~ N(x_iᵀβ, 1/λ),   β | λ0 ~ N(0, I/λ0),   λ ~ Gamma(a, b),   λ0 ~ Gamma(a0, b0)  (rate b)

The data enter only through the statistics S = nXX = Σ x_i x_iᵀ, r = nXy = Σ x_i y_i, t = nyy = Σ y_i² and n
(the sufficient-statistics likelihood, Eq. 7):  log p(y | X, β, λ) = n/2 log λ − λ/2 (βᵀSβ − 2βᵀr + t) + const.

Variational family q(β) q(λ) q(λ0) with q(β) = N(m, Σ) (full covariance) and Gamma q(λ), q(λ0).  The
coordinate updates are closed form (standard conjugate-exponential VB, e.g. Bishop 2006 §10.3 extended to a
Gamma prior on λ):

    Σ = (E[λ0] I + E[λ] S)⁻¹,      m = E[λ] Σ r
    q(λ)  = Gamma(a + n/2,  b + ½ E_q[R]),   E_q[R] = t − 2 mᵀr + tr(S (Σ + m mᵀ))   (expected residual)
    q(λ0) = Gamma(a0 + d/2, b0 + ½ (mᵀm + tr Σ))

Everything is done in the eigenbasis of S = V diag(s) Vᵀ, where Σ and m are diagonal/elementwise, so after one
batched ``eigh`` each iteration costs O(d) per problem and every problem of a batch of arbitrary leading shape
(drugs × repeats × sizes × grid points) is updated at once.  Iteration stops when the relative change of E[λ] and
E[λ0] is below ``tol`` for every problem (or after ``max_iter``; non-converged problems are flagged).
``fit_vb_each`` fits B problems as arrays too, but each stops at its own test: each one's fit alone, to the bit.

Robustness to perturbed statistics (post-processing of a DP release, so privacy is unaffected).  Noisy
statistics need not be those of any data set: nXX can be indefinite, and even with nXX ⪰ 0 a component of nXy
along a (near-)null direction of nXX makes the exact posterior improper (the likelihood is then linear in β
there, and q(λ0) → 0, m → ∞ under VB), while a too small nyy makes the expected residual negative.  We do:

1. ``project="joint"`` (default): symmetrise and project the augmented Gram matrix
   M = [[nXX, nXy], [nXyᵀ, nyy]] ((d+1) × (d+1)) onto the PSD cone by flooring its eigenvalues at 0 (the nearest
   PSD matrix in Frobenius norm), and use its blocks as (nXX, nXy, nyy).  A PSD M is the Gram matrix of some data
   [X y], so the residual R(β) = [β; −1]ᵀ M [β; −1] ≥ 0 for every β, nXy lies in the range of nXX and the
   posterior is proper.  Where M is already positive definite the floor leaves it as it is, which S's
   eigendecomposition certifies (S positive definite and its Schur complement t − rᵀS⁻¹r > 0): those problems
   use that decomposition and skip the projection's two (``_eigenbasis``).
   ``project="xx"``: only nXX is symmetrised and floored at 0 (what
   ``dpexp.models.bayes_lr.posterior_mean_fixed`` does); offered for comparison, it can diverge on inconsistent
   statistics (non-converged problems are flagged).
2. In addition, the expected residual is floored at zero, E_q[R] ← max(E_q[R], 0) (a no-op after the joint
   projection up to rounding), so the rate of q(λ) is always ≥ b > 0 and E[λ] ≤ (a + n/2)/b.
3. n is public under bounded (replace-one) DP and enters exactly.

The prediction is the posterior mean x_testᵀ m (Eq. 8 with the exact mean instead of Monte Carlo draws).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Gamma(2, 2) prior hyper-parameters of the paper (Methods 4.5): mean 1, variance 1/2.
PAPER_PRIOR = (2.0, 2.0, 2.0, 2.0)


@dataclass
class VBResult:
    """Fitted variational posterior; all arrays have the batch shape ``…`` of the inputs.

    ``mean`` (…, d) posterior-mean weights; ``cov`` (…, d, d) covariance of q(β) (only if requested);
    ``a_lam``/``b_lam`` and ``a_lam0``/``b_lam0`` shape/rate of q(λ), q(λ0); ``n_iter`` iterations used;
    ``converged`` (…) bool; ``n_floored`` (…) number of negative eigenvalues raised to 0 by the projection;
    ``resid_floored`` (…) whether the expected residual hit its floor at the last iteration.
    """

    mean: np.ndarray
    a_lam: np.ndarray
    b_lam: np.ndarray
    a_lam0: np.ndarray
    b_lam0: np.ndarray
    n_iter: int
    converged: np.ndarray
    n_floored: np.ndarray
    resid_floored: np.ndarray
    cov: np.ndarray | None = None

    @property
    def E_lam(self) -> np.ndarray:
        return self.a_lam / self.b_lam

    @property
    def E_lam0(self) -> np.ndarray:
        return self.a_lam0 / self.b_lam0

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Posterior-mean predictions x ᵀ m: X (…, n_test, d) or (n_test, d) → (…, n_test)."""
        return np.einsum("...nd,...d->...n", X, self.mean) if X.ndim > 2 else self.mean @ X.T


def _fsum(x: list[float]) -> float:
    """``np.add.reduce`` of a float64 vector with Python floats (the same IEEE double arithmetic) in numpy's order:
    its identity 0.0 plus the pairwise sum of the entries (``_pairwise_sum``) — the same float, signed zeros
    included (numpy sums only −0 entries to +0), tested against numpy at lengths 1-300."""
    return 0.0 + _pairwise_sum(x, 0, len(x))


def _pairwise_sum(x: list[float], lo: int, n: int) -> float:
    """numpy's pairwise summation of x[lo:lo + n]: from −0.0 one by one below 8 entries, eight running sums up to
    128, halves (multiples of 8) beyond."""
    if n < 8:
        res = -0.0
        for i in range(lo, lo + n):
            res += x[i]
        return res
    if n <= 128:
        r0, r1, r2, r3, r4, r5, r6, r7 = x[lo:lo + 8]
        i, m = lo + 8, lo + n - n % 8
        while i < m:
            r0 += x[i]
            r1 += x[i + 1]
            r2 += x[i + 2]
            r3 += x[i + 3]
            r4 += x[i + 4]
            r5 += x[i + 5]
            r6 += x[i + 6]
            r7 += x[i + 7]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        for j in range(i, lo + n):
            res += x[j]
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return _pairwise_sum(x, lo, n2) + _pairwise_sum(x, lo + n2, n - n2)


def _iterate_one(s: list[float], rr: list[float], t: float, a_lam: float, a_lam0: float, e0: float, e1: float,
                 b: float, b0: float, tol: float, max_iter: int) -> tuple:
    """``fit_vb``'s loop for one problem (batch shape ()) in Python floats: each value the float the array loop
    computes (the same IEEE operations in the same order, numpy's summation order by ``_fsum``), at a
    fraction of the cost of ~20 numpy calls on d-vectors an iteration.  Returns what the array loop leaves:
    (iterations, [E λ; E λ0], [b_λ; b_λ0], [rel λ; rel λ0] as (2, 1) arrays, the last E_q[R] as a (1,) array).
    Raises ZeroDivisionError where numpy would divide by zero (the caller then runs the array loop)."""
    it, raw, r0, r1, rel0, rel1 = 0, 0.0, b, b0, 0.0, 0.0
    for it in range(1, max_iter + 1):
        var = [1.0 / (e1 + e0 * sk) for sk in s]                    # diagonal of Σ in the eigenbasis
        mk = [e0 * rk * vk for rk, vk in zip(rr, var)]               # m in the eigenbasis
        q = [vk + mj * mj for vk, mj in zip(var, mk)]
        raw = (t - 2.0 * _fsum([mj * rk for mj, rk in zip(mk, rr)])
               + _fsum([sk * qk for sk, qk in zip(s, q)]))            # E_q[R]
        r0 = b + 0.5 * (raw if (raw >= 0.0 or raw != raw) else 0.0)  # np.maximum(raw, 0.0): NaN and −0 kept
        r1 = b0 + 0.5 * _fsum(q)
        n0, n1 = a_lam / r0, a_lam0 / r1
        rel0, rel1 = abs(n0 - e0) / n0, abs(n1 - e1) / n1
        e0, e1 = n0, n1
        if rel0 < tol and rel1 < tol:   # NaN: not converged
            break
    return (it, np.array([[e0], [e1]]), np.array([[r0], [r1]]), np.array([[rel0], [rel1]]), np.array([raw]))


#: the shortcut of the joint projection (``_eigenbasis``) takes the problems whose nXX is well conditioned (smallest
#: eigenvalue above this fraction of the largest) and whose Schur complement nyy − nXyᵀ nXX⁻¹ nXy is above this
#: fraction of |nyy|: their M is positive definite with a margin far above rounding, so flooring its eigenvalues at 0
#: would leave it as it is.  The problems near the PSD boundary take the projection itself
_SHORTCUT_MARGIN = 1e-10


def _eigenbasis(nXX, nXy, nyy, n, project: str, eig: tuple[np.ndarray, np.ndarray] | None = None) -> tuple:
    """``fit_vb``'s set-up (module docstring, item 1): the statistics broadcast to their batch shape, symmetrised,
    projected (``project``) and rotated into the eigenbasis of nXX.  Returns (batch, d, s, V, rr, t, nn, n_floored).

    ``project="joint"``: M = [[S, r], [rᵀ, t]] is positive semi-definite — the projection's floor leaves it as it
    is — exactly when, for a positive definite S = V diag(s) Vᵀ, the Schur complement t − rᵀS⁻¹r = t − Σ_k (Vᵀr)_k²/s_k
    is ≥ 0.  So S's eigendecomposition comes first (``eig``: the caller's (s, V) of S's symmetric part, e.g.
    ``ridge_stabilised``'s, else one ``eigh``), and only the problems without that certificate (with the margin
    ``_SHORTCUT_MARGIN``) pay the projection: ``eigh`` of M, the floor, and ``eigh`` of the projected S.  Each
    problem's path depends on its own values only, so a problem gives the same floats alone or in any batch."""
    S = np.asarray(nXX, dtype=float)
    r = np.asarray(nXy, dtype=float)
    d = S.shape[-1]
    batch = np.broadcast_shapes(S.shape[:-2], r.shape[:-1], np.shape(nyy), np.shape(n))
    S = np.broadcast_to(0.5 * (S + np.swapaxes(S, -1, -2)), batch + (d, d))
    r = np.broadcast_to(r, batch + (d,))
    t = np.broadcast_to(np.asarray(nyy, dtype=float), batch)
    nn = np.broadcast_to(np.asarray(n, dtype=float), batch)

    if project == "joint":
        if eig is None:
            s, V = np.linalg.eigh(S)                      # S = V diag(s) Vᵀ, eigenvalues ascending
        else:
            s, V = (np.array(np.broadcast_to(a, shape)) for a, shape in zip(eig, (batch + (d,), batch + (d, d))))
        rr = np.ascontiguousarray(np.einsum("...dk,...d->...k", V, r))   # r in the eigenbasis
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            schur = t - np.sum(rr * rr / s, axis=-1)
            psd = (s[..., 0] > _SHORTCUT_MARGIN * s[..., -1]) & (schur > _SHORTCUT_MARGIN * np.abs(t))
        floored = np.zeros(batch, dtype=np.intp)
        if not psd.all():   # the projection, for the problems without the certificate (flat views of the batch)
            low = np.flatnonzero(~psd.reshape(-1))
            t = np.array(t)
            Sl, rl, tl = S.reshape(-1, d, d)[low], r.reshape(-1, d)[low], t.reshape(-1)[low]
            M = np.empty((low.size, d + 1, d + 1))
            M[:, :d, :d] = Sl
            M[:, :d, d] = rl
            M[:, d, :d] = rl
            M[:, d, d] = tl
            w, U = np.linalg.eigh(M)
            floored.reshape(-1)[low] = np.sum(w < 0.0, axis=-1)
            M = (U * np.maximum(w, 0.0)[..., None, :]) @ np.swapaxes(U, -1, -2)
            sl, Vl = np.linalg.eigh(M[:, :d, :d])
            s.reshape(-1, d)[low] = np.maximum(sl, 0.0)   # rounding only
            V.reshape(-1, d, d)[low] = Vl
            rr.reshape(-1, d)[low] = np.einsum("...dk,...d->...k", Vl, M[:, :d, d])
            t.reshape(-1)[low] = M[:, d, d]
        n_floored = floored[()]
    elif project == "xx":
        s, V = np.linalg.eigh(S)                          # S = V diag(s) Vᵀ
        n_floored = np.sum(s < 0.0, axis=-1)
        s = np.maximum(s, 0.0)
        rr = np.einsum("...dk,...d->...k", V, r)          # r in the eigenbasis
    else:
        raise ValueError(f"project must be 'joint' or 'xx', got {project!r}")
    return batch, d, s, V, rr, t, nn, n_floored


def _posterior(E_lam: np.ndarray, E_lam0: np.ndarray, s: np.ndarray, V: np.ndarray, rr: np.ndarray,
               return_cov: bool) -> tuple:
    """The final q(β) = N(m, Σ) consistent with the final q(λ), q(λ0), back in the original basis: (mean, cov)."""
    var = 1.0 / (E_lam0[..., None] + E_lam[..., None] * s)
    mk = E_lam[..., None] * rr * var
    mean = np.einsum("...dk,...k->...d", V, mk)
    cov = (V * var[..., None, :]) @ np.swapaxes(V, -1, -2) if return_cov else None
    return mean, cov


def fit_vb(nXX: np.ndarray, nXy: np.ndarray, nyy: np.ndarray | float, n: np.ndarray | float,
           prior: tuple[float, float, float, float] = PAPER_PRIOR, tol: float = 1e-9, max_iter: int = 2000,
           project: str = "joint", return_cov: bool = False,
           eig: tuple[np.ndarray, np.ndarray] | None = None) -> VBResult:
    """Mean-field VB fit of the Gamma-prior model from statistics, batched over leading axes.

    Parameters
    ----------
    nXX : (…, d, d) Σ x xᵀ (may be perturbed: asymmetric or indefinite is fine, see the module docstring).
    nXy : (…, d) Σ x y.   nyy : (…) Σ y².   n : (…) number of rows (public under bounded DP).
    prior : (a, b, a0, b0) Gamma shape/rate of λ and λ0.
    tol : relative change of E[λ], E[λ0] that counts as converged.
    project : "joint" (PSD projection of the augmented Gram matrix) or "xx" (of nXX only); module docstring.
    eig : optional (s, V), an eigendecomposition of nXX's symmetric part with ascending eigenvalues (what
        ``ridge_stabilised(..., with_eig=True)`` returns beside its matrix), used by the joint projection instead of
        computing one (``_eigenbasis``).
    """
    a, b, a0, b0 = (float(v) for v in prior)
    batch, d, s, V, rr, t, nn, n_floored = _eigenbasis(nXX, nXy, nyy, n, project, eig)
    a_lam = a + 0.5 * nn                                  # shapes are fixed by the updates
    a_lam0 = np.full(batch, a0 + 0.5 * d)
    # the array loop: its numpy calls are its cost at the batch sizes of a run (tens of problems, tens to hundreds
    # of iterations), so each iteration makes as few as the values allow, every value the same float as the plain
    # updates: [E λ; E λ0] kept as a (2, …, 1) array (it broadcasts against the eigenbasis as it is), q(λ) and
    # q(λ0) updated as one array, the three sums Σ_k m_k r_k, Σ_k s_k (var_k + m_k²), Σ_k (var_k + m_k²) written
    # into one (3, …, d) buffer and reduced by one call (each row's sum the reduction of that row alone), the
    # convergence test one maximum over [rel λ; rel λ0] (NaN propagates: not converged, as before), and every
    # view of a buffer taken once
    one = None
    if batch == () and max_iter >= 1:   # one problem (e.g. a public-only posterior): the loop in Python floats
        try:
            one = _iterate_one(s.tolist(), rr.tolist(), float(t), float(a_lam), a0 + 0.5 * d, a / b, a0 / b0, b, b0,
                               tol, max_iter)
        except ZeroDivisionError:   # a zero precision or rate: numpy's inf/NaN arithmetic below, as always
            one = None
    if one is not None:
        it, E, rates, rel, raw = one
    else:
        nb = len(batch)
        shape_ = np.stack([np.broadcast_to(a_lam, batch), a_lam0])[..., None]    # [a + n/2; a0 + d/2]
        rate0 = np.array([b, b0]).reshape((2,) + (1,) * (nb + 1))                # [b; b0]
        E = np.stack([np.full(batch, a / b), np.full(batch, a0 / b0)])[..., None]  # [E λ; E λ0], at the prior means
        # buffers, each view taken once: SR = [s; rr] (E λ times both in one call), Q = [m; rr] (m times both: m²
        # and m∘rr in one call), Z = [m²; m∘rr; s∘(var + m²); var + m²] whose last three rows are the three sums'
        # terms (one reduction), E and the next E in two buffers swapped each iteration
        SR = np.stack([s, rr])
        A = np.empty_like(SR)
        A0, A1 = A[0], A[1]
        var = np.empty(batch + (d,))
        Q = np.empty((2,) + batch + (d,))
        Q[1] = rr
        Q0 = Q[0]
        Z = np.empty((4,) + batch + (d,))
        Z0, Z01, Z2, Z3, P = Z[0], Z[:2], Z[2], Z[3], Z[1:]
        sums = np.empty((3,) + batch + (1,))
        sums0, sums1 = sums[0], sums[1]
        stat = sums[1:]                                       # [max(E_q[R], 0); mᵀm + tr Σ] once sums1 is floored
        rates = np.empty((2,) + batch + (1,))
        tt = t[..., None]
        cur = (E, E[0], E[1])
        En = np.empty_like(E)
        nxt = (En, En[0], En[1])
        dE = np.empty_like(E)
        rel = raw = None
        it = 0
        with np.errstate(divide="ignore", invalid="ignore"):
            for it in range(1, max_iter + 1):
                E, el, e1 = cur
                np.multiply(el, SR, out=A)                    # [E λ s; E λ rr]
                np.add(e1, A0, out=var)
                np.divide(1.0, var, out=var)                  # diagonal of Σ in the eigenbasis
                np.multiply(A1, var, out=Q0)                  # m in the eigenbasis: (E λ rr) var
                np.multiply(Q0, Q, out=Z01)                   # [m m; m rr]
                np.add(var, Z0, out=Z3)
                np.multiply(s, Z3, out=Z2)
                np.add.reduce(P, axis=-1, keepdims=True, out=sums)   # [Σ m rr; Σ s (var + m²); Σ (var + m²)]
                raw = tt - 2.0 * sums0 + sums1                # E_q[R]
                np.maximum(raw, 0.0, out=sums1)
                np.multiply(0.5, stat, out=rates)
                np.add(rate0, rates, out=rates)               # [b + ½ max(E_q[R], 0); b0 + ½ (mᵀm + tr Σ)]
                new = nxt[0]
                np.divide(shape_, rates, out=new)
                np.subtract(new, E, out=dE)
                np.absolute(dE, out=dE)
                rel = np.divide(dE, new, out=dE)
                cur, nxt = nxt, cur
                E = new
                if np.maximum.reduce(rel, axis=None, initial=-np.inf) < tol:   # all converged (none: True)
                    break
    if rel is None:   # max_iter < 1: no update
        converged = np.zeros(batch, dtype=bool)
        resid_floored = np.zeros(batch, dtype=bool)
        rates = np.broadcast_to(rate0, (2,) + batch + (1,))
    else:
        converged = np.maximum(rel[0], rel[1])[..., 0] < tol
        resid_floored = raw[..., 0] < 0.0
    E_lam, E_lam0 = E[0][..., 0], E[1][..., 0]
    b_lam, b_lam0 = rates[0][..., 0], rates[1][..., 0]
    mean, cov = _posterior(E_lam, E_lam0, s, V, rr, return_cov)   # final q(β) consistent with q(λ), q(λ0)
    return VBResult(mean=mean, a_lam=np.broadcast_to(a_lam, batch).copy(), b_lam=b_lam, a_lam0=a_lam0, b_lam0=b_lam0,
                    n_iter=it, converged=converged, n_floored=n_floored, resid_floored=resid_floored, cov=cov)


def _iterate_each(s: np.ndarray, rr: np.ndarray, t: np.ndarray, a_lam: np.ndarray, a_lam0: np.ndarray, a: float,
                  b: float, a0: float, b0: float, tol: float, max_iter: int) -> tuple:
    """``fit_vb``'s array loop over B problems (s, rr (B, d); t, a_lam, a_lam0 (B,)) in which every problem stops
    at its own convergence test, as it would alone: each iteration makes the array loop's operations, in its
    order, on the problems still running (so each value is the float ``fit_vb`` of that problem alone computes),
    and a problem whose test passes (or that reaches ``max_iter``) leaves with that iteration's values.  Returns
    per problem (iterations (B,), [E λ; E λ0], [b_λ; b_λ0], [rel λ; rel λ0] as (2, B, 1) arrays, E_q[R] (B, 1))."""
    B = s.shape[0]
    its = np.zeros(B, dtype=int)
    E_out, rates_out, rel_out = np.empty((2, B, 1)), np.empty((2, B, 1)), np.empty((2, B, 1))
    raw_out = np.empty((B, 1))
    live = np.arange(B)
    SR, tt = np.stack([s, rr]), t[:, None]
    shape_ = np.stack([a_lam, a_lam0])[..., None]                                # [a + n/2; a0 + d/2]
    rate0 = np.array([b, b0]).reshape(2, 1, 1)
    E = np.stack([np.full(B, a / b), np.full(B, a0 / b0)])[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        for it in range(1, max_iter + 1):
            A = np.multiply(E[0], SR)                                  # [E λ s; E λ rr]
            var = np.divide(1.0, np.add(E[1], A[0]))                   # diagonal of Σ in the eigenbasis
            Q = np.stack([np.multiply(A[1], var), SR[1]])              # [m; rr]
            Z = np.empty((4,) + var.shape)
            np.multiply(Q[0], Q, out=Z[:2])                            # [m m; m rr]
            np.add(var, Z[0], out=Z[3])
            np.multiply(SR[0], Z[3], out=Z[2])
            sums = np.add.reduce(Z[1:], axis=-1, keepdims=True)        # [Σ m rr; Σ s (var + m²); Σ (var + m²)]
            raw = tt - 2.0 * sums[0] + sums[1]                         # E_q[R]
            np.maximum(raw, 0.0, out=sums[1])
            rates = np.add(rate0, np.multiply(0.5, sums[1:]))          # [b + ½ max(E_q[R], 0); b0 + ½ (mᵀm + tr Σ)]
            new = np.divide(shape_, rates)
            rel = np.divide(np.absolute(np.subtract(new, E)), new)
            E = new
            done = np.maximum(rel[0], rel[1])[:, 0] < tol             # NaN: not converged
            if it == max_iter:
                done[:] = True
            if done.any():
                k = live[done]
                its[k] = it
                E_out[:, k], rates_out[:, k], rel_out[:, k], raw_out[k] = E[:, done], rates[:, done], rel[:, done], \
                    raw[done]
                keep = ~done
                live = live[keep]
                if live.size == 0:
                    break
                SR, tt, shape_, E = SR[:, keep], tt[keep], shape_[:, keep], E[:, keep]
    return its, E_out, rates_out, rel_out, raw_out


def fit_vb_each(nXX: np.ndarray, nXy: np.ndarray, nyy: np.ndarray, n: np.ndarray,
                prior: tuple[float, float, float, float] = PAPER_PRIOR, tol: float = 1e-9, max_iter: int = 2000,
                project: str = "joint", return_cov: bool = False) -> list[VBResult]:
    """``fit_vb`` of each of B problems (nXX (B, d, d), nXy (B, d), nyy (B,), n (B,)) alone — every field the
    float, type and shape ``fit_vb(nXX[i], nXy[i], nyy[i], n[i])`` returns, ``n_iter`` its own — fitted as arrays:
    the set-up and the final q(β) batched (``eigh``, matmul and einsum compute each problem of a stack as alone),
    the updates by ``_iterate_each`` (each problem stops at its own convergence; a batched ``fit_vb`` iterates
    every problem until all have converged, which changes the last bits).  For the one-problem fits a run makes
    many of (e.g. the public-only posteriors of a size's drugs): one problem's Python-float loop costs ~10 times
    a problem's share of the array loop."""
    a, b, a0, b0 = (float(v) for v in prior)
    B = np.shape(nyy)[0]
    if max_iter < 1 or B == 0:   # no update (or nothing to fit): fit_vb as it is
        return [fit_vb(nXX[i], nXy[i], nyy[i], n[i], prior, tol, max_iter, project, return_cov) for i in range(B)]
    batch, d, s, V, rr, t, nn, n_floored = _eigenbasis(nXX, nXy, nyy, n, project)
    a_lam = a + 0.5 * nn
    its, E, rates, rel, raw = _iterate_each(s, rr, t, a_lam, np.full(batch, a0 + 0.5 * d), a, b, a0, b0, tol,
                                            max_iter)
    converged = np.maximum(rel[0], rel[1])[..., 0] < tol
    resid_floored = raw[..., 0] < 0.0
    mean, cov = _posterior(E[0][..., 0], E[1][..., 0], s, V, rr, return_cov)
    b_lam, b_lam0 = rates[0][..., 0], rates[1][..., 0]
    return [VBResult(mean=mean[i].copy(), a_lam=np.array(a_lam[i]), b_lam=b_lam[i, ...],
                     a_lam0=np.full((), a0 + 0.5 * d), b_lam0=b_lam0[i, ...], n_iter=int(its[i]), converged=converged[i], n_floored=n_floored[i],
                     resid_floored=resid_floored[i], cov=cov[i].copy() if return_cov else None) for i in range(B)]


def noise_ridge(d: int, laplace_scale_xx: np.ndarray | float) -> np.ndarray:
    """Ridge ρ = 2·sqrt(2d)·b added to a Laplace-perturbed nXX before the VB fit (``stabilize: noise_ridge``).

    The noise matrix of the release is symmetric with i.i.d. Laplace(b) entries (standard deviation sqrt(2)·b) on
    and above the diagonal; its spectral norm is about 2·sqrt(2)·b·sqrt(d) (semicircle law).  Flooring nXX's
    eigenvalues at 0 and adding ρI keeps every direction whose curvature could be pure noise from being trusted as
    data — the same idea as AdaSSP (Wang 2018, "Revisiting differentially private linear regression").  Without
    it the Gamma-prior VB fit of perturbed statistics finds near-exact null directions of the projected Gram matrix,
    its expected residual collapses to ~0, E[λ] runs to its ceiling and E[λ0] to ~0: an unregularised fit of noise
    (measured: Spearman 0.58 vs 0.88 on Eq. 10 data, n = 800, ε = 2).  ρ depends only on public quantities (d, ε, the
    split and the clipping bound), so this is post-processing.  The paper (ADVI, 5000 iterations) does not describe
    any stabilisation; see docs/bayes_lr.md.
    """
    return 2.0 * np.sqrt(2.0 * d) * np.asarray(laplace_scale_xx, dtype=float)


def ridge_stabilised(nXX: np.ndarray, rho: np.ndarray | float, with_eig: bool = False
                     ) -> np.ndarray | tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Symmetrise nXX (…, d, d), floor its eigenvalues at 0 and add ρ I (ρ broadcast over the batch).
    ``with_eig``: also the eigendecomposition (s, V) of the result, s = max(w, 0) + ρ ascending (``fit_vb``'s
    ``eig``: its joint projection then needs no ``eigh`` of its own for the problems it leaves as they are)."""
    S = 0.5 * (nXX + np.swapaxes(nXX, -1, -2))
    w, V = np.linalg.eigh(S)
    w = np.maximum(w, 0.0) + np.asarray(rho, dtype=float)[..., None]
    out = (V * w[..., None, :]) @ np.swapaxes(V, -1, -2)
    return (out, (w, V)) if with_eig else out


def posterior_mean_gamma(nXX: np.ndarray, nXy: np.ndarray, nyy: np.ndarray | float, n: np.ndarray | float,
                         prior: tuple[float, float, float, float] = PAPER_PRIOR, **kw) -> np.ndarray:
    """Posterior-mean weights (…, d) of the Gamma-prior model (Eq. 8) by :func:`fit_vb`."""
    return fit_vb(nXX, nXy, nyy, n, prior=prior, **kw).mean
