"""Private LR without projection, the paper's "private LR" (Honkela et al. 2018, Methods 4.2): Laplace-perturbed
XᵀX and Xᵀy of the private rows with whole-range bounds, ε split evenly, fixed precisions.

ε-DP under replace-one (bounded) neighbours; sensitivities and noise in ``dpexp.families.gdsc.stats``.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import Field

from dpexp.audit.plan import AuditPlan
from dpexp.components import BatchedAlgorithm
from dpexp.errors import UserError
from dpexp.families.gdsc.batching import each, groups, solve_stacked
from dpexp.families.gdsc.audit import clipped_statistics, released_statistics
from dpexp.families.gdsc.model import FixedPrecisionParams
from dpexp.families.gdsc import stats as gdsc_stats   # looked up at call time (the audit's mutants patch it)
from dpexp.families.gdsc.stats import perturbed_stats
from dpexp.models.bayes_lr import posterior_mean_fixed
from dpexp.privacy.ledger import as_ledger
from dpexp.privacy.mechanisms import laplace_rows, standard_laplace_rows
from dpexp.registry import register_algorithm
from dpexp.types import Output, Split


class _PLRParams(FixedPrecisionParams):
    B_y: float = Field(5.0, gt=0, description="declared public bound on |y| covering the whole data range")
    B_x: float = Field(1.0, gt=0, description="bound on |x_j|; 1 for unit-norm rows")


@register_algorithm
class PrivateLR(BatchedAlgorithm):
    """Private LR without projection (the paper's "private LR"): bounds that cover the whole data range
    (B_x = 1 for unit-norm rows, B_y a declared public bound), ε split evenly between XᵀX and Xᵀy, fixed
    precisions (no yᵀy needed).  ε-DP under replace-one neighbours; sensitivities in ``stats``."""

    name = "plr"
    family = "gdsc"
    audit = AuditPlan(design=clipped_statistics, view=released_statistics)
    description = "private LR without projection: whole-range bounds, even split of epsilon"
    neighbouring = "replace-one"
    guarantee_text = "pure ε-DP, replace-one"
    Params = _PLRParams

    def bounds(self, split: Split, epsilon: float | None = None) -> tuple[float, float]:
        """The declared whole-range bounds (B_x, B_y) (``stats.Clipping``); they depend on neither split nor ε."""
        return float(self.params.B_x), float(self.params.B_y)

    def run_many(self, splits: list[Split], epsilon: float, delta: float, ledgers: list,
                 trials: int = 1) -> list[Output | Exception]:
        """Release each split's statistics through its own ledger (``perturbed_stats``' releases, as rplr; each
        split's draws in one generator call, its spends recorded as ``laplace`` records them: ``_release``), then
        fit every group of splits of one d in one batched call (``posterior_mean_fixed`` treats each problem on its
        own: ``_fit``)."""
        p = self.params
        ledgers = [as_ledger(lg) for lg in ledgers]   # each cell's PrivacyLedger (a numpy Generator is wrapped)
        out: list[Output | Exception] = [UserError("not run")] * len(splits)
        stats = self._release(splits, epsilon, ledgers, trials, out)
        for group in groups(stats, lambda k: stats[k][0].shape[-1]).values():   # one batched fit per d
            XX, Xy = np.stack([stats[k][0] for k in group]), np.stack([stats[k][1] for k in group])
            for rows, W in _fit(XX, Xy, p.lam, p.lam0, p.solver):
                for k, w in zip((group[j] for j in rows), W):
                    # the guarantee is derived from the two Laplace releases, never from the config
                    out[k] = w if isinstance(w, Exception) else Output(
                        predictions=w @ splits[k].X_test.T, coef=w, guarantee=ledgers[k].guarantee())
        return out

    def _release(self, splits: list[Split], epsilon: float, ledgers: list, trials: int, out: list
                 ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """The noisy private statistics plus the exact public ones of each split that does not fail, (trials, d, d)
        and (trials, d), keyed by split index in order; a failing split gets its exception in ``out``.

        The private releases are ``perturbed_stats``' (B_x, B_y, ε/2 each, no yᵀy): XᵀX's d(d+1)/2 upper-triangle
        entries, mirrored, then Xᵀy, each a Laplace mechanism with Δ₁ = d(d+1)B_x², 2dB_xB_y (``stats``).
        Batched: each split's clipping and products on its own (``clipped_stats``'), then per d one
        ``standard_laplace_rows`` row per cell holding the trials·(d(d+1)/2 + d) draws of its two calls, scaled and
        recorded by ``laplace_rows`` (the same floats and spends: tests/gdsc/test_batched_paths.py).
        One split (``run``: the audit's view records what ``perturbed_stats`` returns) or an ε/2 that is not a
        valid float ε (each split then fails as it must) take the split-by-split path."""
        p = self.params
        eps = 0.5 * epsilon
        if len(splits) == 1 or not (type(eps) is float and 0.0 < eps < math.inf and type(p.B_x) is float
                                    and type(p.B_y) is float):
            return self._release_each(splits, epsilon, ledgers, trials, out)
        B_x, B_y = p.B_x, p.B_y
        exact: dict[int, tuple[np.ndarray, ...]] = {}
        failed: dict[int, Exception] = {}

        def statistics(k: int) -> None:   # the exact statistics: the clipped private rows' (if any), the public's
            s = splits[k]
            Xv, yv = s.X_private, s.y_private
            if Xv.shape[0] == 0:   # nothing private to release (as rplr): the public-only fit
                ledgers[k].public_only()
                priv: tuple = ()
            else:   # ``clipped_stats``' clipping and products (no yᵀy: it is not released)
                Xc, yc = gdsc_stats.clip(Xv, yv, B_x, B_y)
                priv = (Xc.T @ Xc, Xc.T @ yc, Xv.shape[1])
            try:
                Xu = s.X_public
                exact[k] = (Xu.T @ Xu, Xu.T @ s.y_public) + priv
            except Exception as exc:   # as split by split: the release is made (and paid), then the split fails
                if not priv:
                    raise
                failed[k] = exc
                exact[k] = (None, None) + priv

        ks = each(range(len(splits)), out, statistics)
        res: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for k in ks:
            if len(exact[k]) == 2:   # public rows only
                d = splits[k].d
                res[k] = (np.zeros((trials, d, d)) + exact[k][0], np.zeros((trials, d)) + exact[k][1])
        for d, group in groups((k for k in ks if len(exact[k]) == 5), lambda k: exact[k][4]).items():
            lgs = [ledgers[k] for k in group]
            S, m = len(group), d * (d + 1) // 2
            std = standard_laplace_rows(lgs, trials * (m + d))
            s_xx, s_xy, _ = gdsc_stats.sensitivities(d, B_x, B_y)
            N_up = laplace_rows(np.zeros((S, trials, m)), std[:, :trials * m].reshape(S, trials, m),
                                np.full(S, s_xx), eps, lgs, label="X'X")
            N_xy = laplace_rows(np.zeros((S, trials, d)), std[:, trials * m:].reshape(S, trials, d),
                                np.full(S, s_xy), eps, lgs, label="X'y")
            iu = gdsc_stats.triu_indices(d)
            N = np.zeros((S, trials, d, d))
            N[..., iu[0], iu[1]] = N_up
            N_xx = N + np.swapaxes(N, -1, -2) - N * np.eye(d)
            XX = np.stack([exact[k][2] for k in group])[:, None] + N_xx
            Xy = np.stack([exact[k][3] for k in group])[:, None] + N_xy
            for j, k in enumerate(group):
                if k in failed:
                    out[k] = failed[k]
                else:
                    res[k] = (XX[j] + exact[k][0], Xy[j] + exact[k][1])
        return {k: res[k] for k in ks if k in res}

    def _release_each(self, splits: list[Split], epsilon: float, ledgers: list, trials: int, out: list
                      ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """``_release`` split by split through ``perturbed_stats`` (the reference of the batched release)."""
        p = self.params
        stats: dict[int, tuple[np.ndarray, np.ndarray]] = {}

        def release(k: int) -> None:   # noisy private statistics + exact public ones, (trials, d, d), (trials, d)
            s, ledger = splits[k], ledgers[k]
            d = s.d
            if s.X_private.shape[0] == 0:  # nothing private to release (as rplr): the public-only fit
                ledger.public_only()
                XXn, Xyn = np.zeros((trials, d, d)), np.zeros((trials, d))
            else:
                XXn, Xyn, _ = perturbed_stats(s.X_private, s.y_private, p.B_x, p.B_y, 0.5 * epsilon, 0.5 * epsilon,
                                              None, ledger, trials)
            Xu = s.X_public
            stats[k] = (XXn + Xu.T @ Xu, Xyn + Xu.T @ s.y_public)

        ks = each(range(len(splits)), out, release)
        return {k: stats[k] for k in ks}


def _fit(XX: np.ndarray, Xy: np.ndarray, lam: float, lam0: float, solver: str
         ) -> list[tuple[np.ndarray, list[np.ndarray | Exception]]]:
    """``solve_stacked(posterior_mean_fixed, …)`` of the splits (leading axis of XX (splits, trials, d, d)) in
    groups ``rows`` that one call may fit with the results of separate calls (``_same_floor_branch``); returns
    (rows, weights) pairs.  With ``solver="psd_floor"`` the eigen-decomposition that decides the branch is the one
    ``symmetric_psd_floor`` would compute again on each group (numpy decomposes each matrix of a stack on its own:
    the same floats), so it is computed once and the floor applied from it — anything failing on the way takes the
    plain path."""
    if solver == "psd_floor":
        try:
            A = 0.5 * (XX + np.swapaxes(XX, -1, -2))
            w, V = np.linalg.eigh(A)
            unfloored = np.all(w >= 0.0, axis=(-2, -1))
            got = []
            eye = np.eye(XX.shape[-1])
            for rows, floored in ((np.flatnonzero(unfloored), False), (np.flatnonzero(~unfloored), True)):
                if not rows.size:
                    continue
                if floored:   # symmetric_psd_floor's rebuild from the eigen-decomposition, on this group
                    Vr = V[rows]
                    XXs = (Vr * np.maximum(w[rows], 0.0)[..., None, :]) @ np.swapaxes(Vr, -1, -2)
                else:
                    XXs = A[rows]
                prec = lam0 * eye + lam * XXs
                W = np.linalg.solve(prec, lam * Xy[rows][..., None])[..., 0]
                got.append((rows, [W[j] for j in range(len(W))]))
            return got
        except Exception:   # e.g. a singular or non-finite problem: each group solved as posterior_mean_fixed does
            pass
    return [(rows, solve_stacked(posterior_mean_fixed, XX[rows], Xy[rows], lam, lam0, solver))
            for rows in _same_floor_branch(XX, solver)]


def _same_floor_branch(XX: np.ndarray, solver: str) -> list[np.ndarray]:
    """The splits (leading axis of XX, (splits, trials, d, d)) in groups that ``posterior_mean_fixed`` may fit in one
    call with the results of separate calls: with ``solver="psd_floor"``, ``symmetric_psd_floor`` rebuilds a whole
    batch from its eigen-decomposition as soon as one matrix has an eigenvalue below the floor (0), which moves the
    others in their last bits — so the splits whose (symmetrised) matrices need no floor are fitted apart from the
    others, as each would be alone."""
    if solver != "psd_floor":
        return [np.arange(len(XX))]
    w = np.linalg.eigh(0.5 * (XX + np.swapaxes(XX, -1, -2)))[0]
    unfloored = np.all(w >= 0.0, axis=(-2, -1))
    return [rows for rows in (np.flatnonzero(unfloored), np.flatnonzero(~unfloored)) if rows.size]
