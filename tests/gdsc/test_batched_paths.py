"""The batched ``run_many`` of plr, oplr, fmlr, their paper-protocol versions and lr_public against the same
algorithm run split by split: equal to the bit (predictions, coefficients, extras, guarantee and every ledger spend),
whatever the grouping — splits of different d and sizes (none private included), trials > 1, a failing split among
good ones, secure noise from a fixed byte stream.  One exception, older than the batching of these methods:
lr_public with ``prior: gamma`` iterates its VB fits until every problem of a batch has converged (``models.vb``),
so a split's fit depends on its batch below the VB tolerance (1e-9 relative change): compared to 1e-6."""

import numpy as np
import pytest

from dpexp import registry
from dpexp.chunk import ChunkRows
from dpexp.errors import UserError
from dpexp.families.gdsc.batching import Rows, repeat_trials, solve_stacked
from dpexp.families.gdsc.algorithms.compared_paper import _by_column, _minmax, _scaled_rows
from dpexp.families.gdsc.algorithms.functional_mechanism import objective_noise_rows, with_bias
from dpexp.privacy.ledger import PrivacyLedger
from dpexp.privacy.mechanisms import laplace
from dpexp.privacy.noise import SecureNoise
from dpexp.types import Split
from gdsc_bitwise import make_split
from stats_reference import objective_noise, perturbed_stats

pytestmark = pytest.mark.usefixtures("opendp_noise_off")   # secure paths compared bit for bit: tests/conftest.py

ALGORITHMS = [("plr", {}), ("plr", {"solver": "direct"}), ("oplr", {"bound_y": 2.0}), ("fmlr", {"bound_y": 2.0}),
              ("plr_paper", {}), ("oplr_paper", {}), ("fmlr_paper", {}), ("lr_public", {}),
              ("lr_public", {"prior": "gamma"})]


def mixed_splits() -> list[Split]:
    shared = (np.full(4, -2.5), np.full(4, 4.5))   # one range object for several splits (the Matlab path's x)
    return [make_split(40, 5, 4, 1, raw=True, shared=shared), make_split(0, 5, 4, 2, raw=True, shared=shared),
            make_split(75, 3, 4, 3, raw=True, shared=shared), make_split(12, 6, 3, 4, raw=True),
            make_split(30, 4, 4, 5, raw="constant"), make_split(1, 0, 3, 6), make_split(50, 5, 4, 7)]


def ledgers(n: int, secure: bool = False) -> list[PrivacyLedger]:
    if secure:   # SecureNoise driven by a fixed byte stream per cell, so that two runs see the same bytes
        return [PrivacyLedger(SecureNoise(entropy=np.random.default_rng(100 + k).bytes)) for k in range(n)]
    return [PrivacyLedger(np.random.default_rng(100 + k)) for k in range(n)]


def assert_same(a, b, la: PrivacyLedger, lb: PrivacyLedger, exact: bool = True) -> None:
    if isinstance(a, Exception) or isinstance(b, Exception):
        assert type(a) is type(b) and str(a) == str(b)
        return
    if exact:
        np.testing.assert_array_equal(a.predictions, b.predictions, strict=True)
        np.testing.assert_array_equal(a.coef, b.coef, strict=True)
    else:
        np.testing.assert_allclose(a.predictions, b.predictions, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(a.coef, b.coef, rtol=1e-6, atol=1e-9)
    assert a.extras == b.extras and a.guarantee == b.guarantee
    assert repr(la.spends) == repr(lb.spends)


@pytest.mark.parametrize("trials", [1, 3])
@pytest.mark.parametrize("name, params", ALGORITHMS)
def test_batched_equals_split_by_split(name, params, trials):
    alg = registry.get("algorithm", name)(**params)
    splits = mixed_splits()
    lb, ls = ledgers(len(splits)), ledgers(len(splits))
    batched = alg.run_many(splits, 2.0, 0.0, lb, trials)
    single = [alg.run_many([s], 2.0, 0.0, [lg], trials)[0] for s, lg in zip(splits, ls)]
    for k, (a, b) in enumerate(zip(batched, single)):
        assert not isinstance(a, Exception), (k, a)
        assert a.predictions.shape == (trials, splits[k].X_test.shape[0])
        assert_same(a, b, lb[k], ls[k], exact=params.get("prior") != "gamma")


@pytest.mark.parametrize("name, params", [a for a in ALGORITHMS if a[0] not in ("lr_public",)])
def test_batched_equals_split_by_split_with_secure_noise(name, params):
    alg = registry.get("algorithm", name)(**params)
    splits = mixed_splits()
    lb, ls = ledgers(len(splits), secure=True), ledgers(len(splits), secure=True)
    batched = alg.run_many(splits, 1.0, 0.0, lb, 2)
    single = [alg.run_many([s], 1.0, 0.0, [lg], 2)[0] for s, lg in zip(splits, ls)]
    for k, (a, b) in enumerate(zip(batched, single)):
        assert not isinstance(a, Exception), (k, a)
        assert_same(a, b, lb[k], ls[k])


@pytest.mark.parametrize("name, params", ALGORITHMS)
def test_a_failing_split_fails_alone(name, params):
    """A split whose private responses do not match its rows fails with its own error; the others (one of them
    without any training row) give what they give when run alone."""
    alg = registry.get("algorithm", name)(**params)
    splits = mixed_splits()
    bad = make_split(20, 4, 4, 9)
    bad.y_private = bad.y_private[:-3]
    bad.y_public = bad.y_public[:-1]
    empty = make_split(0, 0, 4, 10)
    splits[2:2] = [bad, empty]
    lb, ls = ledgers(len(splits)), ledgers(len(splits))
    batched = alg.run_many(splits, 2.0, 0.0, lb, 1)
    single = [alg.run_many([s], 2.0, 0.0, [lg], 1)[0] for s, lg in zip(splits, ls)]
    assert isinstance(batched[2], Exception)
    if name == "oplr":   # no training rows: w = 0 (the regulariser's minimiser), nothing read, nothing spent
        assert np.all(batched[3].coef == 0.0) and np.all(batched[3].predictions == 0.0)
        assert lb[3].guarantee().epsilon == 0.0
    for k, (a, b) in enumerate(zip(batched, single)):
        assert_same(a, b, lb[k], ls[k], exact=params.get("prior") != "gamma")
        if k != 2:
            assert not isinstance(a, Exception), (k, a)


@pytest.mark.parametrize("name", ["plr_paper", "oplr_paper", "fmlr_paper", "oplr", "fmlr"])
def test_bad_epsilon_fails_every_split_with_one_line(name):
    alg = registry.get("algorithm", name)(**({"bound_y": 2.0} if name in ("oplr", "fmlr") else {}))
    splits = mixed_splits()[:3]
    got = alg.run_many(splits, float("nan"), 0.0, ledgers(3), 1)
    assert all(isinstance(g, UserError) and "epsilon must be > 0 and finite" in str(g) for g in got)


def test_minmax_in_place_equals_the_formula():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(50, 4))
    lo, hi = A.min(axis=0) - 0.1, A.max(axis=0) + 0.2
    want = 2.0 * (A - lo) / (hi - lo) - 1.0
    np.testing.assert_array_equal(_minmax(A, lo, hi), want)
    B = A.copy()
    assert _minmax(B, lo, hi, out=B) is B
    np.testing.assert_array_equal(B, want)
    hi[2] = lo[2]                                       # an empty range: that column maps to 0, the others as before
    C = A.copy()
    got = _minmax(C, lo, hi, out=C)
    assert np.all(got[:, 2] == 0.0)
    np.testing.assert_array_equal(got[:, [0, 1, 3]], want[:, [0, 1, 3]])


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("empty_range", [False, True])
def test_scaled_rows_equal_the_per_part_formula(shared, empty_range):
    """fmlr_paper's stacked scaling = with_bias of each part's ``_minmax`` on its own, to the bit; shared or per-part ranges, an empty range, an empty part, int rows."""
    rng = np.random.default_rng(5)
    parts = [rng.normal(size=(n, 3)) for n in (6, 0, 9, 4)]
    parts[3] = np.arange(12).reshape(4, 3)   # integer rows are scaled as floats
    lo0, hi0 = np.full(3, -2.5), np.full(3, 3.0)
    if empty_range:
        hi0[1] = lo0[1]
    lo = [lo0] * 4 if shared else [lo0 - j for j in range(4)]
    hi = [hi0] * 4 if shared else [hi0 + j * (1 - empty_range) for j in range(4)]
    got = _scaled_rows(parts, lo, hi)
    for p, l, h, g in zip(parts, lo, hi, got):
        np.testing.assert_array_equal(g, with_bias(_minmax(np.asarray(p, dtype=float), l, h)), strict=True)
    y = [rng.normal(size=n) for n in (6, 0, 9, 4)]
    for p, l, g in zip(y, [-1.0, -2.0, -3.0, -4.0], _scaled_rows(y, [-1.0, -2.0, -3.0, -4.0], [5.0] * 4, bias=False)):
        np.testing.assert_array_equal(g, _minmax(p, l, 5.0), strict=True)


@pytest.mark.parametrize("entries", [1, 10, 40960])
def test_scaled_rows_in_any_stacks_equal_the_per_part_formula(entries, monkeypatch):
    """The stacks ``_scaled_rows`` cuts the parts into (``_CHUNK_ENTRIES`` entries, rows or responses) change no
    float: every part as scaled on its own, each part a stack, several, or all in one."""
    from dpexp.families.gdsc.algorithms import compared_paper

    monkeypatch.setattr(compared_paper, "_CHUNK_ENTRIES", entries)
    rng = np.random.default_rng(8)
    parts = [rng.normal(size=(n, 4)) for n in (3, 0, 5, 2, 7)]
    lo, hi = [rng.normal(size=4) - 3.0 for _ in parts], [rng.normal(size=4) + 3.0 for _ in parts]
    for p, l, h, g in zip(parts, lo, hi, _scaled_rows(parts, lo, hi)):
        np.testing.assert_array_equal(g, with_bias(_minmax(p, l, h)), strict=True)
    y = [rng.normal(size=n) for n in (3, 0, 5, 2, 7)]
    ly, hy = [-3.0 - j for j in range(5)], [3.0 + j for j in range(5)]
    for p, l, h, g in zip(y, ly, hy, _scaled_rows(y, ly, hy, bias=False)):
        np.testing.assert_array_equal(g, _minmax(p, l, h), strict=True)


@pytest.mark.parametrize("entries", [1, 10, 40960])
@pytest.mark.parametrize("empty_range", [False, True])
def test_scaled_rows_with_the_bias_column_scaled_in_place_equal_the_per_part_formula(entries, empty_range,
                                                                                      monkeypatch):
    """One range shared by all parts (the Matlab path's x): the bias column scaled with the rows in one array
    (``_scaled_with_bias``) = with_bias of each part's ``_minmax`` on its own, to the bit — an empty range (the
    masked branch: that column 0), a NaN range, an empty part, any stacking; int rows take the plain path."""
    from dpexp.families.gdsc.algorithms import compared_paper

    monkeypatch.setattr(compared_paper, "_CHUNK_ENTRIES", entries)
    rng = np.random.default_rng(9)
    parts = [rng.normal(size=(n, 5)) * 3.0 for n in (4, 0, 6, 1, 3)]
    lo, hi = np.full(5, -2.0) - rng.uniform(size=5), np.full(5, 2.0) + rng.uniform(size=5)
    if empty_range:
        hi[1], lo[3] = lo[1], np.nan
    assert compared_paper._with_bias_in_place(parts, lo, hi)
    for p, g in zip(parts, _scaled_rows(parts, [lo] * len(parts), [hi] * len(parts))):
        want = with_bias(_minmax(p, lo, hi))
        np.testing.assert_array_equal(g, want, strict=True)
        assert np.all(g[:, 0] == 1.0)
    ints = [np.arange(12).reshape(4, 3), np.ones((2, 3))]
    assert not compared_paper._with_bias_in_place(ints, lo[:3], hi[:3])
    for p, g in zip(ints, _scaled_rows(ints, [lo[:3]] * 2, [hi[:3]] * 2)):
        np.testing.assert_array_equal(g, with_bias(_minmax(np.asarray(p, dtype=float), lo[:3], hi[:3])), strict=True)


@pytest.mark.parametrize("d", [1, 4, 10, 11])
def test_grams_stacked_per_shape_equal_each_split_alone(d):
    """The paper methods' XᵀX, Xᵀy of many small splits as one stacked product per shape = each split's own
    ``X.T @ X``, ``X.T @ y``, to the bit (wide-ranging values); a split of no rows, one alone in its shape, a
    non-contiguous X and int rows computed alone, mismatched rows failing alone with the error they raise."""
    from dpexp.families.gdsc.algorithms.compared_paper import _grams

    rng = np.random.default_rng(d)
    Xs = [rng.normal(size=(n, d)) * 10.0 ** rng.integers(-3, 4, size=(n, d)) for n in
          rng.choice([10, 9, 7, 3], size=60).tolist() + [0, 0, 5]]
    ys = [rng.normal(size=len(X)) * 100.0 for X in Xs]
    Xs.append(np.asfortranarray(rng.normal(size=(10, d))))
    ys.append(rng.normal(size=10))
    Xs.append(np.arange(10 * d).reshape(10, d))
    ys.append(np.arange(10))
    Xs.append(rng.normal(size=(10, d)))
    ys.append(rng.normal(size=9))                       # fails alone
    out = [None] * len(Xs)
    got = _grams(list(range(len(Xs))), Xs.__getitem__, ys.__getitem__, out)
    bad = len(Xs) - 1
    assert bad not in got and isinstance(out[bad], ValueError) and out[:bad] == [None] * bad
    with pytest.raises(ValueError) as exc:
        Xs[bad].T @ ys[bad]
    assert str(out[bad]) == str(exc.value)
    for k in range(bad):
        np.testing.assert_array_equal(got[k][0], Xs[k].T @ Xs[k], strict=True)
        np.testing.assert_array_equal(got[k][1], Xs[k].T @ ys[k], strict=True)


def test_stack_equals_np_stack():
    """The paper methods' ``_stack`` = ``np.stack``: the same shape, dtype and bytes (views, Fortran-ordered and
    mixed int/float arrays), and np.stack's own error for what it refuses (shapes that differ, no arrays)."""
    from dpexp.families.gdsc.algorithms.compared_paper import _stack

    rng = np.random.default_rng(4)
    G = rng.normal(size=(6, 3, 3))
    cases = [[G[j] for j in range(6)], [rng.normal(size=4) for _ in range(5)], [np.asfortranarray(G[0]), G[1].T],
             [np.arange(4), rng.normal(size=4)], [np.float64(1.5), np.float64(2.0)], [rng.normal(size=(1, 0))] * 3,
             [rng.normal(size=(2, 3))]]
    for arrays in cases:
        want, got = np.stack(arrays), _stack(arrays)
        assert got.shape == want.shape and got.dtype == want.dtype and got.tobytes() == want.tobytes()
    for bad in ([rng.normal(size=3), rng.normal(size=4)], []):
        with pytest.raises(ValueError) as want:
            np.stack(bad)
        with pytest.raises(ValueError) as got:
            _stack(bad)
        assert str(got.value) == str(want.value)


@pytest.mark.parametrize("trials", [1, 3])
def test_outputs_back_equals_the_per_split_formula(trials):
    """fmlr_paper's predictions mapped back to response units for all splits in one pass = each split's
    ``(w @ Zᵀ + 1)·(hi − lo)/2 + lo`` on its own, to the bit; a failed fit keeps its exception, an empty test set."""
    from dpexp.families.gdsc.algorithms.compared_paper import _outputs_back

    rng = np.random.default_rng(3)
    Zs = [rng.uniform(-1, 1, size=(n, 5)) for n in (7, 0, 4, 9)]
    W = [rng.normal(size=(trials, 5)) for _ in Zs]
    W[2] = ValueError("no fit")
    lo, hi = [-2.5, 0.3, -1.0, -7.25], [4.0, 1.1, 2.0, 0.5]
    lg = ledgers(6)
    for g in lg:
        g.public_only()
    out = [None] * 6
    _outputs_back([1, 2, 4, 5], W, Zs, lo, hi, lg, out)
    assert out[0] is None and out[3] is None and out[4] is W[2]
    for j, k in ((0, 1), (1, 2), (3, 5)):
        want = (W[j] @ Zs[j].T + 1.0) * (0.5 * (hi[j] - lo[j])) + lo[j]
        np.testing.assert_array_equal(out[k].predictions, want, strict=True)
        assert out[k].predictions.shape == (trials, len(Zs[j])) and out[k].coef is W[j]
        assert out[k].guarantee == lg[k].guarantee()


@pytest.mark.parametrize("n", [0, 5, 64, 200, 640])
@pytest.mark.parametrize("ufunc", [np.subtract, np.divide])
def test_by_column_equals_the_broadcast_call(n, ufunc):
    """Blocks of rows seen as one long row against the tiled column values: the same floats as the broadcast call
    (in place or not, a remainder of rows, too few rows, a non-contiguous array, a scalar)."""
    rng = np.random.default_rng(n)
    A = rng.normal(size=(n, 7)) * 1e3
    v = rng.normal(size=7) + 0.1
    want = ufunc(A, v)
    out = np.empty_like(A)
    _by_column(ufunc, A, v, out)
    np.testing.assert_array_equal(out, want, strict=True)
    B = A.copy()
    _by_column(ufunc, B, v, B)
    np.testing.assert_array_equal(B, want, strict=True)
    F = np.asfortranarray(A)
    _by_column(ufunc, F, v, F)
    np.testing.assert_array_equal(F, want, strict=True)
    _by_column(ufunc, A, 3.0, out)
    np.testing.assert_array_equal(out, ufunc(A, 3.0), strict=True)


@pytest.mark.parametrize("n", [63, 64, 130])
def test_minmax_of_many_rows_equals_the_formula(n):
    rng = np.random.default_rng(1)
    A = rng.normal(size=(n, 10))
    lo, hi = A.min(axis=0) - 0.1, A.max(axis=0) + 0.2
    want = 2.0 * (A - lo) / (hi - lo) - 1.0
    np.testing.assert_array_equal(_minmax(A, lo, hi), want, strict=True)
    np.testing.assert_array_equal(_minmax(A, lo, hi, out=A), want, strict=True)


def test_rows_stack_and_split_back():
    a, b, c = np.arange(6.0).reshape(3, 2), np.zeros((0, 2)), np.arange(4.0).reshape(2, 2) + 10
    rows = Rows([a, (b, c), c])
    assert rows.stack.shape == (7, 2)
    parts = rows.split(rows.stack * 2)
    np.testing.assert_array_equal(parts[0], 2 * a)
    np.testing.assert_array_equal(parts[1], 2 * c)
    np.testing.assert_array_equal(parts[2], 2 * c)
    np.testing.assert_array_equal(rows.per_row([1.0, 2.0, 3.0]), [1, 1, 1, 2, 2, 3, 3])
    x = np.arange(3.0)
    np.testing.assert_array_equal(repeat_trials(x, 2), np.broadcast_to(x, (2, 3)))
    np.testing.assert_array_equal(repeat_trials(np.ones((2, 3)), 4, axis=1).shape, (2, 4, 3))


def test_solve_stacked_keeps_an_error_with_its_problem():
    A = np.stack([np.eye(2), np.zeros((2, 2)), 2 * np.eye(2)])
    b = np.ones((3, 2))
    got = solve_stacked(lambda A, b: np.linalg.solve(A, b[..., None])[..., 0], A, b)
    np.testing.assert_array_equal(got[0], [1.0, 1.0])
    assert isinstance(got[1], np.linalg.LinAlgError)
    np.testing.assert_array_equal(got[2], [0.5, 0.5])


@pytest.mark.parametrize("secure", [False, True])
@pytest.mark.parametrize("trials", [1, 3])
def test_objective_noise_is_the_tuple_release_in_one_call(trials, secure):
    """The reference's one flat Laplace draw = the (M, α) tuple release with size=trials, with the same spend (the
    order of the draws the batched ``objective_noise_rows`` keeps, below)."""
    D = 5
    la, lb = ledgers(1, secure)[0], ledgers(1, secure)[0]
    dM, da = objective_noise(D, trials, 70.0, 2.0, la)
    tM, ta = laplace((np.zeros((D, D)), np.zeros(D)), 70.0, 2.0, lb, size=trials, label="objective")
    np.testing.assert_array_equal(dM, tM, strict=True)
    np.testing.assert_array_equal(da, ta, strict=True)
    assert repr(la.spends) == repr(lb.spends) and len(la.spends) == 1


@pytest.mark.parametrize("secure", [False, True])
@pytest.mark.parametrize("trials", [1, 3])
def test_objective_noise_rows_equal_objective_noise_per_cell(trials, secure):
    """The batched objective noise (fmlr, fmlr_paper) = the per-cell reference ``objective_noise``
    (tests/gdsc/stats_reference.py) cell by cell: the floats (rtol 1e-12: the same draws scaled by the same b) and
    the spend."""
    D, S = 4, 5
    la, lb = ledgers(S, secure), ledgers(S, secure)
    NM, NA = objective_noise_rows(D, trials, 48.0, 1.5, la)
    assert NM.shape == (S, trials, D, D) and NA.shape == (S, trials, D)
    for i in range(S):
        dM, da = objective_noise(D, trials, 48.0, 1.5, lb[i])
        np.testing.assert_allclose(NM[i], dM, rtol=1e-12, atol=0)
        np.testing.assert_allclose(NA[i], da, rtol=1e-12, atol=0)
        assert repr(la[i].spends) == repr(lb[i].spends) and len(la[i].spends) == 1
        if not secure:   # secure: the Laplace noise is OpenDP's (fp_safe), the rows' standard draws go unused
            assert np.array_equal(la[i].noise.bits64(2), lb[i].noise.bits64(2))   # the streams left at one place


@pytest.mark.parametrize("shape", [(3,), (2, 3), (0,), ()])
def test_repeat_trials_one_trial_is_a_fresh_copy(shape):
    a = np.arange(float(np.prod(shape))).reshape(shape)
    got = repeat_trials(a, 1)
    np.testing.assert_array_equal(got, np.broadcast_to(a, (1,) + a.shape).copy(), strict=True)
    assert got.flags.c_contiguous and got.flags.writeable and not np.shares_memory(got, a)


def test_objective_noise_rows_no_cells():
    NM, NA = objective_noise_rows(3, 2, 30.0, 1.0, [])
    assert NM.shape == (0, 2, 3, 3) and NA.shape == (0, 2, 3)


def _plr_alone(alg, split: Split, epsilon: float, ledger: PrivacyLedger, trials: int):
    """plr on one split, plainly: the reference ``perturbed_stats`` (tests/gdsc/stats_reference.py) through the
    ledger (the public-only fit without private rows), then ``posterior_mean_fixed`` on that split alone."""
    from dpexp.models.bayes_lr import posterior_mean_fixed
    from dpexp.types import Output

    d = split.d
    p = alg.params
    if split.X_private.shape[0] == 0:
        ledger.public_only()
        XX, Xy = np.zeros((trials, d, d)), np.zeros((trials, d))
    else:
        XX, Xy, _ = perturbed_stats(split.X_private, split.y_private, p.B_x, p.B_y, 0.5 * epsilon, 0.5 * epsilon,
                                    None, ledger, trials, p.sensitivity)
    Xu = split.X_public
    XX, Xy = XX + Xu.T @ Xu, Xy + Xu.T @ split.y_public
    w = solve_stacked(posterior_mean_fixed, XX[None], Xy[None], p.lam, p.lam0, p.solver)[0]
    return w if isinstance(w, Exception) else Output(predictions=w @ split.X_test.T, coef=w,
                                                     guarantee=ledger.guarantee())


@pytest.mark.parametrize("secure", [False, True])
@pytest.mark.parametrize("trials", [1, 3])
@pytest.mark.parametrize("solver,sensitivity", [("psd_floor", "tight"), ("direct", "tight"), ("psd_floor", "paper")])
def test_plr_batched_release_equals_perturbed_stats_split_by_split(solver, sensitivity, trials, secure):
    """plr's release (one draw call per cell, ``laplace_rows``) and its fit from one eigen-decomposition per batch
    equal the reference ``perturbed_stats`` + ``posterior_mean_fixed`` split by split at a tolerance (the batch may
    sum in another order), spends equal — with floored and unfloored splits, none private, d differing, and two
    splits whose rows do not match, which fail alone before any draw."""
    alg = registry.get("algorithm", "plr")(solver=solver, B_y=1.5, sensitivity=sensitivity)
    splits = mixed_splits()
    bad = make_split(20, 4, 4, 9)
    bad.y_private = bad.y_private[:-3]
    late = make_split(20, 4, 4, 11)
    late.y_public = late.y_public[:-1]      # fails after its release, as before: spends recorded, then the error
    splits[2:2] = [bad, late, make_split(0, 0, 4, 10), make_split(400, 2, 4, 12)]
    lb, ls = ledgers(len(splits), secure), ledgers(len(splits), secure)
    batched = alg.run_many(splits, 2.0, 0.0, lb, trials)
    assert isinstance(batched[2], Exception) and isinstance(batched[3], Exception)
    assert not lb[2].spends and not lb[3].spends and "do not match" in str(batched[3])
    del splits[2:4], batched[2:4], lb[2:4], ls[2:4]
    single = [_plr_alone(alg, s, 2.0, lg, trials) for s, lg in zip(splits, ls)]
    for k, (a, b) in enumerate(zip(batched, single)):
        assert_same(a, b, lb[k], ls[k], exact=False)


def test_fit_fixed_many_matches_posterior_mean_fixed_per_problem():
    """``batching.fit_fixed_many`` (``model.fixed_posterior``, each matrix floored on its own) equals the reference
    ``posterior_mean_fixed`` problem by problem at rtol 1e-9 (some need the floor, some not); a singular problem
    fails alone; a NaN problem fails alone."""
    from dpexp.families.gdsc.batching import fit_fixed_many as _fit
    from dpexp.models.bayes_lr import posterior_mean_fixed

    rng = np.random.default_rng(3)
    A = rng.normal(size=(9, 2, 5, 5))
    XX = A @ np.swapaxes(A, -1, -2)
    XX[::2] += rng.laplace(scale=3.0, size=XX[::2].shape)   # these need the floor, the others not
    Xy = rng.normal(size=(9, 2, 5))
    for solver in ("psd_floor", "direct"):
        ((rows, W),) = _fit(XX, Xy, 1.0, 1.0, solver)
        assert rows.tolist() == list(range(9))
        for j in range(9):
            for t in range(2):
                ref = posterior_mean_fixed(XX[j, t][None], Xy[j, t][None], 1.0, 1.0, solver)[0]
                np.testing.assert_allclose(W[j][t], ref, rtol=1e-9, atol=1e-12)
    XX[3] = 0.0                              # singular with λ0 = 0: the batched solve fails, each split alone
    XX[4, 0, 0, 0] = np.nan
    ((_, W),) = _fit(XX, Xy, 1.0, 0.0, "psd_floor")
    assert isinstance(W[3], np.linalg.LinAlgError) and isinstance(W[4], np.linalg.LinAlgError)
    assert not isinstance(W[1], Exception)


@pytest.mark.parametrize("l2_ball", [False, True])
def test_scale_unit_equals_the_formula(l2_ball):
    """``scale_unit`` (clipping and projecting its own quotient in place, in blocks of rows) = the formula with new
    arrays (the norms at rtol 1e-14: another summation order); float and int rows, rows over several blocks, no y,
    an empty block; its inputs are left alone."""
    from dpexp.families.gdsc.unit_box import _NORM_ROWS, scale_unit

    rng = np.random.default_rng(5)
    for X, y in ((rng.normal(scale=2.0, size=(40, 4)), rng.normal(scale=3.0, size=40)),
                 (rng.normal(scale=0.4, size=(2 * _NORM_ROWS + 77, 10)), rng.normal(size=2 * _NORM_ROWS + 77)),
                 (rng.integers(-3, 4, size=(7, 3)), None), (np.zeros((0, 3)), np.zeros(0))):
        X0, y0 = X.copy(), None if y is None else y.copy()
        Xs, ys = scale_unit(X, y, 1.5, 2.5, l2_ball)
        want = np.clip(X / 1.5, -1.0, 1.0)
        if l2_ball and want.size:
            want = want / np.maximum(np.linalg.norm(want, axis=1, keepdims=True), 1.0)
        assert Xs.shape == want.shape and Xs.dtype == want.dtype
        np.testing.assert_allclose(Xs, want, rtol=1e-14, atol=0)
        if y is None:
            assert ys is None
        else:
            np.testing.assert_array_equal(ys, np.clip(y / 2.5, -1.0, 1.0), strict=True)
        np.testing.assert_array_equal(X, X0, strict=True)
        if y is not None:
            np.testing.assert_array_equal(y, y0, strict=True)


def test_plr_run_is_seen_by_the_audit_view():
    """``run`` (one split) takes plr's split-by-split release, so the audit's view records what ``perturbed_stats``
    returns: the coefficients it audits are the d(d+1)/2 + d released statistics, equal to the batched release's."""
    from dpexp.families.gdsc.audit import released_statistics

    alg = registry.get("algorithm", "plr")(B_y=2.0)
    split = make_split(30, 0, 3, 1)   # no public rows: the batched statistics are the released ones
    d = split.X_private.shape[1]
    out = released_statistics(alg).run(split, 1.0, 0.0, PrivacyLedger(np.random.default_rng(0)), 4)
    assert out.coef.shape == (4, d * (d + 1) // 2 + d)
    from dpexp.families.gdsc.release_batch import perturbed_stats_many

    got = perturbed_stats_many([split, make_split(20, 4, 3, 2)], alg.params.B_x, alg.params.B_y, 1.0,
                               [PrivacyLedger(np.random.default_rng(0)), PrivacyLedger(np.random.default_rng(1))], 4,
                               [None] * 2)
    iu = np.triu_indices(d)
    np.testing.assert_array_equal(out.coef, np.concatenate([got[0][0][:, iu[0], iu[1]], got[0][1]], axis=1))


def test_plr_batched_release_checks_its_sensitivities_before_drawing():
    """Bounds whose sensitivities overflow: nothing is drawn as arrays (``perturbed_stats_many`` declines), and
    each split fails on its own as split by split — an error per cell, not one for the whole call."""
    from dpexp.families.gdsc.release_batch import perturbed_stats_many

    splits = [make_split(20, 4, 3, 1), make_split(30, 4, 3, 2)]
    lgs = [PrivacyLedger(np.random.default_rng(k)) for k in range(2)]
    out = [None] * 2
    assert perturbed_stats_many(splits, 1.0, 1e300, 1.0, lgs, 1, out) == {}
    assert all(not lg.spends for lg in lgs) and all(isinstance(o, Exception) for o in out)
    out = registry.get("algorithm", "plr")(B_y=1e300).run_many(splits, 1.0, 0.0, lgs, 1)
    assert len(out) == 2 and all(isinstance(o, Exception) for o in out)


def test_record_each_records_what_each_call_records():
    """``batching.record_each``: every ledger gets the Spend its own call records (one shared frozen value), the
    guarantee follows; inside ``for_trial`` each ledger's call makes its own trial-tagged Spend."""
    from dpexp.families.gdsc.batching import record_each

    for call in (lambda lg: lg.public_only(), lambda lg: lg.not_dp("a reason"), lambda lg: lg.public_only("x")):
        la, lb = ledgers(4), ledgers(4)
        la[2].public_only("earlier")
        lb[2].public_only("earlier")
        record_each(la, call)
        for lg in lb:
            call(lg)
        for a, b in zip(la, lb):
            assert repr(a.spends) == repr(b.spends) and a.guarantee() == b.guarantee()
    la, lb = ledgers(3), ledgers(3)
    with la[0].for_trial(1), lb[0].for_trial(1):
        record_each(la, lambda lg: lg.public_only())
        for lg in lb:
            lg.public_only()
    assert [repr(a.spends) for a in la] == [repr(b.spends) for b in lb]
    assert la[0].spends[0].trial == 1 and la[1].spends[0].trial is None
    record_each([], lambda lg: lg.public_only())


def _matlab_splits(drugs: int = 3, sizes=(0, 5, 40, 90), n_pub: int = 4, d: int = 4):
    """Splits as the Matlab path gives them: each drug's raw rows along the fold (``RawRows``, read-only, its
    ``whole``) and, per size, their first rows (views) with one range object for all (the path's x ranges)."""
    from dpexp.families.gdsc.datasets.protocols import RawRows

    rng = np.random.default_rng(5)
    lo, hi = np.full(d, -3.0), np.full(d, 4.0)
    out = []
    for j in range(drugs):
        R = rng.uniform(-3.0, 4.0, size=(100 + n_pub + 9, d))
        parts = [R[:100].copy(), R[100:100 + n_pub].copy(), R[100 + n_pub:].copy()]
        for a in parts:
            a.flags.writeable = False
        whole = RawRows(*parts, lo, hi, -2.0, 3.0)
        X = rng.normal(size=(113, d))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        y = rng.uniform(-2.0, 3.0, size=113)
        for m in sizes:
            raw = RawRows(whole.X_private[:m], whole.X_public, whole.X_test, lo, hi, -2.0, 3.0, whole)
            out.append(Split(X[:m], y[:m], X[100:100 + n_pub], y[100:100 + n_pub], X[104:], y[104:], {"raw": raw}))
    return out


class _CountingChunk(ChunkRows):
    """A ``ChunkRows`` that lists the scratch entries it computes (one item per computation)."""

    def kept(self, name, key, compute, maxsize=None):
        return super().kept(name, key, lambda: self.scratch.setdefault("made", []).append(name) or compute(),
                            maxsize)

    def select(self, keep):
        return _CountingChunk(tuple([self.subsets[i] for i in keep]), self.prefix, self.nested, self.scratch)


def _made(chunk: ChunkRows, name: str) -> int:
    return chunk.scratch.get("made", []).count(name)


@pytest.mark.parametrize("trials", [1, 2])
def test_fmlr_paper_prefixes_of_the_whole_rows_equal_the_plain_scaling(trials):
    """fmlr_paper in a chunk of nested sizes scaling each drug's whole rows once and slicing them (``RawRows.whole``)
    = scaling each split's own rows, to the bit, with the same spends; a split with no private rows and a failing
    split among them.  Without a chunk (the audit's calls) nothing is taken from the whole rows."""
    from dataclasses import replace

    alg = registry.get("algorithm", "fmlr_paper")()
    splits = _matlab_splits()
    splits[6].y_private = splits[6].y_private[:-2]          # fails in its objective step, alone
    plain = [Split(s.X_private, s.y_private, s.X_public, s.y_public, s.X_test, s.y_test,
                   {"raw": replace(s.meta["raw"], whole=None)}) for s in splits]
    chunk = _CountingChunk(tuple(f"drug{k // 4}" for k in range(len(splits))), (9, 4, 90), True, {})
    for _ in range(2):   # computed, then from the chunk's scratch
        lf, lp = ledgers(len(splits)), ledgers(len(splits))
        fast = alg.run_many(splits, 2.0, 0.0, lf, trials, chunk=chunk)
        slow = alg.run_many(plain, 2.0, 0.0, lp, trials)
        assert isinstance(fast[6], Exception) and not isinstance(fast[5], Exception)
        for k, (a, b) in enumerate(zip(fast, slow)):
            assert_same(a, b, lf[k], lp[k])
    assert _made(chunk, "gdsc.fmlr_paper_scaled") == 1
    # a split whose raw rows are not the first rows of its ``whole``, outside a chunk: its own rows are scaled
    s = splits[2]
    copy = Split(s.X_private, s.y_private, s.X_public, s.y_public, s.X_test, s.y_test,
                 {"raw": replace(s.meta["raw"], X_private=s.meta["raw"].X_private + 0.5)})
    moved = Split(s.X_private, s.y_private, s.X_public, s.y_public, s.X_test, s.y_test,
                  {"raw": replace(copy.meta["raw"], whole=None)})
    la, lb = ledgers(1), ledgers(1)
    assert_same(alg.run_many([copy], 2.0, 0.0, la)[0], alg.run_many([moved], 2.0, 0.0, lb)[0], la[0], lb[0])


@pytest.mark.parametrize("n", [1, 7, 64, 333, 801])
def test_minus_two_after_the_product_equals_the_scaled_transpose_product(n):
    """fmlr_paper's −2·(Zᵀy) = (−2Zᵀ)y (its former form), to the bit: ×(−2) is exact and both are one product of
    the same layout."""
    rng = np.random.default_rng(n)
    for _ in range(20):
        Z = with_bias(rng.uniform(-1, 1, size=(n, 10)))
        y = rng.uniform(-1, 1, size=n)
        got = Z.T @ y
        got *= -2.0
        np.testing.assert_array_equal(got, -2.0 * Z.T @ y, strict=True)


def _chunk_splits(drugs: int = 3, sizes=(0, 5, 40, 90), d: int = 4, n_pub: int = 6, scale: float = 1.0):
    """Splits as our GDSC path gives them (``datasets.gdsc``): per drug read-only public and test rows and whole
    private rows, and per size the first rows of the whole (views); rows longer than 1 and responses beyond the
    bounds (the projection and clipping act)."""
    rng = np.random.default_rng(11)
    out = []
    for _ in range(drugs):
        X = rng.normal(size=(100 + n_pub + 7, d)) * scale
        y = 3.0 * rng.normal(size=len(X))
        pv, Xu, Xt = X[:100].copy(), X[100:100 + n_pub].copy(), X[100 + n_pub:].copy()
        yv, yu, yt = y[:100].copy(), y[100:100 + n_pub].copy(), y[100 + n_pub:].copy()
        for a in (pv, yv, Xu, yu, Xt):
            a.flags.writeable = False
        out += [Split(pv[:m], yv[:m], Xu, yu, Xt, yt, {"x_bound": 1.0}) for m in sizes]
    return out


def _copied(s: Split) -> Split:
    """The split's rows as writeable copies (no memo: each split scaled on its own)."""
    return Split(*(np.array(a) for a in (s.X_private, s.y_private, s.X_public, s.y_public, s.X_test, s.y_test)),
                 dict(s.meta))


def test_paper_methods_share_the_private_products_of_one_chunk():
    """plr_paper then oplr_paper on the same splits of one chunk: the second takes the private XᵀX, Xᵀy the first
    computed (kept in the chunk's scratch under the rows' names) and both equal their runs without a chunk to the
    bit, with the same spends — a split without private rows and a failing one among them."""
    splits = [make_split(40, 5, 4, 1), make_split(0, 5, 4, 2), make_split(75, 3, 4, 3), make_split(12, 6, 4, 4)]
    splits[3].y_private = splits[3].y_private[:-2]     # fails alone
    plain = [_copied(s) for s in splits]
    chunk = _CountingChunk(("a", "b", "c", "d"), (5, 5, 40), True, {})
    for name in ("plr_paper", "oplr_paper"):
        alg = registry.get("algorithm", name)()
        lf, lp = ledgers(len(splits)), ledgers(len(splits))
        fast, slow = alg.run_many(splits, 2.0, 0.0, lf, 2, chunk=chunk), alg.run_many(plain, 2.0, 0.0, lp, 2)
        assert isinstance(fast[3], Exception) and not any(isinstance(a, Exception) for a in fast[:3])
        for k, (a, b) in enumerate(zip(fast, slow)):
            assert_same(a, b, lf[k], lp[k])
    assert _made(chunk, "gdsc.paper_private_grams") == 1   # computed once, by plr_paper


def test_plr_paper_public_products_once_for_every_size_of_a_chunk():
    """plr_paper on every size of a chunk of nested sizes (the same public rows, new private rows per size): the
    public XᵀX, Xᵀy computed once (kept under the public rows' names) and every size's outputs and spends equal the
    run without a chunk to the bit — a split whose public responses do not match its rows fails at every size."""
    base = [make_split(60, 5, 4, 1), make_split(60, 3, 4, 2), make_split(60, 5, 4, 3), make_split(60, 6, 4, 4)]
    base[2].y_public = base[2].y_public[:-1]   # fails alone
    scratch: dict = {}
    alg = registry.get("algorithm", "plr_paper")()
    for m in (0, 10, 35, 10):
        splits = [Split(s.X_private[:m], s.y_private[:m], s.X_public, s.y_public, s.X_test, s.y_test, s.meta)
                  for s in base]
        chunk = _CountingChunk(("a", "b", "c", "d"), (5, 6, m), True, scratch)
        plain = [_copied(s) for s in splits]
        lf, lp = ledgers(len(splits)), ledgers(len(splits))
        fast, slow = alg.run_many(splits, 2.0, 0.0, lf, 2, chunk=chunk), alg.run_many(plain, 2.0, 0.0, lp, 2)
        assert isinstance(fast[2], Exception) and not any(isinstance(a, Exception) for a in fast[:2] + fast[3:])
        for k, (a, b) in enumerate(zip(fast, slow)):
            assert_same(a, b, lf[k], lp[k])
    assert _made(chunk, "gdsc.paper_public_grams") == 1


@pytest.mark.parametrize("name", ["plr_paper", "oplr_paper"])
def test_shared_private_products_follow_the_splits_to_other_positions(name):
    """The same splits of a chunk handed again at other positions (behind a split of another d, whose group is
    fitted apart): each split gets its own products, found by its rows' names, not those of its old position —
    every output and spend equals the run without a chunk (the review's case: products filed by position gave
    split a the products of c and dropped c's private rows)."""
    a, c = make_split(40, 5, 4, 1), make_split(30, 5, 4, 3)
    other = make_split(20, 5, 3, 2)
    names = {id(a): "a", id(c): "c", id(other): "o"}
    alg = registry.get("algorithm", name)()
    scratch: dict = {}
    for order in ([a, c], [other, a, c], [a, other, c]):
        chunk = ChunkRows(tuple(names[id(s)] for s in order), (5, 5, 40), True, scratch)
        plain = [_copied(s) for s in order]
        lf, lp = ledgers(len(order)), ledgers(len(order))
        fast, slow = alg.run_many(order, 2.0, 0.0, lf, 1, chunk=chunk), alg.run_many(plain, 2.0, 0.0, lp, 1)
        for k, (x, y) in enumerate(zip(fast, slow)):
            assert_same(x, y, lf[k], lp[k])




@pytest.mark.parametrize("trials", [1, 2])
def test_oplr_paper_pooled_fits_equal_each_size_alone(trials, monkeypatch):
    """oplr_paper's fits of a chunk's sizes solved at once (``_pooled_fits``: the first call with private rows
    solves every later size too) give every size's call what it gives alone: the same floats and spends; a split
    whose problem differs from the pooled one (here: a later size's split handed over changed) is solved at its
    own call."""
    from dpexp.families.gdsc.algorithms import compared_paper
    from dpexp.families.gdsc.algorithms.compared_paper import _pooled_fits

    solved = []
    solver = compared_paper.oplr_minconf
    monkeypatch.setattr(compared_paper, "oplr_minconf", lambda A, *a: solved.append(len(A)) or solver(A, *a))
    alg = registry.get("algorithm", "oplr_paper")()
    subsets = ("a", "b", "c", "d")
    grid = ((7, 3, 0), (7, 3, 20), (7, 3, 45), (7, 3, 90))
    made = {p: [make_split(p[2] + (j == 3 and p[2] == 90), 3, 4, 10 * j + p[2]) for j in range(len(subsets))]
            for p in grid}
    handed = {p: list(v) for p, v in made.items()}
    handed[(7, 3, 90)][2] = make_split(90, 3, 4, 999)   # not the split the pooled solve saw
    scratch: dict = {}
    for at, p in enumerate(grid):
        rows = ChunkRows(subsets, p, True, scratch, grid[at:], lambda q: list(zip(subsets, made[q])))
        splits = handed[p]
        lp, la = ledgers(len(splits)), ledgers(len(splits))
        pooled = alg.run_many(splits, 2.0, 0.0, lp, trials, chunk=rows)
        assert solved == {0: [], 1: [12], 2: [], 3: [1]}[at]   # all at once, then only the changed split
        solved.clear()
        alone = alg.run_many(splits, 2.0, 0.0, la, trials)
        solved.clear()
        for k in range(len(splits)):
            assert_same(pooled[k], alone[k], lp[k], la[k])
    table = _pooled_fits(ChunkRows(subsets, grid[1], True, scratch, grid[1:], lambda q: []), 4, 2.0, 1.0)
    assert len(table) == len(subsets) * 3   # the three sizes with private rows, solved once
