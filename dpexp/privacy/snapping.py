"""Mironov's snapping mechanism: a Laplace release that is differentially private *in floating point*.

Why (Mironov 2012, "On significance of the least significant bits for differential privacy", CCS): the textbook
sampler x + b·S·ln(U) with U a floating-point uniform leaves holes in the set of reachable outputs, and which holes
depends on x; an observer who sees the output's low-order bits can tell neighbouring inputs apart, so the release
is not ε-DP at all.  The fix (his §5.2):

    f̃(D) = clamp_B( ⌊ clamp_B(f(D)) ⊕ S ⊗ λ ⊗ LN(U*) ⌉_Λ ),

with ⊕, ⊗ IEEE double arithmetic, S a uniform sign, U* uniform on the doubles of (0, 1) with each double drawn with
probability equal to its gap (the real uniform rounded down), LN the logarithm, Λ the smallest power of two ≥ λ,
⌊·⌉_Λ rounding to the nearest multiple of Λ and clamp_B clamping to [−B, B].  **Theorem 1 (§5.2)**: for f of
sensitivity 1 and λ < B < 2⁴⁶·λ, f̃ is (1/λ + 2⁻⁴⁹·B/λ)-DP.

How dpexp applies it to a query of sensitivity Δ with a public bound |f| ≤ B:

* work in units u = 2^⌈log₂ Δ⌉ (the smallest power of two ≥ Δ): g = f/u is computed *exactly* (division by a
  power of two) and has sensitivity Δ/u ≤ 1, so the theorem applies to g as stated.  The price: when Δ is not a
  power of two the noise is up to 2× the textbook Δ/ε (choose bounds that make Δ a power of two to avoid it);
* take λ = 1/ε (in units of u) and record the theorem's ε′ = (1 + 2⁻⁴⁹·B/u)·ε, slightly above ε (relative
  excess 2⁻⁴⁹·B/u: 1.8e-13 for B/u = 100, 1.9e-6 for B/u = 2³⁰).  Calibrating λ up by that factor instead would
  double the grid Λ whenever 1/ε is a power of two;
* release u·f̃ (exact scaling back; post-processing anyway).

Caveats stated, not hidden: the theorem assumes an exactly rounded LN.  numpy's ``log`` is faithful, not exactly
rounded; we compute the logarithm in ``numpy.longdouble`` (64-bit mantissa on x86-64) and round once to double, which
is the correctly rounded value except when the true logarithm lies within ~2⁻¹¹ ulp of a rounding boundary.  On
platforms whose ``longdouble`` is plain double the faithful ``log`` is used.  The bound B clamps the released value:
a true value outside [−B, B] is released as if it were ±B.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from dpexp.errors import UserError

_EXTENDED_LOG = np.finfo(np.longdouble).nmant >= 63


@dataclass(frozen=True)
class SnapParams:
    """Calibration of one snapping release (all in units of ``unit``)."""

    unit: float          # u = 2^ceil(log2 Δ)
    lam: float           # λ (units of u)
    grid: float          # Λ = smallest power of two ≥ λ (units of u)
    bound: float         # B/u
    epsilon_prime: float # Mironov's ε′ = (1 + 2^-49 B/u)/λ: what the release spends


def pow2_ceil(x: float) -> float:
    """The smallest power of two ≥ x > 0 (exact)."""
    m, e = math.frexp(x)          # x = m·2^e, m in [0.5, 1)
    return math.ldexp(1.0, e - 1) if m == 0.5 else math.ldexp(1.0, e)


def snapping_params(sensitivity: float, epsilon: float, bound: float) -> SnapParams:
    """Calibrate the snapping mechanism for sensitivity Δ, target ε and public bound B (see module docstring)."""
    if not (np.isfinite(epsilon) and epsilon > 0):
        raise UserError(f"epsilon must be > 0 and finite, got {epsilon}")
    if not (np.isfinite(sensitivity) and sensitivity > 0):
        raise UserError(f"snapping needs a sensitivity > 0 and finite, got {sensitivity}")
    if not (np.isfinite(bound) and bound > 0):
        raise UserError(f"snapping needs a public bound B > 0 and finite, got {bound}")
    u = pow2_ceil(float(sensitivity))
    B = float(bound) / u
    lam = 1.0 / float(epsilon)
    if not (lam < B < 2.0**46 * lam):
        raise UserError(f"snapping needs lambda < B < 2^46 lambda (Mironov 2012, Thm 1), got lambda = {lam * u:g}, "
                        f"B = {bound:g} in the query's units: use a larger bound or a larger epsilon")
    return SnapParams(unit=u, lam=lam, grid=pow2_ceil(lam), bound=B, epsilon_prime=(1.0 + 2.0**-49 * B) / lam)


def _bitlen32(x: np.ndarray) -> np.ndarray:
    """Bit length of integers 1 <= x < 2^32 held exactly in float64."""
    return np.frexp(x)[1]


def uniform_star(n: int, source: Any) -> np.ndarray:
    """``n`` draws of Mironov's U*: uniform on (0, 1) rounded down to a double (each double x has probability
    equal to its gap).  Exponent: the number of leading zero bits of a random bit stream (geometric); mantissa: 52
    uniform bits.  ``source`` provides ``bits64``."""
    n = int(n)
    lz = np.zeros(n, dtype=np.int64)
    todo = np.arange(n)
    while todo.size:
        A = source.bits64(todo.size)
        hi = (A >> np.uint64(32)).astype(np.float64)
        lo = (A & np.uint64(0xFFFFFFFF)).astype(np.float64)
        z = np.where(hi > 0, 32 - _bitlen32(np.maximum(hi, 1.0)),
                     np.where(lo > 0, 64 - _bitlen32(np.maximum(lo, 1.0)), 64))
        lz[todo] += z
        todo = todo[(A == 0) & (lz[todo] < 1021)]   # an all-zero word (p = 2^-64): the run of zeros continues
    lz = np.minimum(lz, 1021)
    m = (source.bits64(n) >> np.uint64(12)).astype(np.float64)       # 52 bits
    return np.ldexp(1.0 + m * 2.0**-52, -(lz + 1).astype(np.int32))


def _ln(u: np.ndarray) -> np.ndarray:
    if _EXTENDED_LOG:
        return np.log(u.astype(np.longdouble)).astype(np.float64)
    return np.log(u)


def _round_to_grid(y: np.ndarray, grid: float) -> np.ndarray:
    """Nearest multiple of ``grid`` (a power of two), ties towards +∞; exact."""
    v = y / grid
    k = np.floor(v)
    return (k + ((v - k) >= 0.5)) * grid


def snapping(value: Any, sensitivity: float, epsilon: float, bound: float, source: Any,
             size: int | Sequence[int] | None = None) -> tuple[np.ndarray, SnapParams]:
    """Snapping release of a *scalar* query value (``size`` leading axes of independent trials).

    Returns (release, calibration).  ε′-DP with ε′ = ``calibration.epsilon_prime`` = (1 + 2⁻⁴⁹·B/u)·ε (Mironov
    2012, Thm 1, applied as in the module docstring) for queries of sensitivity ``sensitivity``; values outside
    [−bound, bound] are clamped.
    """
    if np.ndim(value) != 0:
        raise ValueError(f"snapping releases a scalar query (Mironov 2012, Thm 1 is for real-valued f), got shape "
                         f"{np.shape(value)}")
    p = snapping_params(sensitivity, epsilon, bound)
    shape = () if size is None else ((int(size),) if isinstance(size, (int, np.integer)) else tuple(size))
    n = math.prod(shape)
    x = min(max(float(value) / p.unit, -p.bound), p.bound)       # exact division by a power of two, clamp
    u = uniform_star(n, source)
    sign = 1.0 - 2.0 * (source.bits64(n) & np.uint64(1)).astype(np.float64)
    noise = (sign * p.lam) * _ln(u)
    y = _round_to_grid(x + noise, p.grid)
    y = np.clip(y, -p.bound, p.bound) * p.unit
    return y.reshape(shape), p
