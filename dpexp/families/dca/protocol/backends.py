"""Execution back-ends of the DCA protocol (``dca.DCAJob``); both return the (M, d) partial sums of the Compute
nodes, and give bit-identical results for the same job because ring addition is exact and order-free and every
chunk's randomness is keyed by the chunk index (not by where or when it runs).

* ``InProcessBackend``: vectorised simulation in this process; clients are processed in chunks (bounded memory:
  one chunk holds M·n_chunk·d uint64 messages) on a small thread pool (numpy releases the GIL while it draws random
  numbers and sums arrays).
* ``DaskBackend``: Compute nodes are Dask workers (Compute k runs on worker k mod W) and client chunks are Dask
  tasks: a chunk task produces the clients' messages, its share k is summed by a task pinned to Compute k's worker,
  and each Compute adds its chunk sums before the aggregator (this process) adds the M broadcasts.  This is the path
  for users who outgrow one machine (``pip install 'dpexp[dask]'``).
"""

from __future__ import annotations

import operator
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from dpexp.errors import UserError
from dpexp.families.dca.protocol.fixed_point import ring_sum


class InProcessBackend:
    """Chunked, threaded in-process simulation."""

    name = "inprocess"

    def __init__(self, threads: int | None = None) -> None:
        self.threads = int(threads or min(4, os.cpu_count() or 1))

    def compute_partials(self, job: Any) -> np.ndarray:
        M, d = job.n_compute, job.data.d
        acc = np.zeros((M, d), dtype=np.uint64)
        if self.threads <= 1 or job.n_chunks == 1:
            for j in range(job.n_chunks):
                acc += job.chunk_partials(j)
            return acc
        with ThreadPoolExecutor(max_workers=self.threads) as pool:
            for part in pool.map(job.chunk_partials, range(job.n_chunks)):
                acc += part
        return acc


def _ring_sum_list(parts: list[np.ndarray]) -> np.ndarray:
    return ring_sum(np.stack(parts), axis=0)


class DaskBackend:
    """Compute nodes as Dask workers, client chunks as Dask tasks (see module docstring)."""

    name = "dask"

    def __init__(self, client: Any) -> None:
        self.client = client

    def compute_partials(self, job: Any) -> np.ndarray:
        workers = sorted(self.client.scheduler_info()["workers"])
        if not workers:
            raise UserError("the Dask cluster has no workers")
        M = job.n_compute
        where = [workers[k % len(workers)] for k in range(M)]
        [job_f] = self.client.scatter([job], broadcast=True)
        per_k: list[list[Any]] = [[] for _ in range(M)]
        for j in range(job.n_chunks):
            msgs = self.client.submit(lambda jb, jj: jb.client_messages(jj), job_f, j, pure=False,
                                      key=f"dca-clients-{j}-{id(job)}")
            for k in range(M):
                share = self.client.submit(operator.getitem, msgs, k, workers=[where[k]], pure=False)
                per_k[k].append(self.client.submit(lambda jb, kk, s: jb.compute_receive(kk, s), job_f, k, share,
                                                   workers=[where[k]], pure=False))
        totals = [self.client.submit(_ring_sum_list, per_k[k], workers=[where[k]], pure=False) for k in range(M)]
        return np.stack(self.client.gather(totals))
