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
(parameter ``sd``): ``dataset`` (default, the authors') — the drug's response std given by the dataset
(``split.meta['y_sd']``; the authors used a per-drug std over all lines, drugstats.csv; ``gdsc`` gives the std over
all the drug's lines, private ones included) or, if absent, the std of the test responses; ``test`` — always the std
of the test responses.  Averaging the per-drug values over drugs gives the (unweighted) wpc-index.  Undefined cases
(n < 3, all responses equal) give 0, like ``spearman``.

Privacy (docs/privacy.md "Evaluation rows"): with ``sd: dataset`` the value reads a statistic of the private lines
(the std over all lines), so the metric declares ``reads_private`` and its rows are evaluation rows (guarantee
``none``, "evaluation against private data", the release named in the note) — on a dataset without ``y_sd`` this is
conservative.  ``sd: test`` reads only the test lines and the predictions: its rows carry the release's guarantee.
"""

from __future__ import annotations

import functools
from typing import Literal

import numpy as np
from scipy import special

from dpexp import cache
from dpexp.components import Metric, Params
from dpexp.metrics.cells import response_groups
from dpexp.registry import register_metric
from dpexp.types import Output, Split


def pc_index(pred: np.ndarray, y: np.ndarray, sd: float) -> np.ndarray:
    """Probabilistic c-index of predictions ``pred`` (…, n) against responses ``y`` (n,)."""
    pred = np.asarray(pred, dtype=float)
    y = np.asarray(y, dtype=float)
    n = y.size
    a = 0.5 * special.erf((y[:, None] - y[None, :]) / (2.0 * sd))
    P = n * (n - 1) / 2.0
    gam = gamma_rows(a, pred.reshape(-1, n)).reshape(pred.shape[:-1])   # Γ (module docstring)
    return 0.5 + gam / (2.0 * P)


def pc_null_sd(y: np.ndarray, sd: float) -> float:
    """Standard deviation of the pc-index under uniformly random orderings of distinct predictions (exact)."""
    y = np.asarray(y, dtype=float)
    return _null_sd(0.5 * special.erf((y[:, None] - y[None, :]) / (2.0 * sd)))


def _null_sd(a: np.ndarray) -> float:
    """``pc_null_sd`` from the response terms a_ij (n × n)."""
    n = a.shape[0]
    # np.sum(a**2) and np.sum(a.sum(axis=1)**2) as the ufunc calls they make (the same reductions, no wrappers)
    A2 = float(np.add.reduce(np.square(a), axis=None))
    r = np.add.reduce(a, axis=1)
    A3 = float(np.add.reduce(np.square(r, out=r), axis=None))
    B2 = n * (n - 1.0)
    B3 = n * (n * n - 1.0) / 3.0
    var = 2.0 / (n * (n - 1.0)) * A2 * B2 + 4.0 / (n * (n - 1.0) * (n - 2.0)) * (A3 - A2) * (B3 - B2)
    P = n * (n - 1) / 2.0
    return float(np.sqrt(max(var, 0.0)) / (2.0 * P))


def _response_terms(y: np.ndarray, sd: float) -> tuple[np.ndarray, float]:
    """The response-only terms (a_ij, sd_null) of ``y`` (a_ij computed once for both; ``pc_null_sd``'s elementwise
    operations, in place in one n × n array)."""
    y = np.asarray(y, dtype=float)
    a = np.subtract.outer(y, y)
    a /= 2.0 * sd
    special.erf(a, out=a)
    a *= 0.5
    return a, _null_sd(a)


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
    pc = 0.5 + gamma_rows(a, pred) / (n * (n - 1.0))
    z = (pc - 0.5) / s
    ok = np.all(np.isfinite(pred), axis=1)
    return np.where(ok, z, 0.0)


@register_metric
class WPC(Metric):
    """Per-drug standardised probabilistic c-index (term of the wpc-index, DREAM / Honkela et al. Suppl.),
    averaged over trials; exact null mean ½ and std (module docstring)."""

    name = "wpc"
    description = "standardised probabilistic c-index per drug (wpc-index term; average over drugs = wpc)"

    class Params(Params):
        sd: Literal["dataset", "test"] = "dataset"
        """the response scale: the dataset's per-drug std (authors'; gdsc: over all lines, private ones included:
        evaluation rows) or the test responses' std (reads no private line)"""

    @property
    def reads_private(self) -> bool:  # type: ignore[override]
        """``sd: dataset`` reads the std over all the drug's lines, private ones included (module docstring)."""
        return self.params.sd == "dataset"

    def __call__(self, output: Output, split: Split) -> float:
        return float(np.mean(standardised_pc(output.predictions, split.y_test, _sd(split, self.params.sd))))

    def many(self, outputs: list[Output], splits: list[Split]) -> list[float]:
        """Every cell of a group: the one-trial cells per group of equal test responses (a drug's algorithms,
        budgets and sizes; ``dpexp.metrics.cells``, ranked once and shared with spearman) scored together
        (``gamma_rows`` on the rows' integer codes, equal rows once), the others one by one.  The values equal
        ``__call__``'s to the bit: Γ is the one compiled sum ``gamma_rows`` of each row alone, the codes order a
        row's entries as its predictions do, and the scalar steps are the same IEEE operations, elementwise."""
        vals: list[float] = [0.0] * len(outputs)
        table = response_groups(outputs, splits)
        sd_of: dict[int, float] = {}                 # id(split) -> _sd(split) (the splits outlive this call)
        for k in table.other:
            vals[k] = self(outputs[k], splits[k])
        for g in table.groups:                       # non-finite predictions score 0 (vals' default)
            if not g.cells:
                continue
            by_sd: dict[float, list[int]] = {}       # the drug's σ_y: one value per group in practice
            for r, k in enumerate(g.cells):
                sp = splits[k]
                sd = sd_of.get(id(sp))               # a split is shared by all algorithms of its size: read once
                if sd is None:
                    sd = sd_of[id(sp)] = _sd(sp, self.params.sd)
                by_sd.setdefault(sd, []).append(r)
            for sd, rows in by_sd.items():
                a, sn = cache.memo("gdsc.wpc_terms", (*g.key, float(sd)), lambda: _defined_terms(g.y, sd),
                                   maxsize=512)               # = memo_array(..., g.y, sd, ...): hashed once
                if a is None or sn <= 0:
                    continue                         # undefined: 0
                one = len(rows) == len(g.cells)
                if g.codes is not None and one and g.inverse is not None:
                    gam = gamma_rows(a, g.unique_codes)[g.inverse]   # equal rows summed once
                elif g.codes is not None:
                    gam = gamma_rows(a, g.codes if one else g.codes[rows])
                else:   # too many columns for codes: the predictions themselves
                    gam = gamma_rows(a, np.concatenate([np.asarray(outputs[g.cells[r]].predictions, dtype=float)
                                                        for r in rows]))
                n = a.shape[0]
                z = (0.5 + gam / (n * (n - 1.0)) - 0.5) / sn
                for r, v in zip(rows, z.tolist()):
                    vals[g.cells[r]] = v
        return vals


def gamma_rows(a: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Γ = Σ_{i≠j} a_ij sign(p_i − p_j) of every row of ``P`` (k, n) against one response matrix ``a`` (n, n): the
    predictions themselves or their integer codes (``dpexp.metrics.cells.ranks_and_codes``: the same order, so the
    same Γ).  One compiled loop (numba, cached on disk) over the pairs i < j of each row in a fixed order
    (``_gamma_loop``), so a row's Γ does not depend on the other rows, the CPU or numpy's dispatch.  A NaN compares
    neither way (its pairs add nothing; the callers score a non-finite row 0)."""
    P = np.atleast_2d(P)
    if P.dtype.kind not in "iuf":
        P = P.astype(float)
    out = np.empty(P.shape[0])
    _gamma_kernel()(np.ascontiguousarray(a, dtype=float), np.ascontiguousarray(P), out)
    return out


def _gamma_loop(a: np.ndarray, P: np.ndarray, out: np.ndarray) -> None:
    # a is antisymmetric (a_ji = −a_ij exactly: erf is odd) and so is the sign, so Γ = 2 Σ_{i<j} a_ij s_ij; the
    # pairs of a row i go into four running sums by j mod 4 (a fixed order: the same floats on any CPU), signs
    # as (p_i > p_j) − (p_i < p_j), without branches
    k, n = P.shape
    for r in range(k):
        total = 0.0
        for i in range(n - 1):
            pi = P[r, i]
            s0 = 0.0
            s1 = 0.0
            s2 = 0.0
            s3 = 0.0
            j = i + 1
            while j + 3 < n:
                s0 += a[i, j] * ((pi > P[r, j]) - (pi < P[r, j]))
                s1 += a[i, j + 1] * ((pi > P[r, j + 1]) - (pi < P[r, j + 1]))
                s2 += a[i, j + 2] * ((pi > P[r, j + 2]) - (pi < P[r, j + 2]))
                s3 += a[i, j + 3] * ((pi > P[r, j + 3]) - (pi < P[r, j + 3]))
                j += 4
            while j < n:
                s0 += a[i, j] * ((pi > P[r, j]) - (pi < P[r, j]))
                j += 1
            total += (s0 + s1) + (s2 + s3)
        out[r] = 2.0 * total


@functools.cache
def _gamma_kernel():
    """``_gamma_loop`` compiled (numba, cached on disk), made at the first score: a process that scores no wpc does
    not import numba (≈ 0.5 s)."""
    import numba

    return numba.njit(cache=True, error_model="numpy")(_gamma_loop)


def _sd(split: Split, source: str = "dataset") -> float:
    """The response scale of the pc-index: the drug's σ_y from the dataset (``source: dataset``, when it gives
    one), else the test responses' std."""
    sd = split.meta.get("y_sd") if source == "dataset" else None
    return float(np.std(split.y_test)) if sd is None else float(sd)
