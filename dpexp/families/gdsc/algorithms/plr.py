"""Private LR without projection, the paper's "private LR" (Honkela et al. 2018, Methods 4.2): Laplace-perturbed
XᵀX and Xᵀy of the private rows with whole-range bounds, ε split evenly, fixed precisions.

ε-DP under replace-one (bounded) neighbours; sensitivities and noise in ``dpexp.families.gdsc.stats``.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from dpexp.audit.plan import AuditPlan
from dpexp.components import Algorithm
from dpexp.families.gdsc.audit import clipped_statistics, released_statistics
from dpexp.families.gdsc.model import FixedPrecisionParams
from dpexp.families.gdsc.stats import perturbed_stats, sufficient_stats
from dpexp.models.bayes_lr import posterior_mean_fixed
from dpexp.privacy.ledger import as_ledger
from dpexp.registry import register_algorithm
from dpexp.types import Output, Split


class _PLRParams(FixedPrecisionParams):
    B_y: float = Field(5.0, gt=0, description="declared public bound on |y| covering the whole data range")
    B_x: float = Field(1.0, gt=0, description="bound on |x_j|; 1 for unit-norm rows")


def _fit_predict(split: Split, XXn: np.ndarray, Xyn: np.ndarray, lam: float, lam0: float,
                 solver: str = "psd_floor") -> Output:
    XXp, Xyp, _ = sufficient_stats(split.X_public, split.y_public)
    w = posterior_mean_fixed(XXn + XXp, Xyn + Xyp, lam, lam0, solver)
    return Output(predictions=w @ split.X_test.T, coef=w)


@register_algorithm
class PrivateLR(Algorithm):
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

    def run(self, split: Split, epsilon: float, delta: float, ledger, trials: int = 1) -> Output:
        ledger = as_ledger(ledger)   # the cell's PrivacyLedger (a numpy Generator is wrapped)
        p = self.params
        d = split.d
        if split.X_private.shape[0] == 0:  # nothing private to release (as rplr): the public-only fit
            ledger.public_only()
            XXn, Xyn = np.zeros((trials, d, d)), np.zeros((trials, d))
        else:
            XXn, Xyn, _ = perturbed_stats(split.X_private, split.y_private, p.B_x, p.B_y, 0.5 * epsilon,
                                          0.5 * epsilon, None, ledger, trials)
        out = _fit_predict(split, XXn, Xyn, p.lam, p.lam0, p.solver)
        out.guarantee = ledger.guarantee()   # derived from the two Laplace releases, never from the config
        return out
