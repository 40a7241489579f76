"""Spent ≤ asked: the check that a run's derived guarantee stays within the budget its cell asked for.

A cell asks for (ε, δ); its rows carry what the run *spent*, composed by the ledger from the mechanisms it called
(``PrivacyLedger.guarantee``).  ``overspend`` compares the two and says, in one line, where the spend exceeds the
ask.  The runner fails such a cell (its ``error`` column, exit code 1 like any failed cell) and the audit FAILs such
an algorithm deterministically, before any statistics (``dpexp.audit.core``).

What a cell asks for (``asked``):

* ε: the cell's ε;
* δ: the cell's δ, or — when it is 0 — the algorithm's own ``params.delta`` (an algorithm such as ``dpgd_approx``
  that needs δ > 0 states its default δ there);
* ρ (a ``zcdp`` guarantee): ε²/2, the zCDP budget an ε-DP mechanism has (Bun & Steinke 2016, Prop. 1.4), which is
  what dpexp's zCDP variants are calibrated to (``dpgd_zcdp``: ρ = ε²/2).

A ``none`` guarantee spends nothing in the DP sense and is never an overspend (its rows say why it is not DP).

One excess is a paper's choice rather than a bug: the classic Gaussian calibration σ = Δ₂·sqrt(2 ln(1.25/δ))/ε
(Dwork & Roth 2014, Thm A.1), proven for ε < 1 only, which a paper-protocol config selects explicitly
(``calibration: classic``, the DCA paper settings).  At large ε its true δ exceeds the asked one.  Such a cell is
not failed: its rows say ``none`` with the excess as the reason (``paper_calibration_excess``), as every other paper
choice outside DP does, so the paper's point is reproduced and labelled.  Any other excess fails the cell.

Tolerance: ``SPEND_RTOL`` = 1e-9, relative.  A composed total is a ``math.fsum`` of shares (ε·p1 + ε·p2 + ε·p3, T
steps of ε/T) and a conversion solved by bisection to a relative 1e-12; its floating-point error is a few ulps
(≤ 1e-15 relative), and ``tidy`` moves it by at most a relative 1e-14.  1e-9 is six orders of magnitude above that
dust and six below any overspend worth a report (a share of 1.001 is 1e-3): it never fails an honest cell and never
lets a real overspend through.
"""

from __future__ import annotations

import math
from typing import Any

from dpexp.privacy.guarantee import Guarantee

#: relative tolerance of the spend check (module docstring: float dust of a composed total ≪ 1e-9 ≪ any real bug)
SPEND_RTOL = 1e-9


def asked(algorithm: Any, epsilon: float, delta: float) -> tuple[float, float, float]:
    """(ε, δ, ρ) a cell of ``algorithm`` asks for at the requested (``epsilon``, ``delta``) (module docstring)."""
    eps = float(epsilon)
    dl = float(delta) if delta else 0.0
    if dl <= 0:
        own = getattr(getattr(algorithm, "params", None), "delta", None)
        if isinstance(own, (int, float)) and not isinstance(own, bool) and 0 < own < 1:
            dl = float(own)
    return eps, dl, 0.5 * eps * eps


def _over(spent: float, budget: float, rtol: float) -> bool:
    return math.isfinite(spent) and spent > budget * (1.0 + rtol)


def overspend(g: Guarantee | None, epsilon: float, delta: float, rho: float | None = None,
              rtol: float = SPEND_RTOL) -> str:
    """'' when ``g`` is within the ask (ε, δ[, ρ]; ρ defaults to ε²/2), else one line naming what was exceeded,
    e.g. 'privacy overspend: spent ε = 1.1 > asked ε = 1'."""
    if g is None or g.kind == "none":
        return ""
    rho = 0.5 * epsilon * epsilon if rho is None else rho
    over = []
    if g.kind == "zcdp":
        if _over(g.rho, rho, rtol):
            over.append(f"ρ = {g.rho:g} > asked ρ = ε²/2 = {rho:g}")
    else:
        if _over(g.epsilon, epsilon, rtol):
            over.append(f"ε = {g.epsilon:g} > asked ε = {epsilon:g}")
        if g.kind == "approx" and _over(g.delta, delta, rtol):
            over.append(f"δ = {g.delta:g} > asked δ = {delta:g}")
    if not over:
        return ""
    return f"privacy overspend: spent {' and '.join(over)} (relative tolerance {rtol:g})"


def check_spend(algorithm: Any, g: Guarantee | None, epsilon: float, delta: float) -> str:
    """``overspend`` of ``g`` against what a cell of ``algorithm`` asks for at (``epsilon``, ``delta``)."""
    if g is None or g.kind == "none":
        return ""
    eps, dl, rho = asked(algorithm, epsilon, delta)
    return overspend(g, eps, dl, rho)


def paper_calibration_excess(algorithm: Any, g: Guarantee | None, epsilon: float, delta: float) -> Guarantee | None:
    """The ``none`` guarantee an overspending cell's rows carry instead of failing — when the algorithm was told to
    use the paper's classic Gaussian calibration (``params.calibration == "classic"``) and the only excess is δ
    (module docstring) — or None (no excess, or one that fails the cell)."""
    if g is None or g.kind != "approx" or getattr(getattr(algorithm, "params", None), "calibration", None) != "classic":
        return None
    eps, dl, _ = asked(algorithm, epsilon, delta)
    if _over(g.epsilon, eps, SPEND_RTOL) or not _over(g.delta, dl, SPEND_RTOL):
        return None
    return g.not_dp(f"the paper's classic Gaussian calibration at ε = {eps:g} spends δ = {g.delta:.3g} > the asked "
                    f"δ = {dl:g} (proven for ε < 1 only; calibration: classic)")
