"""Noise sources: where the randomness of privacy noise comes from.

A *noise source* offers the subset of ``numpy.random.Generator``'s API that mechanisms use (``laplace``, ``normal``,
``standard_normal``, ``gumbel``, ``exponential``, ``gamma``, ``standard_gamma``, ``standard_t``, ``random``,
``uniform``, ``integers``) plus ``bits64`` (raw 64-bit words) and ``generator`` (a ``numpy.random.Generator`` for
randomness that is *not* privacy noise, e.g. matchings or inference seeds).  Two implementations:

* ``SeededNoise(rng)`` delegates every call to the ``numpy.random.Generator`` the runner derives from the root seed
  (``dpexp/rng.py``).  It produces exactly the draws, in exactly the order, of the direct ``rng.<method>`` calls it
  replaces, so converted algorithms keep byte-identical results.  Anyone holding the manifest (root seed + names)
  can regenerate every noise value: fine for experiments, never for a release.
* ``SecureNoise()`` draws from the operating system's CSPRNG (``os.urandom``) and records no seed.  Every
  distribution is a standard transform of 53-bit (or 52-bit, for open intervals) uniforms built from 64-bit words:
  inverse CDFs for Laplace, exponential, Gumbel and Gaussian (``scipy.special.ndtri``), Marsaglia & Tsang (2000)
  for the Gamma, normal / sqrt(chi²/df) for Student's t.  These are *textbook* floating-point samplers: see
  ``docs/privacy.md`` ("Floating point") for what that implies (Mironov 2012) and ``dpexp.privacy.snapping`` for
  the floating-point-safe Laplace release.

Tail truncation of the secure samplers (a consequence of finite uniforms, stated for completeness): |Laplace| ≤
36.8 b, |Gaussian| ≤ 8.3 σ, Gumbel in [−3.6, 36.8]; the probability mass cut off is below 2⁻⁵².
"""

from __future__ import annotations

import math
import os
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

import numpy as np
from scipy import special

from dpexp.errors import UserError

NOISE_MODES = ("seeded", "secure")

Size = int | Sequence[int] | None


@runtime_checkable
class NoiseSource(Protocol):
    """What mechanisms draw from (a subset of ``numpy.random.Generator``'s API, same signatures)."""

    secure: bool

    def laplace(self, loc: Any = 0.0, scale: Any = 1.0, size: Size = None) -> Any: ...
    def normal(self, loc: Any = 0.0, scale: Any = 1.0, size: Size = None) -> Any: ...
    def standard_normal(self, size: Size = None) -> Any: ...
    def gumbel(self, loc: Any = 0.0, scale: Any = 1.0, size: Size = None) -> Any: ...
    def exponential(self, scale: Any = 1.0, size: Size = None) -> Any: ...
    def gamma(self, shape: Any, scale: Any = 1.0, size: Size = None) -> Any: ...
    def standard_gamma(self, shape: Any, size: Size = None) -> Any: ...
    def standard_t(self, df: Any, size: Size = None) -> Any: ...
    def random(self, size: Size = None) -> Any: ...
    def uniform(self, low: Any = 0.0, high: Any = 1.0, size: Size = None) -> Any: ...
    def integers(self, low: int, high: int | None = None, size: Size = None, dtype: Any = np.int64) -> Any: ...
    def bits64(self, n: int) -> np.ndarray: ...

    @property
    def generator(self) -> np.random.Generator: ...


# --------------------------------------------------------------------------------------------------- seeded
class SeededNoise:
    """Reproducible noise: every call is the same call on the wrapped ``numpy.random.Generator``."""

    secure = False

    textbook_used: frozenset[str] = frozenset()   # seeded draws keep the idealised guarantee (simulation)

    def __init__(self, rng: np.random.Generator) -> None:
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"SeededNoise needs a numpy.random.Generator, got {type(rng).__name__}")
        self._rng = rng

    @property
    def generator(self) -> np.random.Generator:
        """The wrapped generator itself: draws from it interleave with the noise draws in one stream."""
        return self._rng

    def laplace(self, loc=0.0, scale=1.0, size=None):
        return self._rng.laplace(loc, scale, size)

    def normal(self, loc=0.0, scale=1.0, size=None):
        return self._rng.normal(loc, scale, size)

    def standard_normal(self, size=None):
        return self._rng.standard_normal(size)

    def gumbel(self, loc=0.0, scale=1.0, size=None):
        return self._rng.gumbel(loc, scale, size)

    def exponential(self, scale=1.0, size=None):
        return self._rng.exponential(scale, size)

    def gamma(self, shape, scale=1.0, size=None):
        return self._rng.gamma(shape, scale, size)

    def standard_gamma(self, shape, size=None):
        return self._rng.standard_gamma(shape, size)

    def standard_t(self, df, size=None):
        return self._rng.standard_t(df, size)

    def random(self, size=None):
        return self._rng.random(size)

    def uniform(self, low=0.0, high=1.0, size=None):
        return self._rng.uniform(low, high, size)

    def integers(self, low, high=None, size=None, dtype=np.int64):
        return self._rng.integers(low, high, size, dtype=dtype)

    def bits64(self, n: int) -> np.ndarray:
        """``n`` uniform 64-bit words."""
        return self._rng.integers(0, np.iinfo(np.uint64).max, size=int(n), dtype=np.uint64, endpoint=True)

    def __repr__(self) -> str:
        return "SeededNoise(numpy Generator)"


# --------------------------------------------------------------------------------------------------- secure
def _out_shape(size: Size, *params: Any) -> tuple[int, ...]:
    if size is None:
        return tuple(np.broadcast_shapes(*(np.shape(p) for p in params))) if params else ()
    return (int(size),) if isinstance(size, (int, np.integer)) else tuple(int(s) for s in size)


def _finish(x: np.ndarray, size: Size, params_scalar: bool) -> Any:
    """numpy's convention: a Python float when neither ``size`` nor an array parameter was given."""
    if size is None and params_scalar and x.ndim == 0:
        return float(x)
    return x


def _scalar(*params: Any) -> bool:
    return all(np.ndim(p) == 0 for p in params)


class SecureNoise:
    """Noise from the OS CSPRNG (``os.urandom``); never seeded, never reproducible.

    ``entropy`` (a function n -> n random bytes) is injectable so that tests can drive the transforms with a fixed
    byte stream; production code leaves it at ``os.urandom``.
    """

    secure = True

    def __init__(self, entropy: Callable[[int], bytes] = os.urandom) -> None:
        self._entropy = entropy
        self._gen: np.random.Generator | None = None
        #: the textbook continuous samplers this source has drawn from (``laplace``, ``normal``, ``gumbel``, …):
        #: floating-point samplers whose outputs' low bits may depend on the value they perturb (Mironov 2012).
        #: dpexp's Laplace and Gaussian releases in secure mode never come here (OpenDP, ``fp_safe``; snapping);
        #: a release that does makes its ledger's guarantee ``none`` (``PrivacyLedger.guarantee``; docs/privacy.md).
        self.textbook_used: set[str] = set()

    def _textbook(self, name: str) -> None:
        self.textbook_used.add(name)

    # ---- raw material
    def bits64(self, n: int) -> np.ndarray:
        """``n`` uniform 64-bit words (little-endian from the byte source)."""
        n = int(n)
        if n <= 0:
            return np.zeros(0, dtype=np.uint64)
        return np.frombuffer(self._entropy(8 * n), dtype="<u8").astype(np.uint64, copy=False)

    def _u53(self, shape: tuple[int, ...]) -> np.ndarray:
        """Uniform on [0, 1) with 53-bit resolution: k·2⁻⁵³, k uniform in [0, 2⁵³)."""
        n = math.prod(shape)
        return ((self.bits64(n) >> np.uint64(11)).astype(np.float64) * 2.0**-53).reshape(shape)

    def _u_open(self, shape: tuple[int, ...]) -> np.ndarray:
        """Uniform on (0, 1), 52-bit midpoints (k + ½)·2⁻⁵², exactly representable."""
        n = math.prod(shape)
        return (((self.bits64(n) >> np.uint64(12)).astype(np.float64) + 0.5) * 2.0**-52).reshape(shape)

    def _u_left_open(self, shape: tuple[int, ...]) -> np.ndarray:
        """Uniform on (0, 1]: (k + 1)·2⁻⁵³."""
        n = math.prod(shape)
        return (((self.bits64(n) >> np.uint64(11)).astype(np.float64) + 1.0) * 2.0**-53).reshape(shape)

    @property
    def generator(self) -> np.random.Generator:
        """A PCG64 generator seeded once from 128 OS-random bits and never recorded — for randomness that is not
        privacy noise (matchings, inference seeds).  PCG64 is not a CSPRNG; do not draw privacy noise from it."""
        if self._gen is None:
            self._gen = np.random.Generator(np.random.PCG64(int.from_bytes(self._entropy(16), "little")))
        return self._gen

    # ---- distributions (same signatures and broadcasting as numpy.random.Generator)
    def random(self, size=None):
        return _finish(self._u53(_out_shape(size)), size, True)

    def uniform(self, low=0.0, high=1.0, size=None):
        shape = _out_shape(size, low, high)
        low_a, high_a = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
        return _finish(low_a + (high_a - low_a) * self._u53(shape), size, _scalar(low, high))

    def standard_exponential(self, shape: tuple[int, ...]) -> np.ndarray:
        """Exp(1) = −ln U, U uniform on (0, 1] (inverse CDF)."""
        return -np.log(self._u_left_open(shape))

    def exponential(self, scale=1.0, size=None):
        self._textbook("exponential")
        _check_nonneg(scale, "scale")
        shape = _out_shape(size, scale)
        return _finish(np.asarray(scale, dtype=float) * self.standard_exponential(shape), size, _scalar(scale))

    def laplace(self, loc=0.0, scale=1.0, size=None):
        """loc ± scale·(−ln U): a uniform sign (lowest bit) times an Exp(1) magnitude (top 53 bits, inverse CDF)."""
        self._textbook("laplace")
        _check_nonneg(scale, "scale")
        shape = _out_shape(size, loc, scale)
        w = self.bits64(math.prod(shape)).reshape(shape)
        mag = -np.log(((w >> np.uint64(11)).astype(np.float64) + 1.0) * 2.0**-53)
        sign = 1.0 - 2.0 * (w & np.uint64(1)).astype(np.float64)
        out = np.asarray(loc, dtype=float) + np.asarray(scale, dtype=float) * (sign * mag)
        return _finish(out, size, _scalar(loc, scale))

    def standard_normal(self, size=None):
        """Φ⁻¹(U) with U uniform on (0, 1) (inverse CDF, ``scipy.special.ndtri``)."""
        self._textbook("normal")
        return _finish(special.ndtri(self._u_open(_out_shape(size))), size, True)

    def normal(self, loc=0.0, scale=1.0, size=None):
        self._textbook("normal")
        _check_nonneg(scale, "scale")
        shape = _out_shape(size, loc, scale)
        out = np.asarray(loc, dtype=float) + np.asarray(scale, dtype=float) * special.ndtri(self._u_open(shape))
        return _finish(out, size, _scalar(loc, scale))

    def gumbel(self, loc=0.0, scale=1.0, size=None):
        """loc − scale·ln(−ln U), U uniform on (0, 1) (inverse CDF)."""
        self._textbook("gumbel")
        _check_nonneg(scale, "scale")
        shape = _out_shape(size, loc, scale)
        g = -np.log(-np.log(self._u_open(shape)))
        return _finish(np.asarray(loc, dtype=float) + np.asarray(scale, dtype=float) * g, size, _scalar(loc, scale))

    def standard_gamma(self, shape, size=None):
        """Gamma(k, 1) by Marsaglia & Tsang (2000) (vectorised rejection); k < 1 via Gamma(k + 1)·U^(1/k)."""
        self._textbook("gamma")
        k = np.asarray(shape, dtype=float)
        if np.any(~((k > 0) & (k < np.inf))):   # an infinite shape is never accepted: the loop below would not end
            raise ValueError(f"gamma shape must be > 0 and finite, got {shape}")
        out_shape = _out_shape(size, k)
        kk = np.broadcast_to(k, out_shape).ravel()
        boost = kk < 1.0
        a = np.where(boost, kk + 1.0, kk)
        d = a - 1.0 / 3.0
        c = 1.0 / np.sqrt(9.0 * d)
        out = np.empty(kk.size)
        todo = np.arange(kk.size)
        while todo.size:
            x = special.ndtri(self._u_open((todo.size,)))
            v = (1.0 + c[todo] * x) ** 3
            u = self._u_open((todo.size,))
            ok = v > 0
            with np.errstate(invalid="ignore", divide="ignore"):
                accept = ok & (np.log(u) < 0.5 * x * x + d[todo] - d[todo] * v + d[todo] * np.log(np.where(ok, v, 1.0)))
            out[todo[accept]] = d[todo[accept]] * v[accept]
            todo = todo[~accept]
        if np.any(boost):
            idx = np.flatnonzero(boost)
            out[idx] *= self._u_open((idx.size,)) ** (1.0 / kk[idx])
        return _finish(out.reshape(out_shape), size, _scalar(shape))

    def gamma(self, shape, scale=1.0, size=None):
        _check_nonneg(scale, "scale")
        out_shape = _out_shape(size, shape, scale)
        g = np.asarray(self.standard_gamma(np.broadcast_to(np.asarray(shape, dtype=float), out_shape)))
        return _finish(np.asarray(scale, dtype=float) * g, size, _scalar(shape, scale))

    def standard_t(self, df, size=None):
        """T_ν = Z / sqrt(χ²_ν / ν) with χ²_ν = 2·Gamma(ν/2, 1)."""
        self._textbook("student t")
        nu = np.asarray(df, dtype=float)
        if np.any(~(nu > 0)):
            raise ValueError(f"df must be > 0, got {df}")
        shape = _out_shape(size, nu)
        z = special.ndtri(self._u_open(shape))
        chi2 = 2.0 * np.asarray(self.standard_gamma(np.broadcast_to(nu / 2.0, shape)))
        return _finish(z / np.sqrt(chi2 / nu), size, _scalar(df))

    def integers(self, low, high=None, size=None, dtype=np.int64):
        """Uniform integers in [low, high) by rejection on 64-bit words (no modulo bias); meant for a few values
        (seeds, entropy words), not bulk draws."""
        if high is None:
            low, high = 0, low
        low, high = int(low), int(high)
        r = high - low
        if not 0 < r <= 2**64:
            raise ValueError(f"need low < high with high - low <= 2**64, got [{low}, {high})")
        shape = _out_shape(size)
        n = math.prod(shape)
        if r == 2**64:
            vals = [int(v) for v in self.bits64(n)]
        else:
            limit = (2**64 // r) * r
            vals = []
            while len(vals) < n:
                vals.extend(int(v) % r for v in self.bits64(n - len(vals)) if int(v) < limit)
        arr = np.array([low + v for v in vals], dtype=dtype).reshape(shape)
        return arr[()] if size is None else arr

    def __repr__(self) -> str:
        return "SecureNoise(os.urandom)"


def _check_nonneg(x: Any, name: str) -> None:
    if np.any(np.asarray(x, dtype=float) < 0):
        raise ValueError(f"{name} must be >= 0, got {x}")


# --------------------------------------------------------------------------------------------------- helpers
def make_noise(mode: str, rng: np.random.Generator | None = None) -> SeededNoise | SecureNoise:
    """The noise source of a cell: ``"seeded"`` wraps the cell's generator, ``"secure"`` ignores it."""
    if mode == "seeded":
        if rng is None:
            raise UserError("noise mode 'seeded' needs the cell's numpy Generator")
        return SeededNoise(rng)
    if mode == "secure":
        return SecureNoise()
    raise UserError(f"noise must be one of {NOISE_MODES}, got {mode!r}")


def as_noise(source: Any) -> Any:
    """A noise source from a ``numpy.random.Generator`` (used as is: same API), a ``NoiseSource`` or a
    ``PrivacyLedger`` (its ``noise``)."""
    noise = getattr(source, "noise", None)
    if noise is not None and not isinstance(source, np.random.Generator):
        return noise
    if isinstance(source, np.random.Generator) or isinstance(source, (SeededNoise, SecureNoise)):
        return source
    if isinstance(source, NoiseSource):
        return source
    raise TypeError(f"expected a numpy Generator, a noise source or a PrivacyLedger, got {type(source).__name__}")


def is_secure(source: Any) -> bool:
    """True if draws from ``source`` come from the OS CSPRNG."""
    return bool(getattr(as_noise(source), "secure", False))

