"""Audit designs of the simple-LR family (Alabi et al. 2020).  An algorithm points to one with
``audit = AuditPlan(design=...)`` on its class: ``unit_square`` (NoisyStats), ``theil_sen_atom`` (the
exponential-mechanism Theil–Sen medians), ``theil_sen_pivot`` (the smooth-sensitivity one), ``gd_opposite_gradients``
(DP gradient descent, ``GD_PLAN``)."""

from __future__ import annotations

import dataclasses

from dpexp.audit.neighbours import Design
from dpexp.audit.plan import AuditPlan
from dpexp.components import Algorithm


def unit_square(alg: Algorithm) -> Design:
    """x, y ∈ [0, 1] declared in ``meta['bounds_x'|'bounds_y']``, one feature, predictions at x = 0.25 and 0.75
    (the paper's p25/p75)."""
    return Design(x_lo=(0.0,), x_hi=(1.0,), y_lo=0.0, y_hi=1.0, n=20, X_test=((0.25,), (0.75,)),
                  meta={"bounds_x": (0.0, 1.0), "bounds_y": (0.0, 1.0)})


def theil_sen_atom(alg: Algorithm) -> Design:
    """Design of the exponential-mechanism Theil–Sen medians (``dp_exp_theil_sen``, ``dp_wide_theil_sen``): all
    pairs of n = 4 rows, one prediction at x₀ = 1/4, the default output range [r_l, r_u] = [−1/2, 3/2].

    The three shared rows lie on the line y = A + (x − x₀) with A = r_l + 1/5 = −0.3, at x = 0.9, 0.95, 1 (y = 0.35,
    0.4, 0.45), so their three pairs all predict A at x₀.  The changed row sits at x = 0.85, just left of them: its
    line through shared row i predicts A + δ(x_i − x₀)/(x_i − 0.85) at x₀, δ its offset from the shared line, an
    amplification of 5 to 13; with y = 0 (D, δ = −0.3) all k = n − 1 = 3 of its estimates are below r_l and clip
    to r_l, with y = 1 (D′, δ = 0.7) all are above r_u and clip to r_u.  So D's estimates are {r_l × 3, A × 3} and
    D′'s {A × 3, r_u × 3}: the changed row moves all k of its estimates across the atom at A (the full rank shift
    the median is calibrated for, Lemma 2), and the mechanism favours [r_l, A] (length 1/5) on D but [A, r_u]
    (length 9/5) on D′, so its normaliser moves against the event too.  With w = e^{ε_med k/2} = e^{ε/2}:
    P_D[r_l, A] / P_D′[r_l, A] = w(0.2 + 1.8w)/(0.2w + 1.8) — e^{0.90} for the correct median at ε = 1 (below the
    claim, as it must be), e^{1.78} when it is sampled at 2ε_med (exact computation, docs/audit.md).  One test
    point spends the whole ε on one median."""
    A, x0, xc = -0.3, 0.25, 0.85
    base = tuple((x, A + (x - x0)) for x in (0.9, 0.95, 1.0))
    return Design(x_lo=(0.0,), x_hi=(1.0,), y_lo=0.0, y_hi=1.0, n=4, X_test=((x0,),),
                  meta={"bounds_x": (0.0, 1.0), "bounds_y": (0.0, 1.0)}, bases=("explicit",), explicit_base=base,
                  extra_pairs=(((xc, 0.0), (xc, 1.0)),), max_pairs=0)


def theil_sen_pivot(alg: Algorithm) -> Design:
    """Design of the smooth-sensitivity Theil–Sen median (``dp_ss_theil_sen``): all pairs of n = 200 rows, one
    prediction at x₀ = 1/4 (n = 200 so that the k-forgotten bug, k = n − 1, shows as well).

    The 199 shared rows all sit at (0, 1/2), so their pairs are vertical and give no estimate (Algorithm 2); the
    changed row at x = 1/8 gives 199 estimates 1/2 + (y − 1/2)·(x₀/(1/8)) = 1/2 ± 1/2·2: all r_l = −1/2 on D
    (y = 0) and all r_u = 3/2 on D′ (y = 1).  The median jumps by the whole span and, with the padding of Lemma 7,
    both smooth bounds are the span too: the release is a pure shift of the t noise by exactly s noise scales,
    the configuration in which the Student-t mechanism realises its shift budget (docs/audit.md)."""
    n = 200
    base = tuple((0.0, 0.5) for _ in range(n - 1))
    return Design(x_lo=(0.0,), x_hi=(1.0,), y_lo=0.0, y_hi=1.0, n=n, X_test=((0.25,),),
                  meta={"bounds_x": (0.0, 1.0), "bounds_y": (0.0, 1.0)}, bases=("explicit",), explicit_base=base,
                  extra_pairs=(((0.125, 0.0), (0.125, 1.0)),), max_pairs=0)


class NoisyStatsRelease:
    """Audit view of ``noisy_stats``: the raw release (noisy ncov, noisy nvar, noisy intercept; ⊥ trials NaN) as
    ``Output.coef``.  The two predictions are post-processing of these three numbers (α̃ = ncov/nvar folds two
    releases into one), so auditing the release sees the loss that the predictions hide."""

    def __init__(self, alg: Algorithm) -> None:
        self.alg = alg

    def run(self, split, epsilon, delta, ledger, trials=1):
        import numpy as np

        from dpexp.audit.instrument import helper
        from dpexp.families.slr.checks import inputs
        from dpexp.privacy.ledger import as_ledger
        from dpexp.types import Output

        ledger = as_ledger(ledger)
        x, y, xs, eps = inputs(split, self.alg.name, epsilon, unit_box=True)
        rel: dict = {}
        pred, failed = helper(self.alg, "noisy_stats_predict")(x, y, xs, eps, ledger, trials, release=rel)
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

        from dpexp.audit.instrument import helper

        clipped_gradient_sum = helper(self.alg, "clipped_gradient_sum")

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


def gd_opposite_gradients(alg: Algorithm) -> Design:
    """DP-GD's design: a changed row whose clipped gradient is opposite on D and D′ at every step.

    The changed row sits at x = 1/2 (both gradient coordinates 2(y − ŷ)(3/4 − x), 2(y − ŷ)(x − 1/4) carry the same
    sign (y − ŷ)) with y = 1 on D and y = 0 on D′: while the line's value ŷ(1/2) = (p25 + p75)/2 stays in
    (2τ, 1 − 2τ), its clipped gradient is (+τ, +τ) on D and (−τ, −τ) on D′ — a difference of the full L1 sensitivity
    4τ (L2 2√2τ) at every step.  It starts at ŷ(1/2) = 1/2 (p⁰ = (1/2, 1/2)); the 39 shared rows, (0, 1) and (1, 0)
    alternately, push the iterate along (1, −1), which leaves ŷ(1/2) unchanged, so only the noise moves it (by
    ≈ 0.1 in standard deviation at step 1 of T = 2).  With the view's shared gradients subtracted, each step's
    release is ±(τ, τ) plus the step's noise: the privacy loss of the design is the claimed one (Laplace: ε; Gaussian:
    the Gaussian mechanism of ρ) whenever the iterate stays in that band."""
    base = tuple(((0.0, 1.0) if i % 2 == 0 else (1.0, 0.0)) for i in range(39))
    return Design(x_lo=(0.0,), x_hi=(1.0,), y_lo=0.0, y_hi=1.0, n=40, X_test=((0.25,), (0.75,)),
                  meta={"bounds_x": (0.0, 1.0), "bounds_y": (0.0, 1.0)}, bases=("explicit",), explicit_base=base,
                  extra_pairs=(((0.5, 1.0), (0.5, 0.0)),), max_pairs=1)


#: DP-GD's plan.  The privacy loss of T steps at ε/T each concentrates far below ε for large T (the paper's T = 80
#: is audited at ε̂ ≈ 0 even with half the noise), so the audit runs T = 2 steps, where the loss per step is large;
#: τ = 0.02 keeps the changed row's clipped gradient saturated (|2(y − ŷ)/4| ≥ τ) on the design above.  ρ claims
#: (dpgd_zcdp; dpgd_approx's (ε, δ) is converted from ρ) are audited as ρ at δ = 0.05, where the conversion ρ → ε is
#: small enough for an experiment to see (docs/audit.md).
GD_PLAN = AuditPlan(design=gd_opposite_gradients, params={"T": 2, "tau": 0.02}, view=gradient_trace, rho_delta=0.05)
#: dpgd_approx's plan: at ε = 1, δ = 2⁻³⁰ its ρ ≈ 0.013 (a Gaussian of μ = sqrt(2ρ) ≈ 0.16 over all steps) leaves
#: every event within ≈ 0.06 of its twin, too close for 10⁵ runs at any δ; at ε = 4 (ρ ≈ 0.18, μ ≈ 0.6) a halved
#: noise is a clear violation of the ρ claim at δ = 0.05 (ε 0.96 claimed, 2.06 realised).
GD_APPROX_PLAN = dataclasses.replace(GD_PLAN, epsilon=4.0)
