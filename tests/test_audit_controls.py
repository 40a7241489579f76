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
