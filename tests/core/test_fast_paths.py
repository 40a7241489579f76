"""The fast paths of a run (ranks without scipy's per-call overhead, CSV formatting once per cell) give exactly
what the plain computations give."""

from __future__ import annotations

import csv
import io
import math

import numpy as np
import pytest
from scipy import stats

from dpexp.metrics.accuracy import average_ranks, spearman_rows
from dpexp.results import COLUMNS, Row
from dpexp import results
from dpexp.results import rows_to_csv as _rows_to_csv


def test_average_ranks_known_values_and_ties():
    A = np.array([[3.0, 1.0, 2.0, 2.0, 5.0], [1.0, 1.0, 1.0, 1.0, 1.0]])
    assert average_ranks(A).tolist() == [[4.0, 1.0, 2.5, 2.5, 5.0], [3.0, 3.0, 3.0, 3.0, 3.0]]
    assert average_ranks(np.array([[0.5, -1.0, 7.0]])).tolist() == [[2.0, 1.0, 3.0]]


@pytest.mark.parametrize("seed", range(5))
def test_average_ranks_equal_scipy_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    for _ in range(40):
        m, n = int(rng.integers(1, 4)), int(rng.integers(1, 40))
        A = rng.integers(0, int(rng.integers(1, 8)), size=(m, n)).astype(float) if rng.random() < 0.5 \
            else rng.normal(size=(m, n))
        assert np.array_equal(average_ranks(A), stats.rankdata(A, axis=1))


def test_sorted_ranks_edge_shapes_views_and_kinds():
    # the flat take/put of sorted_ranks: empty rows or columns, a strided view, integers, the default sort kind
    from dpexp.metrics.ranks import sorted_ranks

    rng = np.random.default_rng(7)
    for A in (np.empty((3, 0)), np.empty((0, 4)), rng.normal(size=(4, 9))[:, ::2], rng.integers(0, 3, (5, 6)),
              rng.normal(size=(6, 1))):
        for kind in ("stable", None):
            order, starts, ranks = sorted_ranks(A, kind=kind)
            assert ranks.shape == A.shape and ranks.dtype == float
            if A.size:
                assert np.array_equal(ranks, stats.rankdata(A, axis=1))
                assert np.array_equal(np.take_along_axis(A, order, axis=1), np.sort(A, axis=1))
            assert (starts is None) == all(len(np.unique(r)) == len(r) for r in A)


def test_spearman_rows_against_scipy_with_ties_constants_and_nan():
    rng = np.random.default_rng(3)
    y = rng.normal(size=30)
    P = np.stack([y + rng.normal(size=30), np.round(y), np.full(30, 2.0), y])
    P[3, 4] = np.nan
    got = spearman_rows(P, y)
    assert got[0] == pytest.approx(stats.spearmanr(P[0], y)[0], abs=1e-12)
    assert got[1] == pytest.approx(stats.spearmanr(P[1], y)[0], abs=1e-12)
    assert got[2] == 0.0 and got[3] == 0.0          # constant row, non-finite row
    y2 = y.copy()                                    # another array with other values is not served from the memo
    y2[:] = -y
    assert spearman_rows(P[:1], y2)[0] == pytest.approx(-got[0], abs=1e-12)


def _plain(rows):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for r in rows:
        w.writerow(["" if isinstance(x, float) and math.isnan(x) else repr(x) if isinstance(x, float) else str(x)
                    for x in r])
    return buf.getvalue().encode()


def _row(eps, metric, value, err="", n_req=10):
    return Row("e", "gdsc", "d=10,missing=after_split", "Drug, \"1\"", "rplr", "lab", "", eps, 0.0, "pure", eps,
               0.0, float("nan"), "note, \"quoted\"", 5, 10, 100, 10, 0, 1, n_req, 10, 100, metric, value, "abc", err)


def test_rows_to_csv_formats_like_the_plain_writer():
    one, one_f = 1, 1.0                  # equal values of other types must not share a formatted prefix
    cell = [_row(2.0, "spearman", 0.25), _row(2.0, "wpc", float("nan"), "boom, \"x\"")]
    rows = cell + [_row(one, "mae", 1e-300), _row(one_f, "mae", -0.0, n_req="all"), _row(one_f, "mae", 3.0)]
    got = _rows_to_csv(rows, header=True)
    assert got == (",".join(COLUMNS) + "\n").encode() + _plain(rows)
    assert b",1,0.0," in got and b",1.0,0.0," in got


def test_rows_to_csv_line_breaks_and_quotes_in_a_cells_fields():
    # an error message with a line break is quoted over two lines: the per-cell prefix must still start every row
    cell = [_row(2.0, "spearman", 0.5, "line 1\nline 2, \"q\""), _row(2.0, "wpc", 1.5, "a\r\nb"),
            _row(2.0, "x", 2.5)]
    rows = cell + [_row(3.0, "spearman", float("nan"), ""), _row(3.0, "wpc", 0.1, "\n")]
    got = _rows_to_csv(rows, header=False)
    assert got == _plain(rows)
    assert [r[-3:] for r in csv.reader(io.StringIO(got.decode()))][0] == ["0.5", "abc", "line 1\nline 2, \"q\""]


def _cells(seed: int):
    from dpexp.types import Output, Split

    rng = np.random.default_rng(seed)
    outs, splits = [], []
    for k in range(60):
        n = int(rng.choice([1, 2, 3, 40, 41, 97]))
        t = int(rng.choice([1, 1, 1, 3]))
        y = rng.normal(size=n) if k % 7 else np.round(rng.normal(size=n))          # some tied responses
        P = rng.normal(size=(t, n)) if k % 5 else np.round(rng.normal(size=(t, n)))  # some tied predictions
        if k % 11 == 3:
            P[0, 0] = np.nan                                                       # a failed trial
        if k % 13 == 4:
            P[:] = 1.0                                                             # constant predictions
        meta = {} if k % 3 else {"y_sd": float(rng.uniform(0.5, 2))}
        z = np.zeros((0, 1))
        splits.append(Split(z, np.zeros(0), z, np.zeros(0), np.zeros((n, 1)), y, meta))
        outs.append(Output(predictions=P))
    return outs, splits


@pytest.mark.parametrize("name", ["spearman", "wpc"])
def test_batched_metrics_equal_one_cell_at_a_time_to_the_bit(name, many_equals_one):
    for seed in range(3):
        many_equals_one(name, *_cells(seed))


def test_lazy_cell_stream_draws_what_the_named_stream_draws():
    from dpexp.rng import key_hex, noise_names, noise_stream, stream_key
    from dpexp.runner import cell_ledger

    names = ("gdsc[d=10]", "Drug_1", 3, "rplr", "sigma=dp", 2.0, 0.0)
    ledger = cell_ledger("seeded", 7, names)
    assert "_rng" not in vars(ledger.noise)                # nothing built before the first draw
    got = [ledger.noise.laplace(0.0, 1.0, size=4), ledger.noise.uniform(size=2)]
    gen = ledger.noise.generator
    assert gen is ledger.noise.generator is vars(ledger.noise)["_rng"]   # built once, then kept
    ref = noise_stream(7, *names)
    assert np.array_equal(got[0], ref.laplace(0.0, 1.0, size=4)) and np.array_equal(got[1], ref.uniform(size=2))
    assert stream_key(*noise_names(*names))[1] == key_hex(*noise_names(*names))
    assert cell_ledger("secure", 7, names).noise.secure


def test_lazy_cell_stream_from_a_precomputed_state_draws_the_named_stream():
    """The chunk's form (``chunk_records``): the seed state precomputed with ``seed_states``; built on the first
    read of the generator, whichever method reads it first, then the same object."""
    from dpexp.rng import noise_names, noise_stream, seed_states, stream_key
    from dpexp.runner import _LazySeededNoise

    names = [("gdsc[d=10]", f"Drug_{i}", 3, "rplr", "sigma=dp", 2.0, 0.0) for i in range(3)]
    keys = [stream_key(*noise_names(*n))[0] for n in names]
    noises = [_LazySeededNoise(20180602, k, st) for k, st in zip(keys, seed_states(20180602, keys))]
    assert all("_rng" not in vars(n) for n in noises)
    first = noises[0].generator.standard_normal(3)
    got = [noises[1].laplace(0.0, 1.0, 5), noises[2].gamma(3.0, 1.0, 2)]
    assert noises[0].generator is noises[0].generator
    refs = [noise_stream(20180602, *n) for n in names]
    assert np.array_equal(first, refs[0].standard_normal(3))
    assert np.array_equal(got[0], refs[1].laplace(0.0, 1.0, 5)) and np.array_equal(got[1], refs[2].gamma(3.0, 1.0, 2))


@pytest.mark.parametrize("root", [0, 1, 7, 2**32 - 1, 2**32, 20180602, 2**63 - 1, 2**130 + 5])
def test_seed_states_equal_numpy_seed_sequence(root):
    """``seed_states`` restates numpy's SeedSequence on arrays: for every key (random ones and the extremes) the
    PCG64 seed equals ``SeedSequence(root, spawn_key=key).generate_state(4, uint64)``, and the generator built from
    it draws what ``stream_from_key`` draws."""
    from dpexp.rng import seed_states, stable_key, stream_from_key, stream_from_state

    keys = [stable_key("cell", i, root) for i in range(200)] + [(0, 0, 0, 0), (2**32 - 1,) * 4]
    states = seed_states(root, keys)
    assert states.shape == (len(keys), 4) and states.dtype == np.uint64
    for key, st in zip(keys, states):
        assert np.array_equal(st, np.random.SeedSequence(root, spawn_key=key).generate_state(4, np.uint64))
    for i in (0, 57, len(keys) - 1):
        a, b = stream_from_state(states[i]), stream_from_key(root, keys[i])
        assert np.array_equal(a.laplace(size=7), b.laplace(size=7)) and a.integers(1 << 62) == b.integers(1 << 62)
    with pytest.raises(ValueError):
        seed_states(-1, keys[:1])


def test_chunk_streams_are_the_cells_named_streams(tmp_path):
    """The runner's precomputed seeds (``_cell_streams``) give each cell the stream of its names, for every variant
    and budget of a chunk; secure mode makes none."""
    from dpexp import runner, spec
    from dpexp.rng import noise_stream

    cfg = _small_config(tmp_path, repeats=2, n_private=[20], privacy={"epsilon": [0.5, 2.0]},
                        algorithms=[{"name": "lr"}, {"name": "plr"}])
    exp = spec.load(cfg, [], None)
    chunk = runner.plan_chunks(exp)[1]
    dv = exp.datasets[chunk.dataset]
    ds_key = f"{dv.name}[{dv.params_str}]"
    eps_delta = [(e, d) for e in exp.epsilons for d in exp.deltas]
    streams = runner._cell_streams(exp, dv, ds_key, chunk, 11, eps_delta)
    assert len(streams) == 1 + 2                      # lr once (non-private), plr per epsilon
    for av in exp.algorithms_for(dv):
        for (e, d) in (eps_delta if av.instance.private else [(None, None)]):
            keys, states = streams[(id(av), e, d)]
            for subset, state in zip(chunk.subsets, states):
                got = runner.stream_from_state(state).laplace(size=3)
                want = noise_stream(11, ds_key, subset, chunk.repeat, av.name, av.params_str, e, d).laplace(size=3)
                assert np.array_equal(got, want)
    exp_secure = spec.load(cfg, ["noise=secure"], None)
    assert all(st is None for _, st in runner._cell_streams(exp_secure, dv, ds_key, chunk, 11, eps_delta).values())


def test_shared_split_stream_is_rewound_for_every_split():
    from types import SimpleNamespace

    from dpexp.rng import data_stream
    from dpexp.runner import Chunk, _SharedStream

    dv = SimpleNamespace(instance=SimpleNamespace(shared_split=True))
    shared = _SharedStream(dv, "gdsc[d=10]", Chunk(0, 0, 4, ("a", "b")), 11)
    first = shared.fresh().permutation(50)
    again = shared.fresh().permutation(50)
    assert np.array_equal(first, again)
    assert np.array_equal(first, data_stream(11, "gdsc[d=10]", "*", 4).permutation(50))
    assert _SharedStream(SimpleNamespace(instance=SimpleNamespace(shared_split=False)), "x", Chunk(0, 0, 0, ("a",)),
                         1).rng is None


def test_rows_to_csv_line_break_in_a_shared_field_is_quoted():
    # a label with a line break (possible in a config) is quoted as csv.writer quotes it, not cut into two rows
    rows = [_row(2.0, "spearman", 0.5)._replace(label="two\nlines"), _row(2.0, "wpc", 1.5)._replace(label="a\rb")]
    rows[1] = rows[1]._replace(label=rows[0].label)
    got = _rows_to_csv(rows, header=False)
    assert got == _plain(rows)
    assert [r[5] for r in csv.reader(io.StringIO(got.decode()))] == ["two\nlines", "two\nlines"]


def _summary_by_reader(text):
    from dpexp.results import SUMMARY_INDEX as _SUMMARY_INDEX
    from dpexp.results import cell_of

    spent, failures = {}, {}
    for line in csv.reader(io.StringIO(text)):
        if line:
            key = tuple(line[i] for i in _SUMMARY_INDEX)
            spent[key] = spent.get(key, 0) + 1
            if line[-1]:
                failures.setdefault(cell_of(line), line[-1])
    return spent, failures


@pytest.mark.parametrize("errors", [("", ""), ("boom, \"x\"", ""), ("line 1\nline 2", "")])
def test_merge_summary_equals_parsing_every_row(errors):
    from dpexp.runner import _summarise

    rows = [_row(2.0, "spearman", 0.25), _row(2.0, "wpc", 0.5, errors[0]), _row(3.0, "mae", 1.0, errors[1]),
            _row(2.0, "spearman", 0.75)._replace(privacy_note="plain"), _row(1.0, "wpc", float("nan"), "e")]
    text = _rows_to_csv(rows, header=False).decode()
    spent, failures = {}, {}
    _summarise(text, spent, failures)
    want = _summary_by_reader(text)
    assert (spent, failures) == want and list(spent) == list(want[0]) and list(failures) == list(want[1])
    assert sum(spent.values()) == len(rows)


@pytest.mark.parametrize("errors", [("", ""), ("boom, \"x\"", ""), ("line 1\nline 2", "e2")])
def test_worker_summary_equals_parsing_the_part(errors):
    """The counts a worker sends with a chunk (``_records_summary``) are what the driver's parse of the part's CSV
    finds: the same keys, counts, failed cells and first errors, in the same order (the manifest lists them so)."""
    import json

    from dpexp.results import add_summary as _add_summary, records_summary as _records_summary
    from dpexp.results import records_to_csv as _records_to_csv

    a, b = _row(2.0, "spearman", 0.25), _row(3.0, "mae", 1.0, errors[1])
    c = _row(2.0, "spearman", 0.75)._replace(privacy_note="plain, \"quoted\"")
    records = [(a[:23], [("spearman", 0.25, ""), ("wpc", 0.5, errors[0])], "k1"),
               (b[:23], [("mae", 1.0, errors[1]), ("wpc", float("nan"), "later error")], "k2"),
               (c[:23], [("spearman", 0.75, "")], "k3"),
               (a[:23], [("n", 1.0, "")], "k1"),
               (_row(2, "spearman", 0.1)[:23], [("spearman", 0.1, "")], "k4")]   # ε = 2 (int) is written "2"
    text = _records_to_csv(records).decode()
    want = _summary_by_reader(text)
    spent, failures = {}, {}
    _add_summary(json.loads(json.dumps(_records_summary(records))), spent, failures)   # through JSON, as on disk
    assert (spent, failures) == want and list(spent) == list(want[0]) and list(failures) == list(want[1])
    assert sum(spent.values()) == 7 and len(failures) == (1 if errors[0] else 0) + 1 and len(spent) == 4


def test_chunk_runs_with_fewer_collections_and_restores_the_threshold(monkeypatch):
    """``compute_chunk`` raises the young-generation threshold of the cyclic collector while it runs and puts the
    caller's back afterwards, also when the chunk raises."""
    import gc

    from dpexp import runner

    seen = []

    def fake(exp, chunk, seed):
        seen.append(gc.get_threshold()[0])
        raise RuntimeError("boom")

    monkeypatch.setattr(runner, "chunk_records", fake)
    before = gc.get_threshold()
    with pytest.raises(RuntimeError):
        runner.compute_chunk(None, None, 0)
    assert seen == [max(500_000, before[0])] and gc.get_threshold() == before


def test_chunk_is_written_and_freed_with_fewer_collections(monkeypatch, tmp_path):
    """The chunk's CSV and summary are made while the threshold is raised too, and the records are freed before it
    is put back (no pass over a chunk's objects after it); the chunk's bytes are those of its records."""
    import gc
    import weakref

    from dpexp import runner, spec

    exp = spec.load(_small_config(tmp_path, repeats=1, n_private=[0, 20], privacy={"epsilon": [1.0]},
                                  algorithms=[{"name": "lr"}, {"name": "plr"}]), [], None)
    chunk = runner.plan_chunks(exp)[0]
    want = results.records_to_csv(runner.chunk_records(exp, chunk, 11))
    seen, held = [], []

    class Records(list):   # a list that can be watched (weak reference) while the chunk is written
        pass

    real_records, real_csv = runner.chunk_records, runner._records_text

    def records(*a):
        recs = Records(real_records(*a))
        held.append(weakref.ref(recs))
        return recs

    def to_csv(recs, header=False):
        seen.append(gc.get_threshold()[0])
        return real_csv(recs, header)

    def restored(*a):
        if held:   # putting the threshold back (not raising it): the records are gone
            seen.append(held[0]() is None)
        return real_set(*a)

    real_set = gc.set_threshold
    monkeypatch.setattr(runner, "chunk_records", records)
    monkeypatch.setattr(runner, "_records_text", to_csv)
    before = gc.get_threshold()
    monkeypatch.setattr(runner.gc, "set_threshold", restored)
    done = runner.compute_chunk(exp, chunk, 11)
    monkeypatch.undo()
    assert done.data == want and seen == [max(500_000, before[0]), True] and gc.get_threshold() == before


def test_fewer_collections_nests_across_threads():
    """Chunks in threads of one process share the raised threshold; the caller's comes back when the last ends,
    whatever the order they end in."""
    import gc

    from dpexp.runner import _FewerCollections

    few = _FewerCollections(gen0=12_345)
    before = gc.get_threshold()
    a, b = few(), few()
    a.__enter__()
    b.__enter__()
    assert gc.get_threshold()[0] == max(12_345, before[0])
    a.__exit__(None, None, None)                 # the first to start ends first
    assert gc.get_threshold()[0] == max(12_345, before[0])
    b.__exit__(None, None, None)
    assert gc.get_threshold() == before


def test_records_to_csv_edge_values_equal_the_plain_writer():
    """Record by record, ``_records_to_csv`` writes what ``csv.writer`` writes for each row: float edge values
    (repr), NaN as an empty field, ints, bools and other types through ``str``, quotes, line breaks and non-ASCII
    text in any field (a line break in a prefix, key, metric name or error leaves the joined fast path), records
    without rows; ``_records_text`` counts the line breaks of what it wrote."""
    from dpexp.results import records_text as _records_text, records_to_csv as _records_to_csv

    floats = [float("nan"), float("inf"), -float("inf"), -0.0, 0.0, 1e-300, 5e-324, -5e-324, 1e16, 1e15, 123456789.5,
              0.1 + 0.2, 1.7976931348623157e308, 2.0 ** -1074, 1e-5, 0.0001, -1.5, 400.0]
    head = _row(2.0, "m", 0.0)[:23]
    heads = [head, head[:5] + ("label σ — ε",) + head[6:], head[:3] + ("two\nlines",) + head[4:],
             head[:7] + (1, True) + head[9:], head[:7] + (-0.0, float("nan")) + head[9:]]
    values = [[("m", v, "") for v in floats],
              [("a,b", 0.5, ""), ("q\"", 1.5, ""), ("ε", -0.0, "")],
              [("m", 1.0, "line 1\nline 2"), ("m2", 2.0, "")],
              [("m", 1, ""), ("m", True, ""), ("m", "text, \"q\"", ""), ("m", np.float32(0.1), ""), ("m", 3.0, "\r")],
              [],
              [("m", float("nan"), "boom, \"x\""), ("m", 0.25, "")],
              [("two\nlines", 0.5, ""), ("m\r", 1.5, "")]]
    records = [(h, v, k) for h in heads for v in values for k in ("abc", "", "k\ney")]
    rows = [Row(*h, m, v, k, e) for h, vs, k in records for m, v, e in vs]
    want = (",".join(COLUMNS) + "\n").encode() + _plain(rows)
    assert _records_to_csv(records, header=True) == want and _records_text(records, True) == (want, want.count(b"\n"))
    for r in records:
        want = _plain([Row(*r[0], m, v, r[2], e) for m, v, e in r[1]])
        assert _records_to_csv([r]) == want and _records_text([r]) == (want, want.count(b"\n"))


def test_metric_table_equals_the_per_cell_values():
    # the runner's table of a group of cells (each metric's many, extras) against _metric_values cell by cell:
    # failed cells, a metric whose many declines (NotBatchable: scored cell by cell), a cell a metric fails on, odd
    # extras; a many that raises anything else fails that metric in every cell, with its message
    from types import SimpleNamespace

    from dpexp.errors import NotBatchable

    from dpexp.metrics.accuracy import MAE, Spearman
    from dpexp.runner import _metric_table, _metric_values
    from dpexp.types import Output, Split

    class Picky(MAE):
        def many(self, outputs, splits):
            raise NotBatchable("no batch")

        def __call__(self, output, split):
            if output.predictions.shape[1] == 3:
                raise ValueError("three")
            return super().__call__(output, split)

    rng = np.random.default_rng(4)
    outs, splits = [], []
    for k in range(9):
        n = 3 if k == 4 else 6
        y = rng.normal(size=n)
        splits.append(Split(np.zeros((2, 1)), y[:2], np.zeros((1, 1)), y[:1], np.zeros((n, 1)), y, {}))
        extras = [{}, {"b": 2, "a": np.float64(0.5)}, {"z": "x", "y": 1.0}][k % 3]
        outs.append(RuntimeError("cell failed") if k in (2, 7) else
                    Output(predictions=rng.normal(size=(1, n)), extras=extras))
    for metrics in ([("spearman", Spearman()), ("mae", Picky())], []):
        exp = SimpleNamespace(metrics=metrics)
        for cells in (range(9), [0, 1, 3]):           # with and without failed cells
            o, s = [outs[i] for i in cells], [splits[i] for i in cells]
            want = [_metric_values(exp, a, b) for a, b in zip(o, s)]
            got = _metric_table(exp, o, s)
            assert [[(m, repr(v), e) for m, v, e in r] for r in got] == [[(m, repr(v), e) for m, v, e in r]
                                                                         for r in want]
    full = _metric_table(SimpleNamespace(metrics=[("spearman", Spearman()), ("mae", Picky())]), outs, splits)
    assert [m for m, _, _ in full[1]] == ["spearman", "mae", "a", "b"]           # extras sorted, after the metrics
    assert full[2][0][2] == "RuntimeError: cell failed" and len(full[2]) == 2    # a failed cell: its error
    assert full[4][1][2] == "metric mae: ValueError: three"                     # a metric failing on one cell
    assert full[5][2][0] == "y" and full[5][3][2].startswith("extra z: ValueError")

    class Broken(MAE):
        def many(self, outputs, splits):
            raise RuntimeError("a bug\nin many")

    broken = _metric_table(SimpleNamespace(metrics=[("spearman", Spearman()), ("mae", Broken())]), outs, splits)
    assert repr(broken[0][0]) == repr(full[0][0]) and repr(broken[2]) == repr(full[2])   # other metric, failed cells
    assert {r[1][2] for k, r in enumerate(broken) if k not in (2, 7)} == {"metric mae: RuntimeError: a bug in many"}
    assert all(math.isnan(r[1][1]) for r in broken)


def test_head_text_equals_the_fields_written_one_by_one():
    """``_head_text`` (the plain-int path too) is each field's ``_csv_field(_fmt(x))`` followed by a comma."""
    from dpexp.results import csv_field as _csv_field, fmt as _fmt, head_text as _head_text

    for fields in [(0, -1, 7, 2**70), (1, True), (np.int64(3), 4), (1.0, 0), ("all", 5), ("a,\"b\"", "σ — ε", -0.0,
                   float("nan"), None), ()]:
        assert _head_text(fields) == "".join(_csv_field(_fmt(x)) + "," for x in fields).encode()
    assert _head_text((1, True)) == b"1,True," and _head_text((np.int64(3), 4)) == b"3,4,"


@pytest.mark.parametrize("over", [[], ["noise=secure"]])
def test_chunk_records_head_texts_equal_the_formatted_heads(tmp_path, over):
    """The head text ``chunk_records`` puts on each record (made from texts shared by many cells) is the text of
    its head field by field, and its summary fields are the head's; so the chunk's CSV is what the plain writer
    makes of its rows, and its summary what the records' heads give — with private and non-private variants, several
    (ε, δ), failing cells and secure noise mode."""
    import operator

    from dpexp import runner, spec

    cfg = _small_config(tmp_path, repeats=1, n_private=[0, 20], privacy={"epsilon": [0.5, 2.0], "delta": [0.0, 1.0e-5]},
                        algorithms=[{"name": "lr"}, {"name": "plr"},
                                    {"name": "null_model", "label": 'odd, "label"', "params": {"fail": True}}])
    exp = spec.load(cfg, over, None)
    for chunk in runner.plan_chunks(exp):
        recs = runner.chunk_records(exp, chunk, 11)
        assert recs and all(len(r) == 5 for r in recs)
        for head, _, _, text, group in recs:
            assert text == "".join(results.csv_field(results.fmt(x)) + "," for x in head).encode()
            assert all(map(operator.is_, group, results.summary_fields(head)))
        assert results.records_summary(recs) == results.records_summary([r[:3] for r in recs])
        rows = [Row(*r[0], m, v, r[2], e) for r in recs for m, v, e in r[1]]
        assert results.records_to_csv(recs) == results.records_to_csv([r[:3] for r in recs]) == _plain(rows)
        if not over:   # seeded: the same rows again (secure mode draws other noise)
            assert _plain(runner.run_chunk(exp, chunk, 11)) == _plain(rows)
        assert any(r.error for r in rows) and {r.delta for r in rows} == {0.0, 1e-5}


def test_chunk_records_scored_group_by_group_equal_scored_at_once(tmp_path, monkeypatch):
    """Scoring whenever the predictions held pass ``PENDING_BYTES`` (here after every group of cells: several
    ``score`` calls, each over the groups pending) gives the records of scoring the chunk at once: the same heads,
    values, keys, texts and summary tuples, in the same order — with a non-private variant under several targets
    (a cell's records interleaved) and failing cells."""
    from dpexp import runner, spec

    cfg = _small_config(tmp_path, repeats=1, n_private=[0, 20], privacy={"epsilon": [0.5, 2.0], "delta": [0.0, 1.0e-5]},
                        algorithms=[{"name": "lr"}, {"name": "plr"},
                                    {"name": "null_model", "params": {"fail": True}}])
    exp = spec.load(cfg, [], None)
    chunk = runner.plan_chunks(exp)[0]
    once = runner.chunk_records(exp, chunk, 11)
    calls = []
    real = runner._metric_table
    monkeypatch.setattr(runner, "_metric_table", lambda *a: calls.append(len(a[1])) or real(*a))
    monkeypatch.setattr(runner, "PENDING_BYTES", -1)
    each = runner.chunk_records(exp, chunk, 11)
    assert len([n for n in calls if n]) > 2 and len(each) == len(once) == runner._chunk_cells(exp, chunk)
    assert results.records_to_csv(each) == results.records_to_csv(once)
    assert [(r[0], [(m, repr(v), e) for m, v, e in r[1]], r[2], r[3], r[4]) for r in each] == \
        [(r[0], [(m, repr(v), e) for m, v, e in r[1]], r[2], r[3], r[4]) for r in once]
    heads = [r[0] for r in once]
    lr = [h for h in heads if h[4] == "lr"]
    assert lr[:4] == [lr[0][:7] + (e, d) + lr[0][9:] for e in (0.5, 2.0) for d in (0.0, 1e-5)]   # interleaved


def test_state_seed_serves_pcg64_only():
    """A precomputed stream seed answers PCG64's request (4 uint64 words, the dtype given as ``np.uint64`` or any
    spelling of it) and refuses any other."""
    from dpexp.rng import _StateSeed, seed_states

    st = seed_states(3, [(1, 2, 3, 4)])[0]
    seed = _StateSeed(st)
    for dtype in (np.uint64, "uint64", np.dtype(np.uint64)):
        assert seed.generate_state(4, dtype) is st
    for n, dtype in ((4, np.uint32), (8, np.uint64), (4, "u4")):
        with pytest.raises(ValueError):
            seed.generate_state(n, dtype)


def test_output_keeps_float_matrices_and_converts_the_rest():
    """``Output`` keeps a (trials, n_test) float64 array as it is and converts anything else as before: a vector to
    one row, ints and other byte orders to native floats."""
    from dpexp.types import Output

    P = np.arange(6.0).reshape(2, 3)
    assert Output(P).predictions is P
    for given, shape in ((np.arange(3), (1, 3)), ([1.0, 2.0], (1, 2)), (P.astype(">f8"), (2, 3)),
                         (P.astype(np.float32), (2, 3)), (P[:, ::2], (2, 2))):
        got = Output(given).predictions
        assert got.dtype == np.float64 and got.dtype.isnative and got.shape == shape
        assert np.array_equal(got, np.atleast_2d(np.asarray(given, dtype=float)))


def _small_config(tmp_path, repeats: int, n_private: list, privacy: dict, algorithms: list):
    """A small honkela_synthetic (d = 3, the law's centres: the guarantees stand) experiment written as YAML into
    ``tmp_path``; returns its path."""
    import yaml

    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "s", "seed": 11, "repeats": repeats,
        "datasets": [{"name": "honkela_synthetic", "params": {"d": 3, "centre": "law"}}],
        "sizes": {"n_private": n_private, "n_public": 5, "n_test": 10},
        "privacy": privacy, "algorithms": algorithms, "metrics": ["mae"]}, sort_keys=False))
    return cfg


def test_finite_order_sorts_like_argsort_and_gives_up_on_near_ties():
    # the int64-key sort of finite rows: a valid order of every row (ties, -0 and 0, tiny and huge magnitudes,
    # negative values), None when two values differ only in the bits that carry the column index
    from dpexp.metrics.ranks import finite_order

    rng = np.random.default_rng(11)
    for t in range(300):
        m, n = int(rng.integers(1, 6)), int(rng.integers(2, 300))
        A = rng.normal(size=(m, n)) * 10.0 ** float(rng.integers(-300, 300))
        if t % 3 == 0:
            A = np.round(A * 2.0) / 2.0                  # many ties
        if t % 4 == 0:
            A[:, ::3], A[:, 1::5] = -0.0, 0.0            # -0 ties with 0
        order = finite_order(A)
        assert order is not None
        assert np.array_equal(np.sort(order, axis=1), np.broadcast_to(np.arange(n), (m, n)))
        assert np.array_equal(np.take_along_axis(A, order, axis=1), np.sort(A, axis=1))
    near = np.array([[1.0, np.nextafter(1.0, 2.0), 0.5, 3.0]])
    assert finite_order(near) is None
    assert finite_order(near[:, 1:]) is not None     # neighbours 1 ulp apart only if both are there
    assert finite_order(np.ones((2, 1))) is None and finite_order(np.ones((2, 3), dtype=np.float32)) is None


@pytest.mark.parametrize("m,n", [(60, 96), (45, 100), (200, 130)])
def test_ranks_and_codes_of_large_groups_equal_the_argsort_path(m, n, monkeypatch):
    # groups past FINITE_ORDER_SIZE take finite_order: ranks and codes equal to the bit those of the argsort path,
    # with ties, -0/0, equal rows, and a row of near-equal values (finite_order gives up: argsort)
    from dpexp.metrics import ranks as ranks_mod
    from dpexp.metrics.cells import ranks_and_codes

    assert m * n >= ranks_mod.FINITE_ORDER_SIZE
    rng = np.random.default_rng(m + n)
    A = rng.normal(size=(m, n))
    A[1] = np.round(A[1])
    A[2, ::2], A[2, 1::2] = 0.0, -0.0
    A[3] = A[0]
    near = A.copy()
    near[5, 1] = np.nextafter(near[5, 0], np.inf)
    assert ranks_mod.finite_order(A) is not None and ranks_mod.finite_order(near) is None
    for B in (A, near):
        got = ranks_and_codes(B)
        monkeypatch.setattr(ranks_mod, "FINITE_ORDER_SIZE", 10**12)   # the argsort path
        want = ranks_and_codes(B)
        monkeypatch.undo()
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
        assert got[1].dtype == want[1].dtype
        assert np.array_equal(got[0], stats.rankdata(B, axis=1))


def test_chunk_rows_name_parts_by_prefix_length_when_nested():
    """``ChunkRows.rows`` names a part by (subset, part, its prefix length) for a dataset of nested sizes — the same
    name at every size with that length — and by all three lengths otherwise; ``select`` keeps the scratch;
    ``kept`` computes once per key (bounded: the oldest goes); a context of its own names splits by position."""
    from dpexp.chunk import ChunkRows

    scratch: dict = {}
    a = ChunkRows(("d1", "d2"), (10, 5, 100), True, scratch)
    b = ChunkRows(("d1", "d2"), (10, 5, 200), True, scratch)
    assert a.rows("public", [0, 1]) == b.rows("public", [0, 1]) == (("d1", 1, 5), ("d2", 1, 5))
    assert a.rows("private", [1]) != b.rows("private", [1])
    flat = [ChunkRows(("d1",), sizes, False, scratch) for sizes in ((10, 5, 100), (10, 5, 200))]
    assert flat[0].rows("public", [0]) != flat[1].rows("public", [0])      # one size's splits only
    assert a.select([1]).rows("test", [0]) == a.rows("test", [1]) and a.select([1]).scratch is scratch
    calls = []
    for _ in range(2):
        assert a.kept("t", "k", lambda: calls.append(1) or 7) == 7
    assert calls == [1] and b.kept("t", "k", lambda: 8) == 7                 # one chunk, one scratch
    for key in ("x", "y", "z"):
        a.kept("bounded", key, lambda key=key: key, maxsize=2)
    assert list(scratch["bounded"]) == ["y", "z"]
    own = ChunkRows.alone([None, None])
    assert own.rows("private", [0, 1]) == ((0, 2, None), (1, 2, None)) and own.scratch == {}


def test_a_chunk_hands_one_scratch_to_its_calls_and_none_to_the_next(tmp_path, monkeypatch):
    """The runner hands every ``run_many`` of a chunk a ``ChunkRows`` with the chunk's one scratch (the splits'
    subsets, the size's prefix lengths, the dataset's ``nested_sizes``) and a new scratch to the next chunk; a
    ``run_many`` that declares no ``chunk`` parameter is called without it."""
    from dpexp import runner, spec

    cfg = _small_config(tmp_path, repeats=1, n_private=[0, 20], privacy={"epsilon": [1.0], "delta": [0.0]},
                        algorithms=[{"name": "lr"}, {"name": "plr"}])
    exp = spec.load(cfg, [], None)
    seen = []
    real = runner._outputs

    def outputs(exp_, av, splits, ledgers, epsilon, delta, rows=None):
        seen.append(rows)
        return real(exp_, av, splits, ledgers, epsilon, delta, rows)

    monkeypatch.setattr(runner, "_outputs", outputs)
    for index in (0, 1):
        runner.chunk_records(exp, runner.Chunk(index, 0, 0, ("a", "c")), 11)
    first, second = seen[:len(seen) // 2], seen[len(seen) // 2:]
    assert len({id(r.scratch) for r in first}) == 1 and first[0].scratch is not second[0].scratch
    assert {r.prefix[2] for r in first} == {0, 20} and all(r.subsets == ("a", "c") for r in seen)
    assert all(r.nested is exp.datasets[0].instance.nested_sizes for r in seen)

    class Old:
        def run_many(self, splits, eps, delta, ledgers, trials):
            return ["old"] * len(splits)

    class New(Old):
        def run_many(self, splits, eps, delta, ledgers, trials, chunk=None):
            return [chunk] * len(splits)

    from types import SimpleNamespace

    e = SimpleNamespace(spec=SimpleNamespace(trials=1))
    rows = first[0]
    assert real(e, SimpleNamespace(instance=Old()), ["s"], ["l"], 1.0, 0.0, rows) == ["old"]
    assert real(e, SimpleNamespace(instance=New()), ["s"], ["l"], 1.0, 0.0, rows) == [rows]


def test_chunk_records_group_with_mixed_guarantees_and_equal_sizes(tmp_path, monkeypatch):
    """A group whose cells carry different guarantee objects (a failed split among good ones: written cell by cell)
    and one whose cells share one (written from the parts made once per chunk) give the text of their heads field by
    field, the plain writer's CSV and the heads' summary fields; splits of equal sizes share one head part and
    text (``_seen_fields``), and a split of other sizes gets its own."""
    import operator

    from dpexp import runner, spec

    cfg = _small_config(tmp_path, repeats=1, n_private=[0, 20], privacy={"epsilon": [0.5, 2.0], "delta": [0.0]},
                        algorithms=[{"name": "lr"}, {"name": "plr"}])
    exp = spec.load(cfg, [], None)
    inst = exp.datasets[0].instance
    real = type(inst).split

    def split(self, subset, sizes, rng):
        if subset == "bad":
            raise ValueError("no rows, here")
        return real(self, subset, sizes, rng)

    monkeypatch.setattr(type(inst), "split", split)
    chunk = runner.Chunk(0, 0, 0, ("a", "bad", "c"))
    recs = runner.chunk_records(exp, chunk, 11)
    assert len(recs) == runner._chunk_cells(exp, chunk) and all(len(r) == 5 for r in recs)
    for head, _, _, text, group in recs:
        assert text == "".join(results.csv_field(results.fmt(x)) + "," for x in head).encode()
        assert all(map(operator.is_, group, results.summary_fields(head)))
    rows = [Row(*r[0], m, v, r[2], e) for r in recs for m, v, e in r[1]]
    assert results.records_to_csv(recs) == results.records_to_csv([r[:3] for r in recs]) == _plain(rows)
    assert results.records_summary(recs) == results.records_summary([r[:3] for r in recs])
    kinds = {(r.subset, r.guarantee) for r in rows if r.algorithm == "plr" and r.n_private == 20}
    assert kinds == {("a", "pure"), ("bad", "none"), ("c", "pure")}    # one group, two kinds of guarantee
    assert any(r.error.startswith("RuntimeError: data split failed") for r in rows if r.subset == "bad")

    from dpexp.types import Sizes

    ok = runner._splits(exp.datasets[0], "k", runner.Chunk(0, 0, 0, ("a", "c")), Sizes(20, 5, 10, 20, 5, 10), 11)
    fail = runner._SplitFailure(ValueError("x"), (3, 5, 10, 0))
    made = results.ChunkRecords(("s", "honkela_synthetic", "d=3"), ("a", "c"), None)
    heads, texts = made._size_parts([runner._seen(sp) for sp in (ok[0], fail, ok[1])], (0, 1, "all", 5, 10))
    assert heads[0] is heads[2] and texts[0] is texts[2] and heads[1] == (3, 5, 10, 0, 0, 1, "all", 5, 10)
    assert texts == [results.head_text(h) for h in heads]


def test_outputs_of_a_group_without_failed_splits_equal_the_placed_ones():
    """``_outputs`` hands every split to ``run_many`` when none failed (no step per cell): its outputs in order, an
    exception of ``run_many`` for every cell, None past a short answer and nothing past a long one — as the
    placement of the outputs of the splits that exist gives them (a failed split keeps its error)."""
    from types import SimpleNamespace

    from dpexp import runner

    class Algo:
        def __init__(self, answer):
            self.answer, self.seen = answer, []

        def run_many(self, splits, eps, delta, ledgers, trials):
            self.seen.append((list(splits), list(ledgers), eps, delta, trials))
            if self.answer == "raise":
                raise RuntimeError("bug")
            return self.answer(splits)

    exp = SimpleNamespace(spec=SimpleNamespace(trials=3))
    fail = runner._SplitFailure(ValueError("x"), (0, 0, 0, 0))
    for answer in (lambda s: [f"o{x}" for x in s], lambda s: (f"o{x}" for x in s[:-1]), lambda s: ["a"] * 9, "raise"):
        got = runner._outputs(exp, SimpleNamespace(instance=Algo(answer)), ["s1", "s2", "s3"], ["l1", "l2", "l3"],
                              0.5, 1e-5)
        # the same splits with a failed one before them: the general placement
        algo = Algo(answer)
        placed = runner._outputs(exp, SimpleNamespace(instance=algo), [fail, "s1", "s2", "s3"],
                                 ["l0", "l1", "l2", "l3"], 0.5, 1e-5)
        assert algo.seen[0][:2] == (["s1", "s2", "s3"], ["l1", "l2", "l3"]) and algo.seen[0][2:] == (0.5, 1e-5, 3)
        assert str(placed[0]).startswith("data split failed")
        assert [str(o) if isinstance(o, Exception) else o for o in got] == \
            [str(o) if isinstance(o, Exception) else o for o in placed[1:]]
    assert got[0] is got[2] and str(got[0]) == "bug"
    assert runner._outputs(exp, SimpleNamespace(instance=Algo("raise")), [], [], 0.5, 0.0) == []


@pytest.mark.parametrize("metrics", [("spearman", "wpc", "n"), ("wpc", "spearman"), ("spearman", "wpc")])
def test_chunk_records_evaluation_rows_equal_marking_after_the_fact(tmp_path, metrics):
    """``ChunkRecords`` with evaluation metrics cuts each cell's rows into runs while it makes them (heads, texts
    and summary tuples made once per chunk); its records give what ``mark_evaluation`` gives of the unmarked
    records: the same CSV and privacy summary, row for row — an evaluation metric first, between others or last
    (with extras on only some cells), several targets, a failed cell and a group of mixed guarantees."""
    from dpexp import spec
    from dpexp.privacy.guarantee import Guarantee

    exp = spec.load(_small_config(tmp_path, repeats=1, n_private=[20], privacy={"epsilon": [1.0]},
                                  algorithms=[{"name": "lr"}]), [], None)
    statement = exp.datasets[0].instance.preprocessing()
    names, subsets = ("s", "honkela_synthetic", "d=3"), ("a", "b", "c")
    g, other = Guarantee.pure(1.0), Guarantee.pure(0.5)

    def cell(k, fail=False, extras=0):
        vals = [(m, float("nan") if fail else 0.25 * k + i, "boom" if fail else "") for i, m in enumerate(metrics)]
        return vals + [(f"x{j}", float(j), "") for j in range(extras)]

    seen = [(20, 5, 10, 3)] * 3
    groups = [
        results.CellGroup(("plr", "P", "eps"), [(1.0, 0.0)], [g] * 3, [cell(0), cell(1, extras=2), cell(2)], seen,
                          (0, 1, 20, 5, 10), ["k0", "k1", "k2"]),
        results.CellGroup(("lr", "L", ""), [(1.0, 0.0), (2.0, 1e-6)], [g] * 3, [cell(3), cell(4), cell(5)], seen,
                          (0, 1, 20, 5, 10), ["", "", ""]),
        results.CellGroup(("plr", "P", "eps"), [(2.0, 0.0)], [g, other, g], [cell(6), cell(7, fail=True), cell(8)],
                          seen, (0, 1, 20, 5, 10), ["k6", "k7", "k8"]),
        results.CellGroup(("plr", "P", "eps"), [(0.5, 0.0)], [g] * 3, [cell(9), cell(10, fail=True), cell(11)],
                          seen, (0, 1, 20, 5, 10), ["k9", "k10", "k11"]),
    ]
    plain, marked = results.ChunkRecords(names, subsets, statement), results.ChunkRecords(names, subsets, statement,
                                                                                         {"wpc"})
    for grp in groups:
        plain.add(grp)
        marked.add(grp)
    want = results.mark_evaluation({"wpc"}, plain.done())
    got = marked.done()
    assert len(got) == len(want) > len(plain.done())
    fast = [r for r in got if r[2] in ("k0", "k1", "k2", "")]   # the groups cut while made: heads with texts
    if metrics[-1] == "wpc":   # evaluation last, extras on one cell: marked after the fact (3-tuples)
        fast = [r for r in fast if r[2] == ""]
    assert fast and all(len(r) == 5 for r in fast) and len(fast) == {"n": 27, "spearman": 18, "wpc": 12}[metrics[-1]]
    assert [(r[0], r[1], r[2]) for r in got] == [(r[0], r[1], r[2]) for r in want]
    assert results.records_to_csv(got) == results.records_to_csv([r[:3] for r in want])
    assert results.records_summary(got) == results.records_summary([r[:3] for r in want])
    for head, _, _, text, group in fast:
        assert text == results.head_text(head) and group == results.summary_fields(head)
    assert any("evaluation against private data" in str(r[0]) for r in got)
