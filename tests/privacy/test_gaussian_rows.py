"""``standard_normal_rows`` + ``gaussian_rows`` (the Gaussian mechanism for S cells at once) against one ``gaussian``
call per cell and release: the same noise (one stream per cell, consumed in the same order), the same spends; the
shape check that keeps one draw from being reused."""

from __future__ import annotations

import numpy as np
import pytest

from dpexp.privacy.ledger import PrivacyLedger
from dpexp.privacy.mechanisms import gaussian, gaussian_rows, standard_normal_rows


def _ledgers(k):
    return [PrivacyLedger(np.random.default_rng(50 + i)) for i in range(k)]


@pytest.mark.parametrize("per_trial", [False, True])
def test_rows_equal_per_cell_gaussian_calls(per_trial):
    S, T, m = 3, 4, 5
    rng = np.random.default_rng(0)
    sig = rng.uniform(0.5, 2.0, size=(S, T) if per_trial else (S, 1))
    sens = 0.3 * sig
    v1, v2 = rng.normal(size=(S, T)), rng.normal(size=(S, T, m))
    la, lb = _ledgers(S), _ledgers(S)
    Z = standard_normal_rows(lb, T * (1 + m))
    got1 = gaussian_rows(v1, Z[:, :T], sig, sens, 0.7, 1e-6, lb, calibration="analytic", label="a")
    got2 = gaussian_rows(v2, Z[:, T:].reshape(S, T, m), sig, sens, 0.7, 1e-6, lb, calibration="analytic", label="b")
    for i in range(S):
        s_i = sig[i] if per_trial else float(sig[i, 0])
        d_i = sens[i] if per_trial else float(sens[i, 0])
        w1 = v1[i] + gaussian(np.zeros(()), s_i, la[i], T, sensitivity=d_i, epsilon=0.7, delta=1e-6,
                              calibration="analytic", label="a")
        w2 = v2[i] + gaussian(np.zeros(m), s_i, la[i], T, sensitivity=d_i, epsilon=0.7, delta=1e-6,
                              calibration="analytic", label="b")
        np.testing.assert_allclose(got1[i], w1, rtol=1e-15, atol=0)
        np.testing.assert_allclose(got2[i], w2, rtol=1e-15, atol=0)
        assert repr(la[i].spends) == repr(lb[i].spends)


def test_shape_mismatch_raises_before_recording():
    lg = _ledgers(2)
    with pytest.raises(ValueError, match="standard draws"):
        gaussian_rows(np.zeros((2, 3)), np.zeros((2, 1)), np.ones(2), np.ones(2), 1.0, 1e-6, lg)
    assert all(not g.spends for g in lg)
