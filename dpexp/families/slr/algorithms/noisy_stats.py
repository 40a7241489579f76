"""NoisyStats (Algorithm 1) and NoisyIntercept (Sec. 2.4) of Alabi et al. (2020).

Neighbouring relation: replace-one (bounded DP); n is public; every (x_i, y_i) lies in [0, 1]^2.

NoisyStats sensitivities (Appendix C.1, Lemma 1): ncov(x, y) = Σ(x_i - x̄)(y_i - ȳ) and nvar(x) = Σ(x_i - x̄)^2
both have global sensitivity Δ = 1 - 1/n under replace-one.  Budget: three equal parts ε/3:
L1, L2 ~ Lap(3Δ/ε) make the noisy ncov and nvar ε/3-DP each; α̃ = (ncov + L1)/(nvar + L2) is post-processing
(the test nvar + L2 > 0 too).  The intercept y̅ - α̃ x̄ then has sensitivity Δ3 = (1 + |α̃|)/n given the released α̃
(means move by at most 1/n), so L3 ~ Lap(3Δ3/ε) makes β̃ ε/3-DP.  Total ε (basic composition).  If nvar + L2 <= 0
the algorithm returns ⊥: that trial's row is NaN (a failure, never a number).

NoisyIntercept: ȳ has sensitivity 1/n (replace-one), released as ỹ = ȳ + Lap(1/(ε n)) for every x_new.
"""

from __future__ import annotations

import numpy as np

from dpexp.audit.plan import AuditPlan
from dpexp.components import Algorithm
from dpexp.families.slr.audit import noisy_stats_view, unit_square
from dpexp.families.slr.checks import inputs
from dpexp.privacy.ledger import as_ledger
from dpexp.privacy.mechanisms import laplace
from dpexp.registry import register_algorithm
from dpexp.types import Output, Split


def noisy_stats_scales(n: int, epsilon: float) -> tuple[float, float]:
    """Laplace scales (b for L1, b for L2) = 3(1 - 1/n)/ε of Algorithm 1."""
    d = 1.0 - 1.0 / n
    return 3.0 * d / epsilon, 3.0 * d / epsilon


def noisy_stats_predict(x: np.ndarray, y: np.ndarray, xs: np.ndarray, epsilon: float, ledger,
                        trials: int, release: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised Algorithm 1 for ``trials`` runs: (predictions (trials, len(xs)), failed (trials,)).

    Three Laplace mechanisms (``dpexp.privacy.mechanisms.laplace``, recorded in ``ledger``) at ε/3 each: ncov and
    nvar (Δ = 1 − 1/n), then the intercept given α̃ (Δ3 = (1 + |α̃|)/n per trial).  Draw order and arithmetic as
    the pre-ledger code (byte-identical results).  ``release`` (a dict, for the audit's view) receives the three
    noisy releases (ncov, nvar, intercept) before post-processing."""
    n = x.size
    b1, b2 = noisy_stats_scales(n, epsilon)
    xm, ym = x.mean(), y.mean()
    nvar = float(np.sum((x - xm) ** 2))
    ncov = float(np.sum((x - xm) * (y - ym)))
    sens = 1.0 - 1.0 / n
    ncov_t = laplace(ncov, sens, epsilon / 3.0, ledger, size=trials, scale=b1, label="ncov")
    den = laplace(nvar, sens, epsilon / 3.0, ledger, size=trials, scale=b2, label="nvar")
    ok = den > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = np.where(ok, ncov_t / np.where(ok, den, 1.0), np.nan)
    d3 = (1.0 + np.abs(alpha)) / n        # NaN for a failed trial (⊥: nothing more is released there)
    beta = (ym - alpha * xm) + laplace(0.0, d3, epsilon / 3.0, ledger, size=trials, scale=3.0 * d3 / epsilon,
                                       label="intercept")
    pred = alpha[:, None] * xs[None, :] + beta[:, None]
    pred[~ok] = np.nan
    if release is not None:
        release.update(ncov=ncov_t, nvar=den, intercept=beta)
    return pred, ~ok


class _NoisyStatistic(Algorithm):
    """A Laplace-noised statistic of data in [0, 1]^2 (replace-one, n public): pure ε-DP, δ = 0."""

    family = "slr"
    neighbouring = "replace-one"
    audit = AuditPlan(design=unit_square)
    guarantee_text = "pure ε-DP, replace-one (n public, data in [0, 1]²; one run covers every x_new)"


@register_algorithm
class NoisyStats(_NoisyStatistic):
    """NoisyStats, Algorithm 1 of Alabi et al. (2020): Laplace noise on ncov(x, y) and nvar(x) (Δ = 1 - 1/n each,
    Appendix C.1 Lemma 1, scale 3Δ/ε), then on the intercept (Δ3 = (1 + |α̃|)/n, scale 3Δ3/ε); ε/3 each, ε-DP
    under replace-one with public n and data in [0, 1]^2.  A trial with nvar + L2 <= 0 fails (NaN row)."""

    name = "noisy_stats"
    audit = AuditPlan(design=unit_square, view=noisy_stats_view)   # audits the three noisy releases themselves
    description = "NoisyStats (Alg. 1): Laplace-perturbed OLS sufficient statistics, eps-DP; may fail"

    def run(self, split: Split, epsilon: float, delta: float, ledger, trials: int = 1) -> Output:
        ledger = as_ledger(ledger)
        x, y, xs, eps = inputs(split, self.name, epsilon, unit_box=True)
        if x.size < 2:   # n is public: ⊥ without looking at the data
            ledger.public_only()
            return Output(predictions=np.full((trials, xs.size), np.nan), guarantee=ledger.guarantee())
        pred, failed = noisy_stats_predict(x, y, xs, eps, ledger, trials)
        return Output(predictions=pred, extras={"noisy_stats_failures": float(failed.sum())},
                      guarantee=ledger.guarantee())


@register_algorithm
class NoisyIntercept(_NoisyStatistic):
    """NoisyIntercept (Sec. 2.4): ȳ + Lap(1/(ε n)) for every x_new; ȳ has replace-one sensitivity 1/n for
    y in [0, 1], so it is ε-DP (one release serves all x_new)."""

    name = "noisy_intercept"
    description = "NoisyIntercept (Sec. 2.4): Laplace-noised mean of y, eps-DP"

    def run(self, split: Split, epsilon: float, delta: float, ledger, trials: int = 1) -> Output:
        ledger = as_ledger(ledger)
        x, y, xs, eps = inputs(split, self.name, epsilon, unit_box=True)
        n = y.size
        if n == 0:
            ledger.public_only()
            return Output(predictions=np.full((trials, xs.size), np.nan), guarantee=ledger.guarantee())
        yt = laplace(y.mean(), 1.0 / n, eps, ledger, size=trials, scale=1.0 / (eps * n), label="mean y")
        return Output(predictions=np.tile(yt[:, None], (1, xs.size)), guarantee=ledger.guarantee())
