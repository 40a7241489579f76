"""Noise calibration of the distributed Gaussian mechanism (Heikkilä et al. 2017, Eq. (1) and Theorem 1).

* ``sigma_std``: the standard deviation σ_std the *trusted-aggregator* Gaussian mechanism adds to a query of L2
  sensitivity Δ₂ for (ε, δ)-DP.  Two calibrations:

  - ``"classic"``: Eq. (1), σ² = 2 ln(1.25/δ) (Δ₂/ε)² (Dwork & Roth 2014, Thm 3.22/A.1).  Its proof needs ε < 1; the
    paper uses it up to ε = 31.6, so we emit a ``PrivacyCalibrationWarning`` when ε ≥ 1 (the release is then *not*
    proven (ε, δ)-DP).
  - ``"analytic"`` (default): the smallest σ for which the Gaussian mechanism is exactly (ε, δ)-DP, for any ε > 0
    (Balle & Wang 2018, Thm 8), from ``dpexp.privacy.mechanisms.analytic_gaussian_sigma``.

* ``client_sigma``: Theorem 1 / supplement eqs. (7)–(8): if at most T clients *in total* collude or drop out
  (dropouts and colluders count together against T: with D dropouts at most T − D may collude), each client adds
  N(0, σ²) with σ² = σ_std² / (N − T − 1), so that the noise of the N − T − 1 clients that are neither the target
  nor among the T alone has variance ≥ σ_std².  The privacy map is
  ``dpexp.privacy.mechanisms.distributed_gaussian_spend``.

The neighbouring relation is whatever Δ₂ was derived for; the callers in this package use replace-one (bounded DP),
the relation of the paper (§3.1: "the two data sets have the same number of samples, but they differ on a single one").
"""

from __future__ import annotations

import functools
import math

from dpexp.errors import UserError
from dpexp.privacy.mechanisms import PrivacyCalibrationWarning, gaussian_sigma  # noqa: F401 (one warning class)

CALIBRATIONS = ("analytic", "classic")


def sigma_std(sensitivity: float, epsilon: float, delta: float, calibration: str = "analytic") -> float:
    """σ_std of the trusted-aggregator Gaussian mechanism for L2 sensitivity Δ₂ (see module docstring):
    ``dpexp.privacy.mechanisms.gaussian_sigma`` (the classic calibration at ε ≥ 1 warns
    ``PrivacyCalibrationWarning``; the ledger then records its true δ)."""
    if calibration not in CALIBRATIONS:
        raise UserError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}")
    if calibration == "analytic":          # a root-find; the same (Δ₂, ε, δ) recurs in every cell of a curve
        return _analytic_sigma(float(sensitivity), float(epsilon), float(delta))
    return gaussian_sigma(sensitivity, epsilon, delta, calibration)   # warns at ε >= 1 on every call: not cached


@functools.lru_cache(maxsize=4096)
def _analytic_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    return gaussian_sigma(sensitivity, epsilon, delta, "analytic")


def noise_factor(n_clients: int, n_faulty: int = 0) -> float:
    """Extra variance factor of the distributed mechanism over the trusted aggregator: N / (N − T − 1) (Fig. 1b)."""
    check_clients(n_clients, n_faulty)
    return n_clients / (n_clients - n_faulty - 1)


def check_clients(n_clients: int, n_faulty: int) -> None:
    if n_faulty < 0:
        raise UserError(f"T (colluding/dropping clients) must be >= 0, got {n_faulty}")
    if n_clients - n_faulty - 1 < 1:
        raise UserError(f"the distributed Gaussian mechanism needs N - T - 1 >= 1 (Thm 1), got N={n_clients}, "
                        f"T={n_faulty}")


def client_sigma(sigma_standard: float, n_clients: int, n_faulty: int = 0) -> float:
    """Per-client noise std of Theorem 1: σ = σ_std / sqrt(N − T − 1)."""
    check_clients(n_clients, n_faulty)
    return float(sigma_standard) / math.sqrt(n_clients - n_faulty - 1)
