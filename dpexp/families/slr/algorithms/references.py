"""Non-private references for simple linear regression (Alabi et al. 2020, Sec. 1 and 2.2).

* ``ols``: ordinary least squares, p̂(x) = α̂ x + β̂ with α̂ = ncov(x, y) / nvar(x), β̂ = ȳ - α̂ x̄ (Eq. 2).
* ``theil_sen``: the median of the predictions z_{j,l}(x_new) of the lines through all n(n-1)/2 pairs
  (Theil 1950; Sen 1968; the paper's Sec. 2.2 works with predictions rather than slopes).
* ``theil_sen_kmatch``: the same over k random matchings (Algorithm 2 without privacy; no edge twice).

All are deterministic given the data except ``theil_sen_kmatch`` (random matchings from the generator passed in).
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from dpexp.components import BatchedAlgorithm, Params, Reference
from dpexp.errors import UserError
from dpexp.families.slr.checks import inputs
from dpexp.families.slr.matchings import all_pair_estimates, line_estimates, matching_lines, n_rounds
from dpexp.families.slr.moments import split_moments
from dpexp.privacy.ledger import as_ledger
from dpexp.registry import register_algorithm
from dpexp.types import Output, Split


def ols_lines(x: list[np.ndarray], y: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(α̂, β̂) of OLS (Eq. 2: α̂ = ncov(x, y)/nvar(x), β̂ = ȳ − α̂ x̄) for each of S splits at once, (S,) each, from
    one pass over their flat rows (``moments.split_moments``: each split's floats as on it alone); NaN where
    nvar(x) = 0 or n < 2."""
    n, xm, ym, nvar, ncov = split_moments(x, y)
    ok = (n >= 2) & (nvar > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(ok, ncov / np.where(ok, nvar, 1.0), np.nan)
        return a, np.where(ok, ym - a * xm, np.nan)


class _Deterministic(Reference):
    """A reference that is a fixed function of the data: the same predictions in every trial."""

    family = "slr"

    def predict(self, x: np.ndarray, y: np.ndarray, xs: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def run(self, split: Split, epsilon: float, delta: float, ledger, trials: int = 1) -> Output:
        ledger = as_ledger(ledger)
        ledger.not_dp("non-private baseline")
        x, y, xs, _ = inputs(split, self.name)
        return Output(predictions=np.tile(self.predict(x, y, xs), (trials, 1)), guarantee=ledger.guarantee())


@register_algorithm
class OLS(Reference, BatchedAlgorithm):
    """Ordinary least squares predictions at X_test (Eq. 2 of Alabi et al.); NaN if nvar(x) = 0.  All splits of a
    call at once (``ols_lines``); ``run`` is a batch of one."""

    name = "ols"
    family = "slr"
    description = "non-private OLS predictions (p25, p75)"

    def run_many(self, splits: list[Split], epsilon: float, delta: float, ledgers: list, trials: int = 1
                 ) -> list[Output | Exception]:
        out: list[Output | Exception | None] = [None] * len(splits)
        good = []
        for i, (split, ledger) in enumerate(zip(splits, ledgers)):
            try:
                ledger = as_ledger(ledger)
                ledger.not_dp("non-private baseline")
                good.append((i, ledger) + inputs(split, self.name)[:3])
            except UserError as exc:  # a split that fails the checks: recorded per cell
                out[i] = exc
        if good:
            a, b = ols_lines([g[2] for g in good], [g[3] for g in good])
            for (i, ledger, _, _, xs), a_i, b_i in zip(good, a, b):
                out[i] = Output(predictions=np.tile(a_i * xs + b_i, (trials, 1)), guarantee=ledger.guarantee())
        return out


@register_algorithm
class TheilSen(_Deterministic):
    """Theil–Sen with all pairs: median over non-vertical pairs of the pairwise predictions (Sec. 2.2)."""

    name = "theil_sen"
    description = "non-private Theil-Sen over all pairs"

    def predict(self, x: np.ndarray, y: np.ndarray, xs: np.ndarray) -> np.ndarray:
        pred = np.empty(xs.size)
        for c, x0 in enumerate(xs):
            z = all_pair_estimates(x, y, float(x0))
            pred[c] = np.median(z) if z.size else np.nan
        return pred


class KMatchParams(Params):
    k: int = Field(10, ge=1, description="number of random matchings (capped at the n-1 or n available rounds)")


@register_algorithm
class TheilSenKMatch(Reference):
    """Theil–Sen over k random matchings of the points (Algorithm 2 with the exact median, no edge twice);
    each trial draws new matchings."""

    name = "theil_sen_kmatch"
    family = "slr"
    description = "non-private Theil-Sen over k random matchings"
    Params = KMatchParams

    def run(self, split: Split, epsilon: float, delta: float, ledger, trials: int = 1) -> Output:
        ledger = as_ledger(ledger)
        ledger.not_dp("non-private baseline")
        x, y, xs, _ = inputs(split, self.name)
        n = x.size
        if n < 2:
            return Output(predictions=np.full((trials, xs.size), np.nan), guarantee=ledger.guarantee())
        k = min(self.params.k, n_rounds(n))
        lines = matching_lines(x, y, k, ledger.noise.generator, trials)   # matchings: not privacy noise
        pred = np.empty((trials, xs.size))
        for c, x0 in enumerate(xs):   # slopes and midpoints once, evaluated at every x_new
            pred[:, c] = np.nanmedian(line_estimates(lines, float(x0)), axis=1) if lines[0].shape[1] else np.nan
        return Output(predictions=pred, guarantee=ledger.guarantee())
