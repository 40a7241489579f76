"""Fixed-point encoding of real vectors in the ring Z/2^64 (Heikkilä et al. 2017, §4: "a fixed-point representation
of real numbers which allows exact cancelling of the noise in the addition").

A real ``x`` is encoded as the integer ``round(x · 2^f)`` (``f`` = fractional bits) reduced mod 2^64 and stored in a
numpy ``uint64``; numpy's unsigned integer arithmetic wraps mod 2^64, which is exactly ring addition.  Decoding reads
the ring element as a two's-complement signed integer (``int64`` view) and divides by 2^f.

Decoding a *sum* is correct only while the true integer sum stays in [-2^63, 2^63).  ``FixedPoint.capacity(n)`` is
the largest per-value magnitude for which any sum of ``n`` values is safe; ``check_capacity`` refuses a
configuration (N, bound, precision) that could overflow, and ``encode(..., n_terms=N)`` refuses any single value over
the capacity, so an overflow can never wrap silently.
"""

from __future__ import annotations

import math

import numpy as np

from dpexp.errors import UserError

RING_BITS = 64
_HALF = 2 ** (RING_BITS - 1)


class RingOverflowError(UserError):
    """A value or a configuration could overflow the ring Z/2^64 at the chosen precision."""


class FixedPoint:
    """Signed fixed-point codec with ``frac_bits`` fractional bits in Z/2^64 (numpy uint64 arithmetic)."""

    def __init__(self, frac_bits: int = 32) -> None:
        if not (isinstance(frac_bits, (int, np.integer)) and 0 <= int(frac_bits) <= 62):
            raise UserError(f"frac_bits must be an integer in [0, 62], got {frac_bits!r}")
        self.frac_bits = int(frac_bits)
        self.scale = float(2 ** self.frac_bits)

    @property
    def resolution(self) -> float:
        """Smallest representable step 2^-f."""
        return 1.0 / self.scale

    def capacity(self, n_terms: int) -> float:
        """Largest |x| such that a sum of ``n_terms`` encoded values of magnitude ≤ |x| cannot overflow:
        n · (|x|·2^f + 1/2) ≤ 2^63 − 1 (the 1/2 covers rounding)."""
        if n_terms < 1:
            raise UserError(f"n_terms must be >= 1, got {n_terms}")
        return ((_HALF - 1) / n_terms - 0.5) / self.scale

    def check_capacity(self, n_terms: int, max_abs: float, what: str = "values") -> None:
        """Raise ``RingOverflowError`` if ``n_terms`` values of magnitude up to ``max_abs`` could overflow."""
        cap = self.capacity(n_terms)
        if not (np.isfinite(max_abs) and max_abs <= cap):
            need = max(0, math.ceil(math.log2(max(max_abs, 1e-300) * n_terms)) + 1 + self.frac_bits - 63) \
                if np.isfinite(max_abs) else None
            hint = f"; use at most frac_bits={self.frac_bits - need}" if need and self.frac_bits - need >= 0 else ""
            raise RingOverflowError(
                f"fixed-point overflow: {n_terms} {what} of magnitude up to {max_abs:.6g} need |sum| < 2^63 at "
                f"frac_bits={self.frac_bits} (capacity per value {cap:.6g}){hint}")

    def encode(self, x: np.ndarray, n_terms: int | None = None) -> np.ndarray:
        """Ring elements (uint64) of ``round(x·2^f) mod 2^64``.

        With ``n_terms`` every |x| must be within ``capacity(n_terms)`` (else ``RingOverflowError``), which
        guarantees that a sum of up to ``n_terms`` such encodings decodes exactly.
        """
        x = np.asarray(x, dtype=np.float64)
        if n_terms is not None:
            m = float(np.max(np.abs(x))) if x.size else 0.0
            self.check_capacity(n_terms, m, what="client values")
        elif x.size and not np.all(np.abs(x) * self.scale < _HALF):
            raise RingOverflowError(f"fixed-point overflow: a value exceeds 2^{63 - self.frac_bits} at "
                                    f"frac_bits={self.frac_bits}")
        return np.rint(x * self.scale).astype(np.int64).view(np.uint64)

    def decode(self, r: np.ndarray) -> np.ndarray:
        """Real values of ring elements read as two's-complement signed integers."""
        r = np.asarray(r, dtype=np.uint64)
        return r.view(np.int64).astype(np.float64) / self.scale

    @staticmethod
    def to_signed_int(r: np.ndarray) -> np.ndarray:
        """The signed integer (int64) represented by ring elements."""
        return np.asarray(r, dtype=np.uint64).view(np.int64)


def ring_sum(a: np.ndarray, axis: int = 0) -> np.ndarray:
    """Sum of uint64 ring elements along ``axis`` mod 2^64 (numpy unsigned addition wraps)."""
    return np.add.reduce(np.asarray(a, dtype=np.uint64), axis=axis, dtype=np.uint64)
