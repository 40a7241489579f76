"""Protocol wall times of the DCA (Heikkilä et al. 2017, Table 1) inside the runner's contract.

Runs on the dataset ``dca_clients`` (``dpexp/families/dca/datasets/clients.py``), whose split carries no client
matrix: the algorithm generates the clients' values block by block from ``meta['client_seed']``.

* algorithm ``dca_timing`` (params ``n_compute`` M = 10, ``encrypt``): runs one full DCA round (clients, Compute
  nodes, aggregator) in process and reports extras ``seconds`` (wall time), ``peak_mib`` (peak memory the round
  added, ``RoundMemory``) and ``noise_factor`` N/(N − T − 1) (Fig. 1b at this N).
  Noise is calibrated as in a real run: replace-one neighbours, Δ₂ = 2√d for vectors in [−1, 1]^d, analytic Gaussian σ_std, per-client
  σ_std/sqrt(N − T − 1) (Thm 1).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import math
import sys
import time
import tracemalloc

import numpy as np
from pydantic import Field

from dpexp.audit.plan import AuditPlan
from dpexp.components import Algorithm, Params
from dpexp.families.dca.protocol.backends import InProcessBackend
from dpexp.families.dca.protocol.dca import DCA, SyntheticClients
from dpexp.families.dca.protocol.noise import client_sigma, noise_factor, sigma_std
from dpexp.privacy.ledger import as_ledger
from dpexp.privacy.mechanisms import distributed_gaussian_spend
from dpexp.registry import register_algorithm
from dpexp.types import Output, Split


class RoundMemory:
    """The peak memory a round adds to the process, in MiB, measured without slowing the round down.

    On Linux the kernel keeps the process's resident high-water mark (``VmHWM`` in ``/proc/self/status``), which
    writing "5" to ``/proc/self/clear_refs`` resets to the present resident size; the round's peak is then
    VmHWM after it less VmRSS before it (numpy's buffers included: they are resident memory).  Before the reset,
    glibc's ``malloc_trim`` returns the memory it keeps free to the kernel, so that a round served from memory an
    earlier round freed still raises the mark.  Elsewhere (or where
    the reset is refused) ``tracemalloc`` traces the round's allocations instead — it costs the round ≈ 15 % more time
    (one traced frame per allocation), which is why it is only the fallback: the round's ``seconds`` are Table 1's.
    """

    def __enter__(self) -> "RoundMemory":
        self.peak_mib = 0.0
        self._rss = self._reset()
        if self._rss is None:
            tracemalloc.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._rss is None:
            self.peak_mib = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
        else:
            hwm = _status_kib("VmHWM")
            self.peak_mib = max(0.0, (hwm - self._rss) / 1024.0) if hwm is not None else 0.0

    @staticmethod
    def _reset() -> float | None:
        """The resident size (KiB) after resetting the high-water mark to it; None where that cannot be done.
        First the C allocator hands its free memory back to the kernel (glibc's ``malloc_trim``): memory freed by
        an earlier round but kept resident would otherwise serve this round's buffers without raising the mark."""
        trim = _malloc_trim()
        if trim is None:
            return None
        try:
            trim(0)
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
        except OSError:
            return None
        rss, hwm = _status_kib("VmRSS"), _status_kib("VmHWM")
        # a kernel that took the write but kept the old mark would report a peak from before the round
        return rss if rss is not None and hwm is not None and hwm <= rss + 1024 else None


@functools.cache
def _malloc_trim():
    """glibc's ``malloc_trim`` (None elsewhere: another C library, or not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None


def _status_kib(field: str) -> float | None:
    """A ``kB`` field of ``/proc/self/status`` (None where there is none)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return float(line.split()[1])
    except OSError:
        pass
    return None


def time_round(n: int, d: int, n_compute: int, encrypt: bool, epsilon: float, delta: float,
               ledger, seed: int = 0, threads: int | None = None, n_faulty: int = 0,
               trace_memory: bool = True) -> dict[str, float]:
    """One timed DCA round on ``SyntheticClients(n, d, seed)``; returns seconds / peak_mib (``RoundMemory``; 0
    without ``trace_memory``) / noise_factor.  The round's sum is recorded in ``ledger`` (a ``PrivacyLedger``; a
    Generator is wrapped) with the distributed Gaussian map of Thm 1 (Δ₂ = 2√d, T dropouts and colluders
    together)."""
    ledger = as_ledger(ledger)
    data = SyntheticClients(n, d, seed=seed, bound=1.0)
    s = client_sigma(sigma_std(2.0 * math.sqrt(d), epsilon, delta), n, n_faulty)
    proto = DCA(n_compute=n_compute, n_faulty=n_faulty, encrypt=encrypt, mode="secure" if ledger.secure else "seeded")
    memory = RoundMemory() if trace_memory else contextlib.nullcontext()
    with memory:
        t0 = time.perf_counter()
        res = proto.run(data, s, ledger.noise, backend=InProcessBackend(threads), value_bound=1.0)
        sec = time.perf_counter() - t0
    peak = memory.peak_mib if trace_memory else 0.0
    ledger.record(distributed_gaussian_spend(2.0 * math.sqrt(d), s, n, res.n_dropped, res.n_colluding, epsilon,
                                             delta=delta, label="timed round's sum"))
    return {"seconds": sec, "peak_mib": peak, "noise_factor": noise_factor(n, n_faulty),
            "client_sigma": s, "sum_abs_mean": float(np.mean(np.abs(res.total)))}


@register_algorithm
class DCATiming(Algorithm):
    """Times one DCA round (Alg. 1) on ``dca_clients`` data; see module docstring.  Privacy: the released sum is
    (ε, δ)-DP for replace-one neighbours (Δ₂ = 2√d on [−1, 1]^d, Thm 1 noise); the timings are what is reported."""

    name = "dca_timing"
    family = "dca"
    audit = AuditPlan(skip="timing harness: its outputs are zeros and wall times, the client values come from "
                           "meta['client_seed'], not from the split's rows (nothing data-dependent to audit)")
    description = "wall time and peak memory of one DCA round (Heikkila et al. 2017 Table 1)"
    neighbouring = "replace-one"
    requires_delta = True   # the round's noise is Gaussian
    guarantee_text = "(ε, δ)-DP, replace-one (the round's sum, Thm 1; only timings are reported)"

    class Params(Params):
        n_compute: int = Field(10, ge=2, description="Compute nodes M")
        encrypt: bool = Field(False, description="AES-GCM on client -> Compute messages")
        threads: int | None = Field(None, ge=1, description="threads of the in-process back-end")

    def run(self, split: Split, epsilon: float, delta: float, ledger, trials: int = 1) -> Output:
        ledger = as_ledger(ledger)
        N, d = int(split.meta["n_clients"]), int(split.meta["dim"])
        p = self.params
        ex = time_round(N, d, p.n_compute, p.encrypt, epsilon, delta, ledger, int(split.meta["client_seed"]),
                        p.threads)
        return Output(predictions=np.zeros((trials, len(split.y_test))),
                      extras={"seconds": ex["seconds"], "peak_mib": ex["peak_mib"],
                              "noise_factor": ex["noise_factor"]}, guarantee=ledger.guarantee())
