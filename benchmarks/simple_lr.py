"""Speed benchmark for the simple-linear-regression algorithms (issue 3).  Prints measured numbers only.

1. One ``dp_exp_theil_sen`` trial with all pairs on the carbon-nanotube data (n ≈ 10,683, ≈ 57 M pairwise
   estimates): wall time and peak memory (tracemalloc: numpy allocations; plus the process max RSS).
2. Time per trial of every registered SLR algorithm at n = 400 (synthetic, x ~ N(0.5, 0.1²), y = 0.5x + 0.2 +
   N(0, 0.05²), clipped to [0, 1]²), with 100 trials vectorised.
3. Unless ``--skip-full``: wall time of ``dpexp run configs/slr_oi.yaml --jobs 2`` (CLI in a subprocess).

Usage: ``.venv/bin/python benchmarks/simple_lr.py [--skip-full] [--skip-carbon] [--trials 100]``
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from dpexp.registry import get, names
from dpexp.types import Split

SLR = ["ols", "theil_sen", "theil_sen_kmatch", "noisy_stats", "noisy_intercept", "dp_exp_theil_sen",
       "dp_wide_theil_sen", "dp_ss_theil_sen", "dpgd_pure", "dpgd_approx", "dpgd_zcdp", "oi_mos"]


def load_carbon() -> tuple[np.ndarray, np.ndarray]:
    """The registered ``carbon_nanotubes`` dataset (x = initial u, y = calculated u', rows in [0, 1]^2)."""
    x, y, _ = get("dataset", "carbon_nanotubes")()._data()
    return x, y


def make_split(x: np.ndarray, y: np.ndarray) -> Split:
    return Split(x[:, None], y, np.zeros((0, 1)), np.zeros(0), np.array([[0.25], [0.75]]), np.full(2, np.nan), {})


def bench_carbon(epsilon: float) -> None:
    x, y = load_carbon()
    n = x.size
    split = make_split(x, y)
    algo = get("algorithm", "dp_exp_theil_sen")()
    t0, c0 = time.perf_counter(), time.process_time()
    out = algo.run(split, epsilon, 0.0, np.random.default_rng(0), trials=1)
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    tracemalloc.start()
    algo.run(split, epsilon, 0.0, np.random.default_rng(0), trials=1)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 ** 2
    load = os.getloadavg()[0]
    print(f"[carbon] dp_exp_theil_sen all pairs, n = {n}, pairs = {n * (n - 1) // 2:,}, eps = {epsilon}: "
          f"one trial (p25 and p75) {dt:.2f} s wall, {dc:.2f} s CPU (1-min load average {load:.1f}); "
          f"peak traced memory {peak / 2 ** 30:.2f} GiB, process max RSS {rss:.2f} GiB "
          f"(targets: <= 10 s, <= 4 GiB); prediction {np.round(out.predictions[0], 4)}")


def bench_n400(trials: int) -> None:
    rng = np.random.default_rng(1)
    n = 400
    x = np.clip(rng.normal(0.5, 0.1, n), 0, 1)
    y = np.clip(0.5 * x + 0.2 + rng.normal(0, 0.05, n), 0, 1)
    split = make_split(x, y)
    print(f"[n=400] time per trial, {trials} trials per call, eps = 2 (k = all pairs unless stated)")
    avail = set(names("algorithm"))
    for name in SLR:
        if name not in avail:
            continue
        variants = [{}]
        if name in ("dp_exp_theil_sen", "dp_wide_theil_sen", "dp_ss_theil_sen"):
            variants = [{}, {"k": 10}, {"k": 1}]
        for kw in variants:
            algo = get("algorithm", name)(**kw)
            t0 = time.perf_counter()
            algo.run(split, 2.0, 0.0, np.random.default_rng(2), trials=trials)
            dt = time.perf_counter() - t0
            label = name + (f"[k={kw['k']}]" if kw else "")
            print(f"  {label:28s} {1e3 * dt / trials:9.3f} ms/trial   ({dt:.3f} s per call)")


def bench_full(jobs: int) -> None:
    cfg = Path("configs/slr_oi.yaml")
    if not cfg.exists():
        print("[full] configs/slr_oi.yaml not found; skipped")
        return
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        # the CLI through the running interpreter: works from any environment, not only one with a dpexp script
        r = subprocess.run([sys.executable, "-m", "dpexp.cli", "run", str(cfg), "--out", out, "--jobs", str(jobs)],
                           capture_output=True, text=True)
        dt = time.perf_counter() - t0
    status = "ok" if r.returncode == 0 else f"exit {r.returncode}: {r.stderr.strip().splitlines()[-1:]}"
    print(f"[full] dpexp run configs/slr_oi.yaml --jobs {jobs}: {dt:.1f} s wall ({status}; target <= 600 s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-full", action="store_true", help="skip the full configs/slr_oi.yaml run")
    ap.add_argument("--skip-carbon", action="store_true", help="skip the carbon-nanotube all-pairs trial")
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--epsilon", type=float, default=1.0, help="epsilon of the carbon trial (Fig. 9a: 1)")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    if not a.skip_carbon:
        bench_carbon(a.epsilon)
    bench_n400(a.trials)
    if not a.skip_full:
        bench_full(a.jobs)


if __name__ == "__main__":
    main()
