"""Spent ≤ asked (issue 29): a cell whose derived spend exceeds what it asked for fails with a one-line reason, the
run exits 1 and the manifest counts it; the audit FAILs such a claim by arithmetic (the budget-overspend mutant);
an estimate that is not finite fails its cell too."""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

from dpexp.audit import FAIL
from dpexp.audit.mutants import MUTANTS, audit_mutant, scaled
from dpexp.privacy.budget import SPEND_RTOL, asked, check_spend, overspend
from dpexp.privacy.guarantee import Guarantee
from dpexp.results import read_results
from dpexp.types import Output

CFG = textwrap.dedent("""\
    name: spend
    seed: 5
    repeats: 1
    datasets:
      - name: honkela_synthetic
        params: {d: 2}
    sizes:
      n_private: 40
      n_public: 5
      n_test: 10
    privacy:
      epsilon: [1.0, 2.0]
    algorithms:
      - name: lr
      - name: rplr
        params: {p1: 0.35, p2: 0.6, p3: 0.05, omega_x: 1.0, omega_y: 1.0}
    metrics: [mae]
    """)

RPLR_SPLIT = "dpexp.families.gdsc.algorithms.rplr:RobustPrivateLR.budget_split"


def test_overspend_by_kind():
    assert overspend(Guarantee.pure(1.0), 1.0, 0.0) == ""
    assert overspend(Guarantee.pure(1.0 * (1 + SPEND_RTOL / 2)), 1.0, 0.0) == ""      # float dust of a composition
    assert overspend(Guarantee.pure(0.3 + 0.6 + 0.1), 1.0, 0.0) == ""
    msg = overspend(Guarantee.pure(1.1), 1.0, 0.0)
    assert msg.startswith("privacy overspend: spent ε = 1.1 > asked ε = 1") and "\n" not in msg
    assert overspend(Guarantee("approx", 1.0, 1e-5), 1.0, 1e-5) == ""
    assert "δ = 2e-05 > asked δ = 1e-05" in overspend(Guarantee("approx", 1.0, 2e-5), 1.0, 1e-5)
    assert "asked δ = 0" in overspend(Guarantee("approx", 1.0, 1e-9), 1.0, 0.0)   # δ > 0 where none was asked
    assert overspend(Guarantee("zcdp", rho=0.5), 1.0, 0.0) == ""                     # ρ = ε²/2
    assert "ρ = 0.6 > asked ρ = ε²/2 = 0.5" in overspend(Guarantee("zcdp", rho=0.6), 1.0, 0.0)
    assert overspend(Guarantee.none("not DP"), 1.0, 0.0) == "" and overspend(None, 1.0, 0.0) == ""


def test_asked_takes_the_algorithm_delta_when_the_cell_has_none():
    from dpexp import registry

    registry.load_all()
    gd = registry.get("algorithm", "dpgd_approx")()
    assert asked(gd, 1.0, 0.0) == (1.0, 2.0 ** -30, 0.5)
    assert asked(gd, 1.0, 1e-6)[1] == 1e-6
    assert asked(registry.get("algorithm", "rplr")(), 2.0, 0.0) == (2.0, 0.0, 2.0)
    assert check_spend(gd, Guarantee("approx", 1.0, 2.0 ** -30), 1.0, 0.0) == ""


def test_an_overspending_cell_fails_with_one_line_and_exit_1(cli, write_config, tmp_path):
    cfg = write_config(CFG, "spend")
    with scaled(RPLR_SPLIT, factor=1.1):    # the budget shares sum to 1.1
        r = cli(["run", str(cfg), "--out", str(tmp_path / "a"), "--jobs", "1", "-q"])
    assert r.exit_code == 1
    df = read_results(tmp_path / "a")
    rplr, lr = df[df.algorithm == "rplr"], df[df.algorithm == "lr"]
    assert len(rplr) and rplr["error"].str.contains("privacy overspend: spent ε = 1.09 > asked ε = 1 ").any()  # 0.1ε σ̂ + 1.1·0.9ε
    assert rplr["error"].str.contains("privacy overspend").all() and rplr["value"].isna().all()
    assert (rplr["guarantee"] == "none").all() and (lr["error"].fillna("") == "").all()
    man = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert man["status"] == "complete_with_failures" and man["failures"]["count"] == len(rplr)
    # the same run without the bug: every cell within its ask
    assert cli(["run", str(cfg), "--out", str(tmp_path / "b"), "--jobs", "1", "-q"]).exit_code == 0


def test_the_overspend_mutant_is_detected_by_arithmetic():
    m = {m.name: m for m in MUTANTS}["rplr/budget-overspend"]
    assert m.violation and m.kind == "overspend"
    r = audit_mutant(m.name)
    assert r.verdict == FAIL and r.trials == 0 and "privacy overspend" in r.note
    assert r.epsilon_lb > r.claimed_epsilon


@pytest.mark.parametrize("bad,why", [
    (np.array([[np.inf, 1.0]]), "infinite predictions"),
    (np.array([[np.nan, 1.0]]), "NaN at some test points only"),
])
def test_a_non_finite_estimate_fails_its_cell(bad, why):
    from dpexp.runner import _checked, _non_finite

    ok = Output(np.array([[1.0, 2.0]]), guarantee=Guarantee.pure(1.0))
    failed_trial = Output(np.array([[np.nan, np.nan], [1.0, 2.0]]), guarantee=Guarantee.pure(1.0))  # ⊥: kept
    assert _non_finite(ok) == "" and _non_finite(failed_trial) == ""
    assert "coefficients" in _non_finite(Output(np.array([[1.0, 2.0]]), coef=np.array([[np.nan]])))
    out = _checked(None, [ok, Output(bad, guarantee=Guarantee.pure(1.0)), failed_trial], 1.0, 0.0)
    assert out[0] is ok and out[2] is failed_trial and why in str(out[1])


def test_the_papers_classic_calibration_is_labelled_not_dp_not_failed():
    """Only δ over the ask, from an algorithm told to use the classic calibration: rows say none with the excess;
    any other excess (ε, or without calibration: classic) is not excused."""
    from types import SimpleNamespace

    from dpexp.privacy.budget import paper_calibration_excess

    classic = SimpleNamespace(params=SimpleNamespace(calibration="classic"))
    analytic = SimpleNamespace(params=SimpleNamespace(calibration="analytic"))
    over_delta = Guarantee("approx", 10.0, 2.7e-4)
    g = paper_calibration_excess(classic, over_delta, 10.0, 1e-4)
    assert g is not None and g.kind == "none"
    assert "classic Gaussian calibration at ε = 10 spends δ = 0.00027 > the asked δ = 0.0001" in g.reason
    assert paper_calibration_excess(analytic, over_delta, 10.0, 1e-4) is None
    assert paper_calibration_excess(classic, Guarantee("approx", 10.5, 2.7e-4), 10.0, 1e-4) is None   # ε over too
    assert paper_calibration_excess(classic, Guarantee("approx", 10.0, 1e-5), 10.0, 1e-4) is None     # no excess
