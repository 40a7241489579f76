"""AdaSSP's batched ``run_many`` (and its helpers in models.adassp / release_batch) equals ``run`` split by split at
rtol = 1e-9 (the batch may sum and take norms in another order; a ridge solve can amplify a few ulps), spends and
guarantees equal, for every parameter path, trials 1 and 3, with splits the batch sets aside (no private rows, NaN
rows, alone of their d, bad bounds) among good ones."""

from __future__ import annotations

import numpy as np
import pytest

from dpexp.errors import UserError

from dpexp.families.gdsc.algorithms.adassp import AdaSSP
from dpexp.families.gdsc.release_batch import RowBlocks, finite_rows
from dpexp.models import adassp as core
import adassp_oracle as oracle
from gdsc_bitwise import ledgers as _ledgers, same as _same, split as _split

pytestmark = pytest.mark.usefixtures("isolated_cache", "opendp_noise_off")   # secure paths compared: conftest


def _splits():
    """Varying n and n_public (none for one), one split without private rows, one with NaN rows, one alone of its
    d (= 2) among d = 3 ones, a larger d = 5 pair."""
    nan = _split(7, n=20)
    nan.X_private[3, 1] = np.nan
    return [_split(1, scale=3.0), _split(2, n=0), _split(3, n=17), _split(4, d=2), _split(5, n=55, n_pub=3),
            _split(6, n=1), nan, _split(8, n=30, n_pub=0), _split(9, n=25, d=5), _split(10, n=25, d=5, n_pub=2)]


RTOL = 1e-9


def _same_output(one, o):
    for f in ("predictions", "coef", "coef_interval", "pred_interval", "clip_bounds"):
        a, b = getattr(one, f), getattr(o, f)
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=RTOL, atol=1e-12)
    assert list(one.extras) == list(o.extras)
    for k in one.extras:
        assert one.extras[k] == pytest.approx(o.extras[k], rel=RTOL, abs=1e-12)
    assert repr(one.guarantee) == repr(o.guarantee)


def _same_spends(a, b):
    """The same releases (mechanism, label, ε); sensitivities and scales computed from bounds at RTOL."""
    assert [(x.mechanism, x.label, x.epsilon) for x in a] == [(x.mechanism, x.label, x.epsilon) for x in b]
    for x, y in zip(a, b):
        for f in ("sensitivity", "scale"):
            assert np.allclose(getattr(x, f), getattr(y, f), rtol=RTOL, equal_nan=True)


def _compare(alg, splits, eps, trials, secure=False, delta=0.0):
    la, lb = _ledgers(len(splits), secure), _ledgers(len(splits), secure)
    many = alg.run_many(splits, eps, delta, lb, trials)
    assert len(many) == len(splits)
    for s, l1, l2, o in zip(splits, la, lb, many):
        try:
            one = alg.run(s, eps, delta, l1, trials)
        except Exception as exc:   # run's failure is run_many's, message and all
            assert isinstance(o, Exception) and type(o) is type(exc) and str(o) == str(exc)
            continue
        assert not isinstance(o, Exception), o
        _same_output(one, o)   # secure: each cell's source a fixed byte stream, the same in both runs
        _same_spends(l1.spends, l2.spends)
    return many


PARAMS = [dict(), dict(sigma="data"), dict(clip="coordinate"),
          dict(clip="coordinate", sigma="data", omega_x=0.7, omega_y=2.0),
          dict(public=False), dict(public=False, sigma="data", rho=0.2)]


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
@pytest.mark.parametrize("params", PARAMS)
@pytest.mark.parametrize("trials", [1, 3])
def test_run_many_equals_run_per_split(params, trials, noise):
    many = _compare(AdaSSP(noise=noise, **params), _splits(), 1.5, trials, delta=1e-5)
    assert sum(isinstance(o, Exception) for o in many) <= 1   # the NaN split (LinAlgError in run) at most


#: the oracle sums, takes norms and calibrates a scalar σ in another order than the batch: a few ulps, which the
#: ridge solve of these well-conditioned systems amplifies by far less than 1e3
ORACLE_RTOL = 1e-12


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
@pytest.mark.parametrize("params", PARAMS)
@pytest.mark.parametrize("trials", [1, 3])
def test_run_many_equals_the_per_split_oracle(params, trials, noise):
    """The array-first release (several splits of a call, mixed d and n) against the plain per-split reference
    (tests/gdsc/adassp_oracle.py) on the same noise streams: coefficients and extras at rtol 1e-12, the same
    releases recorded (mechanism, label, ε, δ; sensitivities and scales at rtol 1e-12)."""
    alg = AdaSSP(noise=noise, **params)
    splits = [s for s in _splits() if s.X_private.shape[0] and np.isfinite(s.X_private).all()]
    la, lb = _ledgers(len(splits)), _ledgers(len(splits))
    many = alg.run_many(splits, 1.5, 1e-5, lb, trials)
    for s, l1, l2, o in zip(splits, la, lb, many):
        w, pred, extras = oracle.run(alg, s, 1.5, 1e-5, l1, trials)
        assert not isinstance(o, Exception), o
        np.testing.assert_allclose(o.coef, w, rtol=ORACLE_RTOL, atol=1e-13)
        np.testing.assert_allclose(o.predictions, pred, rtol=ORACLE_RTOL, atol=1e-13)
        assert list(o.extras) == list(extras)
        for k in extras:
            assert o.extras[k] == pytest.approx(extras[k], rel=ORACLE_RTOL, abs=1e-13), k
        assert [(x.mechanism, x.label, x.epsilon, x.notion) for x in l1.spends] == \
            [(x.mechanism, x.label, x.epsilon, x.notion) for x in l2.spends]
        for x, y in zip(l1.spends, l2.spends):
            for f in ("sensitivity", "scale", "rho"):
                assert getattr(x, f) == pytest.approx(getattr(y, f), rel=ORACLE_RTOL, abs=1e-300, nan_ok=True), f
            # the exact δ of the σ drawn moves ~1e4× faster than σ (a scalar calibration Δ·σ(Δ) vs Δ·σ(1)
            # differs in σ's last bits): rtol 1e-9, and never above the δ asked
            if x.mechanism == "gaussian":
                assert x.delta == pytest.approx(y.delta, rel=1e-9) and y.delta <= 1e-5 / 3 * (1 + 1e-9)
            else:
                assert repr(x.delta) == repr(y.delta)
        assert repr(l1.guarantee()) == repr(l2.guarantee())


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
@pytest.mark.parametrize("params", [dict(), dict(sigma="data"), dict(public=False, sigma="data", rho=0.2)])
@pytest.mark.parametrize("trials", [1, 3])
def test_secure_noise_equals_run(params, trials, noise):
    """Secure noise from a fixed byte stream per cell: outputs and spends to the bit (a seeded fallback in the
    batch would differ)."""
    _compare(AdaSSP(noise=noise, **params), _splits(), 2.0, trials, secure=True, delta=1e-5)


def test_equal_n_splits_and_many_trials():
    """The stacked σ sums (equal n) and per-trial means over more trials than numpy's unrolled block."""
    splits = [_split(20 + i, n=33, d=4) for i in range(5)]
    _compare(AdaSSP(), splits, 0.8, 11)


@pytest.mark.parametrize("params", [dict(), dict(clip="coordinate", sigma="data")])
@pytest.mark.parametrize("trials", [1, 3])
def test_interleaved_equal_n_groups_equal_run(params, trials):
    """Groups of equal n (private and public) interleaved with other sizes: each group's rows laid out as one block
    (release_batch.block_order) give every split run's output and spends to the bit."""
    sizes = [(30, 6), (12, 6), (30, 4), (12, 6), (30, 6), (5, 0), (5, 4), (30, 6)]
    splits = [_split(40 + i, n=n, n_pub=p, scale=3.0) for i, (n, p) in enumerate(sizes)]
    _compare(AdaSSP(**params), splits, 1.2, trials)


def test_bad_bounds_among_good_splits_fail_as_run_fails():
    """ω_y so large that B_Y = ∞ (dp: after the σ draws; data: before any draw), or ω_x so small that B_X = 0: a
    one-line error for those cells only, as alone (``run``)."""
    splits = [_split(1), _split(3, n=17), _split(5, n=55)]
    kinds = []
    for alg in (AdaSSP(omega_y=1e308), AdaSSP(sigma="data", omega_y=1e308), AdaSSP(omega_x=5e-324),
                AdaSSP(sigma="data", omega_x=5e-324)):
        with np.errstate(over="ignore"):
            many = _compare(alg, splits, 1.0, 2)
        kinds.append([type(o).__name__ for o in many])
    # σ̂ drawn per trial: some splits' bounds overflow or underflow (a one-line UserError), others are released
    assert kinds[0] == ["Output", "UserError", "UserError"] and kinds[1] == ["UserError"] * 3
    assert kinds[2] == ["Output", "UserError", "UserError"] and kinds[3] == ["Output"] * 3
    # a tiny σ_x in one split's meta: B_X² underflows to 0 there (a zero-scale release, as run does)
    splits[1].meta["sigma_x"] = 1e-170
    _compare(AdaSSP(sigma="data"), splits, 1.0, 2)


def test_bad_epsilon_and_gaussian_take_run():
    splits = _splits()
    many = _compare(AdaSSP(), splits, 0.0, 1)
    assert all(isinstance(o, Exception) for k, o in enumerate(many) if splits[k].X_private.shape[0])
    _compare(AdaSSP(noise="gaussian"), [_split(1), _split(3, n=17)], 1.0, 2)   # (ε, δ) with δ = 0: run's error


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_release_rows_equals_the_oracle_release_and_estimate_many(noise):
    """``release_rows`` of S cells (bounds per cell and trial) against the oracle's per-cell release (one mechanism
    call per statistic) on the same streams: values at rtol 1e-12, the same spends."""
    rng = np.random.default_rng(0)
    S, T, d = 4, 3, 3
    A = rng.normal(size=(S, T, 5, d))
    XX, Xy = np.swapaxes(A, -1, -2) @ A, rng.normal(size=(S, T, d))
    B_X, B_Y = rng.uniform(0.5, 2.0, size=(S, T)), rng.uniform(0.5, 2.0, size=(S, T))
    delta = 1e-5 if noise == "gaussian" else 0.0
    la, lb = _ledgers(S), _ledgers(S)
    cal = core.calibrate(d, B_X, B_Y, 0.9, delta, noise)
    got = core.release_rows(XX, Xy, cal, core.standard_rows(cal, lb, d, T), lb)
    for i in range(S):
        ci = core.calibrate(d, B_X[i], B_Y[i], 0.9, delta, noise)
        for a, b in zip(oracle.release(XX[i], Xy[i], ci, la[i], T), got):
            np.testing.assert_allclose(b[i], a, rtol=1e-12, atol=1e-14)
        assert [(x.label, x.epsilon, x.delta) for x in la[i].spends] == [(x.label, x.epsilon, x.delta)
                                                                        for x in lb[i].spends]
    with pytest.raises(ValueError, match="standard draws"):
        core.release_rows(XX, Xy, cal, np.zeros((S, 29)), lb)   # one draw short
    # estimate_many: a singular system in one set takes that set's pseudo-inverse only
    M = np.stack([np.eye(d)[None].repeat(T, 0) for _ in range(S)])
    M[2, 1] = 0.0
    ridge = np.zeros((S, T))
    W = core.estimate_many(M, Xy, ridge)
    for i in range(S):
        _same(core.estimate(M[i], Xy[i], ridge[i]), W[i])


def test_sigma_sums_and_finite_rows():
    rng = np.random.default_rng(1)
    Xs = [rng.normal(size=(n, 3)) for n in (4, 0, 9, 0, 4)]
    ys = [rng.normal(size=n) for n in (4, 0, 9, 0, 4)]
    got = RowBlocks(Xs, ys).sigma_sums(0.5, 0.7)
    for i in range(5):   # the reference sums, at a tolerance (the batch may sum in another order)
        assert got[i, 0] == pytest.approx(float(np.sum(np.clip(Xs[i], -0.5, 0.5) ** 2)), rel=1e-12)
        assert got[i, 1] == pytest.approx(float(np.sum(np.clip(ys[i], -0.7, 0.7) ** 2)), rel=1e-12)
    Xs[2][5, 0] = np.inf
    assert finite_rows(Xs, ys).tolist() == [True, True, False, True, True]
    ys[0][1] = np.nan
    assert finite_rows(Xs, ys).tolist() == [False, True, False, True, True]


def test_failing_eigenvalues_fail_that_split_only(monkeypatch):
    """An eigenvalue failure (LinAlgError, here forced on all-zero Gram matrices) in one split of a batch is that
    split's error, as in run; the others are released as run releases them."""
    real = np.linalg.eigvalsh

    def eigvalsh(a, *args, **kw):
        if np.any(np.all(np.asarray(a) == 0, axis=(-2, -1))):
            raise np.linalg.LinAlgError("Eigenvalues did not converge")
        return real(a, *args, **kw)

    monkeypatch.setattr(np.linalg, "eigvalsh", eigvalsh)
    splits = [_split(1), _split(3, n=17), _split(5, n=55), _split(6, n=12)]
    splits[1].X_private[:] = 0.0
    many = _compare(AdaSSP(sigma="data"), splits, 1.0, 2)
    assert [type(o).__name__ for o in many] == ["Output", "LinAlgError", "Output", "Output"]


@pytest.mark.parametrize("params", [dict(), dict(sigma="data")])
def test_a_group_failing_after_its_draws_leaves_set_aside_splits_to_run(monkeypatch, params):
    """An error after the group's draws (here forced in the stacked solve) is the error of the cells the group
    released only: the splits it set aside before any draw (NaN private or public rows, a huge σ_x in meta under
    sigma: data) fail with their one-line errors, as alone (``run``, a batch of one), with nothing spent."""
    def boom(*a, **kw):
        raise FloatingPointError("forced failure of the stacked solve")

    monkeypatch.setattr(core, "estimate_many", boom)
    nan, nan_pub, huge = _split(7, n=20), _split(11, n=15), _split(12, n=18)
    nan.X_private[3, 1] = np.nan
    nan_pub.X_public[0, 0] = np.nan
    huge.meta["sigma_x"] = 1e200
    splits = [_split(1), nan, _split(3, n=17), nan_pub, _split(5, n=55), huge]
    alg = AdaSSP(**params)
    la, lb = _ledgers(len(splits)), _ledgers(len(splits))
    with np.errstate(over="ignore", invalid="ignore"):
        many = alg.run_many(splits, 1.5, 0.0, lb, 2)
    released = [0, 2, 4] if params else [0, 2, 4, 5]   # sigma: dp keeps the huge-σ_x split (its meta is unused)
    for k, (s, o) in enumerate(zip(splits, many)):
        if k in released:
            assert type(o) is FloatingPointError, o
            continue
        try:
            with np.errstate(over="ignore", invalid="ignore"):
                one = alg.run(s, 1.5, 0.0, la[k], 2)
        except Exception as exc:
            assert type(o) is type(exc) and str(o) == str(exc)
        else:
            assert not isinstance(o, Exception), o
            _same_output(one, o)
        assert repr(la[k].spends) == repr(lb[k].spends)
    set_aside = [o for k, o in enumerate(many) if k not in released]   # one line each, before any draw
    assert len(set_aside) == (3 if params else 2) and all(isinstance(o, UserError) for o in set_aside)
    assert [type(o).__name__ for o in set_aside[:2]] == ["NonFiniteInput"] * 2   # the NaN rows: refused first
