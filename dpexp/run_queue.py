"""Several configs in one call: ``dpexp run A.yaml B.yaml … --into ROOT --jobs J`` (what ``make figures`` runs).

Each config runs into ``ROOT/<config file stem>`` as its own ``dpexp run CONFIG --jobs 1`` process, ``J`` of them at
a time, the one expected to take longest first (longest-processing-time-first list scheduling).  Why not each
config on ``J`` workers, one config after another (what ``make figures`` did before): a config on ``J`` workers
leaves cores idle wherever it is serial — its start, loading its data, tuning on cold caches, its last chunks, a
config that is one process by design — and each of its workers loads the data and looks up the tuning again.  Side
by side, every core has a whole config to compute until the queue runs dry.  The results are the same bytes
(every config's table is the same for any ``--jobs``).

The children run with one BLAS/OpenMP thread each, as the loky workers of a single run do, so ``J`` children use
``J`` cores.

The expected cost of a config is its wall time the last time it ran this way on this machine
(``cache_dir("runs")/costs.json``, keyed by the config's stem and its ``--fast``/``--repeats``/``--set``
options; only runs that computed every chunk are remembered, not a resumed or already complete one), else the
seconds its previous run in ``ROOT/<stem>`` recorded in its manifest times the processes it ran in.  Configs of unknown cost go first, in the
order given: a config's cells say little about its cost (dca_scaling's 32 cells take longer than gdsc_eps2's 2.4
million), and an unknown config started last could be the longest.  The cost only orders the queue; a wrong guess
costs wall time, never a result.

A child's output goes to ``ROOT/<stem>.log``, kept where it failed.  When the queue is done, ``ROOT/runs.json`` says what each child did: its config, results folder, exit code, wall and
CPU seconds, peak resident memory and its last line of output (README, "Results format").
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from dpexp import cache
from dpexp.errors import UserError

#: how often the queue looks for a finished child
POLL_SECONDS = 0.2
#: how long an interrupted queue waits for its children to stop, in all, before killing them
STOP_SECONDS = 60.0
#: one thread per child for the BLAS and OpenMP pools (a loky worker's setting)
ONE_THREAD = {k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")}


@dataclass
class Job:
    """One config of the queue: where it goes, the options its ``dpexp run`` gets, and its expected cost."""

    config: Path
    out: Path
    key: str
    expected_s: float = 0.0
    whole: bool = False    # computes every chunk (--force, or nothing in ``out`` yet): its wall is its cost


@dataclass
class Done:
    """What one child did (a ``runs.json`` entry)."""

    config: str
    out: str
    returncode: int
    wall_s: float
    cpu_s: float
    peak_mib: float
    message: str = ""
    started_s: float = field(default=0.0)   # seconds after the queue started
    sys_s: float = 0.0   # the part of ``cpu_s`` spent in the kernel (system time: page faults, I/O)


def cost_key(config: Path, child_args: list[str]) -> str:
    """The cost memory's key: the config's stem and the options that change its work."""
    relevant = [a for a in child_args if a not in ("--resume", "--force", "-q")]
    return " ".join([config.stem, *relevant])


def _costs_path() -> Path:
    return cache.cache_dir("runs") / "costs.json"


def read_costs() -> dict[str, float]:
    """The remembered wall seconds of every config run by a queue on this machine ({} when none or unreadable)."""
    try:
        data = json.loads(_costs_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in data.items() if isinstance(v, (int, float))} if isinstance(data, dict) else {}


def remember_costs(done: dict[str, float]) -> None:
    """Adds ``done`` ({key: wall seconds}) to the cost memory (best effort: a cache)."""
    try:
        costs = read_costs()
        costs.update(done)
        cache.write_atomic(_costs_path(), json.dumps(costs, indent=1, sort_keys=True).encode())
    except OSError:
        pass


def _previous_seconds(out: Path) -> float | None:
    """The seconds a complete earlier run in ``out`` recorded, times the processes it ran in (its CPU, roughly)."""
    try:
        m = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
        if m.get("status") == "complete" and m.get("seconds_this_invocation"):
            return float(m["seconds_this_invocation"]) * max(int(m.get("jobs") or 1), 1)
    except (OSError, ValueError, TypeError):
        pass
    return None


def plan(jobs: list[Job]) -> list[Job]:
    """``jobs`` with their expected cost (``inf`` when unknown): those of unknown cost first, in the order given,
    then the others, the longest first (ties in the order given)."""
    costs = read_costs()
    for j in jobs:
        prev = costs.get(j.key)
        if prev is None:
            prev = _previous_seconds(j.out)
        j.expected_s = prev if prev is not None else float("inf")
    return sorted(jobs, key=lambda j: -j.expected_s)


def check_outputs(jobs: list[Job]) -> None:
    """``UserError`` when two configs would write into the same folder."""
    seen: dict[Path, Path] = {}
    for j in jobs:
        if j.out in seen:
            raise UserError(f"{j.config} and {seen[j.out]} would both write {j.out}: give configs with different "
                            "file names")
        seen[j.out] = j.config


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def run_queue(jobs: list[Job], slots: int, child_args: list[str], root: Path,
              echo: Callable[[str], None] = print, quiet: bool = False) -> list[Done]:
    """Runs every job as ``dpexp run CONFIG --out OUT --jobs 1 -q CHILD_ARGS``, ``slots`` at a time, longest
    expected first; prints a line at the start and one as each run ends (``quiet``: only the failed ones); writes
    ``root/runs.json``; returns what each did, in the order they finished.

    Each child's output goes to ``root/<stem>.log``, kept only when the child fails (its line names it).  The
    children run in sessions of their own, so a Ctrl-C at the terminal (or a signal to the queue's process group)
    reaches the queue alone, which sends each running child the one signal it got (SIGINT, else SIGTERM) and waits
    for them, at most ``STOP_SECONDS`` in all before killing them; their finished chunks are kept: run the same
    command again to resume."""
    queue = plan(jobs)
    env = {**os.environ, **ONE_THREAD}
    root.mkdir(parents=True, exist_ok=True)
    unknown = sum(j.expected_s == float("inf") for j in queue)
    say = _silent if quiet else echo
    say(f"{len(queue)} configs into {root}, {slots} at a time, each in one process, the longest expected first"
        + (f" ({unknown} of unknown cost first: none ran here before)" if unknown else ""))
    running: dict[int, tuple[Job, subprocess.Popen, float, Path]] = {}
    done: list[Done] = []
    t_start = time.perf_counter()
    try:
        while queue or running:
            while queue and len(running) < slots:
                job = queue.pop(0)
                job.whole = "--force" in child_args or not (job.out / "manifest.json").exists()
                log = root / f"{job.config.stem}.log"
                cmd = [sys.executable, "-m", "dpexp.cli", "run", str(job.config), "--out", str(job.out),
                       "--jobs", "1", "-q", *child_args]
                with open(log, "w", encoding="utf-8") as fh:
                    proc = subprocess.Popen(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
                running[proc.pid] = (job, proc, time.perf_counter(), log)
            finished = _reap(running)
            if not finished:
                time.sleep(POLL_SECONDS)
                continue
            for pid, status, usage in finished:
                job, proc, t0, log = running.pop(pid)
                proc.returncode = os.waitstatus_to_exitcode(status)   # reaped here, not by Popen
                message = _last_line(log.read_text(encoding="utf-8", errors="replace"))
                if proc.returncode == 0:
                    log.unlink(missing_ok=True)
                else:
                    message += f" (output in {log})"
                d = Done(str(job.config), str(job.out), proc.returncode, time.perf_counter() - t0,
                         usage.ru_utime + usage.ru_stime, _mib(usage.ru_maxrss), message, t0 - t_start,
                         usage.ru_stime)
                done.append(d)
                state = "ok" if d.returncode == 0 else f"FAILED (exit {d.returncode})"
                (echo if d.returncode else say)(f"[{len(done)}/{len(jobs)}] {job.config.stem}: {state}, "
                                                f"{d.wall_s:.0f} s wall, {d.cpu_s:.0f} CPU-s, peak "
                                                f"{d.peak_mib:.0f} MiB — {message}")
    except BaseException as exc:
        _stop(running, signal.SIGINT if isinstance(exc, KeyboardInterrupt) else signal.SIGTERM)
        raise
    by_config = {str(j.config): j for j in jobs}
    remember_costs({by_config[d.config].key: d.wall_s for d in done
                    if d.returncode == 0 and by_config[d.config].whole})
    total = time.perf_counter() - t_start
    cache.write_atomic(root / "runs.json", (json.dumps(
        {"slots": slots, "wall_s": round(total, 3), "runs": [asdict(d) for d in done]}, indent=1) + "\n").encode())
    return done


def _stop(running: dict[int, tuple], sig: int) -> None:
    """Sends ``sig`` to every running child and waits for them (``STOP_SECONDS`` in all, then SIGKILL), with
    SIGINT and SIGTERM ignored meanwhile: a second Ctrl-C does not leave children writing behind."""
    try:
        old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:     # not the main thread: signals stay as they are
        old = {}
    try:
        for _, proc, _, _ in running.values():
            if proc.poll() is None:
                proc.send_signal(sig)
        deadline = time.monotonic() + STOP_SECONDS
        for _, proc, _, _ in running.values():
            try:
                proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _mib(maxrss: int) -> float:
    """``ru_maxrss`` in MiB (KiB on Linux, bytes on macOS)."""
    return maxrss / (2**20 if sys.platform == "darwin" else 1024.0)


def _silent(_line: str) -> None:
    pass


def _reap(running: dict[int, tuple]) -> list[tuple[int, int, object]]:
    """The children of ``running`` that have ended: (pid, wait status, resource usage), without blocking."""
    out = []
    for pid in list(running):
        got, status, usage = os.wait4(pid, os.WNOHANG)
        if got == pid:
            out.append((pid, status, usage))
    return out
