"""Audit design of the simple-LR family (Alabi et al. 2020).  An algorithm points to it with
``audit = AuditPlan(design=unit_square)`` on its class."""

from __future__ import annotations

from dpexp.audit.neighbours import Design
from dpexp.audit.plan import AuditPlan
from dpexp.components import Algorithm


def unit_square(alg: Algorithm) -> Design:
    """x, y ∈ [0, 1] declared in ``meta['bounds_x'|'bounds_y']``, one feature, predictions at x = 0.25 and 0.75
    (the paper's p25/p75)."""
    return Design(x_lo=(0.0,), x_hi=(1.0,), y_lo=0.0, y_hi=1.0, n=20, X_test=((0.25,), (0.75,)),
                  meta={"bounds_x": (0.0, 1.0), "bounds_y": (0.0, 1.0)})


class NoisyStatsRelease:
    """Audit view of ``noisy_stats``: the raw release (noisy ncov, noisy nvar, noisy intercept; ⊥ trials NaN) as
    ``Output.coef``.  The two predictions are post-processing of these three numbers (α̃ = ncov/nvar folds two
    releases into one), so auditing the release sees the loss that the predictions hide."""

    def __init__(self, alg: Algorithm) -> None:
        self.alg = alg

    def run(self, split, epsilon, delta, ledger, trials=1):
        import numpy as np

        from dpexp.families.slr.algorithms.noisy_stats import noisy_stats_predict
        from dpexp.families.slr.checks import inputs
        from dpexp.privacy.ledger import as_ledger
        from dpexp.types import Output

        ledger = as_ledger(ledger)
        x, y, xs, eps = inputs(split, self.alg.name, epsilon, unit_box=True)
        rel: dict = {}
        pred, failed = noisy_stats_predict(x, y, xs, eps, ledger, trials, release=rel)
        coef = np.stack([rel["ncov"], rel["nvar"], np.where(failed, np.nan, rel["intercept"])], axis=1)
        return Output(predictions=pred, coef=coef, guarantee=ledger.guarantee())


def noisy_stats_view(alg: Algorithm) -> NoisyStatsRelease:
    return NoisyStatsRelease(alg)


class GradientTrace:
    """Audit view of DP gradient descent: the T released noisy gradient sums Δ_t as ``Output.coef``, each minus the
    clipped gradient of the rows D and D′ share (all but the last, where ``candidate_pairs`` puts the replaced row)
    at the iterate p_t — itself a function of Δ_0..Δ_{t−1}.  The shared rows are fixed for the pair, so this is a
    fixed function of the release (post-processing: the bound stays valid) that leaves the changed row's clipped
    gradient plus the step's noise; without it the shared rows' gradient, which varies with the noisy iterate,
    swamps the changed row's."""

    def __init__(self, alg: Algorithm) -> None:
        self.alg = alg

    def run(self, split, epsilon, delta, ledger, trials=1):
        import numpy as np

        from dpexp.families.slr.algorithms.dp_gd import clipped_gradient_sum

        trace: list = []
        out = self.alg.run(split, epsilon, delta, ledger, trials, trace=trace)
        p = self.alg.params
        x, y = np.asarray(split.X_private, float).ravel()[:-1], np.asarray(split.y_private, float)[:-1]
        it = np.tile(np.asarray((p.p25_init, p.p75_init), dtype=float), (trials, 1))
        acc = np.zeros(trials)
        cols = []
        for D in trace:            # replay the public update p_{t+1} = p_t + γ_t Δ_t
            cols.append(D - clipped_gradient_sum(it, x, y, p.tau))
            acc += np.sum(D * D, axis=1)
            gamma = np.where(acc > 0, 1.0 / np.sqrt(np.where(acc > 0, acc, 1.0)), 0.0)
            it = it + gamma[:, None] * D
        out.coef = np.concatenate(cols, axis=1)
        return out


def gradient_trace(alg: Algorithm) -> GradientTrace:
    return GradientTrace(alg)


#: DP-GD's plan.  The privacy loss of T steps at ε/T each concentrates far below ε for large T (the paper's T = 80
#: is audited at ε̂ ≈ 0 even with half the noise), so the audit runs T = 2 steps, where the loss per step is large;
#: τ = 0.02 keeps both clipped gradient coordinates of a corner row saturated (|2(y − ŷ)(x − 1/4)| ≥ τ), so
#: replacing (0, 0) by (0, 1) moves each step's gradient sum by the full L1 sensitivity 4τ.
GD_PLAN = AuditPlan(design=unit_square, params={"T": 2, "tau": 0.02}, view=gradient_trace)
