"""Brute-force search for the largest change one replaced row can make (the sensitivity tests): a derivative-free
optimiser (scipy's bounded Powell, then Nelder–Mead from its answer) from several random starts in a box."""

from __future__ import annotations

from typing import Callable

import numpy as np
from scipy.optimize import minimize


def maximise(f: Callable[[np.ndarray], float], lo: np.ndarray, hi: np.ndarray, rng: np.random.Generator,
             restarts: int = 12) -> tuple[float, np.ndarray]:
    """max of ``f`` over the box [lo, hi] (points outside are clipped into it before ``f`` sees them) and the point
    found, over ``restarts`` random starts."""
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)

    def neg(z: np.ndarray) -> float:
        return -float(f(np.clip(z, lo, hi)))

    best, arg = -np.inf, lo
    for _ in range(restarts):
        z0 = rng.uniform(lo, hi)
        r = minimize(neg, z0, method="Powell", bounds=list(zip(lo, hi)),
                     options={"xtol": 1e-10, "ftol": 1e-14, "maxfev": 200_000})
        r = minimize(neg, np.clip(r.x, lo, hi), method="Nelder-Mead",
                     options={"xatol": 1e-12, "fatol": 1e-15, "maxfev": 200_000})
        if -r.fun > best:
            best, arg = -r.fun, np.clip(r.x, lo, hi)
    return best, arg
