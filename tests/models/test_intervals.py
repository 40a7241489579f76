"""The Gaussian intervals computed when first read (``LazyIntervals``) equal the eager ``gaussian_intervals`` to the
bit, behave as the read-only dict the calibration metrics read, and pickle / copy as a plain dict."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from dpexp.models.intervals import (LEVELS, LazyIntervals, gaussian_intervals, gaussian_intervals_many,
                                    lazy_gaussian_intervals)


def _posteriors(S=5, T=2, d=3, seed=0):
    rng = np.random.default_rng(seed)
    mean = rng.normal(size=(S, T, d))
    A = rng.normal(size=(S, T, d, d))
    cov = A @ np.swapaxes(A, -1, -2)
    cov[0, 0, 1, 1] = -1e-3   # a rounding-negative variance: floored at 0 in both
    Xs = [rng.normal(size=(m, d)) for m in (4, 1, 6, 4, 2)[:S]]
    return mean, cov, Xs


def _bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def test_lazy_equals_eager_to_the_bit():
    mean, cov, Xs = _posteriors()
    for i, (mu, ci, pi) in enumerate(gaussian_intervals_many(mean, cov, Xs)):
        c1, p1 = gaussian_intervals(mean[i], cov[i], Xs[i])
        _bits(mu, mean[i] @ Xs[i].T)
        assert isinstance(ci, LazyIntervals) and isinstance(pi, LazyIntervals)
        assert list(ci) == list(c1) == list(LEVELS) and list(pi) == list(p1)
        for lv in LEVELS:
            for q in (0, 1):
                _bits(ci[lv][q], c1[lv][q])
                _bits(pi[lv][q], p1[lv][q])
        assert [lv for lv, _ in pi.items()] == list(LEVELS)


def test_nothing_is_computed_until_read_and_then_once():
    mean, cov, Xs = _posteriors()
    ci, pi = lazy_gaussian_intervals(mean[2], cov[2], Xs[2])
    assert len(ci) == len(LEVELS) and list(pi) == list(LEVELS) and bool(pi)
    assert ci._post._value is None                 # len, iteration and truth need no arithmetic
    lo = pi[0.9][0]
    assert ci._post._value is not None and ci._post._args is None
    assert pi[0.9][0] is lo                        # kept, not recomputed
    assert 0.9 in pi and 0.3 not in pi
    with pytest.raises(KeyError):
        pi[0.3]


def test_pickles_and_copies_as_a_dict():
    mean, cov, Xs = _posteriors()
    ci, pi = lazy_gaussian_intervals(mean[0], cov[0], Xs[0])
    c1, p1 = gaussian_intervals(mean[0], cov[0], Xs[0])
    for back in (pickle.loads(pickle.dumps(pi)), copy.deepcopy(pi), copy.copy(pi)):
        assert type(back) is dict and list(back) == list(p1)
        for lv in LEVELS:
            _bits(back[lv][0], p1[lv][0])
    assert dict(ci).keys() == c1.keys()


def test_bad_levels_fail_at_once():
    mean, cov, Xs = _posteriors()
    with pytest.raises(ValueError, match="levels"):
        lazy_gaussian_intervals(mean[0], cov[0], Xs[0], levels=(0.5, 1.0))
    with pytest.raises(ValueError, match="levels"):
        gaussian_intervals_many(mean, cov, Xs, levels=(0.0,))
