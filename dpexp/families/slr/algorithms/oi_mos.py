"""Opportunity Insights "Maximum Observed Sensitivity" heuristic (Alabi et al. 2020, Appendix A.2;
Chetty & Friedman 2019).  NOT formally differentially private.

For each released statistic p̂(x_new) (OLS prediction at x_new):
1. For every tract t of the state (``split.meta["group_data"]``: list of (x, y) arrays), a *lower bound* on the
   local sensitivity: LS_t = max over the 121 points (a, b) of the 11 x 11 grid {0, 0.1, ..., 1}^2 of
   |p̂(D_t ∪ {(a, b)}) - p̂(D_t)| (add-one neighbours; closed form via Welford updates of the sufficient statistics).
2. Sensitivities scale like 1/n, so the state's maximum observed sensitivity is MOS = max_t n_t · LS_t
   (tracts where OLS is undefined are skipped).
3. The cell releases p̂(x_new) + Lap(MOS / (n_cell · ε_stat)), ε_stat = ε / n_test (p25 and p75 each get half,
   Sec. 4) — "Laplace noise of this magnitude divided by the number of people in that cell".
MOS is computed from the private data of the whole state without noise, which is why this is not DP.  The value is
memoised per group (``meta["group_data"]``); without ``group_data`` the split's own data is used.  A cell whose own
OLS is undefined (nvar = 0) gives NaN rows.
"""

from __future__ import annotations

import numpy as np

from dpexp import cache
from dpexp.components import Algorithm
from dpexp.families.slr.checks import inputs
from dpexp.privacy.ledger import as_ledger
from dpexp.privacy.mechanisms import heuristic_laplace
from dpexp.registry import register_algorithm
from dpexp.types import Output, Split

GRID = np.linspace(0.0, 1.0, 11)
#: the reason on every oi_mos row (its guarantee is ``none``)
MOS_REASON = "noise scale from the maximum observed sensitivity of the state's private tracts"


def _stats(x: np.ndarray, y: np.ndarray) -> tuple[int, float, float, float, float]:
    n = x.size
    if n == 0:
        return 0, np.nan, np.nan, np.nan, np.nan
    xm, ym = float(x.mean()), float(y.mean())
    return n, xm, ym, float(np.sum((x - xm) ** 2)), float(np.sum((x - xm) * (y - ym)))


def scaled_local_sensitivity(tracts: list[tuple[np.ndarray, np.ndarray]], xs: np.ndarray) -> np.ndarray:
    """n_t · LS_t(x_new) for every tract and x_new: array (n_tracts, len(xs)); NaN where OLS is undefined."""
    st = np.array([_stats(np.asarray(x, float), np.asarray(y, float)) for x, y in tracts], dtype=float)
    if st.size == 0:
        return np.zeros((0, xs.size))
    n, xm, ym, vx, cxy = (st[:, i][:, None, None] for i in range(5))
    a = GRID[None, :, None]
    b = GRID[None, None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        p_old = ym[..., 0][..., None] + (cxy / vx)[..., 0][..., None] * (xs[None, None, :] - xm[..., 0][..., None])
        f = n / (n + 1.0)
        dx, dy = a - xm, b - ym
        vx2 = vx + f * dx * dx
        cxy2 = cxy + f * dx * dy
        xm2 = xm + dx / (n + 1.0)
        ym2 = ym + dy / (n + 1.0)
        slope2 = np.where(vx2 > 0, cxy2 / vx2, np.nan)  # (T, 11, 11)
        out = np.empty((st.shape[0], xs.size))
        for c, x0 in enumerate(xs):
            p_new = ym2 + slope2 * (x0 - xm2)
            diff = np.abs(p_new - p_old[:, :, c][:, :, None])
            ls = np.max(diff.reshape(diff.shape[0], -1), axis=1)
            ok = (st[:, 0] >= 2) & (st[:, 3] > 0)
            out[:, c] = np.where(ok, st[:, 0] * ls, np.nan)
    return out


def max_observed_sensitivity(tracts: list[tuple[np.ndarray, np.ndarray]], xs: np.ndarray) -> np.ndarray:
    """MOS = max over tracts of n_t · LS_t at each x_new (NaN where no tract has a defined OLS)."""
    sls = scaled_local_sensitivity(tracts, xs)
    with np.errstate(all="ignore"):
        return np.where(np.all(np.isnan(sls), axis=0), np.nan, np.nanmax(np.where(np.isnan(sls), -np.inf, sls),
                                                                         axis=0))


@register_algorithm
class OIMaxObservedSensitivity(Algorithm):
    """Opportunity Insights MOS heuristic (Appendix A.2): OLS + Laplace noise scaled by the maximum over the
    state's tracts of n_t × a grid lower bound on the local sensitivity, divided by the cell size.  NOT formally
    DP (the noise scale is a non-private function of all tracts)."""

    name = "oi_mos"
    family = "slr"
    description = "Opportunity Insights max-observed-sensitivity heuristic (NOT formally DP)"
    private = True
    formally_dp = False
    neighbouring = "add-remove"
    guarantee_text = "not DP (noise scale from the maximum observed sensitivity of the state's private tracts)"

    def mos(self, split: Split, x: np.ndarray, y: np.ndarray, xs: np.ndarray) -> np.ndarray:
        """The maximum observed sensitivity of ``split``'s group at ``xs``: computed once per group (the dataset
        names its group's data by ``meta['group_key']``) and x_new (``dpexp.cache``)."""
        group = split.meta.get("group_data")
        if not group:
            return max_observed_sensitivity([(x, y)], xs)
        key = split.meta.get("group_key")
        if key is None:
            return max_observed_sensitivity(list(group), xs)
        return cache.memo("slr.oi_mos", (key, tuple(np.round(xs, 12))),
                          lambda: max_observed_sensitivity(list(group), xs), maxsize=64)

    def run(self, split: Split, epsilon: float, delta: float, ledger, trials: int = 1) -> Output:
        ledger = as_ledger(ledger)
        x, y, xs, eps = inputs(split, self.name, epsilon, unit_box=True)
        n, xm, ym, vx, cxy = _stats(x, y)
        if n < 2 or not vx > 0:   # ⊥ decided from the private rows (nvar = 0): part of the heuristic, not DP
            ledger.not_dp(MOS_REASON)
            return Output(predictions=np.full((trials, xs.size), np.nan), extras={"formally_dp": 0.0},
                          guarantee=ledger.guarantee())
        p_hat = ym + (cxy / vx) * (xs - xm)
        m = self.mos(split, x, y, xs)
        scale = m / (n * (eps / xs.size))
        pred = heuristic_laplace(p_hat, scale, ledger, size=trials, reason=MOS_REASON, label="p_hat")
        extras = {"formally_dp": 0.0, "mos_sensitivity": float(np.nanmax(m)) if np.any(np.isfinite(m)) else np.nan}
        return Output(predictions=pred, extras=extras, guarantee=ledger.guarantee())
