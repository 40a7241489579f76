"""Registry-wide coverage of the audit and the ``run_audit`` entry point."""

import csv

import numpy as np
import pytest

import dpexp.audit as audit_mod
from dpexp import registry
from dpexp.audit import NOT_DP, PASS, AuditResult, run_audit
from dpexp.audit.entries import entry_for
from dpexp.audit.neighbours import candidate_pairs
from dpexp.errors import UserError


@pytest.mark.parametrize("name", registry.builtin_names("algorithm"))
def test_every_registered_algorithm_has_an_audit_entry(name):
    """Fails when a private algorithm is registered without an audit plan (``audit = AuditPlan(...)`` on the class)."""
    cls = registry.get("algorithm", name)
    entry = entry_for(name)
    assert entry is not None, f"{name} ({cls.__module__}) declares no audit plan"
    if not cls.private or not cls.formally_dp:
        assert not entry.audited and "not DP by design" in entry.not_dp
        return
    if entry.skip:  # a documented reason is required (e.g. timing harnesses whose output carries no data)
        assert len(entry.skip) > 20
        return
    assert entry.relation == cls.neighbouring
    # the entry's design must produce splits the algorithm accepts, and outputs of the contract's shape
    alg = cls(**entry.params)
    design = entry.design(alg)
    pair = candidate_pairs(design, entry.relation)[0]
    delta = entry.delta if entry.delta is not None else audit_mod._resolve_delta(alg, entry, design, 1.0, 0)
    out = alg.run(pair.Dprime, entry.epsilon, delta, np.random.default_rng(0), 3)
    assert out.predictions.shape == (3, pair.Dprime.X_test.shape[0])


def test_run_audit_writes_table_and_returns_zero(tmp_path, capsys):
    names = [n for n in ("rplr", "lr") if n in registry.names("algorithm")]
    code = run_audit(names, None, None, 4_000, 0.95, tmp_path, 7, 1)
    assert code == 0
    printed = capsys.readouterr().out
    assert "verdict" in printed
    rows = list(csv.DictReader(open(tmp_path / "audit.csv")))
    assert [r["algorithm"] for r in rows] == names
    assert {r["verdict"] for r in rows} <= {PASS, NOT_DP}
    md = (tmp_path / "audit.md").read_text()
    assert "lower confidence bound" in md and "| rplr |" in md


def test_run_audit_returns_one_on_fail(monkeypatch, tmp_path):
    def fake(name, *args):
        return AuditResult(name, "FAIL", 1.0, 0.0, 3.0, 1000, 0.1, "replace-one", "n", "p", "out >= 1 [D/D']",
                           500, 1, 500, 500)

    monkeypatch.setattr(audit_mod, "audit_entry", fake)
    assert run_audit(["rplr"], None, None, None, 0.95, None, 0, 1) == 1


@pytest.mark.parametrize("kwargs,match", [
    (dict(confidence=1.5), "confidence"), (dict(trials=10), "trials"), (dict(epsilon=-1.0), "epsilon"),
    (dict(delta=1.0), "delta"), (dict(jobs=0), "jobs"), (dict(algorithms=["no_such_alg"]), "no_such_alg")])
def test_run_audit_user_errors(kwargs, match):
    args = dict(algorithms=["rplr"], epsilon=None, delta=None, trials=None, confidence=0.95, out=None, seed=0, jobs=1)
    args.update(kwargs)
    with pytest.raises(UserError, match=match):
        run_audit(**args)


AUDITED = [n for n in registry.builtin_names("algorithm")
           if (e := entry_for(n)) is not None and e.audited]


@pytest.mark.parametrize("name", AUDITED)
def test_trials_within_one_call_are_independent(name):
    """The audit's Clopper–Pearson bounds assume the ``trials`` outputs of ``run`` are i.i.d.  Randomness drawn once
    per call and shared by its trials (a shared tuning draw, one noise vector broadcast over trials) would make 20
    calls of 100 trials differ between calls far more than within them.  Kruskal–Wallis on the first projection;
    with a fixed seed the threshold 1e-3 is a deterministic check that a shared draw (p ≈ 0) cannot pass."""
    from scipy import stats

    entry = entry_for(name)
    alg = registry.get("algorithm", name)(**entry.params)
    design = entry.design(alg)
    delta = entry.delta if entry.delta is not None else audit_mod._resolve_delta(alg, entry, design, 1.0, 0)
    split = candidate_pairs(design, entry.relation)[0].D
    rng = np.random.default_rng(1)
    groups = [np.nan_to_num(alg.run(split, entry.epsilon, delta, rng, 100).predictions[:, 0], nan=1e300)
              for _ in range(20)]
    assert stats.kruskal(*groups).pvalue > 1e-3


def test_audit_table_does_not_depend_on_jobs(tmp_path):
    names = ["plr", "noisy_stats"]

    def table(jobs):
        run_audit(names, None, None, 4_000, 0.95, tmp_path / str(jobs), 3, jobs)
        rows = list(csv.DictReader(open(tmp_path / str(jobs) / "audit.csv")))
        return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]

    assert table(1) == table(2)
