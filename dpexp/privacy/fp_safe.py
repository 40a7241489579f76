"""Floating-point-safe Laplace and Gaussian noise for ``--noise secure``, from OpenDP's samplers (issue 29).

Why: a textbook sampler — value + b·(−ln U) with U a floating-point uniform — leaves holes in the set of outputs it
can reach, and which holes depends on the value, so the low-order bits of a release can tell neighbouring datasets
apart (Mironov 2012).  The seeded mode keeps the textbook samplers (reproducible Monte Carlo, where the attack is
irrelevant); the secure mode is for a real release and must not leak through the bits.

How: every Laplace or Gaussian release of ``dpexp.privacy.mechanisms`` whose noise source is secure
(``SecureNoise``, ``--noise secure``) adds its noise through OpenDP's ``make_laplace`` / ``make_gaussian`` on a
vector of floats (OpenDP 0.16, https://docs.opendp.org; they sample the discrete Laplace / Gaussian of Canonne,
Kamath & Steinke 2020 on a grid 2^k with exact arithmetic and account for rounding the value onto the grid; OpenDP
lists them under its "contrib" feature flag, which is enabled here).  Their randomness is OpenDP's own CSPRNG, not
dpexp's byte source: a secure release is not reproducible, by design, whatever source the ledger holds.

What is recorded: the privacy map of the OpenDP measurement that drew the noise, never a number computed beside it —
for Laplace the ε of ``make_laplace(scale=b).map(Δ₁)`` (Δ₁/b rounded up), for Gaussian the ρ of
``make_gaussian(scale=σ).map(Δ₂)``, from which the caller's (ε, δ) map is evaluated at the equivalent sensitivity
Δ₂′ = σ·sqrt(2ρ) ≥ Δ₂.  The mechanism's name in the ledger says which sampler drew it (``LAPLACE``, ``GAUSSIAN``).

Scalar releases with a public bound keep Mironov's snapping mechanism (``dpexp.privacy.snapping``, ``laplace(...,
bound=)``).  Without OpenDP installed (the optional extra ``[secure]``), a secure Laplace or Gaussian release raises
a ``UserError`` that names the extra.  The other samplers (Gamma norm, Gumbel-max, Student's t) have no
floating-point-safe counterpart here; docs/privacy.md says so.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from dpexp.errors import UserError

#: the ledger's mechanism names of releases drawn here
LAPLACE = "laplace (OpenDP, floating-point safe)"
GAUSSIAN = "gaussian (OpenDP, floating-point safe)"


@functools.lru_cache(maxsize=1)
def _dp() -> Any:
    try:
        import opendp.prelude as dp
    except ImportError as exc:   # the optional extra
        raise UserError("--noise secure draws Laplace and Gaussian noise with OpenDP's floating-point-safe samplers: "
                        "install the extra, pip install 'dpexp[secure]' (or opendp>=0.16)") from exc
    dp.enable_features("contrib")
    return dp


def available() -> bool:
    """Whether OpenDP can be imported (the ``[secure]`` extra is installed)."""
    try:
        _dp()
    except UserError:
        return False
    return True


@functools.lru_cache(maxsize=512)
def _laplace(scale: float) -> Any:
    dp = _dp()
    return dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float),
                             scale=scale)


@functools.lru_cache(maxsize=512)
def _gaussian(scale: float) -> Any:
    dp = _dp()
    return dp.m.make_gaussian(dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float),
                              scale=scale)


def _add(make, values: Any, scales: Any) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    b = np.broadcast_to(np.asarray(scales, dtype=float), v.shape)
    if not np.all(np.isfinite(v)):
        raise UserError("a secure release needs finite values (OpenDP's samplers refuse NaN and ±inf)")
    out = np.empty(v.shape)
    none = np.isnan(b)                # a NaN scale releases nothing (a ⊥ trial, e.g. NoisyStats' with nvar ≤ 0):
    out[none] = np.nan                # NaN, as the textbook sampler gives; OpenDP refuses a NaN scale
    for s in np.unique(b[~none]):     # one measurement per distinct scale (per trial, when it varies)
        at = b == s
        out[at] = v[at] if s == 0 else np.asarray(make(float(s))(v[at].tolist()), dtype=float)
    return out


def add_laplace(values: Any, scales: Any) -> np.ndarray:
    """``values`` + Laplace(b) noise per entry, b from ``scales`` (broadcast to the values' shape; b = 0 adds none),
    floating-point safe (OpenDP ``make_laplace``)."""
    return _add(_laplace, values, scales)


def add_gaussian(values: Any, sigmas: Any) -> np.ndarray:
    """``values`` + N(0, σ²) noise per entry, σ from ``sigmas`` (broadcast; σ = 0 adds none), floating-point safe
    (OpenDP ``make_gaussian``)."""
    return _add(_gaussian, values, sigmas)


def laplace_epsilon(sensitivity: Any, scale: Any) -> float:
    """The largest ε over the trials' (Δ₁, b) of OpenDP's ``make_laplace(scale=b).map(Δ₁)``: what the release
    spends (0 for Δ₁ = 0; ∞ for b = 0 < Δ₁; nothing for a NaN scale, which ``add_laplace`` releases as NaN)."""
    s, b = np.broadcast_arrays(np.asarray(sensitivity, dtype=float), np.asarray(scale, dtype=float))
    worst = 0.0
    for d, sc in {(float(x), float(y)) for x, y in zip(s.ravel(), b.ravel())}:
        if d == 0 or math.isnan(sc):
            continue
        worst = max(worst, float("inf") if sc == 0 else float(_laplace(sc).map(d)))
    return worst


def gaussian_equivalent_sensitivity(sensitivity: Any, sigma: Any) -> np.ndarray:
    """Δ₂′ = σ·sqrt(2ρ) per trial, ρ = OpenDP's ``make_gaussian(scale=σ).map(Δ₂)`` (≥ Δ₂: the rounding onto the
    sampler's grid is paid for): the sensitivity at which the caller's Gaussian map is evaluated."""
    s, sig = np.broadcast_arrays(np.asarray(sensitivity, dtype=float), np.asarray(sigma, dtype=float))
    out = np.empty(s.shape)
    for i, (d, sc) in enumerate(zip(s.ravel(), sig.ravel())):
        out.flat[i] = d if (d == 0 or sc == 0 or math.isnan(sc)) else sc * float(np.sqrt(2.0 * float(_gaussian(float(sc)).map(d))))
    return np.maximum(out, s)

