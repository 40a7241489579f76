"""Privacy maps: what a cell spends, and conversions between DP notions."""

from __future__ import annotations

import math
from typing import Iterable


def basic_composition(spends: Iterable[tuple[float, float]]) -> tuple[float, float]:
    """Sequential composition: (Σε, Σδ) (Dwork & Roth 2014, Thm 3.16)."""
    eps = delta = 0.0
    for e, d in spends:
        eps += e
        delta += d
    return eps, delta


def pure_to_zcdp(epsilon: float) -> float:
    """An ε-DP mechanism is (ε²/2)-zCDP (Bun & Steinke 2016, Prop. 1.4)."""
    return 0.5 * epsilon * epsilon


def zcdp_to_approx_dp(rho: float, delta: float) -> float:
    """ρ-zCDP implies (ρ + 2·sqrt(ρ ln(1/δ)), δ)-DP (Bun & Steinke 2016, Prop. 1.3)."""
    if rho < 0 or not (0 < delta < 1):
        raise ValueError(f"need rho >= 0 and delta in (0, 1), got rho={rho}, delta={delta}")
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def approx_dp_to_zcdp(epsilon: float, delta: float) -> float:
    """Largest ρ with ρ + 2·sqrt(ρ ln(1/δ)) ≤ ε (inverse of ``zcdp_to_approx_dp``)."""
    if epsilon <= 0 or not (0 < delta < 1):
        raise ValueError(f"need epsilon > 0 and delta in (0, 1), got {epsilon}, {delta}")
    L = math.log(1.0 / delta)
    root = math.sqrt(L + epsilon) - math.sqrt(L)
    return root * root


def spend(epsilon: float, delta: float = 0.0, rho: float | None = None) -> dict[str, float]:
    """A spend record as stored in results/manifests."""
    out = {"epsilon": float(epsilon), "delta": float(delta)}
    if rho is not None:
        out["rho"] = float(rho)
    return out
