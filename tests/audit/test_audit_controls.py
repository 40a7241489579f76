"""Negative controls FAIL and correct mechanisms PASS at the default audit settings (fixed seeds).

Each verdict is a statistical test: for a correct mechanism a FAIL has probability ≤ 1 − confidence = 5% for a
given seed (the seeds are fixed, so the outcome is deterministic); the broken variants leak 2× (half noise) or
unboundedly (zero-noise diagonal, data-dependent bound), far above the claimed ε = 1.
"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from negative_controls import NoisyMeanControl, SSPControl  # noqa: E402

from dpexp.audit import DEFAULT_CONFIDENCE, DEFAULT_TRIALS, FAIL, PASS  # noqa: E402
from dpexp.audit.core import audit_algorithm  # noqa: E402
from dpexp.audit.neighbours import Design  # noqa: E402

SEED = 20240505
DESIGN = Design(x_lo=(0.0,), x_hi=(1.0,), y_lo=-1.0, y_hi=1.0, n=20, X_test=((1.0,),),
                meta={"bounds_x": (0.0, 1.0), "bounds_y": (-1.0, 1.0)})


def audit(alg, delta=0.0, name="control"):
    return audit_algorithm(name, alg, DESIGN, "replace-one", 1.0, delta, DEFAULT_TRIALS, DEFAULT_CONFIDENCE, SEED)


@pytest.mark.parametrize("variant,verdict", [("correct", PASS), ("half_noise", FAIL),
                                             ("lower_bound_twice", FAIL), ("data_dependent", FAIL)])
def test_ssp_controls(variant, verdict):
    r = audit(SSPControl(variant), name=f"ssp_{variant}")
    assert r.verdict == verdict, r
    if verdict == FAIL:
        assert r.epsilon_lb > 1.2 and r.event and r.k_d + r.k_dprime > 0
    else:
        assert r.epsilon_lb <= 1.0


@pytest.mark.parametrize("delta", [0.0, 1e-5])
@pytest.mark.parametrize("factor,verdict", [(1.0, PASS), (0.5, FAIL)])
def test_noisy_mean_controls(delta, factor, verdict):
    """Laplace (δ = 0) and analytic Gaussian (δ = 1e-5) noisy means, correct and with half the noise scale."""
    r = audit(NoisyMeanControl(factor), delta=delta, name=f"mean_{factor}_{delta}")
    assert r.verdict == verdict, r
    assert r.claimed_delta == delta


def test_audit_is_deterministic_for_a_seed():
    r1 = audit(SSPControl("half_noise"), name="x")
    r2 = audit(SSPControl("half_noise"), name="x")
    assert (r1.epsilon_lb, r1.k_d, r1.k_dprime, r1.event) == (r2.epsilon_lb, r2.k_d, r2.k_dprime, r2.event)


def test_controls_are_not_registered():
    from dpexp import registry

    assert not {"control_ssp", "control_mean"} & set(registry.names("algorithm"))


def _ss_theil_sen_origin():
    """dp_ss_theil_sen (default parameters) on the unit-square design restricted to the 'origin' base, whose D has
    every x equal (the design the bug was found on; its own audit plan now uses ``theil_sen_pivot``)."""
    import dataclasses

    from dpexp import registry
    from dpexp.families.slr.audit import unit_square

    alg = registry.get("algorithm", "dp_ss_theil_sen")()
    return alg, dataclasses.replace(unit_square(alg), bases=("origin",))


def test_dp_ss_theil_sen_degenerate_x_regression():
    """Regression (commit e73b8f2): dp_ss_theil_sen returned NaN whenever all x were equal, so the audit found
    ε̂_lb ≈ 9 at claimed ε = 1 on the 'origin' base.  The fixed release must PASS on exactly those pairs, and the
    same pairs must FAIL when the old failure mode is put back (so this test can fail)."""
    from negative_controls import FailsOnDegenerateData

    alg, design = _ss_theil_sen_origin()
    r = audit_algorithm("dp_ss_theil_sen", alg, design, "replace-one", 1.0, 0.0, DEFAULT_TRIALS,
                        DEFAULT_CONFIDENCE, SEED)
    assert r.verdict == PASS and r.epsilon_lb <= 1.0, r
    bad = audit_algorithm("dp_ss_theil_sen_nan", FailsOnDegenerateData(alg), design, "replace-one", 1.0, 0.0,
                          DEFAULT_TRIALS, DEFAULT_CONFIDENCE, SEED)
    assert bad.verdict == FAIL and bad.epsilon_lb > 5.0, bad
    assert "inf" in bad.event, bad  # the witness is the failure atom (NaN is mapped to +inf)
