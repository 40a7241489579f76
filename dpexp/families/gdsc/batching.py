"""The per-split work of a ``run_many`` call done as arrays across its splits (the compared methods and baselines of
the GDSC family: ``plr``, ``oplr``, ``fmlr``, their paper-protocol versions and ``lr_public``).

A chunk hands ``run_many`` all subsets (drugs) of one size at once; their shapes differ (lines untested for a drug
are dropped), so rows are stacked rather than padded: ``Rows`` concatenates the rows of several splits, runs an
element- or row-wise step (scaling, clipping, a bias column) once for all of them and cuts the result back into each
split's part.  The per-split BLAS products stay per split (cheap, and their summation order is the per-split one);
batched solvers treat every problem of a stack on its own, so results equal the split-by-split ones to the bit
(``tests/gdsc/test_batched_paths.py``).  Privacy noise is still drawn cell by cell, through each cell's ledger.
"""

from __future__ import annotations

from typing import Any, Callable, Hashable, Iterable

import numpy as np

from dpexp.errors import UserError
from dpexp.families.gdsc.model import fixed_posterior
from dpexp.privacy.ledger import as_ledger


def each(ks: Iterable[int], out: list, step: Callable[[int], Any]) -> list[int]:
    """``step(k)`` for every split index k; a split whose step raises gets its exception in ``out[k]`` (failures
    are recorded per cell) and is dropped.  Returns the indices that succeeded, in order."""
    ok = []
    for k in ks:
        try:
            step(k)
            ok.append(k)
        except Exception as exc:  # recorded per cell
            out[k] = exc
    return ok


def groups(ks: Iterable[int], key: Callable[[int], Hashable]) -> dict[Hashable, list[int]]:
    """The indices grouped by ``key(k)`` (first-seen order, order kept within a group)."""
    g: dict[Hashable, list[int]] = {}
    for k in ks:
        g.setdefault(key(k), []).append(k)
    return g


def run_grouped(name: str, splits: list, epsilon: float, ledgers: list, key: Callable[[int], Hashable],
                run_group: Callable[[Any, list[int], float, list, list], None]) -> list:
    """A batched ``run_many``: ε checked once (every split fails with the same one line if it is not > 0 and
    finite), each ledger wrapped by ``as_ledger``, the splits grouped by ``key(k)`` (a split whose key raises fails
    alone) and ``run_group(key, group, epsilon, ledgers, out)`` called per group to fill ``out[k]`` with an
    ``Output`` or the exception; a group whose shared steps raise gets that exception for each of its cells."""
    if not (epsilon > 0 and np.isfinite(epsilon)):
        return [UserError(f"{name}: epsilon must be > 0 and finite, got {epsilon}") for _ in splits]
    ledgers = [as_ledger(lg) for lg in ledgers]
    out: list = [UserError("not run")] * len(splits)
    keys: dict[int, Hashable] = {}
    ks = each(range(len(splits)), out, lambda k: keys.__setitem__(k, key(k)))
    for g, group in groups(ks, keys.__getitem__).items():
        try:
            run_group(g, group, float(epsilon), ledgers, out)
        except Exception as exc:  # recorded per cell
            for k in group:
                out[k] = exc
    return out


class Rows:
    """The rows of several parts stacked into one array (a new one), and cut back.  A part is an array or a tuple
    of arrays whose rows follow each other (e.g. a split's public then private rows, ``Split.X_train``).
    ``split(A)`` returns the parts of an array computed row by row from ``stack`` (views); ``per_row(v)`` repeats one
    value per part for each of its rows (e.g. each split's ranges, to scale all rows in one call)."""

    def __init__(self, parts: list[np.ndarray | tuple[np.ndarray, ...]]) -> None:
        flat = [a for p in parts for a in (p if isinstance(p, tuple) else (p,))]
        self.counts = np.array([sum(len(a) for a in p) if isinstance(p, tuple) else len(p) for p in parts],
                               dtype=np.intp)
        stops = np.cumsum(self.counts)
        self._bounds = list(zip((stops - self.counts).tolist(), stops.tolist()))
        self.stack = np.concatenate(flat)

    def split(self, A: np.ndarray) -> list[np.ndarray]:
        return [A[a:b] for a, b in self._bounds]

    def per_row(self, values: Any) -> np.ndarray:
        return np.repeat(np.asarray(values, dtype=float), self.counts, axis=0)


def solve_stacked(solver: Callable[..., np.ndarray], *args: Any) -> list[np.ndarray | Exception]:
    """``solver`` batched over the leading axis of its array arguments (all of one length; non-arrays shared),
    one result per problem; if the batched call raises, each problem is solved alone so that an error stays with
    its split.  The solvers used here (``np.linalg``, ``ball_constrained_ridge``, ``trimmed_minimiser``,
    ``posterior_mean_fixed``) treat every problem on its own: the batched results equal the single ones."""
    try:
        W = solver(*args)
        return [W[j] for j in range(len(W))]
    except (ArithmeticError, ValueError, np.linalg.LinAlgError):   # a numerical failure of one problem: solved
        # one by one, so that the error stays with its split (the solvers draw nothing)
        n = next(len(a) for a in args if isinstance(a, np.ndarray))
        got: list[np.ndarray | Exception] = []
        for j in range(n):
            try:
                got.append(solver(*(a[j] if isinstance(a, np.ndarray) else a for a in args)))
            except Exception as exc:  # recorded per cell
                got.append(exc)
        return got


def repeat_trials(a: np.ndarray, trials: int, axis: int = 0) -> np.ndarray:
    """``a`` repeated along a new axis ``axis`` of length ``trials`` (a fresh array: for axis 0 the value of
    ``np.broadcast_to(a, (trials,) + a.shape).copy()``, at a fraction of its Python cost)."""
    if trials == 1 and axis == 0:   # the usual case: one copy with a new leading axis (half the Python cost)
        return a[None].copy()
    return a.reshape(a.shape[:axis] + (1,) + a.shape[axis:]).repeat(trials, axis=axis)


def fit_fixed_many(XX: np.ndarray, Xy: np.ndarray, lam: float, lam0: float, solver: str
                   ) -> list[tuple[np.ndarray, list[np.ndarray | Exception]]]:
    """``model.fixed_posterior``'s means of the splits (leading axis of XX (splits, trials, d, d)) in one call,
    as [(rows, weights)] (one group of all rows); a numerical failure is retried problem by problem
    (``solve_stacked``), so that the error stays with its split."""
    W = solve_stacked(lambda A, b: fixed_posterior(A, b, lam, lam0, solver)[0], XX, Xy)
    return [(np.arange(len(XX)), W)]


def record_each(ledgers: Iterable[Any], record: Callable[[Any], Any]) -> None:
    """``record(ledger)`` for every ledger — a call that records one fixed ``Spend`` and returns it, e.g.
    ``lambda lg: lg.public_only()`` — with the Spend the first call returns recorded as it is in the others: the same
    record (a frozen value), without building and validating it per cell.  A Spend tagged with a trial (a ledger
    inside ``for_trial``) is not shared: each ledger then makes its own."""
    spend = None
    for lg in ledgers:
        if spend is None or spend.trial is not None:
            spend = record(lg)
        else:
            lg.record(spend)
