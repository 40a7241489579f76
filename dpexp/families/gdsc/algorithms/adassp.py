"""AdaSSP (Wang 2018, "Revisiting differentially private linear regression", Algorithm 2): sufficient-statistics
perturbation with a differentially private ridge — the strongest simple baseline for rplr (issue 15).

Release (``dpexp.models.adassp``, replace-one neighbours of the private rows; sensitivities derived in that module's
docstring with ‖x‖₂ ≤ B_X, |y| ≤ B_Y, each attained): a private lower bound on λ_min(XᵀX) (Δ = B_X², Weyl), XᵀX on
its d(d+1)/2 unique entries (Δ₂ = √2 B_X² (B_X² at d = 1); Δ₁ = c_d B_X², the exact sign-pattern value c_d = 1,
√5, 2.87, …, 5.68 for d ≤ 7 and a proven bound beyond (8.00 at d = 10), or d(d+1)B_x²/2 with ``clip:
coordinate``) and Xᵀy (Δ₂ = 2B_XB_Y, Δ₁ = 2√d B_XB_Y), each at a third of the statistics' budget; the ridge
max(0, s_xx√(d log(2d²/ρ)) − λ̃_min) and θ̂ = (XᵀX + N + λI)⁻¹(Xᵀy + N) are post-processing.  AdaSSP is "ours"
(no paper protocol in this project), so these tight values are its only calibration.

Noise (``noise``): ``laplace`` (default) — pure ε-DP with the L1 sensitivities, so its curve sits on the same ε axis
as rplr, narplr and the other GDSC methods (all pure ε); ``gaussian`` — Wang's mechanism, (ε, δ)-DP with the L2
sensitivities and the analytic Gaussian calibration at (ε/3, δ/3) each, which needs the cell's δ > 0 and is a
weaker guarantee than the pure-ε curves beside it.

Bounds: rplr's interface — B = ω·σ with σ_x, σ_y from ``sigma: dp`` (default: released at ``sigma_share``·ε, per
trial) or ``sigma: data`` (the paper's protocol, not DP).  ``clip: norm`` (default, Wang's bound) projects every row
onto ‖x‖₂ ≤ B_X = ω_x σ_x √d (σ_x √d is the RMS row norm, so ω_x = 1 keeps unit-norm rows as they are);
``clip: coordinate`` clips every coordinate at B_x = ω_x σ_x as rplr does (then ‖x‖₂ ≤ B_X = √d B_x).  y is clipped
at B_Y = ω_y σ_y.  The predictions are θ̂ at the test rows clipped the same way (the fit's domain: a θ̂ fitted to rows
clipped to a small B_X grows like B_Y/B_X, and at unclipped rows it extrapolates — predictions off by 10¹⁰ when a
noisy σ̂ collapses to its floor at small n·ε; for unit-norm rows, as GDSC's, clipping scales every test row alike
and leaves their ranking unchanged).  The public rows, clipped the same way, are added to the released statistics exactly, and the
ridge credits their smallest eigenvalue (Weyl: λ_min(A + P) ≥ λ_min(A) + λ_min(P)).  Without private rows nothing
is released: the Gamma-prior posterior mean of the public rows (as rplr).

Defaults ``clip: norm``, ω_x = 1, ω_y = 0.5: chosen on held-out Eq. (10) data (the paper's auxiliary-data model,
d = 10, n = 100 and 500; docs/noise_aware.md §8), never on GDSC: norm clipping beat coordinate clipping at every
ω_x tried, ω_x does not matter for unit-norm rows (norm clipping only rescales them), Spearman is flat in
ω_y ∈ [0.1, 0.5] and drops beyond (0.81 at 0.5, 0.76 at 2, n = 500, ε = 2).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field

from dpexp.audit.plan import AuditPlan
from dpexp.chunk import ChunkRows
from dpexp.components import BatchedAlgorithm
from dpexp.errors import UserError
from dpexp.families.gdsc.algorithms.rplr import SIGMA_DATA_REASON, SigmaParams
from dpexp.families.gdsc.audit import adassp_releases, clipped_statistics
from dpexp.families.gdsc.blocks import row_norms
from dpexp.families.gdsc.model import public_posterior, public_posteriors
from dpexp.families.gdsc.release_batch import RowBlocks, finite_rows, release_sigmas, shared_rows
from dpexp.models import adassp as core
from dpexp.models.vb import VBResult
from dpexp.privacy.ledger import as_ledger
from dpexp.privacy.mechanisms import standard_laplace_rows
from dpexp.registry import register_algorithm
from dpexp.types import Output, Split


class _AdaSSPParams(SigmaParams):
    noise: Literal["laplace", "gaussian"] = "laplace"
    """laplace: pure epsilon-DP (L1 sensitivities; comparable with rplr); gaussian: Wang's (epsilon, delta)-DP mechanism
    with the analytic calibration (needs delta > 0)"""
    clip: Literal["norm", "coordinate"] = "norm"
    """project rows onto ||x|| <= omega_x sigma_x sqrt(d) (Wang) or clip every coordinate at omega_x sigma_x (rplr)"""
    omega_x: float = Field(1.0, gt=0)
    """B_X = omega_x sigma_x sqrt(d) (norm) or B_x = omega_x sigma_x (coordinate)"""
    omega_y: float = Field(0.5, gt=0, description="B_Y = omega_y sigma_y")
    rho: float = Field(0.05, gt=0, lt=1, description="failure probability of the eigenvalue bound and the ridge")
    public: bool = Field(True, description="add the clipped public rows' statistics to the release (exact)")


@register_algorithm
class AdaSSP(BatchedAlgorithm):
    """AdaSSP (Wang 2018, Alg. 2) on rplr's clipping interface: DP λ_min, adaptive ridge, perturbed XᵀX and Xᵀy
    (module docstring).  ``noise: laplace`` (default) is pure ε-DP under replace-one neighbours; ``noise: gaussian``
    (ε, δ)-DP; ``sigma: data`` (σ from the data, the paper's protocol) is not DP."""

    name = "adassp"
    family = "gdsc"
    # view: the three raw releases (and DP σ̂), not the ridge estimate that mixes them (docs/audit.md)
    audit = AuditPlan(design=clipped_statistics, view=adassp_releases, params={"omega_x": 1.0, "omega_y": 1.0})
    description = "AdaSSP (Wang 2018): perturbed sufficient statistics with a DP-chosen ridge"
    neighbouring = "replace-one"
    guarantee_text = ("pure ε-DP, replace-one (σ̂ released at sigma_share·ε, per trial); "
                      "noise: gaussian → (ε, δ)-DP (analytic Gaussian, δ/3 per release); "
                      "sigma: data → not DP (clipping σ from private rows, the paper's protocol)")
    Params = _AdaSSPParams

    def _B(self, d: int, sx, sy):
        """(row-norm bound B_X, coordinate bound B_x, B_Y) from σ_x, σ_y (floats or (trials,) arrays)."""
        p = self.params
        if p.clip == "norm":
            B_X = p.omega_x * sx * math.sqrt(d)
            return B_X, B_X, p.omega_y * sy
        B_x = p.omega_x * sx
        return B_x * math.sqrt(d), B_x, p.omega_y * sy

    def _box(self, B_x):
        """The coordinate bound the rows also satisfy (``clip: coordinate``), for the exact XᵀX L1 sensitivity of
        the box (``models.adassp.sensitivities``); None with ``clip: norm``."""
        return B_x if self.params.clip == "coordinate" else None

    def bounds(self, split: Split, epsilon: float | None = None) -> tuple[float, float]:
        """(B_x, B_y) with the data σ of ``split.meta``: a box containing every clipped row (the audit design)."""
        _, B_x, B_Y = self._B(split.d, float(split.meta["sigma_x"]), float(split.meta["sigma_y"]))
        return float(B_x), float(B_Y)

    @staticmethod
    def _public_only(split: Split, ledger, trials: int, res: VBResult | Exception | None = None) -> Output:
        """``run`` without private rows: nothing released, the public rows' Gamma-prior posterior mean (``res``: its
        ``public_posteriors`` value or error; None: ``public_posterior``)."""
        ledger.public_only()
        if res is None:
            res = public_posterior(split.X_public, split.y_public)
        elif isinstance(res, Exception):
            raise res
        w = np.broadcast_to(res.mean, (trials, split.d))
        return Output(predictions=w @ split.X_test.T, coef=w.copy(), guarantee=ledger.guarantee())

    # ------------------------------------------------------------------------------------------- many splits
    def run_many(self, splits: list[Split], epsilon: float, delta: float, ledgers: list,
                 trials: int = 1, chunk: ChunkRows | None = None) -> list[Output | Exception]:
        """Every split through its own ledger; a single split is a batch of one.  The splits with private rows are
        released and fitted as arrays per d (``_run_group``, either noise): each cell's standard draws in one call
        per kind (σ̂_x, σ̂_y: Laplace; λ_min, XᵀX, Xᵀy: Laplace or normal), scaled and recorded per release
        (``privacy.mechanisms.laplace_rows`` / ``gaussian_rows``).  Without private rows: the public-only
        posterior."""
        ledgers = [as_ledger(lg) for lg in ledgers]
        T = int(trials)
        out: list[Output | Exception | None] = [None] * len(splits)
        if not (math.isfinite(epsilon) and epsilon > 0):
            return [UserError(f"adassp: epsilon must be > 0 and finite, got {epsilon}") for _ in splits]
        bad = None
        if self.params.noise == "gaussian" and not 0 < delta < 1:   # the private cells' one line; public-only fits
            bad = UserError(f"adassp noise: gaussian needs the cell's delta in (0, 1), got {delta}")
        groups: dict[int, list[int]] = {}
        for k, s in enumerate(splits):
            if s.X_private.shape[0] > 0:
                if bad is not None:
                    out[k] = bad
                else:
                    groups.setdefault(s.d, []).append(k)
        for ks in groups.values():
            got: list[Output | Exception | None] = [None] * len(ks)
            try:
                self._run_group([splits[k] for k in ks], epsilon, delta, [ledgers[k] for k in ks], T, got,
                                () if chunk is None else chunk.rows("private", ks), chunk)
            except Exception as exc:  # the error of the group's cells not yet filled
                got = [exc if o is None or o is _RELEASED else o for o in got]
            for k, o in zip(ks, got):
                out[k] = RuntimeError("adassp: a released cell was not filled") if o is None or o is _RELEASED else o
        pub = [k for k, o in enumerate(out) if o is None and splits[k].X_private.shape[0] == 0]
        for k, res in zip(pub, public_posteriors([splits[k].X_public for k in pub], [splits[k].y_public for k in pub])):
            try:   # the public-only path, the posteriors fitted together
                out[k] = self._public_only(splits[k], ledgers[k], T, res)
            except Exception as exc:  # recorded per cell
                out[k] = exc
        return out  # type: ignore[return-value]

    def _run_group(self, ss: list[Split], epsilon: float, delta: float, lgs: list, T: int, out: list,
                   names: tuple = (), chunk: ChunkRows | None = None) -> None:
        """The splits ``ss`` of equal d, all with private rows, into ``out`` (S Nones):
        ``_RELEASED`` for a split once the group draws for it, then its ``Output`` or error.  A split set aside before
        any draw (rows not finite; ``sigma: data`` bounds that fail the checks) gets its one-line error.  The private
        rows are concatenated once, group by group of equal n (``_Blocked``): the finiteness check, the σ sums and
        the clipped products read that one array, shared in ``chunk`` under the private rows' ``names``."""
        p = self.params
        d = ss[0].d
        rows = _Blocked([s.X_private for s in ss], [s.y_private for s in ss], chunk, names)
        keep = rows.finite()
        if p.public:
            keep &= finite_rows([s.X_public for s in ss], [s.y_public for s in ss])
        for i in np.flatnonzero(~keep).tolist():
            out[i] = UserError("adassp: the rows of this split are not all finite")
        eps = epsilon * (1.0 - p.sigma_share) if p.sigma == "dp" else epsilon
        dl = delta if p.noise == "gaussian" else 0.0
        if p.sigma == "data":
            sx = np.array([float(s.meta["sigma_x"]) for s in ss])[:, None]
            sy = np.array([float(s.meta["sigma_y"]) for s in ss])[:, None]
            ok = self._good_bounds(d, sx, sy, eps, dl)
            for i in np.flatnonzero(keep & ~ok).tolist():
                out[i] = _bounds_error(d, *self._B(d, sx[i], sy[i])[::2])
            keep &= ok
        else:
            sh = p.sigma_share * epsilon / 2.0
            bx, by = p.sigma_bound_x, p.sigma_bound_y
            if not all(math.isfinite(v) for v in (bx, by, d * bx * bx / sh, by * by / sh)):
                raise UserError(f"adassp: sigma_bound_x = {bx}, sigma_bound_y = {by} give σ̂ sensitivities that are "
                                "not finite")
        idx = np.flatnonzero(keep)
        if idx.size == 0:
            return
        for i in idx.tolist():   # from here on these cells' ledgers are used: an error is theirs, not run's
            out[i] = _RELEASED
        if idx.size < len(ss):
            ss, lgs = [ss[i] for i in idx], [lgs[i] for i in idx]
            rows = _Blocked([s.X_private for s in ss], [s.y_private for s in ss])
        k = core.draws_per_cell(d, T)
        lap = p.noise == "laplace"   # Laplace: the σ̂ and statistics draws of a cell in one call
        if p.sigma == "dp":
            sums = rows.sigma_sums(bx, by)
            L = standard_laplace_rows(lgs, 2 * T + (k if lap else 0))
            sx, sy = release_sigmas(sums, rows.counts, d, bx, by, sh, L[:, :2 * T], lgs)
            L = L[:, 2 * T:] if lap else None
        else:
            sx, sy = sx[idx], sy[idx]
            for lg in lgs:
                lg.not_dp(SIGMA_DATA_REASON)
            L = standard_laplace_rows(lgs, k) if lap else None
        B_X, B_x, B_Y = self._B(d, sx, sy)
        good = np.ones(len(ss), dtype=bool)
        if p.sigma == "dp":   # bounds drawn: a split whose release would fail gets its one-line error
            good = self._good_bounds(d, sx, sy, eps, dl)
            for i in np.flatnonzero(~good):
                out[idx[i]] = _bounds_error(d, B_X[i], B_Y[i])
        g = np.flatnonzero(good)
        if g.size == 0:
            return
        if g.size < len(ss):
            ss, lgs = [ss[i] for i in g], [lgs[i] for i in g]
            L = None if L is None else L[g]
            sx, sy, B_X, B_x, B_Y = sx[g], sy[g], B_X[g], B_x[g], B_Y[g]
            rows = _Blocked([s.X_private for s in ss], [s.y_private for s in ss])
        cal = core.calibrate(d, B_X, B_Y, eps, dl, p.noise, B_box=self._box(B_x))
        if L is None:   # Gaussian: each cell's normal draws, after its σ̂ (if any)
            L = core.standard_rows(cal, lgs, d, T)
        XX, Xy = self._clip_products(rows, B_X, B_x, B_Y, T)
        try:
            lm, XXn, Xyn = core.release_rows(XX, Xy, cal, L, lgs)
        except np.linalg.LinAlgError:   # a split whose λ_min fails: run's error for it, the others released
            ok = []
            for i in range(len(ss)):
                try:
                    np.linalg.eigvalsh(0.5 * (XX[i] + np.swapaxes(XX[i], -1, -2)))
                    ok.append(i)
                except np.linalg.LinAlgError as exc:
                    out[idx[g[i]]] = exc
            if not ok:
                return
            okr = np.array(ok)
            sub = lambda a: a[okr]  # noqa: E731
            ss, lgs, L, XX, Xy = [ss[i] for i in ok], [lgs[i] for i in ok], L[okr], XX[okr], Xy[okr]
            sx, sy, B_X, B_x, B_Y = sub(sx), sub(sy), sub(B_X), sub(B_x), sub(B_Y)
            cal = core.calibrate(d, B_X, B_Y, eps, dl, p.noise, B_box=self._box(B_x))
            g = g[okr]
            lm, XXn, Xyn = core.release_rows(XX, Xy, cal, L, lgs)
        lam_t = core.private_lambda_min(lm, cal, p.rho)
        if p.public:
            pub = [i for i, s in enumerate(ss) if s.X_public.shape[0]]
            if pub:
                prow = _Blocked([ss[i].X_public for i in pub], [ss[i].y_public for i in pub])
                XXp, Xyp = self._clip_products(prow, B_X[pub], B_x[pub], B_Y[pub], T)
                XXn[pub] = XXn[pub] + XXp
                Xyn[pub] = Xyn[pub] + Xyp
                lam_t[pub] = lam_t[pub] + np.linalg.eigvalsh(XXp)[..., 0]
        ridge = core.adaptive_ridge(lam_t, d, cal, p.rho)
        W = core.estimate_many(XXn, Xyn, ridge)
        cols = [ridge, lam_t, B_X, B_Y] + ([sx, sy] if p.sigma == "dp" else [])
        means = np.stack([c.mean(axis=1) for c in cols], axis=1).tolist()
        names = ["ridge", "lambda_min_private", "B_X", "B_Y"] + (["sigma_x_dp", "sigma_y_dp"] if p.sigma == "dp"
                                                                   else [])
        # predictions at the test rows clipped as the fitted rows were (the model's domain, ‖x‖ ≤ B_X or the box):
        # θ̂ of rows clipped to a small B_X grows like B_Y/B_X, and at unclipped rows that is an extrapolation
        for j, (s, lg) in enumerate(zip(ss, lgs)):
            w = W[j]
            Xt = s.X_test[None]
            if p.clip == "norm":
                Xt = Xt * np.minimum(1.0, B_X[j][:, None] / np.maximum(np.linalg.norm(Xt, axis=-1), 1e-300))[..., None]
            else:
                Xt = np.clip(Xt, -B_x[j][:, None, None], B_x[j][:, None, None])
            pred = np.einsum("td,tnd->tn", np.broadcast_to(w, (T, d)), np.broadcast_to(Xt, (T,) + s.X_test.shape))
            out[idx[g[j]]] = Output(predictions=pred, coef=w, extras=dict(zip(names, means[j])),
                                    guarantee=lg.guarantee())

    def _good_bounds(self, d: int, sx: np.ndarray, sy: np.ndarray, eps: float, delta: float) -> np.ndarray:
        """(S,) bool: the bounds from σ (S, T) are > 0 and every sensitivity and scale of ``core.calibrate`` at
        (ε, δ) finite — else the split fails with a one-line error before its statistics are released."""
        with np.errstate(over="ignore", invalid="ignore"):
            B_X, B_x, B_Y = self._B(d, sx, sy)
            ok = (B_X > 0) & (B_Y > 0)
            # calibrate refuses bounds <= 0: the others' scales computed with those replaced by 1
            box = self._box(np.where(ok, B_x, 1.0 / math.sqrt(d)))
            cal = core.calibrate(d, np.where(ok, B_X, 1.0), np.where(ok, B_Y, 1.0), eps, delta, self.params.noise,
                                 B_box=box)
            parts = [ok] + [np.isfinite(v) for v in cal.sens + (cal.scale_min, cal.scale_xx, cal.scale_xy)]
        return np.all(np.logical_and.reduce(parts), axis=1)

    def _clip_products(self, rows: "_Blocked", B_X: np.ndarray, B_x: np.ndarray, B_Y: np.ndarray, T: int
                       ) -> tuple[np.ndarray, np.ndarray]:
        """XᵀX (S, T, d, d) and Xᵀy (S, T, d) of every split's rows (``rows``) clipped at its bounds (S, T) or
        (S, 1) — ``clip: norm`` projects each row onto ‖x‖₂ ≤ B_X, ``clip: coordinate`` clips each entry at B_x, y is
        clipped at B_Y — in one stacked clip, then the products of the splits of equal n as one stacked matmul and
        einsum over C-contiguous (G, T, n, d) rows (the per-split reference: tests/gdsc/adassp_oracle.py)."""
        X, y, rep = rows.X, rows.y, rows.per_row    # rep: (T or 1, N), each row's bound
        if self.params.clip == "norm":
            norms = row_norms(X)
            Xc = X[None] * np.minimum(1.0, rep(B_X) / np.maximum(norms, 1e-300))[..., None]
        else:
            b = rep(B_x)[..., None]
            Xc = np.clip(np.broadcast_to(X, (T,) + X.shape), -b, b)
        bY = rep(B_Y)
        yc = np.clip(np.broadcast_to(y, (T,) + y.shape), -bY, bY)
        S, d = rows.counts.size, X.shape[1]
        XX, Xy = np.empty((S, T, d, d)), np.empty((S, T, d))
        one = T == 1 and Xc.shape[0] == 1 and yc.shape[0] == 1
        for n, members, a in rows.blocks:
            G = len(members)
            if one:   # (1, G·n, d) rows: the group's (G, 1, n, d) stack is a reshape of its block
                Xg, yg = Xc[0, a:a + G * n].reshape(G, 1, n, d), yc[0, a:a + G * n].reshape(G, 1, n)
            else:
                Xg = np.broadcast_to(Xc[:, a:a + G * n], (T, G * n, d)).reshape(T, G, n, d).transpose(1, 0, 2, 3)
                yg = np.broadcast_to(yc[:, a:a + G * n], (T, G * n)).reshape(T, G, n).transpose(1, 0, 2)
                Xg, yg = np.ascontiguousarray(Xg), np.ascontiguousarray(yg)
            XX[members] = np.swapaxes(Xg, -1, -2) @ Xg
            Xy[members] = np.einsum("stnd,stn->std", Xg, yg)
        return XX, Xy


class _Blocked:
    """The rows of S splits (``Xs[i]`` (n_i, d), ``ys[i]``) concatenated once, group by group of equal n in order
    of first appearance (``release_batch.RowBlocks``, the layout of ``release_batch.block_order``): a group's rows
    are then one block, and stacking them a reshape.  ``X`` (N, d), ``y`` (N,), ``blocks`` [(n, members, first
    row)], ``counts`` (S,) the splits' n in their own order.  ``names`` given: the layout, its finiteness and σ
    sums those of ``release_batch.shared_rows`` in ``chunk`` (the private rows rplr and narplr lay out too:
    computed once for all)."""

    def __init__(self, Xs: list[np.ndarray], ys: list[np.ndarray], chunk: ChunkRows | None = None,
                 names: tuple | None = None) -> None:
        self._Xs, self._ys = Xs, ys
        self._rows = rows = RowBlocks(Xs, ys) if names is None else shared_rows(Xs, ys, chunk, names)
        self.counts = rows.counts.astype(np.intp, copy=False)
        self.blocks, self.order, self.X, self.y = rows.blocks, rows.order, rows.X, rows.y

    def finite(self) -> np.ndarray:
        """(S,) bool: each split's rows all finite (``release_batch.finite_rows``); one sum over all rows when that
        is finite (a non-finite entry makes it NaN or ±inf; a finite overflow only sends the check to the rows)."""
        return self._rows.kept("finite", self._finite).copy()   # a fresh array (the caller narrows it in place)

    def _finite(self) -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore"):
            if math.isfinite(float(self.X.sum())) and math.isfinite(float(self.y.sum())):
                return np.ones(self.counts.size, dtype=bool)
        return finite_rows(self._Xs, self._ys)

    def per_row(self, B: np.ndarray) -> np.ndarray:
        """Each row's value of the per-split array B (S, T) or (S, 1), in the blocks' row order: (T or 1, N)."""
        return np.repeat(B[self.order], self.counts[self.order], axis=0).T

    def sigma_sums(self, bx: float, by: float) -> np.ndarray:
        """``release_batch.sigma_sums`` of the splits (S, 2) from these rows (``RowBlocks.sigma_sums``: the same
        rows in the same layout, so the same row-wise reductions: equal to the bit)."""
        return self._rows.sigma_sums(bx, by)


#: a cell of ``_run_group`` whose draws have begun (its ``Output`` or error not yet known)
_RELEASED = object()


def _bounds_error(d: int, B_X: np.ndarray, B_Y: np.ndarray) -> Exception:
    """The one-line error of a split whose bounds fail ``_good_bounds`` (B_X or B_Y not > 0, or a sensitivity or
    scale not finite)."""
    return UserError(f"adassp: the clipping bounds B_X = {np.asarray(B_X).tolist()}, B_Y = {np.asarray(B_Y).tolist()} "
                     f"(d = {d}) must be > 0 and give finite sensitivities")
