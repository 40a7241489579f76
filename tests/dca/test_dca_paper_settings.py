"""The DCA paper settings (the authors' code, DPBayes/dca-nips2017; issue 11): each option does what it says, the
defaults stay ours, and every not-DP choice puts guarantee ``none`` with its reason on the row."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from dpexp.families.dca.algorithms import dlr
from dpexp.privacy.ledger import as_ledger
from dpexp.privacy.mechanisms import PrivacyCalibrationWarning, gaussian_delta
from dpexp.types import Split

REPO = Path(__file__).resolve().parents[2]
PAPER_SEARCH = dict(aux_repeats=2, aux_noise_draws=3, aux_data="row_normalised", aux_score="in_sample",
                    aux_noise_power=4, aux_budget="full", omega_max=2.0)


def _split(n=60, d=3, seed=0, x_scale=3.0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-x_scale, x_scale, (n + 20, d))
    y = X @ rng.normal(0, 0.5, d) + rng.normal(size=n + 20)
    return Split(X[:n], y[:n], X[:0], y[:0], X[n:], y[n:], {"bound_x": 7.5, "bound_y": 7.5})


def _capture(monkeypatch):
    """Record every release_sum call (Z, sensitivity, ε, δ, label) and return the exact sum (no noise)."""
    calls = []

    def fake(Z, sens, eps, delta, setting, ledger, trials, calibration, **kw):
        calls.append(dict(Z=Z.copy(), sens=sens, eps=eps, delta=delta, label=kw.get("label"), cal=calibration))
        return np.repeat(Z.sum(0)[None], trials, axis=0), 1.0

    monkeypatch.setattr(dlr, "release_sum", fake)
    return calls


# ------------------------------------------------------------------------------------------ calibration and δ
def test_classic_calibration_scale_and_what_the_ledger_reports():
    """σ = Δ√(2 ln(1.25/δ))/ε is what the release draws with (through dpexp.privacy); the ledger records the exact
    δ of that σ (Balle & Wang): below the requested δ for small ε, above it for large ε (δ = 1e-3: from ε ≈ 7.5 on;
    0.61 at ε = 31.6), with a note whenever ε ≥ 1 (outside the classic proof); the row stays `approx`."""
    Z = np.random.default_rng(1).uniform(-1, 1, (30, 4))
    for eps, above in ((0.5, False), (3.0, False), (10.0, True), (31.6, True)):
        ledger = as_ledger(np.random.default_rng(2))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyCalibrationWarning)
            _, sig = dlr.release_sum(Z, 2.0, eps, 1e-3, "ta", ledger, 2, "classic")
        assert sig == pytest.approx(2.0 * math.sqrt(2 * math.log(1.25 / 1e-3)) / eps, rel=1e-12)
        g = ledger.guarantee()
        assert g.kind == "approx" and g.epsilon == eps
        assert g.delta == pytest.approx(gaussian_delta(sig, 2.0, eps), rel=1e-9)
        assert (g.delta > 1e-3) is above
        assert ("classic Gaussian calibration" in g.note) is (eps >= 1)


def test_paper_configs_use_the_papers_delta_and_classic_calibration():
    from dpexp.spec import ExperimentSpec, read_yaml

    def load_spec(path):
        return ExperimentSpec.model_validate(read_yaml(path))

    for name, delta in (("dca_gdsc_paper", 1e-3), ("dca_uci_redwine_paper", 1e-4), ("dca_uci_whitewine_paper", 1e-4),
                        ("dca_uci_abalone_paper", 1e-4)):
        spec = load_spec(REPO / "configs" / f"{name}.yaml")
        assert list(np.atleast_1d(spec.privacy.delta)) == [delta], name
        private = [a for a in spec.algorithms if a.name != "np"]
        assert private and all(a.params.get("calibration") == "classic" for a in private), name
        assert all(a.params.get("solver") == "abs_eig" for a in private), name
        assert all("(paper settings)" in a.label for a in private), name
    gdsc = load_spec(REPO / "configs" / "dca_gdsc_paper.yaml")
    assert list(np.atleast_1d(gdsc.sizes.n_private)) == [840]
    assert all(a.params.get("aux_n") == 400 for a in gdsc.algorithms if a.name.endswith("_proj"))


# ------------------------------------------------------------------------------------------ eigenvalue flip
def test_abs_eig_flips_negative_eigenvalues_before_eq13():
    rng = np.random.default_rng(3)
    Q, _ = np.linalg.qr(rng.normal(size=(4, 4)))
    w = np.array([-900.0, -5.0, 400.0, 2000.0])
    XX = (Q * w) @ Q.T
    Xy = rng.normal(size=4) * 100
    Xt = rng.normal(size=(6, 4))
    mu, pred = dlr.fit_predict(XX, Xy, Xt, solver="abs_eig")
    expect = np.linalg.solve(np.eye(4) + (Q * np.abs(w)) @ Q.T, Xy)
    np.testing.assert_allclose(mu, expect, rtol=1e-9)
    np.testing.assert_allclose(pred, Xt @ expect, rtol=1e-9)
    np.testing.assert_allclose(np.linalg.eigvalsh(dlr.abs_eigenvalues(XX)), np.sort(np.abs(w)), rtol=1e-9)
    # a PSD matrix is left alone: abs_eig == direct
    P = (Q * np.abs(w)) @ Q.T
    np.testing.assert_allclose(dlr.fit_predict(P, Xy, Xt, solver="abs_eig")[0], dlr.fit_predict(P, Xy, Xt)[0],
                               rtol=1e-9)


# ------------------------------------------------------------------------------------------ unprojected: data bound
@pytest.mark.parametrize("cls", [dlr.TrustedAggregatorBLR, dlr.DistributedBLR, dlr.InputPerturbationBLR])
def test_bound_y_from_data_and_no_clipping(cls, monkeypatch):
    """c_y = ⌈max |y|⌉ of the clients enters the sensitivity; with clip: false the released terms are those of the
    raw rows (x beyond c_x too); each choice marks the row not DP with its reason."""
    s = _split(x_scale=9.0)                                    # |x| up to 9 > c_x = 7.5
    calls = _capture(monkeypatch)
    out = cls(bound_y_from_data=True, clip=False).run(s, 2.0, 1e-4, np.random.default_rng(0))
    cy = math.ceil(np.abs(s.y_private).max())
    assert calls[0]["sens"] == pytest.approx(dlr.ss_sensitivity(7.5, cy, s.d))
    np.testing.assert_allclose(calls[0]["Z"], dlr.unique_terms(s.X_private, s.y_private))
    g = out.guarantee
    assert g.kind == "none" and dlr.NOT_DP_BOUND_Y in g.note and dlr.NOT_DP_CLIP in g.note
    # each alone: bound from data keeps the clipping (to that bound) and x clipped at c_x
    calls.clear()
    g = cls(bound_y_from_data=True).run(s, 2.0, 1e-4, np.random.default_rng(0)).guarantee
    np.testing.assert_allclose(calls[0]["Z"], dlr.unique_terms(np.clip(s.X_private, -7.5, 7.5), s.y_private))
    assert g.kind == "none" and dlr.NOT_DP_BOUND_Y in g.note and dlr.NOT_DP_CLIP not in g.note
    g = cls(clip=False).run(s, 2.0, 1e-4, np.random.default_rng(0)).guarantee
    assert g.kind == "none" and dlr.NOT_DP_CLIP in g.note and dlr.NOT_DP_BOUND_Y not in g.note


def test_defaults_stay_ours_and_dp():
    s = _split()
    for cls in (dlr.TrustedAggregatorBLR, dlr.DistributedBLR, dlr.InputPerturbationBLR):
        p = cls().params
        assert p.clip and not p.bound_y_from_data and p.solver == "direct" and p.calibration == "analytic"
        assert cls().run(s, 2.0, 1e-4, np.random.default_rng(0)).guarantee.kind == "approx"
    for cls in (dlr.TrustedAggregatorProjBLR, dlr.DistributedProjBLR):
        g = cls(omega_x=1.0, omega_y=1.0).run(s, 2.0, 1e-4, np.random.default_rng(0)).guarantee
        assert g.kind == "approx" and g.epsilon == pytest.approx(2.0)
    p = dlr.TrustedAggregatorProjBLR().params
    assert (p.std_sensitivity, p.aux_repeats, p.aux_noise_draws, p.aux_data, p.aux_score, p.aux_noise_power,
            p.aux_budget, p.aux_n, p.omega_max) == ("ours", 10, 1, "gaussian", "holdout", 2, "remaining", None, 2.1)


# ------------------------------------------------------------------------------------------ projected: std round
@pytest.mark.parametrize("cls", [dlr.TrustedAggregatorProjBLR, dlr.DistributedProjBLR])
def test_std_round_sensitivity_paper_value_is_labelled_under_noised(cls, monkeypatch):
    s = _split()
    calls = _capture(monkeypatch)
    out = cls(std_sensitivity="paper", omega_x=1.0, omega_y=1.0).run(s, 2.0, 1e-4, np.random.default_rng(0))
    std_round = [c for c in calls if c["label"] == "std round"][0]
    assert std_round["sens"] == pytest.approx(math.sqrt(3 * 7.5**2 + 7.5**2))      # √(dR² + R_y²), R = 7.5
    assert std_round["sens"] < dlr.sq_sensitivity(np.full(3, 7.5), 7.5) / 7.4       # 7.5× under the right Δ₂
    assert out.guarantee.kind == "none" and dlr.NOT_DP_STD in out.guarantee.note
    calls.clear()
    g = cls(omega_x=1.0, omega_y=1.0).run(s, 2.0, 1e-4, np.random.default_rng(0)).guarantee
    assert [c for c in calls if c["label"] == "std round"][0]["sens"] == pytest.approx(
        math.sqrt(3 * 7.5**4 + 7.5**4))
    assert dlr.NOT_DP_STD not in g.note            # (the fake release records no spend: see the defaults test)


# ------------------------------------------------------------------------------------------ threshold search
def test_search_noise_scales_as_b4_with_the_authors_option():
    rng = np.random.default_rng(0)
    bx = rng.uniform(0.1, 2, (3, 2, 4))
    by = rng.uniform(0.1, 2, (5, 2))
    s2 = dlr.search_sensitivity(bx, by, 2)
    s4 = dlr.search_sensitivity(bx, by, 4)
    for gx, gy, r in ((0, 0, 0), (2, 4, 1), (1, 3, 0)):
        assert s2[gx, gy, r] == pytest.approx(dlr.ss_sensitivity(bx[gx, r], by[gy, r]))       # eq. (18)
        assert s4[gx, gy, r] == pytest.approx(dlr.ss_sensitivity(bx[gx, r] ** 2, by[gy, r] ** 2))
    # doubling every threshold: ×4 (Δ²) vs ×16 (Δ⁴)
    np.testing.assert_allclose(dlr.search_sensitivity(2 * bx, 2 * by, 2), 4 * s2)
    np.testing.assert_allclose(dlr.search_sensitivity(2 * bx, 2 * by, 4), 16 * s4)


def test_paper_grid_and_search_options_reach_the_search(monkeypatch, isolated_cache):
    grid = dlr.omega_grid(2.0)
    np.testing.assert_allclose(grid, np.arange(1, 21) / 10)
    np.testing.assert_allclose(dlr.omega_grid(), dlr.OMEGA_GRID)
    seen = {}
    real = dlr.choose_thresholds

    def spy(n, d, eps, delta, rng, calibration, setting, n_faulty, **kw):
        seen.update(n=n, eps=eps, delta=delta, calibration=calibration, **kw)
        return real(n, d, eps, delta, rng, calibration, setting, n_faulty, **kw)

    monkeypatch.setattr(dlr, "choose_thresholds", spy)
    s = _split(n=80)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyCalibrationWarning)
        out = dlr.TrustedAggregatorProjBLR(calibration="classic", solver="abs_eig", aux_n=50, **PAPER_SEARCH).run(
            s, 2.0, 1e-3, np.random.default_rng(0))
    assert seen["n"] == 50 and seen["eps"] == 2.0 and seen["delta"] == 1e-3           # aux_n, full ε and δ
    assert (seen["repeats"], seen["noise_draws"], seen["aux_data"], seen["score"], seen["noise_power"],
            seen["solver"]) == (2, 3, "row_normalised", "in_sample", 4, "abs_eig")
    np.testing.assert_allclose(seen["grid"], grid)
    assert any(np.isclose(out.extras["omega_x"], grid)) and any(np.isclose(out.extras["omega_y"], grid))
    assert out.guarantee.kind == "approx"          # search options read no private data: the guarantee is unchanged
    # ours: the remaining (1 − share_std) budget and the clients' N
    seen.clear()
    dlr.TrustedAggregatorProjBLR(aux_repeats=2).run(s, 2.0, 1e-3, np.random.default_rng(0))
    assert seen["n"] == dlr.aux_size(80) and seen["eps"] == pytest.approx(1.4) and seen["delta"] == pytest.approx(7e-4)


def test_in_sample_search_scores_the_fitted_rows_and_is_reproducible():
    """In-sample: with (almost) no noise and no clipping the fit on the auxiliary rows is the exact posterior mean,
    so the large thresholds win; the search is a function of its (public) inputs."""
    kw = dict(grid=dlr.omega_grid(2.0), repeats=2, noise_draws=2, aux_data="row_normalised", score="in_sample",
              noise_power=4)
    a = dlr.choose_thresholds(200, 3, 1.0, 1e-3, np.random.default_rng(1), "analytic", **kw)
    assert a == dlr.choose_thresholds(200, 3, 1.0, 1e-3, np.random.default_rng(1), "analytic", **kw)
    wx, wy = dlr.choose_thresholds(200, 3, 1e7, 0.5, np.random.default_rng(1), "analytic", **kw)
    assert wx > 1.0 and wy > 1.0
    with pytest.raises(Exception, match="aux_data"):
        dlr.choose_thresholds(200, 3, 1.0, 1e-3, np.random.default_rng(1), "analytic", aux_data="uniform")
