"""Benchmark: wall time and peak memory of one DCA round (Heikkilä et al. 2017, Alg. 1) for every Table 1 cell.

    .venv/bin/python benchmarks/dca.py                 # all 16 cells, plain and with AES-GCM
    .venv/bin/python benchmarks/dca.py --no-encrypt --max-n 10000 --max-d 1000

M = 10 Compute nodes, seeded mode, T = 0, analytic Gaussian noise for (ε, δ) = (1, 1e-4), vectors in [−1, 1]^d,
in-process back-end (chunked, ``--threads`` threads).  Each cell runs in a fresh subprocess so that its peak
resident memory (ru_maxrss, interpreter and numpy included) is its own.

Output: one line per Table 1 cell ending in its speed-up over the paper's Spark cluster as ``<number>x`` (only those
lines end that way); the encrypted timings (which the paper excludes) follow on lines that end in ``MiB``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PAPER = {10: {100: 1.72, 1000: 1.89, 10_000: 2.99, 100_000: 8.58},
         100: {100: 2.03, 1000: 2.86, 10_000: 12.36, 100_000: 65.64},
         1000: {100: 3.43, 1000: 10.56, 10_000: 101.2, 100_000: 610.55},
         10_000: {100: 15.30, 1000: 84.95, 10_000: 994.96, 100_000: 1592.29}}


def one_cell(n: int, d: int, encrypt: bool, threads: int) -> None:
    import numpy as np

    from dpexp.families.dca.algorithms.timing import time_round

    r = time_round(n, d, 10, encrypt, 1.0, 1e-4, np.random.default_rng(20171204), seed=1, threads=threads,
                   trace_memory=False)
    r["rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps(r))


def run_cell(n: int, d: int, encrypt: bool, threads: int) -> dict:
    cmd = [sys.executable, __file__, "--cell", str(n), str(d), "--threads", str(threads)]
    if encrypt:
        cmd.append("--encrypt")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cell", nargs=2, type=int, metavar=("N", "D"), help=argparse.SUPPRESS)
    ap.add_argument("--encrypt", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, default=2, help="threads of the in-process back-end (default 2)")
    ap.add_argument("--no-encrypt", action="store_true", help="skip the AES-GCM timings")
    ap.add_argument("--max-n", type=int, default=100_000)
    ap.add_argument("--max-d", type=int, default=10_000)
    a = ap.parse_args()
    if a.cell:
        one_cell(a.cell[0], a.cell[1], a.encrypt, a.threads)
        return
    import os
    import platform

    cells = [(n, d) for d in sorted(PAPER) for n in sorted(PAPER[d]) if n <= a.max_n and d <= a.max_d]
    print(f"# DCA Table 1 benchmark on {platform.machine()}: M=10, threads={a.threads}, cpus={os.cpu_count()}")
    print("# columns: N, d, seconds (no encryption), peak RSS MiB, paper Spark seconds, speed-up over paper")
    worst, peak_all = float("inf"), 0.0
    for n, d in cells:
        r = run_cell(n, d, False, a.threads)
        paper = PAPER[d][n]
        ratio = paper / r["seconds"]
        worst = min(worst, ratio)
        peak_all = max(peak_all, r["rss_mib"])
        print(f"N={n:<6d} d={d:<5d} {r['seconds']:9.3f} s  peak {r['rss_mib']:7.0f} MiB  paper {paper:8.2f} s  "
              f"speed-up {ratio:.1f}x", flush=True)
    print(f"# minimum speed-up {worst:.1f} (target >= 10), largest peak RSS {peak_all:.0f} MiB (target <= 8192)")
    if a.no_encrypt:
        return
    print("# with AES-GCM on every client -> Compute message (excluded from the paper's Table 1)")
    for n, d in cells:
        r = run_cell(n, d, True, a.threads)
        print(f"encrypted N={n:<6d} d={d:<5d} {r['seconds']:9.3f} s  peak {r['rss_mib']:7.0f} MiB", flush=True)


if __name__ == "__main__":
    main()
