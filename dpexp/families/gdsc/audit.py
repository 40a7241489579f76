"""Audit designs of the GDSC family (Honkela et al. 2018): the public facts of the stress datasets its algorithms
are audited on.  An algorithm points to one with ``audit = AuditPlan(design=...)`` on its class."""

from __future__ import annotations

import contextlib

import numpy as np

from dpexp.audit.neighbours import Design
from dpexp.audit.plan import AuditPlan
from dpexp.components import Algorithm
from dpexp.families.gdsc.stats import Clipping
from dpexp.types import Split


def clipped_statistics(alg: Clipping) -> Design:
    """Robust private LR family (rplr, plr, split_search): coordinates clipped to [−B_x, B_x], y to [−B_y, B_y]
    where the algorithm's ``bounds`` puts them (``stats.Clipping``): B = ω·σ from ``meta['sigma_x'|'sigma_y']``
    (set to 1 here, so B = ω) or the declared whole-range bounds.  d = 1 keeps the released statistics few, so a
    scalar projection sees most of the privacy loss; the test point sits at the bound where predictions move most."""
    meta = {"sigma_x": 1.0, "sigma_y": 1.0}
    probe = Split(np.zeros((1, 1)), np.zeros(1), np.empty((0, 1)), np.empty(0), np.zeros((1, 1)), np.zeros(1),
                  dict(meta))
    B_x, B_y = (float(v) for v in alg.bounds(probe))
    # σ is recomputed from each dataset of a pair (an algorithm that reads it for free must show its leak: the
    # issue's D = 19 zero rows + (1, 1) vs D′ = 20 zero rows, the extra pair on the origin base)
    # the outlier pair (B_x, ±OUTLIER·B_y) lies outside the box: projecting it is part of these algorithms (Eq. 9),
    # so any row is a valid input (a correct run clips it to (B_x, ±B_y)); a run that forgets to clip shows it
    return Design(x_lo=(-B_x,), x_hi=(B_x,), y_lo=-B_y, y_hi=B_y, n=20, X_test=((B_x,),), meta=meta,
                  extra_pairs=(((B_x, B_y), (0.0, 0.0)), ((B_x, OUTLIER * B_y), (B_x, -OUTLIER * B_y))),
                  data_meta=sigma_of_rows)


def sigma_of_rows(X: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """meta['sigma_x'|'sigma_y'] of one dataset: the standard deviations of its own rows (as the GDSC loader's)."""
    return {"sigma_x": float(np.std(X)), "sigma_y": float(np.std(y))}


#: the design that sees XᵀX's cross terms (``clipped_statistics_cross``): d features, n private rows
CROSS_D, CROSS_N = 8, 101


def cross_rows(d: int = CROSS_D) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """x = 1 and x′ = (1, …, 1, −1, …, −1) (d/2 each): equal squares x_j² (XᵀX's diagonal and the DP σ̂_x see the
    same rows), and the (d/2)² cross entries x_j x_k with j ≤ d/2 < k move from +1 to −1."""
    h = d // 2
    return (1.0,) * d, (1.0,) * h + (-1.0,) * (d - h)


def clipped_statistics_cross(alg: Clipping) -> Design:
    """The clipped-statistics family (rplr, plr, split_search) at d = 8, for the bugs only cross terms of XᵀX show
    (``*/xx-cross-terms-forgotten``).  Declared box |x_j| ≤ 1: plr's B_x, and rplr's and split_search's public σ
    bound ``sigma_bound_x`` = 1 (their clipping bound is ω_x σ̂_x, drawn per trial).

    The pair ``cross_rows`` with y = B_y → −B_y, n = 101, on the explicit base of 100 rows alternating x and x′
    (y = 0).  The row moves the (d/2)² = 16 cross entries by 2B² each (B the trial's clipping bound; rplr's
    ω_x = 0.7 keeps ω_x σ̂_x < 1 except with probability ≈ 0.3 %, so every row is clipped to ±B), 32B² in L1 — of
    the true sensitivity d(d+1)B²/2 = 36B² (``stats.sensitivities``), and 4× the diagonal-only d·B² of the mutant —
    and leaves XᵀX's diagonal, its other off-diagonal entries and Σ x_j² unchanged.  The base's cross entries cancel
    (50 rows each way), so the moved entries are ±B² plus noise; its Σx_j² = 8·101 keeps σ̂_x at 1 ± 14 % under
    rplr's σ̂ noise (d/(0.05ε) on Σx_j²).  y: Xy moves by B_y(x + x′) = (2B B_y, …, 0, …) (half of
    Xᵀy's 2dB B_y), the rest of what one row can realise jointly with the cross terms."""
    x, xp = cross_rows()
    meta = {"sigma_x": 1.0, "sigma_y": 1.0}
    probe = Split(np.zeros((1, CROSS_D)), np.zeros(1), np.empty((0, CROSS_D)), np.empty(0),
                  np.zeros((1, CROSS_D)), np.zeros(1), dict(meta))
    B_y = float(alg.bounds(probe)[1])
    base = tuple((x if i % 2 == 0 else xp) + (0.0,) for i in range(CROSS_N - 1))
    return Design(x_lo=(-1.0,) * CROSS_D, x_hi=(1.0,) * CROSS_D, y_lo=-B_y, y_hi=B_y, n=CROSS_N, X_test=(x,),
                  meta=meta, bases=("explicit",), explicit_base=base, extra_pairs=((x + (B_y,), xp + (-B_y,)),),
                  max_pairs=0)


#: |y| of the outlier rows of the unit-box design, in units of B_y (a correct algorithm clips them to ±1)
OUTLIER = 1000.0


def unit_box(alg: Algorithm) -> Design:
    """Output perturbation (oplr) and functional mechanism (fmlr) of the GDSC comparison (Methods 4.6): x scaled by
    the public B_x (``meta['x_bound']`` or the parameter) and y by B_y into [−1, 1]; the plans set
    B_x = B_y = 1, one feature, test point at the bound.

    n = 400 rows: oplr's noise Δ = 2(R + 1)/(λn) with λ = sqrt(d/(nε)) is 4/sqrt(n) (ε = 1, R = 1), larger than the
    diameter 2R of the ball its fit lives in for n < 4 (the paper's (12R + 8)/(λn): n < 100); at n = 400, Δ = 0.2
    and a fit pushed to ±R by one row is a 10ε loss.  The extra pair (1, ±OUTLIER) lies outside the
    box: clipping is part of these algorithms, so any row is a valid input (a correct run clips it to (1, ±1)); a
    run that forgets to clip shows it."""
    return Design(x_lo=(-1.0,), x_hi=(1.0,), y_lo=-1.0, y_hi=1.0, n=400, X_test=((1.0,),), meta={"x_bound": 1.0},
                  extra_pairs=(((1.0, OUTLIER), (1.0, -OUTLIER)),))


#: the plan of oplr and fmlr: the unit-box design with the public bounds it assumes
UNIT_BOX = AuditPlan(design=unit_box, params={"bound_x": 1.0, "bound_y": 1.0})


class _ReleaseView:
    """An audit view: runs the algorithm unchanged while ``_capture`` records what its own calls return, and puts
    the recorded raw releases in ``Output.coef`` — any post-processing of the release is a valid
    thing to audit, and the raw statistics keep the privacy loss that a fit of them would mostly lose."""

    def __init__(self, alg: Algorithm) -> None:
        self.alg = alg

    def _capture(self, record: dict[str, list]) -> contextlib.AbstractContextManager:
        raise NotImplementedError

    def run(self, split: Split, epsilon: float, delta: float, ledger, trials: int = 1):
        """A single split is a batch of one: ``run_many`` of it, its exception raised."""
        out = self.run_many([split], epsilon, delta, [ledger], trials)[0]
        if isinstance(out, Exception):
            raise out
        return out

    def run_many(self, splits: list[Split], epsilon: float, delta: float, ledgers: list, trials: int = 1) -> list:
        """The algorithm's ``run_many`` with its releases recorded, each split's put in its ``Output.coef``."""
        raise NotImplementedError


def _per_trial(values, trials: int) -> list[np.ndarray]:
    """Scalars or (trials,) arrays (e.g. the DP σ̂_x, σ̂_y) as (trials, 1) columns."""
    return [np.broadcast_to(np.asarray(v, dtype=float), (trials,))[:, None] for v in values]


def _unique_entries(XX: np.ndarray) -> np.ndarray:
    """The d(d+1)/2 upper-triangular entries of (trials, d, d) matrices: what a symmetric release draws noise for."""
    iu = np.triu_indices(XX.shape[-1])
    return XX[:, iu[0], iu[1]]


class ReleasedStatistics(_ReleaseView):
    """Audit view of the clipped-statistics algorithms (rplr, plr, split_search): the noisy XᵀX (unique entries),
    Xᵀy, yᵀy of their one release — rplr's ``release_batch.release_group`` (with ``sigma: dp`` the DP σ̂_x, σ̂_y
    too), plr's ``release_batch.perturbed_stats_many`` — recorded from the batched call ``run_many`` makes.  The
    Bayesian fit turns ~4 numbers into d coefficients and loses most of the privacy loss (a d = 1 fit is a ratio);
    the released statistics do not.  The splits of one call share d and have private rows (the audit designs), so
    split k is row k of the release — or, for an algorithm that releases split by split (``split_search`` runs an
    rplr per split: one ``release_group`` of one row each), row 0 of the k-th release."""

    def _capture(self, record):
        from dpexp.audit.instrument import capturing

        return capturing(self.alg, ("release_group", "perturbed_stats_many"), record)

    def run_many(self, splits: list[Split], epsilon: float, delta: float, ledgers: list, trials: int = 1) -> list:
        record: dict[str, list] = {}
        with self._capture(record):
            outs = self.alg.run_many(splits, epsilon, delta, ledgers, trials)
        for k, out in enumerate(outs):
            cols = self._columns_of(record, trials, k)
            if cols and not isinstance(out, Exception):
                out.coef = np.concatenate(cols, axis=1)
        return outs

    def _columns_of(self, record, trials: int, k: int) -> list[np.ndarray]:
        cols: list[np.ndarray] = []
        if record.get("release_group"):
            got = record["release_group"]
            g, i = (got[k], 0) if len(got) > 1 and all(r.XX.shape[0] == 1 for r in got) else (got[-1], k)
            cols += [_unique_entries(g.XX[i]), g.Xy[i], np.asarray(g.yy[i])[:, None]]
            if g.sigma_x.ndim == 2:   # σ̂ released per trial (sigma: dp)
                cols += _per_trial((g.sigma_x[i], g.sigma_y[i]), trials)
        if record.get("perturbed_stats_many"):
            got = record["perturbed_stats_many"][-1]
            if k in got:
                XX, Xy = got[k]
                cols += [_unique_entries(XX), Xy]
        return cols


def released_statistics(alg: Algorithm) -> ReleasedStatistics:
    return ReleasedStatistics(alg)


class AdaSSPReleases(_ReleaseView):
    """Audit view of ``adassp``: its three raw releases — the noisy λ_min, XᵀX (unique entries) and Xᵀy of
    ``models.adassp.release_rows`` (the one release ``run_many`` makes, either noise) — and, with ``sigma: dp``,
    the DP σ̂_x, σ̂_y its bounds come from (``release_batch.release_sigmas``).  For d = 1 a row (0, ·) -> (B, B) moves λ_min by its full sensitivity B²
    and XᵀX, Xᵀy by half theirs.  The splits of one call share d and are all released (the audit designs), so
    split k is row k of the batch."""

    @contextlib.contextmanager
    def _capture(self, record):
        from dpexp.audit.instrument import capturing
        from dpexp.models import adassp as core

        saved = {n: getattr(core, n) for n in ("release_rows",)}

        def recorded(name):
            def g(*a, **k):
                r = saved[name](*a, **k)
                record.setdefault(name, []).append(r)
                return r
            return g

        for n in saved:   # adassp calls core.release_rows: recorded for the duration, restored after
            setattr(core, n, recorded(n))
        try:
            with capturing(self.alg, ("release_sigmas",), record):
                yield
        finally:
            for n, f in saved.items():
                setattr(core, n, f)

    def run_many(self, splits: list[Split], epsilon: float, delta: float, ledgers: list, trials: int = 1) -> list:
        record: dict[str, list] = {}
        with self._capture(record):
            outs = self.alg.run_many(splits, epsilon, delta, ledgers, trials)
        dp = getattr(self.alg.params, "sigma", "") == "dp"
        for k, out in enumerate(outs):
            cols: list[np.ndarray] = []
            if record.get("release_rows"):
                lm, XX, Xy = record["release_rows"][-1]
                cols += [np.asarray(lm[k]).reshape(trials, 1), _unique_entries(XX[k]), Xy[k]]
                if dp and record.get("release_sigmas"):
                    sx, sy = record["release_sigmas"][-1]
                    cols += _per_trial((sx[k], sy[k]), trials)
            if cols and not isinstance(out, Exception):
                out.coef = np.concatenate(cols, axis=1)
        return outs


def adassp_releases(alg: Algorithm) -> AdaSSPReleases:
    return AdaSSPReleases(alg)
