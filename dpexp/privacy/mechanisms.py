"""Noise-adding mechanisms: each draws its noise *and* records what it spends (OpenDP's release / privacy-map pair).

Every mechanism takes a ``source`` where older code passed ``rng``:

* a ``PrivacyLedger`` (``dpexp.privacy.ledger``) — draws from ``ledger.noise`` and appends a ``Spend`` derived from
  the parameters actually used (sensitivity, scale/σ, ε, δ, ρ).  This is how algorithms call them;
* a ``numpy.random.Generator`` or a noise source (``dpexp.privacy.noise``) — draws only, records nothing (the
  pre-ledger call form, kept valid; also used for draws whose spend is recorded separately).

In seeded mode every mechanism makes exactly the numpy calls, in the order, of the code it replaces (byte-identical
results; ``tests/privacy/test_privacy_noise.py`` proves it).

Neighbouring relation: a mechanism is DP for whatever relation its ``sensitivity`` was derived under; callers state
the relation (bounded/replace-one or unbounded/add-remove) and the derivation, with the paper's equation, in their
own docstrings.

Shapes and trials: ``size`` adds leading axes of independent draws (trials, Monte Carlo repeats): the result has shape
``size + value.shape``.  Each trial is a separate run, so a call with ``size=trials`` is recorded *once* — it is
what each run pays.  A sensitivity or scale that differs per trial (e.g. bounds estimated per trial) may be an array
broadcastable to the ``size`` axes; the spend recorded is then the worst trial's.  Releases drawn one trial at a time
in a loop are recorded inside ``with ledger.for_trial(t):``.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any, Callable, Sequence

import numpy as np
from scipy import special

from dpexp import cache
from dpexp.errors import UserError
from dpexp.privacy.guarantee import PrivacyAccountingError, Spend
from dpexp.privacy.ledger import PrivacyLedger
from dpexp.privacy import fp_safe
from dpexp.privacy.noise import as_noise, is_secure

#: relative slack allowed between a declared ε (or ρ) and the one implied by the scale drawn (rounding only)
_REL = 1e-9

GAUSSIAN_CALIBRATIONS = ("analytic", "classic", "zcdp")


class PrivacyCalibrationWarning(UserWarning):
    """A calibration was used outside the range where it is proven (classic Gaussian with ε ≥ 1)."""


def warn_calibration(message: str, stacklevel: int = 3) -> None:
    """Warn ``PrivacyCalibrationWarning`` once per process and message: a run calls a mechanism per cell, the rows
    carry the details (Python's own 'once' filter forgets whenever a ``catch_warnings`` block ends)."""
    def _warn() -> bool:
        warnings.warn(message, PrivacyCalibrationWarning, stacklevel=stacklevel + 2)
        return True

    cache.memo("privacy.calibration_warnings", message, _warn)


# ----------------------------------------------------------------------------------------------- validation
def _check_eps(epsilon: float) -> None:
    if not (np.isfinite(epsilon) and epsilon > 0):
        raise UserError(f"epsilon must be > 0 and finite, got {epsilon}")


def _check_delta(delta: float) -> None:
    if not (0 < delta < 1):
        raise UserError(f"delta must be in (0, 1), got {delta}")


def _check_rho(rho: float) -> None:
    if not (np.isfinite(rho) and rho > 0):
        raise UserError(f"rho must be > 0 and finite, got {rho}")


def _check_nonneg(x: Any, name: str) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.size == 1:   # the usual scalar (or one trial): float checks (numpy's reductions cost more than the draw)
        v = float(a.flat[0])
        if v < 0 or math.isinf(v):
            raise UserError(f"{name} must be >= 0 and finite, got {x}")
        return a
    if np.any(a < 0) or np.any(np.isinf(a)):
        raise UserError(f"{name} must be >= 0 and finite, got {x}")
    return a


def _lead(size: int | Sequence[int] | None) -> tuple[int, ...]:
    if size is None:
        return ()
    return (int(size),) if isinstance(size, (int, np.integer)) else tuple(int(s) for s in size)


def _shape(value: Any, size: int | Sequence[int] | None) -> tuple[int, ...]:
    return _lead(size) + tuple(np.shape(value))


def _per_trial(x: np.ndarray, lead: tuple[int, ...], vdim: int, name: str) -> np.ndarray | float:
    """A scalar stays a float; an array must vary along the ``size`` axes only: returned with ``vdim`` trailing
    singleton axes so that it broadcasts against ``lead + value.shape``."""
    if x.ndim == 0:
        return float(x)
    if not lead:
        raise PrivacyAccountingError(f"a per-trial {name} array needs size= (the trial axes); per-entry scales of one "
                                     "release are not supported (split the release or use a common scale)")
    try:
        np.broadcast_shapes(x.shape, lead)
    except ValueError:
        raise PrivacyAccountingError(f"{name} of shape {x.shape} does not broadcast to the trial axes {lead}") from None
    if x.ndim > len(lead):
        raise PrivacyAccountingError(f"{name} of shape {x.shape} has more axes than the trial axes {lead}")
    return x.reshape(x.shape + (1,) * vdim)


def _max(x: Any) -> float:
    a = np.asarray(x, dtype=float)
    if a.size == 1:
        return float(a.flat[0])   # NaN stays NaN, as below
    if a.size == 0 or np.all(np.isnan(a)):
        return float("nan")
    return float(np.nanmax(a))


def _min(x: Any) -> float:
    a = np.asarray(x, dtype=float)
    if a.size == 1:
        return float(a.flat[0])
    if a.size == 0 or np.all(np.isnan(a)):
        return float("nan")
    return float(np.nanmin(a))


def _ratio_max(num: Any, den: Any) -> float:
    """max over trials of num/den, NaN entries (failed trials) ignored, x/0 = inf for x > 0 and 0/0 = 0."""
    n, d = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    if n.size == 1 and d.size == 1:   # one trial: the same values in float arithmetic (numpy's calls cost more)
        nv, dv = float(n.flat[0]), float(d.flat[0])
        return 0.0 if nv == 0 else (math.inf if dv == 0 else nv / dv)
    n, d = np.broadcast_arrays(n, d)
    with np.errstate(divide="ignore", invalid="ignore"):   # d == 0 covers -0.0, whose n/d would be -inf
        r = np.where(n == 0, 0.0, np.where(d == 0, np.inf, n / d))
    return _max(r)


def _pure_scale(mechanism: str, sens: np.ndarray, epsilon: float | None, scale: Any,
                label: str) -> tuple[np.ndarray, float]:
    """(scale to draw with, ε to record) of a pure ε-DP release whose noise scale is Δ/ε (Laplace: b = Δ₁/ε; the
    Gamma norm of ``gamma_norm``): from ``epsilon``, or ``scale`` as given with its implied ε = max Δ/scale, which
    must not exceed a declared ``epsilon`` (``PrivacyAccountingError``) and is recorded when none is declared."""
    if epsilon is not None:
        _check_eps(epsilon)
    if scale is None:
        if epsilon is None:
            raise UserError(f"{mechanism} needs epsilon or scale")
        return np.asarray(sens / float(epsilon)), float(epsilon)
    b = _check_nonneg(scale, "scale")
    if np.any(np.isnan(sens) & ~np.isnan(b)):   # a number released without a sensitivity: never accounted
        raise UserError(f"{mechanism} {label!r}: a NaN sensitivity for a trial that releases (finite scale)")
    implied = _ratio_max(sens, b)
    if epsilon is not None and implied > float(epsilon) * (1 + _REL):
        raise PrivacyAccountingError(f"{mechanism} {label!r}: the scale drawn implies epsilon = {implied:g} > the "
                                     f"declared {epsilon:g}")
    return b, float(epsilon) if epsilon is not None else implied


def _ledger_of(source: Any) -> PrivacyLedger | None:
    return source if isinstance(source, PrivacyLedger) else None


def _record(source: Any, spend: Spend) -> None:
    ledger = _ledger_of(source)
    if ledger is not None:
        ledger.record(spend)


# ----------------------------------------------------------------------------------------------- Laplace
def laplace_scale(sensitivity: float, epsilon: float) -> float:
    """b = Δ₁/ε: the Laplace scale that makes a query of L1 sensitivity Δ₁ ε-DP (Dwork et al. 2006)."""
    _check_eps(epsilon)
    if sensitivity < 0:
        raise UserError(f"sensitivity must be >= 0, got {sensitivity}")
    return float(sensitivity) / float(epsilon)


def laplace(value: Any, sensitivity: Any, epsilon: float | None, rng: Any,
            size: int | Sequence[int] | None = None, *, scale: Any = None, bound: float | None = None,
            label: str = "") -> Any:
    """Laplace mechanism: value + Lap(b) i.i.d. per entry, b = Δ₁/ε; ε-DP for a release whose L1 sensitivity (of
    the whole vector, under the caller's neighbouring relation) is Δ₁ (Dwork et al. 2006; Dwork & Roth 2014,
    Thm 3.6).

    ``value``: an array, or a tuple of arrays released *together* under one budget (drawn in order, recorded once;
    e.g. the quadratic and linear coefficients of the functional mechanism).  ``scale``: draw with this b instead of
    Δ₁/ε (to keep an existing expression bit for bit, or a per-trial b); the ε implied, max Δ₁/b, must not exceed the
    declared ``epsilon`` (else ``PrivacyAccountingError``); with ``epsilon=None`` the implied ε is recorded.
    ``bound``: a public bound |value| ≤ B; when the source is secure and the release is scalar, the release uses
    Mironov's snapping mechanism (floating-point safe, ``dpexp.privacy.snapping``), is clamped to [−B, B] and
    records Mironov's ε′ = (1 + 2⁻⁴⁹·B/u)·ε (u = Δ₁ rounded up to a power of two); ignored in seeded mode.
    Recorded: ``Spend("laplace", "pure", ε, sensitivity=Δ₁, scale=b)``.
    """
    noise = as_noise(rng)
    secure = getattr(noise, "secure", False)   # a plain numpy Generator is seeded
    if scale is None and bound is None and not secure:
        out = _laplace_one_scale(value, sensitivity, epsilon, rng, size, label)
        if out is not None:
            return out
    parts = value if isinstance(value, tuple) else (value,)
    lead = _lead(size)
    sens = _check_nonneg(sensitivity, "sensitivity")
    b_arr, eps_rec = _pure_scale("laplace", sens, epsilon, scale, label)
    if secure:
        if bound is not None:
            return _snap_release(parts, value, sens, b_arr, eps_rec, bound, rng, noise, size, scale, label)
        return _fp_safe_laplace(parts, value, sens, b_arr, eps_rec, rng, size, label)
    out = []
    for part in parts:
        b = _per_trial(b_arr, lead, np.ndim(part), "scale")
        out.append(np.asarray(part, dtype=float) + noise.laplace(0.0, b, size=_shape(part, size)))
    _record(rng, Spend("laplace", "pure", epsilon=eps_rec, delta=0.0, sensitivity=_max(sens), scale=_min(b_arr),
                       label=label))
    return tuple(out) if isinstance(value, tuple) else out[0]


def _fp_safe_laplace(parts, value, sens, b_arr, eps_rec, rng, size, label):
    """``laplace`` with a secure source: OpenDP's floating-point-safe sampler (``fp_safe``), recording its map."""
    lead = _lead(size)
    out = []
    for part in parts:
        b = _per_trial(b_arr, lead, np.ndim(part), "scale")
        shape = _shape(part, size)
        out.append(fp_safe.add_laplace(np.broadcast_to(np.asarray(part, dtype=float), shape), b))
    eps = max(float(eps_rec), fp_safe.laplace_epsilon(sens, b_arr))
    _record(rng, Spend(fp_safe.LAPLACE, "pure", epsilon=eps, delta=0.0, sensitivity=_max(sens), scale=_min(b_arr),
                       label=label))
    return tuple(out) if isinstance(value, tuple) else out[0]


def _laplace_one_scale(value: Any, sensitivity: Any, epsilon: Any, rng: Any, size: Any, label: str) -> Any:
    """``laplace`` for its usual call — one sensitivity (a number, or an array of one entry: one trial's), a valid
    ε, no ``scale`` or ``bound`` — with float arithmetic and checks: the same b = Δ₁/ε, the same draws (numpy draws
    the same numbers for a scale given as a float or as a one-entry array) and the same ``Spend``; its Python
    overhead was most of a release's cost.  None (the general path then runs, and raises where it must) for
    anything else."""
    if type(sensitivity) is float or type(sensitivity) is int:
        s = float(sensitivity)
    elif type(sensitivity) is np.ndarray and sensitivity.size == 1 and (
            sensitivity.ndim == 0 or (size is not None and sensitivity.ndim <= len(_lead(size)))):
        s = float(sensitivity.flat[0])
    else:
        return None
    if not (type(epsilon) is float or type(epsilon) is int) or not (0.0 <= s < math.inf):
        return None
    eps = float(epsilon)
    if not (0.0 < eps < math.inf):
        return None
    b = s / eps
    noise = as_noise(rng)
    if isinstance(value, tuple):
        out = tuple(np.asarray(part, dtype=float) + noise.laplace(0.0, b, size=_shape(part, size)) for part in value)
    else:
        out = np.asarray(value, dtype=float) + noise.laplace(0.0, b, size=_shape(value, size))
    _record(rng, Spend("laplace", "pure", epsilon=eps, delta=0.0, sensitivity=s, scale=b, label=label))
    return out


def standard_laplace_rows(sources: Sequence[Any], k: int, *, heuristic: bool = False) -> np.ndarray:
    """(len(sources), k) standard Laplace(0, 1) draws, row i from ``sources[i]`` (a ledger, noise source or
    Generator) in one call; nothing is recorded: the draws become releases only through :func:`laplace_rows`.

    Several Laplace releases of one cell, drawn in the order of its ``laplace`` calls, are one such row: numpy
    draws Lap(0, b) as 0 ∓ b·log(…) from one uniform each, and b·(0 ∓ 1·log(…)) is the same float (multiplying by
    1 and negating are exact), so b·row equals the separate draws to the bit (``tests/privacy``).  The secure
    source draws ±Exp(1) magnitudes the same way.  Cheaper than one call per release when a batch of cells each
    release several vectors.  A secure source's row is NaN (see below), except for ``heuristic`` releases (not DP
    whatever the sampler: ``heuristic_laplace_rows``), whose secure rows are textbook draws from the source."""
    k = int(k)
    out = np.empty((len(sources), k))
    for i, src in enumerate(sources):   # a ledger's noise read directly (``as_noise`` of one): one call per cell
        noise = src.noise if type(src) is PrivacyLedger else as_noise(src)
        if not heuristic and getattr(noise, "secure", False):
            # a secure cell's releases draw from OpenDP (``laplace_rows`` → ``fp_safe``), never from these rows: no
            # textbook draw (it would mark the source, ``SecureNoise.textbook_used``), and NaN so that a path that
            # used them as noise would fail its cell (non-finite output) instead of releasing without noise
            out[i] = np.nan
        else:
            out[i] = noise.laplace(0.0, 1.0, k)
    return out


def laplace_rows(value: Any, standard: np.ndarray, sensitivity: Any, epsilon: Any, sources: Sequence[Any],
                 label: str = "", *, scale: Any = None) -> np.ndarray:
    """The Laplace mechanism of ``laplace`` for one release of each of S cells at once: value + b·L with
    b = Δ₁/ε (Dwork et al. 2006; Dwork & Roth 2014, Thm 3.6) and L the cells' standard draws
    (:func:`standard_laplace_rows`, each used once).

    ``value`` and ``standard``: (S, T, …) — a leading axis of cells, then ``size=trials`` axis T and the value's
    shape; ``sensitivity``: (S,) or (S, T) (per trial, e.g. bounds estimated per trial), the L1 sensitivity of the
    whole vector under the caller's neighbouring relation; ``epsilon``: a number or (S,).  Records in
    ``sources[i]`` exactly the ``Spend`` ``laplace`` records for cell i (ε, the largest sensitivity and the
    smallest scale over its trials; one Spend object for all cells when they spend alike: it is frozen).
    ``standard`` must have ``value``'s shape exactly (ValueError otherwise, before anything is recorded): a
    broadcast would reuse one draw for several released numbers.

    ``scale``: (S,) or (S, T), draw with this b instead of Δ₁/ε, as ``laplace``'s ``scale=`` (to keep an existing
    expression bit for bit, or a per-trial b): the ε it implies, max Δ₁/b per cell, must not exceed the cell's ε
    (``PrivacyAccountingError``); a NaN b marks a trial that releases nothing (⊥: its number is NaN, as
    ``fp_safe.add_laplace`` gives), and the Spend records, as ``laplace`` does, the largest Δ₁ and the smallest b
    over the cell's trials with NaNs ignored (NaN where every trial is ⊥)."""
    v = np.asarray(value, dtype=float)
    standard = np.asarray(standard, dtype=float)
    if standard.shape != v.shape:   # a mis-sliced draw array would broadcast: one draw reused across trials/cells
        raise ValueError(f"laplace_rows {label!r}: standard draws of shape {standard.shape} for a value of shape "
                         f"{v.shape} (one draw per released number, each used once)")
    if v.ndim < 2:   # (S,) values: the (S, 1) scales would broadcast every cell's draws into every cell's row
        raise ValueError(f"laplace_rows {label!r}: values of shape {v.shape}; expected (S, T, ...), a leading axis of "
                         "cells then the trials")
    S = v.shape[0]
    if len(sources) != S:
        raise ValueError(f"laplace_rows {label!r}: {len(sources)} sources for {S} cells")
    sens = _row_values(sensitivity, v.shape[:2], "sensitivities", label)
    eps = np.broadcast_to(np.asarray(epsilon, dtype=float), (S,))
    if not (np.all(np.isfinite(eps)) and np.all(eps > 0)):
        raise UserError(f"epsilon must be > 0 and finite, got {epsilon}")
    if scale is None:
        s_max = sens.max(axis=1)   # each cell's recorded Δ₁ (the worst trial's)
        # every Δ₁ >= 0 and finite: the smallest >= 0 and the largest finite (a NaN fails both comparisons)
        if not (float(sens.min()) >= 0.0 and float(s_max.max()) < math.inf):
            raise UserError(f"sensitivity must be >= 0 and finite, got {sensitivity}")
        b = sens / eps[:, None]
        b_min = b.min(axis=1)
    else:
        sens, b, s_max, b_min = _given_row_scales(sens, scale, eps, S, v.shape[1], label)
    secure = [is_secure(src) for src in sources]
    if any(secure):   # a secure cell's noise comes from OpenDP's floating-point-safe sampler, not from ``standard``
        return _fp_safe_laplace_rows(v, standard, b, sens, eps, s_max, sources, secure, label, b_min)
    out = v + b.reshape(b.shape + (1,) * (v.ndim - 2)) * standard
    if S > 1 and _one_value(eps) and _one_value(s_max) and _one_value(b_min):
        # every cell spends alike (e.g. one public bound for all): one Spend (frozen), recorded in each ledger
        spends = _laplace_spends(label, [float(eps[0])], [float(s_max[0])], [float(b_min[0])]) * S
    else:
        spends = _laplace_spends(label, eps.tolist(), s_max.tolist(), b_min.tolist())
    _record_rows(sources, spends)
    return out


def _row_values(a: Any, shape: tuple[int, int], what: str, label: str) -> np.ndarray:
    """``laplace_rows``' and ``gaussian_rows``' per-cell values (sensitivities, scales, σ) as (S, 1) (one per cell) or (S, T) (one per trial),
    T the values' trial axis; any other shape is a ValueError before anything is recorded: a trial axis of another
    length would broadcast one standard draw over several released numbers, each with its own b."""
    S, T = shape
    arr = np.asarray(a, dtype=float)
    arr = np.full((S, 1), float(arr)) if arr.ndim == 0 else arr.reshape(S, -1) if arr.size % max(S, 1) == 0 else arr
    if arr.ndim != 2 or arr.shape[0] != S or arr.shape[1] not in (1, T):
        raise ValueError(f"release {label!r}: {what} of shape {np.shape(a)} for values of shape (S, T) = "
                         f"{shape}; expected (S,), (S, 1) or (S, T)")
    return arr


def _given_row_scales(sens: np.ndarray, scale: Any, eps: np.ndarray, S: int, T: int, label: str
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``laplace_rows``' ``scale=``: (Δ₁, b) broadcast to (S, T), each cell's recorded Δ₁ (largest) and b (smallest),
    NaNs ignored — ``laplace``'s checks and record for a given scale, per cell: Δ₁ and b >= 0 and finite where not
    NaN, and max Δ₁/b (0/0 = 0) at most the cell's ε (``PrivacyAccountingError``); a trial that releases (b not NaN)
    needs a Δ₁ that is not NaN (``UserError``)."""
    b = _row_values(scale, (S, T), "scales", label)
    if b.shape != sens.shape:   # (S, 1) against (S, T): one value for every trial of a cell
        sens, b = np.broadcast_arrays(sens, b)
    for a, what in ((sens, "sensitivity"), (b, "scale")):
        # >= 0 and finite where not NaN: the smallest non-NaN >= 0, the largest not +inf (all NaN: both NaN, passes)
        if a.size and (np.fmin.reduce(a, axis=None) < 0 or np.fmax.reduce(a, axis=None) == math.inf):
            raise UserError(f"{what} must be >= 0 and finite, got {a}")
    if (np.isnan(sens) > np.isnan(b)).any():   # a number released without a sensitivity: never accounted
        raise UserError(f"laplace_rows {label!r}: a NaN sensitivity for a trial that releases (finite scale)")
    with np.errstate(divide="ignore", invalid="ignore"):
        # Δ₁ = 0 implies 0; b = 0 (-0.0 too, whose Δ₁/b would be -inf) with Δ₁ > 0 implies inf
        implied = np.fmax.reduce(np.where(sens == 0, 0.0, np.where(b == 0, np.inf, sens / b)), axis=1)
    over = implied > eps * (1 + _REL)
    if over.any():
        i = int(np.flatnonzero(over)[0])
        raise PrivacyAccountingError(f"laplace {label!r}: the scale drawn implies epsilon = {implied[i]:g} > the "
                                     f"declared {eps[i]:g}")
    return sens, b, np.fmax.reduce(sens, axis=1), np.fmin.reduce(b, axis=1)


def _fp_safe_laplace_rows(v, standard, b, sens, eps, s_max, sources, secure, label, b_min) -> np.ndarray:
    """``laplace_rows`` when some cells' sources are secure: those cells' noise from ``fp_safe`` (their standard draws
    unused) and their spends from its map; the others as ``laplace_rows`` draws them."""
    bb = b.reshape(b.shape + (1,) * (v.ndim - 2))
    out = v + bb * standard
    spends = []
    for i, sec in enumerate(secure):
        if sec:
            out[i] = fp_safe.add_laplace(v[i], bb[i])
            e = max(float(eps[i]), fp_safe.laplace_epsilon(sens[i], b[i]))
            spends.append(Spend(fp_safe.LAPLACE, "pure", epsilon=e, delta=0.0, sensitivity=float(s_max[i]),
                                scale=float(b_min[i]), label=label))
        else:
            spends += _laplace_spends(label, [float(eps[i])], [float(s_max[i])], [float(b_min[i])])
    _record_rows(sources, spends)
    return out


def _one_value(a: np.ndarray) -> bool:
    """Every float of the 1-D float64 array ``a`` has the bits of its first (so -0.0 and 0.0 differ, as the
    spends' reprs would)."""
    u = a.view(np.uint64)
    return bool((u == u[0]).all())


def _laplace_spends(label: str, eps: list[float], sens: list[float], scales: list[float]) -> list[Spend]:
    """``Spend("laplace", "pure", epsilon=e, delta=0.0, sensitivity=s, scale=b, label=label)`` for each (e, s, b)."""
    return [Spend("laplace", "pure", epsilon=e, delta=0.0, sensitivity=s, scale=b, label=label)
            for e, s, b in zip(eps, sens, scales)]


def _record_rows(sources: Sequence[Any], spends: Sequence[Spend]) -> None:
    """``_record(sources[i], spends[i])`` for every cell of a batch (each through ``PrivacyLedger.record``, in order),
    without a call per cell to find the ledger."""
    for src, spend in zip(sources, spends):
        if isinstance(src, PrivacyLedger):
            src.record(spend)


def _snap_release(parts, value, sens, b_arr, eps_rec, bound, rng, noise, size, scale, label):
    from dpexp.privacy.snapping import snapping

    if isinstance(value, tuple) or np.ndim(value) != 0 or sens.ndim or np.ndim(b_arr) or scale is not None:
        raise ValueError(f"laplace {label!r}: bound= (snapping in secure mode) needs a scalar release with a scalar "
                         "sensitivity and no scale override")
    out, p = snapping(value, float(sens), eps_rec, bound, noise, size)
    _record(rng, Spend("laplace (snapping)", "pure", epsilon=p.epsilon_prime, delta=0.0, sensitivity=float(sens),
                       scale=p.lam * p.unit, label=label))
    return out


def heuristic_laplace(value: Any, scale: Any, rng: Any, size: int | Sequence[int] | None = None, *,
                      reason: str, label: str = "") -> np.ndarray:
    """value + Lap(scale) for a *heuristic* whose scale is not a DP calibration (e.g. computed from private data
    without paying, as the Opportunity Insights maximum observed sensitivity).  Any broadcastable ``scale``.
    Recorded: a ``none`` spend with ``reason`` — the run's guarantee becomes 'not DP: reason'."""
    b = np.asarray(scale, dtype=float)
    if np.any(b < 0):
        raise UserError(f"scale must be >= 0, got {scale}")
    noise = as_noise(rng)
    shape = _lead(size) + tuple(np.broadcast_shapes(np.shape(value), b.shape))
    out = np.asarray(value, dtype=float) + noise.laplace(0.0, b, size=shape)
    _record(rng, Spend("laplace (heuristic scale)", "none", label=label, note=reason, scale=_min(b)))
    return out


def heuristic_laplace_rows(values: Sequence[Any], scales: Sequence[float], sources: Sequence[Any],
                           size: int | Sequence[int] | None = None, *, reason: str,
                           labels: Sequence[str]) -> list[np.ndarray]:
    """``heuristic_laplace`` of several releases of each of S cells at once: for cell i and release j,
    values[j][i] + Lap(scales[j]) of shape ``size + values[j][i].shape``, the releases of a cell drawn in the order
    j = 0, 1, … from ``sources[i]`` in one generator call (standard Laplace draws times the scale: the same floats
    as separate calls, :func:`standard_laplace_rows`), and recorded in ``sources[i]`` exactly as ``heuristic_laplace``
    records each: a ``none`` spend with ``reason`` — no DP guarantee.  ``values[j]``: (S, …), one value per cell;
    ``scales[j]``: a number ≥ 0 shared by the cells.  Returns the releases, (S,) + size + value shape each."""
    b = []
    for s in scales:
        a = _check_nonneg(s, "scale")
        if a.size != 1:
            raise ValueError(f"heuristic_laplace_rows takes one scale per release, got shape {a.shape}")
        b.append(float(a.flat[0]))
    if len(labels) != len(b) or len(values) != len(b):
        raise ValueError(f"heuristic_laplace_rows: {len(values)} values, {len(b)} scales, {len(labels)} labels")
    S, lead = len(sources), _lead(size)
    vals = [np.asarray(v, dtype=float) for v in values]
    if any(v.ndim == 0 or v.shape[0] != S for v in vals):
        raise ValueError(f"heuristic_laplace_rows: values need a leading axis of the {S} cells")
    counts = [math.prod(lead + v.shape[1:]) for v in vals]
    standard = standard_laplace_rows(sources, sum(counts), heuristic=True)
    out, at = [], 0
    for v, n, bj in zip(vals, counts, b):
        draw = standard[:, at:at + n].reshape((S,) + lead + v.shape[1:])
        out.append(v.reshape((S,) + (1,) * len(lead) + v.shape[1:]) + bj * draw)
        at += n
    # the spends are the same for every cell (one scale per release): made once, each cell records them (frozen)
    spends = [Spend("laplace (heuristic scale)", "none", label=lab, note=reason, scale=bj)
              for bj, lab in zip(b, labels)]
    for src in sources:
        _record_rows([src] * len(spends), spends)
    return out


# ----------------------------------------------------------------------------------------------- Gaussian
def gaussian_sigma_classic(sensitivity: float, epsilon: float, delta: float) -> float:
    """σ = Δ₂·sqrt(2 ln(1.25/δ))/ε (Dwork & Roth 2014, Thm A.1); the proof needs ε < 1.

    Used for ε ≥ 1 it is a heuristic (the DCA paper does so up to ε = 31.6); callers should warn.
    """
    _check_eps(epsilon)
    _check_delta(delta)
    return float(sensitivity) * math.sqrt(2.0 * math.log(1.25 / delta)) / float(epsilon)


def _analytic_delta(sigma: float, sensitivity: float, epsilon: float) -> float:
    """δ(σ) of the Gaussian mechanism, exact (Balle & Wang 2018, Thm 8):
    Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ), computed in log space for large ε."""
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    first = special.ndtr(a - b)
    second = math.exp(epsilon + special.log_ndtr(-a - b))
    return float(first - second)


def gaussian_delta(sigma: float, sensitivity: float, epsilon: float) -> float:
    """The exact (smallest) δ for which adding N(0, σ²) to a query of L2 sensitivity Δ₂ is (ε, δ)-DP (Balle & Wang
    2018, Thm 8); 0 when Δ₂ = 0, 1 when σ = 0 < Δ₂.  Clipped to [0, 1] against rounding."""
    if sensitivity < 0 or sigma < 0:
        raise UserError(f"sensitivity and sigma must be >= 0, got {sensitivity}, {sigma}")
    _check_eps(epsilon)
    if sensitivity == 0:
        return 0.0
    if sigma == 0:
        return 1.0
    return min(max(_analytic_delta(float(sigma), float(sensitivity), float(epsilon)), 0.0), 1.0)


def analytic_gaussian_sigma(sensitivity: float, epsilon: float, delta: float, tol: float = 1e-12) -> float:
    """Smallest σ (to relative ``tol``) such that adding N(0, σ²) to a query of L2 sensitivity Δ₂ is (ε, δ)-DP, for
    any ε > 0 (analytic Gaussian mechanism, Balle & Wang 2018, Thm 8), by root finding on the exact δ(σ).

    Returns the *upper* end of the final root bracket, so the returned σ satisfies δ(σ) ≤ δ as computed — never a
    σ a rounding step below the root.
    """
    _check_eps(epsilon)
    _check_delta(delta)
    if sensitivity <= 0:
        return 0.0
    f = lambda s: _analytic_delta(s, sensitivity, epsilon) - delta  # noqa: E731  (decreasing in σ)
    lo, hi = sensitivity * 1e-6, sensitivity
    while f(hi) > 0:
        hi *= 2.0
    while f(lo) < 0 and lo > 1e-300:
        lo /= 2.0
    from scipy import optimize   # here: importing scipy.optimize costs every process ~0.3 s at start

    r = float(optimize.brentq(f, lo, hi, xtol=tol * sensitivity, rtol=1e-14, maxiter=500))
    # brentq's root may lie a rounding step below the true one: keep a bracket with f(lo) > 0 >= f(hi), return hi
    w = max(tol * sensitivity, 1e-15 * r)
    hi = r
    while f(hi) > 0:
        hi += w
        w *= 2.0
    lo = hi - w
    while lo > 0 and f(lo) <= 0:
        hi, lo = lo, lo - w
        w *= 2.0
    lo = max(lo, 0.0)                      # δ(σ) → 1 as σ → 0, so f > 0 there
    while hi - lo > max(tol * sensitivity, 4e-16 * hi):
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            break
        if f(mid) > 0:
            lo = mid
        else:
            hi = mid
    return hi


def gaussian_sigma_zcdp(sensitivity: float, rho: float) -> float:
    """σ = Δ₂/sqrt(2ρ): the Gaussian mechanism is ρ-zCDP (Bun & Steinke 2016, Prop. 1.6)."""
    _check_rho(rho)
    return float(sensitivity) / math.sqrt(2.0 * rho)


def gaussian_sigma(sensitivity: float, epsilon: float, delta: float, calibration: str = "analytic") -> float:
    """σ for (ε, δ)-DP by ``calibration``: ``analytic`` (Balle & Wang 2018, any ε, tight) or ``classic`` (Dwork &
    Roth Thm A.1, proven for ε < 1 only: warns ``PrivacyCalibrationWarning`` for ε ≥ 1)."""
    if calibration == "analytic":
        return analytic_gaussian_sigma(sensitivity, epsilon, delta)
    if calibration == "classic":
        if epsilon >= 1.0:
            warn_calibration("classic Gaussian calibration used with epsilon >= 1: outside the range where it is "
                             "proven (epsilon < 1); the ledger records the true delta of the sigma drawn")
        return gaussian_sigma_classic(sensitivity, epsilon, delta)
    raise UserError(f"calibration must be one of ('analytic', 'classic'), got {calibration!r}")


def gaussian_spend(sensitivity: Any, sigma: Any, epsilon: float | None = None, *, delta: float | None = None,
                   calibration: str | None = None, label: str = "", mechanism: str = "gaussian") -> Spend:
    """The privacy map of N(0, σ²) noise on a query of L2 sensitivity Δ₂ (worst trial when arrays).

    With ``epsilon``: an ``approx`` spend (ε, δ(σ)) with the *exact* δ of Balle & Wang 2018, Thm 8 — whatever
    calibration chose σ — and ρ = Δ₂²/(2σ²) (Bun & Steinke 2016, Prop. 1.6) for composition with zCDP releases.
    ``delta`` (the requested δ) only serves the note: a classic calibration at ε ≥ 1, or any σ whose true δ exceeds
    the requested one, is noted on the spend.  Without ``epsilon``: a ``zcdp`` spend with ρ = Δ₂²/(2σ²).
    """
    sens = _check_nonneg(sensitivity, "sensitivity")
    sig = _check_nonneg(sigma, "sigma")
    ratio_max = _ratio_max(sens, sig)                   # worst trial: the largest Δ/σ
    rho = 0.5 * ratio_max * ratio_max
    if epsilon is None:
        return Spend(mechanism, "zcdp", rho=rho, sensitivity=_max(sens), scale=_min(sig), label=label)
    _check_eps(epsilon)
    true_delta = 0.0 if ratio_max == 0 else (1.0 if not math.isfinite(ratio_max)
                                             else gaussian_delta(1.0 / ratio_max, 1.0, float(epsilon)))
    note = ""
    if calibration == "classic" and epsilon >= 1:
        note = (f"classic Gaussian calibration at epsilon={epsilon:g} >= 1 (proven for epsilon < 1 only): "
                f"true delta {true_delta:.3g}" + (f" vs requested {delta:.3g}" if delta is not None else ""))
    elif delta is not None and true_delta > delta * (1 + _REL):
        note = f"true delta {true_delta:.3g} exceeds the requested {delta:.3g}"
    return Spend(mechanism, "approx", epsilon=float(epsilon), delta=true_delta, rho=rho, sensitivity=_max(sens),
                 scale=_min(sig), label=label, note=note)


def gaussian(value: Any, sigma: Any, rng: Any, size: int | Sequence[int] | None = None, *,
             sensitivity: Any = None, epsilon: float | None = None, delta: float | None = None,
             calibration: str | None = None, label: str = "") -> Any:
    """value + N(0, σ²) i.i.d. per entry (calibrate σ with one of the functions above).

    With a ledger, ``sensitivity`` (L2, Δ₂) is required and the spend is ``gaussian_spend(Δ₂, σ, epsilon, ...)``:
    (ε, exact δ(σ))-DP when ``epsilon`` is given, else ρ = Δ₂²/(2σ²)-zCDP.  A per-trial σ may be an array along the
    ``size`` axes.  ``value`` may be a tuple of arrays released together (one spend).
    """
    sig = np.asarray(sigma, dtype=float)
    if np.any(sig < 0):
        raise UserError(f"sigma must be >= 0, got {sigma}")
    parts = value if isinstance(value, tuple) else (value,)
    lead = _lead(size)
    noise = as_noise(rng)
    secure = getattr(noise, "secure", False)
    out = []
    for part in parts:
        s = _per_trial(sig, lead, np.ndim(part), "sigma")
        if secure:   # OpenDP's floating-point-safe sampler (``fp_safe``)
            shape = _shape(part, size)
            out.append(fp_safe.add_gaussian(np.broadcast_to(np.asarray(part, dtype=float), shape), s))
        else:
            out.append(np.asarray(part, dtype=float) + noise.normal(0.0, s, size=_shape(part, size)))
    if _ledger_of(rng) is not None:
        if sensitivity is None:
            raise PrivacyAccountingError(f"gaussian {label!r}: a ledger needs sensitivity= to record the spend")
        if secure:   # the map evaluated where OpenDP's own map puts the release (its grid rounding paid)
            _record(rng, gaussian_spend(fp_safe.gaussian_equivalent_sensitivity(sensitivity, sig), sig, epsilon,
                                        delta=delta, calibration=calibration, label=label,
                                        mechanism=fp_safe.GAUSSIAN))
        else:
            _record(rng, gaussian_spend(sensitivity, sig, epsilon, delta=delta, calibration=calibration,
                                        label=label))
    return tuple(out) if isinstance(value, tuple) else out[0]


def standard_normal_rows(sources: Sequence[Any], k: int) -> np.ndarray:
    """(len(sources), k) standard normal draws, row i from ``sources[i]`` (a ledger, noise source or Generator) in
    one call; nothing is recorded: the draws become releases only through :func:`gaussian_rows`.

    Several Gaussian releases of one cell, drawn in the order of its ``gaussian`` calls, are one such row: numpy
    draws N(0, σ²) as 0 + σ·z from one standard normal each (one stream, no cached draws), so σ·row equals the
    separate draws to the bit (``tests/privacy/test_gaussian_rows.py``)."""
    k = int(k)
    out = np.empty((len(sources), k))
    for i, src in enumerate(sources):
        out[i] = (src.noise if type(src) is PrivacyLedger else as_noise(src)).standard_normal(k)
    return out


def gaussian_rows(value: Any, standard: np.ndarray, sigma: Any, sensitivity: Any, epsilon: Any, delta: float | None,
                  sources: Sequence[Any], *, calibration: str | None = None, label: str = "") -> np.ndarray:
    """The Gaussian mechanism of ``gaussian`` for one release of each of S cells at once: value + σ·Z with Z the
    cells' standard normal draws (:func:`standard_normal_rows`, each used once).

    ``value`` and ``standard``: (S, T, …) (cells, trials, the value's shape); ``sigma`` and ``sensitivity`` (the L2
    sensitivity Δ₂ under the caller's neighbouring relation): (S,) or (S, T); ``epsilon``: a number or (S,);
    ``delta`` the requested δ (for the spend's note).  Records in ``sources[i]`` the ``Spend`` ``gaussian`` records
    for cell i (``gaussian_spend``: the exact δ of the σ drawn at ε, the worst trial).  A secure cell's noise comes
    from OpenDP's floating-point-safe sampler (its standard draws unused) and its spend from that sampler's map, as
    ``gaussian`` does.  ``standard`` must have ``value``'s shape exactly (ValueError otherwise, before anything is
    recorded)."""
    v = np.asarray(value, dtype=float)
    standard = np.asarray(standard, dtype=float)
    if standard.shape != v.shape or v.ndim < 2:
        raise ValueError(f"gaussian_rows {label!r}: standard draws of shape {standard.shape} for a value of shape "
                         f"{v.shape} (expected (S, T, ...), one draw per released number)")
    S = v.shape[0]
    if len(sources) != S:
        raise ValueError(f"gaussian_rows {label!r}: {len(sources)} sources for {S} cells")
    sig = _row_values(sigma, v.shape[:2], "sigmas", label)
    sens = _row_values(sensitivity, v.shape[:2], "sensitivities", label)
    if not (float(sig.min()) >= 0.0 and float(sig.max()) < math.inf):
        raise UserError(f"sigma must be >= 0 and finite, got {sigma}")
    eps = np.broadcast_to(np.asarray(epsilon, dtype=float), (S,))
    sb = sig.reshape(sig.shape + (1,) * (v.ndim - 2))
    out = v + sb * standard
    for i, src in enumerate(sources):
        secure = is_secure(src)
        if secure:
            out[i] = fp_safe.add_gaussian(v[i], sb[i])
        if _ledger_of(src) is not None:
            s_i = fp_safe.gaussian_equivalent_sensitivity(sens[i], sig[i]) if secure else sens[i]
            _record(src, gaussian_spend(s_i, sig[i], float(eps[i]), delta=delta, calibration=calibration,
                                        label=label, mechanism=fp_safe.GAUSSIAN if secure else "gaussian"))
    return out


def gaussian_approx(value: Any, sensitivity: float, epsilon: float, delta: float, rng: Any,
                    size: int | Sequence[int] | None = None, *, calibration: str = "analytic",
                    label: str = "") -> Any:
    """Gaussian mechanism calibrated for (ε, δ)-DP on a query of L2 sensitivity Δ₂ (``gaussian_sigma``), recorded
    with the exact δ of the σ drawn (so a classic calibration at ε ≥ 1 shows its true δ)."""
    _check_delta(delta)
    _check_nonneg(sensitivity, "sensitivity")
    sigma = gaussian_sigma(sensitivity, epsilon, delta, calibration)
    return gaussian(value, sigma, rng, size, sensitivity=sensitivity, epsilon=epsilon, delta=delta,
                    calibration=calibration, label=label)


def gaussian_zcdp(value: Any, sensitivity: float, rho: float | None, rng: Any,
                  size: int | Sequence[int] | None = None, *, sigma: Any = None, label: str = "") -> Any:
    """Gaussian mechanism for ρ-zCDP: σ = Δ₂/sqrt(2ρ) (Bun & Steinke 2016, Prop. 1.6).  ``sigma`` draws with that
    σ instead (an existing expression kept bit for bit); the ρ it implies, Δ₂²/(2σ²), must not exceed ``rho``."""
    sens = _check_nonneg(sensitivity, "sensitivity")
    if rho is not None:
        _check_rho(rho)
    if sigma is None:
        if rho is None:
            raise UserError("gaussian_zcdp needs rho or sigma")
        sigma = gaussian_sigma_zcdp(float(sens), rho)
    sig = _check_nonneg(sigma, "sigma")
    r = _ratio_max(sens, sig)
    implied = 0.5 * r * r
    if rho is not None and implied > rho * (1 + _REL):
        raise PrivacyAccountingError(f"gaussian_zcdp {label!r}: sigma implies rho = {implied:g} > the declared "
                                     f"{rho:g}")
    noise = as_noise(rng)
    out = gaussian(value, sig, noise, size)
    recorded, mechanism = (float(rho) if rho is not None else implied), "gaussian"
    if getattr(noise, "secure", False):   # OpenDP's map at its sampler's grid (``fp_safe``): at most an ulp above Δ₂²/(2σ²)
        r = _ratio_max(fp_safe.gaussian_equivalent_sensitivity(sens, sig), sig)
        recorded, mechanism = max(recorded, 0.5 * r * r), fp_safe.GAUSSIAN
    _record(rng, Spend(mechanism, "zcdp", rho=recorded, sensitivity=_max(sens), scale=_min(sig), label=label))
    return out


def distributed_gaussian_spend(sensitivity: float, sigma_client: float, n_clients: int, n_dropped: int,
                               n_colluding: int, epsilon: float, *, delta: float | None = None,
                               calibration: str | None = None, label: str = "") -> Spend:
    """Privacy map of the distributed Gaussian mechanism (Heikkilä et al. 2017, Thm 1): each of N clients adds
    N(0, σ_c²) to its share of a sum of L2 sensitivity Δ₂; the noise that protects a record is that of the clients
    that neither dropped out nor collude with the adversary, less the target's own client: N − dropped −
    colluding − 1 clients, σ_eff = σ_c·sqrt(N − dropped − colluding − 1).  Dropouts and colluders count together
    (the issue's 'against T').  Recorded as ``gaussian_spend(Δ₂, σ_eff, ε)``; ``none`` when no honest noise remains.
    """
    honest = int(n_clients) - int(n_dropped) - int(n_colluding) - 1
    if min(int(n_dropped), int(n_colluding)) < 0:
        raise UserError(f"dropped and colluding clients must be >= 0, got {n_dropped}, {n_colluding}")
    if honest < 1:
        return Spend("distributed gaussian", "none", label=label,
                     note=f"no honest client noise left (N={n_clients}, dropped={n_dropped}, colluding={n_colluding})")
    sigma_eff = float(sigma_client) * math.sqrt(honest)
    return gaussian_spend(sensitivity, sigma_eff, epsilon, delta=delta, calibration=calibration, label=label,
                          mechanism="distributed gaussian")


# ----------------------------------------------------------------------------------------------- Gamma-norm
def gamma_norm(value: Any, sensitivity: Any, epsilon: float | None, rng: Any,
               size: int | Sequence[int] | None = None, *, scale: Any = None, label: str = "") -> np.ndarray:
    """value + b with b uniformly random in direction and ‖b‖ ~ Gamma(d, Δ₂/ε): density ∝ exp(−ε‖b‖/Δ₂), ε-DP for a
    vector query of L2 sensitivity Δ₂ (Chaudhuri et al. 2011, Thm 6; output perturbation).

    ``value`` is the d-vector (last axis).  Draws, in this order, N(0, 1) of shape ``size + (d,)`` (the direction,
    normalised) then Gamma(d, 1) of shape ``size`` times the scale — exactly ``gamma_norm_noise`` of
    ``output_perturbation``.  ``scale`` as in ``laplace``: draw with it, record the declared ε (checked).
    """
    v = np.asarray(value, dtype=float)
    if v.ndim != 1:
        raise ValueError(f"gamma_norm releases one vector (1-D value), got shape {v.shape}")
    lead = _lead(size)
    sens = _check_nonneg(sensitivity, "sensitivity")
    sc, eps_rec = _pure_scale("gamma_norm", sens, epsilon, scale, label)
    d = v.shape[0]
    noise = as_noise(rng)
    g = noise.normal(size=lead + (d,))
    g /= np.linalg.norm(g, axis=-1, keepdims=True)
    s = _per_trial(np.asarray(sc), lead, 0, "scale")
    r = noise.gamma(shape=d, scale=1.0, size=lead) * s
    _record(rng, Spend("gamma-norm", "pure", epsilon=eps_rec, delta=0.0, sensitivity=_max(sens), scale=_min(sc),
                       label=label))
    return v + g * np.asarray(r)[..., None]


def _vector_per_cell(mechanism: str, values: Any, sources: Sequence[Any], label: str) -> tuple[np.ndarray, int, int]:
    """The (S, d) values of a ``*_rows`` mechanism that releases one vector per cell, with S and d; ValueError,
    before anything is drawn or recorded, unless ``values`` is 2-D with one row per source."""
    v = np.asarray(values, dtype=float)
    if v.ndim != 2:
        raise ValueError(f"{mechanism} releases one vector per cell ((S, d) values), got shape {v.shape}")
    S, d = v.shape
    if len(sources) != S:
        raise ValueError(f"{mechanism} {label!r}: {len(sources)} sources for {S} cells")
    return v, S, d


def gamma_norm_rows(values: Any, sensitivities: Any, epsilon: float, sources: Sequence[Any],
                    size: int | Sequence[int] | None = None, *, scales: Any = None, label: str = "") -> np.ndarray:
    """``gamma_norm`` of one vector of each of S cells at once: values[i] + b_i, ‖b_i‖ ~ Gamma(d, Δ₂ᵢ/ε) in a
    uniformly random direction — ε-DP for a vector query of L2 sensitivity Δ₂ᵢ (Chaudhuri et al. 2011, Thm 6),
    recorded in ``sources[i]`` exactly as ``gamma_norm`` records it.  ``values``: (S, d); ``sensitivities``: (S,);
    ``scales``: None (Δ₂ᵢ/ε) or (S,), drawn with as given, each checked as ``gamma_norm`` checks it (the ε it
    implies may not exceed ``epsilon``: ``PrivacyAccountingError`` before anything is drawn or recorded).  Each
    cell draws from its own source the calls ``gamma_norm`` makes (N(0, 1) of shape ``size + (d,)``, then Gamma(d,
    1) of shape ``size``); the normalisation and scaling, row-wise and element-wise, are done once for all cells
    (the same floats: ``tests/privacy``).  Returns (S,) + size + (d,)."""
    v, S, d = _vector_per_cell("gamma_norm_rows", values, sources, label)
    _check_eps(epsilon)
    eps = float(epsilon)
    sa = np.asarray(sensitivities, dtype=float).reshape(S)
    sens = sa.tolist()
    xa = None
    if scales is not None:
        try:
            xa = np.asarray(scales, dtype=float).reshape(S)
        except (TypeError, ValueError):   # malformed scales: raised below, after the sensitivities' checks, as ever
            pass
    if xa is None or not _scales_pass(sa, xa, eps):   # else every check below passes: tested for all cells at once
        for s in sens:
            _check_nonneg(s, "sensitivity")
        if scales is not None and xa is None:
            xa = np.asarray(scales, dtype=float).reshape(S)
        for s, x in ([] if xa is None else zip(sens, xa.tolist())):
            # drawn with as given; the ε it implies (``_ratio_max`` of one pair, in floats) checked per cell
            _check_nonneg(x, "scale")
            if s != s and x == x:   # a number released without a sensitivity: never accounted (``_pure_scale``)
                raise UserError(f"gamma_norm {label!r}: a NaN sensitivity for a trial that releases (finite scale)")
            implied = 0.0 if s == 0 else ((math.inf if s > 0 else math.nan) if x == 0 else s / x)
            if implied > eps * (1 + _REL):
                raise PrivacyAccountingError(f"gamma_norm {label!r}: the scale drawn implies epsilon = {implied:g} > "
                                             f"the declared {epsilon:g}")
    # b = Δ/ε (the float division of ``_pure_scale``) or the scales as given
    b = [s / eps for s in sens] if xa is None else xa.tolist()
    # gamma_norm's spend, ε the same for every cell: one validated template, Δ and b filled per cell
    spends = [Spend("gamma-norm", "pure", epsilon=eps, delta=0.0, sensitivity=s, scale=x, label=label)
              for s, x in zip(sens, b)]
    lead = _lead(size)
    g, r = _directions_and_radii(sources, lead, d, lambda noise, shape: noise.normal(size=shape))
    r *= np.asarray(b).reshape((S,) + (1,) * len(lead))
    _record_rows(sources, spends)
    return v.reshape((S,) + (1,) * len(lead) + (d,)) + g * r[..., None]


def _directions_and_radii(sources: Sequence[Any], lead: tuple[int, ...], d: int,
                          draw: Callable[[Any, tuple[int, ...]], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The two draws of a Gamma-norm release for every cell, each from the cell's own source, in this order:
    ``draw(noise, lead + (d,))`` (the direction's vector) then Gamma(d, 1) radii of shape ``lead``; returns the
    vectors normalised to unit length, (S,) + lead + (d,), and the radii, (S,) + lead.  A ledger's noise is read
    directly (``as_noise`` of one)."""
    S = len(sources)
    u = np.empty((S,) + lead + (d,))
    g = np.empty((S,) + lead)
    shape = lead + (d,)
    for i, src in enumerate(sources):
        noise = src.noise if type(src) is PrivacyLedger else as_noise(src)
        u[i] = draw(noise, shape)
        g[i] = noise.gamma(shape=d, scale=1.0, size=lead)
    u /= np.linalg.norm(u, axis=-1, keepdims=True)
    return u, g


def _scales_pass(sens: np.ndarray, scales: np.ndarray, eps: float) -> bool:
    """Every cell's sensitivity and scale (S,) passes ``gamma_norm_rows``' checks, tested at once: Δ ≥ 0 and b > 0
    finite, and the ε implied, Δ/b (the same float division), within the declared ``eps``.  False: some cell may
    fail (or is NaN), so the cells are checked one by one as before, raising the first one's error."""
    with np.errstate(all="ignore"):   # a warning here must not pre-empt the per-cell checks' own error
        return bool(np.all((sens >= 0.0) & (sens < math.inf) & (scales > 0.0) & (scales < math.inf)
                           & (sens / scales <= eps * (1 + _REL))))


def heuristic_gamma_norm(value: Any, scale: Any, rng: Any, size: int | Sequence[int] | None = None, *,
                         reason: str, label: str = "") -> np.ndarray:
    """value + b with ‖b‖ ~ Gamma(d, scale) and the direction of a Uniform[−½, ½]^d vector, normalised — the draw of
    the output perturbation in Honkela et al. 2018's comparison code.  Such a direction is *not* uniform on the
    sphere (it favours the cube's diagonals), so this is not the Gamma-norm mechanism of ``gamma_norm`` and carries
    no DP guarantee: recorded as a ``none`` spend with ``reason``.  Draws Uniform(−½, ½) of shape ``size + (d,)``,
    then Gamma(d, 1) of shape ``size`` times the scale."""
    v = np.asarray(value, dtype=float)
    if v.ndim != 1:
        raise ValueError(f"heuristic_gamma_norm releases one vector (1-D value), got shape {v.shape}")
    lead = _lead(size)
    sc = _check_nonneg(scale, "scale")
    d = v.shape[0]
    noise = as_noise(rng)
    u = noise.uniform(-0.5, 0.5, size=lead + (d,))
    u /= np.linalg.norm(u, axis=-1, keepdims=True)
    r = noise.gamma(shape=d, scale=1.0, size=lead) * _per_trial(np.asarray(sc), lead, 0, "scale")
    _record(rng, Spend("gamma-norm (cube direction)", "none", label=label, note=reason, scale=_min(sc)))
    return v + u * np.asarray(r)[..., None]


def heuristic_gamma_norm_rows(values: Any, scales: Any, sources: Sequence[Any],
                              size: int | Sequence[int] | None = None, *, reason: str, label: str = "") -> np.ndarray:
    """``heuristic_gamma_norm`` of one vector of each of S cells at once — no DP guarantee, recorded in
    ``sources[i]`` exactly as ``heuristic_gamma_norm`` records it (a ``none`` spend with ``reason``).  ``values``:
    (S, d); ``scales``: (S,), one number ≥ 0 per cell.  Each cell draws from its own source the calls
    ``heuristic_gamma_norm`` makes (Uniform(−½, ½) of shape ``size + (d,)``, then Gamma(d, 1) of shape ``size``);
    the normalisation and scaling, element- and row-wise, are done once for all cells (the same floats:
    ``tests/gdsc/test_batched_paths.py``).  Returns (S,) + size + (d,)."""
    v, S, d = _vector_per_cell("heuristic_gamma_norm_rows", values, sources, label)
    sc = np.asarray(scales, dtype=float).reshape(S)
    if not bool(np.all((sc >= 0.0) & (sc < math.inf))):   # else every check below passes: tested at once
        for x in sc.tolist():
            _check_nonneg(x, "scale")
    lead = _lead(size)
    u, g = _directions_and_radii(sources, lead, d, lambda noise, shape: noise.uniform(-0.5, 0.5, size=shape))
    r = g * sc.reshape((S,) + (1,) * len(lead))
    spends = [Spend("gamma-norm (cube direction)", "none", label=label, note=reason, scale=x) for x in sc.tolist()]
    _record_rows(sources, spends)
    return v.reshape((S,) + (1,) * len(lead) + (d,)) + u * r[..., None]


# ----------------------------------------------------------------------------------------------- exponential
def gumbel_max(log_weights: np.ndarray, rng: Any, size: int | None = None) -> np.ndarray:
    """Index sampled with probability ∝ exp(log_weights) via the Gumbel-max trick (exponential mechanism).

    ``log_weights`` may contain -inf. With ``size`` returns that many independent indices.  Draws only (record the
    spend with ``exponential_spend``, or use ``exponential``).
    """
    lw = np.asarray(log_weights, dtype=float)
    if lw.ndim != 1 or lw.size == 0 or not np.any(np.isfinite(lw)):
        raise ValueError("log_weights must be a non-empty 1-D array with a finite entry")
    shape = (lw.size,) if size is None else (int(size), lw.size)
    return np.argmax(lw + as_noise(rng).gumbel(size=shape), axis=-1)


def gumbel_argmax(log_weights: np.ndarray, rng: Any) -> np.ndarray:
    """Row-wise argmax of log_weights + standard Gumbel noise (one independent draw per row of a (…, M) array):
    the index i of each row with probability ∝ exp(log_weights[…, i]).  Draws ``gumbel(size=log_weights.shape)``,
    adds in place, argmax over the last axis — the same calls as ``dp_median._gumbel_argmax``.  Draws only."""
    g = as_noise(rng).gumbel(size=np.shape(log_weights))
    g += log_weights
    return np.argmax(g, axis=-1)


def exponential_spend(coefficient: float, utility_sensitivity: float, *, monotone: bool = False,
                      label: str = "") -> Spend:
    """Privacy map of the exponential mechanism P(r) ∝ μ(r)·exp(c·u(r)) with a utility of sensitivity Δu:
    ε = 2cΔu (McSherry & Talwar 2007, Thm 6; Dwork & Roth 2014, Thm 3.10), ε = cΔu for monotone utilities.
    ``coefficient`` is the c actually used (e.g. the ε/2 of Alabi et al. Alg. 3's exp(ε·u/2))."""
    if not (np.isfinite(coefficient) and coefficient >= 0):
        raise UserError(f"coefficient must be >= 0 and finite, got {coefficient}")
    if not (np.isfinite(utility_sensitivity) and utility_sensitivity > 0):
        raise UserError(f"utility sensitivity must be > 0 and finite, got {utility_sensitivity}")
    eps = (1.0 if monotone else 2.0) * float(coefficient) * float(utility_sensitivity)
    return Spend("exponential", "pure", epsilon=eps, delta=0.0, sensitivity=float(utility_sensitivity),
                 scale=float(coefficient), label=label)


def exponential(utility: np.ndarray, utility_sensitivity: float, epsilon: float, rng: Any,
                size: int | Sequence[int] | None = None, *, base_log_weights: np.ndarray | None = None,
                monotone: bool = False, label: str = "") -> np.ndarray:
    """Exponential mechanism over M candidates: index i with probability ∝ μ_i·exp(ε·u_i/(2Δu)) (ε·u_i/Δu when
    monotone), μ_i = exp(base_log_weights_i) (e.g. interval lengths), by Gumbel-max; ε-DP (``exponential_spend``).
    Returns an index, or indices of shape ``size``."""
    _check_eps(epsilon)
    if not (np.isfinite(utility_sensitivity) and utility_sensitivity > 0):
        raise UserError(f"utility sensitivity must be > 0 and finite, got {utility_sensitivity}")
    u = np.asarray(utility, dtype=float)
    if u.ndim != 1 or u.size == 0:
        raise ValueError("utility must be a non-empty 1-D array")
    c = float(epsilon) / ((1.0 if monotone else 2.0) * float(utility_sensitivity))
    lw = c * u if base_log_weights is None else np.asarray(base_log_weights, dtype=float) + c * u
    idx = gumbel_argmax(np.broadcast_to(lw, _lead(size) + lw.shape), as_noise(rng))
    _record(rng, exponential_spend(c, utility_sensitivity, monotone=monotone, label=label))
    return idx


# ----------------------------------------------------------------------------------------------- smooth sensitivity
def student_t_spend(t: float, s: float, df: float, *, label: str = "") -> Spend:
    """Privacy map of value + (S/s)·T_df with S a t-smooth upper bound on the local sensitivity:
    ε = |t|(df + 1) + |s|(df + 1)/(2 sqrt(df)) (Bun & Steinke 2019, Thms 31 and 46; Alabi et al. 2020, App. E)."""
    if not (df > 0 and np.isfinite(t) and np.isfinite(s) and s != 0):
        raise UserError(f"student_t needs df > 0 and finite t, s != 0, got t={t}, s={s}, df={df}")
    eps = abs(t) * (df + 1.0) + abs(s) * (df + 1.0) / (2.0 * math.sqrt(df))
    return Spend("smooth sensitivity, Student t", "pure", epsilon=eps, delta=0.0, scale=float(s), label=label)


def smooth_sensitivity_t(value: Any, smooth_bound: Any, t: float, s: float, df: float, rng: Any,
                         size: int | Sequence[int] | None = None, *, label: str = "") -> Any:
    """value + (S/s)·T_df, T_df ~ Student's t(df): ε-DP when S is a t-smooth upper bound on the local sensitivity of
    the released function (the caller's proof; e.g. Alabi et al. Lemma 7), ε from ``student_t_spend``.  Draws
    ``standard_t(df, size + value.shape)`` and computes ``value + (S / s) * draw`` in that order."""
    spend = student_t_spend(t, s, df, label=label)
    if np.any(np.asarray(smooth_bound, dtype=float) < 0):
        raise UserError(f"smooth sensitivity bound must be >= 0, got {smooth_bound}")
    out = value + (smooth_bound / s) * as_noise(rng).standard_t(df, size=_shape(value, size))
    _record(rng, dataclasses.replace(spend, sensitivity=_max(smooth_bound)))
    return out
