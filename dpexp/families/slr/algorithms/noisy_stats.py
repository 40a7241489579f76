"""NoisyStats (Algorithm 1) and NoisyIntercept (Sec. 2.4) of Alabi et al. (2020).

Neighbouring relation: replace-one (bounded DP); n is public; every (x_i, y_i) lies in [0, 1]^2.

NoisyStats sensitivities (Appendix C.1, Lemma 1): ncov(x, y) = Σ(x_i - x̄)(y_i - ȳ) and nvar(x) = Σ(x_i - x̄)^2
both have global sensitivity Δ = 1 - 1/n under replace-one.  Budget: three equal parts ε/3:
L1, L2 ~ Lap(3Δ/ε) make the noisy ncov and nvar ε/3-DP each; α̃ = (ncov + L1)/(nvar + L2) is post-processing
(the test nvar + L2 > 0 too).  The intercept y̅ - α̃ x̄ then has sensitivity Δ3 = (1 + |α̃|)/n given the released α̃
(means move by at most 1/n), so L3 ~ Lap(3Δ3/ε) makes β̃ ε/3-DP.  Total ε (basic composition).  If nvar + L2 <= 0
the algorithm returns ⊥: that trial's row is NaN (a failure, never a number).

NoisyIntercept: ȳ has sensitivity 1/n (replace-one), released as ỹ = ȳ + Lap(1/(ε n)) for every x_new.

Both run as arrays over the splits of a ``run_many`` call (``run`` is a batch of one): the statistics of all splits
from one pass over their flat rows, each split's Laplace releases drawn from and recorded in its own ledger.
"""

from __future__ import annotations

import numpy as np

from dpexp.audit.plan import AuditPlan
from dpexp.components import BatchedAlgorithm
from dpexp.errors import UserError
from dpexp.families.slr.audit import noisy_stats_view, unit_square
from dpexp.families.slr.checks import inputs
from dpexp.families.slr.moments import split_means, split_moments
from dpexp.privacy.ledger import as_ledger
from dpexp.privacy.mechanisms import laplace_rows, standard_laplace_rows
from dpexp.registry import register_algorithm
from dpexp.types import Output, Split


def noisy_stats_scales(n, epsilon: float):
    """Laplace scales (b for L1, b for L2) = 3(1 - 1/n)/ε of Algorithm 1 (n a number or an array of them)."""
    d = 1.0 - 1.0 / n
    return 3.0 * d / epsilon, 3.0 * d / epsilon


def noisy_stats_many(x: list[np.ndarray], y: list[np.ndarray], xs: list[np.ndarray], epsilon: float,
                     ledgers: list, trials: int, releases: list[dict] | None = None
                     ) -> list[tuple[np.ndarray, np.ndarray] | UserError]:
    """Algorithm 1 for ``trials`` runs on each of S splits (n >= 2 each) at once: per split (predictions
    (trials, len(xs[i])), failed (trials,)), or the ``UserError`` of a split whose intercept scale overflows.

    The sufficient statistics of all splits come from one pass over their flat rows (``moments.split_moments``:
    each split's floats are those of its own ``np.sum``/``mean``).  Split i's three Laplace mechanisms draw from and
    are recorded in ``ledgers[i]`` alone, at ε/3 each: ncov and nvar (Δ = 1 − 1/n, scale 3Δ/ε), then the intercept
    given α̃ (Δ3 = (1 + |α̃|)/n per trial, scale 3Δ3/ε) — the numbers, scales and spends of its three ``laplace``
    calls on it alone, here each one ``dpexp.privacy.mechanisms.laplace_rows`` over all splits on their standard
    draws (``standard_laplace_rows``: one generator call per split); α̃, β̃ and the predictions are arrays over all
    splits.  A trial with nvar + L2 <= 0 is ⊥: α̃ NaN, so its intercept scale is NaN (nothing is released there)
    and its row NaN.  ``releases`` (one dict per split, for the audit's view) receive the three noisy releases
    (ncov, nvar, intercept) before post-processing."""
    n, xm, ym, nvar, ncov = split_moments(x, y)
    b1, b2 = noisy_stats_scales(n, epsilon)
    sens = 1.0 - 1.0 / n
    e3 = epsilon / 3.0
    S = len(ledgers)
    # each split's 3 × trials standard draws from its own ledger in one call: ncov's, nvar's, the intercept's (the
    # numbers its three ``laplace`` calls would draw, in that order: ``standard_laplace_rows``)
    L = standard_laplace_rows(ledgers, 3 * trials)
    T = trials
    ncov_t = laplace_rows(np.broadcast_to(ncov[:, None], (S, T)), L[:, :T], sens, e3, ledgers, "ncov", scale=b1)
    den = laplace_rows(np.broadcast_to(nvar[:, None], (S, T)), L[:, T:2 * T], sens, e3, ledgers, "nvar", scale=b2)
    ok = den > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = np.where(ok, ncov_t / np.where(ok, den, 1.0), np.nan)
    d3 = (1.0 + np.abs(alpha)) / n[:, None]   # NaN for a failed trial (⊥: its scale NaN, nothing is released there)
    with np.errstate(over="ignore"):   # an overflow is the failure handled below
        b3 = 3.0 * d3 / epsilon
    # a split whose intercept scale overflows (a tiny ε) fails alone, as its own ``laplace`` call would: the others
    # of the call release theirs
    bad = np.isinf(b3).any(axis=1)
    live = np.flatnonzero(~bad)
    beta = np.full((S, T), np.nan)
    if live.size:   # the data value goes into the mechanism (secure mode adds its noise to it, floating-point safe)
        value = np.where(ok[live], ym[live, None] - alpha[live] * xm[live, None], 0.0)
        beta[live] = laplace_rows(value, L[live, 2 * T:], d3[live], e3, [ledgers[i] for i in live], "intercept",
                                  scale=b3[live])
        beta[live] = np.where(ok[live], beta[live], np.nan)
    # predictions of every split at its x_new, (columns of all splits, trials): α̃ x + β̃, ⊥ rows NaN
    cols = np.array([np.size(v) for v in xs], dtype=np.int64)
    owner = np.repeat(np.arange(S), cols)
    flat_xs = np.concatenate([np.asarray(v, dtype=float) for v in xs]) if S else np.zeros(0)
    pred = alpha[owner] * flat_xs[:, None] + beta[owner]
    pred[~ok[owner]] = np.nan
    out: list = []
    at = 0
    for i in range(S):
        out.append(UserError(f"intercept scale must be >= 0 and finite, got {b3[i]}") if bad[i] else
                   (np.ascontiguousarray(pred[at:at + cols[i]].T), ~ok[i]))
        at += cols[i]
        if releases is not None:
            releases[i].update(ncov=ncov_t[i], nvar=den[i], intercept=beta[i])
    return out


def noisy_stats_predict(x: np.ndarray, y: np.ndarray, xs: np.ndarray, epsilon: float, ledger,
                        trials: int, release: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 1 on one split: ``noisy_stats_many`` on a batch of one (the audit's view calls it)."""
    got = noisy_stats_many([x], [y], [xs], epsilon, [ledger], trials, None if release is None else [release])[0]
    if isinstance(got, Exception):
        raise got
    return got


class _NoisyStatistic(BatchedAlgorithm):
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

    def run_many(self, splits: list[Split], epsilon: float, delta: float, ledgers: list, trials: int = 1
                 ) -> list[Output | Exception]:
        """All splits of a call at once (``noisy_stats_many``), each drawing from its own ledger.  A split with
        n < 2 is ⊥ without looking at the data (n is public: a 0-DP spend, NaN rows, nothing drawn)."""
        out, good = _checked_inputs(self.name, splits, epsilon, ledgers)
        batch = []
        for i, (ledger, x, y, xs, eps) in good:
            if x.size < 2:   # n is public: ⊥ without looking at the data
                ledger.public_only()
                out[i] = Output(predictions=np.full((trials, xs.size), np.nan), guarantee=ledger.guarantee())
            else:
                batch.append((i, ledger, x, y, xs, eps))
        if batch:
            done = noisy_stats_many([b[2] for b in batch], [b[3] for b in batch], [b[4] for b in batch],
                                    batch[0][5], [b[1] for b in batch], trials)
            for (i, ledger, *_), got in zip(batch, done):
                if isinstance(got, Exception):
                    out[i] = got
                    continue
                pred, failed = got
                out[i] = Output(predictions=pred, extras={"noisy_stats_failures": float(failed.sum())},
                                guarantee=ledger.guarantee())
        return out


@register_algorithm
class NoisyIntercept(_NoisyStatistic):
    """NoisyIntercept (Sec. 2.4): ȳ + Lap(1/(ε n)) for every x_new; ȳ has replace-one sensitivity 1/n for
    y in [0, 1], so it is ε-DP (one release serves all x_new)."""

    name = "noisy_intercept"
    description = "NoisyIntercept (Sec. 2.4): Laplace-noised mean of y, eps-DP"

    def run_many(self, splits: list[Split], epsilon: float, delta: float, ledgers: list, trials: int = 1
                 ) -> list[Output | Exception]:
        """All splits of a call at once: every ȳ from one pass over their flat rows (``moments.split_moments``),
        then split i's one Laplace release from its own ledger.  A split without rows releases nothing (a 0-DP
        spend, NaN rows)."""
        out, good = _checked_inputs(self.name, splits, epsilon, ledgers)
        if not good:
            return out
        n, ym = split_means([g[1][2] for g in good])
        live = np.flatnonzero(n > 0)
        ledgers_live = [good[j][1][0] for j in live]
        eps = good[0][1][4]
        released = {}
        if live.size:   # ȳ + Lap(1/(ε n)) per split, drawn from its own ledger (``standard_laplace_rows``)
            m, n_live = ym[live], n[live]
            yt = laplace_rows(np.broadcast_to(m[:, None], (live.size, trials)),
                              standard_laplace_rows(ledgers_live, trials), 1.0 / n_live, eps, ledgers_live, "mean y",
                              scale=1.0 / (eps * n_live))
            released = dict(zip(live.tolist(), yt))
        for j, (i, (ledger, x, y, xs, _)) in enumerate(good):
            if j not in released:   # no rows: nothing released
                ledger.public_only()
                out[i] = Output(predictions=np.full((trials, xs.size), np.nan), guarantee=ledger.guarantee())
            else:
                out[i] = Output(predictions=np.tile(released[j][:, None], (1, xs.size)), guarantee=ledger.guarantee())
        return out


def _checked_inputs(name: str, splits: list[Split], epsilon: float, ledgers: list
                    ) -> tuple[list, list[tuple[int, tuple]]]:
    """Each split's ``inputs`` (in [0, 1]², ε > 0) with its ledger, before anything is drawn: (outputs with each
    failed check's ``UserError`` in its place, [(index, (ledger, x, y, x_new, ε))] of the others)."""
    out: list[Output | Exception | None] = [None] * len(splits)
    good = []
    for i, (split, ledger) in enumerate(zip(splits, ledgers)):
        try:
            good.append((i, (as_ledger(ledger),) + inputs(split, name, epsilon, unit_box=True)))
        except UserError as exc:  # a split that fails the checks: recorded per cell
            out[i] = exc
    return out, good
