"""The Dask back-end: the same bytes as --jobs 1 on a LocalCluster and on a separately started scheduler + 2 workers
(127.0.0.1, random free ports), a worker killed mid-run, the driver killed mid-run and resumed, a worker without
the data; SIGTERM and Ctrl-C on loky and a LocalCluster (one line, exit 143 / 130, resumable)."""

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

from dpexp.cli import main
from tests.signals import sigint_not_ignored

pytest.importorskip("distributed")

REPO = Path(__file__).resolve().parents[2]
SLR_FIX = REPO / "tests" / "slr" / "fixtures"

SLOW = ("plr", "{sleep_ms: 70, noise: 0.5}")   # slow_config(*SLOW): the run every test here kills or compares



def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, TQDM_DISABLE="1", **extra)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("DPEXP_CLUSTER", None)
    return env


def _wait_for(cond, what: str, timeout: float = 120.0) -> None:
    deadline = time.time() + timeout  # generous: the machine may be busy with other tests
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class DaskProcesses:
    """A `dask scheduler` and `dask worker`s as subprocesses on 127.0.0.1 (random free ports), each in its own
    process group so that one can be killed with everything it started."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.sched_file = root / "scheduler.json"
        self.worker_data = root / "worker_data"   # empty: these workers have no data files
        self.worker_data.mkdir()
        self.env = _env(DPEXP_DATA_DIR=str(self.worker_data))
        self.scheduler = self._spawn(["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                      "--scheduler-file", str(self.sched_file)], "scheduler")
        _wait_for(lambda: self.sched_file.exists() and self.sched_file.stat().st_size > 0, "the scheduler")
        self.address = json.loads(self.sched_file.read_text())["address"]
        self.workers = [self.start_worker(i) for i in range(2)]
        self.wait_workers(2)

    def _spawn(self, args: list[str], name: str) -> subprocess.Popen:
        log = open(self.root / f"{name}.log", "ab")
        return subprocess.Popen([sys.executable, "-m", "dask", *args], cwd=self.root, env=self.env,
                                stdout=log, stderr=log, start_new_session=True)

    def start_worker(self, i: int) -> subprocess.Popen:
        return self._spawn(["worker", "--scheduler-file", str(self.sched_file), "--host", "127.0.0.1",
                            "--nthreads", "1", "--nworkers", "1", "--no-dashboard", "--name", f"w{i}"], f"worker{i}")

    def n_workers(self) -> int:
        from distributed import Client

        with Client(self.address, timeout=30) as c:
            return len(c.scheduler_info()["workers"])

    def wait_workers(self, n: int) -> None:
        _wait_for(lambda: self.n_workers() == n, f"{n} dask workers")

    @staticmethod
    def kill(proc: subprocess.Popen) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()

    def close(self) -> None:
        for p in [*self.workers, self.scheduler]:
            self.kill(p)


@pytest.fixture(scope="module")
def dask_procs(tmp_path_factory):
    procs = DaskProcesses(tmp_path_factory.mktemp("dask"))
    try:
        yield procs
    finally:
        procs.close()


@pytest.fixture(scope="module")
def slow_ref(cli, slow_config, tmp_path_factory):
    """The --jobs 1 results of SLOW (the reference bytes) and its config."""
    root = tmp_path_factory.mktemp("slow")
    cfg = root / "slow.yaml"
    cfg.write_text(slow_config(*SLOW))
    assert cli(["run", str(cfg), "--out", str(root / "ref"), "--jobs", "1", "-q"]).exit_code == 0
    return cfg, (root / "ref" / "results.csv").read_bytes()


def test_local_cluster_equals_jobs1_and_jobs2_on_the_demo(cli, tmp_path):
    demo = REPO / "configs" / "demo.yaml"
    outs = {}
    for tag, how in [("j1", ["--jobs", "1"]), ("j2", ["--jobs", "2"]), ("local", ["--cluster", "local:2"])]:
        res = cli(["run", str(demo), "--out", str(tmp_path / tag), "--repeats", "2", "-q", *how])
        assert res.exit_code == 0, res.output
        outs[tag] = (tmp_path / tag / "results.csv").read_bytes()
    assert outs["j1"] == outs["j2"] == outs["local"]
    man = json.loads((tmp_path / "local" / "manifest.json").read_text())
    assert man["executor"].startswith("dask LocalCluster, 2 processes")


def test_separate_scheduler_and_workers_give_the_same_bytes(cli, dask_procs, slow_ref, tmp_path):
    cfg, ref = slow_ref
    res = cli(["run", str(cfg), "--out", str(tmp_path / "o"), "-q", "--cluster", dask_procs.address])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "o" / "results.csv").read_bytes() == ref
    man = json.loads((tmp_path / "o" / "manifest.json").read_text())
    assert man["executor"] == f"dask {dask_procs.address} (2 workers, 2 threads)"


def test_cluster_from_the_environment_and_choice_errors(cli, dask_procs, slow_ref, tmp_path, monkeypatch):
    cfg, ref = slow_ref
    monkeypatch.setenv("DPEXP_CLUSTER", dask_procs.address)
    assert cli(["run", str(cfg), "--out", str(tmp_path / "env"), "-q"]).exit_code == 0
    man = json.loads((tmp_path / "env" / "manifest.json").read_text())
    assert man["executor"].startswith(f"dask {dask_procs.address}")
    assert (tmp_path / "env" / "results.csv").read_bytes() == ref
    # --jobs on the command line wins over the environment
    assert cli(["run", str(cfg), "--out", str(tmp_path / "j"), "-q", "--jobs", "1"]).exit_code == 0
    assert json.loads((tmp_path / "j" / "manifest.json").read_text())["executor"] == "in process"
    res = CliRunner().invoke(main, ["run", str(cfg), "--out", str(tmp_path / "b"), "--jobs", "2",
                                    "--cluster", "local:2"])
    assert res.exit_code == 2 and "either --jobs" in res.output
    res = CliRunner().invoke(main, ["run", str(cfg), "--out", str(tmp_path / "b"), "--cluster", "local:zero"])
    assert res.exit_code == 2 and "local:N" in res.output and len(res.output.strip().splitlines()) == 1


def test_unreachable_scheduler_is_one_line(slow_ref, tmp_path):
    import socket

    cfg, _ = slow_ref
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.run([sys.executable, "-m", "dpexp.cli", "run", str(cfg), "--out", str(tmp_path / "o"),
                           "--cluster", f"tcp://127.0.0.1:{port}"], cwd=REPO, capture_output=True, text=True,
                          env=_env(DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT="2s"), timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"cannot reach the Dask scheduler at tcp://127.0.0.1:{port}" in lines[0]


def test_worker_without_the_data_is_named_with_the_path(dask_procs, tmp_path, monkeypatch):
    cfg = tmp_path / "stock.yaml"
    cfg.write_text("name: stock\nseed: 1\nrepeats: 2\ntrials: 5\ndatasets: [{name: stock_exchange}]\n"
                   "sizes: {n_private: all, n_test: 0}\nprivacy: {epsilon: 1.0}\nalgorithms: [{name: ols}]\n"
                   "metrics: [error_bound]\n")
    monkeypatch.setenv("DPEXP_DATA_DIR", str(SLR_FIX))  # the driver has the data, the workers do not
    res = CliRunner().invoke(main, ["run", str(cfg), "--out", str(tmp_path / "o"), "-q",
                                    "--cluster", dask_procs.address])
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1, res.output
    assert lines[0].startswith("error: worker tcp://127.0.0.1:")
    assert "data file not found" in lines[0] and str(dask_procs.worker_data) in lines[0]
    assert not (tmp_path / "o" / "results.csv").exists()


def _driver(cfg: Path, out: Path, cluster: str, log: Path) -> subprocess.Popen:
    with open(log, "wb") as err:
        return subprocess.Popen([sys.executable, "-m", "dpexp.cli", "run", str(cfg), "--out", str(out),
                                 "--cluster", cluster], cwd=REPO, env=_env(), start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=err)


def _parts(out: Path) -> int:
    return len(list((out / ".parts").glob("*.csv")))


def test_driver_killed_on_the_cluster_path_resumes_to_the_same_bytes(cli, dask_procs, slow_ref, tmp_path):
    cfg, ref = slow_ref
    out, log = tmp_path / "o", tmp_path / "driver.log"
    proc = _driver(cfg, out, dask_procs.address, log)
    _wait_for(lambda: _parts(out) >= 3 or proc.poll() is not None, "3 parts")
    exited = proc.poll()
    DaskProcesses.kill(proc)
    done = _parts(out)
    assert exited is None, f"the run ended before it was killed: {log.read_text()[-2000:]}"
    assert 3 <= done < 24 and not (out / "results.csv").exists()
    res = cli(["run", str(cfg), "--out", str(out), "-q", "--cluster", dask_procs.address])
    assert res.exit_code == 0, res.output
    assert f"{done} chunks resumed" in res.output
    assert (out / "results.csv").read_bytes() == ref


def test_worker_killed_mid_run_the_run_still_finishes_to_the_same_bytes(dask_procs, slow_ref, tmp_path):
    cfg, ref = slow_ref
    out, log = tmp_path / "o", tmp_path / "driver.log"
    proc = _driver(cfg, out, dask_procs.address, log)
    try:
        _wait_for(lambda: _parts(out) >= 3 or proc.poll() is not None, "3 parts")
        assert proc.poll() is None, f"the run ended before a worker was killed: {log.read_text()[-2000:]}"
        DaskProcesses.kill(dask_procs.workers[0])  # the nanny and its worker process, mid-run
        assert _parts(out) < 24
        assert proc.wait(timeout=300) == 0, log.read_text()[-3000:]
    finally:
        DaskProcesses.kill(proc)
        dask_procs.workers[0] = dask_procs.start_worker(0)  # later tests get two workers again
    assert (out / "results.csv").read_bytes() == ref
    dask_procs.wait_workers(2)


@pytest.mark.parametrize("how, sig, group", [
    (["--jobs", "2"], signal.SIGTERM, False),           # kill PID / a scheduler's cancel of the driver
    (["--cluster", "local:2"], signal.SIGTERM, True),   # scancel: every process of the job
    (["--cluster", "local:2"], signal.SIGINT, True),    # Ctrl-C in a terminal: the whole process group
], ids=["sigterm-driver-loky", "sigterm-group-localcluster", "ctrl-c-group-localcluster"])
def test_sigterm_and_ctrl_c_are_one_line_and_resumable(cli, slow_ref, tmp_path, how, sig, group):
    cfg, ref = slow_ref
    out, log = tmp_path / "o", tmp_path / "driver.log"
    with open(log, "wb") as err, sigint_not_ignored():
        proc = subprocess.Popen([sys.executable, "-m", "dpexp.cli", "run", str(cfg), "--out", str(out), *how],
                                cwd=REPO, env=_env(), stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    try:
        _wait_for(lambda: _parts(out) >= 2 or proc.poll() is not None, "2 parts")
        assert proc.poll() is None, log.read_text()[-2000:]
        if group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        code = proc.wait(timeout=120)
    finally:
        DaskProcesses.kill(proc)
    text = log.read_text().strip()
    what = "terminated (SIGTERM)" if sig == signal.SIGTERM else "interrupted"
    assert code == (143 if sig == signal.SIGTERM else 130), text
    assert text.splitlines() == [f"{what}; finished chunks are kept, rerun the same command to resume"]
    assert not (out / "results.csv").exists() and not list(out.glob(".results.csv*"))
    res = cli(["run", str(cfg), "--out", str(out), "-q", "--jobs", "1"])
    assert res.exit_code == 0
    assert (out / "results.csv").read_bytes() == ref


def test_a_client_made_by_the_caller_is_used_and_left_open(dask_procs, slow_ref, tmp_path):
    from distributed import Client

    from dpexp import runner, spec

    cfg, ref = slow_ref
    raw = spec.read_yaml(cfg)
    with Client(dask_procs.address, timeout=30) as client:
        rep = runner.run_experiment(spec.resolve(raw, str(cfg)), raw, tmp_path / "o", progress=False, cluster=client)
        assert client.status == "running"
        assert rep.results_path.read_bytes() == ref


def test_a_worker_with_two_threads_gives_the_same_bytes_and_a_note(slow_ref, tmp_path, capsys):
    from distributed import Client, LocalCluster

    from dpexp import runner, spec

    cfg, ref = slow_ref
    raw = spec.read_yaml(cfg)
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None,
                      scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"}) as lc, \
            Client(lc) as client:
        rep = runner.run_experiment(spec.resolve(raw, str(cfg)), raw, tmp_path / "o", progress=False, cluster=client)
    assert rep.results_path.read_bytes() == ref
    assert "start workers with --nthreads 1" in capsys.readouterr().err


def test_failing_cells_are_recorded_on_the_cluster_as_locally(cli, slow_config, dask_procs, tmp_path):
    cfg = tmp_path / "fail.yaml"
    cfg.write_text(slow_config(SLOW[0], "{fail: true}", repeats=3))
    local = cli(["run", str(cfg), "--out", str(tmp_path / "j1"), "-q", "--jobs", "1"])
    remote = cli(["run", str(cfg), "--out", str(tmp_path / "c"), "-q", "--cluster", dask_procs.address])
    assert local.exit_code == remote.exit_code == 1, remote.output
    for name in ("results.csv", "failures.csv"):
        assert (tmp_path / "c" / name).read_bytes() == (tmp_path / "j1" / name).read_bytes()
    assert b"asked to fail" in (tmp_path / "c" / "failures.csv").read_bytes()


def test_loky_silences_joblibs_cancelled_tasks_warning_only():
    """An interrupted --jobs run prints one line: joblib's warning about the chunks it cancelled (emitted only when
    some were in flight, so the signal tests above cannot rely on seeing it) is ignored, other warnings are not."""
    import warnings

    from dpexp.executors import Loky

    work = type("Work", (), {"chunk_task": staticmethod(lambda payload, chunk: chunk)})
    assert list(Loky(1).run(None, [], None, work)) == []
    with warnings.catch_warnings(record=True) as seen:
        warnings.warn("4 tasks which were still being processed by the workers have been cancelled. You could "
                      "benefit from adjusting the input task iterator to limit unnecessary computation time.")
        warnings.warn("another warning")
    assert [str(w.message) for w in seen] == ["another warning"]
