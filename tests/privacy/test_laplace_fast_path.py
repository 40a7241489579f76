"""The Laplace mechanism's usual call (one sensitivity, float arithmetic: ``_laplace_one_scale``) draws, returns and
records exactly what its general path does."""

from __future__ import annotations

import numpy as np
import pytest

from dpexp.errors import UserError
from dpexp.privacy import mechanisms
from dpexp.privacy.ledger import PrivacyLedger


def _both(value, sensitivity, epsilon, size):
    """(fast, general) results and spends of the same call on two equal streams."""
    got = []
    for fast in (True, False):
        ledger = PrivacyLedger(np.random.default_rng(7))
        if fast:
            out = mechanisms.laplace(value, sensitivity, epsilon, ledger, size=size, label="s")
        else:   # the general path: the scale given explicitly is the one the fast path computes
            b = np.asarray(sensitivity, dtype=float) / float(epsilon)
            out = mechanisms.laplace(value, sensitivity, epsilon, ledger, size=size, scale=b, label="s")
        got.append((out, ledger.spends))
    return got


_VALUES = [0.0, np.zeros(3), np.arange(6.0).reshape(2, 3), (np.zeros((2, 2)), np.ones(2))]
_SENSITIVITIES = [1.5, 2, np.float64(0.3), np.array(0.3), np.array([0.7]), 0.0]
# a per-trial (one-entry array) sensitivity needs size= (that call is an error, test_fast_path_keeps_the_errors)
_CASES = [(v, s, n) for v in _VALUES for s in _SENSITIVITIES for n in (None, 1, 3) if n is not None or np.ndim(s) == 0]


@pytest.mark.parametrize("value, sensitivity, size", _CASES)
def test_fast_path_equals_general_path(value, sensitivity, size):
    (fa, fs), (ga, gs) = _both(value, sensitivity, 0.8, size)
    for a, b in zip(fa if isinstance(fa, tuple) else (fa,), ga if isinstance(ga, tuple) else (ga,)):
        assert np.array_equal(a, b) and np.shape(a) == np.shape(b)
    assert fs == gs and fs[0].epsilon == 0.8 and fs[0].sensitivity == float(np.ravel(sensitivity)[0])


def test_fast_path_keeps_the_errors():
    ledger = PrivacyLedger(np.random.default_rng(0))
    with pytest.raises(UserError):
        mechanisms.laplace(0.0, -1.0, 1.0, ledger)
    with pytest.raises(UserError):
        mechanisms.laplace(0.0, 1.0, 0.0, ledger)
    with pytest.raises(UserError):
        mechanisms.laplace(0.0, 1.0, float("inf"), ledger)
    with pytest.raises(Exception):
        mechanisms.laplace(np.zeros(2), np.array([1.0]), 1.0, ledger)   # per-trial array without size=
    assert ledger.spends == []
