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
* ``oplr_paper``: private lines only; λ = √(D/(Nε)); w = argmin Σ(xᵢᵀw − yᵢ)² + (λ/2)‖w‖² subject to ‖w‖₂² ≤ 1;
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

from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import Field

from dpexp.components import BatchedAlgorithm, Params
from dpexp.families.gdsc.algorithms.functional_mechanism import fm_sensitivity, trimmed_minimiser, with_bias
from dpexp.families.gdsc.algorithms.output_perturbation import ball_constrained_ridge
from dpexp.privacy.mechanisms import heuristic_gamma_norm, heuristic_laplace, laplace
from dpexp.registry import register_algorithm
from dpexp.types import Output, Split

#: eigenvalues at or below this are dropped by the authors' fmlr
FM_EIG_TOL = 1e-8


def public_ridge(X: np.ndarray, y: np.ndarray, lam: float = 1.0) -> np.ndarray:
    """(λI + XᵀX)⁻¹Xᵀy: the Matlab scripts' fit on the public lines when there are no private ones."""
    return np.linalg.solve(lam * np.eye(X.shape[1]) + X.T @ X, X.T @ y)


class _PaperLR(BatchedAlgorithm):
    """What the three share: GDSC family, replace-one relation of the methods they implement, not DP as run.

    A split's work is in two steps so that a chunk's fits run as one batched call: ``prepare`` draws the split's
    noise through its own ledger (in the order of the authors' code) and returns a ``_Fit`` — the batched solver
    and its per-split arguments, or the weights themselves — and ``finish`` turns the solver's weights into the
    released ones (oplr_paper draws its output noise there).  The batched solvers (``np.linalg.solve``,
    ``ball_constrained_ridge``, ``trimmed_minimiser``) treat every problem on its own, so the weights equal the
    per-split fits' to the bit."""

    family = "gdsc"
    formally_dp = False
    neighbouring = "replace-one"

    def prepare(self, split: Split, epsilon: float, ledger, trials: int) -> "_Fit":
        raise NotImplementedError

    def finish(self, w: np.ndarray, fit: "_Fit", ledger, trials: int) -> np.ndarray:
        return w

    def fit(self, split: Split, epsilon: float, ledger, trials: int) -> tuple[np.ndarray, np.ndarray, Any]:
        """(weights (trials, d'), test design (n_test, d'), map of the predictions to response units) of a split."""
        f = self.prepare(split, epsilon, ledger, trials)
        w = f.weights if f.solver is None else f.solver(*f.args)
        return self.finish(w, f, ledger, trials), f.X_test, f.back

    def run_many(self, splits: list[Split], epsilon: float, delta: float, ledgers: list,
                 trials: int = 1) -> list[Output | Exception]:
        # each split's noise through its own ledger (``each_split``: ε checked once, failures per split)
        prepared = self.each_split(splits, epsilon, ledgers,
                                   lambda split, ledger: (ledger, self.prepare(split, epsilon, ledger, trials)))
        fits = {k: p[1] for k, p in enumerate(prepared) if not isinstance(p, Exception)}
        weights = _solve_all(fits)
        out: list[Output | Exception] = []
        for k, p in enumerate(prepared):
            if isinstance(p, Exception):
                out.append(p)
                continue
            ledger, f = p
            try:
                w = weights[k]
                if isinstance(w, Exception):
                    raise w
                w = self.finish(w, f, ledger, trials)
                out.append(Output(predictions=f.back(w @ f.X_test.T), coef=w, guarantee=ledger.guarantee()))
            except Exception as exc:  # recorded per cell
                out.append(exc)
        return out


@dataclass
class _Fit:
    """One split's fit: ``solver(*args)`` (batched over leading axes, or None when ``weights`` are already known),
    the test design, the map of predictions to response units, and what ``finish`` needs (``extra``)."""

    solver: Any
    args: tuple[Any, ...]
    X_test: np.ndarray
    back: Any
    weights: np.ndarray | None = None
    extra: Any = None


def _solve_all(fits: dict[int, _Fit]) -> dict[int, np.ndarray | Exception]:
    """Every fit's weights: the fits of one solver whose arguments have equal shapes (and equal non-array
    arguments) stacked into one batched call; a batch that raises is solved problem by problem, so an error stays
    with its split."""
    got: dict[int, np.ndarray | Exception] = {}
    groups: dict[tuple[Any, ...], list[int]] = {}
    for k, f in fits.items():
        if f.solver is None:
            got[k] = f.weights
            continue
        sig = tuple((np.shape(a), None) if isinstance(a, np.ndarray) else (None, a) for a in f.args)
        groups.setdefault((f.solver, sig), []).append(k)
    for (solver, sig), ks in groups.items():
        try:
            args = [np.stack([fits[k].args[i] for k in ks]) if shape is not None else value
                    for i, (shape, value) in enumerate(sig)]
            W = solver(*args)
            for j, k in enumerate(ks):
                got[k] = W[j]
        except Exception:
            for k in ks:
                try:
                    got[k] = solver(*fits[k].args)
                except Exception as exc:
                    got[k] = exc
    return got


def _solve(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(…, d) solution of A w = b (…, d, d), (…, d)."""
    return np.linalg.solve(A, b[..., None])[..., 0]


def _identity(p: np.ndarray) -> np.ndarray:
    return p


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

    def prepare(self, split: Split, epsilon: float, ledger, trials: int) -> _Fit:
        p = self.params
        d = split.d
        XX = split.X_public.T @ split.X_public
        Xy = split.X_public.T @ split.y_public
        XX, Xy = np.broadcast_to(XX, (trials, d, d)).copy(), np.broadcast_to(Xy, (trials, d)).copy()
        Xv, yv = split.X_private, split.y_private
        if Xv.shape[0] == 0:
            ledger.public_only()
        else:
            U = heuristic_laplace(np.zeros((d, d)), 2.0 * d * (d + 1) * p.B_x**2 / epsilon, ledger, size=trials,
                                  reason=PLR_REASON, label="X'X")
            U = np.triu(U) + np.swapaxes(np.triu(U, 1), -1, -2)          # mirrored upper triangle
            V = heuristic_laplace(np.zeros(d), 4.0 * d * p.B_x * p.B_y / epsilon, ledger, size=trials,
                                  reason=PLR_REASON, label="X'y")
            XX = XX + Xv.T @ Xv + U
            Xy = Xy + Xv.T @ yv + V
        return _Fit(_solve, (XX + p.lam * np.eye(d), Xy), split.X_test, _identity)


# --------------------------------------------------------------------------------------------------------- oplr
class _OPLRPaperParams(Params):
    R: float = Field(1.0, gt=0, description="radius of the constraint ||w|| <= R and of the noise scale (the code: 1)")


#: the reason on every oplr_paper row
OPLR_REASON = ("direction a normalised Uniform[-1/2, 1/2]^D vector (not uniform) and y neither rescaled nor clipped "
               "(the authors' oplr code)")


@register_algorithm
class OutputPerturbationPaper(_PaperLR):
    """Output-perturbed LR as the authors' Matlab code ran it (module docstring): Σ res² + (λ/2)‖w‖² in the unit
    ball, λ = √(D/(Nε)), Gamma(D, (12R+8)/(λNε)) norm in a cube-biased direction, y unscaled: not DP."""

    name = "oplr_paper"
    description = "output-perturbed LR as the authors' Matlab code (cube direction, y unscaled: not DP; paper protocol)"
    guarantee_text = "not DP (cube-biased direction, y neither rescaled nor clipped: the authors' code)"
    Params = _OPLRPaperParams

    def prepare(self, split: Split, epsilon: float, ledger, trials: int) -> _Fit:
        d = split.d
        Xv, yv = split.X_private, split.y_private
        N = Xv.shape[0]
        if N == 0:
            ledger.public_only()
            w = public_ridge(split.X_public, split.y_public)
            return _Fit(None, (), split.X_test, _identity, weights=np.broadcast_to(w, (trials, d)).copy())
        R = self.params.R
        lam = float(np.sqrt(d / (N * epsilon)))
        # Σ res² + (λ/2)‖w‖², ‖w‖ ≤ R; the noise is drawn on the fit (``finish``)
        return _Fit(ball_constrained_ridge, (Xv.T @ Xv, Xv.T @ yv, np.asarray(lam / 2.0), R), split.X_test,
                    _identity, extra=(12.0 * R + 8.0) / (lam * N * epsilon))

    def finish(self, w: np.ndarray, fit: _Fit, ledger, trials: int) -> np.ndarray:
        if fit.extra is None:
            return w
        return heuristic_gamma_norm(w, fit.extra, ledger, size=trials, reason=OPLR_REASON, label="w")


# --------------------------------------------------------------------------------------------------------- fmlr
class _NoParams(Params):
    pass


#: the reason on every fmlr_paper row
FMLR_REASON = "min-max ranges of x and y from all lines, private ones included (the authors' fmlr code)"


def _minmax(A: np.ndarray, lo, hi) -> np.ndarray:
    """A scaled to [−1, 1] by the ranges [lo, hi]: 2(A − lo)/(hi − lo) − 1 (a constant column maps to 0)."""
    d = np.asarray(hi, dtype=float) - np.asarray(lo, dtype=float)
    if np.all(d > 0):   # every range non-empty (the usual case): the same arithmetic without the masks
        return 2.0 * (A - lo) / d - 1.0
    span = np.broadcast_to(d, np.shape(A))
    out = np.divide(2.0 * (A - lo), span, out=np.zeros(np.shape(A)), where=span > 0)
    return np.where(span > 0, out - 1.0, 0.0)


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

    def prepare(self, split: Split, epsilon: float, ledger, trials: int) -> _Fit:
        Xv, Xu, Xt, lo, hi, ylo, yhi = raw_view(split)
        d = Xt.shape[1]
        if Xv.shape[0] == 0:   # ridge λ = 1 on the raw public rows (the row normalisation is off)
            ledger.public_only()
            w = public_ridge(Xu, split.y_public)
            return _Fit(None, (), Xt, _identity, weights=np.broadcast_to(w, (trials, d)).copy())
        ledger.not_dp(FMLR_REASON)
        Z = with_bias(_minmax(Xv, lo, hi))
        yz = _minmax(split.y_private, ylo, yhi)
        D = d + 1
        sens = fm_sensitivity(D)
        dM, da = laplace((np.zeros((D, D)), np.zeros(D)), sens, epsilon, ledger, size=trials, label="objective")
        M = Z.T @ Z + dM
        a = -2.0 * Z.T @ yz + da
        scale = 0.5 * (yhi - ylo)

        def back(pred: np.ndarray) -> np.ndarray:   # scaled predictions back to response units (monotone)
            return (pred + 1.0) * scale + ylo

        return _Fit(trimmed_minimiser, (M, a, 5.0 * np.sqrt(2.0) * sens / epsilon, FM_EIG_TOL),
                    with_bias(_minmax(Xt, lo, hi)), back)
