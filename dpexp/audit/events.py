"""Output events of a scalar projection, chosen on a first half of the samples, evaluated on the second.

The event family is every closed interval [lo, hi] whose end points are taken from a grid of pooled quantiles of
the *selection* half (plus ±∞), in both directions (D in the numerator or D′ in the numerator).  That covers the
threshold events {x ≤ t}, {x ≥ t} (lo = −∞ or hi = +∞), histogram cells and single atoms (lo = hi, which catches
mechanisms that sometimes release an exact, noise-free value).  Non-finite outputs (failed trials, NaN) are
mapped to +∞ so that "the algorithm failed" is an event like any other.

Splitting the samples matters: the event is a function of the first half only, so on the second half the
Clopper–Pearson bounds of ``bounds.epsilon_lower_bound`` are valid for the selected events (with a union bound
over the ``top_k`` events kept).  This is the "choose on one sample, test on a fresh one" protocol of Ding et al.
2018 (Sec. 4) and of DP-Sniper (Bichsel et al. 2021), specialised to one-dimensional projections.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpexp.audit.bounds import epsilon_lower_bound, point_estimate


@dataclass(frozen=True)
class Event:
    """The output event lo ≤ x ≤ hi; ``swap`` False: P[M(D) ∈ S] in the numerator, True: P[M(D′) ∈ S]."""

    lo: float
    hi: float
    swap: bool

    def describe(self, what: str = "x") -> str:
        side = "D'/D" if self.swap else "D/D'"
        if self.lo == -np.inf and self.hi == np.inf:
            body = f"{what} any"
        elif self.lo == -np.inf:
            body = f"{what} <= {self.hi:.6g}"
        elif self.hi == np.inf:
            body = f"{what} >= {self.lo:.6g}"
        elif self.lo == self.hi:
            body = f"{what} == {self.lo:.6g}"
        else:
            body = f"{self.lo:.6g} <= {what} <= {self.hi:.6g}"
        return f"{body} [{side}]"


@dataclass(frozen=True)
class EventResult:
    """An event evaluated on fresh samples: counts on both sides and the ε lower bound it witnesses."""

    event: Event
    k_d: int
    k_dprime: int
    n_d: int
    n_dprime: int
    epsilon_lb: float


def clean(x: np.ndarray) -> np.ndarray:
    """1-D float copy with NaN mapped to +∞ (a failed run is an output like any other)."""
    x = np.asarray(x, dtype=float).ravel()
    return np.where(np.isnan(x), np.inf, x)


def quantile_grid(a: np.ndarray, b: np.ndarray, n_grid: int = 64) -> np.ndarray:
    """Sorted unique end points: pooled quantiles of the finite values of ``a`` and ``b`` at levels dense in both
    tails (where privacy-loss witnesses live), plus ±∞ whenever infinite values occur."""
    pooled = np.concatenate([a, b])
    fin = pooled[np.isfinite(pooled)]
    pts: list[np.ndarray] = []
    if fin.size:
        m = max(2, n_grid // 2)
        tail = np.geomspace(min(2e-4, 0.5 / fin.size * 10), 0.5, m)
        levels = np.unique(np.concatenate([tail, 1.0 - tail]))
        pts.append(np.quantile(fin, levels, method="inverted_cdf"))
        pts.append(np.array([fin.min(), fin.max()]))
    if np.any(pooled == np.inf):
        pts.append(np.array([np.inf]))
    if np.any(pooled == -np.inf):
        pts.append(np.array([-np.inf]))
    return np.unique(np.concatenate(pts)) if pts else np.zeros(0)


def _interval_counts(sorted_x: np.ndarray, lo_pts: np.ndarray, hi_pts: np.ndarray) -> np.ndarray:
    """counts[i, j] = #{lo_i ≤ x ≤ hi_j} (negative where lo_i > hi_j; callers mask those)."""
    below = np.searchsorted(sorted_x, lo_pts, side="left")
    upto = np.searchsorted(sorted_x, hi_pts, side="right")
    return upto[None, :] - below[:, None]


def _family(grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lo_pts = np.concatenate([[-np.inf], grid])
    hi_pts = np.concatenate([grid, [np.inf]])
    return lo_pts, hi_pts


def count_events(x: np.ndarray, events: list[Event]) -> np.ndarray:
    """How many of the samples ``x`` fall in each event's interval."""
    s = np.sort(clean(x))
    lo = np.array([e.lo for e in events], dtype=float)
    hi = np.array([e.hi for e in events], dtype=float)
    return np.searchsorted(s, hi, side="right") - np.searchsorted(s, lo, side="left")


def select_events(a: np.ndarray, b: np.ndarray, delta: float, confidence: float, top_k: int = 2,
                  n_grid: int = 64, select_union: bool = True) -> list[Event]:
    """The ``top_k`` events (intervals × direction) with the largest ε bound on the selection samples
    ``a`` (from D) and ``b`` (from D′); ties and all-uninformative cases are ranked by a smoothed point
    estimate.  Uses only these samples, so the result is independent of the evaluation half."""
    a, b = clean(a), clean(b)
    grid = quantile_grid(a, b, n_grid)
    lo_pts, hi_pts = _family(grid)
    ca = _interval_counts(np.sort(a), lo_pts, hi_pts)
    cb = _interval_counts(np.sort(b), lo_pts, hi_pts)
    valid = lo_pts[:, None] <= hi_pts[None, :]
    # drop the trivial event "anything" (ratio 1 at best)
    valid &= ~((lo_pts[:, None] == -np.inf) & (hi_pts[None, :] == np.inf))
    ii, jj = np.nonzero(valid)
    ka, kb = ca[ii, jj], cb[ii, jj]
    na, nb = a.size, b.size
    # Score with a union bound over the whole family: this penalises narrow cells whose first-half counts
    # are lucky, so the kept events are the ones likely to be strong on the fresh half too.
    fam = 2 * int(ii.size) if select_union else 1
    lb_fwd = epsilon_lower_bound(ka, na, kb, nb, delta, confidence, n_events=fam)
    lb_bwd = epsilon_lower_bound(kb, nb, ka, na, delta, confidence, n_events=fam)
    pe_fwd = point_estimate(ka, na, kb, nb, delta)
    pe_bwd = point_estimate(kb, nb, ka, na, delta)
    lb = np.concatenate([lb_fwd, lb_bwd])
    pe = np.concatenate([pe_fwd, pe_bwd])
    # rank: bound first, point estimate second (np.lexsort sorts by the last key first)
    order = np.lexsort((-np.nan_to_num(pe, neginf=-1e300), -np.nan_to_num(lb, neginf=-1e300)))
    m = ii.size
    chosen: list[Event] = []
    for idx in order[: max(1, top_k)]:
        swap = bool(idx >= m)
        r = idx - m if swap else idx
        chosen.append(Event(float(lo_pts[ii[r]]), float(hi_pts[jj[r]]), swap))
    return chosen


def evaluate_events(events: list[Event], a: np.ndarray, b: np.ndarray, delta: float,
                    confidence: float) -> EventResult:
    """Evaluate ``events`` on fresh samples ``a`` (D) and ``b`` (D′); return the one with the largest
    ε lower bound, computed with a union bound over all ``len(events)`` events."""
    ka = count_events(a, events)
    kb = count_events(b, events)
    na, nb = int(np.size(a)), int(np.size(b))
    num_k = np.array([kb[i] if e.swap else ka[i] for i, e in enumerate(events)])
    den_k = np.array([ka[i] if e.swap else kb[i] for i, e in enumerate(events)])
    num_n = np.array([nb if e.swap else na for e in events])
    den_n = np.array([na if e.swap else nb for e in events])
    lb = epsilon_lower_bound(num_k, num_n, den_k, den_n, delta, confidence, n_events=len(events))
    best = int(np.argmax(np.nan_to_num(lb, neginf=-1e300)))
    return EventResult(events[best], int(ka[best]), int(kb[best]), na, nb, float(lb[best]))


def audit_samples(a: np.ndarray, b: np.ndarray, delta: float, confidence: float, top_k: int = 2,
                  n_grid: int = 64) -> EventResult:
    """Full protocol on two sample vectors: select events on the first halves, evaluate on the second halves."""
    a, b = clean(a), clean(b)
    ha, hb = a.size // 2, b.size // 2
    events = select_events(a[:ha], b[:hb], delta, confidence, top_k, n_grid)
    return evaluate_events(events, a[ha:], b[hb:], delta, confidence)
