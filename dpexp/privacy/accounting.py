"""Privacy maps: conversions between DP notions and the composition of what one run spent.

``compose`` turns the ``Spend`` records a run's mechanisms wrote into its ``Guarantee`` (rules in its docstring,
with citations); ``worst`` combines the guarantees of independent trials.  The older helpers
(``basic_composition``, ``spend``) are kept for existing callers.
"""

from __future__ import annotations

import functools
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
    """The tightest valid ε dpexp knows for ρ-zCDP ⇒ (ε, δ)-DP: the smallest of Prop. 1.3 (``zcdp_to_approx_dp``),
    ε = ρ + sqrt(4ρ ln(sqrt(πρ)/δ)) (Bun & Steinke 2016, Lemma 3.6, as stated by Alabi et al. 2020, App. F Lemma 2;
    when sqrt(πρ)/δ > 1) and the Rényi conversion of Canonne, Kamath & Steinke 2020, Prop. 12
    (``zcdp_to_approx_dp_cks``), which is the smallest of the three for every ρ > 0 and δ < 1 (its ln(1 − 1/α) −
    ln(α)/(α − 1) < 0 improves Prop. 1.3 at every α).  At ρ = 2, δ = 2⁻³⁰: 14.90 (Prop. 1.3 / Lemma 3.6) → 14.17
    (CKS; Google's dp-accounting and OpenDP agree, tests/privacy/test_accounting_crosscheck.py).  Used by
    ``compose`` (rule 6), ``dp_gd.approx_eps_of_rho`` and the audit."""
    eps = zcdp_to_approx_dp(rho, delta)
    arg = math.sqrt(math.pi * rho) / delta
    if arg > 1:
        eps = min(eps, rho + math.sqrt(4.0 * rho * math.log(arg)))
    return min(eps, zcdp_to_approx_dp_cks(rho, delta))


def _cks_eps(a: float, rho: float, log_inv_delta: float) -> float:
    """ε of (α, αρ)-RDP at δ (Canonne, Kamath & Steinke 2020, Prop. 12), valid for every α > 1."""
    return a * rho + log_inv_delta / (a - 1.0) + math.log1p(-1.0 / a) - math.log(a) / (a - 1.0)


def zcdp_to_approx_dp_cks(rho: float, delta: float) -> float:
    """ε such that ρ-zCDP ⇒ (ε, δ)-DP by the Rényi conversion of Canonne, Kamath & Steinke 2020 (Prop. 12):
    (α, αρ)-RDP for every α > 1 gives ε(α) = αρ + ln(1/δ)/(α − 1) + ln(1 − 1/α) − ln(α)/(α − 1), minimised over α.
    Any α is valid, so a near-minimum is a valid, at most slightly conservative ε: a golden-section search on
    ln(α − 1) (ε(α) is unimodal there) to a relative 1e-12 of the bracket, started around Prop. 1.3's optimum
    α − 1 ≈ sqrt(ln(1/δ)/ρ); floored at 0.  Tighter than Prop. 1.3 / Lemma 3.6, most of all at large δ.  Also used
    by the audit to test a ρ claim at the δ where an experiment can see it (docs/audit.md)."""
    if rho < 0 or not (0 < delta < 1):
        raise ValueError(f"need rho >= 0 and delta in (0, 1), got {rho}, {delta}")
    if rho == 0:
        return 0.0
    L = math.log(1.0 / delta)
    f = lambda t: _cks_eps(1.0 + math.exp(t), rho, L)  # noqa: E731  (t = ln(α − 1))
    centre = 0.5 * math.log(L / rho) if L > 0 else 0.0
    lo, hi = centre - 30.0, centre + 30.0
    g = (math.sqrt(5.0) - 1.0) / 2.0
    c, d = hi - g * (hi - lo), lo + g * (hi - lo)
    fc, fd = f(c), f(d)
    for _ in range(200):
        if hi - lo <= 1e-12 * max(1.0, abs(lo)):
            break
        if fc <= fd:
            hi, d, fd = d, c, fc
            c = hi - g * (hi - lo)
            fc = f(c)
        else:
            lo, c, fc = c, d, fd
            d = lo + g * (hi - lo)
            fd = f(d)
    return float(max(0.0, min(fc, fd)))


@functools.lru_cache(maxsize=4096)   # a pure function of two floats, asked once per cell of dpgd_approx
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


#: δ at which ``repeated_release`` states a total of pure or zCDP releases in (ε, δ) (its δ when the releases have one)
REPEATED_DELTA = 1e-6


def advanced_composition(epsilon: float, k: int, delta_prime: float) -> float:
    """ε of k releases that are each (ε, δ)-DP, at total δ = kδ + δ′ (Dwork, Rothblum & Vadhan 2010; Dwork & Roth
    2014, Thm 3.20): sqrt(2k ln(1/δ′))·ε + kε(e^ε − 1)."""
    return math.sqrt(2.0 * k * math.log(1.0 / delta_prime)) * epsilon + k * epsilon * math.expm1(epsilon)


def repeated_release(g: Guarantee, k: int, delta: float | None = None) -> dict[str, object] | None:
    """The total loss of one person who is in ``k`` releases that each guarantee ``g`` (the same rows in each, e.g.
    the 265 drugs of one GDSC cell line), by basic composition and by a tighter composition; None for ``none``.

    * basic: (kε, kδ) (Dwork & Roth 2014, Thm 3.16); a zCDP ``g``: kρ (Bun & Steinke 2016, Lemma 2.3);
    * tighter, in (ε, δ) at ``delta`` (the releases' δ when they have one, else ``REPEATED_DELTA``):
      - pure ε, or an (ε, δ) release that is the conversion of a ρ-zCDP total (``compose`` rule 6 with nothing
        else: ε = ``zcdp_to_approx_dp_best``(ρ, δ), checked): the zCDP total kρ, a pure ε counting as ε²/2
        (Prop. 1.4), converted by ``zcdp_to_approx_dp_best`` (Canonne, Kamath & Steinke 2020) at ``delta`` —
        the release is ρ-zCDP whatever δ it was converted at, so its δ does not add up;
      - an (ε, δ) release without one: advanced composition at δ′ = ``delta`` (total δ = kδ + δ′);
      the smaller ε is kept: for a pure release the basic kε (δ = 0) when the conversion is no better.

    All numbers come from this module (dp-accounting is a test dependency only: tests/privacy/
    test_accounting_crosscheck.py checks them against its RDP and PLD accountants)."""
    if g.kind == "none" or k < 1:
        return None
    k = int(k)
    if g.kind == "zcdp":
        rho_k = k * g.rho
        dl = REPEATED_DELTA if delta is None or not 0 < delta < 1 else float(delta)
        return {"releases": k, "basic": {"rho": tidy(rho_k)},
                "tighter": {"epsilon": tidy(zcdp_to_approx_dp_best(rho_k, dl) if rho_k > 0 else 0.0), "delta": dl,
                            "rho": tidy(rho_k), "method": "zCDP sum, converted (Canonne, Kamath & Steinke 2020)"}}
    eps, d1 = float(g.epsilon), float(g.delta if g.kind == "approx" else 0.0)
    basic = {"epsilon": tidy(k * eps), "delta": tidy(k * d1)}
    dl = float(delta) if delta is not None and 0 < delta < 1 else (d1 if d1 > 0 else REPEATED_DELTA)
    rho = pure_to_zcdp(eps) if g.kind == "pure" else math.nan
    if g.kind == "approx" and math.isfinite(g.rho) and 0 < d1 < 1 and g.rho > 0:
        whole = zcdp_to_approx_dp_best(g.rho, d1)   # the whole (ε, δ) is ρ's conversion: nothing else was added
        rho = g.rho if abs(whole - eps) <= 1e-9 * max(eps, 1e-300) else math.nan
    if math.isfinite(rho):
        rho_k = k * rho
        e_t = zcdp_to_approx_dp_best(rho_k, dl) if rho_k > 0 else 0.0
        tighter = {"epsilon": tidy(e_t), "delta": tidy(dl), "rho": tidy(rho_k),
                   "method": "zCDP sum (a pure ε as ε²/2), converted (Canonne, Kamath & Steinke 2020)"}
    else:
        e_t = advanced_composition(eps, k, dl)
        tighter = {"epsilon": tidy(e_t), "delta": tidy(k * d1 + dl),
                   "method": "advanced composition (Dwork, Rothblum & Vadhan 2010)"}
    if e_t >= k * eps:   # no better than basic: basic it is (with its δ)
        tighter = {**basic, "method": "basic composition (no tighter bound is smaller here)"}
    return {"releases": k, "basic": basic, "tighter": tighter}


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
