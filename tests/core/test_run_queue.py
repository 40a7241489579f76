"""``dpexp run CONFIG... --into ROOT`` (``dpexp.run_queue``, what ``make figures`` runs): every config in its own
one-process run into ROOT/<stem>, side by side, the longest expected first; the same results bytes as a run alone;
``runs.json``; a bad config stops the call before anything runs; a failing config does not stop the others; an
interrupted queue stops its children."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from dpexp import run_queue
from dpexp.cli import main
from tests.signals import sigint_not_ignored

REPO = Path(__file__).resolve().parents[2]
SMALL = ["--repeats", "2", "--set", "sizes.n_private=[0, 100]"]


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DPEXP_CACHE_DIR", str(tmp_path / "cache"))


def _configs(tmp_path: Path) -> list[Path]:
    """Two small configs of different names (demo's and a copy with another seed)."""
    text = (REPO / "configs" / "demo.yaml").read_text()
    a = tmp_path / "cfg" / "alpha.yaml"
    a.parent.mkdir()
    a.write_text(text)
    b = tmp_path / "cfg" / "beta.yaml"
    b.write_text(text.replace("name: demo", "name: demo_beta").replace("seed: ", "seed: 1", 1))
    return [a, b]


def test_side_by_side_gives_the_bytes_of_a_run_alone(tmp_path):
    a, b = _configs(tmp_path)
    root = tmp_path / "results"
    r = CliRunner().invoke(main, ["run", str(a), str(b), "--into", str(root), "--jobs", "2", *SMALL])
    assert r.exit_code == 0, r.output
    assert "[2/2]" in r.output and "2 configs into" in r.output
    for cfg in (a, b):
        alone = tmp_path / f"alone_{cfg.stem}"
        r1 = CliRunner().invoke(main, ["run", str(cfg), "--out", str(alone), "--jobs", "2", "-q", *SMALL])
        assert r1.exit_code == 0, r1.output
        assert (root / cfg.stem / "results.csv").read_bytes() == (alone / "results.csv").read_bytes()
        assert json.loads((root / cfg.stem / "manifest.json").read_text())["jobs"] == 1
    runs = json.loads((root / "runs.json").read_text())
    assert runs["slots"] == 2 and runs["wall_s"] > 0
    assert sorted(Path(d["config"]).stem for d in runs["runs"]) == ["alpha", "beta"]
    for d in runs["runs"]:
        assert d["returncode"] == 0 and d["wall_s"] > 0 and d["cpu_s"] > 0 and d["peak_mib"] > 50
        assert 0 <= d["sys_s"] <= d["cpu_s"]
        assert "cells ->" in d["message"]
    costs = run_queue.read_costs()
    assert set(costs) == {f"{s} --set sizes.n_private=[0, 100] --repeats 2" for s in ("alpha", "beta")}


def test_resumed_or_complete_runs_do_not_overwrite_the_remembered_cost(tmp_path):
    a, b = _configs(tmp_path)
    root = tmp_path / "results"
    assert CliRunner().invoke(main, ["run", str(a), str(b), "--into", str(root), "--jobs", "1", *SMALL]).exit_code == 0
    first = run_queue.read_costs()
    r = CliRunner().invoke(main, ["run", str(a), str(b), "--into", str(root), "--jobs", "1", *SMALL])
    assert r.exit_code == 0 and "already complete" in r.output
    assert run_queue.read_costs() == first


def test_unknown_first_in_the_order_given_then_the_longest_expected(tmp_path):
    root = tmp_path / "r"
    jobs = [run_queue.Job(Path(f"{n}.yaml"), root / n, n) for n in ["short", "new_b", "remembered", "new_a", "previous"]]
    run_queue.remember_costs({"remembered": 500.0, "short": 3.0})
    (root / "previous").mkdir(parents=True)
    (root / "previous" / "manifest.json").write_text(json.dumps(
        {"status": "complete", "seconds_this_invocation": 60.0, "jobs": 2}))
    order = run_queue.plan(jobs)
    assert [j.key for j in order] == ["new_b", "new_a", "remembered", "previous", "short"]
    assert [j.expected_s for j in order] == [float("inf"), float("inf"), 500.0, 120.0, 3.0]


def test_a_bad_config_stops_the_call_before_anything_runs(tmp_path):
    a, b = _configs(tmp_path)
    b.write_text(b.read_text().replace("repeats:", "repeets:"))
    root = tmp_path / "results"
    r = CliRunner().invoke(main, ["run", str(a), str(b), "--into", str(root), "--jobs", "2"])
    assert r.exit_code == 2, r.output
    assert r.output.count("\n") == 1 and "beta.yaml" in r.output
    assert not root.exists()


def test_two_configs_of_one_name_are_refused(tmp_path):
    a, _ = _configs(tmp_path)
    other = tmp_path / "other" / "alpha.yaml"
    other.parent.mkdir()
    other.write_text(a.read_text())
    r = CliRunner().invoke(main, ["run", str(a), str(other), "--into", str(tmp_path / "res")])
    assert r.exit_code == 2 and "would both write" in r.output
    r = CliRunner().invoke(main, ["run", str(a), str(a.with_name("beta.yaml")), "--cluster", "local:2"])
    assert r.exit_code == 2 and "one config per call" in r.output


def test_a_failing_config_does_not_stop_the_others(tmp_path):
    a, b = _configs(tmp_path)
    root = tmp_path / "results"
    root.mkdir()
    (root / "beta").write_text("a file where beta's results folder would go")
    r = CliRunner().invoke(main, ["run", str(a), str(b), "--into", str(root), "--jobs", "2", *SMALL])
    assert r.exit_code == 1, r.output
    assert "beta: FAILED (exit 2)" in r.output and r.output.strip().endswith("failed: beta")
    assert (root / "alpha" / "results.csv").exists()
    runs = {Path(d["config"]).stem: d for d in json.loads((root / "runs.json").read_text())["runs"]}
    assert runs["alpha"]["returncode"] == 0 and runs["beta"]["returncode"] == 2
    assert str(root / "beta") in runs["beta"]["message"]
    r = CliRunner().invoke(main, ["run", str(a), str(b), "--into", str(root), "--jobs", "2", "-q", *SMALL])
    assert r.exit_code == 1 and "alpha" not in r.output                 # -q: only what failed
    assert "beta: FAILED (exit 2)" in r.output and r.output.strip().endswith("failed: beta")
    assert list(run_queue.read_costs()) == ["alpha --set sizes.n_private=[0, 100] --repeats 2"]   # not a failed run's


def test_children_compute_with_one_blas_thread():
    assert all(run_queue.ONE_THREAD[k] == "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"))


def test_one_config_into_a_root_and_out_with_several_refused(tmp_path):
    a, b = _configs(tmp_path)
    root = tmp_path / "results"
    r = CliRunner().invoke(main, ["run", str(a), "--into", str(root), "--jobs", "2", *SMALL])
    assert r.exit_code == 0, r.output
    assert (root / "alpha" / "results.csv").exists() and (root / "runs.json").exists()
    assert not (root / "results.csv").exists() and not (root / "alpha.log").exists()   # a log only where it failed
    r = CliRunner().invoke(main, ["run", str(a), str(b), "--out", str(root)])
    assert r.exit_code == 2 and "--into ROOT" in r.output


def test_a_failed_run_keeps_its_output(tmp_path):
    a, b = _configs(tmp_path)
    root = tmp_path / "results"
    root.mkdir()
    (root / "beta").write_text("in the way")
    r = CliRunner().invoke(main, ["run", str(a), str(b), "--into", str(root), "--jobs", "2", *SMALL])
    assert r.exit_code == 1
    log = root / "beta.log"
    assert f"(output in {log})" in r.output and str(root / "beta") in log.read_text()
    assert not (root / "alpha.log").exists()


@pytest.mark.parametrize("how", ["ctrl-c at the terminal", "sigterm to the queue"])
def test_an_interrupted_queue_stops_every_child_once(tmp_path, how):
    """Ctrl-C reaches the terminal's whole process group; the children run in sessions of their own, so they get
    the one SIGINT the queue forwards, end as an interrupted run does and leave no temporary file; the queue
    exits 130."""
    psutil = pytest.importorskip("psutil")
    a, b = _configs(tmp_path)
    root = tmp_path / "results"
    env = {**os.environ, "DPEXP_CACHE_DIR": str(tmp_path / "cache")}
    with sigint_not_ignored():   # else, with the suite started in the background, the queue ignores the Ctrl-C
        proc = subprocess.Popen([sys.executable, "-m", "dpexp.cli", "run", str(a), str(b), "--into", str(root),
                                 "--jobs", "2", "--repeats", "2000"], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
    parent = psutil.Process(proc.pid)
    deadline = time.monotonic() + 60
    while len(parent.children()) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    children = parent.children()
    assert len(children) == 2
    time.sleep(2.0)
    if how.startswith("ctrl-c"):
        os.killpg(proc.pid, signal.SIGINT)        # the terminal's group: the queue only
    else:
        proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=90)
    assert proc.returncode != 0, out
    if how.startswith("ctrl-c"):
        assert proc.returncode == 130, out
    gone, alive = psutil.wait_procs(children, timeout=30)
    assert not alive
    assert not list(root.rglob("*.tmp"))
    assert not (root / "runs.json").exists()          # written only when the queue is done
