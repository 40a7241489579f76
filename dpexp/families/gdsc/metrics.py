"""Drug-sensitivity metric ``wpc``: the standardised probabilistic concordance index of one drug (the per-drug term
of the weighted probabilistic c-index, wpc-index, of the NCI-DREAM challenge, Costello et al. 2014, used in
Honkela et al. 2018 Suppl. Figs S3/S4 and the authors' code).

For test responses y and predictions p of one drug, each pair (i, j) scores the probability that the predicted order
is the true one under measurement noise of standard deviation ``sd``:

    q_ij = P(y_i "truly" > y_j) = ½ (1 + erf((y_i − y_j) / (2 sd))),
    pc   = (1/P) Σ_{i<j} [ q_ij if p_i > p_j;  1 − q_ij if p_i < p_j;  ½ if p_i = p_j ],      P = n(n − 1)/2.

Writing a_ij = q_ij − ½ (antisymmetric) and b_ij = sign(p_i − p_j): pc = ½ + Γ/(2P) with Γ = Σ_{i≠j} a_ij b_ij.
Under a uniformly random ordering of the predictions (distinct ranks) E[Γ] = 0 and (Daniels 1944, generalised
correlation coefficient)

    Var Γ = 2/(n(n−1)) · A₂B₂ + 4/(n(n−1)(n−2)) · (A₃ − A₂)(B₃ − B₂),
    A₂ = Σ_{i≠j} a_ij², A₃ = Σ_i (Σ_j a_ij)²,  B₂ = n(n−1), B₃ = n(n²−1)/3,

so the metric is the z-score (pc − ½)/sd(pc), sd(pc) = sqrt(Var Γ)/(2P) — exact, no permutation sampling.  ``sd``
is the drug's response std given by the dataset (``split.meta['y_sd']``; the authors used a per-drug std,
drugstats.csv) or, if absent, the std of the test responses.  Averaging the per-drug values over drugs gives the
(unweighted) wpc-index.  Undefined cases (n < 3, all responses equal) give 0, like ``spearman``.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from dpexp import cache
from dpexp.components import Metric
from dpexp.registry import register_metric
from dpexp.types import Output, Split


def pc_index(pred: np.ndarray, y: np.ndarray, sd: float) -> np.ndarray:
    """Probabilistic c-index of predictions ``pred`` (…, n) against responses ``y`` (n,)."""
    pred = np.asarray(pred, dtype=float)
    y = np.asarray(y, dtype=float)
    n = y.size
    a = 0.5 * special.erf((y[:, None] - y[None, :]) / (2.0 * sd))
    b = np.sign(pred[..., :, None] - pred[..., None, :])
    P = n * (n - 1) / 2.0
    return 0.5 + np.einsum("ij,...ij->...", a, b) / (2.0 * P)


def pc_null_sd(y: np.ndarray, sd: float) -> float:
    """Standard deviation of the pc-index under uniformly random orderings of distinct predictions (exact)."""
    y = np.asarray(y, dtype=float)
    n = y.size
    a = 0.5 * special.erf((y[:, None] - y[None, :]) / (2.0 * sd))
    A2 = float(np.sum(a**2))
    A3 = float(np.sum(a.sum(axis=1) ** 2))
    B2 = n * (n - 1.0)
    B3 = n * (n * n - 1.0) / 3.0
    var = 2.0 / (n * (n - 1.0)) * A2 * B2 + 4.0 / (n * (n - 1.0) * (n - 2.0)) * (A3 - A2) * (B3 - B2)
    P = n * (n - 1) / 2.0
    return float(np.sqrt(max(var, 0.0)) / (2.0 * P))


def _response_terms(y: np.ndarray, sd: float) -> tuple[np.ndarray, float]:
    """The response-only terms (a_ij, sd_null) of ``y``."""
    return 0.5 * special.erf((y[:, None] - y[None, :]) / (2.0 * sd)), pc_null_sd(y, sd)


def _defined_terms(y: np.ndarray, sd: float) -> tuple[np.ndarray | None, float]:
    """``_response_terms`` where the index is defined (3+ distinct responses, sd > 0), else (None, 0)."""
    y = np.asarray(y, dtype=float)
    if y.size < 3 or not (sd > 0) or np.ptp(y) == 0:
        return None, 0.0
    return _response_terms(y, sd)


def standardised_pc(pred: np.ndarray, y: np.ndarray, sd: float) -> np.ndarray:
    """(pc − ½)/sd_null(pc) for each row of ``pred``; 0 where undefined.  The response-only terms are memoised by
    the responses' values (``dpexp.cache.memo_array``), so the algorithms and sizes of one drug compute them once."""
    pred = np.atleast_2d(np.asarray(pred, dtype=float))
    a, s = cache.memo_array("gdsc.wpc_terms", y, float(sd), lambda: _defined_terms(y, sd), maxsize=512)
    if a is None or s <= 0:
        return np.zeros(pred.shape[0])
    n = a.shape[0]
    b = np.sign(pred[:, :, None] - pred[:, None, :])
    pc = 0.5 + np.einsum("ij,tij->t", a, b) / (n * (n - 1.0))
    z = (pc - 0.5) / s
    ok = np.all(np.isfinite(pred), axis=1)
    return np.where(ok, z, 0.0)


@register_metric
class WPC(Metric):
    """Per-drug standardised probabilistic c-index (term of the wpc-index, DREAM / Honkela et al. Suppl.),
    averaged over trials; exact null mean ½ and std (module docstring)."""

    name = "wpc"
    description = "standardised probabilistic c-index per drug (wpc-index term; average over drugs = wpc)"

    def __call__(self, output: Output, split: Split) -> float:
        return float(np.mean(standardised_pc(output.predictions, split.y_test, _sd(split))))

    def many(self, outputs: list[Output], splits: list[Split]) -> list[float]:
        """Every cell of a group; a cell with one trial of finite predictions (nearly all) takes a short path with
        the same arithmetic as ``standardised_pc`` — the same sign matrix and ``einsum`` call, the scalar steps in
        Python floats (IEEE doubles, as numpy's) — so the values equal ``__call__``'s to the bit."""
        vals: list[float] = []
        terms_of: dict[tuple[int, float], tuple[np.ndarray | None, float]] = {}   # each response array hashed once
        for o, s in zip(outputs, splits):
            P = o.predictions
            if not (isinstance(P, np.ndarray) and P.ndim == 2 and P.shape[0] == 1 and P.dtype == float):
                vals.append(self(o, s))
                continue
            y, sd = s.y_test, _sd(s)
            got = terms_of.get((id(y), sd))
            if got is None:
                got = terms_of[(id(y), sd)] = cache.memo_array("gdsc.wpc_terms", y, float(sd),
                                                               lambda: _defined_terms(y, sd), maxsize=512)
            a, sn = got
            if a is None or sn <= 0 or not np.isfinite(P).all():
                vals.append(0.0)
                continue
            n = a.shape[0]
            b = np.sign(P[:, :, None] - P[:, None, :])
            g = float(np.einsum("ij,tij->t", a, b)[0])
            vals.append((0.5 + g / (n * (n - 1.0)) - 0.5) / sn)
        return vals


def _sd(split: Split) -> float:
    """The response scale of the pc-index: the drug's σ_y from the dataset, else the test responses' std."""
    sd = split.meta.get("y_sd")
    return float(np.std(split.y_test)) if sd is None else float(sd)
