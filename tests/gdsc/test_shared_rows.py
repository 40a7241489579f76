"""Set-up shared between the methods of one size (``release_batch.shared_rows``, ``shared_sufficient_stats``,
``train_rows.shared_train_rows``): the runner hands every method of a chunk one ``ChunkRows``, and the rows'
layout, σ sums and exact statistics they compute are kept in its scratch under the rows' names.  A method run after
the others on the same splits and chunk gives, to the bit, what it gives alone on fresh copies of them (outputs,
extras, guarantees, spends)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from dpexp import cache
from dpexp.chunk import ChunkRows
from dpexp.families.gdsc.algorithms.adassp import AdaSSP
from dpexp.families.gdsc.algorithms.baselines import RobustLR
from dpexp.families.gdsc.algorithms.lr import BayesLR
from dpexp.families.gdsc.algorithms.narplr import NoiseAwareRPLR
from dpexp.families.gdsc.algorithms.plr import PrivateLR
from dpexp.families.gdsc.algorithms.rplr import RobustPrivateLR
from dpexp.families.gdsc.release_batch import (RowBlocks, shared_rows, shared_sufficient_stats,
                                                sufficient_stats_many)
from dpexp.families.gdsc.train_rows import TrainRows, shared_train_rows
from gdsc_bitwise import ledgers as _ledgers, same as _same, split as _split

pytestmark = pytest.mark.usefixtures("isolated_cache", "opendp_noise_off")   # secure paths compared: conftest

EXPLICIT = dict(p1=0.35, p2=0.6, p3=0.05, omega_x=1.3, omega_y=0.9)


def _splits(nan: bool):
    """Varying n (two of equal n), one split without private rows, one alone of its d (= 2) among d = 3 ones, one
    without public rows; ``nan``: one with a NaN private row (rplr's group then takes the per-split path, AdaSSP
    sets it aside)."""
    ss = [_split(1, scale=3.0), _split(2, n=0), _split(3, n=17), _split(4, d=2), _split(5, n=55, n_pub=3),
          _split(6, n=1), _split(8, n=30, n_pub=0), _split(9, n=17)]
    if nan:
        bad = _split(7, n=20)
        bad.X_private[3, 1] = np.nan
        ss.append(bad)
    return ss


def _methods():
    """The methods of our data path that share set-up, in the config's order."""
    return [RobustPrivateLR(**EXPLICIT), RobustPrivateLR(prior="fixed", **EXPLICIT), PrivateLR(), BayesLR(),
            BayesLR(prior="gamma"), RobustLR(**EXPLICIT), NoiseAwareRPLR(**EXPLICIT), AdaSSP(),
            RobustPrivateLR(sigma="data", **EXPLICIT), NoiseAwareRPLR(clip_public=True, **EXPLICIT),
            BayesLR(prior="gamma"), RobustLR(sigma="data", clip_public=True, **EXPLICIT)]


def _same_result(a, b):
    if isinstance(a, Exception):
        assert type(a) is type(b) and str(a) == str(b)
        return
    assert not isinstance(b, Exception), b
    for f in ("predictions", "coef", "coef_interval", "pred_interval", "clip_bounds"):
        _same(getattr(a, f), getattr(b, f))
    _same(a.extras, b.extras)
    assert repr(a.guarantee) == repr(b.guarantee)


def _chunk(splits):
    """A chunk of these splits (one subset each) at one size, of a dataset with nested sizes."""
    return ChunkRows(tuple(f"s{k}" for k in range(len(splits))), (10, 5, 20), True, {})


def _run_many(alg, splits, lgs, trials, chunk=None):
    try:
        return alg.run_many(splits, 1.5, 0.0, lgs, trials, chunk=chunk)
    except Exception as exc:  # compared as a result
        return exc


@pytest.mark.parametrize("nan", [False, True])
@pytest.mark.parametrize("trials", [1, 3])
@pytest.mark.parametrize("secure", [False, True])
def test_methods_on_the_same_splits_equal_each_alone(nan, trials, secure):
    splits = _splits(nan)
    chunk = _chunk(splits)
    together = []
    for alg in _methods():   # one after the other on the same splits and chunk, as the runner calls them
        lgs = _ledgers(len(splits), secure)
        together.append((_run_many(alg, splits, lgs, trials, chunk), lgs))
    assert {"gdsc.shared_rows", "gdsc.shared_sufficient_stats", "gdsc.train_rows"} <= set(chunk.scratch)
    for alg, (got, lgs) in zip(_methods(), together):
        cache.clear()
        alone = copy.deepcopy(splits)   # new arrays, no chunk: nothing shared
        la = _ledgers(len(alone), secure)
        ref = _run_many(alg, alone, la, trials)
        if isinstance(ref, Exception):   # lr's call fails as a whole on NaN rows (as before): the same error
            _same_result(ref, got)
            continue
        for a, b, l1, l2 in zip(ref, got, la, lgs):
            _same_result(a, b)
            assert repr(l1.spends) == repr(l2.spends)


def test_shared_rows_kept_by_name_and_equal_to_a_fresh_layout():
    ss = _splits(False)
    ks = [k for k, s in enumerate(ss) if s.d == 3]
    Xs, ys = [ss[k].X_private for k in ks], [ss[k].y_private for k in ks]
    chunk = _chunk(ss)
    rows = shared_rows(Xs, ys, chunk, chunk.rows("private", ks))
    assert shared_rows(list(Xs), list(ys), chunk, chunk.rows("private", ks)) is rows   # the same rows: one entry
    assert shared_rows(Xs, ys, chunk, chunk.rows("private", ks[1:])) is not rows       # other rows: their own
    assert shared_rows(Xs, ys, None, ()) is not shared_rows(Xs, ys, None, ())         # no chunk: nothing kept
    fresh = RowBlocks(Xs, ys)
    _same(rows.X, fresh.X)
    _same(rows.sigma_sums(1.0, 5.0), fresh.sigma_sums(1.0, 5.0))
    assert rows.sigma_sums(1.0, 5.0) is rows.sigma_sums(1.0, 5.0)
    _same(rows.sigma_sums(0.5, 2.0), fresh.sigma_sums(0.5, 2.0))        # other bounds: their own sums
    _same(rows.stats(), fresh.stats())
    for a in (rows.X, rows.y, rows.sigma_sums(1.0, 5.0), *rows.stats()):
        assert not a.flags.writeable                                      # kept values cannot be written into
    assert fresh._known is None and fresh.X.flags.writeable              # a caller's own layout: as before
    fresh.X[0, 0] = 9.0   # (rlr clips its own layout in place)
    assert rows.X[0, 0] != 9.0


def test_shared_sufficient_stats_equal_per_set_and_read_only():
    ss = _splits(False)[:3]
    chunk = _chunk(ss)
    pub = shared_sufficient_stats([s.X_public for s in ss], [s.y_public for s in ss], chunk,
                                  chunk.rows("public", range(3)))
    _same(pub, sufficient_stats_many([s.X_public for s in ss], [s.y_public for s in ss]))
    assert not pub[0][0].flags.writeable
    assert shared_sufficient_stats([], [], chunk, chunk.rows("public", range(3))) is pub   # found by the names


def test_lr_float32_rows_take_the_per_split_path_equal():
    ss = _splits(False)
    s32 = [copy.deepcopy(s) for s in ss]
    for s in s32:
        s.X_private, s.X_public = s.X_private.astype(np.float32), s.X_public.astype(np.float32)
    for prior in ("fixed", "gamma"):
        a = BayesLR(prior=prior).run_many(s32, 1.0, 0.0, _ledgers(len(ss)))
        cache.clear()
        b = BayesLR(prior=prior).run_many(copy.deepcopy(s32), 1.0, 0.0, _ledgers(len(ss)))
        for x, y in zip(a, b):
            _same_result(x, y)


@pytest.mark.parametrize("trials", [1, 3])
@pytest.mark.parametrize("params", [dict(), dict(precision_prior="scaled"), dict(clip_public=False)])
def test_narplr_problems_from_the_batch_arrays_equal_the_stacked_releases(trials, params):
    """narplr's model inputs read from a batched release's (S, T) arrays equal those stacked from its releases."""
    import dataclasses

    alg = NoiseAwareRPLR(**EXPLICIT, **params)
    splits = [s for s in _splits(False) if s.d == 3 and s.X_private.shape[0] > 0]
    rs = alg.release_many(splits, 1.5, _ledgers(len(splits)), trials, public_stats=not alg.params.clip_public)
    assert all(r.batch is not None for r in rs)
    fast = alg._problems(splits, rs, trials)
    slow = alg._problems(splits, [dataclasses.replace(r, batch=None) for r in rs], trials)
    assert list(fast) == list(slow)
    for k in fast:
        _same(fast[k], slow[k])
        if k == "XX":
            assert fast[k] is rs[0].batch[0][0].XX   # the batch's own array was read


def test_train_rows_kept_by_name_read_only_and_shared_by_lr_and_rlr():
    # the training rows' layout of lr and rlr (train_rows.shared_train_rows): one entry per set of rows' names,
    # rows and statistics read-only and equal to a fresh layout's; rlr after lr on the same splits and chunk reads
    # lr's layout (clipping a copy: the kept rows unchanged) and gives what it gives alone
    ss = [s for s in _splits(False) if s.d == 3]
    Xs, ys = [(s.X_public, s.X_private) for s in ss], [(s.y_public, s.y_private) for s in ss]
    chunk, ks = _chunk(ss), list(range(len(ss)))
    train = shared_train_rows(Xs, ys, chunk, ks)
    assert shared_train_rows(list(Xs), list(ys), chunk, ks) is train
    fresh = RowBlocks(Xs, ys)
    _same(train.rows.X, fresh.X)
    _same(train.stats()[:3], fresh.stats())
    assert train.stats() is train.stats() and train.floats
    for a in (train.rows.X, train.rows.y, *train.stats()):
        assert not a.flags.writeable
    X0 = train.rows.X.copy()
    BayesLR(prior="gamma").run_many(ss, 1.5, 0.0, _ledgers(len(ss)), chunk=chunk)
    assert shared_train_rows(Xs, ys, chunk, ks) is train                   # lr found it
    got = RobustLR(**EXPLICIT).run_many(ss, 1.5, 0.0, _ledgers(len(ss)), chunk=chunk)
    assert shared_train_rows(Xs, ys, chunk, ks) is train                   # rlr too
    _same(train.rows.X, X0)
    cache.clear()
    alone = RobustLR(**EXPLICIT).run_many(copy.deepcopy(ss), 1.5, 0.0, _ledgers(len(ss)))
    for a, b in zip(got, alone):
        _same_result(a, b)
    other = shared_train_rows(Xs[1:], ys[1:], chunk, ks[1:])                           # other rows
    assert other is not train and train is not shared_train_rows(Xs, ys, chunk, ks)     # (one entry: the last asked)
    f32 = [(X.astype(np.float32), V.astype(np.float32)) for X, V in Xs]
    assert not TrainRows(f32, ys).floats and TrainRows(f32, ys).stats() is None
    short = [(y, v[:-1]) for y, v in ys]                                   # y parts shorter than the X parts
    assert not TrainRows(Xs, short).floats


def test_recurring_counts_the_lengths_a_later_size_asks_again():
    # the runner's canonical order: n_test, n_public, n_private (n_private fastest)
    grid = tuple((10, u, v) for u in (0, 5, 10) for v in (0, 20, 40))
    chunk = ChunkRows(("a",), grid[0], True, {}, grid)
    assert chunk.recurring("private") == 3 and chunk.recurring("public") == 3 and chunk.recurring("test") == 1
    last = ChunkRows(("a",), grid[6], True, {}, grid[6:])          # the last n_public: no n_private comes again
    assert last.recurring("private") == 0 and last.recurring("public") == 1
    assert ChunkRows(("a",), grid[0], False, {}, grid).recurring("private") == 0   # not nested: names differ by size
    eps_grid = tuple((10, 5, v) for v in (20, 40, 80))               # a curve over n_private: each length once
    assert ChunkRows(("a",), eps_grid[0], True, {}, eps_grid).recurring("private") == 0


def test_kept_evicts_down_to_a_bound_that_shrank():
    chunk = ChunkRows(("a",), None, True, {})
    for k in range(5):
        chunk.kept("x", k, lambda k=k: k, maxsize=5)
    assert list(chunk.scratch["x"]) == [0, 1, 2, 3, 4]
    assert chunk.kept("x", 9, lambda: 9, maxsize=2) == 9
    assert list(chunk.scratch["x"]) == [4, 9]                         # the least recently used went first


def _grid_chunks(splits, grid):
    """The ``ChunkRows`` of each size of ``grid`` (sharing one scratch) as the runner makes them."""
    scratch: dict = {}
    return [ChunkRows(tuple(f"s{k}" for k in range(len(splits))), p, True, scratch, grid[at:])
            for at, p in enumerate(grid)]


@pytest.mark.parametrize("sigma", ["data", "dp"])
def test_private_rows_kept_for_the_later_sizes_that_read_them_again(sigma, monkeypatch):
    """A grid of n_public × n_private asks the same private rows at every n_public: their layout (and, at bounds
    of the data σ, their clipped statistics) is made once, and every release equals the release alone on fresh
    copies (outputs, spends).  Bounds drawn from σ̂ (``sigma: dp``) are never reused: statistics per call."""
    from dpexp.families.gdsc import release_batch
    splits = [s for s in _splits(False) if s.d == 3 and s.X_private.shape[0] > 0]
    for s in splits:
        s.meta.update(sigma_x=0.8, sigma_y=1.7)
    grid = tuple((10, u, v) for u in (0, 5) for v in (20, 40))
    chunks = _grid_chunks(splits, grid)
    built, computed = [], []
    real_init, real_stats = RowBlocks.__init__, RowBlocks.clipped_stats
    monkeypatch.setattr(RowBlocks, "__init__", lambda self, *a: (built.append(1), real_init(self, *a))[1])
    monkeypatch.setattr(RowBlocks, "clipped_stats", lambda self, *a: (computed.append(1), real_stats(self, *a))[1])
    alg = RobustPrivateLR(sigma=sigma, **EXPLICIT)
    # the private rows of n_private = 20 and 40: each split's rows, or their first half (shared across n_public)
    rows_of = {20: [copy.deepcopy(s) for s in splits], 40: splits}
    for chunk in chunks:
        got = alg.run_many(rows_of[chunk.prefix[2]], 1.5, 0.0, _ledgers(len(splits)), 2, chunk=chunk)
        cache.clear()
        ref = alg.run_many(copy.deepcopy(rows_of[chunk.prefix[2]]), 1.5, 0.0, _ledgers(len(splits)), 2)
        for a, b in zip(ref, got):
            _same_result(a, b)
    assert release_batch.SHARED_ROWS == 1
    # 4 calls with a chunk, 4 alone: the chunk's layouts made once per n_private, the fresh calls' each time
    assert len(built) == 2 + 4
    assert len(computed) == (2 + 4 if sigma == "data" else 4 + 4)
