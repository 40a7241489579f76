"""Bayesian linear regression with *fixed* precisions, from sufficient statistics.

Model: y | x, β ~ N(xᵀβ, 1/λ), β ~ N(0, I/λ0).  The posterior of β is Gaussian with precision Λ = λ0 I + λ XᵀX and
mean Λ⁻¹ λ Xᵀy (Honkela et al. 2018, Methods 4.1 with λ, λ0 fixed).  Everything is batched over leading axes so
one call fits many repeats / subsets / noise draws.  The Gamma-prior model lives in ``dpexp.models.vb``.
"""

from __future__ import annotations

import math

import numpy as np


def sample_data(reps: int, n: int, d: int, rng: np.random.Generator, lam: float = 1.0, lam0: float = 1.0
                ) -> tuple[np.ndarray, np.ndarray]:
    """``reps`` data sets of ``n`` rows drawn from the model itself: x ~ N(0, I_d), β ~ N(0, I/λ0),
    y | x ~ N(xᵀβ, 1/λ) — Honkela et al. 2018 Eq. (10), Heikkilä et al. 2017 eqs. (4)–(6): the public auxiliary
    data on which both papers choose their clipping thresholds.  Returns X (reps, n, d) and y (reps, n), drawn in
    the order X, β, noise."""
    # not privacy noise: synthetic public data drawn from the model (no private row is read), so no mechanism
    X = rng.standard_normal((reps, n, d))
    beta = rng.normal(0.0, 1.0 / math.sqrt(lam0), size=(reps, d))
    y = np.einsum("rnd,rd->rn", X, beta) + rng.normal(0.0, 1.0 / math.sqrt(lam), size=(reps, n))
    return X, y


def sample_preprocessed(reps: int, n: int, d: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``reps`` auxiliary data sets generated like the real data after preprocessing (the authors' code; shared by
    the GDSC tuning and the DCA paper-settings threshold search): x ~ N(0, I_d); every feature centred and every row
    scaled to unit L2 norm; β ~ N(0, I), y ~ N(xᵀβ, 1) from the scaled rows (λ = λ0 = 1); y centred.  Returns
    X (reps, n, d), y (reps, n); draws X, β, noise in that order."""
    X = rng.standard_normal((reps, n, d))
    X = X - X.mean(axis=1, keepdims=True)
    norms = np.linalg.norm(X, axis=2, keepdims=True)
    X = np.divide(X, norms, out=np.zeros_like(X), where=norms > 0)
    beta = rng.standard_normal((reps, d))
    y = np.einsum("rnd,rd->rn", X, beta) + rng.standard_normal((reps, n))
    return X, y - y.mean(axis=1, keepdims=True)


#: relative margin of ``certified_psd``: far above the backward errors of Cholesky and eigh (≈ d²·2⁻⁵³)
PSD_MARGIN = 1e-8


def certified_psd(A: np.ndarray) -> bool:
    """True only if every matrix of the symmetric stack ``A`` (…, d, d) is so clearly positive definite that
    ``np.linalg.eigh`` computes no eigenvalue below 0: a Cholesky factorisation of A − δI succeeds, δ = 10⁻⁸·tr A.

    Why that suffices: the factorisation succeeding means A − δI + E is positive definite with
    ‖E‖₂ ≤ d·γ_{d+1}·‖A‖₂ (Higham 2002, Thm 10.5), so λ_min(A) ≥ δ − ‖E‖₂; eigh is backward stable, its
    eigenvalues within c·d·u·‖A‖₂ of A's; tr A ≥ ‖A‖₂ for A ⪰ 0, and δ exceeds both errors by orders of
    magnitude for any d below ~10³ (u = 2⁻⁵³).  A cheap test (one batched Cholesky, no eigen-decomposition) for
    exact Gram matrices, which are positive definite unless rank-deficient; False (the caller decomposes) when
    unsure: non-finite entries, a zero trace, a failed factorisation."""
    A = np.asarray(A, dtype=float)
    if A.size == 0 or not np.all(np.isfinite(A)):
        return False
    tr = np.trace(A, axis1=-2, axis2=-1)
    if not np.all(tr > 0.0):
        return False
    try:
        np.linalg.cholesky(A - (PSD_MARGIN * tr)[..., None, None] * np.eye(A.shape[-1]))
    except np.linalg.LinAlgError:
        return False
    return True


def symmetric_psd_floor(A: np.ndarray, floor: float = 0.0, certify: bool = False) -> np.ndarray:
    """Symmetrise ``A`` (…, d, d) and raise eigenvalues below ``floor`` to ``floor``.  ``certify`` (floor 0):
    first ask ``certified_psd`` whether no eigenvalue can be below 0 — then the symmetrised A is returned without
    its eigen-decomposition (what the decomposition would decide; worth it for exact Gram matrices)."""
    A = 0.5 * (A + np.swapaxes(A, -1, -2))
    if certify and floor == 0.0 and certified_psd(A):
        return A
    w, V = np.linalg.eigh(A)
    if np.all(w >= floor):
        return A
    w = np.maximum(w, floor)
    return (V * w[..., None, :]) @ np.swapaxes(V, -1, -2)


def posterior_mean_fixed(XX: np.ndarray, Xy: np.ndarray, lam: float = 1.0, lam0: float = 1.0,
                         solver: str = "psd_floor", certify: bool = False) -> np.ndarray:
    """Posterior mean (λ0 I + λ XᵀX)⁻¹ λ Xᵀy, batched: XX (…, d, d), Xy (…, d) → (…, d).

    ``solver="psd_floor"`` (default): perturbed statistics can make λ0 I + λ XᵀX indefinite or singular, so we
    symmetrise and floor the eigenvalues of XᵀX at 0 first, which keeps the posterior precision ≥ λ0 I — a
    post-processing of the DP release, so privacy is unaffected.  ``solver="direct"``: Eqs. 3–4 applied to the
    statistics as released (what the papers write).  Which is better depends on the noise regime: with Laplace
    noise on clipped statistics (Honkela et al.) the floor is better (Eq. 10 data, ε = 2, n = 100: Spearman 0.77 vs
    0.67 at ω = (0.1, 0.3)); with very large Gaussian noise (DCA, unprojected) the direct solve is (docs/).
    ``certify``: exact statistics (a Gram matrix): the floor's decision by ``certified_psd`` where it can (the
    same floats).
    """
    XX = np.asarray(XX, dtype=float)
    Xy = np.asarray(Xy, dtype=float)
    d = XX.shape[-1]
    if solver not in ("psd_floor", "direct"):
        raise ValueError(f"solver must be 'psd_floor' or 'direct', got {solver!r}")
    XXs = symmetric_psd_floor(XX, certify=certify) if solver == "psd_floor" else 0.5 * (XX + np.swapaxes(XX, -1, -2))
    prec = lam0 * np.eye(d) + lam * XXs
    return np.linalg.solve(prec, lam * Xy[..., None])[..., 0]
