"""lr_public's memo of fixed-precision weights (``baselines.PublicOnlyLR.run_many``): a drug's public fit solved once
for every size of the grid, each cell's output and spends equal to the fresh fit's to the bit, keyed exactly."""

import numpy as np
import pytest

from dpexp import cache, registry
from dpexp.privacy.ledger import PrivacyLedger
from dpexp.types import Split
from gdsc_bitwise import make_split

pytestmark = pytest.mark.usefixtures("isolated_cache")


def _run(alg, splits, trials=1, chunk=None):
    lgs = [PrivacyLedger(np.random.default_rng(k)) for k in range(len(splits))]
    return alg.run_many(splits, 2.0, 0.0, lgs, trials, chunk=chunk), lgs


def _same(a, b, la, lb):
    assert not isinstance(a, Exception) and not isinstance(b, Exception)
    assert a.predictions.tobytes() == b.predictions.tobytes() and a.coef.tobytes() == b.coef.tobytes()
    assert a.predictions.shape == b.predictions.shape and a.guarantee == b.guarantee
    assert repr(la.spends) == repr(lb.spends)


@pytest.mark.parametrize("trials", [1, 3])
def test_memoised_fit_equals_the_fresh_fit(trials):
    """The same public rows at another size (other private rows) and in another batch: served from the memo, equal
    to a fresh fit to the bit; a different λ, other responses or rows are fitted anew."""
    alg = registry.get("algorithm", "lr_public")()
    splits = [make_split(n, 6, 4, seed) for n, seed in ((20, 1), (0, 2), (35, 3))]
    first, l1 = _run(alg, splits, trials)
    assert len(cache._MEMOS["gdsc.lr_public_weights"]) == 3
    # the same public and test rows (copies) with other private rows, as at another size of the grid
    other = [Split(make_split(n, 6, 4, 9).X_private, make_split(n, 6, 4, 9).y_private, t.X_public.copy(),
                   t.y_public.copy(), t.X_test.copy(), t.y_test, dict(t.meta)) for n, t in ((50, splits[0]),
                                                                                          (5, splits[2]))]
    again, l2 = _run(alg, other, trials)
    assert len(cache._MEMOS["gdsc.lr_public_weights"]) == 3   # served from the memo
    for a, b, la, lb in zip(again, (first[0], first[2]), l2, (l1[0], l1[2])):
        _same(a, b, la, lb)
    cache.clear("gdsc.lr_public_weights")
    fresh, l3 = _run(alg, other, trials)
    for a, b, la, lb in zip(again, fresh, l2, l3):
        _same(a, b, la, lb)
    # another λ, other responses: new entries
    _run(registry.get("algorithm", "lr_public")(lam=2.0), other, trials)
    moved = other[0]
    moved.y_public = moved.y_public + 1.0
    _run(alg, [moved], trials)
    assert len(cache._MEMOS["gdsc.lr_public_weights"]) == 2 + 2 + 1


def test_memoised_weights_are_read_only_and_outputs_fresh():
    alg = registry.get("algorithm", "lr_public")()
    splits = [make_split(10, 6, 4, 1), make_split(10, 6, 4, 2)]
    a, _ = _run(alg, splits)
    b, _ = _run(alg, splits)
    for o, p in zip(a, b):
        assert o.coef is not p.coef and o.coef.flags.writeable and o.predictions.flags.writeable
    assert all(not w.flags.writeable for w in cache._MEMOS["gdsc.lr_public_weights"].values())


def test_gamma_prior_is_not_memoised():
    alg = registry.get("algorithm", "lr_public")(prior="gamma")
    _run(alg, [make_split(10, 6, 4, 1), make_split(10, 6, 4, 2)])
    assert not cache._MEMOS.get("gdsc.lr_public_weights")


@pytest.mark.parametrize("d", [None, 6])
def test_fits_kept_in_the_chunk_equal_fresh_fits(d):
    """A drug's splits at every size of a chunk (nested sizes) have the same public and test rows (its view's rows
    too): the weights and predictions kept in the chunk's scratch under their names for the later sizes equal a
    fresh run's to the bit, outputs fresh and writable, spends alike; a run without a chunk fits anew."""
    from dpexp.chunk import ChunkRows

    from pathlib import Path

    from dpexp.families.gdsc.datasets.gdsc import Gdsc
    from dpexp.types import Sizes

    ds = Gdsc(data_dir=Path(__file__).parent / "fixtures", d=5, test_pool=6, protocol="python", public_start=12)
    alg = registry.get("algorithm", "lr_public")(d=d)
    drugs = ["Drug_1", "Drug_5", "Drug_1001"]
    sizes = [ds.split_many(drugs, Sizes(n, 3, 6, 12, 3, 6), np.random.default_rng(3)) for n in (0, 4, 9)]
    scratch: dict = {}
    chunks = [ChunkRows(tuple(drugs), (6, 3, n), True, scratch) for n in (0, 4, 9)]
    runs = [_run(alg, sp, chunk=c) for sp, c in zip(sizes, chunks)]
    assert len(scratch["gdsc.lr_public_fits"]) == len(drugs)            # one entry per drug, for all sizes
    for (outs, lgs), sp in zip(runs, sizes):
        cache.clear()
        fresh, fl = _run(alg, sp)
        for a, b, la, lb in zip(outs, fresh, lgs, fl):
            _same(a, b, la, lb)
            assert a.predictions.flags.writeable and a.coef.flags.writeable
    assert runs[1][0][0].predictions is not runs[2][0][0].predictions
    # another λ on the same arrays: its own entries, its own fit
    other, _ = _run(registry.get("algorithm", "lr_public")(d=d, lam=3.0), sizes[2], chunk=chunks[2])
    assert len(scratch["gdsc.lr_public_fits"]) == 2 * len(drugs)
    assert all(o.coef.tobytes() != r.coef.tobytes() for o, r in zip(other, runs[2][0]))
