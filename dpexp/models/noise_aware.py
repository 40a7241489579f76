"""Noise-aware Bayesian linear regression from Laplace-perturbed sufficient statistics: the model and a batched
Gibbs sampler (docs/noise_aware.md has the derivations).

Released (robust private LR, Honkela et al. 2018, Methods 4.3): for the n private (clipped) rows
Z = A + L_xx (Laplace(b_xx) on the d(d+1)/2 unique entries, mirrored), z_xy = c + L_xy, z_yy = t + L_yy, where
A = Σ x xᵀ, c = Σ x y, t = Σ y²; the exact statistics (A_p, c_p, t_p, n_p) of public rows are *not* mixed in.
Following Bernstein & Sheldon (NeurIPS 2019, "Differentially private Bayesian linear regression") the private
statistics are latent variables with a model of their sampling distribution, and each Laplace variable is a scale
mixture of normals, L | v ~ N(0, v), v ~ Exp(rate 1/(2b²)).  Our model ("model G", exact conditionals):

    λ ~ Gamma(a, b), λ0 ~ Gamma(a0, b0), w | λ0 ~ N(0, I/λ0)                 (Eq. 6 priors, a = b = a0 = b0 = 2)
    A_jk ~ N(m_jk, s²_jk) independently for j ≤ k                          (``GramPrior``; public facts only)
    c | A, w, λ ~ N(A w, K/λ)                                               (exact for Gaussian noise when K = A)
    t = cᵀK⁻¹c + R,   R | λ ~ Gamma((n − d)/2, rate λ/2)                      (RSS; exact when K = A)
    public: log p = n_p/2 log λ − λ/2 (wᵀA_p w − 2wᵀc_p + t_p)               (Eq. 7, exact statistics)

K is a fixed positive-definite matrix, the plug-in E[A | Z] (:func:`plugin_gram`): the sampling covariance of
Σ x e is A/λ, and using K instead of the latent A keeps every conditional below exact and cheap.  K = Z when
b_xx = 0, so the model reduces to the exact Bayesian LR posterior in the noise-free limit; with noise K differs
from A only by the posterior spread of A, a second-order effect on Cov(c).  With K = A, (A, c, t) ↦ θ gives exactly
the likelihood of Eq. 7, so θ | statistics is the usual conjugate update.

Gibbs sweep (all conditionals exact; MH steps are exact MH):

1. (c, t) | A, λ, λ0, v, public, w integrated out (partially collapsed):  c ~ N(A m_w, A S_w Aᵀ + K/λ) with
   S_w = (λ0 I + λA_p)⁻¹, m_w = λ S_w c_p, times R^k e^{−λR/2} (k = (n − d)/2 − 1), times the noise terms
   N(z_xy; c, diag v_xy) N(z_yy; t, v_yy).  Independence MH with a proposal that follows the curved ridge
   t ≈ cᵀK⁻¹c + R: c' from a Laplace approximation of the profile max_t f(c, t) (a fixed number of damped Newton
   steps from a start that does not depend on the current (c, t)), then t' | c' from the 1-D Laplace approximation.
2. w | c, t, A, λ, λ0 ~ N(P⁻¹h, P⁻¹), P = λ0 I + λ(A K⁻¹ A + A_p), h = λ(A K⁻¹ c + c_p).
3. λ | … ~ Gamma(a + (n + n_p)/2, b + ½[(c − Aw)ᵀK⁻¹(c − Aw) + R + wᵀA_p w − 2wᵀc_p + t_p]);
   then a non-centred MH move of λ with R̃ = λR fixed (t' = cᵀK⁻¹c + R̃/λ'), which mixes where R pins λ.
4. λ0 | w ~ Gamma(a0 + d/2, b0 + ½‖w‖²).
5. A | w, c, λ, v_xx: the entries' prior × noise is N(μ0, diag τ²) (τ⁻² = s⁻² + v⁻¹, μ0 = τ²(m/s² + Z/v)), and
   c = A w + g, g ~ N(0, K/λ) is a linear-Gaussian observation of A; an exact draw by Matheron's rule.
6. Ridge moves: A and w are strongly coupled through c ≈ A w when A is uncertain and c is not.  Reparametrise
   (A, w) → (A, u = Aw) and update A | u by preconditioned Crank–Nicolson MH reversible for N(μ0, diag τ²); the
   acceptance ratio is p(w'|λ0) |det A'|⁻¹ L_pub(w') / (same at the current state), w' = A'⁻¹u.
7. v | residuals: 1/v ~ InverseGaussian(mean 1/(b|z − s|), shape 1/b²) for every released scalar.

Statistics released without noise (b = 0 for a whole family in a batch) are observed exactly: their latent block is
fixed to the release.  Correctness checks (noise-free and public-only limits, simulation-based calibration, PyMC
NUTS on the same model) are in tests/models/ and docs/noise_aware.md.  Everything is vectorised over a batch of independent problems (leading axes of the inputs),
all randomness comes from the Generator passed in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dpexp.models.gram_prior import GramPrior, flat_gram_prior
from dpexp.models.vb import PAPER_PRIOR


# ------------------------------------------------------------------------------------------------ inputs
@dataclass(frozen=True)
class NoisyStats:
    """Released private statistics and the Laplace scales actually used (batch shape ``…``).

    XX (…, d, d) symmetric (noise on the unique entries, mirrored), Xy (…, d), yy (…), n (…) private rows,
    b_xx, b_xy, b_yy (…) Laplace scales (0 = released exactly).
    """

    XX: np.ndarray
    Xy: np.ndarray
    yy: np.ndarray
    n: np.ndarray | float
    b_xx: np.ndarray | float
    b_xy: np.ndarray | float
    b_yy: np.ndarray | float


@dataclass(frozen=True)
class ExactStats:
    """Exact statistics of public rows (batch shape ``…``): XX (…, d, d), Xy (…, d), yy (…), n (…)."""

    XX: np.ndarray
    Xy: np.ndarray
    yy: np.ndarray
    n: np.ndarray | float

    @staticmethod
    def of(X: np.ndarray, y: np.ndarray) -> "ExactStats":
        """Statistics of rows X (…, m, d), y (…, m)."""
        X = np.asarray(X, dtype=float)
        y = np.asarray(y, dtype=float)
        return ExactStats(np.swapaxes(X, -1, -2) @ X, np.einsum("...nd,...n->...d", X, y),
                          np.einsum("...n,...n->...", y, y), float(X.shape[-2]))

    @staticmethod
    def empty(d: int) -> "ExactStats":
        return ExactStats(np.zeros((d, d)), np.zeros(d), np.zeros(()), 0.0)


# ------------------------------------------------------------------------------------------------ helpers
def _sym(M: np.ndarray) -> np.ndarray:
    return 0.5 * (M + np.swapaxes(M, -1, -2))


def _sym_normal(rng: np.random.Generator, size: tuple[int, ...], d: int) -> np.ndarray:
    """Symmetric matrices with i.i.d. N(0, 1) unique entries: (M + Mᵀ)/√2 off the diagonal, M_jj on it."""
    M = rng.standard_normal(size + (d, d))
    S = (M + np.swapaxes(M, -1, -2)) * _INV_SQRT2
    idx = np.arange(d)
    S[..., idx, idx] = M[..., idx, idx]
    return S


_INV_SQRT2 = 1.0 / math.sqrt(2.0)


def _mv(M: np.ndarray, v: np.ndarray) -> np.ndarray:
    return (M @ v[..., None])[..., 0]


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=-1)


def _chol_safe(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cholesky factors of a batch of matrices and a mask of those that are positive definite (others: I)."""
    try:
        return np.linalg.cholesky(M), np.ones(M.shape[:-2], dtype=bool)
    except np.linalg.LinAlgError:
        L = np.broadcast_to(np.eye(M.shape[-1]), M.shape).copy()
        ok = np.zeros(M.shape[:-2], dtype=bool)
        for i in np.ndindex(M.shape[:-2]):
            try:
                L[i] = np.linalg.cholesky(M[i])
                ok[i] = True
            except np.linalg.LinAlgError:
                pass
        return L, ok


def _pd_floor(M: np.ndarray, rel: float = 1e-10) -> np.ndarray:
    """Symmetrise and floor the eigenvalues at ``rel`` times the largest (at least the smallest normal double): the
    "safe" profile Hessian is negative definite in exact arithmetic but can lose it to rounding when C⁻¹ = λK⁻¹ − MᵀM
    nearly cancels (weak precision priors).  Only the proposal's covariance changes, never the target."""
    ev, V = np.linalg.eigh(_sym(M))
    floor = np.maximum(rel * np.max(np.abs(ev), axis=-1, keepdims=True), np.finfo(float).tiny)
    return (V * np.maximum(ev, floor)[..., None, :]) @ np.swapaxes(V, -1, -2)


def _mixing_variance(resid: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Draw v | resid for Laplace(b) = N(0, v) mixed over v ~ Exp(rate 1/(2b²)): 1/v ~ IG(1/(b|r|), 1/b²)."""
    r = np.maximum(np.abs(resid), 1e-12 * b)
    return 1.0 / rng.wald(1.0 / (b * r), 1.0 / (b * b))


def _w_op_cov(T: np.ndarray, w: np.ndarray) -> np.ndarray:
    """W T Wᵀ for the linear map vech(A) ↦ A w with independent entry variances T (d×d symmetric): (…, d, d).

    (Aw)_j = Σ_k A_jk w_k, so Cov = T ∘ wwᵀ off the diagonal and Σ_k T_jk w_k² on it."""
    w2 = w * w
    out = T * (w[..., :, None] * w[..., None, :])
    diag = _mv(T, w2) - np.diagonal(T, axis1=-2, axis2=-1) * w2
    return out + np.einsum("...i,ij->...ij", diag, np.eye(w.shape[-1]))


def _w_op_adjoint(alpha: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Wᵀα as a symmetric matrix: entry (j,k), j ≠ k: α_j w_k + α_k w_j; (j,j): α_j w_j."""
    M = alpha[..., :, None] * w[..., None, :]
    M = M + np.swapaxes(M, -1, -2)
    d = w.shape[-1]
    return M - 0.5 * M * np.eye(d)


def plugin_gram(Z: np.ndarray, prior: GramPrior, b_xx: np.ndarray | float) -> np.ndarray:
    """K = E[A | Z] under the entry prior and a normal approximation (variance 2b²) of the Laplace noise,
    symmetrised and with eigenvalues floored at 2√d·τ̄ (the spectral size of the remaining entry uncertainty τ̄; 0
    for b_xx = 0, where K = Z).  Deterministic in (Z, prior, b_xx): a fixed hyper-parameter of the model."""
    Z = _sym(np.asarray(Z, dtype=float))
    d = Z.shape[-1]
    b = np.asarray(b_xx, dtype=float)[..., None, None]
    v = 2.0 * b * b
    ip = 1.0 / np.asarray(prior.var, dtype=float)         # 0 for a flat prior
    with np.errstate(divide="ignore", invalid="ignore"):
        prec = ip + np.where(v > 0, 1.0 / np.where(v > 0, v, 1.0), np.inf)
        tau2 = np.where(v > 0, 1.0 / prec, 0.0)
        K0 = np.where(v > 0, tau2 * (ip * prior.mean + Z / np.where(v > 0, v, 1.0)), Z)
    K0 = _sym(K0)
    ev, V = np.linalg.eigh(K0)
    tau_bar = np.sqrt(np.mean(tau2, axis=(-1, -2)))
    floor = np.maximum(2.0 * math.sqrt(d) * tau_bar, 1e-12 * np.max(np.abs(ev), axis=-1))
    ev = np.maximum(ev, floor[..., None])
    return (V * ev[..., None, :]) @ np.swapaxes(V, -1, -2)


# ------------------------------------------------------------------------------------------------ output
@dataclass
class PosteriorDraws:
    """Posterior draws with batch shape ``…``: w (…, S, d), lam (…, S), lam0 (…, S); ``accept`` holds the mean MH
    acceptance rates per step (…) and ``K`` the plug-in matrix used."""

    w: np.ndarray
    lam: np.ndarray
    lam0: np.ndarray
    accept: dict[str, np.ndarray] = field(default_factory=dict)
    K: np.ndarray | None = None

    def mean(self) -> np.ndarray:
        """Posterior mean of w (…, d)."""
        return self.w.mean(axis=-2)

    def interval(self, level: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
        """Equal-tailed credible interval of every coefficient: (lower, upper), each (…, d)."""
        if not 0 < level < 1:
            raise ValueError(f"level must be in (0, 1), got {level}")
        q = np.quantile(self.w, [(1 - level) / 2, (1 + level) / 2], axis=-2)
        return q[0], q[1]

    def predictive(self, X: np.ndarray) -> np.ndarray:
        """Draws of the regression function xᵀw at rows X (…, m, d) or (m, d): (…, S, m)."""
        X = np.asarray(X, dtype=float)
        return np.einsum("...sd,...md->...sm", self.w, X) if X.ndim > 2 else self.w @ X.T

    def predict_interval(self, X: np.ndarray, level: float = 0.9) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(mean, lower, upper) of xᵀw at rows X, each (…, m): the credible interval of the regression function."""
        P = self.predictive(X)
        q = np.quantile(P, [(1 - level) / 2, (1 + level) / 2], axis=-2)
        return P.mean(axis=-2), q[0], q[1]


# ------------------------------------------------------------------------------------------------ sampler
class _Problem:
    """Inputs flattened to a batch (B,) with every derived constant of the model."""

    def __init__(self, stats: NoisyStats, public: ExactStats | None, gram_prior: GramPrior | None,
                 prior: tuple) -> None:
        Z = _sym(np.asarray(stats.XX, dtype=float))
        d = Z.shape[-1]
        public = public if public is not None else ExactStats.empty(d)
        gram_prior = gram_prior if gram_prior is not None else flat_gram_prior(d)
        arrs = {
            "Z": (Z, 2), "zxy": (np.asarray(stats.Xy, float), 1), "zyy": (np.asarray(stats.yy, float), 0),
            "n": (np.asarray(stats.n, float), 0), "bxx": (np.asarray(stats.b_xx, float), 0),
            "bxy": (np.asarray(stats.b_xy, float), 0), "byy": (np.asarray(stats.b_yy, float), 0),
            "Ap": (_sym(np.asarray(public.XX, float)), 2), "cp": (np.asarray(public.Xy, float), 1),
            "tp": (np.asarray(public.yy, float), 0), "np": (np.asarray(public.n, float), 0),
            "m": (np.asarray(gram_prior.mean, float), 2), "s2": (np.asarray(gram_prior.var, float), 2),
            "a": (np.asarray(prior[0], float), 0), "b": (np.asarray(prior[1], float), 0),
            "a0": (np.asarray(prior[2], float), 0), "b0": (np.asarray(prior[3], float), 0),
        }
        for name, (a, core) in arrs.items():
            if core and a.shape[-1] != d:
                raise ValueError(f"{name} has trailing dimension {a.shape[-1]}, expected d = {d}")
        batch = np.broadcast_shapes(*[a.shape[: a.ndim - core] for a, core in arrs.values()])
        self.batch, self.d = batch, d
        B = int(np.prod(batch)) if batch else 1
        self.B = B
        for name, (a, core) in arrs.items():
            full = np.broadcast_to(a, batch + a.shape[a.ndim - core:])
            setattr(self, name, np.ascontiguousarray(full.reshape((B,) + a.shape[a.ndim - core:])))
        if np.any(self.n < d + 2):
            raise ValueError(f"the noise-aware model needs n_private >= d + 2 = {d + 2}, got min n = {self.n.min():g}")
        for name in ("bxx", "bxy", "byy"):
            b = getattr(self, name)
            if np.any(b < 0) or not np.all(np.isfinite(b)):
                raise ValueError(f"{name} must be finite and >= 0")
            if np.any(b > 0) and np.any(b == 0):
                raise ValueError(f"{name}: a batch must have all scales > 0 or all = 0 (exact release), got a mix")
        self.noisy_xx, self.noisy_xy, self.noisy_yy = (bool(np.all(getattr(self, k) > 0)) for k in ("bxx", "bxy", "byy"))
        if min(np.min(getattr(self, k)) for k in ("a", "b", "a0", "b0")) <= 0:
            raise ValueError("prior shapes and rates must be > 0")
        self.k = 0.5 * (self.n - d) - 1.0
        self.K = plugin_gram(self.Z, GramPrior(self.m, self.s2), self.bxx)
        self.Kinv = np.linalg.inv(self.K)
        self.LK = np.linalg.cholesky(self.K)
        self.ip = 1.0 / self.s2                      # prior precision of the entries (0: flat)
        self.eye = np.eye(d)
        self.iu = np.triu_indices(d)


def _sweep_context(S: dict, P: _Problem) -> dict:
    """Quantities shared by steps 1 and 2 for the current (A, λ, λ0): with P = λ0 I + λ(A K⁻¹ A + A_p) = L Lᵀ,
    M = L⁻¹ λ A K⁻¹ and h = L⁻¹ λ c_p, the w-integrated prior of c has precision C⁻¹ = λK⁻¹ − MᵀM and
    C⁻¹μ_c = Mᵀh (Woodbury; no inverse of the public precision is needed), and w | c ~ N(L⁻ᵀ(Mc + h), P⁻¹)."""
    A, lam = S["A"], S["lam"]
    AKi = A @ P.Kinv
    Prec = S["lam0"][:, None, None] * P.eye + lam[:, None, None] * (AKi @ A + P.Ap)
    L = np.linalg.cholesky(_sym(Prec))
    rhs = np.concatenate([lam[:, None, None] * AKi, (lam[:, None] * P.cp)[..., None]], axis=-1)
    sol = np.linalg.solve(L, rhs)
    M, h = sol[..., :-1], sol[..., -1]
    Cinv = lam[:, None, None] * P.Kinv - np.swapaxes(M, -1, -2) @ M
    return {"L": L, "M": M, "h": h, "Cinv": _sym(Cinv), "bc": _mv(np.swapaxes(M, -1, -2), h), "lam": lam,
            "vxy": S["vxy"], "vyy": S["vyy"]}


def _ct_logf(c, t, P: _Problem, ctx: dict, sel=slice(None)) -> np.ndarray:
    """Log density (up to a constant) of (c, t) | A, λ, λ0, v with w integrated out; −inf where R ≤ 0.
    ``sel`` restricts the problem-specific constants to a subset of the batch (c, t already are)."""
    lam = ctx["lam"][sel]
    q = _dot(c, _mv(P.Kinv[sel], c))
    R = t - q
    f = -0.5 * _dot(c, _mv(ctx["Cinv"][sel], c)) + _dot(c, ctx["bc"][sel]) + 0.5 * lam * (q - t)
    f = f + P.k[sel] * np.log(np.where(R > 0, R, 1.0))
    if P.noisy_xy:
        f = f - 0.5 * np.sum((c - P.zxy[sel]) ** 2 / ctx["vxy"][sel], -1)
    if P.noisy_yy:
        f = f - 0.5 * (t - P.zyy[sel]) ** 2 / ctx["vyy"][sel]
    return np.where(R > 0, f, -np.inf)


def _t_opt(q: np.ndarray, P: _Problem, ctx: dict, sel=slice(None)) -> tuple[np.ndarray, np.ndarray]:
    """Mode t̂ and curvature variance s² of t ↦ f(c, t) for given q = cᵀK⁻¹c: k log R − λt/2 − (t − z)²/(2v) with
    R = t − q; the mode solves R² + βR − kv = 0, β = q − z + λv/2 (stable root).  Exact t: (z_yy, 0)."""
    if not P.noisy_yy:
        return P.zyy[sel] + 0.0 * q, np.zeros_like(q)
    lam, v, k = ctx["lam"][sel], ctx["vyy"][sel], P.k[sel]
    beta = q - P.zyy[sel] + 0.5 * lam * v
    disc = np.sqrt(beta * beta + 4.0 * k * v)
    pos = beta > 0
    R = np.where(pos, 2.0 * k * v / np.where(pos, beta + disc, 1.0), 0.5 * (disc - beta))  # no cancellation
    R = np.maximum(R, 1e-300)
    return q + R, 1.0 / (k / (R * R) + 1.0 / v)


def _profile(c: np.ndarray, P: _Problem, ctx: dict, sel=slice(None)) -> tuple[np.ndarray, np.ndarray]:
    """F(c) = max_t f(c, t) and the maximiser t̂(c)."""
    q = _dot(c, _mv(P.Kinv[sel], c))
    t, _ = _t_opt(q, P, ctx, sel)
    return _ct_logf(c, t, P, ctx, sel), t


def _profile_grad_hess(c: np.ndarray, t: np.ndarray, P: _Problem, ctx: dict, safe: bool):
    """Gradient and Hessian of F(c) at t = t̂(c): ∇F = ∂f/∂c (envelope theorem), ∇²F = H_cc − H_ct H_tc / H_tt.
    ``safe`` replaces the convex part λK⁻¹ by min(λ, 2k/R)K⁻¹: then ∇²F ≺ 0 everywhere (docs)."""
    lam, d = ctx["lam"], P.d
    u = _mv(P.Kinv, c)
    R = t - _dot(c, u)
    kR = P.k / R
    lam_eff = np.minimum(lam, 2.0 * kR) if safe else lam
    g = -_mv(ctx["Cinv"], c) + ctx["bc"] + (lam - 2.0 * kR)[:, None] * u
    H = (-ctx["Cinv"] + (lam_eff - 2.0 * kR)[:, None, None] * P.Kinv
         - (4.0 * kR / R)[:, None, None] * (u[:, :, None] * u[:, None, :]))
    if P.noisy_yy:  # Schur complement of the t direction: H_ct = 2kR⁻² u, H_tt = −kR⁻² − 1/v_yy
        htt = kR / R + 1.0 / ctx["vyy"]
        hct = (2.0 * kR / R)[:, None] * u
        H = H + (hct[:, :, None] * hct[:, None, :]) / htt[:, None, None]
    if P.noisy_xy:
        g = g - (c - P.zxy) / ctx["vxy"]
        idx = np.arange(d)
        H[:, idx, idx] -= 1.0 / ctx["vxy"]
    return g, H


def _ct_step(S: dict, P: _Problem, ctx: dict, rng: np.random.Generator, n_newton: int, n_mh: int) -> np.ndarray:
    """Update (c, t) (step 1) by independence MH with a curved proposal: c' ~ N(ĉ, Σ̂) from Newton on the profile
    F(c) = max_t f(c, t), then t' | c' ~ N(t̂(c'), s²(c')) (the t-conditional's Laplace approximation), so the
    proposal follows the ridge t ≈ cᵀK⁻¹c + R.  Start and Newton steps do not depend on the current (c, t).
    Returns the acceptance indicator averaged over the MH attempts (B,)."""
    d, B = P.d, P.B
    if not (P.noisy_xy or P.noisy_yy):
        return np.ones(B)
    if P.noisy_xy:
        c = np.linalg.solve(ctx["Cinv"] + np.einsum("bi,ij->bij", 1.0 / ctx["vxy"], P.eye),
                            (ctx["bc"] + P.zxy / ctx["vxy"])[..., None])[..., 0]
        if not P.noisy_yy:  # exact t: keep the start feasible by shrinking c towards 0 along its ray
            q = _dot(c, _mv(P.Kinv, c))
            c = c * np.where(q >= P.zyy, np.sqrt(0.5 * P.zyy / np.maximum(q, 1e-300)), 1.0)[:, None]
        F, t = _profile(c, P, ctx)
        for _ in range(n_newton):  # damped Newton on the profile with a negative-definite Hessian
            g, H = _profile_grad_hess(c, t, P, ctx, safe=True)
            step = np.linalg.solve(-H, g[..., None])[..., 0]
            todo = np.arange(B)
            alpha = 1.0
            for _h in range(12):
                cn = c[todo] + alpha * step[todo]
                Fn, tn = _profile(cn, P, ctx, todo)
                ok = Fn >= F[todo] - 1e-9 * (np.abs(F[todo]) + 1.0)
                c[todo[ok]], F[todo[ok]], t[todo[ok]] = cn[ok], Fn[ok], tn[ok]
                todo = todo[~ok]
                if todo.size == 0:
                    break
                alpha *= 0.5
        _, H = _profile_grad_hess(c, t, P, ctx, safe=False)
        L, ok = _chol_safe(-H)
        if not ok.all():
            _, Hs = _profile_grad_hess(c, t, P, ctx, safe=True)
            L = np.where(ok[:, None, None], L, np.linalg.cholesky(_pd_floor(-Hs)))
        Lt = np.swapaxes(L, -1, -2)
        c_hat = c
    else:
        c_hat = P.zxy

    def logq(cc, tt):
        lq = np.zeros(B)
        if P.noisy_xy:
            r = _mv(Lt, cc - c_hat)
            lq = lq - 0.5 * _dot(r, r)
        if P.noisy_yy:
            tm, s2 = _t_opt(_dot(cc, _mv(P.Kinv, cc)), P, ctx)
            lq = lq - 0.5 * (tt - tm) ** 2 / s2 - 0.5 * np.log(s2)
        return lq

    c_cur, t_cur = S["c"].copy(), S["t"].copy()
    f_cur = _ct_logf(c_cur, t_cur, P, ctx)
    lq_cur = logq(c_cur, t_cur)
    acc = np.zeros(B)
    for _ in range(n_mh):
        if P.noisy_xy:
            c_p = c_hat + np.linalg.solve(Lt, rng.standard_normal((B, d))[..., None])[..., 0]
        else:
            c_p = c_cur
        if P.noisy_yy:
            tm, s2 = _t_opt(_dot(c_p, _mv(P.Kinv, c_p)), P, ctx)
            t_p = tm + np.sqrt(s2) * rng.standard_normal(B)
        else:
            t_p = t_cur
        f_p = _ct_logf(c_p, t_p, P, ctx)
        lq_p = logq(c_p, t_p)
        accept = np.log(rng.uniform(size=B)) < f_p - f_cur + lq_cur - lq_p
        c_cur[accept], t_cur[accept] = c_p[accept], t_p[accept]
        f_cur[accept], lq_cur[accept] = f_p[accept], lq_p[accept]
        acc += accept
    S["c"], S["t"] = c_cur, t_cur
    return acc / n_mh


def _w_step(S: dict, P: _Problem, ctx: dict, rng: np.random.Generator) -> None:
    """w | c, t, A, λ, λ0 ~ N(P⁻¹λ(AK⁻¹c + c_p), P⁻¹) = L⁻ᵀ(Mc + h + ξ) (step 2)."""
    z = _mv(ctx["M"], S["c"]) + ctx["h"] + rng.standard_normal((P.B, P.d))
    S["w"] = np.linalg.solve(np.swapaxes(ctx["L"], -1, -2), z[..., None])[..., 0]


def _precision_steps(S: dict, P: _Problem, rng: np.random.Generator) -> None:
    A, w, c, t = S["A"], S["w"], S["c"], S["t"]
    g = c - _mv(A, w)
    R = t - _dot(c, _mv(P.Kinv, c))
    pub = _dot(w, _mv(P.Ap, w)) - 2.0 * _dot(w, P.cp) + P.tp
    rate = P.b + 0.5 * (_dot(g, _mv(P.Kinv, g)) + R + pub)
    S["lam"] = rng.gamma(P.a + 0.5 * (P.n + P.np), 1.0 / rate)
    S["lam0"] = rng.gamma(P.a0 + 0.5 * P.d, 1.0 / (P.b0 + 0.5 * _dot(w, w)))


def _lam_noncentred_step(S: dict, P: _Problem, rng: np.random.Generator) -> np.ndarray:
    """Move λ with the standardised residual R̃ = λR fixed (t' = cᵀK⁻¹c + R̃/λ'): interweaves with step 3, which
    mixes slowly when the noisy t leaves R uncertain but R pins λ.  In (λ, R̃) the prior factorises, so
    λ | R̃, … ∝ Gamma(a + (d + n_p)/2, b + ½[gᵀK⁻¹g + public residual]) × N(z_yy; q + R̃/λ, v_yy); independence MH
    with the Gamma factor as proposal.  Returns acceptance indicators (B,)."""
    if not P.noisy_yy:
        return np.zeros(P.B)
    A, w, c, t, lam = S["A"], S["w"], S["c"], S["t"], S["lam"]
    q = _dot(c, _mv(P.Kinv, c))
    Rt = lam * (t - q)
    g = c - _mv(A, w)
    pub = _dot(w, _mv(P.Ap, w)) - 2.0 * _dot(w, P.cp) + P.tp
    lam_p = rng.gamma(P.a + 0.5 * (P.d + P.np), 1.0 / (P.b + 0.5 * (_dot(g, _mv(P.Kinv, g)) + pub)))
    v = S["vyy"]
    log_r = (-(P.zyy - q - Rt / lam_p) ** 2 + (P.zyy - q - Rt / lam) ** 2) / (2.0 * v)
    accept = np.log(rng.uniform(size=P.B)) < log_r
    S["lam"] = np.where(accept, lam_p, lam)
    S["t"] = np.where(accept, q + Rt / lam_p, t)
    return accept.astype(float)


def _entry_reference(S: dict, P: _Problem) -> tuple[np.ndarray, np.ndarray]:
    """Prior × noise of the unique entries of A given the mixing variances: N(μ0, diag τ²)."""
    v = S["vxx"]
    tau2 = 1.0 / (P.ip + 1.0 / v)
    mu0 = tau2 * (P.ip * P.m + P.Z / v)
    return mu0, tau2


def _A_step(S: dict, P: _Problem, rng: np.random.Generator) -> None:
    """Exact draw of A | w, c, λ, v_xx (Matheron's rule for the linear-Gaussian observation c = Aw + g)."""
    mu0, tau2 = _entry_reference(S, P)
    w, lam = S["w"], S["lam"]
    A0 = mu0 + np.sqrt(tau2) * _sym_normal(rng, (P.B,), P.d)
    G = _w_op_cov(tau2, w) + P.K / lam[:, None, None]
    eps = _mv(P.LK, rng.standard_normal((P.B, P.d))) / np.sqrt(lam)[:, None]
    alpha = np.linalg.solve(_sym(G), (S["c"] - _mv(A0, w) - eps)[..., None])[..., 0]
    S["A"] = A0 + tau2 * _w_op_adjoint(alpha, w)


def _ridge_logtarget(A: np.ndarray, w: np.ndarray, S: dict, P: _Problem) -> np.ndarray:
    _, logdet = np.linalg.slogdet(A)
    pub = _dot(w, _mv(P.Ap, w)) - 2.0 * _dot(w, P.cp)
    return -0.5 * S["lam0"] * _dot(w, w) - logdet - 0.5 * S["lam"] * pub


def _ridge_steps(S: dict, P: _Problem, rng: np.random.Generator, beta: np.ndarray, n_moves: int) -> np.ndarray:
    """pCN moves of A with u = Aw fixed (step 6); ``beta`` (B,) is the innovation weight √(1 − ρ²).
    Returns the mean acceptance over the moves (B,)."""
    mu0, tau2 = _entry_reference(S, P)
    sd = np.sqrt(tau2)
    rho = np.sqrt(1.0 - beta * beta)[:, None, None]
    A, w = S["A"], S["w"]
    cur = _ridge_logtarget(A, w, S, P)
    acc = np.zeros(P.B)
    for _ in range(n_moves):
        u = _mv(A, w)
        Ap = mu0 + rho * (A - mu0) + beta[:, None, None] * sd * _sym_normal(rng, (P.B,), P.d)
        sign, _ = np.linalg.slogdet(Ap)
        ok = sign != 0
        wp = np.linalg.solve(np.where(ok[:, None, None], Ap, P.eye), u[..., None])[..., 0]
        new = _ridge_logtarget(Ap, wp, S, P)
        accept = ok & (np.log(rng.uniform(size=P.B)) < new - cur)
        A = np.where(accept[:, None, None], Ap, A)
        w = np.where(accept[:, None], wp, w)
        cur = np.where(accept, new, cur)
        acc += accept
    S["A"], S["w"] = A, w
    return acc / max(n_moves, 1)


def _mixing_steps(S: dict, P: _Problem, rng: np.random.Generator) -> None:
    if P.noisy_xx:
        iu = P.iu
        v = np.empty((P.B, P.d, P.d))
        v[:, iu[0], iu[1]] = _mixing_variance((P.Z - S["A"])[:, iu[0], iu[1]], P.bxx[:, None], rng)
        S["vxx"] = _sym_upper(v)
    if P.noisy_xy:
        S["vxy"] = _mixing_variance(P.zxy - S["c"], P.bxy[:, None], rng)
    if P.noisy_yy:
        S["vyy"] = _mixing_variance(P.zyy - S["t"], P.byy, rng)


def _sym_upper(M: np.ndarray) -> np.ndarray:
    """Mirror the upper triangle (incl. diagonal) onto the lower one."""
    U = np.triu(M)
    return U + np.swapaxes(np.triu(M, 1), -1, -2)


def _init_state(P: _Problem) -> dict:
    d = P.d
    S: dict = {"lam": np.full(P.B, P.a / P.b), "lam0": np.full(P.B, P.a0 / P.b0)}
    S["A"] = P.Z.copy() if not P.noisy_xx else P.K.copy()
    S["vxx"] = np.broadcast_to(2.0 * P.bxx[:, None, None] ** 2, (P.B, d, d)).copy()
    S["vxy"] = np.broadcast_to(2.0 * P.bxy[:, None] ** 2, (P.B, d)).copy()
    S["vyy"] = 2.0 * P.byy**2
    c = P.zxy.copy()
    q = _dot(c, _mv(P.Kinv, c))
    if P.noisy_yy:
        t = np.maximum(P.zyy, q + (P.n - d) / S["lam"])
    else:
        t = P.zyy.copy()
        bad = t <= q
        if np.any(bad) and not P.noisy_xy:
            raise ValueError("exact statistics with yy <= Xyᵀ K⁻¹ Xy (no residual): not a valid release")
        c = c * np.where(bad, np.sqrt(0.5 * t / np.maximum(q, 1e-300)), 1.0)[:, None]
    S["c"], S["t"] = c, t
    S["w"] = np.zeros((P.B, d))
    return S


def sample_posterior(stats: NoisyStats, rng: np.random.Generator, public: ExactStats | None = None,
                     gram_prior: GramPrior | None = None, prior: tuple = PAPER_PRIOR, n_draws: int = 200,
                     burn_in: int = 300, thin: int = 2, n_newton: int = 3, n_mh: int = 2,
                     n_ridge: int = 2) -> PosteriorDraws:
    """Posterior draws of (w, λ, λ0) of the noise-aware model (module docstring) for a batch of problems.

    Parameters
    ----------
    stats : released private statistics and their Laplace scales (``NoisyStats``); batch shape ``…``.
    rng : the only source of randomness.
    public : exact public statistics (``ExactStats``), broadcast against ``…``; None = no public rows.
    gram_prior : entry prior of the private Gram matrix (``dpexp.models.gram_prior``); None = flat.
    prior : (a, b, a0, b0) Gamma shape/rate of λ and λ0 (the paper's Gamma(2, 2)); each may be an array
        broadcast against ``…`` (``dpexp.models.gram_prior.clipping_scaled_prior`` rescales them to clipped data).
    n_draws, burn_in, thin : kept draws, discarded sweeps, sweeps per kept draw.
    n_newton, n_mh, n_ridge : Newton steps and MH attempts of the (c, t) step; ridge (pCN) moves per sweep.
    """
    if n_draws < 1 or burn_in < 0 or thin < 1:
        raise ValueError(f"need n_draws >= 1, burn_in >= 0, thin >= 1, got {n_draws}, {burn_in}, {thin}")
    P = _Problem(stats, public, gram_prior, prior)
    S = _init_state(P)
    beta = np.full(P.B, 0.5)                          # pCN innovation weight, adapted during burn-in
    acc_ct, acc_ridge, acc_lam = np.zeros(P.B), np.zeros(P.B), np.zeros(P.B)
    W = np.empty((P.B, n_draws, P.d))
    LAM, LAM0 = np.empty((P.B, n_draws)), np.empty((P.B, n_draws))
    total = burn_in + n_draws * thin
    for it in range(total):
        ctx = _sweep_context(S, P)
        a_ct = _ct_step(S, P, ctx, rng, n_newton, n_mh)
        _w_step(S, P, ctx, rng)
        _precision_steps(S, P, rng)
        a_lam = _lam_noncentred_step(S, P, rng)
        if P.noisy_xx:
            _A_step(S, P, rng)
            a_r = _ridge_steps(S, P, rng, beta, n_ridge)
            if it < burn_in:  # Robbins–Monro on log β towards acceptance 0.35 (burn-in only: the kept chain is a
                beta = np.clip(np.exp(np.log(beta) + (a_r - 0.35) / np.sqrt(it + 1.0)), 1e-3, 1.0)  # fixed kernel
            else:
                acc_ridge += a_r
        _mixing_steps(S, P, rng)
        if it >= burn_in:
            acc_ct += a_ct
            acc_lam += a_lam
            j, r = divmod(it - burn_in, thin)
            if r == thin - 1:
                W[:, j], LAM[:, j], LAM0[:, j] = S["w"], S["lam"], S["lam0"]
    kept = max(total - burn_in, 1)
    shp = P.batch
    accept = {"ct": (acc_ct / kept).reshape(shp), "lam": (acc_lam / kept).reshape(shp)}
    if P.noisy_xx:
        accept["ridge"] = (acc_ridge / kept).reshape(shp)
    return PosteriorDraws(W.reshape(shp + (n_draws, P.d)), LAM.reshape(shp + (n_draws,)),
                          LAM0.reshape(shp + (n_draws,)), accept, P.K.reshape(shp + (P.d, P.d)))
