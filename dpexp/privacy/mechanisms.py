"""Vectorised noise-adding mechanisms. Each is a pure function of (value, sensitivity, privacy parameter, rng).

Neighbouring relation: a mechanism is DP for whatever relation its ``sensitivity`` was derived under; callers state
the relation (bounded/replace-one or unbounded/add-remove) and the derivation in their own docstrings.

``size`` adds leading axes for many independent draws (Monte Carlo repeats, audits): the result has shape
``size + value.shape``.  All randomness comes from the explicit ``numpy.random.Generator``.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from scipy import optimize, special

from dpexp.errors import UserError


def _check_eps(epsilon: float) -> None:
    if not (np.isfinite(epsilon) and epsilon > 0):
        raise UserError(f"epsilon must be > 0 and finite, got {epsilon}")


def _check_delta(delta: float) -> None:
    if not (0 < delta < 1):
        raise UserError(f"delta must be in (0, 1), got {delta}")


def _shape(value: np.ndarray | float, size: int | Sequence[int] | None) -> tuple[int, ...]:
    base = np.shape(value)
    if size is None:
        return base
    lead = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
    return lead + base


def laplace_scale(sensitivity: float, epsilon: float) -> float:
    """b = Δ₁/ε: the Laplace scale that makes a query of L1 sensitivity Δ₁ ε-DP (Dwork et al. 2006)."""
    _check_eps(epsilon)
    if sensitivity < 0:
        raise UserError(f"sensitivity must be >= 0, got {sensitivity}")
    return float(sensitivity) / float(epsilon)


def laplace(value: np.ndarray | float, sensitivity: float, epsilon: float, rng: np.random.Generator,
            size: int | Sequence[int] | None = None) -> np.ndarray:
    """Laplace mechanism: value + Lap(Δ₁/ε) i.i.d. per entry; ε-DP for L1 sensitivity Δ₁ of the whole vector."""
    b = laplace_scale(sensitivity, epsilon)
    return np.asarray(value, dtype=float) + rng.laplace(0.0, b, size=_shape(value, size))


def gaussian_sigma_classic(sensitivity: float, epsilon: float, delta: float) -> float:
    """σ = Δ₂·sqrt(2 ln(1.25/δ))/ε (Dwork & Roth 2014, Thm A.1); the proof needs ε < 1.

    Used for ε ≥ 1 it is a heuristic (the DCA paper does so up to ε = 31.6); callers should warn.
    """
    _check_eps(epsilon)
    _check_delta(delta)
    return float(sensitivity) * math.sqrt(2.0 * math.log(1.25 / delta)) / float(epsilon)


def _analytic_delta(sigma: float, sensitivity: float, epsilon: float) -> float:
    """δ(σ) of the Gaussian mechanism, exact (Balle & Wang 2018, Thm 8):
    Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ), computed in log space for large ε."""
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    first = special.ndtr(a - b)
    second = math.exp(epsilon + special.log_ndtr(-a - b))
    return float(first - second)


def analytic_gaussian_sigma(sensitivity: float, epsilon: float, delta: float, tol: float = 1e-12) -> float:
    """Smallest σ such that adding N(0, σ²) to a query of L2 sensitivity Δ₂ is (ε, δ)-DP, for any ε > 0
    (analytic Gaussian mechanism, Balle & Wang 2018, Thm 8; solved by root finding on the exact δ(σ))."""
    _check_eps(epsilon)
    _check_delta(delta)
    if sensitivity <= 0:
        return 0.0
    f = lambda s: _analytic_delta(s, sensitivity, epsilon) - delta  # noqa: E731  (decreasing in σ)
    lo, hi = sensitivity * 1e-6, sensitivity
    while f(hi) > 0:
        hi *= 2.0
    while f(lo) < 0 and lo > 1e-300:
        lo /= 2.0
    return float(optimize.brentq(f, lo, hi, xtol=tol * sensitivity, rtol=1e-14, maxiter=500))


def gaussian_sigma_zcdp(sensitivity: float, rho: float) -> float:
    """σ = Δ₂/sqrt(2ρ): the Gaussian mechanism is ρ-zCDP (Bun & Steinke 2016, Prop. 1.6)."""
    if not (rho > 0):
        raise UserError(f"rho must be > 0, got {rho}")
    return float(sensitivity) / math.sqrt(2.0 * rho)


def gaussian(value: np.ndarray | float, sigma: float, rng: np.random.Generator,
             size: int | Sequence[int] | None = None) -> np.ndarray:
    """value + N(0, σ²) i.i.d. per entry (calibrate σ with one of the functions above)."""
    if sigma < 0:
        raise UserError(f"sigma must be >= 0, got {sigma}")
    return np.asarray(value, dtype=float) + rng.normal(0.0, sigma, size=_shape(value, size))


def gumbel_max(log_weights: np.ndarray, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
    """Index sampled with probability ∝ exp(log_weights) via the Gumbel-max trick (exponential mechanism).

    ``log_weights`` may contain -inf. With ``size`` returns that many independent indices.
    """
    lw = np.asarray(log_weights, dtype=float)
    if lw.ndim != 1 or lw.size == 0 or not np.any(np.isfinite(lw)):
        raise ValueError("log_weights must be a non-empty 1-D array with a finite entry")
    shape = (lw.size,) if size is None else (int(size), lw.size)
    return np.argmax(lw + rng.gumbel(size=shape), axis=-1)


def gumbel_max_rows(log_weights: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Row-wise Gumbel-max: for every row of ``log_weights`` (…, M) one index sampled with probability ∝ exp(row)
    (the exponential mechanism's sampler, one independent draw per row; rows may hold -inf and differ from each
    other, e.g. one utility vector per trial).  ``gumbel_max`` is the special case of one weight vector."""
    g = rng.gumbel(size=np.shape(log_weights))
    g += log_weights
    return np.argmax(g, axis=-1)
