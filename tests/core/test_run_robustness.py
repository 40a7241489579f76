"""A run on a bad day (issue 29): a full disk is one line and exit code 3 (then resuming gives the bytes of a clean
run); a resumed run checks every part against its recorded length, hash and row count and computes a bad one
again; loky workers end with their driver, even a killed one."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from dpexp import runner
from dpexp.executors import end_with_parent

REPO = Path(__file__).resolve().parents[2]


def _dpexp(args: list[str], fsize: int | None = None, **kw) -> subprocess.CompletedProcess:
    def limit() -> None:
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    env = dict(os.environ, TQDM_DISABLE="1")
    return subprocess.run([sys.executable, "-m", "dpexp.cli", *args], cwd=REPO, env=env, preexec_fn=limit,
                          capture_output=True, text=True, timeout=300, **kw)


def test_disk_full_is_one_line_and_exit_3_and_resumes(cli, slow_config, tmp_path):
    cfg = tmp_path / "s.yaml"
    cfg.write_text(slow_config("lr", "{sleep_ms: 0, noise: 0.5}", repeats=10))
    ref = tmp_path / "ref"
    assert cli(["run", str(cfg), "--out", str(ref), "--jobs", "1", "-q"]).exit_code == 0
    size = (ref / "results.csv").stat().st_size
    limit = max(size // 2, (ref / "manifest.json").stat().st_size + 4096)
    assert limit < size
    out = tmp_path / "full"
    r = _dpexp(["run", str(cfg), "--out", str(out), "--jobs", "1", "-q"], fsize=limit)
    assert r.returncode == 3, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: no space left") and "rerun the same command" in lines[0]
    assert "Traceback" not in r.stderr
    assert not list(out.glob(".*.tmp")) and not list((out / ".parts").glob(".*.tmp"))   # no half-written file
    assert cli(["run", str(cfg), "--out", str(out), "--jobs", "1", "-q"]).exit_code == 0
    assert (out / "results.csv").read_bytes() == (ref / "results.csv").read_bytes()


def _parts_left(cli, cfg: Path, out: Path, monkeypatch) -> Path:
    """Run ``cfg`` into ``out`` but stop before the merge: every part is on disk, as after a crash there."""
    def stop(*a, **k):
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(runner, "merge_parts", stop)
        assert cli(["run", str(cfg), "--out", str(out), "--jobs", "1", "-q"]).exit_code == 130
    return out / ".parts"


@pytest.mark.parametrize("damage", ["truncate", "flip", "no-record"])
def test_resume_recomputes_a_bad_part(cli, slow_config, tmp_path, monkeypatch, damage):
    cfg = tmp_path / "s.yaml"
    cfg.write_text(slow_config("lr", "{sleep_ms: 0, noise: 0.5}", repeats=3))
    ref = tmp_path / "ref"
    assert cli(["run", str(cfg), "--out", str(ref), "--jobs", "1", "-q"]).exit_code == 0
    out = tmp_path / "out"
    parts = _parts_left(cli, cfg, out, monkeypatch)
    part = parts / "0000000.csv"
    data = part.read_bytes()
    assert runner._part_problem(parts, part.name) == ""
    if damage == "truncate":      # half a part: the rows after the cut were lost
        part.write_bytes(data[: len(data) // 2])
    elif damage == "flip":        # the same length, one digit changed
        i = data.rindex(b"1")
        part.write_bytes(data[:i] + b"2" + data[i + 1:])
    else:                         # a part without its record (e.g. written by an older dpexp)
        (parts / runner._summary_name(part.name)).unlink()
    assert runner._part_problem(parts, part.name)
    res = cli(["run", str(cfg), "--out", str(out), "--jobs", "1", "-q"])
    assert res.exit_code == 0
    err = res.output
    assert "0000000.csv" in err and "computing that chunk again" in err
    assert (out / "results.csv").read_bytes() == (ref / "results.csv").read_bytes()


def test_end_with_parent_ends_an_orphan():
    """A child that installed ``end_with_parent`` ends soon after its parent is killed (kill -9)."""
    code = ("import os, subprocess, sys, time\n"
            "child = subprocess.Popen([sys.executable, '-c', "
            "'import os, time; from dpexp.executors import end_with_parent; "
            "end_with_parent(os.getppid(), 0.05); print(os.getpid(), flush=True); time.sleep(60)'], "
            "stdout=subprocess.PIPE, text=True)\n"
            "print(child.stdout.readline().strip(), flush=True)\n"
            "time.sleep(60)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        child = int(parent.stdout.readline())
        assert psutil.pid_exists(child)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        assert _gone(child, 20), "the orphan outlived its parent"
    finally:
        if parent.poll() is None:
            parent.kill()
    end_with_parent(-1)   # not started by that pid: no watch, returns at once


def _gone(pid: int, seconds: float) -> bool:
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.1)
    return False


def test_loky_workers_end_after_kill_9_of_the_driver(slow_config, tmp_path):
    cfg = tmp_path / "slow.yaml"
    cfg.write_text(slow_config("lr", "{sleep_ms: 200, noise: 0.5}", repeats=200))
    env = dict(os.environ, TQDM_DISABLE="1")
    proc = subprocess.Popen([sys.executable, "-m", "dpexp.cli", "run", str(cfg), "--out", str(tmp_path / "o"),
                             "--jobs", "2", "-q"], cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        driver = psutil.Process(proc.pid)
        deadline, workers = time.time() + 120, []
        while time.time() < deadline and proc.poll() is None:   # wait for the workers to be computing chunks
            workers = [c for c in driver.children() if "loky" in _cmdline(c) and "resource_tracker" not in _cmdline(c)]
            if len(workers) >= 2 and len(list((tmp_path / "o" / ".parts").glob("*.csv"))) >= 1:
                break
            time.sleep(0.1)
        assert proc.poll() is None and len(workers) >= 2, "the run ended (or never started its workers)"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert all(_gone(w.pid, 20) for w in workers), "a loky worker outlived its killed driver"
    finally:
        if proc.poll() is None:
            proc.kill()
        for c in psutil.Process().children(recursive=True):
            if "loky" in _cmdline(c):
                with contextlib.suppress(psutil.Error):
                    c.kill()


def _cmdline(p) -> str:
    """A process's command line, or "" for one that has ended or is a zombie by now (a child may end between the
    listing and the read: psutil raises ZombieProcess or NoSuchProcess)."""
    try:
        return " ".join(p.cmdline())
    except psutil.Error:
        return ""


def test_loky_workers_keep_their_memos_for_the_run():
    """A --jobs worker is not replaced as leaking when its memos grow by loky's default 300 MB: ``init_worker`` raises
    loky's limit to ``WORKER_GROWTH_LIMIT`` in every worker (the limit is read in the worker's own loop).  Run in a
    fresh interpreter: joblib's reusable executor of this (pytest) process may hold workers other tests made."""
    code = ("from joblib.externals.loky import process_executor as pe\n"
            "from dpexp.executors import WORKER_GROWTH_LIMIT, Loky\n"
            "def limit(payload, chunk):\n"
            "    from joblib.externals.loky import process_executor\n"
            "    return process_executor._MAX_MEMORY_LEAK_SIZE\n"
            "work = type('Work', (), {'chunk_task': staticmethod(limit)})\n"
            "if __name__ == '__main__':\n"
            "    got = list(Loky(2).run(None, [0, 1, 2], None, work))\n"
            "    print(got == [WORKER_GROWTH_LIMIT] * 3, WORKER_GROWTH_LIMIT > int(3e8), pe._MAX_MEMORY_LEAK_SIZE)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True", "True", str(int(3e8))]   # the workers' limit raised, the driver's not
