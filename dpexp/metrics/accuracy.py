"""Accuracy metrics of predictions on held-out rows (one value per cell; trials are averaged)."""

from __future__ import annotations

import numpy as np

from dpexp import cache
from dpexp.components import Metric
from dpexp.metrics.cells import response_groups
from dpexp.metrics.ranks import average_ranks
from dpexp.registry import register_metric
from dpexp.types import Output, Split


def spearman(pred: np.ndarray, truth: np.ndarray) -> float:
    """Spearman rank correlation; 0 when undefined (fewer than 2 points or a constant vector)."""
    return float(spearman_rows(np.asarray(pred, dtype=float)[None, :], truth)[0])


def spearman_rows(P: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Spearman correlation of every row of ``P`` (trials, n) with ``truth`` (n,), vectorised: Pearson correlation
    of average ranks (ties get mid-ranks, as scipy.stats.spearmanr).  0 where undefined (n < 2, a constant row or
    constant truth, non-finite predictions).  The centred ranks of ``truth`` are memoised by its values (every
    algorithm and size of a drug is scored against the same test responses)."""
    P = np.asarray(P, dtype=float)
    out = np.zeros(P.shape[0])
    if P.shape[1] < 2:
        return out
    ok = np.isfinite(P).all(axis=1)
    if not ok.any():
        return out
    rt, tt = cache.memo_array("metrics.spearman_truth", truth, None, lambda: _centred_ranks(truth), maxsize=512)
    rp = average_ranks(P if ok.all() else P[ok])
    rp -= rp.mean(axis=1, keepdims=True)
    den = np.sqrt((rp * rp).sum(axis=1) * tt)
    num = rp @ rt
    out[ok] = np.divide(num, den, out=np.zeros_like(num), where=den > 0)
    return np.clip(out, -1.0, 1.0)


def _centred_ranks(truth: np.ndarray) -> tuple[np.ndarray, float]:
    rt = average_ranks(np.asarray(truth, dtype=float)[None, :])[0]
    rt = rt - rt.mean()
    return rt, rt @ rt


@register_metric
class Spearman(Metric):
    """Mean over trials of the Spearman rank correlation between test predictions and test responses
    (Honkela et al. 2018's accuracy measure); 0 when undefined."""

    name = "spearman"
    description = "Spearman rank correlation of test predictions vs truth (0 when undefined)"

    def __call__(self, output: Output, split: Split) -> float:
        return float(np.mean(spearman_rows(output.predictions, split.y_test)))

    def many(self, outputs: list[Output], splits: list[Split]) -> list[float]:
        """All cells at once: one-trial cells per group of equal test responses (``dpexp.metrics.cells``, ranked
        once and shared with the other rank metrics), the others grouped by prediction shape, a cell with
        non-finite predictions on its own.

        Bit-identical to one cell at a time: ranks and their centred sums are multiples of ½ below 2⁵³, so every sum
        (and the product with the responses' centred ranks) is exact whatever its order; only the final sqrt and
        division round, elementwise as before."""
        vals: list[float] = [0.0] * len(outputs)
        table = response_groups(outputs, splits)
        for g in table.groups:
            for k in g.nonfinite:
                vals[k] = self(outputs[k], splits[k])
            if not g.cells or g.ranks.shape[1] < 2:
                continue                                       # fewer than 2 points: 0
            rt, tt = cache.memo("metrics.spearman_truth", (*g.key, None), lambda y=g.y: _centred_ranks(y),
                                maxsize=512)                  # = memo_array(..., g.y, None, ...): hashed once
            # every row's mean rank is (n + 1)/2 exactly (its sum n(n + 1)/2 is exact): the mean np.mean returns
            rp = g.ranks - (g.ranks.shape[1] + 1) / 2.0
            den = np.sqrt((rp * rp).sum(axis=1) * tt)
            num = rp @ rt
            rho = np.divide(num, den, out=np.zeros_like(num), where=den > 0)
            np.maximum(rho, -1.0, out=rho)                  # np.clip's values (rho has no NaN), fewer calls
            np.minimum(rho, 1.0, out=rho)
            for k, v in zip(g.cells, rho.tolist()):
                vals[k] = v
        self._many_by_shape(outputs, splits, table.other, vals)
        return vals

    def _many_by_shape(self, outputs: list[Output], splits: list[Split], cells: list[int],
                       vals: list[float]) -> None:
        """The cells ``cells`` (several trials, or unusual arrays) grouped by prediction shape, into ``vals``."""
        groups: dict[tuple[int, ...], list[int]] = {}
        for k in cells:
            P = outputs[k].predictions
            if isinstance(P, np.ndarray) and P.ndim == 2 and P.shape[1] >= 2:
                groups.setdefault(P.shape, []).append(k)
            else:
                vals[k] = self(outputs[k], splits[k])
        terms_of: dict[int, tuple[np.ndarray, float]] = {}   # id(y_test) -> its terms: each array hashed once here
        for (t, n), ks in groups.items():
            P = np.stack([outputs[k].predictions for k in ks]).reshape(len(ks) * t, n)
            finite = np.isfinite(P).reshape(len(ks), t * n).all(axis=1)
            if not finite.all():   # a cell with non-finite predictions: on its own
                for k in np.asarray(ks)[~finite]:
                    vals[k] = self(outputs[k], splits[k])
                ks = [k for k, f in zip(ks, finite) if f]
                if not ks:
                    continue
                P = P.reshape(len(finite), t, n)[finite].reshape(len(ks) * t, n)
            terms = []
            for k in ks:
                y = splits[k].y_test
                tr = terms_of.get(id(y))
                if tr is None:
                    tr = terms_of[id(y)] = cache.memo_array("metrics.spearman_truth", y, None,
                                                            lambda y=y: _centred_ranks(y), maxsize=512)
                terms.append(tr)
            rt = np.repeat(np.stack([r for r, _ in terms]), t, axis=0)
            tt = np.repeat(np.array([v for _, v in terms]), t)
            rp = average_ranks(P)
            rp -= rp.mean(axis=1, keepdims=True)
            den = np.sqrt((rp * rp).sum(axis=1) * tt)
            num = (rp * rt).sum(axis=1)
            rho = np.clip(np.divide(num, den, out=np.zeros_like(num), where=den > 0), -1.0, 1.0)
            for k, v in zip(ks, rho.reshape(len(ks), t).mean(axis=1)):
                vals[k] = float(v)


@register_metric
class MAE(Metric):
    """Mean absolute error on the test rows, averaged over trials (Heikkilä et al. 2017)."""

    name = "mae"
    description = "mean absolute error on the test rows"

    def __call__(self, output: Output, split: Split) -> float:
        return float(np.mean(np.abs(output.predictions - split.y_test[None, :])))
