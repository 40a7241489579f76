"""DP Theil–Sen with k matchings (Alabi et al. 2020, Algorithm 2) and three DP medians.

Neighbouring relation: replace-one (bounded DP), n public.  The transformation T from the data to the multiset of
pairwise predictions z(x_new) is k-Lipschitz (Appendix D.1, Lemma 1): with k random matchings every point enters
k estimates; with all pairs ("k = n - 1") every point enters n - 1 estimates.  Vertical pairs are skipped
(Algorithm 2), so a changed point can also add or remove up to that many estimates; the medians below are
private for that relation too (see ``dp_median``).

Budget: the n_test predictions (p25 and p75) are released separately with ε / n_test each ("half their budget to
release p25 and half to release p75", Sec. 4).  Then
* ``dp_exp_theil_sen``: exponential-mechanism median with ε_med = (ε / n_test) / k (Lemma 2 and Lemma 4);
* ``dp_wide_theil_sen``: θ-widened exponential mechanism, same ε_med (Lemma 5, Algorithm 4);
* ``dp_ss_theil_sen``: smooth-sensitivity median with Student's t(d) noise at ε / n_test, k inside the smooth
  bound S^k of Lemma 7 (Lemma 8, Algorithm 5).
``k = "all"`` (default) uses all n(n-1)/2 pairs with k = n - 1; an integer k samples k matchings per trial (new
matchings each trial, as each trial is an independent run); k is capped at the number of rounds available.
All pairs: the estimates are computed and sorted once and all trials drawn from them at once.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
from pydantic import Field

from dpexp.audit.plan import AuditPlan
from dpexp.components import Algorithm
from dpexp.families.slr.audit import theil_sen_atom, theil_sen_pivot
from dpexp.families.slr.checks import KType, RangeParams, inputs, warn_outside_range
from dpexp.families.slr.dp_median import exp_median, exp_median_rows, ss_median, ss_median_rows
from dpexp.families.slr.matchings import all_pair_estimates, line_estimates, matching_lines, n_rounds
from dpexp.privacy.ledger import PrivacyLedger, as_ledger
from dpexp.registry import register_algorithm
from dpexp.types import Output, Split


class TSParams(RangeParams):
    k: KType = Field("all", description='number of matchings, or "all" for all pairs (k = n - 1)')


class WideParams(TSParams):
    theta: float = Field(0.01, gt=0, description="widening θ of the exponential-mechanism median (Table 1)")


class SSParams(TSParams):
    d: float = Field(3.0, gt=0, description="degrees of freedom of the Student's t noise (Table 1)")
    beta: float = Field(0.5, gt=0, lt=1, description="smoothing split β: t = β ε/(d+1) (Appendix E.1)")


def resolve_k(k: int | str, n: int) -> tuple[bool, int]:
    """(use all pairs?, Lipschitz constant): all pairs -> n - 1; k matchings -> min(k, rounds)."""
    if n < 2:
        return True, 1
    R = n_rounds(n)
    if k == "all" or (int(k) >= R):
        return True, n - 1
    return False, int(k)


class _DPTheilSen(Algorithm):
    audit = AuditPlan(design=theil_sen_atom)
    neighbouring = "replace-one"
    guarantee_text = "pure ε-DP, replace-one (n public; ε/n_test per prediction, k inside the median's budget)"
    Params = TSParams

    def _median_all(self, z: np.ndarray, eps_pt: float, c: int, ledger: PrivacyLedger,
                    trials: int) -> np.ndarray:
        raise NotImplementedError

    def _median_rows(self, Z: np.ndarray, eps_pt: float, c: int, ledger: PrivacyLedger) -> np.ndarray:
        raise NotImplementedError

    def estimates(self, x: np.ndarray, y: np.ndarray, xs: np.ndarray, rng: np.random.Generator,
                  trials: int) -> Iterator[tuple[int, np.ndarray, bool, int]]:
        """Yield (column, estimates, all_pairs, k) per x_new; estimates 1-D (all pairs) or (trials, P).  ``rng``
        draws the matchings (not privacy noise: DP holds for any matching): ``ledger.noise.generator``."""
        n = x.size
        all_pairs, c = resolve_k(self.params.k, n)
        if all_pairs:
            for col, x0 in enumerate(xs):
                yield col, all_pair_estimates(x, y, float(x0)), True, c
        else:
            lines = matching_lines(x, y, c, rng, trials)   # slopes and midpoints once
            for col, x0 in enumerate(xs):
                yield col, line_estimates(lines, float(x0)), False, c

    def run(self, split: Split, epsilon: float, delta: float, ledger, trials: int = 1) -> Output:
        ledger = as_ledger(ledger)
        x, y, xs, eps = inputs(split, self.name, epsilon)
        eps_pt = eps / xs.size
        pred = np.empty((trials, xs.size))
        for col, z, all_pairs, c in self.estimates(x, y, xs, ledger.noise.generator, trials):
            warn_outside_range(self.name, z, self.params.r_l, self.params.r_u, float(xs[col]))
            if all_pairs:
                pred[:, col] = self._median_all(z, eps_pt, c, ledger, trials)
            else:
                pred[:, col] = self._median_rows(z, eps_pt, c, ledger)
            del z
        return Output(predictions=pred, guarantee=ledger.guarantee())


@register_algorithm
class DPExpTheilSen(_DPTheilSen):
    """DPExpTheilSen(kMatch) — Algorithm 2 with the exponential-mechanism median (Algorithm 3) at ε/(n_test·k);
    ε-DP under replace-one (Lemmas 2 and 4).  Sampling: Gumbel-max over the intervals between sorted estimates."""

    name = "dp_exp_theil_sen"
    family = "slr"
    description = "DP Theil-Sen, exponential-mechanism median (Alg. 2+3), eps-DP"

    def widening(self) -> float:
        """θ of the median's utility (0: the plain exponential mechanism)."""
        return 0.0

    def _median_all(self, z, eps_pt, c, ledger, trials):
        p = self.params
        return exp_median(z, eps_pt / c, p.r_l, p.r_u, ledger, size=trials, theta=self.widening(), overwrite=True,
                          k=c)

    def _median_rows(self, Z, eps_pt, c, ledger):
        return exp_median_rows(Z, eps_pt / c, self.params.r_l, self.params.r_u, ledger, theta=self.widening(), k=c)


@register_algorithm
class DPWideTheilSen(DPExpTheilSen):
    """DPWideTheilSen(kMatch) — Algorithm 2 with the θ-widened exponential-mechanism median (Algorithm 4) at
    ε/(n_test·k); ε-DP under replace-one (Lemmas 2 and 5)."""

    name = "dp_wide_theil_sen"
    family = "slr"
    description = "DP Theil-Sen, theta-widened exponential-mechanism median (Alg. 2+4), eps-DP"
    Params = WideParams

    def widening(self) -> float:
        return float(self.params.theta)


@register_algorithm
class DPSSTheilSen(_DPTheilSen):
    """DPSSTheilSen(kMatch) — Algorithm 2 with the smooth-sensitivity median and Student's t(d) noise
    (Lemma 7, Algorithm 5) at ε/n_test per prediction; ε-DP under replace-one (Lemma 8).  An empty estimate
    set (all pairs vertical) is released like any other: median r_l (padding) with the full-span sensitivity."""

    name = "dp_ss_theil_sen"
    family = "slr"
    description = "DP Theil-Sen, smooth-sensitivity median with Student's t noise (Alg. 2+5), eps-DP"
    Params = SSParams
    audit = AuditPlan(design=theil_sen_pivot, params={"beta": 0.05})

    def _median_all(self, z, eps_pt, c, ledger, trials):
        p = self.params
        z.sort()
        return ss_median(z, eps_pt, c, p.r_l, p.r_u, ledger, size=trials, d=p.d, beta=p.beta)

    def _median_rows(self, Z, eps_pt, c, ledger):
        p = self.params
        return ss_median_rows(Z, eps_pt, c, p.r_l, p.r_u, ledger, d=p.d, beta=p.beta)
