"""rlr's and lr's run_many (rows of all splits stacked, clipped in one call with per-row bounds; rlr's thresholds
asked once per (n, d, σ)) against the per-split code they replace, kept here verbatim as the reference: equal to
the bit (predictions, coefficients, extras, guarantee, spends) — splits of different d and sizes, no private rows,
shared and distinct σ, NaN σ, a split whose rows disagree in width (fails alone), trials > 1, clip_public on/off,
fixed and Gamma priors."""

import numpy as np
import pytest

from dpexp.errors import UserError
from dpexp.families.gdsc.algorithms.baselines import RobustLR, _fit
from dpexp.families.gdsc.algorithms.lr import BayesLR
from dpexp.families.gdsc.algorithms.rplr import RobustPrivateLR
from dpexp.families.gdsc.model import fit_weights
from dpexp.families.gdsc.stats import sufficient_stats
from dpexp.privacy.ledger import PrivacyLedger, as_ledger
from dpexp.types import Output, Split
from gdsc_bitwise import same, split


def old_rlr(alg: RobustLR, splits, ledgers, trials):
    ledgers = [as_ledger(lg) for lg in ledgers]
    for lg in ledgers:
        lg.not_dp("non-private baseline")
    kw = alg.params.model_dump(exclude={"tune_epsilon"}, exclude_unset=True)
    ref = RobustPrivateLR(**kw)
    out = [UserError("not run")] * len(splits)
    by_d = {}
    for k, s in enumerate(splits):
        try:
            X, y, B_x, B_y = alg._clipped(ref, s)
            by_d.setdefault(X.shape[1], []).append((k, X, y, B_x, B_y))
        except Exception as exc:
            out[k] = exc
    for d, items in by_d.items():
        XX = np.stack([X.T @ X for _, X, _, _, _ in items])
        Xy = np.stack([X.T @ y for _, X, y, _, _ in items])
        yy = np.array([y @ y for _, _, y, _, _ in items])
        n = np.array([float(len(y)) for _, _, y, _, _ in items])
        try:
            W = _fit(XX, Xy, yy, n, ref.params.prior, ref.params.lam, ref.params.lam0)
        except Exception as exc:
            for it in items:
                out[it[0]] = exc
            continue
        for (k, _, _, B_x, B_y), w in zip(items, W):
            Xt = splits[k].X_test
            out[k] = Output(predictions=np.broadcast_to(Xt @ w, (trials, Xt.shape[0])).copy(),
                            coef=np.broadcast_to(w, (trials, d)).copy(),
                            extras={"B_x": float(B_x) if np.isfinite(B_x) else float("nan"),
                                    "B_y": float(B_y) if np.isfinite(B_y) else float("nan")},
                            guarantee=ledgers[k].guarantee())
    return out


def old_lr(alg: BayesLR, splits, ledgers, trials):
    p = alg.params
    out, by_d, res = [], {}, {}
    for k, s in enumerate(splits):
        by_d.setdefault(s.d, []).append(k)
    for d, ks in by_d.items():
        st = [sufficient_stats(splits[k].X_train, splits[k].y_train) for k in ks]
        W = fit_weights(np.stack([a[0] for a in st]), np.stack([a[1] for a in st]), np.array([a[2] for a in st]),
                        np.array([float(len(splits[k].y_train)) for k in ks]), p.prior, p.lam, p.lam0)
        res.update(zip(ks, W))
    for k, s in enumerate(splits):
        w = res[k]
        ledger = as_ledger(ledgers[k])
        ledger.not_dp("non-private baseline")
        out.append(Output(predictions=np.broadcast_to(s.X_test @ w, (trials, s.X_test.shape[0])).copy(),
                          coef=np.broadcast_to(w, (trials, w.size)).copy(), guarantee=ledger.guarantee()))
    return out


def mixed(with_bad: bool) -> list[Split]:
    ss = [split(1, n=40), split(2, n=0), split(3, n=75, d=4), split(4, n=12, n_pub=3), split(5, n=30, d=4),
          split(6, n=1), split(7, n=50, scale=3.0), split(8, n=20)]
    for s in ss[4:]:   # several splits sharing σ (the paper path pools it), one with NaN σ
        s.meta.update(sigma_x=0.3, sigma_y=1.4)
    ss[7].meta["sigma_x"] = float("nan")
    if with_bad:   # public rows one column wider than the private ones: this split fails alone
        s = ss[3]
        ss[3] = Split(s.X_private, s.y_private, np.hstack([s.X_public, s.X_public[:, :1]]), s.y_public, s.X_test,
                      s.y_test, s.meta)
    return ss


def check(new, old, ln, lo):
    for k, (a, b) in enumerate(zip(new, old)):
        if isinstance(a, Exception) or isinstance(b, Exception):
            assert type(a) is type(b) and str(a) == str(b), k
            continue
        same(a.predictions, b.predictions)
        same(a.coef, b.coef)
        same(a.extras, b.extras)
        assert a.guarantee == b.guarantee
        assert repr(ln[k].spends) == repr(lo[k].spends)


@pytest.mark.parametrize("trials", [1, 3])
@pytest.mark.parametrize("params", [
    {"omega_x": 0.5, "omega_y": 0.5, "p1": 0.35, "p2": 0.6, "p3": 0.05, "prior": "fixed"},
    {"omega_x": 0.8, "omega_y": 0.3, "p1": 0.35, "p2": 0.6, "p3": 0.05, "prior": "fixed", "clip_public": True},
    {"omega_x": 0.5, "omega_y": 0.5, "p1": 0.35, "p2": 0.6, "p3": 0.05, "prior": "gamma", "clip_public": True},
    {"omega_x": 0.5, "omega_y": 0.5, "p1": 0.35, "p2": 0.6, "p3": 0.05, "prior": "gamma"},
    {"p1": 0.35, "p2": 0.6, "p3": 0.05, "prior": "fixed", "tune_reps": (2, 2), "clip_public": True}])
@pytest.mark.parametrize("with_bad", [False, True])
def test_rlr_equals_the_per_split_code(params, trials, with_bad):
    alg = RobustLR(**params)
    splits = mixed(with_bad)
    ln = [PrivacyLedger(np.random.default_rng(k)) for k in range(len(splits))]
    lo = [PrivacyLedger(np.random.default_rng(k)) for k in range(len(splits))]
    new, old = alg.run_many(splits, 2.0, 0.0, ln, trials), old_rlr(alg, splits, lo, trials)
    assert isinstance(new[3], Exception) == with_bad
    assert sum(isinstance(o, Exception) for o in new) == with_bad
    check(new, old, ln, lo)


@pytest.mark.parametrize("trials", [1, 3])
@pytest.mark.parametrize("prior", ["fixed", "gamma"])
def test_lr_equals_the_per_split_code(prior, trials):
    alg = BayesLR(prior=prior)
    splits = mixed(False)
    ln = [PrivacyLedger(np.random.default_rng(k)) for k in range(len(splits))]
    lo = [PrivacyLedger(np.random.default_rng(k)) for k in range(len(splits))]
    check(alg.run_many(splits, 2.0, 0.0, ln, trials), old_lr(alg, splits, lo, trials), ln, lo)


def test_clip_parts_equals_clipping_each_block():
    from dpexp.families.gdsc.algorithms.baselines import _clip_parts
    rng = np.random.default_rng(3)
    counts = [3, 0, 4, 2, 5, 1, 2]
    bounds = [0.5, 0.5, 0.5, np.inf, 0.2, 0.2, np.inf]
    A = rng.normal(size=(sum(counts), 3))
    A[1, 1] = np.nan
    want, at = [], 0
    for c, b in zip(counts, bounds):
        want.append(np.clip(A[at:at + c], -b, b))
        at += c
    got = A.copy()
    _clip_parts(got, counts, bounds)
    same(got, np.concatenate(want))
    y = A[:, 0].copy()
    _clip_parts(y, counts, bounds)
    same(y, np.concatenate(want)[:, 0])


def test_clip_into_equals_clip_parts_of_a_copy():
    # rlr's clipped copy of the shared training rows (train_rows._clip_into) = _clip_parts on a copy, to the bit:
    # empty blocks, runs of one bound merged, infinite bounds copied, NaN bounds and NaN entries
    from dpexp.families.gdsc.algorithms.baselines import _clip_parts
    from dpexp.families.gdsc.train_rows import _clip_into
    rng = np.random.default_rng(4)
    counts = [3, 0, 4, 2, 5, 1, 2, 3, 2]
    bounds = [0.5, 0.5, 0.5, np.inf, 0.2, 0.2, np.inf, np.nan, np.nan]
    A = rng.normal(size=(sum(counts), 3))
    A[1, 1] = np.nan
    A.flags.writeable = False
    for src in (A, A[:, 0].copy()):
        want = src.copy()
        _clip_parts(want, counts, bounds)
        got = _clip_into(src, counts, bounds)
        same(got, want)
        assert got.flags.writeable and not np.shares_memory(got, src)
