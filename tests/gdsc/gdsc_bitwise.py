"""Helpers of the tests that hold a batched GDSC path to its per-split twin, to the bit (test_release_batch,
test_adassp_batch): small unit-norm splits, seeded or secure (fixed byte streams) ledgers, and a bitwise comparison."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from dpexp.privacy.ledger import PrivacyLedger
from dpexp.privacy.noise import SecureNoise
from dpexp.types import Split


def split(seed: int, n: int = 40, d: int = 3, n_pub: int = 6, n_test: int = 7, scale: float = 1.0) -> Split:
    """Unit-norm rows, y linear plus noise; the first n // 3 private rows scaled by ``scale`` (rows longer than a
    norm bound; 1.0 leaves them as they are)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n + n_pub + n_test, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    X[: n // 3] *= scale
    y = X @ rng.normal(size=d) + 0.3 * rng.normal(size=len(X))
    meta = {"sigma_x": float(X.std()), "sigma_y": float(y.std())}
    return Split(X[:n], y[:n], X[n:n + n_pub], y[n:n + n_pub], X[n + n_pub:], y[n + n_pub:], meta)


def ledgers(k: int, secure: bool = False) -> list[PrivacyLedger]:
    """One ledger per cell, seeded 100 + i; ``secure``: SecureNoise driven by a fixed byte stream per cell (the
    same bytes in two calls), so that a batched secure path compares to its per-split twin to the bit and a seeded
    fallback shows."""
    if secure:
        return [PrivacyLedger(SecureNoise(entropy=np.random.default_rng(100 + i).bytes)) for i in range(k)]
    return [PrivacyLedger(np.random.default_rng(100 + i)) for i in range(k)]


def same(a, b) -> None:
    """``a`` and ``b`` equal to the bit: dicts (keys in order), sequences, arrays (shape and bytes), other values
    (type and repr)."""
    if isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            same(a[k], b[k])
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y)
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape and a.tobytes() == b.tobytes()
    else:
        assert type(a) is type(b) and repr(a) == repr(b)


def make_split(n_priv: int, n_pub: int, d: int, seed: int, raw: bool | str = False, shared=None) -> Split:
    """Unit-norm rows (as GDSC's), y on a wider scale than the bounds (so clipping acts), optional Matlab-path raw
    rows for fmlr_paper (``raw='constant'``: a constant column, the masked min–max branch)."""
    rng = np.random.default_rng(seed)
    n = n_priv + n_pub + 7
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = 2.0 * X @ rng.normal(size=d) + rng.normal(size=n)
    v, u, t = slice(0, n_priv), slice(n_priv, n_priv + n_pub), slice(n_priv + n_pub, None)
    meta = {"x_bound": 1.0}
    if raw:
        R = 3.0 * X + 1.0
        if raw == "constant":
            R[:, 0] = 2.5
        lo, hi = (shared if shared is not None else (R.min(axis=0), R.max(axis=0)))
        meta["raw"] = SimpleNamespace(X_private=R[v], X_public=R[u], X_test=R[t], x_min=lo, x_max=hi,
                                      y_min=float(y.min()), y_max=float(y.max()))
    return Split(X[v], y[v], X[u], y[u], X[t], y[t], meta)
