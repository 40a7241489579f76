"""The memoised GDSC splits (the repeat's permutation drawn once, per-drug rows and masks shared by every size)
equal the direct computation of each split to the bit, arrays and meta, on the tiny fixture; the generator is
left where drawing leaves it."""

from pathlib import Path

import numpy as np
import pytest

from dpexp import cache
from dpexp.errors import UserError
from dpexp.families.gdsc.datasets import protocols
from dpexp.families.gdsc.datasets.gdsc import Gdsc, centre_on, centre_rows, drawn_permutation
from dpexp.types import Sizes

FIX = Path(__file__).parent / "fixtures"
DRUGS = ["Drug_1", "Drug_5", "Drug_1001"]


def _direct_ours(ds, subset, sizes, rng):
    """The split of ``protocol: ours`` computed directly, as before memoisation."""
    p = ds.params
    prep = ds._prep()
    j = prep.drug_index[subset]
    N, T, P = prep.X.shape[0], p.test_pool, p.public_pool
    perm = rng.permutation(N)
    pools = (perm[:T], perm[T:T + P], perm[T + P:])
    n_priv = len(pools[2]) if sizes.n_private < 0 else sizes.n_private
    has = prep.has[:, j]
    X, y, sx, sy = prep.X, prep.Y[:, j], float(prep.sigma_x[j]), float(prep.sigma_y[j])
    ref = None
    if p.centre == "public":
        ref = np.concatenate([pools[0], pools[1]])
        X, y, sx, sy = centre_on(prep.X_raw, prep.Y_raw[:, j], ref, centre_rows(prep.X_raw, ref))
    take = []
    for pool, n in zip(pools, (sizes.n_test, sizes.n_public, n_priv)):
        if p.missing == "after_split":
            idx = pool[:n]
            take.append(idx[has[idx]])
        else:
            take.append(pool[has[pool]][:n])
    it, iu, iv = take
    return (X[iv], y[iv], X[iu], y[iu], X[it], y[it]), dict(sigma_x=sx, sigma_y=sy, y_sd=sy), (iu, it, ref)


def _direct_paper(ds, subset, sizes, rng):
    """The split of ``protocol: python|matlab`` computed directly (sets normalised anew)."""
    p = ds.params
    prep = ds._prep()
    j = prep.drug_index[subset]
    N = prep.X.shape[0]
    perm = rng.permutation(N)
    n_priv = sizes.n_private
    if n_priv < 0:
        n_priv = p.public_start if p.protocol == "python" else N - p.test_pool - sizes.max_public
    # the sets as the paths define them (module docstring of protocols), normalised anew
    T, train = p.test_pool, perm[p.test_pool:]
    if p.protocol == "python":
        index = (perm[:sizes.n_test], train[p.public_start:p.public_start + sizes.n_public], train[:n_priv])
        sets = [protocols.normalise_set(prep.X_raw[i], prep.Y_raw[i]) for i in index]
        Xs, Ys = [q[0] for q in sets], [q[1] for q in sets]
    else:
        trs = np.sort(train)
        index = (perm[:sizes.n_test], trs[:sizes.n_public], trs[sizes.max_public:sizes.max_public + n_priv])
        Yc = prep.Y_raw - protocols._column_means(prep.Y_raw[train])[None, :]
        Xs = [protocols.normalise_set(prep.X_raw[i], None)[0] for i in index]
        Ys = [Yc[i] for i in index]
    sigma_x = float(Xs[2].std(ddof=1)) if Xs[2].size > 1 else float("nan")           # ddof = 1: the authors'
    sigma_y = float(np.nanstd(Ys[2], ddof=1)) if np.isfinite(Ys[2]).sum() > 1 else float("nan")
    has = prep.has[:, j]
    kt, ku, kv = keep = [has[idx] for idx in index]
    (Xt, Xu, Xv), (Yt, Yu, Yv) = Xs, Ys
    arrays = (Xv[kv], Yv[kv, j], Xu[ku], Yu[ku, j], Xt[kt], Yt[kt, j])
    raw = None
    if p.protocol == "matlab":
        it, iu, iv = (s[k] for s, k in zip(index, keep))
        raw = (prep.X_raw[iv], prep.X_raw[iu], prep.X_raw[it], prep.X_raw.min(axis=0), prep.X_raw.max(axis=0),
               *protocols._y_range(prep.Y_raw, j, p.test_pool, perm))   # the reference form, one drug
    meta = dict(sigma_x=sigma_x, sigma_y=sigma_y, y_sd=float(prep.sigma_y[j]))
    return arrays, meta, (index[1], index[0], ku, kt, raw)


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _fresh_memos():
    for ns in ("gdsc.permutation", "gdsc.drug_rows", "gdsc.protocol_drug", "gdsc.fold_sequences",
               "gdsc.protocol_sets", "gdsc.protocol_set", "gdsc.raw_y_ranges", "gdsc.raw_x", "gdsc.matlab_centred_y",
               "gdsc.centred_rows"):
        cache.clear(ns)


def _sizes_grid(max_public, n_test):
    return [Sizes(n, u, t, 12, max_public, n_test) for n in (-1, 0, 3, 12) for u in (0, max_public)
            for t in (0, n_test)]


@pytest.mark.parametrize("params", [dict(centre="public", missing="after_split"),
                                    dict(centre="public", missing="before_split"),
                                    dict(centre="all", missing="after_split"),
                                    dict(centre="all", missing="before_split")])
def test_ours_split_equals_the_direct_split(params):
    _fresh_memos()
    ds = Gdsc(data_dir=FIX, d=5, test_pool=6, public_pool=4, **params)
    for seed in (0, 1):
        for sizes in _sizes_grid(4, 6):
            for drug in DRUGS:                        # every drug and size of a repeat: memo hits after the first
                sp = ds.split(drug, sizes, np.random.default_rng(seed))
                arrays, meta, (iu, it, ref) = _direct_ours(ds, drug, sizes, np.random.default_rng(seed))
                got = (sp.X_private, sp.y_private, sp.X_public, sp.y_public, sp.X_test, sp.y_test)
                assert all(_same(g, w) for g, w in zip(got, arrays))
                assert all(sp.meta[k] == v and type(sp.meta[k]) is type(v) for k, v in meta.items())
                v = sp.meta["view"]
                assert _same(v.idx_public, iu) and _same(v.idx_test, it)
                assert (v.centre_ref is None) == (ref is None) and (ref is None or _same(v.centre_ref, ref))
                assert sp.meta["n_requested"] == {"n_private": 28 - 6 - 4 if sizes.n_private < 0 else sizes.n_private,
                                                  "n_public": sizes.n_public, "n_test": sizes.n_test}


@pytest.mark.parametrize("protocol", ["python", "matlab"])
def test_paper_split_equals_the_direct_split(protocol):
    _fresh_memos()
    kw = dict(public_start=12) if protocol == "python" else {}
    ds = Gdsc(data_dir=FIX, d=5, test_pool=6, protocol=protocol, **kw)
    for seed in (2, 3):
        for sizes in [Sizes(n, u, t, 12, 3, 6) for n in (-1, 0, 5, 12) for u in (0, 3) for t in (0, 6)]:
            for drug in DRUGS:
                sp = ds.split(drug, sizes, np.random.default_rng(seed))
                arrays, meta, (pub, test, ku, kt, raw) = _direct_paper(ds, drug, sizes, np.random.default_rng(seed))
                got = (sp.X_private, sp.y_private, sp.X_public, sp.y_public, sp.X_test, sp.y_test)
                assert all(_same(g, w) for g, w in zip(got, arrays))
                assert all(sp.meta[k] == v or (np.isnan(v) and np.isnan(sp.meta[k])) for k, v in meta.items())
                v = sp.meta["view"]
                assert _same(v.public, pub) and _same(v.test, test)
                # the masks' positions (the view takes them: the rows the masks select)
                assert _same(v.keep_public, np.flatnonzero(ku)) and _same(v.keep_test, np.flatnonzero(kt))
                Xu, Xt = v(5)
                assert Xu.shape == (int(ku.sum()), 5) and Xt.shape == (int(kt.sum()), 5)
                masked = protocols.ProtocolView(v.expr, v.ic50, v.evidence, pub, test, ku, kt, v.loader)(5)
                assert _same(Xu, masked[0]) and _same(Xt, masked[1])
                if raw is not None:
                    r = sp.meta["raw"]
                    got_raw = (r.X_private, r.X_public, r.X_test, r.x_min, r.x_max, r.y_min, r.y_max)
                    assert all(_same(g, w) for g, w in zip(got_raw, raw))


def test_drawn_permutation_draws_like_the_generator_and_leaves_it_where_drawing_does():
    cache.clear("gdsc.permutation")
    for _ in range(2):                                              # a miss, then a hit
        rng, ref = np.random.default_rng(7), np.random.default_rng(7)
        perm, dig = drawn_permutation(rng, 28)
        assert np.array_equal(perm, ref.permutation(28)) and dig == protocols.digest(perm)
        assert not perm.flags.writeable                             # shared by every split of the repeat
        assert np.array_equal(rng.random(5), ref.random(5))         # the stream goes on as after the draw
    rng = np.random.default_rng(7)
    rng.random()                                                    # another state: another permutation
    assert not np.array_equal(drawn_permutation(rng, 28)[0], np.random.default_rng(7).permutation(28))
    other, ref = np.random.Generator(np.random.MT19937(3)), np.random.Generator(np.random.MT19937(3))
    assert np.array_equal(drawn_permutation(other, 28)[0], ref.permutation(28))   # not memoised: drawn
    assert np.array_equal(other.random(3), ref.random(3))


def test_split_errors_are_unchanged_by_the_memo():
    from dpexp.errors import UserError

    ds = Gdsc(data_dir=FIX, d=5, test_pool=6, public_pool=4)
    ds.split("Drug_1", Sizes(3, 2, 6, 12, 4, 6), np.random.default_rng(0))
    with pytest.raises(UserError, match="n_private must be <="):
        ds.split("Drug_1", Sizes(100, 2, 6, 100, 4, 6), np.random.default_rng(0))
    with pytest.raises(UserError, match="n_test must be <="):
        ds.split("Drug_1", Sizes(3, 2, 7, 12, 4, 7), np.random.default_rng(0))


@pytest.mark.parametrize("kw", [dict(public_pool=4), dict(protocol="python", public_start=12), dict(protocol="matlab")])
def test_sizes_of_a_repeat_share_the_test_and_public_rows(kw):
    # one array per (repeat, drug): the metrics group a drug's cells by it without hashing every size's copy
    ds = Gdsc(data_dir=FIX, d=5, test_pool=6, **kw)
    a, b = (ds.split("Drug_5", Sizes(n, 3, 6, 12, 3, 6), np.random.default_rng(4)) for n in (2, 9))
    assert a.y_test is b.y_test and a.X_public is b.X_public and a.X_private is not b.X_private
    if kw.get("protocol", "ours") == "ours":   # the private rows: read-only prefixes of the drug's, taken once
        assert len(a.y_private) and np.shares_memory(a.X_private, b.X_private)
        assert np.shares_memory(a.y_private, b.y_private) and a.X_private.flags.c_contiguous
        assert not (a.X_private.flags.writeable or b.y_private.flags.writeable)
    # every array of a split is read-only on every path (``nested_sizes``): what the methods keep in a chunk's
    # scratch under the rows' names would be stale after a write
    for sp in (a, b):
        assert not any(x.flags.writeable for x in (sp.X_private, sp.y_private, sp.X_public, sp.y_public, sp.X_test,
                                                   sp.y_test))


def _split_fields(sp):
    """A split's arrays, meta values and views' index arrays (what the algorithms and metrics read)."""
    if isinstance(sp, Exception):
        return (type(sp), str(sp))
    meta = {k: v for k, v in sp.meta.items() if k not in ("view", "raw")}
    v, raw = sp.meta["view"], sp.meta.get("raw")
    views = tuple(getattr(v, a) for a in ("idx_public", "idx_test", "centre_ref", "public", "test", "keep_public",
                                          "keep_test") if getattr(v, a, None) is not None)
    raws = () if raw is None else tuple(vars(raw).values())
    arrays = (sp.X_private, sp.y_private, sp.X_public, sp.y_public, sp.X_test, sp.y_test) + views + raws
    return tuple(a.dtype.str + a.tobytes().hex() + str(a.shape) if isinstance(a, np.ndarray) else repr(a)
                 for a in arrays), repr(meta)


def _split_or_error(ds, drug, sizes, seed):
    try:
        return ds.split(drug, sizes, np.random.default_rng(seed))
    except Exception as exc:
        return exc


@pytest.mark.parametrize("kw", [dict(public_pool=4), dict(public_pool=4, centre="all", missing="before_split"),
                                dict(protocol="python", public_start=12), dict(protocol="matlab")])
def test_split_many_equals_split_by_split(kw):
    # one fold for all drugs of a size: the same arrays and meta as each drug's split from a fresh stream, each
    # failing subset with its own error (an unknown drug; sizes the data cannot give: every known drug's error)
    _fresh_memos()
    ds = Gdsc(data_dir=FIX, d=5, test_pool=6, **kw)
    drugs = DRUGS + ["Drug_404", DRUGS[0]]
    for seed in (0, 5):
        for sizes in [Sizes(n, u, t, 12, 3, 6) for n in (-1, 0, 5, 12) for u in (0, 3) for t in (0, 6)] + [
                Sizes(3, 2, 7, 12, 3, 7), Sizes(100, 3, 6, 100, 3, 6)]:
            for fresh in (True, False):               # cold memos (the fold drawn here), then warm
                if fresh:
                    _fresh_memos()
                got = ds.split_many(drugs, sizes, np.random.default_rng(seed))
                want = [_split_or_error(ds, d, sizes, seed) for d in drugs]
                assert [_split_fields(g) for g in got] == [_split_fields(w) for w in want]
                for g, w in zip(got, want):            # the views (rows shared by a fold's views) alike
                    if not isinstance(g, Exception):
                        for d in (6, 5, 6):
                            assert all(_same(a, b) for a, b in zip(g.meta["view"](d), w.meta["view"](d)))
            assert isinstance(got[3], UserError) and "unknown subset" in str(got[3])
    raws = [sp.meta["raw"] for sp in got if not isinstance(sp, Exception) and "raw" in sp.meta]
    assert all(not r.X_private.flags.writeable for r in raws)       # views of the rows shared by the sizes


def test_runner_splits_with_split_many_equal_split_by_split(monkeypatch, tmp_path):
    # the runner's _splits: split_many when the dataset has one, else (or when it declines: NotBatchable) split by
    # split; a split_many that raises anything else fails every subset's split with its message
    from dpexp import runner

    ds = Gdsc(data_dir=FIX, d=5, test_pool=6, protocol="matlab")
    chunk = runner.Chunk(0, 0, 1, tuple(DRUGS + ["Drug_404"]))

    class DV:
        instance, name, params_str = ds, "gdsc", "protocol=matlab"

    def run():
        out = []
        for sizes in (Sizes(5, 3, 6, 12, 3, 6), Sizes(100, 3, 6, 100, 3, 6)):
            shared = runner._SharedStream(DV, "gdsc[x]", chunk, 11)
            out += [(type(sp).__name__, str(sp.error)) if isinstance(sp, runner._SplitFailure) else _split_fields(sp)
                    for sp in runner._splits(DV, "gdsc[x]", chunk, sizes, 11, shared)]
        return out

    batched = run()
    assert batched[3][0] == "_SplitFailure" and all(f[0] == "_SplitFailure" for f in batched[4:7])
    from dpexp.errors import NotBatchable

    def declines(*a):
        raise NotBatchable("not these sizes")

    monkeypatch.setattr(Gdsc, "split_many", declines)                 # a declining split_many: split by split
    assert run() == batched
    monkeypatch.setattr(Gdsc, "split_many", lambda *a: 1 / 0)          # a broken one: every split fails, said
    assert all(f == ("_SplitFailure", "data split failed: ZeroDivisionError: division by zero") for f in run())
    monkeypatch.delattr(Gdsc, "split_many")
    assert run() == batched


@pytest.mark.parametrize("kw", [dict(public_pool=4), dict(protocol="python", public_start=12)])
def test_views_of_a_fold_share_rows_and_pickle_without_them(kw):
    import pickle

    ds = Gdsc(data_dir=FIX, d=5, test_pool=6, **kw)
    a, b = ds.split_many(DRUGS[:2], Sizes(5, 3, 6, 12, 3, 6), np.random.default_rng(2))
    va, vb = a.meta["view"], b.meta["view"]
    assert va.shared is vb.shared and va(6) is not None and 6 in vb.shared     # one look-up per fold and d
    back = pickle.loads(pickle.dumps(vb))
    assert back.shared is None and all(_same(x, y) for x, y in zip(back(6), vb(6)))
    with pytest.raises(UserError):
        va(0 if "protocol" not in kw else 65)


def test_split_data_is_memoised_per_instance_and_a_pickled_instance_finds_its_own(tmp_path, monkeypatch):
    """The paths and tables of ``split`` are looked up once per instance and data location (kept in the instance):
    a pickle carries none of them, and the unpickled instance finds its own."""
    import pickle
    import shutil

    ds = Gdsc(data_dir=None, d=5, test_pool=6, public_pool=4)
    monkeypatch.setenv("DPEXP_DATA_DIR", str(FIX))
    first = ds._split_data()
    assert ds._split_data() is first
    sizes = Sizes(5, 3, 6, 12, 4, 6)
    want = ds.split("Drug_5", sizes, np.random.default_rng(4))
    moved = tmp_path / "data"
    shutil.copytree(FIX, moved)
    back = pickle.loads(pickle.dumps(ds))
    assert set(vars(back)) == set(vars(ds))
    monkeypatch.setenv("DPEXP_DATA_DIR", str(moved))     # the worker's data folder: its own paths
    got = back._split_data()
    assert got[0] != first[0] and str(got[0]).startswith(str(moved))
    assert ds._split_data()[0] == got[0]                 # the location is part of the key
    split = back.split("Drug_5", sizes, np.random.default_rng(4))
    assert all(_same(getattr(split, f), getattr(want, f)) for f in ("X_private", "y_private", "X_test", "y_test"))


def test_centre_on_sigma_y_is_nanstd_of_the_drugs_responses_bit_for_bit():
    """centre_on's σ_y is the std of the drug's tested responses (no NaN among them): the value np.nanstd gave,
    bit for bit, on every fixture drug and on random responses with untested lines of several shares."""
    from dpexp.families.gdsc.datasets.gdsc import centre_on

    def want(y_raw, ref):
        has = ~np.isnan(y_raw)
        tested = ref[has[ref]]
        y = y_raw - (float(y_raw[tested].mean()) if tested.size else 0.0)
        return float(np.nanstd(y[has])) if has.any() else 0.0

    ds = Gdsc(data_dir=FIX, d=5)
    prep = ds._prep()
    rng = np.random.default_rng(11)
    cases = [(prep.X_raw, prep.Y_raw[:, j], rng.permutation(prep.X.shape[0])[:10]) for j in range(prep.Y.shape[1])]
    for share in (0.0, 0.3, 0.9, 1.0):
        X_raw = rng.normal(size=(300, 4))
        y_raw = rng.normal(2.0, 3.0, size=300)
        y_raw[rng.random(300) < share] = np.nan
        cases.append((X_raw, y_raw, np.arange(40)))
    for X_raw, y_raw, ref in cases:
        got = centre_on(X_raw, y_raw, ref)[3]
        assert float(got).hex() == want(y_raw, ref).hex()


def test_matlab_raw_rows_are_first_rows_of_the_drugs_whole_rows():
    # RawRows.whole (what fmlr_paper scales once per fold): the same read-only object for every size of a fold, the
    # split's raw private and test rows its first rows (views), equal to the rows of the split's lines
    _fresh_memos()
    ds = Gdsc(data_dir=FIX, d=5, test_pool=6, protocol="matlab")
    wholes = {}
    for n in (0, 5, 12):
        for sp in ds.split_many(DRUGS, Sizes(n, 3, 6, 12, 3, 6), np.random.default_rng(4)):
            raw = sp.meta["raw"]
            w = wholes.setdefault(sp.meta["drug"], raw.whole)
            assert raw.whole is w and w.whole is None
            for part, full in ((raw.X_private, w.X_private), (raw.X_public, w.X_public), (raw.X_test, w.X_test)):
                assert part.base is full and not full.flags.writeable
                np.testing.assert_array_equal(part, full[:len(part)])
            assert len(raw.X_private) == len(sp.X_private) and len(raw.X_test) == len(sp.X_test)


@pytest.mark.parametrize("kw", [dict(public_pool=4), dict(protocol="python", public_start=12)])
def test_views_of_a_drug_at_every_size_give_equal_read_only_rows(kw):
    # the view's rows (``protocols.view_rows``): equal at every size of a fold, read-only, equal to a fresh take
    ds = Gdsc(data_dir=FIX, d=5, test_pool=6, **kw)
    a, b = (ds.split("Drug_5", Sizes(n, 3, 6, 12, 3, 6), np.random.default_rng(4)) for n in (2, 9))
    got_a, got_b = a.meta["view"](6), b.meta["view"](6)
    assert all(_same(x, y) and not x.flags.writeable for x, y in zip(got_a, got_b))
    assert a.meta["view"](5)[0].shape != got_a[0].shape                 # another d: other rows
    v = a.meta["view"]
    if "protocol" in kw:
        sets = v.shared[6]
        want = sets[0].take(v.keep_public, axis=0), sets[1].take(v.keep_test, axis=0)
    else:
        want = v.shared[6].take(v.idx_public, axis=0), v.shared[6].take(v.idx_test, axis=0)
    assert all(_same(x, y) for x, y in zip(got_a, want))


def test_y_ranges_of_all_drugs_equal_each_drugs_range():
    # fmlr's response ranges of every drug of a fold at once (the Matlab path): the same floats as one drug at a
    # time, the means summed as one column is (300 lines: numpy's pairwise blocks), NaNs, a drug without
    # responses, an infinite response, a constant drug (zero centred extremes)
    rng = np.random.default_rng(3)
    Y = rng.normal(size=(300, 9)) * np.array([1, 2, 0.5, 3, 1, 1, 1, 1e-3, 7])
    Y[rng.random(Y.shape) < 0.2] = np.nan
    Y[:, 4] = np.nan
    Y[7, 5] = np.inf
    Y[:, 6] = np.where(np.isnan(Y[:, 6]), np.nan, 1.5)               # constant: both extremes 0
    for seed in range(4):
        perm = np.random.default_rng(seed).permutation(300)
        with np.errstate(invalid="ignore"):                        # inf − inf where the inf is a training line
            lo, hi = protocols._y_ranges(Y, 40, perm)
            want = [protocols._y_range(Y, j, 40, perm) for j in range(9)]
        assert [(float(a).hex(), float(b).hex()) for a, b in want] == [(a.hex(), b.hex()) for a, b in zip(lo, hi)]
        assert lo[4] == hi[4] == 0.0                                 # no response: (0, 0)
        assert lo[6] == 0.0 and hi[6] == 1.5                          # constant: centred 0, raw 1.5



def _public_lines(ds, seed):
    """The lines of the public pool (ours) or public sequence (paper paths) of repeat ``seed``'s permutation."""
    p = ds.params
    perm = np.random.default_rng(seed).permutation(ds._prep().X.shape[0])
    T = p.test_pool
    if p.protocol == "ours":
        return perm[T:T + p.public_pool]
    if p.protocol == "python":
        return perm[T:][p.public_start:]
    return np.sort(perm[T:])


def _plant(ds, where, value):
    """Writes ``value`` into the dataset's prepared rows, raw and preprocessed alike: Drug_5's response of its first
    tested line (``y``), of its first tested line in seed 0's public lines (``y_public``: only its public rows
    hold it, where the data are not centred on the pools), or the second gene of the first line (``x``).  The
    loader refuses a non-finite number in the files (``datasets.checks``), so this stands for a preprocessing step
    that made one."""
    prep = ds._prep()
    j = prep.drug_index["Drug_5"]
    tested = np.flatnonzero(prep.has[:, j])
    if where == "y_public":
        line = int(next(q for q in _public_lines(ds, 0) if prep.has[q, j]))
    else:
        line = int(tested[0])
    for a in ((prep.X_raw, prep.X) if where == "x" else (prep.Y_raw, prep.Y)):
        a.flags.writeable = True
        a[(line, 1) if where == "x" else (line, j)] = value


@pytest.mark.parametrize("bad", [None, ("y", np.inf), ("y", -np.inf), ("x", np.inf), ("y_public", np.inf)])
@pytest.mark.parametrize("kw", [dict(public_pool=4), dict(public_pool=4, centre="all", missing="before_split"),
                                dict(protocol="python", public_start=12), dict(protocol="matlab")])
def test_a_split_vouched_finite_is_one_whose_rows_are_finite(kw, bad):
    # ``Split.vouch_finite``: the dataset checks the rows its splits share once (``_finite_drugs``, ``_all_finite``)
    # and records ``nonfinite``'s None without reading a split's rows.  Every split it vouches for must be one the
    # full check passes, on clean data and on data with a non-finite response or expression value; and on clean
    # data it vouches for every split (else the check it saves is still paid)
    from dpexp.types import Split

    _fresh_memos()
    cache.clear("gdsc.prepared")
    ds = Gdsc(data_dir=FIX, d=5, test_pool=6, **kw)
    if bad:
        _plant(ds, *bad)
    vouched = checked = refused = 0
    max_public = 4 if "public_pool" in kw else 3
    try:
        for seed in (0, 1, 2):
            for sizes in [Sizes(n, u, 6, 12, max_public, 6) for n in (-1, 0, 3, 12) for u in (0, 2, max_public)]:
                for drug, sp in zip(DRUGS, ds.split_many(DRUGS, sizes, np.random.default_rng(seed))):
                    if isinstance(sp, Exception):
                        continue
                    fresh = Split(sp.X_private, sp.y_private, sp.X_public, sp.y_public, sp.X_test,
                                  sp.y_test).nonfinite()
                    if "_nonfinite" in sp.__dict__:
                        vouched += 1
                        assert fresh is None, (drug, sizes, fresh)
                    else:
                        checked += 1
                        refused += fresh is not None
                    assert sp.nonfinite() == fresh
    finally:
        _fresh_memos()
        cache.clear("gdsc.prepared")   # the planted value stays out of the other tests
    assert vouched > 0
    if bad is None:
        assert checked == 0
    else:   # the planted value reaches some split, which names it
        assert refused > 0
