"""``blocks.Blocks``: the layout of row sets by equal n, and Gram products per group equal to each set's own
``Z.T @ Z`` and ``Z.T @ y`` to the bit."""

import numpy as np
import pytest

from dpexp.families.gdsc.blocks import Blocks, row_norms
from gdsc_bitwise import same


def test_layout_groups_equal_n_in_order_of_first_appearance():
    b = Blocks([3, 2, 3, 0, 2, 3, 0])
    assert [(n, m) for n, m, _ in b.blocks] == [(3, [0, 2, 5]), (2, [1, 4]), (0, [3, 6])]
    assert b.order == [0, 2, 5, 1, 4, 3, 6]
    parts = [np.full((n, 2), i, dtype=float) for i, n in enumerate(b.counts)]
    A = b.cat(parts)
    assert A.shape == (13, 2)
    for i, p in enumerate(b.parts(A)):
        np.testing.assert_array_equal(p, parts[i], strict=True)
    pairs = [(p[:1], p[1:]) for p in parts[:3]] + [(p,) for p in parts[3:]]   # tuples: rows that follow each other
    np.testing.assert_array_equal(b.cat(pairs), A, strict=True)


@pytest.mark.parametrize("D", [1, 3, 11, 65])
def test_gram_equals_each_sets_own_products(D):
    rng = np.random.default_rng(D)
    counts = [9, 1, 183, 9, 0, 47, 183, 2, 9, 400, 0]
    parts = [rng.normal(size=(n, D)) * 10.0 ** rng.uniform(-5, 5, size=(n, 1)) for n in counts]
    ys = [rng.normal(size=n) * 10.0 ** rng.uniform(-3, 3) for n in counts]
    b = Blocks(counts)
    Z, y = b.cat(parts), b.cat(ys)
    ZZ, Zy = b.gram(Z, y)
    ZZ2, none = b.gram(Z)
    assert none is None
    for i, (P, v) in enumerate(zip(parts, ys)):
        assert ZZ[i].tobytes() == (P.T @ P).tobytes() == ZZ2[i].tobytes()
        assert Zy[i].tobytes() == (P.T @ v).tobytes()


@pytest.mark.parametrize("d", [1, 2, 7, 8, 9, 16, 63, 130])
def test_row_norms_match_numpy_norm(d):
    """``row_norms`` = ``np.linalg.norm(axis=-1)`` at rtol 1e-14 (another summation order: a few ulps), on rows of
    widely different magnitudes and zeros; a non-finite entry gives inf / NaN as there; the rows are not touched."""
    rng = np.random.default_rng(d)
    X = rng.normal(size=(301, d)) * 10.0 ** rng.uniform(-100, 100, size=(301, 1))
    X[3] = 0.0
    X[5, d // 2] = np.inf
    X[6, 0] = np.nan
    X0 = X.copy()
    with np.errstate(over="ignore", invalid="ignore"):
        got, ref = row_norms(X), np.linalg.norm(X, axis=-1)
    np.testing.assert_allclose(got, ref, rtol=1e-14)
    assert np.isinf(got[5]) and np.isnan(got[6]) and got[3] == 0.0
    assert row_norms(X[:0]).shape == (0,)
    same(X0, X)
