"""The fast paths of the GDSC fits against their plain twins, to the bit: the fixed-precision fit with its
covariance (one floor, not two), the Cholesky certificate that skips the floor's eigen-decomposition for exact Gram
matrices, the split-by-split clipping of release_batch, and the memoised Gamma-prior fit that lr and rlr share
where rlr clips nothing (n_private = 0)."""

from __future__ import annotations

import numpy as np
import pytest

from dpexp import cache
from dpexp.families.gdsc.algorithms.baselines import RobustLR
from dpexp.families.gdsc.algorithms.lr import BayesLR
from dpexp.families.gdsc.model import exact_gamma_weights, fit_posterior, fit_weights
from dpexp.families.gdsc.release_batch import RowBlocks
from dpexp.models.bayes_lr import certified_psd, posterior_mean_fixed, symmetric_psd_floor
from dpexp.models.vb import fit_vb
from dpexp.privacy.ledger import PrivacyLedger
from gdsc_bitwise import same, split

pytestmark = pytest.mark.usefixtures("isolated_cache")


def _stack(seed: int, n: int, d: int = 4, k: int = 5, noise: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """k Gram matrices of n rows (plus symmetric noise of that scale: indefinite ones) and their X'y."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(k, n, d))
    XX = np.swapaxes(X, -1, -2) @ X
    E = rng.normal(scale=noise, size=(k, d, d))
    return XX + E + np.swapaxes(E, -1, -2), np.einsum("knd,kn->kd", X, rng.normal(size=(k, n)))


@pytest.mark.parametrize("solver", ["psd_floor", "direct"])
@pytest.mark.parametrize("noise", [0.0, 3.0])
def test_fixed_fit_with_covariance_equals_its_two_floors(solver, noise):
    """fit_posterior(prior='fixed') = posterior_mean_fixed and inv(λ0 I + λ floor(XX)), each floor its own call."""
    XX, Xy = _stack(1, 6, noise=noise)
    XX = XX[:, None].repeat(2, axis=1)   # (splits, trials, d, d), as rplr fits them
    Xy = Xy[:, None].repeat(2, axis=1)
    mean, cov = fit_posterior(XX, Xy, np.ones((5, 2)), np.full((5, 1), 6.0), "fixed", 0.7, 1.3, solver=solver)
    S = symmetric_psd_floor(XX) if solver == "psd_floor" else 0.5 * (XX + np.swapaxes(XX, -1, -2))
    same(mean, posterior_mean_fixed(XX, Xy, 0.7, 1.3, solver))
    same(cov, np.linalg.inv(1.3 * np.eye(4) + 0.7 * S))
    assert fit_posterior(XX, Xy, None, None, "fixed", 0.7, 1.3, solver=solver, with_cov=False)[1] is None
    with pytest.raises(ValueError, match="solver"):
        fit_posterior(XX, Xy, None, None, "fixed", 0.7, 1.3, solver="qr")


@pytest.mark.parametrize("case", ["gram", "rank_deficient", "indefinite", "nan", "zero", "one_bad"])
def test_certified_floor_equals_the_eigen_decomposition(case):
    """symmetric_psd_floor(certify=True) returns the same floats as without; the certificate holds for clear
    Gram matrices only (never for a matrix whose eigh has an eigenvalue below 0)."""
    n = {"rank_deficient": 3, "indefinite": 2}.get(case, 30)
    XX, _ = _stack(2, n, noise=2.0 if case == "indefinite" else 0.0)
    if case == "nan":
        XX[1, 0, 0] = np.nan
    if case == "zero":
        XX[2] = 0.0
    if case == "one_bad":   # one rank-deficient matrix among clear ones: the whole stack is decomposed
        XX[3] = _stack(3, 2)[0][0]
    assert certified_psd(XX) == (case == "gram")
    if case == "gram":
        assert np.all(np.linalg.eigh(XX)[0] > 0)
    if case == "nan":   # eigh raises, certified or not
        for certify in (True, False):
            with pytest.raises(np.linalg.LinAlgError):
                symmetric_psd_floor(XX, certify=certify)
        return
    same(symmetric_psd_floor(XX, certify=True), symmetric_psd_floor(XX))
    Xy = np.ones(XX.shape[:-1])
    same(posterior_mean_fixed(XX, Xy, certify=True), posterior_mean_fixed(XX, Xy))


@pytest.mark.parametrize("T", [1, 3])
def test_splitwise_clip_equals_the_broadcast_clip(T):
    """RowBlocks._clipped_rows split by split (long splits) = the one broadcast call, and the statistics built on
    it; float32 rows and infinite bounds take the broadcast call."""
    rng = np.random.default_rng(4)
    counts = [300, 0, 280, 260, 700, 1]
    Xs = [rng.normal(size=(c, 3)) for c in counts]
    ys = [rng.normal(scale=2.0, size=c) for c in counts]
    B = RowBlocks(Xs, ys)
    bx, by = rng.uniform(0.2, 0.6, (6, T)), rng.uniform(0.5, 1.5, (6, T))
    assert B.X.shape[0] >= B.CLIP_SPLITWISE_ROWS * 6 * T or T > 1
    fast = B._clipped_rows(bx, by)
    B.CLIP_SPLITWISE_ROWS = 10**9
    plain = B._clipped_rows(bx, by)
    same(list(fast), list(plain))
    stats_plain = B.clipped_stats(bx, by, True, T), B.clipped_stats(bx[:, 0], by[:, 0], False, T)
    B.CLIP_SPLITWISE_ROWS = 0
    same(list(B._clipped_rows(bx, by)), list(plain))
    same([B.clipped_stats(bx, by, True, T), B.clipped_stats(bx[:, 0], by[:, 0], False, T)], list(stats_plain))
    bx[2, 0] = np.inf   # not finite: the broadcast call
    rbx, rby = B._per_row(bx).T[:, :, None], B._per_row(by).T
    same(list(B._clipped_rows(bx, by)), [np.clip(B.X[None], -rbx, rbx), np.clip(B.y[None], -rby, rby)])
    B32 = RowBlocks([X.astype(np.float32) for X in Xs], ys)   # float32 rows: clipped in float64 as before
    B32.CLIP_SPLITWISE_ROWS = 0
    b3 = np.full((6, 1), 0.3)
    rb = B32._per_row(b3).T[:, :, None]
    same(B32._clipped_rows(b3, by[:, :1])[0], np.clip(B32.X[None], -rb, rb))


def test_exact_gamma_weights_memo_equals_the_plain_fit():
    XX, Xy = _stack(5, 8)
    yy, n = np.full(5, 9.0), np.full(5, 8.0)
    w = exact_gamma_weights(XX, Xy, yy, n)
    same(w, fit_vb(XX, Xy, yy, n).mean)
    same(w, fit_weights(XX, Xy, yy, n, "gamma", 1.0, 1.0))
    assert not w.flags.writeable
    assert exact_gamma_weights(XX.copy(), Xy.copy(), yy, n) is w   # equal values: the memo's entry
    assert exact_gamma_weights(XX, Xy, yy + 1.0, n) is not w


@pytest.mark.parametrize("trials", [1, 2])
def test_lr_and_rlr_without_private_rows_share_the_plain_fit(trials):
    """At n_private = 0 lr (prior: gamma) and rlr fit equal statistics: the second's fit is the first's memo entry,
    and both equal their fits with the memo cleared (each alone)."""
    splits = [split(k, n=0) for k in range(4)]
    lr, rlr = BayesLR(prior="gamma"), RobustLR(p1=0.35, p2=0.6, p3=0.05)

    def run(alg):
        lgs = [PrivacyLedger(np.random.default_rng(k)) for k in range(4)]
        return alg.run_many(splits, 2.0, 0.0, lgs, trials)

    a, b = run(lr), run(rlr)
    cache.clear()
    b_alone = run(rlr)
    cache.clear()
    a_alone = run(lr)
    for x, y, x1, y1 in zip(a, b, a_alone, b_alone):
        same(x.coef, y.coef)
        same(x.coef, x1.coef)
        same(y.coef, y1.coef)
        same(y.predictions, y1.predictions)
        same(y.extras, y1.extras)


def _equal_n_splits():
    """Splits of repeated sizes (stacked products per n), one alone of its n, two without private rows, and a
    d = 4 group beside the d = 3 one."""
    ss = [split(k, n=n) for k, n in enumerate([30, 30, 12, 30, 12, 0, 0, 7, 30])]
    ss += [split(20, n=25, d=4), split(21, n=25, d=4)]
    for s in ss[5:]:
        s.meta.update(sigma_x=0.3, sigma_y=1.4)
    return ss


@pytest.mark.parametrize("trials", [1, 3])
@pytest.mark.parametrize("prior", ["fixed", "gamma"])
def test_lr_block_statistics_equal_the_per_split_code(prior, trials):
    from test_reference_batch import check, old_lr
    alg = BayesLR(prior=prior)
    splits = _equal_n_splits()
    ln = [PrivacyLedger(np.random.default_rng(k)) for k in range(len(splits))]
    lo = [PrivacyLedger(np.random.default_rng(k)) for k in range(len(splits))]
    check(alg.run_many(splits, 2.0, 0.0, ln, trials), old_lr(alg, splits, lo, trials), ln, lo)


@pytest.mark.parametrize("trials", [1, 3])
@pytest.mark.parametrize("params", [dict(omega_x=0.5, omega_y=0.5, p1=0.35, p2=0.6, p3=0.05, prior="fixed"),
                                    dict(omega_x=0.8, omega_y=0.3, p1=0.35, p2=0.6, p3=0.05, clip_public=True),
                                    dict(omega_x=0.5, omega_y=0.5, p1=0.35, p2=0.6, p3=0.05)])
def test_rlr_block_statistics_equal_the_per_split_code(params, trials, monkeypatch):
    """RowBlocks of equal n = the per-split reference = the split-by-split path (``_row_stats``, which float32
    rows take)."""
    from test_reference_batch import check, old_rlr
    alg = RobustLR(**params)
    splits = _equal_n_splits()

    def run(f):
        lg = [PrivacyLedger(np.random.default_rng(k)) for k in range(len(splits))]
        return f(splits, lg), lg

    (new, ln), (old, lo) = run(lambda s, lg: alg.run_many(s, 2.0, 0.0, lg, trials)), \
        run(lambda s, lg: old_rlr(alg, s, lg, trials))
    check(new, old, ln, lo)
    monkeypatch.setattr(RobustLR, "_block_stats", staticmethod(lambda *a: None))
    rows, lr_ = run(lambda s, lg: alg.run_many(s, 2.0, 0.0, lg, trials))
    check(new, rows, ln, lr_)
    monkeypatch.undo()
    f32 = [type(s)(s.X_private.astype(np.float32), s.y_private, s.X_public.astype(np.float32), s.y_public,
                   s.X_test, s.y_test, s.meta) for s in splits]
    assert RobustLR._block_stats(f32, list(range(9)), {k: (1.0, 1.0) for k in range(9)}, False) is None
    lg32 = [PrivacyLedger(np.random.default_rng(k)) for k in range(len(f32))]
    assert not any(isinstance(o, Exception) for o in alg.run_many(f32, 2.0, 0.0, lg32, trials))


@pytest.mark.parametrize("trials", [1, 3])
@pytest.mark.parametrize("params", [dict(sigma="dp"), dict(sigma="data", clip_public=True), dict(prior="fixed"),
                                    dict(sigma="data")])
def test_rplr_naive_group_from_the_batch_arrays_equals_restacking(params, trials, monkeypatch):
    """rplr's run_many sums a batched release's group arrays (``_whole_batch``) = stacking its rows back, and a
    batch with a split without private rows mixed in takes the stacking path."""
    from dpexp.families.gdsc.algorithms import rplr as rplr_mod
    alg = rplr_mod.RobustPrivateLR(p1=0.35, p2=0.6, p3=0.05, omega_x=1.3, omega_y=0.9, **params)
    for splits in ([split(k, n=n) for k, n in enumerate([30, 30, 12, 25])],
                   [split(k, n=n) for k, n in enumerate([30, 0, 12, 25])]):
        def run():
            lg = [PrivacyLedger(np.random.default_rng(k)) for k in range(len(splits))]
            return alg.run_many(splits, 2.0, 0.0, lg, trials), lg
        (a, la) = run()
        monkeypatch.setattr(rplr_mod, "_whole_batch", lambda rs: None)
        (b, lb) = run()
        monkeypatch.undo()
        for x, y, l1, l2 in zip(a, b, la, lb):
            same(x.predictions, y.predictions)
            same(x.coef, y.coef)
            same(x.extras, y.extras)
            same(x.coef_interval, y.coef_interval)
            assert repr(l1.spends) == repr(l2.spends)


@pytest.mark.parametrize("T", [1, 3])
def test_blockwise_clipped_stats_equal_the_broadcast_clip_path(T):
    """clipped_stats with per-trial bounds, each group clipped split by split into its stack and multiplied there
    (``_clipped_stats_blockwise``), equals the path through one broadcast clip of all rows to the bit: groups of
    equal n (G > 1), splits alone of their n, an empty split."""
    rng = np.random.default_rng(7)
    counts = [300, 300, 0, 280, 300, 280, 700, 1, 300]
    Xs = [rng.normal(size=(c, 4)) for c in counts]
    ys = [rng.normal(scale=2.0, size=c) for c in counts]
    B = RowBlocks(Xs, ys)
    bx, by = rng.uniform(0.2, 0.6, (9, T)), rng.uniform(0.5, 1.5, (9, T))
    B.CLIP_SPLITWISE_ROWS = 0
    assert B._splitwise(bx, by)
    fast = B.clipped_stats(bx, by, True, T)
    B.CLIP_SPLITWISE_ROWS = 10**9
    plain = B.clipped_stats(bx, by, True, T)
    same(list(fast), list(plain))
    for i, (X, y) in enumerate(zip(Xs, ys)):   # and each split's own statistics of its clipped rows
        Xc = np.clip(np.broadcast_to(X, (T,) + X.shape), -bx[i][:, None, None], bx[i][:, None, None])
        yc = np.clip(np.broadcast_to(y, (T,) + y.shape), -by[i][:, None], by[i][:, None])
        XcT = np.swapaxes(Xc, -1, -2)
        same(fast[0][i], XcT @ Xc)


def test_one_pair_of_bounds_clips_all_rows_at_once_equal_per_split():
    """clipped_stats with one bound pair for every split (plr's public bounds) clips all rows in one call each: the
    statistics equal each split's own clip and products and the per-row-bounds path to the bit (on a shared layout
    whose σ sums were taken at the same bounds too); bounds that differ in one bit take the other path."""
    from dpexp.families.gdsc.release_batch import shared_rows
    from dpexp.families.gdsc.stats import clip as stats_clip

    rng = np.random.default_rng(9)
    counts = [30, 30, 12, 30, 1, 12]
    Xs = [rng.normal(size=(c, 3)) for c in counts]
    ys = [rng.normal(scale=4.0, size=c) for c in counts]
    rows = shared_rows(Xs, ys, None, ())
    sums = rows.sigma_sums(0.5, 2.0)
    bx, by = np.full(6, 0.5), np.full(6, 2.0)
    XX, Xy, yy = rows.clipped_stats(bx, by, False, 1)
    plain = RowBlocks(Xs, ys)
    Xc, yc = plain._clipped_rows(bx[:, None], by[:, None])
    same([XX, Xy, yy], list(plain.stats(Xc[0], yc[0])))
    for i, (X, y) in enumerate(zip(Xs, ys)):
        Xi, yi = stats_clip(X, y, 0.5, 2.0)
        same(XX[i], Xi.T @ Xi)
        same(Xy[i], Xi.T @ yi)
        q = np.clip(X, -0.5, 0.5) ** 2, np.clip(y, -2.0, 2.0) ** 2
        assert sums[i].tolist() == [float(np.sum(q[0])), float(np.sum(q[1]))]
    bx2 = bx.copy()
    bx2[3] = np.nextafter(0.5, 1.0)
    got = RowBlocks(Xs, ys).clipped_stats(bx2, by, False, 1)
    Xc2, yc2 = plain._clipped_rows(bx2[:, None], by[:, None])
    same(list(got), list(plain.stats(Xc2[0], yc2[0])))
