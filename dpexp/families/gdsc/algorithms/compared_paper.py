"""The compared methods as the authors' Matlab code ran them (Honkela et al. 2018, Methods 4.6; thesis §4.3, code by
M. Das in DPBayes/robust-private-lr): ``plr_paper``, ``oplr_paper``, ``fmlr_paper`` — the paper-protocol curves of
Figs. 2/6, beside our corrected ``plr``, ``oplr``, ``fmlr`` (docs/reproduction.md lists every difference).

They run on the ``gdsc`` dataset with ``protocol: matlab`` (x rows of unit norm per set, responses centred over
the training lines; fmlr's raw rows in ``Split.meta['raw']``).  None is DP as run — each says why, on every row:

* ``plr_paper``: fixed bounds B_x = 1, B_y = 20, but y is **not clipped**: a neighbour with |y| > B_y changes Xᵀy
  by more than the noise is calibrated for, so no ε holds for the mechanism (whatever the data at hand are: DP is
  a worst case over neighbours, so we label every run, not only those with |y| > 20 — a data-dependent label would
  itself depend on the private rows).  Released: XᵀX + U with U a full d × d Laplace draw of scale
  2d(d+1)B_x²/ε, symmetrised by mirroring its upper triangle; Xᵀy + V, V Laplace of scale 4dB_xB_y/ε; no yᵀy.
  Solve w = (X_pubᵀX_pub + XᵀX + U + λI)⁻¹(Xᵀy + V + X_pubᵀy_pub) with λ = 1, no positive-definite repair.
* ``oplr_paper``: private lines only; λ = √(D/(Nε)); w from Σ(xᵢᵀw − yᵢ)² + (λ/2)‖w‖² as the authors' solver chain
  leaves it: minConf_PQN under their "projection" sign(w)·simplexproj(w², R), which is not the L2 ball's
  (``dpexp.models.minconf.oplr_minconf``: a heuristic; the noise below is calibrated for the exact ball ‖w‖₂ ≤ R);
  noise of norm ~ Gamma(D, (12R + 8)/(λNε)), R = 1, in the direction of a normalised Uniform[−½, ½]^D vector (not
  uniform on the sphere: ``heuristic_gamma_norm``); it assumes |y| ≤ 1 but y is neither rescaled nor clipped.
* ``fmlr_paper``: private lines only; x and y min–max scaled to [−1, 1] per column with the minima and maxima of
  **all** lines (test included; from ``meta['raw']``, else the split's own lines); a bias column (D = d + 1);
  Laplace noise of scale (2D² + 4D)/ε on the full D × D coefficient matrix and on −2Xᵀy (one release, Zhang et al.
  2012's sensitivity 2D² + 4D, valid once the data are in [−1, 1]); the matrix averaged with its transpose, a ridge
  5√2·(2D² + 4D)/ε on its diagonal, eigen-directions with eigenvalue ≤ 1e-8 dropped, the quadratic minimised.  Not
  DP because the ranges are read from all lines (private ones included) without budget.

With no private lines all three fit ridge regression with λ = 1 on the public lines (fmlr on its raw, unscaled x,
its row normalisation being switched off) and say ``public_only`` (the dataset's statement still applies).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
from pydantic import Field

from dpexp.chunk import ChunkRows
from dpexp.components import BatchedAlgorithm, Params
from dpexp.families.gdsc.batching import Rows, each, record_each, repeat_trials, run_grouped, solve_stacked
from dpexp.families.gdsc.algorithms.functional_mechanism import (fm_sensitivity_paper, objective_noise_rows,
                                                                  trimmed_minimiser, with_bias)
from dpexp.privacy.mechanisms import heuristic_gamma_norm_rows, heuristic_laplace_rows
from dpexp.registry import register_algorithm
from dpexp.types import Output, Split

#: eigenvalues at or below this are dropped by the authors' fmlr
FM_EIG_TOL = 1e-8
#: numpy's float64 dtype (arrays of floats carry this object: an identity test, the others take the plain path)
_FLOAT = np.dtype(float)


def oplr_minconf(A: np.ndarray, b: np.ndarray, lam: np.ndarray, R: float) -> np.ndarray:
    """``dpexp.models.minconf.oplr_minconf``, imported at the first fit: that module loads numba (≈ 0.5 s a
    process), which a run without ``oplr_paper`` (and ``dpexp --help``) need not pay."""
    from dpexp.models.minconf import oplr_minconf as solve

    return solve(A, b, lam, R)


def public_ridge(X: np.ndarray, y: np.ndarray, lam: float = 1.0) -> np.ndarray:
    """(λI + XᵀX)⁻¹Xᵀy: the Matlab scripts' fit on the public lines when there are no private ones."""
    return np.linalg.solve(lam * np.eye(X.shape[1]) + X.T @ X, X.T @ y)


class _PaperLR(BatchedAlgorithm):
    """What the three share: GDSC family, replace-one relation of the methods they implement, not DP as run, and a
    ``run_many`` that does the per-split work as arrays across the splits of one call (``batching``): ε checked
    once, then each group of splits of one d handed to ``_run_group``, which draws every split's noise through its
    own ledger (in the order of the authors' code) and fits the group in one batched call."""

    family = "gdsc"
    formally_dp = False
    neighbouring = "replace-one"

    def run_many(self, splits: list[Split], epsilon: float, delta: float, ledgers: list,
                 trials: int = 1, chunk: ChunkRows | None = None) -> list[Output | Exception]:
        return run_grouped(self.name, splits, epsilon, ledgers, lambda k: splits[k].d,
                           lambda d, group, eps, lgs, out: self._run_group(d, group, splits, eps, lgs, trials, out,
                                                                           chunk))

    def _run_group(self, d: int, ks: list[int], splits: list[Split], epsilon: float, ledgers: list, trials: int,
                   out: list, chunk: ChunkRows | None = None) -> None:
        """Fill ``out[k]`` (an ``Output`` or the exception) for the splits ``ks``, all of dimension ``d``; ``chunk``:
        their ``ChunkRows`` (what they share with the chunk's other calls)."""
        raise NotImplementedError


def _outputs(ks: list[int], weights: list, X_tests: list[np.ndarray], ledgers: list, out: list,
             back: Any = None) -> None:
    """``out[k]``: the predictions ``w @ X_testᵀ`` (mapped to response units by ``back[j]``, if given), the
    weights and the ledger's guarantee, or the solver's exception."""
    for j, k in enumerate(ks):
        w = weights[j]
        if isinstance(w, Exception):
            out[k] = w
            continue
        pred = w @ X_tests[j].T
        out[k] = Output(predictions=pred if back is None else back[j](pred), coef=w, guarantee=ledgers[k].guarantee())


def _outputs_back(ks: list[int], weights: list, X_tests: list[np.ndarray], lo: list[float], hi: list[float],
                  ledgers: list, out: list) -> None:
    """``_outputs`` with each split's scaled predictions mapped back to response units by its range [lo, hi] of y
    (monotone): (p + 1)·sc + lo with sc = (hi − lo)/2 — element-wise, so done in one pass over all the splits'
    predictions (each split's prediction then a view of it): the same floats as split by split."""
    good, preds, los, scs = [], [], [], []
    for j, k in enumerate(ks):
        w = weights[j]
        if isinstance(w, Exception):
            out[k] = w
            continue
        good.append((k, w))
        preds.append(w @ X_tests[j].T)
        los.append(lo[j])
        scs.append(0.5 * (hi[j] - lo[j]))
    if not good:
        return
    sizes = [p.size for p in preds]
    flat = np.concatenate(preds, axis=None)   # each flattened, in order
    flat += 1.0
    flat *= np.repeat(np.array(scs, dtype=float), sizes)
    flat += np.repeat(np.array(los, dtype=float), sizes)
    at = 0
    for (k, w), p, n in zip(good, preds, sizes):
        out[k] = Output(predictions=flat[at:at + n].reshape(p.shape), coef=w, guarantee=ledgers[k].guarantee())
        at += n


def _stack(arrays: list) -> np.ndarray:
    """``np.stack(arrays)`` of equal-shaped arrays of one or more dimensions as one concatenate and a reshape: the
    same array (the entries copied in the same order) without np.stack's per-array ``expand_dims`` (≈ 0.6 µs an
    array, several stacks of every split per call).  Anything else (0-d entries, shapes that differ, not arrays):
    ``np.stack`` itself, which raises as before."""
    if arrays:
        first = arrays[0]
        if type(first) is np.ndarray and first.ndim:
            shape = first.shape
            if all(type(a) is np.ndarray and a.shape == shape for a in arrays):
                return np.concatenate(arrays).reshape((len(arrays),) + shape)
    return np.stack(arrays)


def _solve(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(…, d) solution of A w = b (…, d, d), (…, d)."""
    return np.linalg.solve(A, b[..., None])[..., 0]


def _public_ridges(ks: list[int], Xs: dict[int, np.ndarray], ys: dict[int, np.ndarray], trials: int,
                   out: list, lam: float = 1.0) -> dict[int, np.ndarray | Exception]:
    """``public_ridge`` of each split's (X, y), solved as one stack, each repeated ``trials`` times."""
    grams = _grams(ks, Xs.__getitem__, ys.__getitem__, out)
    A: dict[int, np.ndarray] = {}
    ridges: dict[int, np.ndarray] = {}   # λI per number of columns, made once (the same floats for each split)

    def ridge(k: int) -> None:
        d = Xs[k].shape[1]
        lam_I = ridges.get(d)
        if lam_I is None:
            lam_I = ridges[d] = lam * np.eye(d)
        A[k] = lam_I + grams[k][0]

    ks = each([k for k in ks if k in grams], out, ridge)
    if not ks:
        return {}
    W = solve_stacked(_solve, _stack([A[k] for k in ks]), _stack([grams[k][1] for k in ks]))
    return {k: w if isinstance(w, Exception) else repeat_trials(w, trials) for k, w in zip(ks, W)}


def _grams(ks: list[int], X_of: Callable[[int], np.ndarray], y_of: Callable[[int], np.ndarray],
           out: list) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Xᵀ X and Xᵀ y of each split's (X, y) = (``X_of(k)``, ``y_of(k)``), keyed by split; a split whose products
    raise gets the exception in ``out[k]`` and is left out.  The splits whose X (n, d) and y (n,) are C-contiguous
    float arrays of one shape (e.g. the public rows, 10 or fewer per drug) take one stacked product per shape:
    numpy's matmul makes on each matrix of a stack the BLAS call it makes on the matrix alone (syrk for XᵀX, the
    transposed operand being the same memory; gemv for Xᵀy) — the same floats for one call per shape instead of two
    per split (tests/gdsc/test_batched_paths.py)."""
    got: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    by_shape: dict[tuple[int, ...], list[int]] = {}
    alone = []
    for k in ks:
        X, y = X_of(k), y_of(k)
        if (type(X) is np.ndarray and type(y) is np.ndarray and X.dtype is _FLOAT and y.dtype is _FLOAT
                and X.ndim == 2 and y.ndim == 1 and X.shape[0] == y.shape[0] and X.flags.c_contiguous
                and y.flags.c_contiguous):
            by_shape.setdefault(X.shape, []).append(k)
        else:
            alone.append(k)
    for g in by_shape.values():
        if len(g) == 1:
            alone += g
            continue
        XS = _stack([X_of(k) for k in g])
        XT = np.swapaxes(XS, -1, -2)
        G, v = XT @ XS, (XT @ _stack([y_of(k) for k in g])[..., None])[..., 0]
        got.update((k, (G[j], v[j])) for j, k in enumerate(g))

    def one(k: int) -> None:
        X = X_of(k)
        got[k] = (X.T @ X, X.T @ y_of(k))

    each(alone, out, one)
    return got


def _public_grams(splits: list[Split], ks: list[int], out: list, chunk: ChunkRows | None = None
                  ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """``_grams`` of the public rows of the splits ``ks``, kept in the chunk's scratch under the rows' names
    (``ChunkRows.rows``): the Matlab path's public rows of a drug are the same for every n_private of a fold
    (``datasets.gdsc``), so their products are computed once per fold, not once per size.  The products are kept
    read-only; a split whose products raise gets the exception in ``out[k]`` on every call."""
    def compute() -> tuple[dict[int, tuple[np.ndarray, np.ndarray]], dict[int, Exception]]:
        errors: dict[int, Exception] = {}
        got = _grams(list(range(len(ks))), lambda j: splits[ks[j]].X_public, lambda j: splits[ks[j]].y_public,
                     errors)   # type: ignore[arg-type]   (``each`` files errors by key)
        for G, v in got.values():
            G.flags.writeable = v.flags.writeable = False
        return got, errors

    got, errors = (compute() if chunk is None else
                   chunk.kept("gdsc.paper_public_grams", chunk.rows("public", ks), compute, maxsize=1))
    for j, exc in errors.items():
        out[ks[j]] = exc
    return {ks[j]: g for j, g in got.items()}


def _private_grams(splits: list[Split], ks: list[int], chunk: ChunkRows | None = None
                   ) -> dict[int, tuple[np.ndarray, np.ndarray] | Exception]:
    """Xᵀ X and Xᵀ y of the private rows of each split of ``ks`` that has any (or the exception they raise), keyed by
    split: what ``plr_paper`` and ``oplr_paper`` both compute on the Matlab path's splits, kept in the chunk's
    scratch under the rows' names (the two methods run on the same splits, one after the other), so the second
    takes the first's products (the same calls: the same floats)."""
    def compute() -> dict[int, tuple[np.ndarray, np.ndarray] | Exception]:
        got: dict[int, tuple[np.ndarray, np.ndarray] | Exception] = {}
        for j, k in enumerate(ks):
            Xv, yv = splits[k].X_private, splits[k].y_private
            try:
                if Xv.shape[0]:
                    got[j] = (Xv.T @ Xv, Xv.T @ yv)
            except Exception as exc:  # recorded per cell by the caller
                got[j] = exc
        return got

    got = compute() if chunk is None else chunk.kept("gdsc.paper_private_grams", chunk.rows("private", ks), compute,
                                                      maxsize=1)
    return {ks[j]: g for j, g in got.items()}


# ---------------------------------------------------------------------------------------------------------- plr
class _PLRPaperParams(Params):
    B_x: float = Field(1.0, gt=0, description="bound on |x_j| of the noise scale (the code: 1; x is not clipped)")
    B_y: float = Field(20.0, gt=0, description="bound on |y| of the noise scale (the code: 20; y is NOT clipped)")
    lam: float = Field(1.0, gt=0, description="ridge λ of the solve (the code: 1)")


#: the reason on every plr_paper row
PLR_REASON = "y not clipped to B_y (the authors' plr code): the noise does not cover every neighbour"


@register_algorithm
class PrivateLRPaper(_PaperLR):
    """Private LR without projection as the authors' Matlab code ran it (module docstring): y not clipped, so not
    DP; full d × d Laplace draw mirrored, λ = 1, direct solve."""

    name = "plr_paper"
    description = "private LR as the authors' Matlab code (y not clipped: not DP; paper protocol of Figs. 2/6)"
    guarantee_text = "not DP (y not clipped to B_y, the authors' code)"
    Params = _PLRPaperParams

    def _run_group(self, d, ks, splits, epsilon, ledgers, trials, out, chunk=None):
        p = self.params
        grams = _private_grams(splits, ks, chunk)

        def private(k: int) -> None:   # a split whose private products failed fails
            if isinstance(grams.get(k), Exception):
                raise grams[k]

        ks = each(ks, out, private)
        # the public lines' and (none when empty) the private lines' XᵀX, Xᵀy
        public = _public_grams(splits, ks, out, chunk)
        ks = [k for k in ks if k in public]
        if not ks:
            return
        stats = {k: public[k] + grams.get(k, ()) for k in ks}
        b_xx, b_xy = 2.0 * d * (d + 1) * p.B_x**2 / epsilon, 4.0 * d * p.B_x * p.B_y / epsilon
        rows = [j for j, k in enumerate(ks) if len(stats[k]) == 4]
        record_each((ledgers[k] for k in ks if len(stats[k]) == 2), lambda lg: lg.public_only())
        XX = repeat_trials(_stack([stats[k][0] for k in ks]), trials, axis=1)   # (splits, trials, d, d)
        Xy = repeat_trials(_stack([stats[k][1] for k in ks]), trials, axis=1)
        if rows:
            priv = [ks[j] for j in rows]
            # each split's draws through its own ledger, X'X's full d × d then X'y: one generator call per split,
            # the same floats and spends as two ``heuristic_laplace`` calls (tests/gdsc/test_batched_paths.py)
            U, V = heuristic_laplace_rows((np.zeros((len(priv), d, d)), np.zeros((len(priv), d))), (b_xx, b_xy),
                                          [ledgers[k] for k in priv], size=trials, reason=PLR_REASON,
                                          labels=("X'X", "X'y"))
            U = np.triu(U) + np.swapaxes(np.triu(U, 1), -1, -2)          # mirrored upper triangle
            if len(rows) == len(ks):   # every split (the usual case): in place, the same sums in the same order
                XX += _stack([stats[k][2] for k in priv])[:, None]
                XX += U
                Xy += _stack([stats[k][3] for k in priv])[:, None]
                Xy += V
            else:
                XX[rows] = XX[rows] + _stack([stats[k][2] for k in priv])[:, None] + U
                Xy[rows] = Xy[rows] + _stack([stats[k][3] for k in priv])[:, None] + V
        W = solve_stacked(_solve, XX + p.lam * np.eye(d), Xy)
        _outputs(ks, W, [splits[k].X_test for k in ks], ledgers, out)


# --------------------------------------------------------------------------------------------------------- oplr
class _OPLRPaperParams(Params):
    R: float = Field(1.0, gt=0, description="radius of the constraint ||w|| <= R and of the noise scale (the code: 1)")


#: the reason on every oplr_paper row
OPLR_REASON = ("direction a normalised Uniform[-1/2, 1/2]^D vector (not uniform) and y neither rescaled nor clipped "
               "(the authors' oplr code)")


@register_algorithm
class OutputPerturbationPaper(_PaperLR):
    """Output-perturbed LR as the authors' Matlab code ran it (module docstring): Σ res² + (λ/2)‖w‖² by minConf_PQN
    under the authors' "projection" (not the unit ball's), λ = √(D/(Nε)), Gamma(D, (12R+8)/(λNε)) norm in a cube-biased direction, y unscaled: not DP."""

    name = "oplr_paper"
    description = "output-perturbed LR as the authors' Matlab code (cube direction, y unscaled: not DP; paper protocol)"
    guarantee_text = "not DP (cube-biased direction, y neither rescaled nor clipped: the authors' code)"
    Params = _OPLRPaperParams

    def _run_group(self, d, ks, splits, epsilon, ledgers, trials, out, chunk=None):
        R = self.params.R
        pub = [k for k in ks if splits[k].X_private.shape[0] == 0]
        record_each((ledgers[k] for k in pub), lambda lg: lg.public_only())
        weights = _public_ridges(pub, {k: splits[k].X_public for k in pub}, {k: splits[k].y_public for k in pub},
                                 trials, out)
        stats: dict[int, tuple[Any, ...]] = {}
        grams = _private_grams(splits, ks, chunk)   # all of them: the key plr_paper's call on these splits kept

        def statistics(k: int) -> None:   # Σ res² + (λ/2)‖w‖², ‖w‖ ≤ R with λ = √(D/(Nε)) on the private lines
            g = grams.get(k)
            if isinstance(g, Exception):
                raise g
            N = splits[k].X_private.shape[0]
            # no private lines (a failed public fit): fails here, as before; math.sqrt is np.sqrt's float (both
            # correctly rounded) without a numpy scalar per split
            lam = math.sqrt(d / (N * epsilon))
            stats[k] = g + (lam / 2.0, (12.0 * R + 8.0) / (lam * N * epsilon))

        priv = each([k for k in ks if k not in weights], out, statistics)
        if priv:
            # the fits the chunk's pooled solve made for these problems (``_pooled_fits``), the others solved here
            pooled = _pooled_fits(chunk, d, epsilon, R)
            got: dict[int, Any] = {}
            if pooled:
                for k, name in zip(priv, chunk.rows("private", priv)):   # type: ignore[union-attr]
                    entry = pooled.get(name)
                    A, b, lam = stats[k][:3]
                    if (entry is not None and entry[2] == lam and np.array_equal(entry[0], A)
                            and np.array_equal(entry[1], b)):
                        got[k] = entry[3]
            rest = [k for k in priv if k not in got]
            if rest:
                got.update(zip(rest, solve_stacked(oplr_minconf, _stack([stats[k][0] for k in rest]),
                                                   _stack([stats[k][1] for k in rest]),
                                                   np.array([stats[k][2] for k in rest]), R)))
            good, fitted = [], []
            for k, w in ((k, got[k]) for k in priv):
                if isinstance(w, Exception):   # recorded per cell
                    weights[k] = w
                else:
                    good.append(k)
                    fitted.append(w)
            if good:   # the output noise, each split's through its own ledger (``heuristic_gamma_norm``'s draws)
                W = heuristic_gamma_norm_rows(_stack(fitted),
                                              [stats[k][3] for k in good], [ledgers[k] for k in good], size=trials,
                                              reason=OPLR_REASON, label="w")
                weights.update(zip(good, W))
        done = [k for k in ks if k in weights]
        _outputs(done, [weights[k] for k in done], [splits[k].X_test for k in done], ledgers, out)


def _pooled_fits(chunk: ChunkRows | None, d: int, epsilon: float, R: float) -> dict:
    """``oplr_paper``'s fits of this size and every later size of the chunk (``ChunkRows.others``) in one batched
    ``oplr_minconf`` call, made at the first call that fits any, kept in the chunk's scratch: {the private rows' name
    (``ChunkRows.rows``): (A, b, lam, w)} for every split of dimension ``d`` with private rows, with the problem as
    its call builds it (A = XᵀX, b = Xᵀy of the private rows, lam = λ/2, λ = √(D/(Nε))) and its fit w (or the
    exception it raised), read-only.  The fit is a pure function of (A, b, lam, R), and each problem's arithmetic
    in the solver does not depend on the others in its batch (``models.minconf``, Batching), so a call takes an
    entry where its own (A, b, lam) equal it (the same floats: the same splits, the same products) — nothing drawn
    is shared, each cell's noise is drawn at its own call.  Empty for a call without the runner's chunk."""
    if chunk is None or chunk.splits_of is None:
        return {}

    def compute() -> dict:
        names, As, bs, lams = [], [], [], []
        for _, rows, splits in chunk.others():
            for k, sp in enumerate(splits):
                if not isinstance(sp, Split) or sp.d != d or sp.X_private.shape[0] == 0:
                    continue
                try:
                    X, y = sp.X_private, sp.y_private
                    A, b = X.T @ X, X.T @ y
                    lam = math.sqrt(d / (X.shape[0] * epsilon))   # as ``statistics`` in ``_run_group``
                except Exception:   # left to its own call, which records it
                    continue
                names.append(rows.rows("private", [k])[0])
                As.append(A)
                bs.append(b)
                lams.append(lam / 2.0)
        if not names:
            return {}
        fits = solve_stacked(oplr_minconf, _stack(As), _stack(bs), np.array(lams), R)
        for a in As + bs + [w for w in fits if isinstance(w, np.ndarray)]:
            a.flags.writeable = False
        return {n: e for n, e in zip(names, zip(As, bs, lams, fits))}

    return chunk.kept("gdsc.oplr_paper_fits", (d, epsilon, R), compute)


# --------------------------------------------------------------------------------------------------------- fmlr
class _NoParams(Params):
    pass


#: the reason on every fmlr_paper row
FMLR_REASON = "min-max ranges of x and y from all lines, private ones included (the authors' fmlr code)"


def _minmax(A: np.ndarray, lo, hi, out: np.ndarray | None = None) -> np.ndarray:
    """A scaled to [−1, 1] by the ranges [lo, hi]: 2(A − lo)/(hi − lo) − 1 (a constant column maps to 0); written
    into ``out`` if given (which may be A itself)."""
    d = np.asarray(hi, dtype=float) - np.asarray(lo, dtype=float)
    if out is None:
        out = np.empty(np.shape(A))
    if np.all(d > 0):   # every range non-empty (the usual case): the same arithmetic without the masks, in place
        _by_column(np.subtract, A, lo, out)
        out *= 2.0
        _by_column(np.divide, out, d, out)
        out -= 1.0
        return out
    span = np.broadcast_to(d, np.shape(A))
    scaled = np.divide(2.0 * (A - lo), span, out=np.zeros(np.shape(A)), where=span > 0)
    np.copyto(out, np.where(span > 0, scaled - 1.0, 0.0))
    return out


def _by_column(ufunc: np.ufunc, A: np.ndarray, v: Any, out: np.ndarray, rows: int = 64) -> None:
    """``ufunc(A, v, out=out)`` for an (N, c) A and a (c,) v (one value per column): numpy's loop over a broadcast
    row of c (e.g. 10) entries costs more per entry than the arithmetic, so blocks of ``rows`` rows are seen as one
    row of rows·c entries against v tiled ``rows`` times — the same entry by entry (tests/gdsc/test_batched_paths.py).
    Any other shapes: the plain call."""
    v = np.asarray(v)
    if not (A.ndim == 2 and v.ndim == 1 and v.shape[0] == A.shape[1] and A.shape[0] >= rows
            and A.flags.c_contiguous and out.flags.c_contiguous and out.shape == A.shape):
        ufunc(A, v, out=out)
        return
    c = A.shape[1]
    q = A.shape[0] - A.shape[0] % rows
    ufunc(A[:q].reshape(-1, rows * c), np.tile(v, rows), out=out[:q].reshape(-1, rows * c))
    ufunc(A[q:], v, out=out[q:])


def raw_view(split: Split) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, float, float]:
    """fmlr's rows and ranges: the Matlab path's raw rows and all-line ranges (``meta['raw']``), else the split's
    own rows with their ranges over all its lines (private, public and test)."""
    raw = split.meta.get("raw")
    if raw is not None:
        return raw.X_private, raw.X_public, raw.X_test, raw.x_min, raw.x_max, raw.y_min, raw.y_max
    X = np.concatenate([split.X_private, split.X_public, split.X_test])
    y = np.concatenate([split.y_private, split.y_public, split.y_test])
    y = y[np.isfinite(y)]
    return (split.X_private, split.X_public, split.X_test, X.min(axis=0), X.max(axis=0),
            float(y.min()) if y.size else 0.0, float(y.max()) if y.size else 0.0)


@register_algorithm
class FunctionalMechanismPaper(_PaperLR):
    """Functional-mechanism LR as the authors' Matlab code ran it (module docstring): min–max scaling from all lines
    (not DP), bias column, Laplace (2D²+4D)/ε on the full objective, ridge 5√2·(2D²+4D)/ε, eigenvalues ≤ 1e-8
    dropped."""

    name = "fmlr_paper"
    description = "functional mechanism LR as the authors' Matlab code (ranges from all lines: not DP; paper protocol)"
    guarantee_text = "not DP (min-max ranges from all lines incl. private, the authors' code)"
    Params = _NoParams

    def _run_group(self, d, ks, splits, epsilon, ledgers, trials, out, chunk=None):
        views: dict[int, tuple[Any, ...]] = {}

        def view(k: int) -> None:
            v = views[k] = raw_view(splits[k])
            if not v[0].shape[1] == v[1].shape[1] == v[2].shape[1] == d:
                raise ValueError(f"fmlr_paper: the raw rows have {v[0].shape[1]}, {v[1].shape[1]}, {v[2].shape[1]} "
                                 f"columns, the split {d}")

        ks = each(ks, out, view)
        pub = [k for k in ks if views[k][0].shape[0] == 0]
        record_each((ledgers[k] for k in pub), lambda lg: lg.public_only())   # ridge λ = 1 on the raw public rows
        weights = _public_ridges(pub, {k: views[k][1] for k in pub}, {k: splits[k].y_public for k in pub}, trials,
                                 out)
        _outputs(list(weights), list(weights.values()), [views[k][2] for k in weights], ledgers, out)
        D = d + 1
        sens = fm_sensitivity_paper(D)
        priv = [k for k in ks if views[k][0].shape[0] > 0]
        if not priv:
            return
        record_each((ledgers[k] for k in priv), lambda lg: lg.not_dp(FMLR_REASON))
        # the whole objective, one Laplace release through each split's ledger (one generator call each)
        NM, NA = objective_noise_rows(D, trials, sens, epsilon, [ledgers[k] for k in priv])
        drawn = priv
        # min-max scaling of every split's private and test rows: prefixes of its drug's rows scaled once per fold
        # (``_scaled_prefixes``), any other split's in one call each (ranges repeated per row)
        Z, Zt, rest = _scaled_prefixes(priv, splits, views, chunk)
        lo, hi = [views[k][3] for k in rest], [views[k][4] for k in rest]
        Z.update(zip(rest, _scaled_rows([views[k][0] for k in rest], lo, hi)))
        Zt.update(zip(rest, _scaled_rows([views[k][2] for k in rest], lo, hi)))
        yz = dict(zip(priv, _scaled_rows([splits[k].y_private for k in priv], [views[k][5] for k in priv],
                                         [views[k][6] for k in priv], bias=False)))
        ZZ: dict[int, tuple[np.ndarray, np.ndarray]] = {}

        def objective(k: int) -> None:   # the coefficients Zᵀ Z and −2Zᵀy of the scaled private rows
            # −2·(Zᵀy): ×(−2) is exact, so this is (−2Zᵀ)y to the bit (the same product kernel on the same layout:
            # −2Zᵀ was a new array laid out as Zᵀ), without that (D, n) temporary
            Zk = Z[k]
            Zy = Zk.T @ yz[k]
            Zy *= -2.0
            ZZ[k] = (Zk.T @ Zk, Zy)

        priv = each(priv, out, objective)
        if not priv:
            return
        if len(priv) < len(drawn):   # the noise of the splits whose objective was computed (the rows, as drawn)
            at = {k: j for j, k in enumerate(drawn)}
            rows = [at[k] for k in priv]
            NM, NA = NM[rows], NA[rows]
        M = _stack([ZZ[k][0] for k in priv])[:, None] + NM
        a = _stack([ZZ[k][1] for k in priv])[:, None] + NA
        W = solve_stacked(trimmed_minimiser, M, a, 5.0 * np.sqrt(2.0) * sens / epsilon, FM_EIG_TOL)
        _outputs_back(priv, W, [Zt[k] for k in priv], [views[k][5] for k in priv], [views[k][6] for k in priv],
                      ledgers, out)


def _scaled_prefixes(ks: list[int], splits: list[Split], views: dict, chunk: ChunkRows | None
                     ) -> tuple[dict, dict, list[int]]:
    """``with_bias(_minmax(rows, x_min, x_max))`` of the private and test rows of the splits ``ks`` when the chunk's
    dataset has nested sizes (``ChunkRows.nested``), every split's raw rows carry the drug's whole rows along the
    fold, whose first rows they are (``RawRows.whole``; the Matlab path), and all share one range object (the
    path's x ranges over all lines): the drugs' whole rows scaled in one stacked call (``_scaled_rows``) once per
    chunk, kept in its scratch under the drugs' names, then the splits' prefix lengths taken — the scaling is
    element-wise, so a prefix of the scaled rows is the scaled prefix, to the bit.  Returns (private, test) keyed by
    split and the splits left to scale (all of them otherwise)."""
    wholes = [getattr(splits[k].meta.get("raw"), "whole", None) for k in ks]
    lo, hi = (views[ks[0]][3], views[ks[0]][4]) if ks else (None, None)
    if not ks or chunk is None or not chunk.nested or not all(
            w is not None and views[k][3] is lo and views[k][4] is hi for k, w in zip(ks, wholes)):
        return {}, {}, list(ks)
    parts = tuple(w.X_private for w in wholes) + tuple(w.X_test for w in wholes)
    scaled = chunk.kept("gdsc.fmlr_paper_scaled", tuple([(chunk.subsets[k], "raw") for k in ks]),
                        lambda: _read_only(_scaled_rows(list(parts), [lo] * len(parts), [hi] * len(parts))),
                        maxsize=2)
    S = len(ks)
    Z = {k: scaled[j][:views[k][0].shape[0]] for j, k in enumerate(ks)}
    Zt = {k: scaled[S + j][:views[k][2].shape[0]] for j, k in enumerate(ks)}
    return Z, Zt, []


def _read_only(arrays: list[np.ndarray]) -> list[np.ndarray]:
    for a in arrays:
        a.flags.writeable = False
    return arrays


def _scaled_rows(parts: list[np.ndarray], lo: list, hi: list, bias: bool = True) -> list[np.ndarray]:
    """``with_bias(_minmax(part, lo, hi))`` (or ``_minmax(part, lo, hi)``) of every part, computed in place on
    stacks of consecutive parts of about ``_CHUNK_ENTRIES`` entries (``_scaled_stack``; the element-wise steps of a
    stack then run on data in cache, and a part's rows are a contiguous slice of its stack as before)."""
    out: list[np.ndarray] = []
    i, entries = 0, 0
    for j, p in enumerate(parts):
        entries += np.size(p)
        if entries >= _CHUNK_ENTRIES or j == len(parts) - 1:
            out += _scaled_stack(parts[i:j + 1], lo[i:j + 1], hi[i:j + 1], bias)
            i, entries = j + 1, 0
    return out


#: entries of one stack of ``_scaled_rows`` (≈ 330 kB of floats, e.g. 4,096 rows of 10 columns or 40,960
#: responses: the four element-wise passes in cache, few stacks)
_CHUNK_ENTRIES = 40960


def _scaled_stack(parts: list[np.ndarray], lo: list, hi: list, bias: bool) -> list[np.ndarray]:
    """``_scaled_rows`` of some parts on one stack: each part's range repeated for its rows, unless all parts share
    one (the Matlab path's x ranges)."""
    shared = all(v is lo[0] for v in lo) and all(v is hi[0] for v in hi)
    if bias and shared and _with_bias_in_place(parts, lo[0], hi[0]):
        return _scaled_with_bias(parts, lo[0], hi[0])
    rows = Rows(parts)
    into = rows.stack if rows.stack.dtype == np.float64 else None
    if shared:
        Z = _minmax(rows.stack, lo[0], hi[0], out=into)
    else:
        Z = _minmax(rows.stack, rows.per_row(lo), rows.per_row(hi), out=into)
    return rows.split(with_bias(Z) if bias else Z)


def _with_bias_in_place(parts: list[np.ndarray], lo: Any, hi: Any) -> bool:
    """Whether ``_scaled_with_bias`` takes these parts: float rows of c columns and one range of c floats."""
    if not (type(lo) is np.ndarray and type(hi) is np.ndarray and lo.ndim == hi.ndim == 1
            and lo.shape == hi.shape and lo.dtype == hi.dtype == np.float64):
        return False
    c = lo.shape[0]
    return all(type(p) is np.ndarray and p.dtype == np.float64 and p.ndim == 2 and p.shape[1] == c for p in parts)


def _scaled_with_bias(parts: list[np.ndarray], lo: np.ndarray, hi: np.ndarray) -> list[np.ndarray]:
    """``with_bias(_minmax(stack, lo, hi))`` of the parts' stacked rows, the bias column scaled with them: the rows
    copied once into the columns 1… of an (N, c + 1) array whose column 0 is 1, then ``_minmax`` in place with
    the range [0, 1] put before the others — 2·(1 − 0)/1 − 1 = 1 exactly, and every other column gets the
    arithmetic it gets alone (element-wise, its range's hi − lo the same float) — so the same floats without
    ``with_bias``'s copy of the stack.  Each part's rows: a slice of the array."""
    counts = [len(p) for p in parts]
    Z = np.empty((sum(counts), lo.shape[0] + 1))
    Z[:, 0] = 1.0
    np.concatenate(parts, out=Z[:, 1:])
    _minmax(Z, np.concatenate(([0.0], lo)), np.concatenate(([1.0], hi)), out=Z)
    out, at = [], 0
    for n in counts:
        out.append(Z[at:at + n])
        at += n
    return out
