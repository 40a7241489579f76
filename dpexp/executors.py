"""Where chunks are computed: in this process, in joblib's local ``loky`` processes, or on a Dask cluster.

An executor is handed the chunks still missing and yields each finished chunk's ``runner.ChunkDone`` (its rows as
CSV bytes) as soon as it arrives, in any order; the driver (``runner._compute``) writes every part itself, so no
worker needs the output folder (no shared file system).  Where a chunk runs never changes what it computes: each
chunk's composition is fixed by the spec, its randomness comes from streams keyed by names (``dpexp.rng``), and
the parts are merged in canonical order.

The choice (``make_executor``):

* ``cluster=None``: ``jobs == 1`` runs in this process; ``jobs > 1`` uses joblib's ``loky`` processes, each of which
  rebuilds the experiment from the payload once and ends with the driver, even a killed one (``end_with_parent``);
  its memos last the run (``init_worker``: loky does not replace it as leaking when they grow).
* ``cluster="local:N"``: a Dask ``LocalCluster`` of N worker processes (one thread each) on 127.0.0.1, started for
  this run and closed after it.
* ``cluster=ADDRESS`` (``tcp://host:8786``, ``tls://...``): the scheduler of an existing Dask cluster.  Its workers
  need dpexp (same version) and read datasets from their own ``DPEXP_DATA_DIR``.
* ``cluster=client`` (Python only): a ``distributed.Client`` the caller made (e.g. for a Coiled or Dask Gateway
  cluster that needs credentials); it is used and left open.

Dask's scheduler does the scheduling: retries when a worker dies (its chunks run again elsewhere), work stealing,
the dashboard.  This module only submits one task per chunk and turns what comes back into ``ChunkDone``s.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import uuid
import warnings
from typing import Any, Iterator, Protocol

from dpexp.errors import UserError

#: environment variable naming the cluster when neither --cluster nor --jobs is given
ENV_VAR = "DPEXP_CLUSTER"
#: module of joblib's loky resource tracker (its shutdown warnings are silenced, see ``Loky.run``)
_TRACKER = "joblib.externals.loky.backend.resource_tracker"


class Executor(Protocol):
    """Computes chunks; ``describe`` says where (recorded in the manifest)."""

    describe: str

    def run(self, payload: Any, todo: list[Any], local: Any, work: Any) -> Iterator[Any]:
        """Yield a ``runner.ChunkDone`` per chunk of ``todo`` as it finishes (``local``: the driver's experiment,
        used when computing in this process; ``work``: the runner's chunk functions ``compute_chunk(exp, chunk,
        seed)`` and ``chunk_task(payload, chunk)``, handed in so that this module never imports the runner)."""

    def close(self) -> None:
        """Stop outstanding work and release what the executor started."""


class InProcess:
    """Every chunk in this process, in canonical order (``--jobs 1``)."""

    describe = "in process"

    def run(self, payload: Any, todo: list[Any], local: Any, work: Any) -> Iterator[Any]:
        for chunk in todo:
            yield work.compute_chunk(local, chunk, payload.seed)

    def close(self) -> None:
        pass


class Loky:
    """joblib's ``loky`` processes on this machine (``--jobs N``)."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self.describe = f"joblib loky, {jobs} processes"

    def run(self, payload: Any, todo: list[Any], local: Any, work: Any) -> Iterator[Any]:
        from joblib import Parallel, delayed

        chunk_task = work.chunk_task
        # loky's resource tracker (a child process) warns in several lines about the semaphores of workers stopped
        # by Ctrl-C/SIGTERM before it frees them itself; the interruption is reported in one line by the CLI
        os.environ.setdefault("PYTHONWARNINGS", f"ignore::UserWarning:{_TRACKER}")
        # and joblib warns here, in the driver, about the chunks it cancels when an interruption stops the run early
        # (only when some were in flight: timing-dependent); the CLI's one line says the same
        warnings.filterwarnings("ignore", message=r".*You could benefit from adjusting the input task iterator",
                                category=UserWarning)
        from joblib.parallel import LokyBackend

        # each worker ends with this process (``end_with_parent``), even when it is killed (kill -9) mid-run, and
        # keeps its memos for the whole run (``init_worker``)
        backend = LokyBackend(initializer=init_worker, initargs=(os.getpid(),))
        par = Parallel(n_jobs=self.jobs, backend=backend, return_as="generator_unordered", batch_size=1)
        try:
            yield from par(delayed(chunk_task)(payload, c) for c in todo)
        except BaseException:
            self._stop_workers()
            raise

    @staticmethod
    def _stop_workers() -> None:
        """Stop loky's reusable workers now (an interrupted run: they would finish their chunks for nothing)."""
        try:
            from joblib.externals.loky import reusable_executor

            executor = getattr(reusable_executor, "_executor", None)
            if executor is not None:
                executor.shutdown(wait=True, kill_workers=True)
        except Exception:  # best effort: the processes end with this one anyway
            pass

    def close(self) -> None:
        pass


#: how often a loky worker checks that the driver still runs (seconds), and the code it ends with when not
PARENT_POLL_S = 0.5
EXIT_ORPHANED = 70


#: how much a loky worker may grow after its first chunk before loky replaces it as leaking.  loky's own limit
#: (300 MB, where psutil is installed) is below what a worker's memos rightly hold after a few chunks — the rows and
#: tuning of every dataset variant it has computed (gdsc_tradeoff_dim: 8 dimensions) — so it restarted workers
#: mid-run, and each new one loaded and tuned again; whether it did depended on psutil being installed.  The
#: runs' own budget is 2 GiB a process (checked by benchmarks/paper_scale.py).
WORKER_GROWTH_LIMIT = 2 << 30


def init_worker(parent: int) -> None:
    """Initializer of every loky worker: ``end_with_parent(parent)``, and loky's leak check (a worker replaced once
    it grew by more than a limit after its first chunk) at ``WORKER_GROWTH_LIMIT``."""
    from joblib.externals.loky import process_executor

    # a module setting of loky's worker loop, read after every task (there is no parameter for it)
    process_executor._MAX_MEMORY_LEAK_SIZE = max(process_executor._MAX_MEMORY_LEAK_SIZE, WORKER_GROWTH_LIMIT)
    end_with_parent(parent)


def end_with_parent(parent: int, interval: float | None = None) -> None:
    """Initializer of every loky worker: a daemon thread that ends this process (``os._exit``, no cleanup: the
    driver that would take its results is gone) once its parent ``parent`` (the driver) is no longer its parent —
    on Linux an orphan is re-parented, so ``os.getppid()`` changes.  Without it a killed driver (kill -9, OOM)
    left its workers computing their chunks for nothing and idling for loky's 300 s."""
    import threading
    import time

    if os.getppid() != parent:   # not started by the driver (e.g. a loky worker of a worker): nothing to watch
        return
    wait = PARENT_POLL_S if interval is None else interval

    def watch() -> None:
        while True:
            time.sleep(wait)
            if os.getppid() != parent:
                os._exit(EXIT_ORPHANED)

    threading.Thread(target=watch, name="dpexp-end-with-parent", daemon=True).start()


class DaskCluster:
    """One task per chunk on a Dask cluster; a task's result (the chunk's rows) comes back to this process.

    ``address`` is ``local:N`` (start a ``LocalCluster`` of N processes on 127.0.0.1 for this run) or a scheduler
    address.  The payload is one task that every chunk depends on, so a worker that joins or restarts fetches it
    (or the scheduler recomputes it) like any other data.
    """

    def __init__(self, address: Any) -> None:
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise UserError("--cluster needs Dask distributed: pip install 'dpexp[dask]'") from None
        self.address = address
        self.cluster = None
        self.owns_client = True
        self._futures: list[Any] = []
        self._quiet: _QuietLogger | None = None
        if isinstance(address, Client):  # from Python: a client the caller made (Coiled, Dask Gateway, jobqueue)
            self.client, self.owns_client = address, False
            self.describe = f"dask {address.scheduler.address}"
        elif address.startswith("local:"):
            n = _local_workers(address)
            # quiet: worker logs (also the shutdown races of heartbeats) would interleave with the progress bar; a
            # failing task comes back to this process as a value or an exception anyway
            # the scheduler's HTTP routes on a free port (the default 8787 may be taken: a warning), no dashboard
            # the scheduler and nannies run in this process: their loggers stay quiet until ``close`` has stopped
            # them. ``silence_logs`` alone lowers the handlers only until the cluster's own close begins, and a
            # worker killed with the process group (scancel, SIGTERM) then raced a 'Batched Comm Closed' traceback
            # onto stderr while the scheduler shut down
            self._quiet = _QuietLogger("distributed")
            try:
                with _workers_ignore_sigint():
                    self.cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                                                dashboard_address=None, silence_logs=logging.CRITICAL,
                                                scheduler_kwargs={"dashboard": False,
                                                                  "dashboard_address": "127.0.0.1:0"})
                self.client = Client(self.cluster)
            except BaseException:
                self._quiet.restore()
                raise
            self.describe = f"dask LocalCluster, {n} processes"
        else:
            try:
                self.client = Client(address)  # timeout: Dask's distributed.comm.timeouts.connect (30 s)
            except (OSError, TimeoutError, ValueError) as exc:
                raise UserError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
            self.describe = f"dask {address}"
        info = self.client.scheduler_info()
        workers = info.get("workers", {})
        self.n_workers = len(workers)
        self.threads = sum(int(w.get("nthreads", 1)) for w in workers.values())
        self.describe += f" ({self.n_workers} workers, {self.threads} threads)"
        if self.threads > self.n_workers:
            print(f"dpexp: the cluster's workers run {self.threads / max(self.n_workers, 1):.0f} threads each; dpexp "
                  "chunks are mostly Python (one thread at a time per process): start workers with --nthreads 1 "
                  "--nworkers N for full speed", file=sys.stderr, flush=True)

    def run(self, payload: Any, todo: list[Any], local: Any, work: Any) -> Iterator[Any]:
        from distributed import as_completed
        from distributed.client import FutureCancelledError

        chunk_task = work.chunk_task

        token = uuid.uuid4().hex[:8]
        name = payload.key
        pf = self.client.submit(_identity, payload, key=f"dpexp-payload-{name}-{token}", pure=False)
        futures = [self.client.submit(chunk_task, pf, c, key=f"dpexp-chunk-{name}-{c.index:07d}-{token}",
                                      pure=False) for c in todo]
        self._futures = futures
        pending = set(futures)
        try:
            for fut in as_completed(futures):
                try:
                    done = fut.result()
                except FutureCancelledError:
                    raise UserError("the Dask cluster cancelled this run's tasks (scheduler restarted or the "
                                    "client was closed); finished chunks are kept, rerun to resume") from None
                except Exception as exc:
                    _raise_cluster_failure(exc)
                pending.discard(fut)
                fut.release()
                yield done
        finally:
            # stopped early (Ctrl-C, SIGTERM, an error): the cluster stops working on this run's other chunks
            self._futures = list(pending)
            self._cancel()
            pf.release()

    def _cancel(self) -> None:
        if self._futures:
            try:
                self.client.cancel(self._futures)
            except Exception:  # the cluster is gone: nothing left to stop
                pass
            self._futures = []

    def close(self) -> None:
        try:
            self._cancel()
            if self.owns_client:
                self.client.close(timeout=10)
        finally:
            try:
                if self.cluster is not None:
                    self.cluster.close(timeout=10)
            finally:
                if self._quiet is not None:
                    self._quiet.restore()


class _QuietLogger:
    """Raise one logger's level to CRITICAL until ``restore`` (its previous level back)."""

    def __init__(self, name: str) -> None:
        self.logger = logging.getLogger(name)
        self.level = self.logger.level
        self.logger.setLevel(logging.CRITICAL)

    def restore(self) -> None:
        self.logger.setLevel(self.level)


@contextlib.contextmanager
def _workers_ignore_sigint() -> Iterator[None]:
    """Start worker processes with SIGINT ignored (inherited across exec): a Ctrl-C in the terminal reaches the whole
    process group, and the driver alone should handle it — it closes the cluster; the workers would print a
    KeyboardInterrupt traceback each."""
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: signals are not ours to change
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _identity(x: Any) -> Any:
    return x


def _local_workers(address: str) -> int:
    try:
        n = int(address.split(":", 1)[1])
    except ValueError:
        n = 0
    if n < 1:
        raise UserError(f"--cluster local:N needs a number of worker processes N >= 1, got {address!r}")
    return n


def _raise_cluster_failure(exc: Exception) -> None:
    """A task that did not return: one line for the user; finished chunks stay on disk (resumable)."""
    kind = type(exc).__name__
    if kind == "KilledWorker":
        raise UserError(f"a chunk kept killing the Dask workers that ran it ({exc}); out of memory? finished "
                        "chunks are kept, rerun to resume") from None
    if isinstance(exc, (OSError, TimeoutError)) or kind in {"CommClosedError", "CancelledError"}:
        raise UserError(f"lost the Dask cluster ({kind}: {exc}); finished chunks are kept, rerun to resume") from None
    raise exc


def cluster_from(cluster: str | None, jobs_given: bool) -> str | None:
    """The cluster to use: ``--cluster``, else ``$DPEXP_CLUSTER`` unless ``--jobs`` was given; '' means none."""
    if cluster is None and not jobs_given:
        cluster = os.environ.get(ENV_VAR) or None
    return cluster or None


def make_executor(jobs: int, cluster: Any = None, n_todo: int = 0) -> Executor:
    """The executor for ``--jobs``/``--cluster`` (see the module docstring)."""
    if cluster is not None and cluster != "":
        return DaskCluster(cluster)
    jobs = (os.cpu_count() or 1) if jobs in (-1, 0) else jobs
    if jobs == 1 or n_todo <= 1:
        return InProcess()
    return Loky(jobs)
