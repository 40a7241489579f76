"""Pairings of the data points for Theil–Sen (Alabi et al. 2020, Sec. 2.2 and Algorithm 2).

* ``round_robin(n)``: a fixed decomposition of the complete graph K_n into perfect matchings (circle method):
  n - 1 matchings of n/2 edges for even n; for odd n a dummy vertex is added, giving n matchings of (n-1)/2 edges
  (each point sits out exactly one round).  Every edge {i, j} occurs in exactly one round.
* ``sample_matchings(n, k, rng, trials)``: Algorithm 2's transformation T — k rounds sampled without replacement
  and a uniformly random relabelling of the points, independently per trial.  Every point occurs in at most k of
  the sampled edges, which makes T k-Lipschitz w.r.t. Hamming distance (Appendix D.1, Lemma 1).
* ``pair_estimates``: z_{j,l} = s (x_new - (x_j + x_l)/2) + (y_j + y_l)/2 with s = (y_l - y_j)/(x_l - x_j), the
  prediction at x_new of the line through points j and l (Algorithm 2); vertical pairs (x_j = x_l) give none.
* ``all_pair_estimates``: the same for all n(n-1)/2 pairs, computed in blocks of rows (bounded temporaries) into one
  float64 array without materialising index arrays (≈ 57 M estimates for n ≈ 10,683 need 0.46 GB).
"""

from __future__ import annotations

import numpy as np


def n_rounds(n: int) -> int:
    """Number of matchings in the round-robin decomposition of K_n (n - 1 for even n, n for odd n)."""
    return n - 1 if n % 2 == 0 else n


def round_robin(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Edges of the circle-method decomposition of K_n: arrays ``a, b`` of shape (rounds, edges per round).

    For even n: vertex n-1 is fixed, and round r pairs (r, n-1) and ((r+i) mod (n-1), (r-i) mod (n-1)) for
    i = 1..n/2-1.  For odd n the same is done for n+1 vertices and the edges touching the dummy vertex n dropped.
    """
    if n < 2:
        return np.zeros((0, 0), dtype=np.int64), np.zeros((0, 0), dtype=np.int64)
    return round_edges(n, np.arange(n_rounds(n)))


def round_edges(n: int, rounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The edges of the given rounds of ``round_robin(n)`` only: ``a, b`` of shape ``rounds.shape + (edges,)``, equal
    to ``round_robin(n)[0][rounds]``, ``[1][rounds]`` without building all n_rounds(n) rounds (at n = 10,000 the
    whole decomposition is 50 M index pairs, 0.8 GB, of which a sample of k = 10 rounds uses 0.1 %)."""
    N = n if n % 2 == 0 else n + 1
    R = N - 1
    r = np.asarray(rounds, dtype=np.int64)[..., None]
    i = np.arange(1, N // 2)
    a = np.concatenate([r, (r + i) % R], axis=-1)
    b = np.concatenate([np.broadcast_to(np.int64(N - 1), r.shape), (r - i) % R], axis=-1)
    if N != n:  # drop the edge of each round that touches the dummy vertex (always the first column)
        a, b = a[..., 1:], b[..., 1:]
    return a, b


def _draw_matchings(n: int, k: int, rng: np.random.Generator, trials: int) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 2's draws for ``trials`` trials: a uniform relabelling of the points (trials, n) and k of the
    round-robin rounds without replacement (trials, k)."""
    R = n_rounds(n) if n >= 2 else 0
    if not 1 <= k <= R:
        raise ValueError(f"k must be in [1, {R}] for n = {n}, got {k}")
    perm = rng.permuted(np.tile(np.arange(n), (trials, 1)), axis=1)
    rounds = np.argsort(rng.random((trials, R)), axis=1)[:, :k]  # k rounds without replacement
    return perm, rounds


def _matched_edges(n: int, perm: np.ndarray, rounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sampled rounds' edges under each trial's relabelling: index arrays (trials, k * edges)."""
    a0, b0 = round_edges(n, rounds)                               # (trials, k, edges): only the sampled rounds
    t = rounds.shape[0]
    return (np.take_along_axis(perm, a0.reshape(t, -1), axis=1), np.take_along_axis(perm, b0.reshape(t, -1), axis=1))


def sample_matchings(n: int, k: int, rng: np.random.Generator, trials: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Index arrays (trials, k * edges) of k distinct random matchings per trial (Algorithm 2).

    Each trial draws a uniform relabelling of the points and k of the round-robin rounds without replacement.
    """
    perm, rounds = _draw_matchings(n, k, rng, trials)
    return _matched_edges(n, perm, rounds)


def matching_lines(x: np.ndarray, y: np.ndarray, k: int, rng: np.random.Generator, trials: int = 1,
                   block: int = 1 << 18) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``pair_lines`` of ``sample_matchings(n, k, rng, trials)``: the same draws (the relabellings and rounds of all
    trials first), then the edges and lines built for blocks of trials of about ``block`` pairs (the index and
    gathered arrays of one block only) into the (trials, k × edges) results."""
    n = x.size
    perm, rounds = _draw_matchings(n, k, rng, trials)
    P = k * (n // 2)
    s, mx, my = (np.empty((trials, P)) for _ in range(3))
    vertical = np.empty((trials, P), dtype=bool)
    step = max(1, block // max(P, 1))
    for t0 in range(0, trials, step):
        t1 = min(trials, t0 + step)
        a, b = _matched_edges(n, perm[t0:t1], rounds[t0:t1])
        s[t0:t1], mx[t0:t1], my[t0:t1], vertical[t0:t1] = pair_lines(x, y, a, b)
    return s, mx, my, vertical


def pair_lines(x: np.ndarray, y: np.ndarray, a: np.ndarray, b: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The lines through the pairs (a, b) (any shape): slope s = (y_b - y_a)/(x_b - x_a), midpoint
    ((x_a + x_b)/2, (y_a + y_b)/2) and the mask of vertical pairs (x_a = x_b).  Computed once and evaluated at
    every x_new by ``line_estimates``."""
    xa, xb, ya, yb = x[a], x[b], y[a], y[b]
    dx = xb - xa
    with np.errstate(divide="ignore", invalid="ignore"):
        s = (yb - ya) / dx
    return s, 0.5 * (xa + xb), 0.5 * (ya + yb), dx == 0


def line_estimates(lines: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], x0: float) -> np.ndarray:
    """z = s (x0 - x_mid) + y_mid of every line of ``pair_lines``; NaN for the vertical pairs."""
    s, mx, my, vertical = lines
    z = x0 - mx
    with np.errstate(invalid="ignore"):   # a vertical pair's inf slope times 0: NaN, replaced below
        z *= s
        z += my
    z[vertical] = np.nan
    return z


def pair_estimates(x: np.ndarray, y: np.ndarray, a: np.ndarray, b: np.ndarray, x0: float) -> np.ndarray:
    """z for the pairs (a, b) (any shape) at abscissa x0; NaN where the pair is vertical (x_a = x_b)."""
    return line_estimates(pair_lines(x, y, a, b), x0)


#: entries of one block of ``all_pair_estimates`` (2^16: its ≈ 8 temporaries stay in cache, none is mmap-allocated)
BLOCK_ENTRIES = 1 << 16


def all_pair_estimates(x: np.ndarray, y: np.ndarray, x0: float, block: int = BLOCK_ENTRIES) -> np.ndarray:
    """The estimates z_{j,l}(x0) of all non-vertical pairs j < l, as one 1-D float64 array (unsorted), in the order
    (0, 1), (0, 2), ..., (0, n-1), (1, 2), ... (row by row).

    Computed in blocks of consecutive rows r: the pairs (r, r+1..n-1) of at most ``block`` entries at a time (or one
    row, if longer) gathered by index, the vertical ones dropped, written into the output: O(n^2) time, n(n-1)/2
    floats for the result and a bounded ≈ 8 × 8 × ``block`` bytes of temporaries, whatever n.
    Per pair the arithmetic is z = ((y_j - y_r) / (x_j - x_r)) (x0 - (x_j + x_r)/2) + (y_j + y_r)/2."""
    x = np.ascontiguousarray(x, dtype=float)
    y = np.ascontiguousarray(y, dtype=float)
    n = x.size
    out = np.empty(max(n * (n - 1) // 2, 0), dtype=float)
    pos = 0
    r0 = 0
    while r0 < n - 1:
        # rows r0..r1-1 hold n-1-r pairs each: as many rows as fit in ``block`` entries (at least one)
        r1 = r0 + 1
        size = n - 1 - r0
        while r1 < n - 1 and size + (n - 1 - r1) <= block:
            size += n - 1 - r1
            r1 += 1
        r = np.arange(r0, r1)
        lengths = n - 1 - r
        first = np.cumsum(lengths) - lengths       # where row r's pairs start in the block
        j = np.arange(size) + np.repeat(r + 1 - first, lengths)
        xi, yi = np.repeat(x[r0:r1], lengths), np.repeat(y[r0:r1], lengths)
        xj, yj = x[j], y[j]
        dx = xj - xi
        vertical = dx == 0
        if vertical.any():
            keep = ~vertical
            xi, yi, xj, yj, dx = xi[keep], yi[keep], xj[keep], yj[keep], dx[keep]
        seg = out[pos:pos + dx.size]
        np.subtract(yj, yi, out=seg)
        seg /= dx
        xj += xi
        xj *= 0.5
        np.subtract(x0, xj, out=xj)
        seg *= xj
        yj += yi
        yj *= 0.5
        seg += yj
        pos += dx.size
        r0 = r1
    return out[:pos]
