"""Secure mode says which releases are floating-point safe (issue 29): a secure noise source notes every draw from a
textbook continuous sampler (``SecureNoise.textbook_used``), and a ledger whose source drew one reports ``none``
with the samplers named — secure mode is for releases, and those samplers' low bits may reveal the value they
perturb (Mironov 2012).  Every Laplace and Gaussian release goes through OpenDP instead and keeps its guarantee.
The set of algorithms that still draw from a textbook sampler in secure mode is pinned below, so that a change of it
is deliberate (docs/privacy.md lists them)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from dpexp import registry
from dpexp.privacy import fp_safe, mechanisms as mech
from dpexp.privacy.ledger import PrivacyLedger
from dpexp.privacy.noise import SecureNoise

pytestmark = pytest.mark.skipif(not fp_safe.available(), reason="the [secure] extra (OpenDP) is not installed")

_spec = importlib.util.spec_from_file_location("_contract", Path(__file__).with_name("test_contract.py"))
contract = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(contract)
registry.load_all()

#: algorithm → the textbook samplers its secure run draws from (the Gamma-norm of output perturbation, the Gumbel-max
#: of the exponential mechanism, the Student t of smooth sensitivity, the DCA clients' Gaussian shares; the
#: heuristic Laplace of oi_mos and plr_paper, not DP anyway)
TEXTBOOK = {
    "oplr": {"gamma", "normal"}, "oplr_paper": {"gamma"},
    "dp_exp_theil_sen": {"gumbel"}, "dp_wide_theil_sen": {"gumbel"}, "dp_ss_theil_sen": {"gamma", "student t"},
    "ddp": {"normal"}, "ddp_proj": {"normal"}, "dca_timing": {"normal"},
    "oi_mos": {"laplace"}, "plr_paper": {"laplace"},
}


@pytest.mark.parametrize("sampler", ["laplace", "normal", "standard_normal", "gumbel", "exponential", "gamma",
                                     "standard_t"])
def test_every_textbook_draw_is_noted_and_turns_the_guarantee_to_none(sampler):
    noise = SecureNoise()
    lg = PrivacyLedger(noise)
    lg.record(mech.exponential_spend(0.5, 1.0))
    assert lg.guarantee().kind == "pure"
    args = {"gamma": (2.0,), "standard_t": (3.0,)}.get(sampler, ())
    getattr(noise, sampler)(*args, size=3)
    g = lg.guarantee()
    assert g.kind == "none" and "not floating-point safe" in g.reason and noise.textbook_used <= {
        "laplace", "normal", "gumbel", "exponential", "gamma", "student t"} and noise.textbook_used


def test_uniform_bits_and_seeded_draws_are_not_textbook_releases():
    noise = SecureNoise()
    noise.random(4), noise.uniform(0.0, 1.0, 4), noise.integers(0, 10, 4), noise.bits64(4)
    assert noise.textbook_used == set()
    seeded = PrivacyLedger(np.random.default_rng(0))
    seeded.noise.gamma(2.0, size=3)
    seeded.record(mech.exponential_spend(0.5, 1.0))
    assert seeded.guarantee().kind == "pure"      # seeded mode: the idealised guarantee (simulation)


@pytest.mark.usefixtures("isolated_cache")
@pytest.mark.parametrize("name", [n for n in registry.names("algorithm")
                                  if not registry.get("algorithm", n).__module__.startswith("tests")])
def test_secure_runs_draw_textbook_noise_only_where_stated(name):
    cls = registry.get("algorithm", name)
    alg = cls(**contract.PROBE_PARAMS.get(name, {}))
    noise = SecureNoise()
    out = alg.run(contract.probe_split(cls), 1.0, 1e-6, PrivacyLedger(noise), 1)
    assert noise.textbook_used == TEXTBOOK.get(name, set())
    if noise.textbook_used:
        assert out.guarantee.kind == "none"
        if cls(**contract.PROBE_PARAMS.get(name, {})).run(contract.probe_split(cls), 1.0, 1e-6,
                                                          PrivacyLedger(np.random.default_rng(0)), 1
                                                          ).guarantee.kind != "none":
            assert "textbook floating-point sampler" in out.guarantee.reason
