"""``gamma_norm_rows`` (oplr's batched output perturbation) against the ``gamma_norm`` calls it replaces, cell by
cell: the same floats to the bit, the same spends and the streams left at the same place — seeded and secure noise,
with and without trials, with and without a scale override; a failing check raises before anything is drawn or
recorded."""

import numpy as np
import pytest

from dpexp.errors import UserError
from dpexp.privacy.guarantee import PrivacyAccountingError
from dpexp.privacy.ledger import PrivacyLedger
from dpexp.privacy.mechanisms import gamma_norm, gamma_norm_rows
from dpexp.privacy.noise import SecureNoise


def ledgers(n: int, secure: bool) -> list[PrivacyLedger]:
    if secure:   # a fixed byte stream per cell, so that two runs see the same bytes
        return [PrivacyLedger(SecureNoise(entropy=np.random.default_rng(11 + k).bytes)) for k in range(n)]
    return [PrivacyLedger(np.random.default_rng(11 + k)) for k in range(n)]


@pytest.mark.parametrize("with_scale", [False, True])
@pytest.mark.parametrize("secure", [False, True])
@pytest.mark.parametrize("size", [None, 1, 3])
def test_gamma_norm_rows_equal_the_separate_calls(secure, size, with_scale):
    S, d, eps = 6, 5, 1.7
    rng = np.random.default_rng(2)
    W, sens = rng.normal(size=(S, d)), rng.uniform(0.05, 4.0, size=S)
    sens[3] = 0.0
    # oplr's form: a scale computed by another expression of Δ/ε (equal up to rounding)
    scales = [20.0 / ((20.0 / s) * eps) if s else 0.0 for s in sens] if with_scale else None
    la, lb = ledgers(S, secure), ledgers(S, secure)
    got = gamma_norm_rows(W, sens, eps, la, size=size, scales=scales, label="w")
    assert got.shape == (S,) + (() if size is None else (size,)) + (d,)
    for i in range(S):
        ref = gamma_norm(W[i], float(sens[i]), eps, lb[i], size=size,
                         scale=None if scales is None else scales[i], label="w")
        np.testing.assert_array_equal(got[i], ref, strict=True)
        assert repr(la[i].spends) == repr(lb[i].spends) and la[i].guarantee() == lb[i].guarantee()
        assert np.array_equal(la[i].noise.bits64(2), lb[i].noise.bits64(2))


def test_gamma_norm_rows_checks_before_drawing():
    lg = ledgers(3, False)
    with pytest.raises(PrivacyAccountingError):   # the third cell's scale implies ε = 2 > 1
        gamma_norm_rows(np.zeros((3, 2)), [1.0, 1.0, 1.0], 1.0, lg, scales=[1.0, 2.0, 0.5])
    with pytest.raises(UserError):
        gamma_norm_rows(np.zeros((3, 2)), [1.0, -1.0, 1.0], 1.0, lg)
    with pytest.raises(UserError):
        gamma_norm_rows(np.zeros((3, 2)), [1.0, 1.0, 1.0], 0.0, lg)
    with pytest.raises(ValueError):
        gamma_norm_rows(np.zeros((2, 2)), [1.0, 1.0], 1.0, lg)
    with pytest.raises(ValueError):
        gamma_norm_rows(np.zeros(3), [1.0, 1.0, 1.0], 1.0, lg)
    assert all(not x.spends for x in lg)
    fresh = ledgers(3, False)
    assert all(np.array_equal(a.noise.bits64(2), b.noise.bits64(2)) for a, b in zip(lg, fresh))


def test_gamma_norm_rows_first_error_as_cell_by_cell():
    """The checks of all cells at once never change which error comes first: a bad sensitivity before malformed
    scales (as the per-cell checks order them), and an implied ε that overflows raises the accounting error, not a
    floating-point warning (even with warnings as errors); nothing drawn or recorded."""
    import warnings

    lg = ledgers(2, False)
    with pytest.raises(UserError, match="sensitivity"):
        gamma_norm_rows(np.zeros((2, 3)), [-1.0, 1.0], 1.0, lg, scales=[1.0, 1.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(PrivacyAccountingError):
            gamma_norm_rows(np.zeros((1, 3)), [1e308], 1.0, lg[:1], scales=[1e-10])
    assert all(not x.spends for x in lg)


def test_gamma_norm_rows_no_cells():
    assert gamma_norm_rows(np.zeros((0, 3)), [], 1.0, [], size=2).shape == (0, 2, 3)


@pytest.mark.parametrize("case", [
    ([0.5, 1.0, 2.0], [0.25, 0.5, 1.0]),                 # every check passes: the one test for all cells
    ([0.5, 1.0, 2.0], [0.25, 0.4, 0.5]),                 # the second and third imply ε > 2: the second's error
    ([0.5, 0.0, 2.0], [0.25, 0.0, 1.0]),                 # Δ = b = 0: passes, checked cell by cell
    ([0.5, float("nan"), 2.0], [0.25, 0.5, 1.0]),        # a NaN sensitivity with a finite scale fails
    ([0.5, float("nan"), 2.0], [0.25, float("nan"), 1.0]),  # ... and passes with a NaN one (⊥), as in gamma_norm
    ([0.5, 1.0, float("inf")], [0.25, 0.5, 1.0]),        # an infinite sensitivity fails
    ([0.5, 1.0, 2.0], [0.25, -0.5, 1.0]),                # a negative scale fails
    ([0.5, 1.0, 2.0], [0.25, float("inf"), 1.0]),        # an infinite scale fails
])
def test_gamma_norm_rows_checks_as_gamma_norm_cell_by_cell(case):
    """The checks of the sensitivities and scales, tested for all cells at once when every one passes, else cell
    by cell: the same outcome as ``gamma_norm`` of each cell in order (its first error, or the same releases)."""
    sens, scales = case
    S, eps = len(sens), 2.0
    W = np.arange(S * 2, dtype=float).reshape(S, 2)
    la, lb = ledgers(S, False), ledgers(S, False)
    try:
        got = gamma_norm_rows(W, sens, eps, la, size=1, scales=scales, label="w")
    except Exception as exc:   # the error the first failing cell raises alone, before anything is drawn
        with pytest.raises(type(exc), match=None) as ref:
            for i in range(S):
                gamma_norm(W[i], sens[i], eps, np.random.default_rng(0), size=1, scale=scales[i], label="w")
        assert str(ref.value).replace("gamma_norm", "") == str(exc).replace("gamma_norm", "")
        assert all(not x.spends for x in la)
        return
    for i in range(S):
        ref = gamma_norm(W[i], sens[i], eps, lb[i], size=1, scale=scales[i], label="w")
        np.testing.assert_array_equal(got[i], ref, strict=True)
        assert repr(la[i].spends) == repr(lb[i].spends)
