"""Run a dpexp config on a SLURM or PBS cluster through dask-jobqueue (worked example for docs/cluster.md).

Run it on the login node (or inside a small batch job of its own) from an environment with
``pip install 'dpexp[dask]' dask-jobqueue`` (plus ``'dpexp[pymc]'`` for ``engine: pymc``) on a file system the
compute nodes see:

    python docs/examples/jobqueue_run.py configs/gdsc_eps2.yaml --out results/gdsc_eps2 \\
        --scheduler slurm --workers 64 --queue short --walltime 02:00:00 \\
        --data-dir /project/dpexp-data -- --set algorithms[0].params.engine=pymc

It starts one batch job per 8 worker processes (1 thread each), waits for the first workers, runs
``dpexp run CONFIG --cluster <scheduler address>`` through this interpreter and shuts the jobs down.  The results
are written here by this process (the driver); the compute nodes only return rows.  Interrupted (Ctrl-C, the
driver's own job cancelled: SIGTERM, exit 143) the same command resumes: finished chunks are kept.
"""

from __future__ import annotations

import argparse
import subprocess
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config")
    ap.add_argument("--out", required=True)
    ap.add_argument("--scheduler", choices=["slurm", "pbs"], default="slurm")
    ap.add_argument("--workers", type=int, default=32, help="worker processes in all (8 per batch job)")
    ap.add_argument("--queue", default=None, help="partition (SLURM) or queue (PBS)")
    ap.add_argument("--account", default=None)
    ap.add_argument("--walltime", default="02:00:00")
    ap.add_argument("--data-dir", required=True, help="the data folder as the compute nodes see it")
    ap.add_argument("rest", nargs="*", help="more `dpexp run` options after --")
    a = ap.parse_args()

    from dask.distributed import Client
    from dask_jobqueue import PBSCluster, SLURMCluster

    per_job = 8
    Cluster = SLURMCluster if a.scheduler == "slurm" else PBSCluster
    cluster = Cluster(
        queue=a.queue, account=a.account, walltime=a.walltime,
        cores=per_job, processes=per_job,        # 8 single-threaded worker processes per job: chunks are GIL-bound
        memory=f"{2 * per_job}GB",               # < 2 GiB per worker is what a GDSC figure needs (docs/cluster.md)
        job_script_prologue=[f"export DPEXP_DATA_DIR={a.data_dir}",   # each worker reads its own copy of the data
                             "export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1"],
    )
    cluster.scale(a.workers)
    try:
        with Client(cluster) as client:
            client.wait_for_workers(min(a.workers, per_job), timeout=1800)   # start as soon as one job is up
            # the driver reads the data too (to list the subsets it plans chunks over)
            cmd = [sys.executable, "-m", "dpexp.cli", "--data-dir", a.data_dir, "run", a.config, "--out", a.out,
                   "--cluster", cluster.scheduler_address, *a.rest]
            print(" ".join(cmd), file=sys.stderr)
            return subprocess.call(cmd)
    finally:
        cluster.close()


if __name__ == "__main__":
    sys.exit(main())
