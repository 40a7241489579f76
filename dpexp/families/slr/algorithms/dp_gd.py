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

Batched over the splits of a chunk and their trials: state (runs, 2), each step one compiled pass (numba) over
each run's rows (``GradientBatch``), each run summed over its own split's rows.
"""

from __future__ import annotations

import functools
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


def _gradient_sums(x, y, starts, lengths, trials, p, tau, out):
    """Σ_i Δ_i of run r = split·trials + trial at its iterate p[r] into out[r] (``GradientBatch.gradient_sums``):
    one pass over the split's rows per run, the two clipped terms summed in row order.  Plain Python that
    ``_compiled`` compiles (numba) at the first pass."""
    for sp in range(starts.shape[0]):
        o, n = starts[sp], lengths[sp]
        for t in range(trials):
            r = sp * trials + t
            p25, p75 = p[r, 0], p[r, 1]
            s1, s2 = 0.0, 0.0
            for i in range(o, o + n):
                a, b = 0.75 - x[i], x[i] - 0.25
                res = 2.0 * (y[i] - 2.0 * (p25 * a + p75 * b))      # r = 2 (y - ŷ)
                g1, g2 = res * a, res * b
                s1 += tau if g1 > tau else (-tau if g1 < -tau else g1)   # [·]_{-τ}^{τ} (NaN stays NaN)
                s2 += tau if g2 > tau else (-tau if g2 < -tau else g2)
            out[r, 0], out[r, 1] = s1, s2
    return out


@functools.cache
def _compiled():
    """``_gradient_sums`` compiled by numba (cached on disk), made at the first pass: numba takes ≈ 0.5 s to import,
    which registering the SLR algorithms (every dpexp process) need not pay."""
    import numba

    return numba.njit(cache=True, error_model="numpy")(_gradient_sums)


class GradientBatch:
    """The rows of several splits, each run ``trials`` times: run r = split·trials + trial reads its split's segment
    ``[starts[s], starts[s] + lengths[s])`` of the flat arrays.

    A run's sums are over its own split's rows only (a compiled pass per run, ``_gradient_sums``), so
    they depend on its rows alone: a split gives the same bits alone (a batch of one) or batched with any others.  The rows are
    not repeated per trial: each run reads its split's rows, which stay in cache across its trials."""

    def __init__(self, xs: list[np.ndarray], ys: list[np.ndarray], trials: int) -> None:
        self.trials = int(trials)
        self.lengths = np.array([np.size(x) for x in xs], dtype=np.int64)
        self.starts = np.cumsum(self.lengths) - self.lengths
        self.runs = self.lengths.size * self.trials
        self.x = np.concatenate([np.asarray(x, dtype=float).ravel() for x in xs]) if xs else np.zeros(0)
        self.y = np.concatenate([np.asarray(y, dtype=float).ravel() for y in ys]) if ys else np.zeros(0)

    def gradient_sums(self, p: np.ndarray, tau: float) -> np.ndarray:
        """Σ_i Δ_i of every run at its iterate: p (runs, 2) -> (runs, 2).  Per entry
        ŷ = 2(p25 (3/4 - x) + p75 (x - 1/4)), r = 2(y - ŷ), Δ = ([r (3/4 - x)]_{-τ}^{τ}, [r (x - 1/4)]_{-τ}^{τ})."""
        p = np.ascontiguousarray(p, dtype=float)
        if p.shape != (self.runs, 2):
            raise ValueError(f"iterates must be (runs={self.runs}, 2), got {p.shape}")
        return _compiled()(self.x, self.y, self.starts, self.lengths, self.trials, p, float(tau),
                           np.empty((self.runs, 2)))


def clipped_gradient_sum(p: np.ndarray, x: np.ndarray, y: np.ndarray, tau: float) -> np.ndarray:
    """Σ_i Δ_i for every trial of one split: p (trials, 2) -> (trials, 2) (a ``GradientBatch`` of one split)."""
    return GradientBatch([x], [y], p.shape[0]).gradient_sums(p, tau)


def dp_gradient_descent_many(batch: GradientBatch, T: int, tau: float, noise: np.ndarray,
                             p0: tuple[float, float], trace: list | None = None) -> np.ndarray:
    """Algorithms 6/7 for every run of ``batch`` at once; ``noise`` (T, runs, 2) holds each step's released noise
    (drawn beforehand by the runs' own mechanisms: the noise does not depend on the iterates).  Returns the averaged
    (p25, p75), (runs, 2).  ``trace`` (a list, for the audit's view) receives every released noisy gradient sum
    Δ_t, (runs, 2) each."""
    runs = batch.runs
    p = np.tile(np.asarray(p0, dtype=float), (runs, 1))
    acc = np.zeros(runs)
    avg = np.zeros((runs, 2))
    start = T // 2
    for t in range(T):
        if t >= start:
            avg += p
        D = batch.gradient_sums(p, tau) + noise[t]
        if trace is not None:
            trace.append(D)
        acc += np.sum(D * D, axis=1)
        gamma = np.where(acc > 0, 1.0 / np.sqrt(np.where(acc > 0, acc, 1.0)), 0.0)
        p = p + gamma[:, None] * D
    return avg / (T - start)


def dp_gradient_descent(x: np.ndarray, y: np.ndarray, T: int, tau: float, noise, p0: tuple[float, float],
                        trials: int, trace: list | None = None) -> np.ndarray:
    """Algorithms 6/7 on one split; ``noise(shape)`` draws one step's noise, called T times in step order.  Returns
    averaged (p25, p75), (trials, 2) (``dp_gradient_descent_many`` on a batch of one)."""
    steps = np.stack([noise((trials, 2)) for _ in range(T)]) if T else np.zeros((0, trials, 2))
    return dp_gradient_descent_many(GradientBatch([x], [y], trials), T, tau, steps, p0, trace)


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
        """``shape -> noisy zeros`` (shape = trial axes + (2,)): one call of a mechanism of
        ``dpexp.privacy.mechanisms`` at one step's budget, recorded in ``ledger``."""
        raise NotImplementedError

    def step_noise(self, epsilon: float, delta: float, ledger: PrivacyLedger, trials: int) -> np.ndarray:
        """The noise of all T steps, (T, trials, 2): one mechanism call with the steps as leading trial axis (the
        numbers T calls of one step each draw, in step order: the noise does not depend on the iterates), and the
        step's spend recorded once per step — T releases at the step's budget, composed by the ledger as before."""
        T = self.params.T
        noise = self.noise_fn(epsilon, delta, ledger)((T, trials, 2))
        step = ledger.spends[-1]
        for _ in range(T - 1):
            ledger.record(step)
        return noise

    def guarantee(self, ledger: PrivacyLedger, delta: float) -> Guarantee:
        return ledger.guarantee()

    def run(self, split: Split, epsilon: float, delta: float, ledger, trials: int = 1,
            trace: list | None = None) -> Output:
        """One split (a batch of one of ``run_many``); ``trace`` (the audit's view, ``families/slr/audit.py``)
        receives the T released noisy gradient sums."""
        out = self._many([split], epsilon, delta, [ledger], trials, trace)[0]
        if isinstance(out, Exception):
            raise out
        return out

    def run_many(self, splits: list[Split], epsilon: float, delta: float, ledgers: list, trials: int = 1
                 ) -> list[Output | Exception]:
        """All splits of a chunk in one pass per step (``GradientBatch``).  Each split's T steps of noise are drawn
        first from its own ledger (``step_noise``: the draws and spends of a run alone, in the same order)."""
        return self._many(splits, epsilon, delta, ledgers, trials, None)

    def _many(self, splits, epsilon, delta, ledgers, trials, trace):
        p = self.params
        out: list[Output | Exception | None] = [None] * len(splits)
        good, data, noise = [], [], []
        for i, (split, ledger) in enumerate(zip(splits, ledgers)):
            try:
                ledger = as_ledger(ledger)
                x, y, xs, eps = inputs(split, self.name, epsilon, unit_box=True)
                noise.append(self.step_noise(eps, delta, ledger, trials))
                good.append((i, ledger, xs))
                data.append((x, y))
            except Exception as exc:  # recorded per cell
                out[i] = exc
        if good:
            batch = GradientBatch([d[0] for d in data], [d[1] for d in data], trials)
            P = dp_gradient_descent_many(batch, p.T, p.tau, np.concatenate(noise, axis=1),
                                         (p.p25_init, p.p75_init), trace)
            for j, (i, ledger, xs) in enumerate(good):
                Pj = P[j * trials:(j + 1) * trials]
                pred = Pj[:, :1] + (xs[None, :] - 0.25) * 2.0 * (Pj[:, 1:] - Pj[:, :1])
                try:
                    out[i] = Output(predictions=pred, guarantee=self.guarantee(ledger, delta))
                except Exception as exc:  # recorded per cell (e.g. its spend over the asked budget)
                    out[i] = exc
        return out


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
        return lambda shape: laplace(np.zeros(shape[-1]), sens, eps_t, ledger, size=shape[:-1], scale=b,
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
        return lambda shape: gaussian_zcdp(np.zeros(shape[-1]), sens, rho_t, ledger, size=shape[:-1], sigma=s,
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
