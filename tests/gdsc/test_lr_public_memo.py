"""lr_public's memo of fixed-precision weights (``baselines.PublicOnlyLR.run_many``): a drug's public fit solved once
for every size of the grid, each cell's output and spends equal to the fresh fit's to the bit, keyed exactly."""

import numpy as np
import pytest

from dpexp import cache, registry
from dpexp.privacy.ledger import PrivacyLedger
from dpexp.types import Split
from gdsc_bitwise import make_split

pytestmark = pytest.mark.usefixtures("isolated_cache")


def _run(alg, splits, trials=1):
    lgs = [PrivacyLedger(np.random.default_rng(k)) for k in range(len(splits))]
    return alg.run_many(splits, 2.0, 0.0, lgs, trials), lgs


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
