"""The public-only posteriors of many splits fitted as one batch (``model.public_posteriors``, used by narplr's
and AdaSSP's ``run_many`` for the splits without private rows): its values and the memo entries it fills are
``public_posterior``'s own fits of each split alone, to the bit (every field, its type, read-only flags), its
errors theirs, and the run_many outputs are the same as with a ``public_posterior`` call per split."""

from __future__ import annotations

import numpy as np
import pytest

from dpexp import cache
from dpexp.families.gdsc import model
from dpexp.families.gdsc.algorithms.adassp import AdaSSP
from dpexp.families.gdsc.algorithms.narplr import NoiseAwareRPLR
from gdsc_bitwise import ledgers as _ledgers, same as _same, split as _split

pytestmark = pytest.mark.usefixtures("isolated_cache")

FIELDS = ("mean", "cov", "a_lam", "b_lam", "a_lam0", "b_lam0", "n_iter", "converged", "n_floored", "resid_floored")


def _public_splits():
    """d = 3 splits with 1 to 40 public rows on scales over 3 decades (very different iteration counts), two with
    equal public rows (one fit), none (the prior), one with a NaN public row (its batch raises: left to the
    per-split fit), a d = 5 pair and a d = 2 split alone of its d."""
    ss = [_split(i, n=0, n_pub=m) for i, m in enumerate((1, 2, 5, 6, 13, 40, 7))]
    for s, c in zip(ss, (0.01, 1.0, 30.0, 1.0, 0.1, 3.0, 1.0)):
        s.X_public[:] *= c
    ss.append(_split(2, n=0, n_pub=5))                        # ss[2]'s public rows again
    ss[-1].X_public[:] *= 30.0
    ss.append(_split(20, n=0, n_pub=0))
    ss += [_split(21, n=0, n_pub=8, d=5), _split(22, n=0, n_pub=9, d=5), _split(23, n=0, n_pub=4, d=2)]
    nan = [_split(30, n=0, n_pub=6, d=4), _split(31, n=0, n_pub=6, d=4)]
    nan[0].X_public[2, 1] = np.nan
    return ss + nan


def _fit_or_error(s):
    try:
        return model.public_posterior(s.X_public, s.y_public)
    except Exception as exc:  # noqa: BLE001
        return type(exc)


def _one_by_one(Xs, ys):
    """public_posteriors' plain twin: a public_posterior call per split, its value or error."""
    out = []
    for X, y in zip(Xs, ys):
        try:
            out.append(model.public_posterior(X, y))
        except Exception as exc:  # noqa: BLE001
            out.append(exc)
    return out


def _same_fit(one, got):
    if isinstance(one, type):   # an error: the same error type (an instance or its type)
        assert (got if isinstance(got, type) else type(got)) is one
        return
    for f in FIELDS:
        x, y = getattr(one, f), getattr(got, f)
        assert type(x) is type(y), f
        _same(x, y)
    assert not got.mean.flags.writeable and not got.cov.flags.writeable


def test_public_posteriors_are_each_splits_own_fit():
    ss = _public_splits()
    alone = [_fit_or_error(s) for s in ss]
    order = list(cache._MEMOS["gdsc.public_posterior"])
    cache.clear()
    got = model.public_posteriors([s.X_public for s in ss], [s.y_public for s in ss])
    assert list(cache._MEMOS["gdsc.public_posterior"]) == order   # the same entries, in the same order of use
    for one, res in zip(alone, got):
        _same_fit(one, res)
    assert got[2] is got[7]
    again = model.public_posteriors([s.X_public for s in ss[::-1]], [s.y_public for s in ss[::-1]])
    assert all(a is b for a, b in zip(again[::-1], got) if not isinstance(a, Exception))   # memo hits
    for one, res in zip(alone, [_fit_or_error(s) for s in ss]):   # what public_posterior finds
        _same_fit(one, res)


@pytest.mark.parametrize("alg", [NoiseAwareRPLR(p1=0.35, p2=0.6, p3=0.05, omega_x=1.0, omega_y=1.0), AdaSSP()],
                         ids=["narplr", "adassp"])
@pytest.mark.parametrize("trials", [1, 3])
def test_run_many_outputs_equal_without_the_prefit(alg, trials, monkeypatch):
    """Splits without private rows (the prefit) among released ones, trials 1 and 3: every output, extras, spends
    and guarantee as with each public-only posterior fitted alone."""
    ss = _public_splits() + [_split(40, n=30), _split(41, n=25, n_pub=3), _split(42, n=20, d=5)]
    batches = []
    each = model.fit_vb_each
    monkeypatch.setattr(model, "fit_vb_each", lambda *a, **k: batches.append(len(a[2])) or each(*a, **k))
    got = alg.run_many(ss, 2.0, 0.0, lg_a := _ledgers(len(ss)), trials)
    # d = 3 and 5 public-only splits, a batch each (d = 2 alone); the d = 4 one with NaN rows is refused at the
    # estimator boundary (NonFiniteInput, components._finite_run_many) before any fit
    assert batches == [8, 2]
    cache.clear()
    import dpexp.families.gdsc.algorithms.adassp as ad
    import dpexp.families.gdsc.algorithms.narplr as na

    for mod in (ad, na):
        monkeypatch.setattr(mod, "public_posteriors", _one_by_one)
    ref = alg.run_many(ss, 2.0, 0.0, lg_b := _ledgers(len(ss)), trials)
    for o, r, la, lb in zip(got, ref, lg_a, lg_b):
        assert type(o) is type(r)
        if isinstance(r, Exception):
            assert str(o) == str(r)
            continue
        for f in ("predictions", "coef", "coef_interval", "pred_interval", "clip_bounds"):
            _same(getattr(o, f), getattr(r, f))
        _same(o.extras, r.extras)
        assert repr(o.guarantee) == repr(r.guarantee) and la.summary() == lb.summary()


def test_cache_contains_probes_without_touching_the_order_of_use():
    from dpexp import cache

    ns = "test.contains_probe"
    cache.clear(ns)
    assert not cache.contains(ns, "a")
    cache.memo(ns, "a", lambda: 1, maxsize=2)
    cache.memo(ns, "b", lambda: 2, maxsize=2)
    assert cache.contains(ns, "a") and not cache.contains(ns, "c")
    cache.memo(ns, "c", lambda: 3, maxsize=2)   # evicts the least recently used: "a" (the probe did not use it)
    assert not cache.contains(ns, "a") and cache.contains(ns, "b") and cache.contains(ns, "c")
    cache.clear(ns)
