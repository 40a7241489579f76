"""The batched heuristic releases (``heuristic_laplace_rows``, ``heuristic_gamma_norm_rows``, used by the
paper-protocol plr/oplr) against the one-cell calls they replace: the same floats to the bit and the same spends,
seeded and secure noise, with and without trials, cells of differing scales."""

import numpy as np
import pytest

from dpexp.errors import UserError
from dpexp.privacy.ledger import PrivacyLedger
from dpexp.privacy.mechanisms import (heuristic_gamma_norm, heuristic_gamma_norm_rows, heuristic_laplace,
                                      heuristic_laplace_rows)
from dpexp.privacy.noise import SecureNoise


def ledgers(n: int, secure: bool) -> list[PrivacyLedger]:
    if secure:   # a fixed byte stream per cell, so that two runs see the same bytes
        return [PrivacyLedger(SecureNoise(entropy=np.random.default_rng(7 + k).bytes)) for k in range(n)]
    return [PrivacyLedger(np.random.default_rng(7 + k)) for k in range(n)]


@pytest.mark.parametrize("secure", [False, True])
@pytest.mark.parametrize("size", [None, 1, 3])
def test_laplace_rows_equal_the_separate_calls(secure, size):
    S, d = 5, 4
    rng = np.random.default_rng(0)
    A, b = rng.normal(size=(S, d, d)), rng.normal(size=(S, d))
    A[1] = 0.0   # zero values (plr_paper's), and ordinary ones
    la, lb = ledgers(S, secure), ledgers(S, secure)
    U, V = heuristic_laplace_rows((A, b), (3.5, 0.25), la, size=size, reason="why", labels=("X'X", "X'y"))
    for i in range(S):
        u = heuristic_laplace(A[i], 3.5, lb[i], size=size, reason="why", label="X'X")
        v = heuristic_laplace(b[i], 0.25, lb[i], size=size, reason="why", label="X'y")
        np.testing.assert_array_equal(U[i], u, strict=True)
        np.testing.assert_array_equal(V[i], v, strict=True)
        assert repr(la[i].spends) == repr(lb[i].spends) and la[i].guarantee() == lb[i].guarantee()
        # the streams were left at the same place
        assert np.array_equal(la[i].noise.bits64(2), lb[i].noise.bits64(2))


def test_laplace_rows_errors():
    lg = ledgers(2, False)
    with pytest.raises(UserError):
        heuristic_laplace_rows((np.zeros((2, 3)),), (-1.0,), lg, reason="r", labels=("a",))
    with pytest.raises(ValueError):
        heuristic_laplace_rows((np.zeros((3, 3)),), (1.0,), lg, reason="r", labels=("a",))
    with pytest.raises(ValueError):
        heuristic_laplace_rows((np.zeros((2, 3)),), (np.ones(2),), lg, reason="r", labels=("a",))
    assert all(not x.spends for x in lg)


@pytest.mark.parametrize("secure", [False, True])
@pytest.mark.parametrize("size", [None, 1, 4])
def test_gamma_norm_rows_equal_the_separate_calls(secure, size):
    S, d = 6, 5
    rng = np.random.default_rng(1)
    W, sc = rng.normal(size=(S, d)), rng.uniform(0.1, 3.0, size=S)
    sc[2] = 0.0
    la, lb = ledgers(S, secure), ledgers(S, secure)
    got = heuristic_gamma_norm_rows(W, sc, la, size=size, reason="why", label="w")
    for i in range(S):
        ref = heuristic_gamma_norm(W[i], sc[i], lb[i], size=size, reason="why", label="w")
        np.testing.assert_array_equal(got[i], ref, strict=True)
        assert repr(la[i].spends) == repr(lb[i].spends)
        assert np.array_equal(la[i].noise.bits64(2), lb[i].noise.bits64(2))


def test_gamma_norm_rows_errors():
    lg = ledgers(2, False)
    with pytest.raises(UserError):
        heuristic_gamma_norm_rows(np.zeros((2, 3)), [1.0, -1.0], lg, reason="r")
    with pytest.raises(UserError, match="got inf"):   # checked at once, then cell by cell: the failing one's error
        heuristic_gamma_norm_rows(np.zeros((2, 3)), [1.0, np.inf], lg, reason="r")
    with pytest.raises(ValueError):
        heuristic_gamma_norm_rows(np.zeros(3), [1.0], lg[:1], reason="r")
    with pytest.raises(ValueError):
        heuristic_gamma_norm_rows(np.zeros((3, 3)), [1.0] * 3, lg, reason="r")
    assert all(not x.spends for x in lg)


def test_no_cells():
    U, = heuristic_laplace_rows((np.zeros((0, 3)),), (1.0,), [], size=2, reason="r", labels=("a",))
    assert U.shape == (0, 2, 3)
    assert heuristic_gamma_norm_rows(np.zeros((0, 3)), [], [], size=2, reason="r").shape == (0, 2, 3)


def test_gamma_norm_rows_nan_scale_passes_as_alone():
    """A NaN scale fails the checks tested at once for all cells, and passes the cell-by-cell ones, as alone."""
    la, lb = ledgers(2, False), ledgers(2, False)
    got = heuristic_gamma_norm_rows(np.zeros((2, 3)), [1.0, np.nan], la, size=1, reason="r")
    for i, x in enumerate([1.0, np.nan]):
        ref = heuristic_gamma_norm(np.zeros(3), x, lb[i], size=1, reason="r")
        np.testing.assert_array_equal(got[i], ref, strict=True)
        assert repr(la[i].spends) == repr(lb[i].spends)
