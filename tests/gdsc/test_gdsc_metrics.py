"""wpc: the probabilistic c-index and its exact null standard deviation (checked against all permutations)."""

import itertools

import numpy as np
import pytest
from scipy import special

from dpexp.families.gdsc.metrics import WPC, pc_index, pc_null_sd, standardised_pc
from dpexp.metrics.ranks import average_ranks
from dpexp.types import Output, Split


def brute_pc(p, y, sd):
    tot, cnt = 0.0, 0
    for i in range(len(y)):
        for j in range(i + 1, len(y)):
            q = 0.5 * (1 + special.erf((y[i] - y[j]) / (2 * sd)))
            tot += q if p[i] > p[j] else (1 - q if p[i] < p[j] else 0.5)
            cnt += 1
    return tot / cnt


def test_pc_index_matches_pairwise_definition_with_ties():
    rng = np.random.default_rng(0)
    y = rng.normal(size=9)
    p = np.round(rng.normal(size=9), 1)
    p[3] = p[5]                                        # a tie in the predictions scores 1/2
    assert pc_index(p, y, 0.8) == pytest.approx(brute_pc(p, y, 0.8), abs=1e-12)
    assert pc_index(y, y, 1e-9) == pytest.approx(1.0)  # perfect order, tiny noise
    assert pc_index(-y, y, 1e-9) == pytest.approx(0.0)


@pytest.mark.parametrize("n", [3, 5, 7])
def test_null_sd_exact_over_all_permutations(n):
    rng = np.random.default_rng(n)
    y = rng.normal(size=n) * 2
    vals = np.array([pc_index(np.array(p, float), y, 0.9) for p in itertools.permutations(range(n))])
    assert vals.mean() == pytest.approx(0.5, abs=1e-12)
    assert pc_null_sd(y, 0.9) == pytest.approx(vals.std(), rel=1e-10)


def test_wpc_metric_uses_meta_sd_and_trials():
    rng = np.random.default_rng(1)
    y = rng.normal(size=40)
    preds = np.vstack([y + rng.normal(size=40), rng.normal(size=40)])
    X = np.zeros((40, 2))
    split = Split(X[:0], y[:0], X[:0], y[:0], X, y, {"y_sd": 1.3})
    v = WPC()(Output(predictions=preds), split)
    z = standardised_pc(preds, y, 1.3)
    assert v == pytest.approx(z.mean())
    assert z[0] > 3                      # informative predictions are several null sds above 1/2
    # cached response terms give the same value on a second algorithm's output
    assert WPC()(Output(predictions=preds), split) == pytest.approx(v)
    assert WPC()(Output(predictions=np.ones((1, 40))), split) == 0.0   # all ties: pc = 1/2


# ---------------------------------------------------------------------------------------------------------------
# batched scoring (Metric.many) against one cell at a time, to the bit
# ---------------------------------------------------------------------------------------------------------------
def _shared_response_cells(seed: int):
    """Cells of a few 'drugs': each drug's cells share test responses (the same array, or an equal copy as a new
    split of another size would hold), with ties, constant and non-finite predictions, several trials, and a
    drug with more than 127 test rows (int16 codes)."""
    rng = np.random.default_rng(seed)
    outs, splits = [], []
    for drug, n in enumerate([3, 40, 91, 100, 130, 2]):
        y = rng.normal(size=n) if drug % 2 else np.round(rng.normal(size=n), 1)     # tied responses too
        meta = {"y_sd": float(rng.uniform(0.5, 2))} if drug != 1 else {}
        if drug % 2:
            meta["n_requested"] = {"n_private": 10 * drug, "n_public": drug}
        for c in range(12):
            P = rng.normal(size=(1, n)) if c % 4 else np.round(rng.normal(size=(1, n)), 1)
            if c == 5:
                P[0, -1] = np.nan
            if c == 6:
                P[:] = -0.0 if drug % 2 else 2.0
            if c == 7:
                P = rng.normal(size=(3, n))
            if c == 8:
                P = np.round(P * 3).astype(int)                  # integer and single-precision predictions
            if c == 9:
                P = P.astype(np.float32)
            yc = y if c % 3 else y.copy()
            X = np.zeros((n, 1))
            splits.append(Split(X[:c], yc[:c], X[:2], yc[:2], X, yc, dict(meta)))
            outs.append(Output(predictions=P))
    order = rng.permutation(len(outs))                      # drugs interleaved
    return [outs[i] for i in order], [splits[i] for i in order]


@pytest.mark.parametrize("name", ["spearman", "wpc", "n_private_requested", "n_public_requested"])
def test_many_equals_one_cell_at_a_time_with_shared_responses(name, many_equals_one):
    for seed in range(2):
        one = many_equals_one(name, *_shared_response_cells(seed))
        assert any(v != 0.0 for v in one)


def _repeated_prediction_cells(seed: int, two_sds: bool = False):
    """Cells of two 'drugs' whose predictions repeat (a baseline that ignores n_private gives equal predictions at
    every size): the same array, equal copies, −0 against 0, tied rows, a repeated non-finite row; ``two_sds``: one
    drug's splits disagree on y_sd (the group is scored in two parts)."""
    rng = np.random.default_rng(seed)
    outs, splits = [], []
    for drug, n in enumerate([91, 12]):
        y = rng.normal(size=n)
        base = [rng.normal(size=(1, n)), np.round(rng.normal(size=(1, n)), 1), np.zeros((1, n)), -np.zeros((1, n))]
        nan = rng.normal(size=(1, n))
        nan[0, 1] = np.nan
        for c in range(14):
            P = base[c % 4] if c < 8 else (base[c % 4].copy() if c < 12 else nan)
            if c in (1, 9):
                P = rng.normal(size=(1, n))                  # distinct rows among the repeated ones
            meta = {"y_sd": 0.7 if not (two_sds and drug == 0 and c % 2) else 1.1}
            X = np.zeros((n, 1))
            splits.append(Split(X[:c], y[:c], X[:2], y[:2], X, y, meta))
            outs.append(Output(predictions=P))
    order = rng.permutation(len(outs))
    return [outs[i] for i in order], [splits[i] for i in order]


@pytest.mark.parametrize("two_sds", [False, True])
@pytest.mark.parametrize("name", ["spearman", "wpc"])
def test_many_with_repeated_predictions_equals_one_cell_at_a_time(name, two_sds, many_equals_one):
    from dpexp.metrics.cells import response_groups

    for seed in range(3):
        outs, splits = _repeated_prediction_cells(seed, two_sds)
        t = response_groups(outs, splits)
        assert all(g.inverse is not None and len(g.unique_codes) < len(g.cells) for g in t.groups)
        for g in t.groups:   # the per-cell ranks and codes are the distinct rows' ones, expanded
            assert np.array_equal(g.codes, g.unique_codes[g.inverse])
            P = np.concatenate([outs[k].predictions for k in g.cells])
            assert np.array_equal(g.ranks, average_ranks(P))
        one = many_equals_one(name, outs, splits)
        assert any(v != 0.0 for v in one)


def test_distinct_rows_by_bytes():
    from dpexp.metrics.cells import distinct_rows

    P = np.array([[1.0, 2.0], [0.0, 0.0], [1.0, 2.0], [-0.0, 0.0], [0.0, 0.0]])
    first, inverse = distinct_rows(P)
    assert first == [0, 1, 3] and inverse.tolist() == [0, 1, 0, 2, 1]       # −0 is kept apart from 0
    assert distinct_rows(P[:2]) == (None, None) and distinct_rows(P[:1]) == (None, None)
    assert distinct_rows(np.empty((3, 0)))[1].tolist() == [0, 0, 0]        # no columns: all rows equal


@pytest.mark.parametrize("n", [3, 8, 17, 90, 91, 100, 127, 128, 150])
def test_gamma_rows_is_the_sign_matrix_sum(n):
    """``gamma_rows`` is Σ a_ij sign(p_i − p_j) (the einsum of the sign matrix, to 1e-12), the same floats from the
    predictions and from their integer codes, and each row's value alone or among any other rows."""
    from dpexp.families.gdsc.metrics import _response_terms, gamma_rows
    from dpexp.metrics.cells import ranks_and_codes

    rng = np.random.default_rng(n)
    a = _response_terms(rng.normal(size=n), 0.9)[0]
    P = rng.normal(size=(10, n))
    P[2] = np.round(P[2], 1)                                 # ties
    P[3] = 1.0                                               # all ties: Γ = 0
    P[4, :2] = [5e-324, -5e-324]                             # distinct subnormals still order
    got = gamma_rows(a, P)
    np.testing.assert_allclose(got, np.einsum("ij,tij->t", a, np.sign(P[:, :, None] - P[:, None, :])), rtol=1e-12,
                               atol=1e-12 * n)
    assert got[3] == 0.0
    codes = ranks_and_codes(P)[1]
    assert gamma_rows(a, codes).tobytes() == got.tobytes()
    for rows in ([0], [6, 2, 4], list(range(7)), list(range(9, -1, -1))):
        assert gamma_rows(a, P[rows]).tobytes() == got[rows].tobytes()
        assert gamma_rows(a, codes[rows]).tobytes() == got[rows].tobytes()


def test_ranks_and_codes_order_ties_and_widths():
    from dpexp.metrics.accuracy import average_ranks
    from dpexp.metrics.cells import ranks_and_codes

    rng = np.random.default_rng(0)
    for n in (1, 5, 127, 128):
        A = rng.normal(size=(4, n))
        A[1] = np.round(A[1])
        A[2, : n // 2] = 0.0
        A[2, n // 2:] = -0.0                                 # -0 ties with 0
        ranks, codes = ranks_and_codes(A)
        assert np.array_equal(ranks, average_ranks(A))
        assert codes.dtype == (np.int8 if n <= 127 else np.int16)
        s_codes = np.sign(codes[:, :, None].astype(int) - codes[:, None, :])
        assert np.array_equal(s_codes, np.sign(A[:, :, None] - A[:, None, :]))
        assert codes.min() == 0 and np.all(codes.max(axis=1) == [len(np.unique(r)) - 1 for r in A])


def test_response_groups_by_values_shared_by_two_metrics():
    from dpexp.metrics.accuracy import average_ranks
    from dpexp.metrics.cells import response_groups, scored_together

    outs, splits = _shared_response_cells(1)
    with scored_together():                                                # the runner's call of every metric
        t = response_groups(outs, splits)
        assert response_groups(outs, splits) is t                          # the same lists: computed once
        assert response_groups(list(outs), splits) is not t                # other lists: their own
    assert response_groups(outs, splits) is not response_groups(outs, splits)   # outside: each call its own
    assert len(t.groups) == 6                                              # one per drug, copies merged
    assert sorted([k for g in t.groups for k in g.cells + g.nonfinite] + t.other) == list(range(len(outs)))
    assert len(t.other) == 6                                               # the three-trial cells
    for g in t.groups:
        assert all(np.array_equal(splits[k].y_test, g.y) for k in g.cells)
        P = np.concatenate([outs[k].predictions for k in g.cells]).astype(float)
        assert np.array_equal(g.ranks, average_ranks(P))
        assert all(not np.isfinite(outs[k].predictions).all() for k in g.nonfinite)


def test_array_key_is_the_entry_memo_array_uses():
    from dpexp import cache

    y = np.arange(5.0)
    cache.clear("test.array_key")
    first = cache.memo_array("test.array_key", y, 3, lambda: "computed")
    assert cache.memo("test.array_key", (*cache.array_key(y.copy()), 3), lambda: "again") == first
    assert cache.memo("test.array_key", (*cache.array_key(y[::-1]), 3), lambda: "other") == "other"


def test_response_terms_in_place_equal_the_plain_expressions_to_the_bit():
    # _response_terms computes a_ij in place and _null_sd calls the reductions directly: the same values as the
    # documented expressions (0.5 erf((y_i - y_j)/(2 sd)), np.sum of squares) bit for bit, ties and n = 3 included
    from scipy import special

    from dpexp.families.gdsc.metrics import _response_terms

    rng = np.random.default_rng(12)
    for n, sd in ((3, 0.7), (17, 1e-3), (64, 2.5), (97, 0.9)):
        y = rng.normal(size=n)
        y[: n // 3] = np.round(y[: n // 3], 1)       # tied responses
        a, s = _response_terms(y, sd)
        want = 0.5 * special.erf((y[:, None] - y[None, :]) / (2.0 * sd))
        assert a.tobytes() == want.tobytes() and a.flags.c_contiguous
        A2, A3 = float(np.sum(want**2)), float(np.sum(want.sum(axis=1) ** 2))
        B2, B3 = n * (n - 1.0), n * (n * n - 1.0) / 3.0
        var = 2.0 / (n * (n - 1.0)) * A2 * B2 + 4.0 / (n * (n - 1.0) * (n - 2.0)) * (A3 - A2) * (B3 - B2)
        assert s.hex() == float(np.sqrt(max(var, 0.0)) / (n * (n - 1.0))).hex()


@pytest.mark.parametrize("sds", [(0.8, 0.8, 0.8), (0.8, float("nan"), 0.8), (float("nan"),) * 3, (0.0, 0.0, 0.0),
                                 (0.8, 1.2, 0.8), (None, None, None)])
def test_wpc_many_with_splits_shared_by_several_cells_equals_one_cell_at_a_time(sds, many_equals_one):
    # as the runner calls it: each split (one per size) shared by the cells of several algorithms, a drug's
    # sizes giving its σ_y (one value: scored as one group; a NaN, 0 or differing values: each value on its own;
    # none: the test responses' std)
    rng = np.random.default_rng(11)
    outs, splits = [], []
    for drug, n in enumerate([40, 9]):
        y = rng.normal(size=n)
        for size, sd in enumerate(sds):
            meta = {} if sd is None else {"y_sd": sd}
            sp = Split(np.zeros((size, 1)), y[:size], np.zeros((2, 1)), y[:2], np.zeros((n, 1)), y, meta)
            for algo in range(3):
                P = rng.normal(size=(1, n)) if algo or not size else np.zeros((1, n))   # a repeated row too
                outs.append(Output(predictions=P))
                splits.append(sp)
    one = many_equals_one("wpc", outs, splits)
    assert any(v != 0.0 for v in one) == any(sd is None or sd > 0 for sd in sds)
