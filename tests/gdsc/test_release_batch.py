"""The batched paths of rplr / narplr (release_batch, release_many, run_many over many splits, the batched Laplace
helper and intervals) equal the per-split paths to the bit: statistics, spends, outputs."""

from __future__ import annotations

import numpy as np
import pytest

from dpexp.families.gdsc.algorithms.narplr import NoiseAwareRPLR
from dpexp.families.gdsc.algorithms.rplr import RobustPrivateLR
from dpexp.models.intervals import gaussian_intervals, gaussian_intervals_many
from dpexp.privacy.mechanisms import laplace, laplace_rows, standard_laplace_rows
from gdsc_bitwise import ledgers as _ledgers, same as _same, split as _split

pytestmark = pytest.mark.usefixtures("isolated_cache")

EXPLICIT = dict(p1=0.35, p2=0.6, p3=0.05, omega_x=1.3, omega_y=0.9)


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


@pytest.mark.parametrize("trials", [1, 3])
@pytest.mark.parametrize("params", [dict(sigma="dp", **EXPLICIT), dict(sigma="data", **EXPLICIT),
                                    dict(sigma="dp", clip_public=True, **EXPLICIT),
                                    dict(sigma="data", clip_public=True, **EXPLICIT)])
def test_release_many_equals_release(params, trials):
    _same_releases(RobustPrivateLR(**params), _splits(), trials)


def _same_releases(alg, splits, trials):
    """``release_many`` of ``splits`` equals ``release`` split by split: every field, and the spends recorded."""
    la, lb = _ledgers(len(splits)), _ledgers(len(splits))
    one = [alg.release(s, 1.5, lg, trials) for s, lg in zip(splits, la)]
    many = alg.release_many(splits, 1.5, lb, trials)
    for r1, r2, l1, l2 in zip(one, many, la, lb):
        for f in ("XX", "Xy", "yy", "public", "extras", "split", "eps", "B_x", "B_y", "sigma_x", "sigma_y"):
            _same(getattr(r1, f), getattr(r2, f))
        assert repr(l1.spends) == repr(l2.spends)
    return many


def test_release_many_data_sigma_many_bounds_bit_identical():
    """sigma: data computes the sensitivities with Python floats (B**2 is libm's pow, not B·B): the batch must
    reproduce them for every bound, not just most."""
    alg = RobustPrivateLR(sigma="data", **EXPLICIT)
    rng = np.random.default_rng(0)
    splits = []
    for i in range(60):
        s = _split(50 + i, n=5)
        s.meta.update(sigma_x=float(rng.uniform(0.1, 3.0)), sigma_y=float(rng.uniform(0.1, 3.0)))
        splits.append(s)
    la, lb = _ledgers(60), _ledgers(60)
    one = [alg.release(s, 1.0, lg, 1) for s, lg in zip(splits, la)]
    many = alg.release_many(splits, 1.0, lb, 1)
    for r1, r2, l1, l2 in zip(one, many, la, lb):
        _same(r1.XX, r2.XX)
        assert repr(l1.spends) == repr(l2.spends)


def test_release_many_nan_rows_and_bad_epsilon_take_the_per_split_path():
    alg = RobustPrivateLR(sigma="dp", **EXPLICIT)
    bad = _split(9)
    bad.X_private[0, 0] = np.nan
    splits = [_split(1), bad]
    la, lb = _ledgers(2), _ledgers(2)
    one = [alg.release(s, 1.5, lg, 2) for s, lg in zip(splits, la)]
    many = alg.release_many(splits, 1.5, lb, 2)
    for r1, r2 in zip(one, many):
        _same(r1.XX, r2.XX)
    out = alg.release_many(splits, -1.0, _ledgers(2), 1)
    assert all(isinstance(o, Exception) for o in out)


@pytest.mark.parametrize("sigma", ["dp", "data"])
def test_release_many_secure_noise_equals_release(sigma):
    """Secure noise from a fixed byte stream per cell: the batch draws from each cell's secure source exactly as
    ``release`` does (statistics and spends to the bit; a seeded fallback would differ)."""
    alg = RobustPrivateLR(sigma=sigma, **EXPLICIT)
    splits = _splits()
    la, lb = _ledgers(len(splits), secure=True), _ledgers(len(splits), secure=True)
    one = [alg.release(s, 1.5, lg, 2) for s, lg in zip(splits, la)]
    many = alg.release_many(splits, 1.5, lb, 2)
    for r1, r2, l1, l2 in zip(one, many, la, lb):
        for f in ("XX", "Xy", "yy", "public", "extras", "split", "eps", "B_x", "B_y", "sigma_x", "sigma_y"):
            _same(getattr(r1, f), getattr(r2, f))
        assert repr(l1.spends) == repr(l2.spends)
        assert np.all(np.isfinite(r2.XX))


@pytest.mark.parametrize("cls,params", [(RobustPrivateLR, dict(sigma="dp", **EXPLICIT)),
                                        (RobustPrivateLR, dict(sigma="data", clip_public=True, **EXPLICIT)),
                                        (RobustPrivateLR, dict(sigma="dp", prior="fixed", **EXPLICIT)),
                                        (NoiseAwareRPLR, dict(sigma="dp", **EXPLICIT)),
                                        (NoiseAwareRPLR, dict(sigma="data", clip_public=False, **EXPLICIT))])
@pytest.mark.parametrize("trials", [1, 3])
def test_run_many_equals_run_per_split(cls, params, trials):
    """A batch of splits (varying n and d, one without private rows) gives each split what ``run`` gives it: the
    same release, bounds and guarantee to the bit; the batched fits iterate until the whole batch converges (as
    before this batching), so the fitted numbers agree to rounding."""
    for one, o in _many_and_each(cls(**params), trials):
        assert list(one.extras) == list(o.extras)
        for lv in one.pred_interval:
            np.testing.assert_allclose(one.pred_interval[lv][1], o.pred_interval[lv][1], rtol=1e-6, atol=1e-9)


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


def _compare_release(alg, splits, eps, trials):
    """release_many against release split by split: the statistics and spends to the bit, or the same exception
    (type and message); returns the kinds of results."""
    la, lb = _ledgers(len(splits)), _ledgers(len(splits))
    many = alg.release_many(splits, eps, lb, trials)
    kinds = []
    for s, l1, l2, r2 in zip(splits, la, lb, many):
        try:
            r1 = alg.release(s, eps, l1, trials)
        except Exception as exc:
            assert type(r2) is type(exc) and str(r2) == str(exc)
            r1 = exc
        else:
            assert not isinstance(r2, Exception), r2
            for f in ("XX", "Xy", "yy", "public", "extras", "split", "eps", "B_x", "B_y", "sigma_x", "sigma_y"):
                _same(getattr(r1, f), getattr(r2, f))
        assert repr(l1.spends) == repr(l2.spends)
        kinds.append(type(r1).__name__)
    return kinds


@pytest.mark.parametrize("clip_public", [False, True])
@pytest.mark.parametrize("trials", [1, 3])
def test_release_many_overflowing_data_sigma_fails_that_split_only(clip_public, trials):
    """sigma: data with a huge σ_x in one split's meta: release raises OverflowError there (B_x² in Python
    floats); the batch sets that split aside before any draw and releases the others."""
    alg = RobustPrivateLR(sigma="data", clip_public=clip_public, **EXPLICIT)
    splits = [_split(1), _split(3, n=17), _split(5, n=55)]
    splits[1].meta["sigma_x"] = 1e200
    assert _compare_release(alg, splits, 1.5, trials) == ["Release", "OverflowError", "Release"]


@pytest.mark.parametrize("omegas, kinds", [(dict(omega_x=6e153), ["UserError", "UserError", "Release", "Release"]),
                                           (dict(omega_y=1e154), ["Release", "UserError", "UserError", "UserError"])])
def test_release_many_dp_bounds_overflowing_after_the_sigma_draws_fail_those_splits_only(omegas, kinds):
    """sigma: dp with thresholds so large that, at some splits' σ̂ draws, a sensitivity overflows: those splits get
    release's error (their σ̂ spends, and X'X's where only X'y / y'y overflow, recorded as there); the others are
    released to the bit."""
    alg = RobustPrivateLR(sigma="dp", **{**EXPLICIT, **omegas})
    splits = [_split(1), _split(3, n=17), _split(5, n=55), _split(6, n=30)]
    with np.errstate(over="ignore", invalid="ignore"):
        assert _compare_release(alg, splits, 1.5, 2) == kinds


def test_run_many_overflowing_data_sigma_fails_that_split_only():
    alg = RobustPrivateLR(sigma="data", **EXPLICIT)
    splits = [_split(1), _split(3, n=17), _split(5, n=55)]
    splits[1].meta["sigma_x"] = 1e200
    many = alg.run_many(splits, 1.5, 0.0, _ledgers(3), 2)
    la = _ledgers(3)
    for k, (s, o) in enumerate(zip(splits, many)):
        try:
            one = alg.run(s, 1.5, 0.0, la[k], 2)
        except Exception as exc:
            assert type(o) is type(exc) and str(o) == str(exc)
            continue
        assert not isinstance(o, Exception), o
        np.testing.assert_allclose(one.predictions, o.predictions, rtol=1e-6, atol=1e-9)
    assert [type(o).__name__ for o in many] == ["Output", "OverflowError", "Output"]


@pytest.mark.parametrize("clip_public", [False, True])
@pytest.mark.parametrize("trials", [1, 3])
def test_release_many_without_public_stats_draws_and_spends_the_same(clip_public, trials):
    """``public_stats=False`` (narplr, which clips the public rows itself) leaves only the public statistics out:
    every draw, spend, bound and extra equals the default call's to the bit."""
    alg = RobustPrivateLR(sigma="dp", clip_public=clip_public, **EXPLICIT)
    splits = _splits()
    la, lb = _ledgers(len(splits)), _ledgers(len(splits))
    full = alg.release_many(splits, 1.5, la, trials)
    lean = alg.release_many(splits, 1.5, lb, trials, public_stats=False)
    assert any(r.public is None for r in lean)
    for r1, r2, l1, l2 in zip(full, lean, la, lb):
        for f in ("XX", "Xy", "yy", "extras", "split", "eps", "B_x", "B_y", "sigma_x", "sigma_y"):
            _same(getattr(r1, f), getattr(r2, f))
        if r2.public is not None:   # a split released on its own (no private rows, alone of its d)
            _same(r1.public, r2.public)
        assert repr(l1.spends) == repr(l2.spends)


@pytest.mark.parametrize("trials", [1, 2])
def test_narplr_run_many_equals_run_per_split_with_clipped_public_rows(trials):
    """narplr (clip_public: true, its default) asks the release for no public statistics: each split's output is
    what ``run`` gives it (release, bounds, guarantee to the bit; the fit to rounding, as above)."""
    alg = NoiseAwareRPLR(sigma="dp", **EXPLICIT)
    assert alg.params.clip_public
    for one, o in _many_and_each(alg, trials):
        for lv in one.coef_interval:
            np.testing.assert_allclose(one.coef_interval[lv][0], o.coef_interval[lv][0], rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("trials", [1, 3])
def test_narplr_stacked_public_stats_equal_per_set(trials):
    """narplr's clipped public statistics, the sets of one shape clipped and multiplied as one stacked array, equal
    ``ExactStats.of`` of each set's piece of ``clipped_rows`` to the bit (sets of several sizes, one empty, one alone
    of its size; all of one size; signed zeros, a row at the bound and a NaN among the rows)."""
    from dpexp.families.gdsc.algorithms.narplr import _clipped_public_stats
    from dpexp.families.gdsc.release_batch import clipped_rows
    from dpexp.models.noise_aware import ExactStats

    rng = np.random.default_rng(4)
    for sizes in [(10, 10, 7, 0, 10, 3, 7), (10, 10, 10), (2,)]:
        Xs = [rng.normal(size=(m, 4)) for m in sizes]
        ys = [rng.normal(size=X.shape[0]) for X in Xs]
        B = rng.uniform(0.2, 1.0, size=(len(Xs), trials))
        Xs[0][0, :3] = (-0.0, 0.0, B[0, 0])
        Xs[-1][-1, 0] = np.nan
        XX, Xy, yy = _clipped_public_stats(Xs, ys, B, 2 * B)
        for i, (X, y) in enumerate(clipped_rows(Xs, ys, B, 2 * B)):
            q = ExactStats.of(X, y)
            _same(XX[i], q.XX)
            _same(Xy[i], q.Xy)
            _same(yy[i], q.yy)


def test_narplr_stack_trials_equals_per_release_conversion():
    from dpexp.families.gdsc.algorithms.narplr import _stack_trials, _trials

    for xs, T in [([0.5, 1.25, 3.0], 2), ([np.array([0.1, 0.2]), np.array([0.3, 0.4])], 2),
                  ([np.array([0.7]), np.array([0.9])], 3), ([0.5, np.array([0.1, 0.2])], 2)]:
        ref = np.stack([_trials(x, T) for x in xs])
        got = _stack_trials(xs, T)
        _same(ref, got)
        assert got.flags.c_contiguous and got.flags.writeable


@pytest.mark.parametrize("trials", [1, 3])
@pytest.mark.parametrize("params", [dict(sigma="dp"), dict(sigma="data"), dict(sigma="dp", clip_public=True),
                                    dict(sigma="data", clip_public=True)])
def test_release_many_equal_n_splits_stacked_equal_release(params, trials):
    """Splits of equal n (and equal public sizes) share one stacked product of their clipped rows: each equals its
    per-split release to the bit (statistics, public statistics, spends), beside splits alone of their n."""
    alg = RobustPrivateLR(**params, **EXPLICIT)
    splits = [_split(20 + i, n=n, n_pub=p, scale=3.0) for i, (n, p) in
              enumerate([(30, 6), (30, 6), (12, 6), (30, 4), (12, 6), (30, 6), (7, 0), (7, 0), (1, 6), (1, 6)])]
    assert _compare_release(alg, splits, 1.5, trials) == ["Release"] * len(splits)


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


@pytest.mark.parametrize("trials", [1, 3])
@pytest.mark.parametrize("sigma", ["dp", "data"])
@pytest.mark.parametrize("with_empty", [False, True])
def test_naive_group_equals_per_split_naive_stats(trials, sigma, with_empty):
    """``_naive_group``'s stacked sums and ridges equal the per-split ``_naive_stats`` to the bit, whether every
    split released (the stacked sums returned as they are) or one has no private rows (stacked split by split)."""
    alg = RobustPrivateLR(sigma=sigma, **EXPLICIT)
    splits = [s for s in _splits() if s.d == 3 and (with_empty or s.X_private.shape[0] > 0)]
    assert any(s.X_private.shape[0] == 0 for s in splits) == with_empty
    rels = alg.release_many(splits, 1.5, _ledgers(len(splits)), trials)
    ridge, rgs = _same_naive(alg, splits, rels, trials, 3)
    for i, rg in enumerate(rgs):
        if rg is not None:
            _same(ridge[i], np.broadcast_to(np.asarray(rg, dtype=float), ridge[i].shape))


def _same_naive(alg, splits, rels, trials, d):
    """``_naive_group`` of ``splits`` (d columns) equals ``_naive_stats`` split by split (statistics, extras);
    returns the group's ridge and each split's own, for the caller's check."""
    XX, Xy, yy, extras, ridge = alg._naive_group(splits, rels, trials)
    assert XX.shape == (len(splits), trials, d, d) and Xy.shape == (len(splits), trials, d)
    assert yy.shape == (len(splits), trials)
    rgs = []
    for i, (s, r) in enumerate(zip(splits, rels)):
        xx, xy, y_, ex, rg = alg._naive_stats(s, r, trials)
        _same(XX[i], xx)
        _same(Xy[i], xy)
        _same(yy[i], y_)
        assert extras[i] == ex
        rgs.append(rg)
    return ridge, rgs


def _many_and_each(alg, trials: int) -> list:
    """(``run`` of each of ``_splits()``, ``run_many``'s output for it) pairs, after checking that they share the
    release's bounds and the guarantee to the bit and the predictions to rounding (the batched fits iterate until
    the whole batch converges)."""
    splits = _splits()
    la, lb = _ledgers(len(splits)), _ledgers(len(splits))
    pairs = []
    for s, lg, o in zip(splits, la, alg.run_many(splits, 1.5, 0.0, lb, trials)):
        one = alg.run(s, 1.5, 0.0, lg, trials)
        _same(one.clip_bounds, o.clip_bounds)
        assert repr(one.guarantee) == repr(o.guarantee)
        np.testing.assert_allclose(one.predictions, o.predictions, rtol=1e-6, atol=1e-9)
        pairs.append((one, o))
    return pairs


@pytest.mark.parametrize("trials", [1, 3])
@pytest.mark.parametrize("params", [dict(sigma="dp", **EXPLICIT), dict(sigma="data", clip_public=True, **EXPLICIT),
                                    dict(sigma="dp", prior="fixed", **EXPLICIT)])
def test_release_many_public_only_splits_together_equal_release(params, trials):
    """Several splits without private rows (public rows of equal and of other n, d = 2 and 3) take the batched
    public-only path: each Release (zeros, public statistics, extras) and spend equal ``release``'s to the bit, and
    ``_naive_group`` of them alone or beside released splits equals the per-split ``_naive_stats``; public rows that
    are not float64 send the group split by split, with the same results."""
    alg = RobustPrivateLR(**params)
    splits = [_split(70 + i, n=0, n_pub=p, d=d) for i, (p, d) in enumerate([(6, 3), (6, 3), (4, 3), (6, 2), (6, 2)])]
    f32 = _split(80, n=0)
    f32.X_public = f32.X_public.astype(np.float32)
    for ss in (splits, splits + [_split(81, n=9), _split(82, n=13)], [splits[0], f32, splits[1]]):
        many = _same_releases(alg, ss, trials)
        for d in (2, 3):
            idx = [i for i, s in enumerate(ss) if s.d == d and s.X_public.dtype == np.float64]
            if not idx:
                continue
            ridge, rgs = _same_naive(alg, [ss[i] for i in idx], [many[i] for i in idx], trials, d)
            for i, rg in enumerate(rgs):
                if ridge is not None:
                    ref = 0.0 if rg is None else rg
                    _same(ridge[i], np.broadcast_to(np.asarray(ref, dtype=float), ridge[i].shape))


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
