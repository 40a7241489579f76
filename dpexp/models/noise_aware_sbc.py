"""Simulation-based calibration (SBC; Talts et al. 2018) of the noise-aware sampler.

:func:`simulate` draws (θ, released statistics) from the joint distribution of the noise-aware model exactly as
``dpexp.models.noise_aware`` defines it (model G: Gram-matrix entries from their prior, the plug-in K from the noisy
release, c | A, w, λ ~ N(Aw, K/λ), t = cᵀK⁻¹c + R with R ~ Gamma((n − d)/2, λ/2), public rows from an exact
linear-Gaussian model, Laplace noise).  If the sampler targets the model's posterior, the rank of each true
parameter among L independent posterior draws is uniform on {0, …, L} (:func:`ranks`); :func:`chi2_uniform` tests
that with a chi-square goodness-of-fit test over equal-width rank bins.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from dpexp.models.gram_prior import GramPrior
from dpexp.models.noise_aware import ExactStats, NoisyStats, plugin_gram
from dpexp.models.vb import PAPER_PRIOR


@dataclass
class Simulated:
    """Truth and release of ``size`` problems: w (size, d), lam, lam0 (size,), stats, public."""

    w: np.ndarray
    lam: np.ndarray
    lam0: np.ndarray
    stats: NoisyStats
    public: ExactStats


def _sym_laplace(rng: np.random.Generator, b: np.ndarray, size: int, d: int) -> np.ndarray:
    """Laplace(b) noise on the unique entries, mirrored (the release of rplr).  Not privacy noise: it simulates a
    release of data drawn from the model's prior, for simulation-based calibration of the posterior; no private row
    is read and no results row carries it, so it is not drawn through ``dpexp.privacy``."""
    iu = np.triu_indices(d)
    N = np.zeros((size, d, d))
    N[:, iu[0], iu[1]] = rng.laplace(0.0, 1.0, size=(size, iu[0].size)) * b[:, None]
    return N + np.swapaxes(np.triu(N, 1), -1, -2)


def simulate(size: int, n: int, d: int, b_xx: float, b_xy: float, b_yy: float, gram_prior: GramPrior,
             n_public: int, rng: np.random.Generator,
             prior: tuple[float, float, float, float] = PAPER_PRIOR) -> Simulated:
    """``size`` independent draws from the joint distribution of the noise-aware model (module docstring)."""
    a, b, a0, b0 = prior
    lam = rng.gamma(a, 1.0 / b, size)
    lam0 = rng.gamma(a0, 1.0 / b0, size)
    w = rng.standard_normal((size, d)) / np.sqrt(lam0)[:, None]
    m = np.broadcast_to(gram_prior.mean, (size, d, d))
    sd = np.sqrt(np.broadcast_to(gram_prior.var, (size, d, d)))
    E = rng.standard_normal((size, d, d))
    E = np.triu(E) + np.swapaxes(np.triu(E, 1), -1, -2)
    A = m + sd * E
    bxx = np.full(size, float(b_xx))
    Z = A + _sym_laplace(rng, bxx, size, d)
    K = plugin_gram(Z, GramPrior(m, sd**2), bxx)
    L = np.linalg.cholesky(K)
    c = np.einsum("sij,sj->si", A, w) + np.einsum("sij,sj->si", L, rng.standard_normal((size, d))) / np.sqrt(lam)[:, None]
    R = rng.gamma(0.5 * (n - d), 2.0 / lam)
    t = np.einsum("si,si->s", c, np.linalg.solve(K, c[..., None])[..., 0]) + R
    # the simulated release of the simulated statistics (not privacy noise: see _sym_laplace)
    zxy = c + rng.laplace(0.0, 1.0, (size, d)) * b_xy
    zyy = t + rng.laplace(0.0, 1.0, size) * b_yy
    Xp = rng.standard_normal((size, n_public, d))
    yp = np.einsum("snd,sd->sn", Xp, w) + rng.standard_normal((size, n_public)) / np.sqrt(lam)[:, None]
    stats = NoisyStats(Z, zxy, zyy, float(n), bxx, np.full(size, float(b_xy)), np.full(size, float(b_yy)))
    return Simulated(w, lam, lam0, stats, ExactStats.of(Xp, yp))


def ranks(truth: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """Rank of the truth (…) among draws (…, L): the number of draws below it, in {0, …, L}."""
    return np.sum(draws < np.asarray(truth)[..., None], axis=-1)


def chi2_uniform(r: np.ndarray, L: int, bins: int = 10) -> float:
    """p-value of the chi-square test that ranks r ∈ {0, …, L} are uniform, with ``bins`` equal bins
    ((L + 1) must be divisible by ``bins``)."""
    if (L + 1) % bins:
        raise ValueError(f"L + 1 = {L + 1} must be divisible by bins = {bins}")
    counts = np.bincount(np.asarray(r).ravel() // ((L + 1) // bins), minlength=bins)
    return float(sps.chisquare(counts).pvalue)
