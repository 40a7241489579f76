"""rplr's one release (``release_batch.release_group`` through ``release_many``; a single split is a batch of one)
held to a plain per-split reference (``rplr_reference``) at rtol = 1e-12 (the batch may square and sum in another
order: a few ulps), its spends, its failures (a split fails alone, with its message) and the batched Laplace helper
and intervals it uses."""

from __future__ import annotations

import numpy as np
import pytest

from dpexp.families.gdsc.algorithms.narplr import NoiseAwareRPLR
from dpexp.families.gdsc.algorithms.rplr import RobustPrivateLR
from dpexp.models.intervals import gaussian_intervals, gaussian_intervals_many
from dpexp.privacy.mechanisms import laplace, laplace_rows, standard_laplace_rows
from gdsc_bitwise import ledgers as _ledgers, same as _same, split as _split
from rplr_reference import reference_release

pytestmark = pytest.mark.usefixtures("isolated_cache", "opendp_noise_off")   # secure paths compared: conftest

EXPLICIT = dict(p1=0.35, p2=0.6, p3=0.05, omega_x=1.3, omega_y=0.9)
#: the batch against the plain reference: numpy may sum a split's products in another order than the reference
RTOL = 1e-12


def _splits():
    """Varying n (one split without private rows), one with d = 2 among d = 3 ones."""
    return [_split(1), _split(2, n=0), _split(3, n=17), _split(4, d=2), _split(5, n=55, n_pub=3), _split(6, n=1)]


@pytest.mark.parametrize("trials", [1, 3])
def test_laplace_rows_equal_separate_laplace_calls(trials):
    """One standard draw per cell, scaled per release, equals the cell's separate laplace calls to the bit, and
    records the same spends (per-trial sensitivities included)."""
    sens = np.array([[0.5, 2.0, 1.0][:trials], [3.0, 0.25, 4.0][:trials]])
    base = np.arange(8, dtype=float).reshape(2, 4)
    la, lb = _ledgers(2), _ledgers(2)
    sep = [(laplace(base[i], sens[i] if trials > 1 else float(sens[i, 0]), 0.7, la[i], size=trials, label="a"),
            laplace(1.5, 2.0, 0.3, la[i], size=trials, label="b")) for i in range(2)]
    L = standard_laplace_rows(lb, trials * 5)
    a = laplace_rows(np.broadcast_to(base[:, None], (2, trials, 4)), L[:, :4 * trials].reshape(2, trials, 4), sens,
                     0.7, lb, "a")
    b = laplace_rows(np.full((2, trials), 1.5), L[:, 4 * trials:], np.full(2, 2.0), np.array([0.3, 0.3]), lb, "b")
    for i in range(2):
        _same(sep[i][0], a[i])
        _same(sep[i][1], b[i])
        assert repr(la[i].spends) == repr(lb[i].spends)


def test_laplace_rows_rejects_bad_input_before_recording():
    lg = _ledgers(1)
    with pytest.raises(Exception, match="sensitivity"):
        laplace_rows(np.zeros((1, 1)), np.zeros((1, 1)), np.array([np.nan]), 1.0, lg)
    with pytest.raises(Exception, match="epsilon"):
        laplace_rows(np.zeros((1, 1)), np.zeros((1, 1)), np.array([1.0]), 0.0, lg)
    assert lg[0].spends == []


@pytest.mark.parametrize("value_shape, standard_shape", [((2, 3, 4), (2, 1, 4)),   # one draw reused over trials
                                                         ((2, 3, 4), (1, 3, 4)),   # ... over cells
                                                         ((2, 3), (2, 1)), ((2, 3), (2, 3, 1)), ((2, 3), (2, 4))])
def test_laplace_rows_rejects_a_standard_array_of_another_shape(value_shape, standard_shape):
    """A mis-sliced draw array must not broadcast (a draw used for several released numbers): ValueError, and
    no spend recorded."""
    lg = _ledgers(2)
    with pytest.raises(ValueError, match="shape"):
        laplace_rows(np.zeros(value_shape), np.ones(standard_shape), np.ones(2), 1.0, lg, "a")
    assert lg[0].spends == [] and lg[1].spends == []


def test_laplace_rows_rejects_sources_of_another_length():
    lg = _ledgers(3)
    with pytest.raises(ValueError, match="sources"):
        laplace_rows(np.zeros((2, 1)), np.ones((2, 1)), np.ones(2), 1.0, lg, "a")
    assert all(x.spends == [] for x in lg)


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=RTOL, atol=1e-12)


@pytest.mark.parametrize("trials", [1, 3])
@pytest.mark.parametrize("params", [dict(sigma="dp", **EXPLICIT), dict(sigma="data", **EXPLICIT),
                                    dict(sigma="dp", clip_public=True, **EXPLICIT),
                                    dict(sigma="data", clip_public=True, **EXPLICIT)])
def test_release_many_matches_the_per_split_reference(params, trials):
    """Each split's release in a batch (varying n and d, one without private rows) equals the plain per-split
    reference drawn from the same stream, at RTOL; its spends are the reference's releases (labels, ε, Δ₁)."""
    alg = RobustPrivateLR(**params)
    splits = _splits()
    lgs = _ledgers(len(splits))
    rels = alg.release_many(splits, 1.5, lgs, trials)
    for i, (s, r, lg) in enumerate(zip(splits, rels, lgs)):
        assert not isinstance(r, Exception), r
        if s.X_private.shape[0] == 0:
            assert r.B_x is None and not r.XX.any() and [sp.mechanism for sp in lg.spends] == ["public only"]
            continue
        ref = reference_release(alg, s, 1.5, np.random.default_rng(100 + i), trials)
        for f in ("XX", "Xy", "yy"):
            _close(getattr(r, f), ref[f])
        _close(np.broadcast_to(r.B_x, (trials,)), ref["B_x"])
        _close(np.broadcast_to(r.B_y, (trials,)), ref["B_y"])
        labels = [sp.label for sp in lg.spends if sp.mechanism == "laplace"]
        assert labels == (["sigma_x", "sigma_y"] if params["sigma"] == "dp" else []) + ["X'X", "X'y", "y'y"]
        assert lg.guarantee().kind == ("pure" if params["sigma"] == "dp" else "none")
        if params["sigma"] == "dp":
            assert lg.guarantee().epsilon == pytest.approx(1.5)


@pytest.mark.parametrize("sigma", ["dp", "data"])
def test_a_split_releases_the_same_alone_or_in_a_batch(sigma):
    """A split is a batch of one: its release alone equals its release among others (same draws, RTOL) and the
    spends are equal."""
    alg = RobustPrivateLR(sigma=sigma, **EXPLICIT)
    splits = _splits()
    many = alg.release_many(splits, 1.5, _ledgers(len(splits)), 2)
    lone = _ledgers(len(splits))
    for i, (s, r) in enumerate(zip(splits, many)):
        one = alg.release(s, 1.5, lone[i], 2)
        for f in ("XX", "Xy", "yy"):
            _close(getattr(one, f), getattr(r, f))
        assert one.extras.keys() == r.extras.keys()


def test_release_many_secure_noise_matches_the_reference_draw_count():
    """Secure noise: each cell draws from its own secure source; the release is finite and the spends are those of
    the seeded run (the draws differ, the accounting does not)."""
    alg = RobustPrivateLR(sigma="dp", **EXPLICIT)
    splits = _splits()
    la, lb = _ledgers(len(splits), secure=True), _ledgers(len(splits))
    sec, seeded = alg.release_many(splits, 1.5, la, 2), alg.release_many(splits, 1.5, lb, 2)
    for r1, r2, l1, l2 in zip(sec, seeded, la, lb):
        assert np.all(np.isfinite(r1.XX))
        sec_spends = [(sp.label, sp.epsilon) for sp in l1.spends if sp.label in ("X'X", "X'y", "y'y")]
        seeded_spends = [(sp.label, sp.epsilon) for sp in l2.spends if sp.label in ("X'X", "X'y", "y'y")]
        assert [lb for lb, _ in sec_spends] == [lb for lb, _ in seeded_spends]
        # OpenDP's map (secure: dpexp.privacy.fp_safe) is Δ/b rounded up: equal to an ulp
        assert [e for _, e in sec_spends] == pytest.approx([e for _, e in seeded_spends], rel=1e-15)


def test_release_many_nan_rows_fail_that_split_only_and_bad_epsilon_fails_all():
    """sigma: dp with NaN private rows: σ̂ is released (and spent) and the split fails with one line; the others
    are released.  ε ≤ 0 fails every split before any draw."""
    alg = RobustPrivateLR(sigma="dp", **EXPLICIT)
    bad = _split(9)
    bad.X_private[0, 0] = np.nan
    splits = [_split(1), bad]
    lgs = _ledgers(2)
    out = alg.release_many(splits, 1.5, lgs, 2)
    assert not isinstance(out[0], Exception)
    assert isinstance(out[1], Exception) and "not finite" in str(out[1])
    lgs = _ledgers(2)
    out = alg.release_many(splits, -1.0, lgs, 1)
    assert all(isinstance(o, Exception) and "epsilon" in str(o) for o in out)
    assert all(lg.spends == [] for lg in lgs)


@pytest.mark.parametrize("clip_public", [False, True])
def test_release_many_overflowing_data_sigma_fails_that_split_only(clip_public):
    """sigma: data with a huge σ_x in one split's meta: B_x² overflows; that split fails before any draw, the
    others are released as the reference."""
    alg = RobustPrivateLR(sigma="data", clip_public=clip_public, **EXPLICIT)
    splits = [_split(1), _split(3, n=17), _split(5, n=55)]
    splits[1].meta["sigma_x"] = 1e200
    lgs = _ledgers(3)
    out = alg.release_many(splits, 1.5, lgs, 2)
    assert [type(o).__name__ for o in out] == ["Release", "UserError", "Release"]
    assert lgs[1].spends == []
    _close(out[2].XX, reference_release(alg, splits[2], 1.5, np.random.default_rng(102), 2)["XX"])
    got = alg.run_many(splits, 1.5, 0.0, _ledgers(3), 2)
    assert [type(o).__name__ for o in got] == ["Output", "UserError", "Output"]


@pytest.mark.parametrize("omegas", [dict(omega_x=6e153), dict(omega_y=1e154)])
def test_release_many_dp_bounds_overflowing_after_the_sigma_draws_fail_those_splits_only(omegas):
    """sigma: dp with thresholds so large that, at some splits' σ̂ draws, a sensitivity overflows: those splits
    fail (their σ̂ spends recorded), the others are released."""
    alg = RobustPrivateLR(sigma="dp", **{**EXPLICIT, **omegas})
    splits = [_split(1), _split(3, n=17), _split(5, n=55), _split(6, n=30)]
    lgs = _ledgers(4)
    with np.errstate(over="ignore", invalid="ignore"):
        out = alg.release_many(splits, 1.5, lgs, 2)
    failed = [i for i, o in enumerate(out) if isinstance(o, Exception)]
    assert failed and len(failed) < 4
    for i in failed:
        assert "not finite" in str(out[i])
        assert [sp.label for sp in lgs[i].spends] == ["sigma_x", "sigma_y"]
    for i in set(range(4)) - set(failed):   # released (their noise may still overflow at such bounds)
        assert type(out[i]).__name__ == "Release" and len(lgs[i].spends) == 5


@pytest.mark.parametrize("clip_public", [False, True])
@pytest.mark.parametrize("trials", [1, 3])
def test_release_many_without_public_stats_draws_and_spends_the_same(clip_public, trials):
    """``public_stats=False`` (narplr, which clips the public rows itself) leaves only the public statistics out:
    every draw, spend, bound and extra equals the default call's to the bit (the same code, one argument)."""
    alg = RobustPrivateLR(sigma="dp", clip_public=clip_public, **EXPLICIT)
    splits = _splits()
    la, lb = _ledgers(len(splits)), _ledgers(len(splits))
    full = alg.release_many(splits, 1.5, la, trials)
    lean = alg.release_many(splits, 1.5, lb, trials, public_stats=False)
    assert any(r.public is None for r in lean)
    for r1, r2, l1, l2 in zip(full, lean, la, lb):
        for f in ("XX", "Xy", "yy", "extras", "split", "eps", "B_x", "B_y", "sigma_x", "sigma_y"):
            _same(getattr(r1, f), getattr(r2, f))
        assert repr(l1.spends) == repr(l2.spends)


@pytest.mark.parametrize("cls,params", [(RobustPrivateLR, dict(sigma="dp", **EXPLICIT)),
                                        (RobustPrivateLR, dict(sigma="data", clip_public=True, **EXPLICIT)),
                                        (RobustPrivateLR, dict(sigma="dp", prior="fixed", **EXPLICIT)),
                                        (NoiseAwareRPLR, dict(sigma="dp", **EXPLICIT)),
                                        (NoiseAwareRPLR, dict(sigma="data", clip_public=False, **EXPLICIT))])
@pytest.mark.parametrize("trials", [1, 3])
def test_run_many_equals_run_per_split(cls, params, trials):
    """A batch of splits (varying n and d, one without private rows) gives each split what ``run`` (a batch of
    one) gives it: bounds and guarantee, and the fitted numbers to rounding (the batched fits iterate until the
    whole batch converges)."""
    alg = cls(**params)
    splits = _splits()
    la, lb = _ledgers(len(splits)), _ledgers(len(splits))
    for s, lg, o in zip(splits, la, alg.run_many(splits, 1.5, 0.0, lb, trials)):
        one = alg.run(s, 1.5, 0.0, lg, trials)
        if one.clip_bounds is not None:
            _close(one.clip_bounds, o.clip_bounds)
        assert repr(one.guarantee) == repr(o.guarantee)
        np.testing.assert_allclose(one.predictions, o.predictions, rtol=1e-6, atol=1e-9)
        assert list(one.extras) == list(o.extras)


@pytest.mark.parametrize("trials", [1, 3])
@pytest.mark.parametrize("params", [dict(sigma="dp", **EXPLICIT), dict(sigma="dp", prior="fixed", **EXPLICIT)])
def test_public_only_splits_fit_their_public_statistics(params, trials):
    """Splits without private rows (alone or beside released ones): no draw, 'public only' spent, and the fit's
    inputs are the public rows' exact statistics repeated over the trials."""
    alg = RobustPrivateLR(**params)
    splits = [_split(70 + i, n=0, n_pub=p, d=d) for i, (p, d) in enumerate([(6, 3), (6, 3), (4, 3)])]
    ss = splits + [_split(81, n=9)]
    rels = alg.release_many(ss, 1.5, _ledgers(len(ss)), trials)
    XX, Xy, yy, _, _ = alg._naive_group(ss, rels, trials)
    for i, s in enumerate(splits):
        Xu, yu = s.X_public, s.y_public
        _close(XX[i], np.broadcast_to(Xu.T @ Xu, (trials, 3, 3)))
        _close(Xy[i], np.broadcast_to(Xu.T @ yu, (trials, 3)))
        _close(yy[i], np.full(trials, yu @ yu))


def test_gaussian_intervals_many_equal_per_posterior():
    rng = np.random.default_rng(3)
    mean = rng.normal(size=(4, 2, 3))
    A = rng.normal(size=(4, 2, 3, 3))
    cov = A @ np.swapaxes(A, -1, -2)
    Xs = [rng.normal(size=(m, 3)) for m in (5, 1, 7, 2)]
    for i, (mu, ci, pi) in enumerate(gaussian_intervals_many(mean, cov, Xs)):
        c1, p1 = gaussian_intervals(mean[i], cov[i], Xs[i])
        _same(mu, mean[i] @ Xs[i].T)
        _same(c1, ci)
        _same(p1, pi)




def test_sufficient_stats_many_equal_per_set():
    """The public statistics, one stacked product per shape of C-contiguous set, equal ``sufficient_stats`` of each
    set to the bit (a strided view and a set alone of its shape take their own call)."""
    from dpexp.families.gdsc.release_batch import sufficient_stats_many
    from dpexp.families.gdsc.stats import sufficient_stats

    rng = np.random.default_rng(5)
    Xs = [rng.normal(size=(m, 4)) for m in (10, 10, 6, 10, 0, 0)]
    Xs.append(rng.normal(size=(10, 8))[:, ::2])   # strided
    ys = [rng.normal(size=X.shape[0]) for X in Xs]
    got = sufficient_stats_many(Xs, ys)
    for X, y, g in zip(Xs, ys, got):
        ref = sufficient_stats(X, y)
        _same(ref[0], g[0])
        _same(ref[1], g[1])
        assert type(g[2]) is float and repr(g[2]) == repr(ref[2])


@pytest.mark.parametrize("trials", [1, 3])
def test_clip_bounds_many_equal_per_release(trials):
    from dpexp.families.gdsc.algorithms.rplr import Release, _clip_bounds_many

    rng = np.random.default_rng(6)
    z = (np.zeros((trials, 2, 2)), np.zeros((trials, 2)), np.zeros(trials))
    per_trial = [Release(*z, None, {}, (0.3, 0.3, 0.4), 1.0, rng.uniform(size=trials), rng.uniform(size=trials),
                         None, None) for _ in range(3)]
    floats = [Release(*z, None, {}, (0.3, 0.3, 0.4), 1.0, 0.5 + k, 1.5 + k, None, None) for k in range(3)]
    none = Release(*z, None, {}, (0.3, 0.3, 0.4), 1.0, None, None, None, None)
    for rs in (per_trial + [none], floats, [floats[0], per_trial[1], none]):
        got = _clip_bounds_many(rs, trials)
        for r, g in zip(rs, got):
            ref = r.clip_bounds(trials)
            if ref is None:
                assert g is None
            else:
                _same(np.ascontiguousarray(ref), g)


def test_laplace_rows_spends_equal_constructed_spends():
    """The spends laplace_rows records (filled from a validated template) are the constructor's: fields in order,
    equality, hash, repr, type."""
    from dpexp.privacy.guarantee import Spend

    lg = _ledgers(3)
    laplace_rows(np.zeros((3, 2)), np.ones((3, 2)), np.array([[0.5, 2.0], [1.0, 1.0], [0.0, 3.0]]),
                 np.array([0.7, 1.1, 2.5]), lg, "X'y")
    for l, (e, s, b) in zip(lg, [(0.7, 2.0, 0.5 / 0.7), (1.1, 1.0, 1.0 / 1.1), (2.5, 3.0, 0.0)]):
        (got,) = l.spends
        ref = Spend("laplace", "pure", epsilon=e, delta=0.0, sensitivity=s, scale=b, label="X'y")
        assert type(got) is Spend and got == ref and hash(got) == hash(ref) and repr(got) == repr(ref)
        assert list(vars(got).items()) == list(vars(ref).items())
        with pytest.raises(Exception):
            got.epsilon = 3.0   # still frozen




def test_laplace_rows_cells_spending_alike_share_one_equal_spend():
    """Cells whose ε, Δ₁ and scale have the same bits record one (frozen) Spend equal to the constructor's; a
    sensitivity of -0.0 beside 0.0 (equal floats, other bits and repr) keeps each cell its own."""
    from dpexp.privacy.guarantee import Spend

    lg = _ledgers(3)
    out = laplace_rows(np.zeros((3, 2)), np.ones((3, 2)), np.full(3, 2.0), 0.5, lg, "sigma_x")
    ref = Spend("laplace", "pure", epsilon=0.5, delta=0.0, sensitivity=2.0, scale=4.0, label="sigma_x")
    _same(out, np.full((3, 2), 4.0))
    for l in lg:
        (got,) = l.spends
        assert type(got) is Spend and got == ref and repr(got) == repr(ref)
        assert list(vars(got).items()) == list(vars(ref).items())
    lg = _ledgers(2)
    laplace_rows(np.zeros((2, 1)), np.ones((2, 1)), np.array([0.0, -0.0]), 0.5, lg, "y'y")
    assert [repr(l.spends[0].sensitivity) for l in lg] == ["0.0", "-0.0"]


@pytest.mark.parametrize("trials", [1, 3])
@pytest.mark.parametrize("sigma", ["dp", "data"])
def test_clip_bounds_many_of_a_whole_batch_equal_per_release(trials, sigma):
    """The releases of one batched group read their bounds from the group's arrays: equal to each release's own
    ``clip_bounds`` to the bit (per-trial σ̂ bounds and the data σ's floats)."""
    from dpexp.families.gdsc.algorithms.rplr import _clip_bounds_many, _whole_batch

    alg = RobustPrivateLR(sigma=sigma, **EXPLICIT)
    splits = [s for s in _splits() if s.d == 3 and s.X_private.shape[0] > 0]
    rels = alg.release_many(splits, 1.5, _ledgers(len(splits)), trials)
    assert _whole_batch(rels) is not None
    for r, g in zip(rels, _clip_bounds_many(rels, trials)):
        _same(np.ascontiguousarray(r.clip_bounds(trials)), g)


def test_one_bound_statistics_in_pieces_are_those_of_each_split(monkeypatch):
    """With one pair of bounds for every split, ``RowBlocks.clipped_stats`` clips and multiplies a large group a
    few splits at a time: the statistics of the clipped rows, and the same floats whatever the piece size (a
    stacked matmul computes each matrix as alone: a chunk's splits give the same floats however they are grouped),
    groups of one split and of several n included."""
    from dpexp.families.gdsc import stats as gdsc_stats
    from dpexp.families.gdsc.release_batch import RowBlocks

    rng = np.random.default_rng(11)
    Xs = [rng.normal(size=(n, 6)) for n in [50] * 9 + [37] + [20] * 5]
    ys = [rng.normal(size=X.shape[0]) for X in Xs]
    B_x, B_y = np.full(len(Xs), 0.8), np.full(len(Xs), 1.2)
    expect = RowBlocks(Xs, ys).clipped_stats(B_x, B_y, False, 1)        # every group in one piece
    own = [gdsc_stats.clip(X, y, 0.8, 1.2) for X, y in zip(Xs, ys)]
    for a, b in zip(expect, (np.stack([Xc.T @ Xc for Xc, _ in own]), np.stack([Xc.T @ yc for Xc, yc in own]),
                             np.array([float(yc @ yc) for _, yc in own]))):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-12)           # the statistics of the clipped rows
    for whole, piece in ((0, 1), (0, 8 * 50 * 7 * 2), (0, 8 * 50 * 7 * 4)):
        monkeypatch.setattr(RowBlocks, "CLIP_WHOLE_BYTES", whole)
        monkeypatch.setattr(RowBlocks, "CLIP_PIECE_BYTES", piece)
        got = RowBlocks(Xs, ys).clipped_stats(B_x, B_y, False, 1)
        for a, b in zip(got, expect):
            assert a.tobytes() == b.tobytes()
