"""Run an experiment: chunks of cells that share data, in parallel with joblib, resumable, atomic writes.

A *chunk* is (dataset variant, repeat, block of subsets).  Its composition depends only on the spec (never on
``--jobs``), each cell draws from streams keyed by names (``dpexp.rng``), and chunk files are merged in canonical
order — so ``results.csv`` is byte-identical for any ``--jobs``.  Completed chunks are written as
``OUT/.parts/<chunk>.csv`` via temp file + rename; a resumed run skips them.  After the merge the parts are removed
and the manifest says ``complete``; resuming a complete run does nothing (``--force`` recomputes).
"""

from __future__ import annotations

import csv
import datetime as _dt
import gzip
import hashlib
import io
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from dpexp import __version__, cache
from dpexp.errors import UserError
from dpexp.rng import data_stream, key_hex, new_root_seed, noise_names, noise_stream
from dpexp.spec import ResolvedExperiment
from dpexp.types import Sizes

COLUMNS = ["experiment", "dataset", "dataset_params", "subset", "algorithm", "label", "params", "epsilon", "delta",
           "n_private", "n_public", "n_test", "d", "repeat", "trials", "n_private_requested", "n_public_requested",
           "n_test_requested", "metric", "value", "seed_key", "error"]
PARTS = ".parts"
GZIP_BYTES = 64 * 2**20  # results larger than this are written as results.csv.gz (deterministic, mtime 0)


@dataclass(frozen=True)
class Chunk:
    index: int
    dataset: int        # index into ResolvedExperiment.datasets
    repeat: int
    subsets: tuple[str, ...]

    @property
    def file_name(self) -> str:
        return f"{self.index:07d}.csv"


def plan_chunks(exp: ResolvedExperiment) -> list[Chunk]:
    """Canonical chunk list: datasets x repeats x subset blocks sized by ``spec.chunk_work``."""
    per_subset = exp.cells_per_subset_repeat * exp.spec.trials
    block = max(1, exp.spec.chunk_work // max(per_subset, 1))
    chunks: list[Chunk] = []
    for di, dv in enumerate(exp.datasets):
        for r in range(exp.spec.repeats):
            for s in range(0, len(dv.subsets), block):
                chunks.append(Chunk(len(chunks), di, r, tuple(dv.subsets[s : s + block])))
    return chunks


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return "" if math.isnan(x) else repr(x)
    return str(x)


def run_chunk(exp: ResolvedExperiment, chunk: Chunk, root_seed: int) -> list[tuple[Any, ...]]:
    """Compute every cell of a chunk; returns result rows (never raises for algorithm/metric failures)."""
    dv = exp.datasets[chunk.dataset]
    spec = exp.spec
    max_sizes = (max(exp.n_test), max(exp.n_public), max(exp.n_private))
    ds_key = f"{dv.name}[{dv.params_str}]"
    rows: list[tuple[Any, ...]] = []
    for n_test, n_public, n_private in exp.size_grid:
        sizes = Sizes(n_private, n_public, n_test, max_sizes[2], max_sizes[1], max_sizes[0])
        requested = "all" if n_private < 0 else n_private
        splits: list[Any] = []
        for subset in chunk.subsets:
            key_subset = "*" if dv.instance.shared_split else subset
            rng = data_stream(root_seed, ds_key, key_subset, chunk.repeat)
            try:
                splits.append(dv.instance.split(subset, sizes, rng))
            except Exception as exc:  # recorded for every cell of this subset and size; the run goes on
                splits.append(_SplitFailure(exc, (max(n_private, 0), n_public, n_test, 0)))
        good = [i for i, sp in enumerate(splits) if not isinstance(sp, _SplitFailure)]
        for av in exp.algorithms:
            private = getattr(av.instance, "private", True)
            eps_delta = [(e, d) for e in exp.epsilons for d in exp.deltas]
            runs = eps_delta if private else [(None, None)]
            for eps, delta in runs:
                rngs = []
                seed_keys = []
                for subset in chunk.subsets:
                    names = (ds_key, subset, chunk.repeat, av.name, av.params_str, eps, delta)
                    rngs.append(noise_stream(root_seed, *names))
                    seed_keys.append(key_hex(*noise_names(*names)))
                outputs: list[Any] = [sp.error if isinstance(sp, _SplitFailure) else None for sp in splits]
                if good:
                    try:
                        got = av.instance.run_many([splits[i] for i in good],
                                                   exp.epsilons[0] if eps is None else eps,
                                                   exp.deltas[0] if delta is None else delta,
                                                   [rngs[i] for i in good], spec.trials)
                    except Exception as exc:  # a bug in run_many itself: fail every cell of this group
                        got = [exc] * len(good)
                    for i, o in zip(good, got):
                        outputs[i] = o
                targets = eps_delta if eps is None else [(eps, delta)]
                for split, subset, out, skey in zip(splits, chunk.subsets, outputs, seed_keys):
                    if isinstance(split, _SplitFailure):
                        base_sizes = split.sizes
                    else:
                        base_sizes = (len(split.y_private), len(split.y_public), len(split.y_test), split.d)
                    values = _metric_values(exp, out, split)
                    for e, d in targets:
                        prefix = (spec.name, dv.name, dv.params_str, subset, av.name, av.label, av.params_str,
                                  e, d, *base_sizes, chunk.repeat, spec.trials, requested, n_public, n_test)
                        for metric, value, err in values:
                            rows.append(prefix + (metric, value, skey, err))
    return rows


@dataclass
class _SplitFailure:
    """Stands in for a split whose dataset raised: every cell that needed it is recorded as failed."""

    exc: Exception
    sizes: tuple[int, int, int, int]

    @property
    def error(self) -> Exception:
        return RuntimeError(f"data split failed: {type(self.exc).__name__}: {self.exc}")


def _metric_values(exp: ResolvedExperiment, out: Any, split: Any) -> list[tuple[str, float, str]]:
    if isinstance(out, Exception):
        msg = f"{type(out).__name__}: {out}".replace("\n", " ")[:500]
        return [(label, float("nan"), msg) for label, _ in exp.metrics]
    vals = []
    for label, metric in exp.metrics:
        try:
            vals.append((label, float(metric(out, split)), ""))
        except Exception as exc:
            vals.append((label, float("nan"), f"metric {label}: {type(exc).__name__}: {exc}"[:500]))
    for key in sorted(out.extras):
        try:
            vals.append((key, float(out.extras[key]), ""))
        except (TypeError, ValueError) as exc:
            vals.append((key, float("nan"), f"extra {key}: {type(exc).__name__}: {exc}"[:500]))
    return vals


def _rows_to_csv(rows: list[tuple[Any, ...]], header: bool) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    if header:
        w.writerow(COLUMNS)
    w.writerows([[_fmt(x) for x in r] for r in rows])
    return buf.getvalue().encode("utf-8")


def _resolve_in_worker(payload: dict[str, Any]) -> ResolvedExperiment:
    if payload.get("data_dir"):
        os.environ["DPEXP_DATA_DIR"] = payload["data_dir"]
    from dpexp.spec import resolve

    return resolve(payload["raw"], payload["source"], payload["overrides"], payload["repeats"])


def _worker(payload: dict[str, Any], chunk: Chunk, parts_dir: str) -> tuple[int, int]:
    # the resolved experiment is rebuilt once per worker process from the raw config (one experiment at a time)
    exp = cache.memo("runner.worker_experiment", payload["key"], lambda: _resolve_in_worker(payload), maxsize=1)
    return _execute(exp, chunk, payload["seed"], Path(parts_dir))


def _execute(exp: ResolvedExperiment, chunk: Chunk, seed: int, parts_dir: Path) -> tuple[int, int]:
    rows = run_chunk(exp, chunk, seed)
    cache.write_atomic(parts_dir / chunk.file_name, _rows_to_csv(rows, header=False))
    cells = len(chunk.subsets) * exp.cells_per_subset_repeat
    return chunk.index, cells


# ----------------------------------------------------------------------------------------------------------------
# Provenance


def git_info() -> dict[str, Any]:
    """Commit and dirty flag of the dpexp source tree (None outside a git checkout)."""
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                                timeout=5).stdout.strip() or None
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                                    capture_output=True, text=True, timeout=5).stdout.strip()) if commit else None
    except (OSError, subprocess.SubprocessError):
        commit, dirty = None, None
    return {"commit": commit, "dirty": dirty}


def versions() -> dict[str, str]:
    import scipy

    return {"dpexp": __version__, "python": platform.python_version(), "numpy": np.__version__,
            "scipy": scipy.__version__, "platform": platform.platform()}


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def config_fingerprint(raw: dict[str, Any], overrides: list[str], repeats: int | None) -> str:
    blob = json.dumps({"raw": raw, "overrides": overrides, "repeats": repeats}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


# ----------------------------------------------------------------------------------------------------------------
# Driver


@dataclass
class RunReport:
    out: Path
    results_path: Path
    cells: int
    failed_cells: int
    skipped_chunks: int
    seconds: float
    already_complete: bool = False


def _iter_parallel(jobs: int, payload: dict[str, Any], todo: list[Chunk], parts: Path,
                   exp: ResolvedExperiment, seed: int) -> Iterator[tuple[int, int]]:
    if jobs == 1 or len(todo) <= 1:
        for c in todo:
            yield _execute(exp, c, seed, parts)
        return
    from joblib import Parallel, delayed

    par = Parallel(n_jobs=jobs, backend="loky", return_as="generator_unordered", batch_size=1)
    yield from par(delayed(_worker)(payload, c, str(parts)) for c in todo)


def run_experiment(exp: ResolvedExperiment, raw: dict[str, Any], out: Path, jobs: int = -1, seed: int | None = None,
                   resume: bool = True, repeats_override: int | None = None, progress: bool = True,
                   data_dir: str | None = None) -> RunReport:
    """Execute (or resume) ``exp`` into ``out``. See module docstring for the guarantees."""
    start = time.time()
    out.mkdir(parents=True, exist_ok=True)
    parts = out / PARTS
    manifest_path = out / "manifest.json"
    fingerprint = config_fingerprint(raw, exp.overrides, repeats_override)
    old = None
    if manifest_path.exists():
        try:
            old = json.loads(manifest_path.read_text())
        except (OSError, json.JSONDecodeError):
            old = None
    if old is not None and resume:
        if old.get("fingerprint") != fingerprint or (seed is not None and seed != old.get("root_seed")):
            raise UserError(f"{out} holds results of a different config, overrides or seed; "
                            "use --force to overwrite or choose another --out")
        root_seed = int(old["root_seed"])
        done_file = out / str(old.get("results_file", ""))
        if old.get("status", "").startswith("complete") and old.get("results_file") and done_file.exists():
            n_failed = int((old.get("failures") or {}).get("count", 0))
            return RunReport(out, done_file, int(old.get("cells", exp.n_cells)), n_failed,
                             int(old.get("chunks", 0)), time.time() - start, already_complete=True)
    else:
        if resume and old is None and any(parts.glob("*.csv")):
            raise UserError(f"{out} has partial results but no readable manifest.json, so they cannot be resumed "
                            "safely; use --force to discard them or choose another --out")
        if not resume:
            shutil.rmtree(parts, ignore_errors=True)
            for name in ("results.csv", "results.csv.gz", "failures.csv"):
                (out / name).unlink(missing_ok=True)
        root_seed = seed if seed is not None else (exp.spec.seed if exp.spec.seed is not None else new_root_seed())
    parts.mkdir(exist_ok=True)

    chunks = plan_chunks(exp)
    done = {p.name for p in parts.glob("*.csv")}
    todo = [c for c in chunks if c.file_name not in done]
    manifest: dict[str, Any] = {
        "experiment": exp.spec.name, "title": exp.spec.title, "config_file": exp.source,
        "config": exp.to_json(), "raw_config": raw, "overrides": exp.overrides, "repeats_override": repeats_override,
        "fingerprint": fingerprint, "root_seed": root_seed, "versions": versions(), "git": git_info(),
        "started": (old or {}).get("started", _now()) if resume else _now(), "finished": None,
        "status": "running", "cells": exp.n_cells, "chunks": len(chunks), "jobs": jobs,
        "algorithms": [{"name": a.name, "label": a.label, "params": a.params,
                        "private": bool(getattr(a.instance, "private", True)),
                        "formally_dp": bool(getattr(a.instance, "formally_dp", True)),
                        "neighbouring": getattr(a.instance, "neighbouring", None),
                        "privacy_spent": [a.instance.privacy_spent(e, d) for e in exp.epsilons for d in exp.deltas]}
                       for a in exp.algorithms],
        "failures": None,
        "skipped_grid_points": {f"algorithms[{k}]": v for k, v in exp.skipped_grid_points.items()},
    }
    cache.write_atomic(manifest_path, json.dumps(manifest, indent=2, default=str).encode())

    payload = {"raw": raw, "source": exp.source, "overrides": exp.overrides, "repeats": repeats_override,
               "seed": root_seed, "key": fingerprint, "data_dir": data_dir or os.environ.get("DPEXP_DATA_DIR")}
    cells_per_chunk = {c.index: len(c.subsets) * exp.cells_per_subset_repeat for c in chunks}
    skipped = len(chunks) - len(todo)
    bar = None
    if progress:
        from tqdm import tqdm

        todo_idx = {c.index for c in todo}
        bar = tqdm(total=exp.n_cells, initial=sum(n for i, n in cells_per_chunk.items() if i not in todo_idx),
                   unit="cell", desc=exp.spec.name, file=sys.stderr, dynamic_ncols=True, mininterval=0.5)
    jobs_eff = (os.cpu_count() or 1) if jobs in (-1, 0) else jobs
    try:
        for _idx, cells in _iter_parallel(jobs_eff, payload, todo, parts, exp, root_seed):
            if bar is not None:
                bar.update(cells)
    finally:
        if bar is not None:
            bar.close()

    results_path, n_rows, failures = merge_parts(out, chunks)
    manifest.update({"finished": _now(), "status": "complete" if not failures else "complete_with_failures",
                     "rows": n_rows, "results_file": results_path.name,
                     "failures": {"count": len(failures), "first": failures[:50]},
                     "seconds_this_invocation": round(time.time() - start, 3)})
    cache.write_atomic(manifest_path, json.dumps(manifest, indent=2, default=str).encode())
    shutil.rmtree(parts, ignore_errors=True)  # merged; a later --resume of a complete run reuses results.csv
    return RunReport(out, results_path, exp.n_cells, len(failures), skipped, time.time() - start)


def merge_parts(out: Path, chunks: list[Chunk]) -> tuple[Path, int, list[dict[str, str]]]:
    """Stream chunk files in canonical order into results.csv (or .csv.gz when large); collect failed cells."""
    parts = out / PARTS
    sizes = [(parts / c.file_name).stat().st_size for c in chunks]
    n_rows = 0
    failures: dict[tuple[str, ...], str] = {}
    big = sum(sizes) > GZIP_BYTES
    path = out / ("results.csv.gz" if big else "results.csv")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    raw_fh = open(tmp, "wb")
    fh = gzip.GzipFile(filename="", mode="wb", fileobj=raw_fh, mtime=0) if big else raw_fh
    try:
        fh.write((",".join(COLUMNS) + "\n").encode())
        for c in chunks:
            data = (parts / c.file_name).read_bytes()
            fh.write(data)
            lines = data.count(b"\n")
            n_rows += lines
            if data.count(b",\n") != lines:  # some row has a non-empty error column
                for line in csv.reader(io.StringIO(data.decode("utf-8"))):
                    if line and line[-1]:
                        failures.setdefault(tuple(line[:14]), line[-1])
        if big:
            fh.close()
        raw_fh.flush()
        os.fsync(raw_fh.fileno())
    finally:
        raw_fh.close()
    os.replace(tmp, path)
    (out / ("results.csv" if big else "results.csv.gz")).unlink(missing_ok=True)
    fail_list = [dict(zip(COLUMNS[:14], k), error=v) for k, v in failures.items()]
    if fail_list:
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=COLUMNS[:14] + ["error"], lineterminator="\n")
        w.writeheader()
        w.writerows(fail_list)
        cache.write_atomic(out / "failures.csv", buf.getvalue().encode())
    else:
        (out / "failures.csv").unlink(missing_ok=True)
    return path, n_rows, fail_list


def sample_cells(exp: ResolvedExperiment, k: int = 5) -> list[dict[str, Any]]:
    """A few cells in canonical order, for ``--dry-run``."""
    out = []
    for dv in exp.datasets:
        for r in range(exp.spec.repeats):
            for subset in dv.subsets:
                for n_test, n_public, n_private in exp.size_grid:
                    for av in exp.algorithms:
                        for e in exp.epsilons:
                            for d in exp.deltas:
                                out.append({"dataset": f"{dv.name}[{dv.params_str}]", "subset": subset, "repeat": r,
                                            "algorithm": av.label, "epsilon": e, "delta": d,
                                            "n_private": "all" if n_private < 0 else n_private,
                                            "n_public": n_public, "n_test": n_test})
                                if len(out) >= k:
                                    return out
    return out
