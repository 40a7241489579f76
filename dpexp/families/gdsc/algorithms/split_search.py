"""One cell of the budget-split search of Honkela et al. 2018 (Fig. 5; Methods 4.3): ``rplr`` at one split of
the grid, with the auxiliary-data score of that split (``dpexp.families.gdsc.tuning.tune_split``) as an extra.

ε-DP under replace-one neighbours exactly as ``rplr`` with ``sigma: dp`` (the default here too); ``sigma: data``
(the paper's protocol) is not DP and is reported as such.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from dpexp.audit.plan import AuditPlan
from dpexp.components import Algorithm
from dpexp.errors import UserError
from dpexp.families.gdsc.algorithms.rplr import RobustPrivateLR, SensitivityParams, SigmaParams, TuneParams
from dpexp.families.gdsc.audit import clipped_statistics, released_statistics
from dpexp.families.gdsc.tuning import SPLIT_GRID, tune_split
from dpexp.registry import register_algorithm
from dpexp.types import Output, Split


class _SplitSearchParams(SigmaParams, TuneParams, SensitivityParams):   # rplr's sigma, tuning, sensitivity
    p1: float = Field(0.35, gt=0, lt=1, description="share of epsilon for X'X (a grid point; p3 = 1 - p1 - p2)")
    p2: float = Field(0.60, gt=0, lt=1, description="share of epsilon for X'y (a grid point)")
    tune_n: int = Field(500, ge=2, description="auxiliary data size of the split search (paper: 500)")
    tune_d: int = Field(10, ge=1, description="auxiliary data dimension of the split search (paper: 10)")
    tune_epsilon: float = Field(2.0, gt=0, description="epsilon of the split search (paper: 2)")
    split_reps: tuple[int, int] = Field((5, 5), description="auxiliary data sets x noise draws (paper: 5 x 5)")
    stabilize: Literal["noise_ridge", "none"] = "noise_ridge"
    """rplr's stabilize: the Gamma-prior score and fit with the noise ridge or without (the paper protocol)"""
    scorer: Literal["vb", "advi"] = "vb"
    """the split's score: our vb, or (with tune_aux: preprocessed, the paper protocol) the authors' ADVI on their
    separate seed-42 data (``tuning.tune_split``; needs the pymc extra)"""
    grid: tuple[float, ...] | None = None
    """the p values of the search's grid, splits (p1, p2, 1 − p1 − p2) with p1, p2 on it and p3 ≥ 0.05 (None: the
    paper's {0.05, …, 0.90}; a coarser grid for a quick look)"""

    @model_validator(mode="after")
    def _on_simplex(self) -> "_SplitSearchParams":
        p3 = 1.0 - self.p1 - self.p2
        if p3 < 0.05 - 1e-9:
            raise ValueError(f"p1 + p2 must be <= 0.95 (p3 = 1 - p1 - p2 >= 0.05), got {self.p1 + self.p2:g}")
        if self.scorer == "advi" and self.tune_aux != "preprocessed":
            raise ValueError("scorer: advi is the paper protocol's scorer: it needs tune_aux: preprocessed")
        if self.grid is not None and not all(0 < g < 1 for g in self.grid):
            raise ValueError(f"grid values must be in (0, 1), got {list(self.grid)}")
        return self


def search_grid(grid: tuple[float, ...] | None) -> tuple[tuple[float, float, float], ...]:
    """The splits of the search: ``tuning.SPLIT_GRID`` for None, else every (p1, p2, 1 − p1 − p2) with p1, p2 in
    ``grid`` (in its order) and p3 ≥ 0.05."""
    if grid is None:
        return SPLIT_GRID
    return tuple((round(a, 10), round(b, 10), round(1.0 - a - b, 10)) for a in grid for b in grid
                 if 1.0 - a - b >= 0.05 - 1e-9)


@register_algorithm
class SplitSearch(Algorithm):
    """One cell of the budget-split search (Fig. 5; Methods 4.3): the split (p1, p2, 1 − p1 − p2) of the grid
    {0.05, …, 0.90}³.  Extras: ``aux_spearman`` — the mean Spearman of this split on the auxiliary data of
    ``tuning.tune_split`` (the quantity Fig. 5 maps; one cached search serves every cell) — and the thresholds
    ``omega_x``, ``omega_y`` tuned for it there.  Predictions: ``rplr`` (Gamma priors) with this split and those
    thresholds on the cell's own split, so ``spearman`` shows the same split on held-out data.  Off-simplex (p1, p2)
    (p3 < 0.05) are invalid parameters: a config lists the whole p1 × p2 square with ``skip_invalid: true`` and
    those grid points are left out (the heat-map cells stay empty).  ε-DP under replace-one neighbours exactly as
    ``rplr`` (``sigma: dp``, default); ``sigma: data`` is not DP."""

    name = "split_search"
    family = "gdsc"
    # audited at the grid point (0.05, 0.9) like rplr: at the paper split no pair realises more than ≈ 0.54ε, so a
    # factor-2 bug would stay ≈ 1.08ε (docs/audit.md)
    audit = AuditPlan(design=clipped_statistics, view=released_statistics, params={"p1": 0.05, "p2": 0.9})
    #: its run is an rplr's (``_rplr``): the audit views find the helpers they record (``release_group``) there
    audit_delegates = (RobustPrivateLR,)
    description = "budget-split grid point: auxiliary-data score (Fig. 5) + rplr with that split"
    neighbouring = "replace-one"
    guarantee_text = ("pure ε-DP, replace-one (as rplr with sigma: dp); "
                      "sigma: data → not DP (clipping σ from private rows, the paper's protocol)")
    Params = _SplitSearchParams

    def _row(self) -> list[float]:
        p = self.params
        p3 = round(1.0 - p.p1 - p.p2, 10)
        grid = search_grid(p.grid)
        for k, sp in enumerate(grid):
            if max(abs(sp[0] - p.p1), abs(sp[1] - p.p2), abs(sp[2] - p3)) < 1e-9:
                extra = {} if p.grid is None else {"splits": grid}
                table = tune_split(p.tune_n, p.tune_d, p.tune_epsilon, n_aux=p.split_reps[0],
                                   n_noise=p.split_reps[1], stabilize=p.stabilize, aux=p.tune_aux,
                                   solver=p.tune_solver, scorer=p.scorer, sensitivity=p.sensitivity,
                                   **extra)["table"]
                return table[k]
        raise UserError(f"split_search: (p1, p2, p3) = ({p.p1:g}, {p.p2:g}, {p3:g}) is not on the split grid "
                        f"{'{0.05, ..., 0.90}^3' if p.grid is None else list(p.grid)} with sum 1 (off-simplex cell)")

    def _rplr(self) -> RobustPrivateLR:
        row = self._row()
        p = self.params
        return RobustPrivateLR(p1=row[0], p2=row[1], p3=row[2], omega_x=row[4], omega_y=row[5], sigma=p.sigma,
                               sigma_share=p.sigma_share, sigma_bound_x=p.sigma_bound_x,
                               sigma_bound_y=p.sigma_bound_y, stabilize=p.stabilize, sensitivity=p.sensitivity)

    def bounds(self, split: Split, epsilon: float | None = None) -> tuple[float, float]:
        return self._rplr().bounds(split, epsilon)

    def run(self, split: Split, epsilon: float, delta: float, ledger, trials: int = 1) -> Output:
        row = self._row()
        out = self._rplr().run(split, epsilon, delta, ledger, trials)   # its Output carries the ledger's guarantee
        out.extras.update({"aux_spearman": row[3], "omega_x": row[4], "omega_y": row[5]})
        return out
