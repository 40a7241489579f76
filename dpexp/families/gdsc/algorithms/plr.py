"""Private LR without projection, the paper's "private LR" (Honkela et al. 2018, Methods 4.2): Laplace-perturbed
XᵀX and Xᵀy of the private rows with whole-range bounds, ε split evenly, fixed precisions.

ε-DP under replace-one (bounded) neighbours; sensitivities and noise in ``dpexp.families.gdsc.stats``: XᵀX
Δ₁ = d(d+1)B_x²/2 (``sensitivity: tight``, ours, default) or d(d+1)B_x² (``paper``, Methods 4.2), Xᵀy 2dB_xB_y.
The paper protocol's private LR is ``plr_paper`` (compared_paper.py, the authors' MATLAB scales).
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from dpexp.audit.plan import AuditPlan
from dpexp.chunk import ChunkRows
from dpexp.components import BatchedAlgorithm
from dpexp.errors import UserError
from dpexp.families.gdsc.batching import fit_fixed_many, groups
from dpexp.families.gdsc.audit import clipped_statistics, released_statistics
from dpexp.families.gdsc.algorithms.rplr import SensitivityParams
from dpexp.families.gdsc.model import FixedPrecisionParams
from dpexp.families.gdsc.release_batch import perturbed_stats_many
from dpexp.privacy.ledger import as_ledger
from dpexp.registry import register_algorithm
from dpexp.types import Output, Split


class _PLRParams(FixedPrecisionParams, SensitivityParams):
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
                 trials: int = 1, chunk: ChunkRows | None = None) -> list[Output | Exception]:
        """Release each split's statistics through its own ledger (``release_batch.perturbed_stats_many``, as
        arrays over the splits), then fit every group of splits of one d in one batched call
        (``batching.fit_fixed_many``)."""
        p = self.params
        ledgers = [as_ledger(lg) for lg in ledgers]   # each cell's PrivacyLedger (a numpy Generator is wrapped)
        out: list[Output | Exception] = [UserError("not run")] * len(splits)
        stats = perturbed_stats_many(splits, p.B_x, p.B_y, epsilon, ledgers, trials, out, p.sensitivity, chunk)
        for group in groups(stats, lambda k: stats[k][0].shape[-1]).values():   # one batched fit per d
            XX, Xy = np.stack([stats[k][0] for k in group]), np.stack([stats[k][1] for k in group])
            for rows, W in fit_fixed_many(XX, Xy, p.lam, p.lam0, p.solver):
                for k, w in zip((group[j] for j in rows), W):
                    # the guarantee is derived from the two Laplace releases, never from the config
                    out[k] = w if isinstance(w, Exception) else Output(
                        predictions=w @ splits[k].X_test.T, coef=w, guarantee=ledgers[k].guarantee())
        return out
