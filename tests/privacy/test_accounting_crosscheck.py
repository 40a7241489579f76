"""dpexp's accounting against Google's dp-accounting (a test dependency, the ``test`` extra; issue 29): the analytic
Gaussian calibration, the zCDP → (ε, δ) conversion, composition, and the totals the manifest states over releases
about the same people (GDSC: 265 drugs per cell line).  Every dpexp number is valid (never below the exact PLD
value) and as tight as dp-accounting's RDP accountant or tighter (a continuous order against its grid)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpexp.privacy import accounting as acc
from dpexp.privacy.guarantee import Guarantee, Spend
from dpexp.privacy.mechanisms import analytic_gaussian_sigma, gaussian_sigma_zcdp

dpa = pytest.importorskip("dp_accounting")
from dp_accounting import dp_event  # noqa: E402
from dp_accounting.pld import PLDAccountant  # noqa: E402
from dp_accounting.rdp import RdpAccountant  # noqa: E402


def rdp_eps(event, delta: float, count: int = 1) -> float:
    a = RdpAccountant()
    a.compose(event, count)
    return a.get_epsilon(delta)


def pld_eps(event, delta: float, count: int = 1) -> float:
    a = PLDAccountant(value_discretization_interval=1e-3)
    a.compose(event, count)
    return a.get_epsilon(delta)


def test_the_known_value_at_rho_2():
    # the number: Bun & Steinke's Prop. 1.3 / Lemma 3.6 gave 14.90; the tightest valid conversion 14.17
    assert acc.zcdp_to_approx_dp(2.0, 2.0 ** -30) == pytest.approx(14.8979, abs=1e-3)
    assert acc.zcdp_to_approx_dp_best(2.0, 2.0 ** -30) == pytest.approx(14.173, abs=1e-3)
    assert acc.zcdp_to_approx_dp_best(2.0, 2.0 ** -30) <= rdp_eps(dp_event.ZCDpEvent(2.0), 2.0 ** -30)


@pytest.mark.parametrize("rho", [1e-4, 0.013, 0.5, 2.0, 300.0])
@pytest.mark.parametrize("delta", [2.0 ** -30, 1e-5, 0.1])
def test_zcdp_to_approx_matches_rdp_and_is_valid(rho, delta):
    ours = acc.zcdp_to_approx_dp_best(rho, delta)
    rdp = rdp_eps(dp_event.ZCDpEvent(rho), delta)
    assert ours <= rdp * (1 + 1e-9) + 1e-12                  # as tight as dp-accounting's grid of orders, or tighter
    assert ours >= rdp * (1 - 5e-2) - 1e-6   # the same conversion (CKS 2020 Prop. 12); its grid of orders is coarse
    # valid: never below the exact (ε, δ) of a Gaussian with that ρ (ρ = 1/(2z²)), which is ρ-zCDP
    z = 1.0 / math.sqrt(2.0 * rho)
    assert ours >= pld_eps(dp_event.GaussianDpEvent(z), delta) - 1e-3
    # the inverse is consistent
    if ours > 0:
        assert acc.approx_dp_to_zcdp_best(ours, delta) == pytest.approx(rho, rel=1e-6)


@pytest.mark.parametrize("eps,delta", [(0.1, 1e-5), (1.0, 1e-5), (1.0, 1e-9), (4.0, 1e-6), (10.0, 1e-3)])
def test_analytic_gaussian_matches_dp_accounting(eps, delta):
    ours = analytic_gaussian_sigma(1.0, eps, delta)
    theirs = dpa.get_sigma_gaussian(eps, delta)
    assert ours == pytest.approx(theirs, rel=1e-4)
    assert pld_eps(dp_event.GaussianDpEvent(ours), delta) <= eps + 2e-3   # the calibration meets its (ε, δ)


def test_composition_of_gaussian_and_laplace_releases():
    # T Gaussian steps (zCDP, as dpgd_zcdp) then converted: dpexp's ledger composition = dp-accounting's RDP
    T, rho_t, delta = 80, 0.5 / 80, 2.0 ** -30
    sigma = gaussian_sigma_zcdp(1.0, rho_t)
    spends = [Spend("gaussian", "zcdp", rho=rho_t) for _ in range(T)]
    g = acc.compose(spends, approx_delta=delta)
    theirs = rdp_eps(dp_event.GaussianDpEvent(sigma), delta, T)
    assert g.rho == pytest.approx(0.5) and g.epsilon <= theirs * (1 + 1e-9)
    assert g.epsilon >= theirs * (1 - 2e-3)
    assert g.epsilon >= pld_eps(dp_event.GaussianDpEvent(sigma), delta, T) - 1e-3
    # k pure Laplace releases: basic composition, exactly the PLD's ε at δ = 0
    k, e = 5, 0.3
    g = acc.compose([Spend("laplace", "pure", epsilon=e) for _ in range(k)])
    assert g.epsilon == pytest.approx(k * e)
    assert k * e * 0.9 <= pld_eps(dp_event.LaplaceDpEvent(1.0 / e), 1e-12, k) <= k * e + 1e-2   # basic: tight here


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
def test_repeated_pure_releases_over_the_same_people(eps):
    k, delta = 265, 1e-6
    tot = acc.repeated_release(Guarantee.pure(eps), k)
    assert tot["releases"] == k and tot["basic"] == {"epsilon": pytest.approx(k * eps), "delta": 0.0}
    t = tot["tighter"]
    pld = pld_eps(dp_event.LaplaceDpEvent(1.0 / eps), delta, k)
    assert t["epsilon"] <= k * eps
    assert t["epsilon"] >= pld - 1e-2                          # valid: the exact composition of Laplace is smaller
    if "rho" in t:   # via zCDP: dp-accounting's conversion of the same ρ
        assert t["rho"] == pytest.approx(k * eps * eps / 2)
        assert t["epsilon"] == pytest.approx(rdp_eps(dp_event.ZCDpEvent(k * eps * eps / 2), delta), rel=2e-3)
    if eps == 0.1:   # far tighter than basic: 26.5 → about 9.2
        assert t["epsilon"] < 0.4 * k * eps


def test_repeated_gaussian_and_zcdp_releases():
    k, rho, delta = 265, 0.01, 1e-6
    g = acc.compose([Spend("gaussian", "zcdp", rho=rho)], approx_delta=1e-7)     # (ε, δ) converted from ρ
    tot = acc.repeated_release(g, k, delta)
    assert tot["tighter"]["rho"] == pytest.approx(k * rho)
    assert tot["tighter"]["epsilon"] == pytest.approx(rdp_eps(dp_event.ZCDpEvent(k * rho), delta), rel=2e-3)
    z = acc.repeated_release(Guarantee("zcdp", rho=rho), k, delta)
    assert z["basic"] == {"rho": pytest.approx(k * rho)} and z["tighter"]["epsilon"] == tot["tighter"]["epsilon"]
    # an (ε, δ) guarantee that is not one ρ's conversion: advanced composition (or basic, whichever is smaller)
    a = acc.repeated_release(Guarantee("approx", 0.05, 1e-9), k, delta)
    assert a["tighter"]["epsilon"] == pytest.approx(min(k * 0.05, acc.advanced_composition(0.05, k, delta)))
    assert acc.repeated_release(Guarantee.none("x"), k) is None


def test_repeated_releases_in_the_manifest_and_the_report(run_config, monkeypatch):
    from pathlib import Path

    from dpexp.report.page import _repeated_table

    monkeypatch.setenv("DPEXP_DATA_DIR", str(Path(__file__).parents[1] / "gdsc" / "fixtures"))
    cfg = {"name": "rep", "seed": 2, "repeats": 1,
           "datasets": [{"name": "gdsc", "params": {"d": 5, "test_pool": 6, "public_pool": 4}, "subsets": {"first": 3}}],
           "sizes": {"n_private": 10, "n_public": 2, "n_test": 6}, "privacy": {"epsilon": 1.0},
           "algorithms": [{"name": "rplr", "params": {"p1": 0.35, "p2": 0.6, "p3": 0.05, "omega_x": 1.0,
                                                      "omega_y": 1.0}}, {"name": "lr"}],
           "metrics": ["spearman"]}
    out, _ = run_config(cfg)
    import json

    man = json.loads((out / "manifest.json").read_text())
    reps = man["privacy_summary"]["repeated_releases"]
    assert [r["algorithm"] for r in reps] == ["rplr"]          # lr is not DP: no total
    r = reps[0]
    assert r["releases"] == 3 and r["basic"]["epsilon"] == pytest.approx(3.0)
    assert r["tighter"]["epsilon"] == pytest.approx(min(3.0, acc.zcdp_to_approx_dp_best(1.5, acc.REPEATED_DELTA)))
    html = str(_repeated_table(man))
    assert "Total over releases about the same people" in html and "basic composition" in html
    assert str(_repeated_table({"privacy_summary": {"repeated_releases": []}})) == ""
    assert np.isfinite(r["tighter"]["epsilon"])
