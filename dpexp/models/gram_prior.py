"""Priors of the noise-aware model from public facts: the private Gram matrix, and precisions scaled to clipped data.

The noise-aware model (``dpexp.models.noise_aware``) treats the unreleased A as a latent matrix whose unique
entries have independent normal priors, A_jk ~ N(m_jk, s²_jk).  Where the Laplace noise on the released XᵀX is
large (budget share p1 small) this prior, not the release, determines A — so it must encode what is publicly known
about the design: the clipping bound, the scale σ_x the bound was derived from, and how confident one is about the
feature correlations.

:func:`clipped_gaussian_gram_prior` builds it from the auxiliary-data model the paper already uses for tuning
(Honkela et al. 2018, Eq. 10 and Methods 4.3: features independent N(0, σ_x²)), clipped at B_x (Eq. 9):

    m_jj = n σ_x² M2,   m_jk = 0 (j ≠ k),          M2 = E[clip_ω(Z)²], M4 = E[clip_ω(Z)⁴], ω = B_x/σ_x
    s²_jj = n σ_x⁴ (M4 − M2²) + (n σ_x² M2 · rel_sd)²        (sampling variance of a sum of n i.i.d. x̃_j²
    s²_jk = n σ_x⁴ M2²        + (n σ_x² M2 · corr_sd)²        and of x̃_j x̃_k, plus population uncertainty)

``rel_sd`` is the prior relative standard deviation of each feature's clipped second moment around the model
value, ``corr_sd`` the prior standard deviation of the correlation between two clipped features.  Both are
statements about the population, not about the sample; 0 means "the auxiliary-data model is exactly right".
:func:`flat_gram_prior` is the uninformative alternative (A is then known only through the release).

σ_x: the paper takes the data standard deviation without spending budget (not DP; see rplr's ``sigma`` option);
a wrapper passes whatever σ_x the clipping bound used, so the prior costs no budget beyond that.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpexp.models.clipped_normal import clipped_moments


@dataclass(frozen=True)
class GramPrior:
    """Independent normal priors on the unique entries of the private Gram matrix: mean, variance (…, d, d),
    symmetric; a variance of ``inf`` is a flat prior on that entry."""

    mean: np.ndarray
    var: np.ndarray

    def __post_init__(self) -> None:
        m, v = np.asarray(self.mean, dtype=float), np.asarray(self.var, dtype=float)
        if m.ndim < 2 or m.shape[-1] != m.shape[-2]:
            raise ValueError(f"GramPrior.mean must be (..., d, d), got shape {m.shape}")
        if np.any(~(v > 0)):
            raise ValueError("GramPrior.var must be > 0 (inf for a flat prior)")
        object.__setattr__(self, "mean", 0.5 * (m + np.swapaxes(m, -1, -2)))
        object.__setattr__(self, "var", 0.5 * (v + np.swapaxes(v, -1, -2)) if np.all(np.isfinite(v)) else v)


def flat_gram_prior(d: int) -> GramPrior:
    """Improper flat prior on every entry (A is then determined by the released XᵀX and by Xᵀy only)."""
    return GramPrior(np.zeros((d, d)), np.full((d, d), np.inf))


def clipped_gaussian_gram_prior(n: np.ndarray | float, d: int, B_x: np.ndarray | float,
                                sigma_x: np.ndarray | float = 1.0, rel_sd: float = 0.1,
                                corr_sd: float = 0.1) -> GramPrior:
    """Prior of Σ clip(x)clip(x)ᵀ over n rows with x ~ N(0, σ_x² I_d) clipped per coordinate at ±B_x (module
    docstring); n, B_x, σ_x broadcast to a batch shape ``…`` and the result is (…, d, d)."""
    if rel_sd < 0 or corr_sd < 0:
        raise ValueError(f"rel_sd and corr_sd must be >= 0, got {rel_sd}, {corr_sd}")
    n = np.asarray(n, dtype=float)
    sx2 = np.asarray(sigma_x, dtype=float) ** 2
    m2, m4 = clipped_moments(np.asarray(B_x, dtype=float) / np.sqrt(sx2))
    batch = np.broadcast_shapes(n.shape, sx2.shape, m2.shape)
    n, sx2, m2, m4 = (np.broadcast_to(a, batch)[..., None, None] for a in (n, sx2, m2, m4))
    eye = np.eye(d, dtype=bool)
    mean = np.where(eye, n * sx2 * m2, 0.0)
    var_diag = n * sx2**2 * (m4 - m2**2) + (n * sx2 * m2 * rel_sd) ** 2
    var_off = n * sx2**2 * m2**2 + (n * sx2 * m2 * corr_sd) ** 2
    var = np.where(eye, var_diag, var_off)
    return GramPrior(mean, var)


def clipping_scaled_prior(omega_x: np.ndarray | float, omega_y: np.ndarray | float,
                          base: tuple[float, float, float, float] = (2.0, 2.0, 2.0, 2.0),
                          units: tuple[np.ndarray | float, np.ndarray | float, int] | None = None
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Gamma priors of (λ, λ0) that say about the clipped data what ``base`` (the paper's Gamma(2, 2), Eq. 6) says
    about unclipped data.

    Clipping at B = ω σ shrinks the RMS of a normal variable by c(ω) = √E[clip_ω(Z)²], so the clipped-data
    coefficients are ≈ β c_y/c_x and the residual precision ≈ λ/c_y² (exact in scale for independent features).
    The rates are rescaled accordingly: λ ~ Gamma(a, b c_y²), λ0 ~ Gamma(a0, b0 c_y²/c_x²).  With ω → ∞ this is
    ``base``.  Only the public multipliers ω enter (no data, no budget).  Arrays broadcast to a batch.

    ``units = (σ_x, σ_y, d)``: the data are not in the units of Eq. 10 (x ~ N(0, I), y ~ N(xᵀβ, 1), where
    σ_x = 1 and E σ_y² = d + 1), e.g. unit-norm rows (σ_x = 1/√d: the paper's own preprocessing) or GDSC.  Mapping
    x ↦ x/σ_x and y ↦ y √(d+1)/σ_y to those units scales coefficients by σ_y/(σ_x √(d+1)) and residuals by
    σ_y/√(d+1), so the rates are further multiplied by σ_y²/((d+1)σ_x²) (λ0) and σ_y²/(d+1) (λ).  σ_x, σ_y are the
    scales the clipping bounds were built from (DP estimates, or the data σ of ``sigma: data``), so this costs
    nothing beyond them.
    """
    cx2, _ = clipped_moments(np.asarray(omega_x, dtype=float))
    cy2, _ = clipped_moments(np.asarray(omega_y, dtype=float))
    a, b, a0, b0 = (float(p) for p in base)
    fy, fx = 1.0, 1.0
    if units is not None:
        sx, sy, d = units
        fy = np.asarray(sy, dtype=float) ** 2 / (d + 1.0)
        fx = fy / np.asarray(sx, dtype=float) ** 2
    shape = np.broadcast_shapes(cx2.shape, cy2.shape, np.shape(fx), np.shape(fy))
    return (np.full(shape, a), np.broadcast_to(b * cy2 * fy, shape), np.full(shape, a0),
            np.broadcast_to(b0 * cy2 / cx2 * fx, shape))


def empirical_gram_prior(X_public: np.ndarray, n: np.ndarray | float, floor_var: np.ndarray | None = None
                         ) -> GramPrior:
    """Prior of the private Gram matrix Σ x̃x̃ᵀ over n rows from m public rows X̃ (…, m, d), clipped like the private
    ones: an honest design prior for correlated features (GDSC genes), at no privacy cost.

    The population second moment E[x̃x̃ᵀ] is estimated by Ŝ = X̃ᵀX̃/m, each entry with standard error √(v_jk/m),
    v_jk the variance of x̃_j x̃_k over rows; the sum over n private rows adds its own sampling variance n v_jk:

        m_jk = n Ŝ_jk,   s²_jk = n v_jk + n² v_jk / m,   v_jk = max(v̂_jk, floor_jk)

    with v̂ the sample variance (ddof = 1) over the public rows.  ``floor_var`` (…, d, d) guards against the tiny
    sample variances a handful of rows can show (e.g. the per-row variances of the independent clipped-Gaussian
    model, ``clipped_gaussian_gram_prior(1, d, B_x, σ_x, 0, 0).var``); None = no floor.  Needs m ≥ 2.
    """
    X = np.asarray(X_public, dtype=float)
    m = X.shape[-2]
    if m < 2:
        raise ValueError(f"an empirical design prior needs at least 2 public rows, got {m}")
    P = X[..., :, :, None] * X[..., :, None, :]                       # (…, m, d, d)
    S = P.mean(axis=-3)
    v = P.var(axis=-3, ddof=1)
    if floor_var is not None:
        v = np.maximum(v, np.asarray(floor_var, dtype=float))
    v = np.maximum(v, 1e-300)
    nn = np.asarray(n, dtype=float)[..., None, None]
    return GramPrior(nn * S, nn * v + nn * nn * v / m)
