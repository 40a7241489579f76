"""Speed of the Gamma-prior Bayesian LR engines, and the full-scale GDSC Fig. 2 run.

Prints, from one run:

1. per-fit time of the ``vb`` engine (one problem per call, and batched 10,000 problems per call) on the same
   statistics (d = 10, n = 810: GDSC-like unit-norm rows, the largest training size of Fig. 2);
2. per-fit time of PyMC ADVI in the paper's setting (mean-field, 5000 iterations, 5000 draws) — warm, i.e. after
   the one-off model build/compilation, which is reported separately — and the ``ratio`` line (vb speed-up);
3. with ``--full`` (default when the GDSC data is found): the wall time of ``dpexp run configs/gdsc_eps2.yaml
   --jobs 2`` at full scale with a breakdown into stages: tuning (cold cache: split search + thresholds for every
   n_private), the runner with a warm tuning cache (data loading, all fits, metrics, CSV writing — of which the
   data preparation and the CSV read are timed separately as IO), and plotting.

Usage: ``python benchmarks/bayes_lr_fit.py [--no-pymc] [--full | --no-full] [--repeats R]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
#: the CLI through the running interpreter, so the benchmark works from any environment with dpexp's dependencies
DPEXP = [sys.executable, "-m", "dpexp.cli"]


def gdsc_like_stats(rng: np.random.Generator, n: int = 810, d: int = 10):
    X = rng.normal(size=(n, d))
    X -= X.mean(0)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = X @ rng.normal(size=d) + rng.normal(size=n)
    y -= y.mean()
    return X.T @ X, X.T @ y, float(y @ y), n


def bench_vb(S, r, t, n) -> tuple[float, float]:
    from dpexp.models.vb import fit_vb

    fit_vb(S, r, t, n)
    reps = 300
    t0 = time.perf_counter()
    for _ in range(reps):
        fit_vb(S, r, t, n)
    single = (time.perf_counter() - t0) / reps
    B = 10_000
    rng = np.random.default_rng(1)
    Sb = S[None] + rng.laplace(0, 5.0, size=(B, *S.shape))  # perturbed, as in the experiments
    rb = r[None] + rng.laplace(0, 2.0, size=(B, r.size))
    tb = t + rng.laplace(0, 10.0, size=B)
    t0 = time.perf_counter()
    fit_vb(Sb, rb, tb, n)
    batched = (time.perf_counter() - t0) / B
    return single, batched


def bench_pymc(S, r, t, n, fits: int = 3) -> tuple[float, float, float, float]:
    warnings.filterwarnings("ignore")
    from dpexp.models.pymc_backend import PymcBayesLR
    from dpexp.models.vb import fit_vb

    t0 = time.perf_counter()
    eng = PymcBayesLR(S.shape[0])
    compile_s = time.perf_counter() - t0
    rng = np.random.default_rng(2)
    t0 = time.perf_counter()
    first = eng.fit_advi(S, r, t, n, rng)                 # first fit also pays first-call overheads
    first_s = time.perf_counter() - t0
    times = []
    for _ in range(fits):
        t0 = time.perf_counter()
        w = eng.fit_advi(S, r, t, n, rng, n_iter=5000, draws=5000)
        times.append(time.perf_counter() - t0)
    vb = fit_vb(S, r, t, n).mean
    rel = float(np.abs(w - vb).max() / np.abs(vb).max())
    assert np.all(np.isfinite(first))
    return compile_s, first_s, float(np.median(times)), rel


def run(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def bench_full(jobs: int, repeats: int | None) -> None:
    from dpexp import cache
    from dpexp.families.gdsc.algorithms.rplr import RobustPrivateLR

    cfg = REPO / "configs" / "gdsc_eps2.yaml"
    work = Path(tempfile.mkdtemp(prefix="bench_gdsc_"))
    env = dict(os.environ, DPEXP_CACHE_DIR=str(work / "cache"), TQDM_DISABLE="1")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    os.environ["DPEXP_CACHE_DIR"] = env["DPEXP_CACHE_DIR"]
    print(f"full-scale run of {cfg.relative_to(REPO)} with --jobs {jobs}"
          + (f", --repeats {repeats}" if repeats else " (50 repeats, all 265 drugs)"))

    # stage 1: tuning, cold cache, exactly the keys rplr (default params) uses
    alg = RobustPrivateLR()
    t0 = time.perf_counter()
    split = alg.budget_split(500, 10, 2.0)
    t_split = time.perf_counter() - t0
    t0 = time.perf_counter()
    for n in (100, 200, 300, 400, 500, 600, 700, 800):
        alg.omegas(n, 10, 2.0, split)
    t_thr = time.perf_counter() - t0
    cache.clear()

    # stage 2: IO — data preparation (parse + preprocess the GDSC tables) in a fresh process
    t_data = run([sys.executable, "-c", "from dpexp import registry; from dpexp.types import Sizes; import numpy as np;"
                  "ds = registry.get('dataset', 'gdsc')(d=10, missing='after_split'); ds.check();"
                  "ds.split(ds.subsets()[0], Sizes(100, 10, 100, 800, 30, 100), np.random.default_rng(0))"], env)

    # stage 3: the runner with the warm tuning cache (fits + metrics + CSV), then plotting
    out = work / "out"
    cmd = [*DPEXP, "run", str(cfg), "--out", str(out), "--jobs", str(jobs)]
    if repeats:
        cmd += ["--repeats", str(repeats)]
    t_run = run(cmd, env)
    t0 = time.perf_counter()
    import pandas as pd

    csv = next(out.glob("results.csv*"))
    rows = len(pd.read_csv(csv))
    t_read = time.perf_counter() - t0
    t_plot = run([*DPEXP, "plot", str(out), "--out", str(work / "figures")], env)
    total = t_split + t_thr + t_run
    print(f"  tuning: split search {t_split:.1f} s (p = {split}), thresholds for 8 sizes {t_thr:.1f} s")
    print(f"  runner (data load, all fits, metrics, CSV write; warm tuning cache): {t_run:.1f} s")
    print(f"    of which IO: GDSC load+preprocess {t_data:.1f} s per process (incl. interpreter start), "
          f"results {csv.name} {csv.stat().st_size / 1e6:.1f} MB, {rows} rows, read back in {t_read:.1f} s")
    print(f"  plot: {t_plot:.1f} s")
    print(f"  TOTAL wall (tuning + run) = {total:.1f} s = {total / 60:.1f} min (target <= 15 min)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-pymc", action="store_true", help="skip the PyMC timing")
    ap.add_argument("--full", dest="full", action="store_true", default=None, help="run the full GDSC Fig. 2 config")
    ap.add_argument("--no-full", dest="full", action="store_false")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=None, help="override the config's repeats (for a quick check)")
    a = ap.parse_args()

    S, r, t, n = gdsc_like_stats(np.random.default_rng(0))
    single, batched = bench_vb(S, r, t, n)
    print(f"vb engine (d = 10, n = 810): {single * 1e3:.3f} ms per fit one at a time; "
          f"{batched * 1e6:.2f} us per fit batched (10,000 perturbed problems per call)")
    if not a.no_pymc:
        try:
            compile_s, first_s, warm, rel = bench_pymc(S, r, t, n)
        except Exception as exc:  # PyMC missing or broken: say so, keep the rest
            print(f"pymc ADVI: not timed ({type(exc).__name__}: {exc})")
        else:
            print(f"pymc ADVI (paper: mean-field, 5000 iterations, 5000 draws): one-off build+compile "
                  f"{compile_s:.1f} s, first fit {first_s:.2f} s, warm per fit {warm:.3f} s; "
                  f"max |w_advi - w_vb| / max |w_vb| = {rel:.3f} (5000 iterations are not converged)")
            print(f"ratio pymc/vb per fit: {warm / single:,.0f}x (vb one at a time), "
                  f"{warm / batched:,.0f}x (vb batched)")
    if a.full is None:
        from dpexp.datasets.base import search_dirs

        a.full = any((d / "gdsc").exists() for d in search_dirs())
    if a.full:
        bench_full(a.jobs, a.repeats)
    else:
        print("full-scale GDSC run skipped (no GDSC data found, or --no-full)")


if __name__ == "__main__":
    main()
