"""Speed at paper scale, measured in one run: the overhead ratio of a full GDSC figure, the wall time of full runs,
and the peak memory of every process.

Prints:

1. the batched-fit floor of ``configs/gdsc_eps2.yaml`` (Honkela et al. 2018, Fig. 2): its number of cells (each
   cell is one Bayesian LR fit) times the per-fit time of the ``vb`` engine batched 10,000 perturbed d = 10
   problems per call, measured here, in one process;
2. the wall time of the full run (``dpexp run`` through this interpreter, ``--jobs J`` or ``--cluster ADDRESS``,
   tuning cache warmed first by a one-drug run), and ``overhead ratio = full run wall / batched-fit floor``
   (target <= 3; the floor is one core's, the run uses J);
3. the peak resident memory (VmHWM) of the driver and of each worker process (target < 2 GiB each);
4. with ``--configs all`` (or names): the wall time of every config's full run, the total and the slowest ones —
   ``make figures`` without the plotting.

The results of every run go to a temporary folder; nothing under results/ is touched.
Usage: ``python benchmarks/paper_scale.py [--jobs 2 | --cluster local:2] [--configs all|NAME ...] [--repeats R]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
GDSC = REPO / "configs" / "gdsc_eps2.yaml"


def env() -> dict[str, str]:
    """The environment of the runs: this checkout first on the path, no progress bars."""
    e = dict(os.environ, TQDM_DISABLE="1")
    e["PYTHONPATH"] = os.pathsep.join([str(REPO), e.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return e


def dpexp(*args: str) -> list[str]:
    """The CLI through the running interpreter (works from any environment that has dpexp's dependencies)."""
    return [sys.executable, "-m", "dpexp.cli", *args]


def vb_batched_seconds_per_fit(batch: int = 10_000, d: int = 10, n: int = 810) -> float:
    """Per-fit time of ``fit_vb`` on ``batch`` perturbed GDSC-like problems in one call (best of 3)."""
    from dpexp.models.vb import fit_vb

    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    X -= X.mean(0)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = X @ rng.normal(size=d) + rng.normal(size=n)
    S, r, t = X.T @ X, X.T @ y, float(y @ y)
    Sb = S[None] + rng.laplace(0, 5.0, size=(batch, d, d))
    rb = r[None] + rng.laplace(0, 2.0, size=(batch, d))
    tb = t + rng.laplace(0, 10.0, size=batch)
    fit_vb(Sb[:10], rb[:10], tb[:10], n)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        fit_vb(Sb, rb, tb, n)
        best = min(best, time.perf_counter() - t0)
    return best / batch


class PeakMemory:
    """Polls the peak resident set (VmHWM) and the CPU time of a process and all its descendants until stopped
    (CPU time as last seen, at most ``every`` seconds before a process ended)."""

    def __init__(self, pid: int, every: float = 0.25) -> None:
        self.pid, self.every = pid, every
        self.peaks: dict[int, tuple[str, int]] = {}
        self.cpu: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        import psutil

        root = psutil.Process(self.pid)
        while not self._stop.is_set():
            try:
                procs = [root, *root.children(recursive=True)]
            except psutil.Error:
                return
            for p in procs:
                try:
                    with open(f"/proc/{p.pid}/status") as fh:
                        hwm = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmHWM:"))
                    name = "driver" if p.pid == self.pid else _role(p.cmdline())
                    t = p.cpu_times()
                    self.cpu[p.pid] = t.user + t.system
                except (OSError, StopIteration, psutil.Error):
                    continue
                self.peaks[p.pid] = (name, max(hwm, self.peaks.get(p.pid, ("", 0))[1]))
            self._stop.wait(self.every)

    def stop(self) -> dict[int, tuple[str, int]]:
        self._stop.set()
        self._thread.join()
        return self.peaks


def _role(cmdline: list[str]) -> str:
    text = " ".join(cmdline)
    for key, name in (("loky", "loky worker"), ("distributed", "dask process"), ("multiprocessing", "helper")):
        if key in text:
            return name
    return "child"


def timed_run(cfg: Path, out: Path, how: list[str], extra: list[str]
              ) -> tuple[float, dict[int, tuple[str, int]], float]:
    """Wall seconds of ``dpexp run cfg``, the peak memory of each of its processes and their CPU seconds."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(dpexp("run", str(cfg), "--out", str(out), "--force", "-q", *how, *extra), cwd=REPO,
                            env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    mem = PeakMemory(proc.pid)
    _, err = proc.communicate()
    wall = time.perf_counter() - t0
    peaks = mem.stop()
    if proc.returncode not in (0, 1):  # 1: some cells failed (recorded), still a full run
        raise SystemExit(f"{cfg.name}: dpexp run failed ({proc.returncode}): {err.strip()[-500:]}")
    return wall, peaks, sum(mem.cpu.values())


def n_cells(cfg: Path, extra: list[str]) -> int:
    from dpexp import spec

    overrides = [extra[i + 1] for i, a in enumerate(extra) if a == "--set"]
    repeats = next((int(extra[i + 1]) for i, a in enumerate(extra) if a == "--repeats"), None)
    return spec.load(cfg, overrides, repeats).n_cells


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--cluster", default=None, help="run on this Dask cluster (e.g. local:2) instead of --jobs")
    ap.add_argument("--repeats", type=int, default=None, help="override every config's repeats (quick check)")
    ap.add_argument("--configs", nargs="*", default=[], help="also time these configs' full runs ('all': every one)")
    a = ap.parse_args()
    how = ["--cluster", a.cluster] if a.cluster else ["--jobs", str(a.jobs)]
    extra = ["--repeats", str(a.repeats)] if a.repeats else []
    work = Path(tempfile.mkdtemp(prefix="dpexp_bench_"))
    print(f"machine: {os.cpu_count()} cores; runs with {' '.join(how)}" + (f", --repeats {a.repeats}" if a.repeats
                                                                            else " (full scale)"))
    try:
        from dpexp.errors import UserError

        try:
            cells = n_cells(GDSC, extra)
        except UserError as exc:  # e.g. no GDSC data here: say so, as the other benchmarks do
            print(f"paper-scale benchmark skipped: {exc}")
            return
        per_fit = vb_batched_seconds_per_fit()
        print(f"batched-fit floor of {GDSC.name}: {cells:,} fits x {per_fit * 1e6:.1f} us per batched vb fit "
              f"= {cells * per_fit:.1f} s (one core)", flush=True)
        # warm the tuning cache (all sizes, two drugs) so the timed run is the runner, not the one-off tuning
        subprocess.run(dpexp("run", str(GDSC), "--out", str(work / "warm"), "--force", "-q", "--jobs", "1",
                             "--repeats", "1", "--set", "datasets[0].subsets={first: 2}"),
                       cwd=REPO, env=env(), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall, peaks, cpu = timed_run(GDSC, work / "gdsc_eps2", how, extra)
        size = sum(f.stat().st_size for f in (work / "gdsc_eps2").glob("results.csv*"))
        after = vb_batched_seconds_per_fit()   # again: the machine may be shared; the faster one is the floor
        print(f"  (measured again after the run: {after * 1e6:.1f} us per fit)")
        floor = cells * min(per_fit, after)
        print(f"full run of {GDSC.name}: {wall:.1f} s wall, {cpu:.0f} CPU-seconds in all its processes "
              f"({cells / wall:,.0f} cells/s, {cpu / cells * 1e6:.0f} us of CPU per cell; results {size / 1e6:.0f} MB)")
        print(f"overhead ratio = full run wall / batched-fit floor = {wall:.1f} / {floor:.1f} = "
              f"{wall / floor:.2f} (target <= 3)")
        print(f"  CPU ratio = CPU-seconds of the run / floor = {cpu / floor:.2f} (independent of the cores used "
              f"and of other load; the wall ratio on J idle cores is about this / J)")
        for pid, (name, hwm) in sorted(peaks.items(), key=lambda kv: -kv[1][1]):
            print(f"  peak RSS {name:13s} pid {pid}: {hwm / 2**20:7.0f} MiB (target < 2048 MiB)")
        names = [p.stem for p in sorted((REPO / "configs").glob("*.yaml"))] if a.configs == ["all"] else a.configs
        if names:
            times = []
            for name in names:
                w, pk, _ = timed_run(REPO / "configs" / f"{name}.yaml", work / name, how, extra)
                worst = max(h for _, h in pk.values()) if pk else 0
                times.append((w, name))
                print(f"  {name:24s} {w:8.1f} s   peak RSS of its largest process {worst / 2**20:6.0f} MiB",
                      flush=True)
                shutil.rmtree(work / name, ignore_errors=True)
            print(f"all {len(times)} configs: {sum(t for t, _ in times):.0f} s; slowest: "
                  + ", ".join(f"{n} {t:.0f} s" for t, n in sorted(times, reverse=True)[:5]))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
