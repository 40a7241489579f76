"""Confidence bounds for the privacy-loss lower bound of a black-box audit.

For an (ε, δ)-DP mechanism M, neighbouring inputs D, D′ and *any* measurable output event S,

    P[M(D) ∈ S] ≤ e^ε · P[M(D′) ∈ S] + δ,    i.e.   ε ≥ ln((P[M(D) ∈ S] − δ) / P[M(D′) ∈ S]).

With k successes out of n independent runs on each side we replace P[M(D) ∈ S] by its one-sided
Clopper–Pearson *lower* bound and P[M(D′) ∈ S] by its one-sided *upper* bound, each at level α/(2K) when K
events are evaluated (union bound).  With probability at least 1 − α (the ``confidence`` is 1 − α) every
bound holds simultaneously, so

    ε̂_lb = max_S ln((p_lo(S) − δ) / q_hi(S))

is a valid lower confidence bound on the true ε of the mechanism on this pair: an ε̂_lb above the claimed ε
is evidence of a violation whose false-alarm probability is at most α (Jagielski et al. 2020, Sec. 3; Ding et
al. 2018 use the analogous hypothesis-test formulation).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from dpexp.errors import UserError


def check_confidence(confidence: float) -> float:
    """Validate a confidence level: must lie strictly between 0 and 1."""
    c = float(confidence)
    if not (0.0 < c < 1.0):
        raise UserError(f"confidence must be in (0, 1), got {confidence}")
    return c


def cp_lower(k: np.ndarray | int, n: np.ndarray | int, alpha: float) -> np.ndarray:
    """One-sided Clopper–Pearson lower bound at level ``alpha``: the p with P[Bin(n, p) ≥ k] = α.

    Equals the α quantile of Beta(k, n − k + 1); 0 when k = 0.  Vectorised over ``k`` and ``n``.
    """
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore"):
        lo = special.betaincinv(np.maximum(k, 1e-300), n - k + 1.0, alpha)
    return np.where(k <= 0, 0.0, lo)


def cp_upper(k: np.ndarray | int, n: np.ndarray | int, alpha: float) -> np.ndarray:
    """One-sided Clopper–Pearson upper bound at level ``alpha``: the p with P[Bin(n, p) ≤ k] = α.

    Equals the 1 − α quantile of Beta(k + 1, n − k); 1 when k = n.  Vectorised over ``k`` and ``n``.
    """
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore"):
        hi = special.betaincinv(k + 1.0, np.maximum(n - k, 1e-300), 1.0 - alpha)
    return np.where(k >= n, 1.0, hi)


def clopper_pearson(k: np.ndarray | int, n: np.ndarray | int, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided Clopper–Pearson interval at ``confidence`` (each tail (1 − confidence)/2)."""
    alpha = 1.0 - check_confidence(confidence)
    return cp_lower(k, n, alpha / 2.0), cp_upper(k, n, alpha / 2.0)


def epsilon_lower_bound(k_num: np.ndarray | int, n_num: np.ndarray | int, k_den: np.ndarray | int,
                        n_den: np.ndarray | int, delta: float, confidence: float,
                        n_events: int = 1) -> np.ndarray:
    """ε̂_lb = ln((p_lo − δ) / q_hi) for event counts ``k_num/n_num`` (numerator side, P[M(D) ∈ S]) and
    ``k_den/n_den`` (denominator side, P[M(D′) ∈ S]).

    Each one-sided Clopper–Pearson bound is taken at level α/(2·n_events), α = 1 − confidence, so that the
    maximum over ``n_events`` evaluated events is a lower bound holding with probability ≥ ``confidence``.
    Returns −inf where p_lo ≤ δ (the event says nothing).  Vectorised.
    """
    alpha = 1.0 - check_confidence(confidence)
    if n_events < 1:
        raise UserError(f"n_events must be >= 1, got {n_events}")
    if not (0.0 <= delta < 1.0):
        raise UserError(f"delta must be in [0, 1), got {delta}")
    a = alpha / (2.0 * n_events)
    p_lo = cp_lower(k_num, n_num, a)
    q_hi = cp_upper(k_den, n_den, a)
    num = p_lo - float(delta)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(num > 0, np.log(np.maximum(num, 1e-300)) - np.log(q_hi), -np.inf)
    return out


def point_estimate(k_num: np.ndarray | int, n_num: np.ndarray | int, k_den: np.ndarray | int,
                   n_den: np.ndarray | int, delta: float) -> np.ndarray:
    """Smoothed plug-in estimate ln((k_num/n_num − δ) / ((k_den + 1)/(n_den + 1))) used only to rank events
    (never as the reported bound); −inf where the numerator is ≤ δ."""
    p = np.asarray(k_num, dtype=float) / np.asarray(n_num, dtype=float) - float(delta)
    q = (np.asarray(k_den, dtype=float) + 1.0) / (np.asarray(n_den, dtype=float) + 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p > 0, np.log(np.maximum(p, 1e-300)) - np.log(q), -np.inf)


def log_ratio_text(value: float) -> str:
    """Display of a bound: '-inf' stays visible, otherwise 4 decimals."""
    return "-inf" if not math.isfinite(value) else f"{value:.4f}"
