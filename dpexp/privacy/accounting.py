"""Privacy maps: conversions between DP notions and the composition of what one run spent.

``compose`` turns the ``Spend`` records a run's mechanisms wrote into its ``Guarantee`` (rules in its docstring,
with citations); ``worst`` combines the guarantees of independent trials.  The older helpers
(``basic_composition``, ``spend``) are kept for existing callers.
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np

from dpexp.privacy.guarantee import Guarantee, PrivacyAccountingError, Spend, tidy


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


# ------------------------------------------------------------------------------------------- tighter conversions
def zcdp_to_approx_dp_best(rho: float, delta: float) -> float:
    """The smaller of two valid ε for ρ-zCDP ⇒ (ε, δ)-DP: Prop. 1.3 (``zcdp_to_approx_dp``) and
    ε = ρ + sqrt(4ρ ln(sqrt(πρ)/δ)) (Bun & Steinke 2016, Lemma 3.6, as stated by Alabi et al. 2020, App. F Lemma 2;
    used when sqrt(πρ)/δ > 1).  Same arithmetic as ``dp_gd.approx_eps_of_rho``."""
    eps = zcdp_to_approx_dp(rho, delta)
    arg = math.sqrt(math.pi * rho) / delta
    if arg > 1:
        eps = min(eps, rho + math.sqrt(4.0 * rho * math.log(arg)))
    return eps


def zcdp_to_approx_dp_cks(rho: float, delta: float) -> float:
    """ε such that ρ-zCDP ⇒ (ε, δ)-DP by the Rényi conversion of Canonne, Kamath & Steinke 2020 (Prop. 12):
    (α, αρ)-RDP for every α > 1 gives ε = αρ + ln(1/δ)/(α − 1) + ln(1 − 1/α) − ln(α)/(α − 1), minimised over α
    (a log grid of α − 1 in [1e-4, 1e6]; any α is valid, so the grid minimum is a valid, slightly conservative ε).
    Tighter than ``zcdp_to_approx_dp_best``, most of all at large δ; floored at 0.  Used by the audit to test a ρ
    claim at the δ where an experiment can see it (docs/audit.md)."""
    if rho < 0 or not (0 < delta < 1):
        raise ValueError(f"need rho >= 0 and delta in (0, 1), got {rho}, {delta}")
    if rho == 0:
        return 0.0
    a = 1.0 + np.geomspace(1e-4, 1e6, 20_001)
    eps = a * rho + math.log(1.0 / delta) / (a - 1.0) + np.log1p(-1.0 / a) - np.log(a) / (a - 1.0)
    return float(max(0.0, np.min(eps)))


def approx_dp_to_zcdp_best(epsilon: float, delta: float) -> float:
    """Largest ρ with ``zcdp_to_approx_dp_best(ρ, δ) <= ε`` (monotone; bisection to relative 1e-12).  Same arithmetic
    as ``dp_gd.rho_for_approx``."""
    if not (0 < epsilon < math.inf) or not (0 < delta < 1):
        raise ValueError(f"need finite epsilon > 0 and delta in (0, 1), got {epsilon}, {delta}")
    lo, hi = 0.0, max(epsilon, 1.0)
    for _ in range(2100):   # doubling from ≥ 1 passes every finite ρ (and float64's range) within 1024 steps
        if not zcdp_to_approx_dp_best(hi, delta) <= epsilon:
            break
        hi *= 2.0
    else:
        raise ValueError(f"no ρ bracket for epsilon={epsilon}, delta={delta}")
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if zcdp_to_approx_dp_best(mid, delta) <= epsilon:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return lo


# ------------------------------------------------------------------------------------------- composition
def compose(spends: Sequence[Spend], approx_delta: float | None = None) -> Guarantee:
    """The guarantee of one run that made the releases ``spends`` (all of one trial), by these rules:

    1. no spend at all → ``none`` ("no mechanism recorded a spend"): a run that releases nothing private says so
       explicitly with ``PrivacyLedger.public_only``;
    2. any ``none`` spend → ``none`` with its reason(s);
    3. only ``pure`` → ``pure``, ε = Σε (basic sequential composition, Dwork & Roth 2014, Thm 3.16);
    4. ``pure`` and ``approx`` → ``approx``, (Σε, Σδ) (same theorem);
    5. any ``zcdp`` → ``zcdp``, ρ = Σρ (Bun & Steinke 2016, Lemma 2.3), where a pure ε counts as ε²/2 (Prop. 1.4)
       and an ``approx`` spend counts by its ρ when it has one (Gaussian noise is exactly ρ = Δ²/(2σ²)-zCDP,
       Prop. 1.6).  An ``approx`` spend without ρ cannot enter a zCDP sum: then ``approx_delta`` is required;
    6. with ``approx_delta`` given and a zCDP total present, the total is converted to (ε_ρ, approx_delta)-DP
       (``zcdp_to_approx_dp_best``) and composed with the remaining ``approx`` spends by rule 4; ``rho`` keeps ρ.

    Totals are rounded to 12 significant digits (``tidy``).  Notes of the spends are kept (deduplicated).
    """
    notes = tuple(dict.fromkeys(s.note for s in spends if s.note and s.notion != "none"))
    if not spends:
        return Guarantee.none("no mechanism recorded a spend")
    bad = [s for s in spends if s.notion == "none"]
    if bad:
        return Guarantee.none("; ".join(dict.fromkeys(s.note for s in bad)), notes)
    kinds = {s.notion for s in spends}
    if kinds == {"pure"}:
        return Guarantee.pure(math.fsum(s.epsilon for s in spends), notes)
    if "zcdp" not in kinds:
        return Guarantee("approx", tidy(math.fsum(s.epsilon for s in spends)),
                         tidy(math.fsum(s.delta if s.notion == "approx" else 0.0 for s in spends)), notes=notes)
    rhos: list[float] = []
    rest: list[Spend] = []
    for s in spends:
        if s.notion == "zcdp":
            rhos.append(s.rho)
        elif s.notion == "pure":
            rhos.append(pure_to_zcdp(s.epsilon))
        elif math.isfinite(s.rho):
            rhos.append(s.rho)
        else:
            rest.append(s)
    rho = math.fsum(rhos)
    if approx_delta is None:
        if rest:
            raise PrivacyAccountingError(
                "zCDP and (epsilon, delta) releases without a zCDP form cannot be composed without a conversion "
                f"delta: pass approx_delta (releases: {', '.join(s.label or s.mechanism for s in rest)})")
        return Guarantee("zcdp", rho=tidy(rho), notes=notes)
    if not (0 < approx_delta < 1):
        raise PrivacyAccountingError(f"approx_delta must be in (0, 1), got {approx_delta}")
    eps = zcdp_to_approx_dp_best(rho, approx_delta) if rho > 0 else 0.0
    dl = approx_delta if rho > 0 else 0.0
    return Guarantee("approx", tidy(eps + math.fsum(s.epsilon for s in rest)),
                     tidy(dl + math.fsum(s.delta for s in rest)), tidy(rho), notes=notes)


def worst(guarantees: Sequence[Guarantee]) -> Guarantee:
    """One guarantee valid for every trial: the largest ε, δ and ρ of the trials' guarantees (trials are
    independent runs, so their costs are not added).  Pure and approx combine as approx (a pure ε is (ε, 0));
    pure and zCDP as zCDP (ε²/2, Prop. 1.4)."""
    if not guarantees:
        return Guarantee.none("no mechanism recorded a spend")
    notes = tuple(dict.fromkeys(n for g in guarantees for n in g.notes))
    nones = [g for g in guarantees if g.kind == "none"]
    if nones:
        return Guarantee.none("; ".join(dict.fromkeys(g.reason for g in nones)), notes)
    kinds = {g.kind for g in guarantees}
    if kinds == {"pure"}:
        return Guarantee.pure(max(g.epsilon for g in guarantees), notes)
    if kinds <= {"pure", "approx"}:
        rhos = [g.rho for g in guarantees]
        rho = max(rhos) if all(math.isfinite(r) for r in rhos) else float("nan")
        return Guarantee("approx", max(g.epsilon for g in guarantees), max(g.delta for g in guarantees), rho,
                         notes=notes)
    if kinds <= {"pure", "zcdp"}:
        return Guarantee("zcdp", rho=tidy(max(g.rho if g.kind == "zcdp" else pure_to_zcdp(g.epsilon)
                                              for g in guarantees)), notes=notes)
    raise PrivacyAccountingError(f"trials ended with guarantees of kinds {sorted(kinds)} that have no common form; "
                                 "convert zCDP to (epsilon, delta) with approx_delta")
