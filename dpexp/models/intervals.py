"""Credible intervals of a fitted posterior in the form ``dpexp.types.Output`` carries them: a dict from the
nominal level to (lower, upper) arrays, for the coefficients and for the regression function at test rows.

Two kinds of posterior: Gaussian N(m, S) (the VB posteriors and the noise-aware fast approximation: equal-tailed
intervals m ± z σ with z = Φ⁻¹((1 + level)/2), and xᵀm ± z √(xᵀSx) at a test row x) and draws (the Gibbs sampler:
empirical (1 − level)/2 and (1 + level)/2 quantiles).
"""

from __future__ import annotations

import numpy as np
from scipy import special

#: the nominal levels every interval-reporting algorithm gives (the calibration metrics read 0.5, 0.8, 0.9, 0.95)
LEVELS: tuple[float, ...] = (0.5, 0.8, 0.9, 0.95)

Intervals = dict[float, tuple[np.ndarray, np.ndarray]]


def _check(levels: tuple[float, ...]) -> None:
    if not all(0 < lv < 1 for lv in levels):
        raise ValueError(f"levels must lie in (0, 1), got {levels}")


def gaussian_intervals(mean: np.ndarray, cov: np.ndarray, X_test: np.ndarray, levels: tuple[float, ...] = LEVELS
                       ) -> tuple[Intervals, Intervals]:
    """(coefficient intervals, prediction intervals) of N(mean, cov): mean (…, d), cov (…, d, d), X_test (m, d);
    each interval array is (…, d) or (…, m)."""
    _check(levels)
    mean = np.asarray(mean, dtype=float)
    cov = np.asarray(cov, dtype=float)
    X = np.asarray(X_test, dtype=float)
    sd = np.sqrt(np.maximum(np.diagonal(cov, axis1=-2, axis2=-1), 0.0))
    mu = mean @ X.T
    psd = np.sqrt(np.maximum(np.einsum("md,...de,me->...m", X, cov, X), 0.0))
    coef, pred = {}, {}
    for lv in levels:
        z = float(special.ndtri(0.5 + lv / 2))
        coef[lv] = (mean - z * sd, mean + z * sd)
        pred[lv] = (mu - z * psd, mu + z * psd)
    return coef, pred


def draw_intervals(w: np.ndarray, X_test: np.ndarray, levels: tuple[float, ...] = LEVELS
                   ) -> tuple[Intervals, Intervals]:
    """(coefficient intervals, prediction intervals) from posterior draws w (…, S, d) at test rows X_test (m, d):
    equal-tailed empirical quantiles over the S draws."""
    _check(levels)
    w = np.asarray(w, dtype=float)
    P = w @ np.asarray(X_test, dtype=float).T                              # (…, S, m)
    qs = [q for lv in levels for q in ((1 - lv) / 2, (1 + lv) / 2)]
    cq = np.quantile(w, qs, axis=-2)
    pq = np.quantile(P, qs, axis=-2)
    coef = {lv: (cq[2 * i], cq[2 * i + 1]) for i, lv in enumerate(levels)}
    pred = {lv: (pq[2 * i], pq[2 * i + 1]) for i, lv in enumerate(levels)}
    return coef, pred


def gaussian_intervals_many(mean: np.ndarray, cov: np.ndarray, X_tests: list[np.ndarray],
                            levels: tuple[float, ...] = LEVELS) -> list[tuple[np.ndarray, Intervals, Intervals]]:
    """``gaussian_intervals`` of S posteriors at once: mean (S, …, d), cov (S, …, d, d), X_tests[i] (m_i, d); per
    posterior (the mean at the test rows xᵀm, coefficient intervals, prediction intervals), each equal to the bit
    to ``gaussian_intervals(mean[i], cov[i], X_tests[i])`` (the products per posterior, the rest stacked)."""
    _check(levels)
    mean = np.asarray(mean, dtype=float)
    cov = np.asarray(cov, dtype=float)
    Xs = [np.asarray(X, dtype=float) for X in X_tests]
    sd = np.sqrt(np.maximum(np.diagonal(cov, axis1=-2, axis2=-1), 0.0))
    mus = [mean[i] @ X.T for i, X in enumerate(Xs)]
    off = np.concatenate([[0], np.cumsum([X.shape[0] for X in Xs])]).tolist()
    mu = np.concatenate(mus, axis=-1)
    psd = np.sqrt(np.maximum(np.concatenate([np.einsum("md,...de,me->...m", X, cov[i], X)
                                             for i, X in enumerate(Xs)], axis=-1), 0.0))
    bands = []
    for lv in levels:
        z = float(special.ndtri(0.5 + lv / 2))
        bands.append((lv, mean - z * sd, mean + z * sd, mu - z * psd, mu + z * psd))
    return [(mus[i], {lv: (cl[i], ch[i]) for lv, cl, ch, _, _ in bands},
             {lv: (pl[..., off[i]:off[i + 1]], ph[..., off[i]:off[i + 1]]) for lv, _, _, pl, ph in bands})
            for i in range(len(Xs))]
