"""Runner overhead and parallel speed-up, measured in one run on this machine.

1. Cells per second for a trivial algorithm over >= 10,000 cells (target: < 1 ms of runner overhead per cell).
2. Speed-up of --jobs 2 over --jobs 1 on a CPU-bound config (target >= 1.7x).

Usage: python benchmarks/runner_overhead.py [--cells 10000] [--cpu-seconds 12]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import textwrap
import time
from pathlib import Path

os.environ.setdefault("TQDM_DISABLE", "1")

from dpexp import runner, spec  # noqa: E402


def _run(cfg_text: str, jobs: int, root: Path, tag: str) -> float:
    cfg = root / f"{tag}.yaml"
    cfg.write_text(cfg_text)
    raw = spec.read_yaml(cfg)
    exp = spec.resolve(raw, str(cfg))
    t0 = time.perf_counter()
    runner.run_experiment(exp, raw, root / f"out_{tag}", jobs=jobs, resume=False, progress=False)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=10_000)
    ap.add_argument("--cpu-seconds", type=float, default=30.0, help="total busy work of the CPU-bound config")
    args = ap.parse_args()
    variants = 10
    sizes = 10
    repeats = max(1, args.cells // (variants * sizes))
    trivial = textwrap.dedent(f"""\
        name: overhead
        seed: 1
        repeats: {repeats}
        datasets: [{{name: honkela_synthetic, params: {{d: 2}}}}]
        sizes: {{n_private: {list(range(1, sizes + 1))}, n_public: 1, n_test: 5}}
        privacy: {{epsilon: 1.0}}
        algorithms:
          - name: null_model
            params: {{noise: {[round(0.1 * i, 1) for i in range(variants)]}}}
        metrics: [mae]
        """)
    n_chunks_target = 48
    per_chunk_ms = 1000.0 * args.cpu_seconds / n_chunks_target
    cpu = textwrap.dedent(f"""\
        name: cpu_bound
        seed: 1
        repeats: {n_chunks_target}
        datasets: [{{name: honkela_synthetic, params: {{d: 2}}}}]
        sizes: {{n_private: 10, n_public: 1, n_test: 5}}
        privacy: {{epsilon: 1.0}}
        algorithms: [{{name: null_model, params: {{sleep_ms: {per_chunk_ms:.1f}}}}}]
        metrics: [mae]
        """)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        n_cells = repeats * variants * sizes
        t = _run(trivial, 1, root, "trivial")
        print(f"trivial algorithm: {n_cells} cells in {t:.2f} s = {n_cells / t:,.0f} cells/s, "
              f"{1000 * t / n_cells:.3f} ms per cell including data generation and metrics (target < 1 ms)")
        t1 = _run(cpu, 1, root, "cpu1")
        t2 = _run(cpu, 2, root, "cpu2")
        print(f"CPU-bound config ({n_chunks_target} chunks x {per_chunk_ms:.0f} ms): --jobs 1 {t1:.2f} s, "
              f"--jobs 2 {t2:.2f} s, speed-up ratio {t1 / t2:.2f}x (target >= 1.7x; {os.cpu_count()} cores)")
        demo = (Path(__file__).resolve().parent.parent / "configs" / "demo.yaml").read_text()
        demo = demo.replace("repeats: 20", "repeats: 200")
        d1 = _run(demo, 1, root, "demo1")
        d2 = _run(demo, 2, root, "demo2")
        print(f"configs/demo.yaml with 200 repeats (real algorithms): --jobs 1 {d1:.2f} s, --jobs 2 {d2:.2f} s, "
              f"speed-up ratio {d1 / d2:.2f}x")


if __name__ == "__main__":
    main()
