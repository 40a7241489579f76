"""Non-private Bayesian linear regression on public + private rows: the paper's LR (Honkela et al. 2018, Methods
4.1), the reference line of Figs. 2/6.  Not private: it releases nothing under DP and spends no budget."""

from __future__ import annotations

from typing import Literal

import numpy as np

from dpexp.chunk import ChunkRows
from dpexp.components import BatchedAlgorithm, Reference
from dpexp.families.gdsc.batching import Rows, repeat_trials
from dpexp.families.gdsc.model import FixedPrecisionParams, exact_gamma_weights, fit_weights
from dpexp.families.gdsc.stats import sufficient_stats
from dpexp.families.gdsc.train_rows import shared_train_rows
from dpexp.models.bayes_lr import posterior_mean_fixed
from dpexp.privacy.guarantee import Spend
from dpexp.privacy.ledger import as_ledger
from dpexp.registry import register_algorithm
from dpexp.types import Output, Split


class _LRParams(FixedPrecisionParams):
    prior: Literal["fixed", "gamma"] = "fixed"
    """fixed precisions (Eqs. 3-4) or Gamma(2,2) priors on both (Eq. 6, vb engine)"""


@register_algorithm
class BayesLR(Reference, BatchedAlgorithm):
    """Non-private Bayesian LR on public + private rows (the paper's LR, Methods 4.1): fixed precisions,
    (λ0 I + λ XᵀX)⁻¹ λ Xᵀy (Eqs. 3–4), or ``prior: gamma`` — Gamma(2, 2) priors on λ, λ0 (Eq. 6) fitted by VB."""

    name = "lr"
    family = "gdsc"
    description = "non-private Bayesian linear regression (fixed precisions or Gamma priors), public + private rows"
    Params = _LRParams

    def run_many(self, splits: list[Split], epsilon: float, delta: float, ledgers: list,
                 trials: int = 1, chunk: ChunkRows | None = None) -> list[Output | Exception]:
        p = self.params
        out: list[Output | Exception] = []
        by_d: dict[int, list[int]] = {}
        for k, s in enumerate(splits):
            by_d.setdefault(s.d, []).append(k)
        res: dict[int, np.ndarray] = {}
        for d, ks in by_d.items():
            # every split's training rows (public then private: ``Split.X_train``) stacked once, splits of equal n
            # adjacent: their statistics one stacked call per n (``release_batch.RowBlocks``; each split's products
            # summed as by its own ``sufficient_stats``), the layout and statistics shared by lr's variants and rlr
            # on these splits (``train_rows.shared_train_rows``)
            got = shared_train_rows([(splits[k].X_public, splits[k].X_private) for k in ks],
                                    [(splits[k].y_public, splits[k].y_private) for k in ks], chunk, ks).stats()
            if got is not None:
                XX, Xy, yy, counts = got
            else:   # other rows: split by split
                X = Rows([(splits[k].X_public, splits[k].X_private) for k in ks])
                y = Rows([(splits[k].y_public, splits[k].y_private) for k in ks])
                st = [sufficient_stats(Xk, yk) for Xk, yk in zip(X.split(X.stack), y.split(y.stack))]
                XX, Xy = np.stack([a[0] for a in st]), np.stack([a[1] for a in st])
                yy = np.array([a[2] for a in st])
                counts = X.counts
            n = counts.astype(float)
            if p.prior == "fixed":   # fit_weights' solve; exact Gram matrices: the floor's decision certified
                W = posterior_mean_fixed(XX, Xy, p.lam, p.lam0, "psd_floor", certify=True)
            elif all(splits[k].X_private.shape[0] == 0 for k in ks):   # public rows only: rlr fits the same
                W = exact_gamma_weights(XX, Xy, yy, n)
            else:
                W = fit_weights(XX, Xy, yy, n, p.prior, p.lam, p.lam0)
            res.update(zip(ks, W))
        not_dp = Spend("not DP", "none", note="non-private baseline")   # what ``ledger.not_dp`` records (immutable)
        for k, s in enumerate(splits):
            w = res[k]
            ledger = as_ledger(ledgers[k])
            ledger.record(not_dp)
            out.append(Output(predictions=repeat_trials(s.X_test @ w, trials), coef=repeat_trials(w, trials),
                              guarantee=ledger.guarantee()))
        return out
