"""Run an experiment: chunks of cells that share data, computed anywhere, written here, resumable, atomic writes.

A *chunk* is (dataset variant, repeat, block of subsets).  Its composition depends only on the spec (never on
``--jobs`` or the cluster), each cell draws from streams keyed by names (``dpexp.rng``), and chunk files are merged
in canonical order — so ``results.csv`` is byte-identical for any ``--jobs`` and any Dask cluster.  Workers (this
process, loky processes or Dask workers: ``dpexp.executors``) return each chunk's rows as CSV bytes; this process
writes them as ``OUT/.parts/<chunk>.csv`` via temp file + rename, so no shared file system is needed (with
``<chunk>.sum`` beside it: the rows' privacy-summary counts, made by the worker, so the merge does not parse every
row again); a large run's workers send each part gzip-compressed (``<chunk>.csv.gz``, ``compress_parts``); a resumed
run skips the parts that exist, in either form.  After the merge the parts are removed
and the manifest says ``complete``; resuming a complete run does nothing (``--force`` recomputes).
"""

from __future__ import annotations

import contextlib
import csv
import gc
import gzip
import hashlib
import inspect
import io
import itertools
import json
import math
import operator
import os
import shutil
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np
from isal import isal_zlib

from dpexp import allocator, cache, manifest
from dpexp.chunk import ChunkRows
from dpexp.errors import AlgorithmFailure, NotBatchable, UserError
from dpexp.metrics.cells import scored_together
from dpexp.privacy.budget import check_spend, paper_calibration_excess
from dpexp.privacy.guarantee import NON_PRIVATE, Guarantee
from dpexp.privacy.ledger import PrivacyLedger
from dpexp.privacy.noise import SeededNoise, make_noise
from dpexp.results import (CELL_COLUMNS, COLUMNS, FAILURE_COLUMNS, SCHEMA_VERSION, SUMMARY_INDEX, CellGroup,
                           ChunkRecords, Record, Row, add_summary as _add_summary, cell_of,
                           records_summary as _records_summary, records_text as _records_text)
from dpexp.rng import (data_stream, new_root_seed, noise_names, seed_states, stream_from_key, stream_from_state,
                       stream_key)
from dpexp.spec import AlgoVariant, DatasetVariant, ResolvedExperiment
from dpexp.types import Output, Sizes

PARTS = ".parts"
GZIP_BYTES = 64 * 2**20  # results larger than this are written as results.csv.gz (deterministic, mtime 0)
#: a run whose results are estimated larger than this compresses each part where it is made (``compress_parts``)
PART_GZIP_BYTES = GZIP_BYTES
GZ = ".gz"   # suffix of a compressed part: ``0000007.csv.gz``


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
    chunks: list[Chunk] = []
    for di, dv in enumerate(exp.datasets):
        per_subset = exp.cells_per_subset_repeat(dv) * exp.spec.trials
        block = max(1, exp.spec.chunk_work // max(per_subset, 1))
        for r in range(exp.spec.repeats):
            for s in range(0, len(dv.subsets), block):
                chunks.append(Chunk(len(chunks), di, r, tuple(dv.subsets[s : s + block])))
    return chunks


def run_chunk(exp: ResolvedExperiment, chunk: Chunk, root_seed: int) -> list[Row]:
    """Compute every cell of a chunk; returns result rows (never raises for algorithm/metric failures).

    The rows of ``chunk_records`` (see there), one ``Row`` per metric value.
    """
    return [Row(*rec[0], metric, value, rec[2], err) for rec in chunk_records(exp, chunk, root_seed)
            for metric, value, err in rec[1]]


#: predictions held for scoring at once (``chunk_cells``): past this many bytes the pending cells are scored
PENDING_BYTES = 32 * 2**20


def chunk_records(exp: ResolvedExperiment, chunk: Chunk, root_seed: int) -> list[Record]:
    """Every cell of a chunk as ``Record``s (never raises for algorithm/metric failures), in two steps: the cells'
    outputs and metric values (``chunk_cells``), then their rows (``results.ChunkRecords``, one per chunk)."""
    dv = exp.datasets[chunk.dataset]
    evaluation = {label for label, metric in exp.metrics if getattr(metric, "reads_private", False)}
    made = ChunkRecords((exp.spec.name, dv.name, dv.params_str), chunk.subsets, dv.instance.preprocessing(),
                        evaluation)
    for group in chunk_cells(exp, chunk, root_seed):
        made.add(group)
    return made.done()


def chunk_cells(exp: ResolvedExperiment, chunk: Chunk, root_seed: int) -> Iterator[CellGroup]:
    """Compute every cell of a chunk: one ``results.CellGroup`` per size of the grid, algorithm variant and privacy
    budget, in canonical order (never raises for algorithm/metric failures).

    Per size of the grid: the splits of the chunk's subsets (one data stream each) and their ``ChunkRows`` (the
    chunk's one scratch: ``dpexp.chunk``), then per algorithm variant and privacy budget the outputs of all subsets
    at once (``run_many``, one ``PrivacyLedger`` each: its noise source is the cell's named stream in seeded mode,
    the OS CSPRNG in secure mode; the chunk's ledgers share one dict of the guarantees composed,
    ``PrivacyLedger.guarantee``), each cell carrying its guarantee (``cell_guarantee``).  The metrics score the
    cells of the whole chunk at once (``_metric_table``: every algorithm, budget and size of a drug shares its test
    responses; a metric's ``many`` equals its per-cell values to the bit, so the grouping changes nothing), or
    whenever the predictions held pass ``PENDING_BYTES``; a group is yielded once scored, its outputs dropped.  A
    non-private algorithm runs once per split; its group holds every target of the run."""
    dv = exp.datasets[chunk.dataset]
    ds_key = f"{dv.name}[{dv.params_str}]"
    eps_delta = [(e, d) for e in exp.epsilons for d in exp.deltas]
    # groups computed but not yet scored, in canonical order: (outputs, splits, the group's other fields)
    pending: list[tuple[Any, ...]] = []
    held = 0
    shared = _SharedStream(dv, ds_key, chunk, root_seed)
    composed: dict[tuple[Any, ...], Guarantee] = {}   # the ledgers' guarantees by composition key, for this chunk
    streams = _cell_streams(exp, dv, ds_key, chunk, root_seed, eps_delta)
    seed_keys_of = {g: ["" if key is None else key[1] for key in keys] for g, (keys, _) in streams.items()}
    scratch: dict = {}   # what the chunk's run_many calls share (``ChunkRows``): dropped with the chunk
    grid = tuple((n_test, n_public, n_private) for n_test, n_public, n_private in exp.size_grid)
    early: dict[tuple[int, int, int], list[Any]] = {}   # splits of a size asked for before its turn

    def sizes_of(prefix: tuple[int, int, int]) -> Sizes:
        n_test, n_public, n_private = prefix
        return Sizes(n_private, n_public, n_test, max(exp.n_private), max(exp.n_public), max(exp.n_test))

    def splits_of(prefix: tuple[int, int, int]) -> list[tuple[Any, Any]]:
        # a size's splits (``ChunkRows.others``), made once: the same splits its own turn then takes (each split a
        # function of the data stream's start and the size alone: ``_SharedStream``)
        got = early.get(prefix)
        if got is None:
            got = early[prefix] = _splits(dv, ds_key, chunk, sizes_of(prefix), root_seed, shared)
        return list(zip(chunk.subsets, got))

    for at, prefix in enumerate(grid):
        n_test, n_public, n_private = prefix
        sizes = sizes_of(prefix)
        if at:   # the past size's splits: dropped here (its pending cells hold them)
            early.pop(grid[at - 1], None)
        splits = [sp for _, sp in splits_of(prefix)]
        rows = ChunkRows(chunk.subsets, prefix, dv.instance.nested_sizes, scratch, grid[at:], splits_of)
        tail = (chunk.repeat, exp.spec.trials, "all" if sizes.n_private < 0 else sizes.n_private,
                sizes.n_public, sizes.n_test)
        seen = list(map(_seen, splits))
        for av in exp.algorithms_for(dv):
            private = getattr(av.instance, "private", True)
            variant = (av.name, av.label, av.params_str)
            for eps, delta in (eps_delta if private else [(None, None)]):
                group = (id(av), eps, delta)   # the variants live in ``exp``: an id names one while the chunk runs
                keys, states = streams[group]
                if states is None:   # secure mode: the OS CSPRNG, no stream
                    ledgers = [PrivacyLedger(make_noise("secure"), composed) for _ in keys]
                else:
                    ledgers = [PrivacyLedger(_LazySeededNoise(root_seed, key[0], state), composed)
                               for key, state in zip(keys, states)]
                outputs = _outputs(exp, av, splits, ledgers,
                                   exp.epsilons[0] if eps is None else eps, exp.deltas[0] if delta is None else delta,
                                   rows)
                # each cell's guarantee: an ``Output``'s own, read inline; else ``cell_guarantee``
                guarantees = [out.guarantee if type(out) is Output and out.guarantee is not None
                              else cell_guarantee(av.instance, out) for out in outputs]
                targets = eps_delta if eps is None else [(eps, delta)]
                pending.append((outputs, splits, variant, targets, guarantees, seen, tail, seed_keys_of[group]))
                try:   # every output's predictions an array (the usual): summed in C
                    held += sum(map(_PREDICTION_BYTES, outputs))
                except AttributeError:   # an exception or an output without predictions among them: counted as 0
                    held += sum([getattr(getattr(out, "predictions", None), "nbytes", 0) for out in outputs])
                if held > PENDING_BYTES:
                    yield from _scored(exp, pending)
                    held = 0
    yield from _scored(exp, pending)


def _scored(exp: ResolvedExperiment, pending: list[tuple[Any, ...]]) -> Iterator[CellGroup]:
    """The pending groups (``chunk_cells``) scored at once (``_metric_table``), as ``CellGroup``s; ``pending`` is
    emptied, so their outputs are dropped."""
    values = _metric_table(exp, [o for p in pending for o in p[0]], [sp for p in pending for sp in p[1]])
    groups, at = [], 0
    for _, splits, variant, targets, guarantees, seen, tail, seed_keys in pending:
        groups.append(CellGroup(variant, targets, guarantees, values[at:at + len(splits)], seen, tail, seed_keys))
        at += len(splits)
    pending.clear()
    return iter(groups)


#: the bytes of an ``Output``'s predictions (``chunk_records``' count of what it holds)
_PREDICTION_BYTES = operator.attrgetter("predictions.nbytes")


def _seen(split: Any) -> tuple[int, int, int, int]:
    """The sizes a split's algorithms saw: (n_private, n_public, n_test, d)."""
    if isinstance(split, _SplitFailure):
        return split.sizes
    return (len(split.y_private), len(split.y_public), len(split.y_test), split.d)


class _CellStream:
    """``_LazySeededNoise._rng``: the cell's generator, built on the first read and then kept in the instance's dict,
    where later reads find it as a plain attribute (a non-data descriptor: no call per draw)."""

    def __get__(self, noise: Any, owner: Any = None) -> Any:
        if noise is None:
            return self
        state = noise._state
        gen = noise.__dict__["_rng"] = (stream_from_key(noise._seed, noise._words) if state is None
                                        else stream_from_state(state))
        return gen


class _LazySeededNoise(SeededNoise):
    """``SeededNoise`` of a cell's named stream, created on the first draw: most of a GDSC run's cells are
    non-private or public-only and never draw, and building a stream (SeedSequence + PCG64) was a tenth of a cell's
    cost.  ``state``: the stream's seed precomputed with the chunk's others (``dpexp.rng.seed_states``).  The draws
    are those of the eager stream (same key, same order)."""

    _rng = _CellStream()

    def __init__(self, root_seed: int, words: tuple[int, ...], state: np.ndarray | None = None) -> None:
        self._seed, self._words, self._state = int(root_seed), words, state


def _cell_streams(exp: ResolvedExperiment, dv: DatasetVariant, ds_key: str, chunk: Chunk, root_seed: int,
                  eps_delta: list[tuple[Any, Any]]) -> dict[tuple[int, Any, Any], tuple[list[Any], Any]]:
    """The noise streams of a chunk's cells, per (algorithm variant, ε, δ): the subsets' stream keys (``stream_key``
    of ``noise_names``: the same for every size of the grid) and their PCG64 seeds, all computed in one vectorised
    pass (``seed_states``, a list of rows; None in secure mode, where no stream exists)."""
    groups: dict[tuple[int, Any, Any], list[Any]] = {}
    for av in exp.algorithms_for(dv):
        for eps, delta in (eps_delta if getattr(av.instance, "private", True) else [(None, None)]):
            groups[(id(av), eps, delta)] = [
                None if exp.spec.noise == "secure" else
                stream_key(*noise_names(ds_key, subset, chunk.repeat, av.name, av.params_str, eps, delta))
                for subset in chunk.subsets]
    if exp.spec.noise == "secure":
        return {g: (keys, None) for g, keys in groups.items()}
    states = seed_states(root_seed, [k[0] for keys in groups.values() for k in keys])
    out, at = {}, 0
    for g, keys in groups.items():   # each seed as its own row view, made once (not once per size of the grid)
        out[g] = (keys, list(states[at:at + len(keys)]))
        at += len(keys)
    return out


class _SharedStream:
    """The data stream of a ``shared_split`` dataset's chunk (key (dataset, "*", repeat)), built once and rewound to
    its initial state before each split: the draws equal a fresh stream's, without building one per subset and size
    (a shared-split dataset uses the generator only inside ``split``)."""

    def __init__(self, dv: DatasetVariant, ds_key: str, chunk: Chunk, root_seed: int) -> None:
        self.rng = data_stream(root_seed, ds_key, "*", chunk.repeat) if dv.instance.shared_split else None
        self.state = None if self.rng is None else self.rng.bit_generator.state

    def fresh(self) -> np.random.Generator:
        self.rng.bit_generator.state = self.state  # type: ignore[union-attr]
        return self.rng  # type: ignore[return-value]


def cell_ledger(noise: str, root_seed: int, names: tuple[Any, ...],
                key: tuple[tuple[int, ...], str] | None = None) -> PrivacyLedger:
    """The ledger of one cell: seeded mode draws from the cell's named noise stream (reproducible from the
    manifest; created on its first draw; ``key`` = ``stream_key`` of its names, if already computed), secure mode
    from the OS CSPRNG (no stream is created, nothing that regenerates it is recorded)."""
    if noise == "secure":
        return PrivacyLedger(make_noise("secure"))
    words = (key or stream_key(*noise_names(*names)))[0]
    return PrivacyLedger(_LazySeededNoise(root_seed, words))


def cell_guarantee(algorithm: Any, out: Any) -> Guarantee:
    """The guarantee written on a cell's rows: the output's own (derived by its ledger); for a failed cell
    ``none`` ("cell failed: nothing released"); an output without one is ``NON_PRIVATE`` for a non-private
    algorithm and ``none`` otherwise (a registry-wide test forbids the latter)."""
    if isinstance(out, Exception):
        return Guarantee.none("cell failed: nothing released")
    if out.guarantee is not None:
        return out.guarantee
    if not getattr(algorithm, "private", True):
        return NON_PRIVATE
    return Guarantee.none("algorithm reported no guarantee")


def _splits(dv: DatasetVariant, ds_key: str, chunk: Chunk, sizes: Sizes, root_seed: int,
            shared: _SharedStream | None = None) -> list[Any]:
    """The split of each subset of the chunk, from the data stream of (dataset, subset or "*", repeat); a dataset
    that raises gives a ``_SplitFailure`` in its place.  A shared-split dataset with ``split_many(subsets, sizes,
    rng)`` (the splits, or each one's exception, from one generator at the stream's start: the fold made once for
    all subsets) gives them in one call; if it declines (``NotBatchable``), split by split; if it raises anything
    else, or answers with another number of splits, every subset's split fails with that message."""
    failed = (max(sizes.n_private, 0), sizes.n_public, sizes.n_test, 0)
    many = getattr(dv.instance, "split_many", None)
    if many is not None and shared is not None and shared.rng is not None:
        try:
            got = many(list(chunk.subsets), sizes, shared.fresh())
        except NotBatchable:
            got = None
        except Exception as exc:  # every subset's split fails with it (recorded per cell, counted in the manifest)
            got = [exc] * len(chunk.subsets)
        if got is not None:
            if len(got) != len(chunk.subsets):
                got = [RuntimeError(f"split_many gave {len(got)} splits for {len(chunk.subsets)} subsets")] * len(
                    chunk.subsets)
            return [_SplitFailure(sp, failed) if isinstance(sp, Exception) else sp for sp in got]
    splits: list[Any] = []
    for subset in chunk.subsets:
        if shared is not None and shared.rng is not None:
            rng = shared.fresh()
        else:
            rng = data_stream(root_seed, ds_key, "*" if dv.instance.shared_split else subset, chunk.repeat)
        try:
            splits.append(dv.instance.split(subset, sizes, rng))
        except Exception as exc:  # recorded for every cell of this subset and size; the run goes on
            splits.append(_SplitFailure(exc, failed))
    return splits


def _outputs(exp: ResolvedExperiment, av: AlgoVariant, splits: list[Any], ledgers: list[PrivacyLedger],
             epsilon: float, delta: float, rows: ChunkRows | None = None) -> list[Any]:
    """The algorithm's output (or exception) for every split, one ``run_many`` call over the splits that exist;
    ``rows``: the splits' ``ChunkRows``, handed to a ``run_many`` that takes it (``_takes_chunk``)."""
    extra = {} if rows is None or not _takes_chunk(type(av.instance)) else {"chunk": rows}
    if splits and _SplitFailure not in set(map(type, splits)):   # the usual, every split exists: no step per cell
        try:
            got = av.instance.run_many(list(splits), epsilon, delta, list(ledgers), exp.spec.trials, **extra)
        except Exception as exc:  # a bug in run_many itself: fail every cell of this group
            got = [exc] * len(splits)
        got = list(itertools.islice(got, len(splits)))   # placed as the loop below places them: one per split,
        got += [None] * (len(splits) - len(got))           # in order, None past the last
        return _checked(av.instance, got, epsilon, delta)
    outputs: list[Any] = [sp.error if isinstance(sp, _SplitFailure) else None for sp in splits]
    good = [i for i, sp in enumerate(splits) if not isinstance(sp, _SplitFailure)]
    if good:
        try:
            if extra:
                extra["chunk"] = extra["chunk"].select(good)
            got = av.instance.run_many([splits[i] for i in good], epsilon, delta, [ledgers[i] for i in good],
                                       exp.spec.trials, **extra)
        except Exception as exc:  # a bug in run_many itself: fail every cell of this group
            got = [exc] * len(good)
        for i, o in zip(good, got):
            outputs[i] = o
    return _checked(av.instance, outputs, epsilon, delta)


def _takes_chunk(cls: type) -> bool:
    """Whether ``cls.run_many`` declares a ``chunk`` parameter (or takes any keyword): a plug-in written before
    ``ChunkRows`` is called without it.  Memoised per class (by its module and name)."""
    def takes() -> bool:
        params = inspect.signature(cls.run_many).parameters
        return "chunk" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())

    return cache.memo("runner.takes_chunk", (cls.__module__, cls.__qualname__), takes)


def _checked(algorithm: Any, outputs: list[Any], epsilon: float, delta: float) -> list[Any]:
    """``outputs`` with each ``Output`` that must not become rows replaced by an ``AlgorithmFailure`` (its cell
    fails with that one-line reason, counted like any failed cell): a guarantee that spent more than the cell asked
    for (``budget.check_spend``, once per guarantee object: most cells of a variant share one), or an estimate that
    is not finite (``_non_finite``).  The usual group (one guarantee within its ask, every number finite) is told
    by one sum over the group's predictions and coefficients, concatenated (NaN or ±inf anywhere makes it
    non-finite; an overflow to ±inf merely takes the cell-by-cell path), not cell by cell."""
    outs = [o for o in outputs if type(o) is Output]
    if not outs:
        return outputs
    over: dict[int, str] = {}
    excused: dict[int, Guarantee] = {}
    for g in {id(o.guarantee): o.guarantee for o in outs}.values():
        msg = check_spend(algorithm, g, epsilon, delta)
        if msg:
            paper = paper_calibration_excess(algorithm, g, epsilon, delta)
            if paper is not None:   # the paper's classic calibration: its rows say none, with the excess
                excused[id(g)] = paper
            else:
                over[id(g)] = msg
    for o in outs:
        if id(o.guarantee) in excused:
            o.guarantee = excused[id(o.guarantee)]
    try:
        coefs = [o.coef for o in outs if o.coef is not None]
        finite = math.isfinite(np.concatenate([o.predictions for o in outs], axis=None).sum()
                               + (np.concatenate(coefs, axis=None).sum() if coefs else 0.0))
    except (ValueError, TypeError):   # e.g. coefficients of other shapes or not arrays: checked cell by cell
        finite = False
    if finite and not over:
        return outputs
    for i, out in enumerate(outputs):
        if type(out) is Output:
            problem = over.get(id(out.guarantee)) or ("" if finite else _non_finite(out))
            if problem:
                outputs[i] = AlgorithmFailure(problem)
    return outputs


def _non_finite(out: Output) -> str:
    """'' for an estimate the rows may carry, else why not.  A trial's predictions are all finite (its estimate) or
    all NaN (a declared failure, ⊥, counted by ``failure_rate``); anything else — an infinite value, a trial that is
    NaN at some test points only, NaN coefficients beside finite predictions — is an estimate gone NaN (e.g. from
    non-finite data) and fails its cell."""
    pred = out.predictions
    if np.isfinite(pred).all():   # the usual: one pass
        coef = out.coef
        if coef is None or np.isfinite(coef).all():
            return ""
        return "estimate not finite: NaN or infinite coefficients beside finite predictions"
    if np.isinf(pred).any():
        return "estimate not finite: infinite predictions"
    nan = np.isnan(pred)
    if (nan.any(axis=1) & ~nan.all(axis=1)).any():
        return "estimate not finite: a trial's predictions are NaN at some test points only"
    coef = out.coef
    if coef is not None:
        c = np.asarray(coef, dtype=float).reshape(pred.shape[0], -1)
        if (~np.isfinite(c).all(axis=1) & ~nan.all(axis=1)).any():
            return "estimate not finite: NaN or infinite coefficients beside finite predictions"
    return ""


@dataclass
class _SplitFailure:
    """Stands in for a split whose dataset raised: every cell that needed it is recorded as failed."""

    exc: Exception
    sizes: tuple[int, int, int, int]

    @property
    def error(self) -> Exception:
        return RuntimeError(f"data split failed: {type(self.exc).__name__}: {self.exc}")


def _metric_table(exp: ResolvedExperiment, outputs: list[Any], splits: list[Any]
                  ) -> list[list[tuple[str, float, str]]]:
    """``_metric_values`` of every cell of a group (one algorithm variant and budget over the chunk's subsets), each
    metric scored over all of them at once (``Metric.many``: per-cell overhead was most of a GDSC cell's cost).  A
    ``many`` that declines (``NotBatchable``) is scored cell by cell, so a failure stays with its cell; one that
    raises anything else fails that metric in every cell of the call, with its message."""
    good = [i for i, o in enumerate(outputs) if not isinstance(o, Exception)]
    outs, sps = outputs, splits          # the cells that have an output (all of them, usually), one list each
    if len(good) < len(outputs):
        outs, sps = [outputs[i] for i in good], [splits[i] for i in good]
    columns = []
    with scored_together():   # the metrics of these lists share their response groups (``metrics.cells``)
        for label, metric in exp.metrics:
            try:
                got = metric.many(outs, sps)
                if len(got) != len(good):
                    raise ValueError(f"{label}.many returned {len(got)} values for {len(good)} cells")
                vals = [(label, float(v), "") for v in got]
            except NotBatchable:   # declined on its stated preconditions: cell by cell, each with its own error
                vals = [_metric_value(label, metric, outputs[i], splits[i]) for i in good]
            except Exception as exc:   # every cell of the call fails this metric with the message (manifest counts)
                err = f"metric {label}: {type(exc).__name__}: {exc}".replace("\n", " ")[:500]
                vals = [(label, float("nan"), err)] * len(good)
            columns.append(vals)
    rows = [list(r) for r in zip(*columns)] if columns else [[] for _ in good]
    for row, o in zip(rows, outs):
        if o.extras:
            row += _extra_values(o)
    if len(good) == len(outputs):
        return rows
    table: list[list[tuple[str, float, str]]] = [[] for _ in outputs]
    for i, row in zip(good, rows):
        table[i] = row
    for i, o in enumerate(outputs):
        if isinstance(o, Exception):
            table[i] = _metric_values(exp, o, splits[i])
    return table


def _metric_values(exp: ResolvedExperiment, out: Any, split: Any) -> list[tuple[str, float, str]]:
    if isinstance(out, Exception):
        msg = f"{type(out).__name__}: {out}".replace("\n", " ")[:500]
        return [(label, float("nan"), msg) for label, _ in exp.metrics]
    return [_metric_value(label, metric, out, split) for label, metric in exp.metrics] + _extra_values(out)


def _metric_value(label: str, metric: Any, out: Any, split: Any) -> tuple[str, float, str]:
    try:
        return (label, float(metric(out, split)), "")
    except Exception as exc:
        return (label, float("nan"), f"metric {label}: {type(exc).__name__}: {exc}"[:500])


def _extra_values(out: Any) -> list[tuple[str, float, str]]:
    extras = out.extras
    if not extras:
        return []
    try:   # every value a number (the usual case): one comprehension; else key by key, with the failing ones' errors
        return [(key, float(extras[key]), "") for key in sorted(extras)]
    except (TypeError, ValueError):
        pass
    vals = []
    for key in sorted(out.extras):
        try:
            vals.append((key, float(out.extras[key]), ""))
        except (TypeError, ValueError) as exc:
            vals.append((key, float("nan"), f"extra {key}: {type(exc).__name__}: {exc}"[:500]))
    return vals


@dataclass(frozen=True)
class Payload:
    """What a worker needs to rebuild the experiment: the raw config, overrides, --repeats and the root seed.

    ``key`` is the config fingerprint; ``data_dir`` the driver's data directory for local worker processes (None on
    a cluster: each worker reads its own ``DPEXP_DATA_DIR``); ``version`` and ``digest`` (the datasets' subsets)
    let a worker refuse to compute with other code or other data than the driver planned with.
    """

    raw: dict[str, Any]
    source: str
    overrides: list[str]
    repeats: int | None
    seed: int
    key: str
    data_dir: str | None
    version: str
    digest: str


@dataclass(frozen=True)
class ChunkDone:
    """A finished chunk as a worker returns it: its rows as CSV lines (no header), its number of cells and what the
    manifest's privacy summary needs of them (``_records_summary``: counted where the rows are made, so the driver
    does not parse every row again when it merges; None: the driver parses the part; with ``gz`` its ``lines``: the
    number of line breaks of the rows' text)."""

    index: int
    data: bytes
    cells: int
    summary: dict[str, list[Any]] | None = None
    gz: bool = False   # ``data`` is the rows' ``gzip_member`` (``compress_parts``)


@dataclass(frozen=True)
class WorkerProblem:
    """A worker that cannot compute this run (data missing or different, other dpexp version): one line naming it."""

    worker: str
    message: str


def plan_digest(exp: ResolvedExperiment) -> str:
    """Short hash of what the chunk plan rests on besides the config: every dataset variant's subsets."""
    import hashlib

    blob = "\x1f".join(f"{dv.name}[{dv.params_str}]:{','.join(dv.subsets)}" for dv in exp.datasets)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


class _FewerCollections:
    """Python's cyclic garbage collector runs every ``gen0`` net allocations instead of 700 while chunks are
    computed (restored when the last one ends): a chunk allocates millions of short-lived tuples and arrays, almost
    none in cycles, and the frequent young-generation passes were ~5 % of a GDSC cell's CPU.  Reference counting
    frees them as before; only the scan for cycles runs less often.  The records a chunk holds until it is written
    count too: a GDSC chunk of ``chunk_work: 12000`` keeps 100,000-150,000 objects alive, so at 50,000 each pass
    scanned them all again (8 passes, ~2 % of a paper-scale repeat's CPU); at 500,000 no pass falls inside such a
    chunk, and the cycles a chunk might leave are still collected at most that many allocations later.  The threshold is process-wide, so chunks that
    run in threads of one process (a Dask worker) share one raise: the first to start sets it, the last to end puts
    the caller's back."""

    def __init__(self, gen0: int = 500_000) -> None:
        self.gen0, self.active, self.saved = gen0, 0, None
        self.lock = threading.Lock()

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        with self.lock:
            if self.active == 0:
                self.saved = gc.get_threshold()
                gc.set_threshold(max(self.gen0, self.saved[0]), *self.saved[1:])
            self.active += 1
        try:
            yield
        finally:
            with self.lock:
                self.active -= 1
                if self.active == 0:
                    gc.set_threshold(*self.saved)


_fewer_collections = _FewerCollections()


def compute_chunk(exp: ResolvedExperiment, chunk: Chunk, seed: int) -> ChunkDone:
    """Compute one chunk into its CSV bytes (the unit of work of every executor).  Its records are made, written
    and freed while collections are fewer (``_chunk_done``): the objects of the chunk are gone before the threshold
    is put back, so no pass over them follows (one per chunk was ~1 % of a GDSC cell's CPU).  The process keeps its
    freed large blocks for the next arrays (``allocator.keep_freed_blocks``, once per process)."""
    allocator.keep_freed_blocks()
    with _fewer_collections():
        return _chunk_done(exp, chunk, seed)


def _chunk_done(exp: ResolvedExperiment, chunk: Chunk, seed: int) -> ChunkDone:
    records = chunk_records(exp, chunk, seed)
    (data, lines), summary = _records_text(records), _records_summary(records)
    if not compress_parts(exp):
        return ChunkDone(chunk.index, data, _chunk_cells(exp, chunk), summary)
    summary["lines"] = lines   # the merge's row count, which it no longer reads from the text (counted as written)
    return ChunkDone(chunk.index, gzip_member(data), _chunk_cells(exp, chunk), summary, gz=True)


def compress_parts(exp: ResolvedExperiment) -> bool:
    """Whether the chunks of ``exp`` are sent and kept gzip-compressed: when its results are expected to pass
    ``PART_GZIP_BYTES`` (estimated: ~200 bytes per row, one row per metric and cell, extras not counted), so that
    they would be merged into ``results.csv.gz`` anyway (the driver compresses the parts that come plain).  Where a
    part is compressed never changes the results: the merge writes every part as the same gzip member
    (``gzip_member``) or, into a plain ``results.csv``, as its text."""
    return exp.n_cells * max(len(exp.metrics), 1) * 200 > PART_GZIP_BYTES


def gzip_member(data: bytes) -> bytes:
    """``data`` as one gzip member, level 1, mtime 0, OS byte 255 (ISA-L's header: a pure function of ``data`` for
    one ISA-L version, whatever the platform); members concatenate into a valid gzip file whose content is the
    concatenation of theirs (RFC 1952).  ISA-L's deflate (``isal``) rather than zlib's: on a GDSC part it
    compresses about 6x faster (zlib level 1 was ~3 % of a paper-scale run's CPU) and ~13 % smaller; any gzip
    reader reads it, and the text inside is what it always was."""
    return isal_zlib.compress(data, level=1, wbits=31)


_RESOLVE_LOCK = threading.Lock()  # a Dask worker may run several chunks in threads: resolve once


def chunk_task(payload: Payload, chunk: Chunk) -> ChunkDone | WorkerProblem:
    """A chunk in a worker process: the experiment is rebuilt once per process from ``payload`` (memo keyed by the
    fingerprint and seed); a worker whose data or code differ from the driver's returns a ``WorkerProblem``."""
    from dpexp.version import __version__

    if payload.version != __version__:
        return WorkerProblem(worker_name(), f"runs dpexp {__version__}, the driver {payload.version}")
    try:
        with _RESOLVE_LOCK:
            exp = cache.memo("runner.worker_experiment", (payload.key, payload.seed), lambda: _resolve(payload),
                             maxsize=1)
    except UserError as exc:
        return WorkerProblem(worker_name(), str(exc))
    if plan_digest(exp) != payload.digest:
        return WorkerProblem(worker_name(), "its datasets have other subsets than the driver's (another version of "
                                            "the data? check DPEXP_DATA_DIR there)")
    return compute_chunk(exp, chunk, payload.seed)


def _resolve(payload: Payload) -> ResolvedExperiment:
    if payload.data_dir:
        os.environ["DPEXP_DATA_DIR"] = payload.data_dir
    from dpexp.spec import resolve

    return resolve(payload.raw, payload.source, payload.overrides, payload.repeats)


def worker_name() -> str:
    """This worker as the user can find it: the Dask worker's address, else host and process id."""
    if "distributed" in sys.modules:
        try:
            from distributed import get_worker

            return get_worker().address
        except (ValueError, ImportError):
            pass
    import socket

    return f"{socket.gethostname()} (pid {os.getpid()})"


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


def run_experiment(exp: ResolvedExperiment, raw: dict[str, Any], out: Path, jobs: int = -1, seed: int | None = None,
                   resume: bool = True, repeats_override: int | None = None, progress: bool = True,
                   data_dir: str | None = None, cluster: Any = None) -> RunReport:
    """Execute (or resume) ``exp`` into ``out``. See module docstring for the guarantees.

    Steps: settle the root seed against a previous run in ``out`` (or report it complete), plan the chunks, start
    the executor (``dpexp.executors``: ``jobs``, or the Dask ``cluster``), write the starting manifest, compute the
    missing chunks, merge them into the results file, finish the manifest.
    """
    from dpexp.version import __version__
    from dpexp.executors import make_executor

    start = time.time()
    out.mkdir(parents=True, exist_ok=True)
    fingerprint = manifest.config_fingerprint(raw, exp.overrides, repeats_override)
    old = manifest.read(out)
    if resume and old is not None:
        _check_schema(out, old)
        root_seed = _resumed_seed(out, old, fingerprint, seed)
        done = _already_complete(out, old, exp, start)
        if done is not None:
            return done
    else:
        _start_afresh(out, resume)
        root_seed = seed if seed is not None else (exp.spec.seed if exp.spec.seed is not None else new_root_seed())
    parts = out / PARTS
    parts.mkdir(exist_ok=True)
    chunks = plan_chunks(exp)
    done_files = _verified_part_names(parts)
    todo = [c for c in chunks if c.file_name not in done_files]
    # local worker processes read the driver's data directory; a cluster's workers read their own
    local_data = None if cluster is not None else (data_dir or os.environ.get("DPEXP_DATA_DIR"))
    payload = Payload(raw, exp.source, list(exp.overrides), repeats_override, root_seed, fingerprint, local_data,
                      __version__, plan_digest(exp))
    executor = make_executor(jobs, cluster, len(todo))
    try:
        record = manifest.started(exp, raw, fingerprint, root_seed, jobs, repeats_override, len(chunks),
                                  started_at=(old or {}).get("started") if resume else None)
        record["executor"] = executor.describe
        manifest.write(out, record)
        _compute(exp, chunks, todo, parts, executor, payload, progress)
    finally:
        executor.close()
    results_path, n_rows, failures, spent = merge_parts(out, chunks)
    record = {**record, "privacy_summary": manifest.privacy_summary(exp, spent)}
    manifest.write(out, manifest.finished(record, results_path, n_rows, failures, time.time() - start))
    shutil.rmtree(parts, ignore_errors=True)  # merged; a later --resume of a complete run reuses results.csv
    return RunReport(out, results_path, exp.n_cells, len(failures), len(chunks) - len(todo), time.time() - start)


def _check_schema(out: Path, old: dict[str, Any]) -> None:
    """Refuse to resume into (or report complete) a run directory written with another results schema."""
    found = int(old.get("results_schema", 1))
    if found != SCHEMA_VERSION:
        raise UserError(f"{out} holds results of results schema {found} (this dpexp writes schema {SCHEMA_VERSION}, "
                        "with the guarantee columns); use --force to recompute or choose another --out")


def _resumed_seed(out: Path, old: dict[str, Any], fingerprint: str, seed: int | None) -> int:
    """The root seed of the run being resumed in ``out``; a different config, overrides or seed is an error."""
    if old.get("fingerprint") != fingerprint or (seed is not None and seed != old.get("root_seed")):
        raise UserError(f"{out} holds results of a different config, overrides or seed; "
                        "use --force to overwrite or choose another --out")
    return int(old["root_seed"])


def _already_complete(out: Path, old: dict[str, Any], exp: ResolvedExperiment, start: float) -> RunReport | None:
    """The report of a run that is complete in ``out`` (its results file still there), else None."""
    done_file = out / str(old.get("results_file", ""))
    if old.get("status", "").startswith("complete") and old.get("results_file") and done_file.exists():
        n_failed = int((old.get("failures") or {}).get("count", 0))
        return RunReport(out, done_file, int(old.get("cells", exp.n_cells)), n_failed, int(old.get("chunks", 0)),
                         time.time() - start, already_complete=True)
    return None


def _start_afresh(out: Path, resume: bool) -> None:
    """Before a new run in ``out``: refuse to resume parts without a manifest; with --force remove old results."""
    parts = out / PARTS
    if resume and _part_names(parts):
        raise UserError(f"{out} has partial results but no readable manifest.json, so they cannot be resumed "
                        "safely; use --force to discard them or choose another --out")
    if not resume:
        shutil.rmtree(parts, ignore_errors=True)
        for name in ("results.csv", "results.csv.gz", "failures.csv"):
            (out / name).unlink(missing_ok=True)


def _chunk_cells(exp: ResolvedExperiment, chunk: Chunk) -> int:
    return len(chunk.subsets) * exp.cells_per_subset_repeat(exp.datasets[chunk.dataset])


def _compute(exp: ResolvedExperiment, chunks: list[Chunk], todo: list[Chunk], parts: Path, executor: Any,
             payload: Payload, progress: bool) -> None:
    """Compute the missing chunks with ``executor`` and write each one's part here, atomically, as it arrives (the
    one place parts are written: workers only return rows); a progress bar over all cells with an ETA."""
    bar = None
    if progress:
        from tqdm import tqdm

        todo_idx = {c.index for c in todo}
        done_cells = sum(_chunk_cells(exp, c) for c in chunks if c.index not in todo_idx)
        bar = tqdm(total=exp.n_cells, initial=done_cells, unit="cell", desc=exp.spec.name, file=sys.stderr,
                   dynamic_ncols=True, mininterval=0.5)
    names = {c.index: c.file_name for c in todo}
    try:
        for done in executor.run(payload, todo, exp, sys.modules[__name__]):
            if isinstance(done, WorkerProblem):
                raise UserError(f"worker {done.worker}: {done.message}")
            if done.summary is not None:   # first, so a part on disk always has its summary beside it
                cache.write_atomic(parts / _summary_name(names[done.index]),
                                   json.dumps(_with_check(done.summary, done.data, done.gz)).encode())
            cache.write_atomic(parts / (names[done.index] + (GZ if done.gz else "")), done.data)
            if bar is not None:
                bar.update(done.cells)
    finally:
        if bar is not None:
            bar.close()


def _part_names(parts: Path) -> set[str]:
    """The chunk file names (``Chunk.file_name``) of the parts in ``parts``, plain (``.csv``) or compressed
    (``.csv.gz``, written by a run whose chunks are compressed where they are made)."""
    if not parts.is_dir():
        return set()
    names = set()
    for p in parts.iterdir():
        name = p.name
        if name.endswith(".csv" + GZ):
            name = name[: -len(GZ)]
        if name.endswith(".csv") and not name.startswith("."):
            names.add(name)
    return names


def _with_check(summary: dict[str, Any], data: bytes, gz: bool) -> dict[str, Any]:
    """A part's summary with what resume checks the part against (``_verified_part_names``): its length, SHA-256
    and, for a plain part, its number of rows (a compressed part's ``lines`` are already there)."""
    out = {**summary, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    if not gz:
        out["lines"] = data.count(b"\n")
    return out


def _part_problem(parts: Path, name: str) -> str:
    """'' when the part ``name`` matches the length, hash and row count recorded beside it, else what is wrong."""
    side = parts / _summary_name(name)
    try:
        rec = json.loads(side.read_bytes())
    except (OSError, ValueError):
        return "no readable record of its rows beside it"
    if not isinstance(rec, dict) or "sha256" not in rec or "bytes" not in rec:
        return "no recorded hash (written by an older dpexp)"
    path, gz = _part_file(parts, name)
    data = path.read_bytes()
    if len(data) != rec["bytes"]:
        return f"{len(data)} bytes where {rec['bytes']} were written"
    if hashlib.sha256(data).hexdigest() != rec["sha256"]:
        return "its SHA-256 differs from the one recorded"
    lines = data.count(b"\n") if not gz else None
    if lines is not None and "lines" in rec and lines != rec["lines"]:
        return f"{lines} rows where {rec['lines']} were written"
    return ""


def _verified_part_names(parts: Path) -> set[str]:
    """The parts a resumed run keeps (``_part_names``), each checked against its record (``_part_problem``); a bad
    part (truncated, altered, or without a record) is removed with its record, said in one line on stderr, and so
    computed again."""
    good = set()
    for name in sorted(_part_names(parts)):
        problem = _part_problem(parts, name)
        if not problem:
            good.add(name)
            continue
        print(f"warning: {parts / name}: {problem}; computing that chunk again", file=sys.stderr, flush=True)
        for f in (parts / name, parts / (name + GZ), parts / _summary_name(name)):
            f.unlink(missing_ok=True)
    return good


def _summary_name(part: str) -> str:
    """The file beside a part that holds its rows' summary (``ChunkDone.summary``): ``0000007.csv`` → ``0000007.sum``."""
    return part[: -len(".csv")] + ".sum"


def _summarise(text: str, spent: dict[tuple[str, ...], int], failures: dict[tuple[str, ...], str]) -> None:
    """Count the rows of one part's CSV ``text`` per ``SUMMARY_FIELDS`` into ``spent`` and note its failed cells
    (first error per cell) in ``failures``, in row order: what parsing every row with ``csv.reader`` gives, with
    each cell's shared prefix parsed once.  A line whose last four fields (metric, value, seed_key, error) are
    plain — no quote, an empty error — is cut at its last four commas and its prefix looked up; any other line, and
    every line of a part with a quoted line break, is parsed whole."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if any(line.count('"') % 2 for line in lines):   # a quoted field spans lines: the csv module's way
        for row in csv.reader(io.StringIO(text)):
            _count(row, spent, failures)
        return
    key_of: dict[str, tuple[str, ...]] = {}
    for line in lines:
        cut = line.rsplit(",", 4)
        if len(cut) == 5 and not cut[4] and '"' not in line[len(cut[0]):]:
            key = key_of.get(cut[0])
            if key is None:
                fields = next(csv.reader([cut[0]]))
                key = key_of[cut[0]] = tuple(fields[i] for i in SUMMARY_INDEX)
            spent[key] = spent.get(key, 0) + 1
        else:
            _count(next(csv.reader([line])), spent, failures)


def _count(row: list[str], spent: dict[tuple[str, ...], int], failures: dict[tuple[str, ...], str]) -> None:
    if not row:
        return
    key = tuple(row[i] for i in SUMMARY_INDEX)
    spent[key] = spent.get(key, 0) + 1
    if row[-1]:  # a non-empty error column
        failures.setdefault(cell_of(row), row[-1])


def merge_parts(out: Path, chunks: list[Chunk]
                ) -> tuple[Path, int, list[dict[str, str]], dict[tuple[str, ...], int]]:
    """Stream chunk files in canonical order into results.csv (or .csv.gz when large); collect failed cells and the
    distinct guarantees of the rows (``SUMMARY_FIELDS`` -> number of rows) for the manifest's privacy summary."""
    parts = out / PARTS
    files = [_part_file(parts, c.file_name) for c in chunks]
    sizes = [_text_size(path, gz) for path, gz in files]
    n_rows = 0
    failures: dict[tuple[str, ...], str] = {}
    spent: dict[tuple[str, ...], int] = {}
    big = sum(sizes) > GZIP_BYTES
    path = out / ("results.csv.gz" if big else "results.csv")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    # .gz: the header and every part as one gzip member each (``gzip_member``: level 1, mtime 0; a GDSC figure, ~4 GB
    # of CSV, compresses 4x faster than at 9 and only ~20 % larger), the parts compressed by the workers copied as
    # they are; every gzip reader reads the members as one text.  Plain: the parts' text.
    raw_fh = open(tmp, "wb")
    try:
        header = (",".join(COLUMNS) + "\n").encode()
        raw_fh.write(gzip_member(header) if big else header)
        for c, (part, gz) in zip(chunks, files):
            data = part.read_bytes()
            side = parts / _summary_name(c.file_name)
            summary = json.loads(side.read_bytes()) if side.exists() else None
            if gz and big and summary is not None and "lines" in summary:   # copied as it is, never decompressed
                raw_fh.write(data)
                n_rows += int(summary["lines"])
                _add_summary(summary, spent, failures)
                continue
            text = gzip.decompress(data) if gz else data
            raw_fh.write((data if gz else gzip_member(text)) if big else text)
            n_rows += text.count(b"\n")
            if summary is not None:   # counted by the worker (``_records_summary``)
                _add_summary(summary, spent, failures)
            else:                     # a part without one (written by an older dpexp): parse its rows
                _summarise(text.decode("utf-8"), spent, failures)
        raw_fh.flush()
        os.fsync(raw_fh.fileno())
        raw_fh.close()
        os.replace(tmp, path)
    finally:  # interrupted mid-merge: no half-written file left behind (the parts are still there to resume)
        try:
            raw_fh.close()
        except OSError:   # its buffer cannot be written either (disk full): the error on its way out says so
            pass
        tmp.unlink(missing_ok=True)
    (out / ("results.csv" if big else "results.csv.gz")).unlink(missing_ok=True)
    fail_list = [dict(zip(CELL_COLUMNS, k), error=v) for k, v in failures.items()]
    if fail_list:
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=FAILURE_COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(fail_list)
        cache.write_atomic(out / "failures.csv", buf.getvalue().encode())
    else:
        (out / "failures.csv").unlink(missing_ok=True)
    return path, n_rows, fail_list, spent


def _part_file(parts: Path, name: str) -> tuple[Path, bool]:
    """A chunk's part: (path, compressed?); the compressed form if both exist (a rewrite interrupted between them:
    the same rows)."""
    gz = parts / (name + GZ)
    return (gz, True) if gz.exists() else (parts / name, False)


def _text_size(path: Path, gz: bool) -> int:
    """The length of a part's text: its size, or for a compressed part its gzip trailer's ISIZE (the text's length
    modulo 2**32; a chunk's rows are far shorter)."""
    if not gz:
        return path.stat().st_size
    with open(path, "rb") as fh:
        fh.seek(-4, os.SEEK_END)
        return int.from_bytes(fh.read(4), "little")


def sample_cells(exp: ResolvedExperiment, k: int = 5) -> list[dict[str, Any]]:
    """A few cells in canonical order, for ``--dry-run``."""
    out = []
    for dv in exp.datasets:
        for r in range(exp.spec.repeats):
            for subset in dv.subsets:
                for n_test, n_public, n_private in exp.size_grid:
                    for av in exp.algorithms_for(dv):
                        for e in exp.epsilons:
                            for d in exp.deltas:
                                out.append({"dataset": f"{dv.name}[{dv.params_str}]", "subset": subset, "repeat": r,
                                            "algorithm": av.label, "epsilon": e, "delta": d,
                                            "n_private": "all" if n_private < 0 else n_private,
                                            "n_public": n_public, "n_test": n_test})
                                if len(out) >= k:
                                    return out
    return out
