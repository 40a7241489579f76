"""A ``numpy.random.Generator`` look-alike for batched samplers whose problems must each draw from their own stream.

A batched sampler (``dpexp.models.noise_aware.sample_posterior``) draws for a batch of B independent problems at
once, with the problem index as the leading axis of every draw.  With one Generator for the whole batch, a
problem's draws depend on which other problems share its batch — so a run's result would depend on how cells are
grouped into chunks.  ``RowStreams(generators, counts)`` serves every draw's leading axis in blocks: the first
``counts[0]`` rows from ``generators[0]``, the next ``counts[1]`` from ``generators[1]``, …, so each block's draws
are exactly what its own generator would give for a batch of that block alone.  Only the methods the samplers use
are offered (``standard_normal``, ``uniform``, ``gamma``, ``wald``); array parameters broadcast against the draw
shape and are split along the same axis.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


class RowStreams:
    """Leading-axis blocks of every draw from their own generators (module docstring)."""

    def __init__(self, generators: Sequence[np.random.Generator], counts: Sequence[int]) -> None:
        if len(generators) != len(counts) or any(c < 1 for c in counts):
            raise ValueError("need one positive row count per generator")
        self.generators = list(generators)
        self.counts = [int(c) for c in counts]
        self.rows = int(sum(self.counts))
        self._edges = np.cumsum([0] + self.counts)

    def _shape(self, size, *params) -> tuple[int, ...]:
        if size is None:
            shape = np.broadcast_shapes(*(np.shape(p) for p in params))
        else:
            shape = (int(size),) if np.ndim(size) == 0 else tuple(int(s) for s in size)
        if not shape or shape[0] != self.rows:
            raise ValueError(f"RowStreams draws need a leading axis of {self.rows} rows, got shape {shape}")
        return shape

    def _blocks(self, shape, params, draw):
        full = [np.broadcast_to(np.asarray(p, dtype=float), shape) for p in params]
        out = [draw(g, *(p[a:b] for p in full), (b - a,) + shape[1:])
               for g, a, b in zip(self.generators, self._edges[:-1], self._edges[1:])]
        return np.concatenate(out, axis=0)

    # Each method uses the cheapest Generator primitive per block (numpy's parameter checks on array arguments
    # cost more than the draws for the small blocks of a batched sampler).
    def standard_normal(self, size=None) -> np.ndarray:
        shape = self._shape(size)
        return self._blocks(shape, (), lambda g, s: g.standard_normal(s))

    def uniform(self, low=0.0, high=1.0, size=None) -> np.ndarray:
        shape = self._shape(size, low, high)
        u = self._blocks(shape, (), lambda g, s: g.random(s))
        return low + (np.asarray(high, dtype=float) - low) * u

    def gamma(self, shape_param, scale=1.0, size=None) -> np.ndarray:
        shape = self._shape(size, shape_param, scale)
        return self._blocks(shape, (shape_param,), lambda g, k, s: g.standard_gamma(k, s)) * scale

    def wald(self, mean, scale, size=None) -> np.ndarray:
        """Inverse Gaussian(mean μ, shape λ) by Michael, Schucany & Haas (1976) — numpy's own algorithm — from one
        normal and one uniform per draw.  The smaller root x = μ + μ/(2λ)(y − √(y² + 4λy)) is evaluated as
        4λμy / (y + √(y² + 4λy))²: the textbook form cancels catastrophically when y = μz² ≫ λ (a huge mean, as the
        sampler's mixing variances have for tiny residuals) and returned x ≤ 0 for most draws at μ/λ = 1e12."""
        shape = self._shape(size, mean, scale)
        mu = np.broadcast_to(np.asarray(mean, dtype=float), shape)
        lam = np.broadcast_to(np.asarray(scale, dtype=float), shape)
        y = mu * self._blocks(shape, (), lambda g, s: g.standard_normal(s)) ** 2
        den = y + np.sqrt(y * (y + 4.0 * lam))
        x = np.where(den > 0, 4.0 * lam * mu * y / np.where(den > 0, den * den, 1.0), mu)   # y = 0: x = μ
        u = self._blocks(shape, (), lambda g, s: g.random(s))
        return np.where(u <= mu / (mu + x), x, mu * mu / x)
