"""DP gradient descent for (p25, p75) (Alabi et al. 2020, Sec. 2.3, Appendix F, Algorithms 6 and 7).

Parametrisation: the line through (1/4, p25) and (3/4, p75): ŷ(x) = 2(p25 (3/4 - x) + p75 (x - 1/4)).
Per point and step, Δ_i = ([2(y_i - ŷ_i)(3/4 - x_i)]_{-τ}^{τ}, [2(y_i - ŷ_i)(x_i - 1/4)]_{-τ}^{τ}) is (up to the
constant 2) the clipped *negative* gradient of (y_i - ŷ(x_i))^2 w.r.t. (p25, p75).  Δ_t = Σ_i Δ_i + noise,
γ_t = 1 / sqrt(Σ_{l<=t} ||Δ_l||²) (AdaGrad-style), and p^{t+1} = p^t + γ_t Δ_t.  (The paper's pseudo-code prints
"- γ_t Δ_t"; with Δ defined as the negative gradient that would ascend the loss, so we step along +Δ.)
Output: the mean of the iterates p^t, t = T/2 .. T-1, then the line evaluated at X_test.

Neighbouring relation: replace-one (bounded DP), n public, data in [0, 1]^2.  Replacing one point changes each
clipped coordinate of Σ_i Δ_i by at most 2τ: L1 sensitivity 4τ, L2 sensitivity 2√2 τ (Appendix F).
* ``dpgd_pure``: Lap(4τ/ε_t) per coordinate with ε_t = ε/T: ε-DP by basic composition (Alg. 6, Lemma 3).
* ``dpgd_zcdp``: N(0, (2τ/sqrt(ρ_t))²) per coordinate with ρ_t = ρ/T is ρ_t-zCDP (Bun & Steinke 2016, Prop. 1.6:
  σ = Δ2/sqrt(2ρ_t)); T steps compose to ρ (Alg. 7, Lemma 1).  ρ = ε²/2 (the paper's DPGDzCDP).
* ``dpgd_approx``: Alg. 7 with the largest ρ whose (ε, δ)-DP conversion is <= ε, δ = 2^-30 by default (Appendix F,
  Lemma 2: ε = ρ + sqrt(4ρ log(sqrt(πρ)/δ)), Bun & Steinke 2016 Lemma 3.6; we take the smaller of that and
  Prop. 1.3's ρ + 2 sqrt(ρ log(1/δ)), both valid, and solve by bisection).

Vectorised over trials: state (trials, 2), each step one (trials, n) pass.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import Field

from dpexp.audit.plan import AuditPlan
from dpexp.components import Algorithm, Params
from dpexp.errors import UserError
from dpexp.families.slr.audit import GD_APPROX_PLAN, GD_PLAN
from dpexp.families.slr.checks import inputs
from dpexp.privacy.accounting import approx_dp_to_zcdp_best, zcdp_to_approx_dp_best
from dpexp.privacy.guarantee import Guarantee
from dpexp.privacy.ledger import PrivacyLedger, as_ledger
from dpexp.privacy.mechanisms import gaussian_zcdp, laplace
from dpexp.registry import register_algorithm
from dpexp.types import Output, Split


class GDParams(Params):
    T: int = Field(80, ge=2, description="number of noisy gradient steps (Table 1)")
    tau: float = Field(1.0, gt=0, description="per-coordinate gradient clip τ (Table 1)")
    p25_init: float = Field(0.5, description="starting value of p25 (our choice; the paper does not state it)")
    p75_init: float = Field(0.5, description="starting value of p75 (our choice; the paper does not state it)")


class GDApproxParams(GDParams):
    delta: float = Field(2.0 ** -30, gt=0, lt=1, description="δ of (ε, δ)-DP when the cell's delta is 0")


def clipped_gradient_sum(p: np.ndarray, x: np.ndarray, y: np.ndarray, tau: float) -> np.ndarray:
    """Σ_i Δ_i for every trial: p (trials, 2) -> (trials, 2)."""
    a = 0.75 - x
    b = x - 0.25
    yhat = 2.0 * (p[:, :1] * a[None, :] + p[:, 1:] * b[None, :])
    r2 = 2.0 * (y[None, :] - yhat)
    g1 = np.clip(r2 * a[None, :], -tau, tau).sum(axis=1)
    g2 = np.clip(r2 * b[None, :], -tau, tau).sum(axis=1)
    return np.stack([g1, g2], axis=1)


def dp_gradient_descent(x: np.ndarray, y: np.ndarray, T: int, tau: float, noise, p0: tuple[float, float],
                        trials: int, trace: list | None = None) -> np.ndarray:
    """Algorithms 6/7; ``noise(shape)`` draws the per-step noise.  Returns averaged (p25, p75), (trials, 2).
    ``trace`` (a list, for the audit's view) receives every released noisy gradient sum Δ_t, (trials, 2) each."""
    p = np.tile(np.asarray(p0, dtype=float), (trials, 1))
    acc = np.zeros(trials)
    avg = np.zeros((trials, 2))
    start = T // 2
    for t in range(T):
        if t >= start:
            avg += p
        D = clipped_gradient_sum(p, x, y, tau) + noise((trials, 2))
        if trace is not None:
            trace.append(D)
        acc += np.sum(D * D, axis=1)
        gamma = np.where(acc > 0, 1.0 / np.sqrt(np.where(acc > 0, acc, 1.0)), 0.0)
        p = p + gamma[:, None] * D
    return avg / (T - start)


def approx_eps_of_rho(rho: float, delta: float) -> float:
    """ε such that ρ-zCDP implies (ε, δ)-DP: min of Bun & Steinke 2016 Prop. 1.3 and Lemma 3.6 (Appendix F);
    ``dpexp.privacy.accounting.zcdp_to_approx_dp_best``."""
    return zcdp_to_approx_dp_best(rho, delta)


def rho_for_approx(epsilon: float, delta: float) -> float:
    """Largest ρ with approx_eps_of_rho(ρ, δ) <= ε (bisection to relative 1e-12);
    ``dpexp.privacy.accounting.approx_dp_to_zcdp_best``."""
    return approx_dp_to_zcdp_best(epsilon, delta)


class _DPGD(Algorithm):
    # audited on its released noisy gradients at T = 2, τ = 0.02 (families/slr/audit.py: GD_PLAN)
    audit = GD_PLAN
    neighbouring = "replace-one"
    Params = GDParams

    def noise_fn(self, epsilon: float, delta: float, ledger: PrivacyLedger):
        """``shape -> noisy zeros`` of one step: a mechanism of ``dpexp.privacy.mechanisms`` recorded in ``ledger``
        (T steps, T spends, composed by the ledger)."""
        raise NotImplementedError

    def guarantee(self, ledger: PrivacyLedger, delta: float) -> Guarantee:
        return ledger.guarantee()

    def run(self, split: Split, epsilon: float, delta: float, ledger, trials: int = 1,
            trace: list | None = None) -> Output:
        """``trace`` (the audit's view, ``families/slr/audit.py``) receives the T released noisy gradient sums."""
        ledger = as_ledger(ledger)
        x, y, xs, eps = inputs(split, self.name, epsilon, unit_box=True)
        p = self.params
        P = dp_gradient_descent(x, y, p.T, p.tau, self.noise_fn(eps, delta, ledger), (p.p25_init, p.p75_init),
                                trials, trace)
        pred = P[:, :1] + (xs[None, :] - 0.25) * 2.0 * (P[:, 1:] - P[:, :1])
        return Output(predictions=pred, guarantee=self.guarantee(ledger, delta))


@register_algorithm
class DPGDPure(_DPGD):
    """DPGDPure (Algorithm 6): clipped gradient sums + Lap(4τ T/ε) per coordinate and step (L1 sensitivity 4τ
    under replace-one; ε/T per step); ε-DP."""

    name = "dpgd_pure"
    family = "slr"
    description = "DP gradient descent with Laplace noise (Alg. 6), eps-DP"
    guarantee_text = "pure ε-DP, replace-one (T Laplace steps at ε/T, basic composition)"

    def laplace_scale(self, epsilon: float) -> float:
        return 4.0 * self.params.tau / (epsilon / self.params.T)

    def noise_fn(self, epsilon, delta, ledger):
        b, eps_t, sens = self.laplace_scale(epsilon), epsilon / self.params.T, 4.0 * self.params.tau
        return lambda shape: laplace(np.zeros(shape[1:]), sens, eps_t, ledger, size=shape[0], scale=b,
                                     label="gradient step")


@register_algorithm
class DPGDzCDP(_DPGD):
    """DPGDzCDP (Algorithm 7 with ρ = ε²/2): N(0, (2τ/sqrt(ρ/T))²) per coordinate and step (L2 sensitivity
    2√2τ under replace-one); ρ-zCDP (not pure ε-DP)."""

    name = "dpgd_zcdp"
    family = "slr"
    description = "DP gradient descent with Gaussian noise (Alg. 7), (eps^2/2)-zCDP"
    guarantee_text = "ρ-zCDP with ρ = ε²/2, replace-one (T Gaussian steps at ρ/T)"

    def rho(self, epsilon: float) -> float:
        return 0.5 * epsilon * epsilon

    def rho_total(self, epsilon: float, delta: float) -> float:
        return self.rho(epsilon)

    def sigma(self, epsilon: float, delta: float) -> float:
        return 2.0 * self.params.tau / math.sqrt(self.rho_total(epsilon, delta) / self.params.T)

    def noise_fn(self, epsilon, delta, ledger):
        s, T = self.sigma(epsilon, delta), self.params.T
        rho_t, sens = self.rho_total(epsilon, delta) / T, 2.0 * math.sqrt(2.0) * self.params.tau
        return lambda shape: gaussian_zcdp(np.zeros(shape[1:]), sens, rho_t, ledger, size=shape[0], sigma=s,
                                           label="gradient step")


@register_algorithm
class DPGDApprox(DPGDzCDP):
    """DPGDApprox (Algorithm 7 at the largest ρ that is (ε, δ)-DP, δ = 2^-30 unless the cell gives δ > 0;
    Appendix F Lemma 2)."""

    name = "dpgd_approx"
    family = "slr"
    description = "DP gradient descent with Gaussian noise (Alg. 7), (eps, delta)-DP via zCDP, delta=2^-30"
    guarantee_text = "(ε, δ)-DP via ρ-zCDP, replace-one (δ = 2⁻³⁰ when the cell's δ is 0)"
    Params = GDApproxParams
    # audited at ε = 4: at ε = 1 and δ = 2⁻³⁰ its ρ ≈ 0.013 is too small for 10⁵ runs to see (families/slr/audit.py)
    audit = GD_APPROX_PLAN

    def used_delta(self, delta: float) -> float:
        d = float(delta) if delta and delta > 0 else self.params.delta
        if not 0 < d < 1:
            raise UserError(f"{self.name}: delta must be in (0, 1), got {d}")
        return d

    def rho_for(self, epsilon: float, delta: float) -> float:
        return rho_for_approx(epsilon, self.used_delta(delta))

    def rho_total(self, epsilon: float, delta: float) -> float:
        return self.rho_for(epsilon, delta)

    def guarantee(self, ledger: PrivacyLedger, delta: float) -> Guarantee:
        """The T zCDP steps' total ρ converted to (ε, δ) at the δ used (Appendix F Lemma 2 / Prop. 1.3)."""
        return ledger.guarantee(approx_delta=self.used_delta(delta))
