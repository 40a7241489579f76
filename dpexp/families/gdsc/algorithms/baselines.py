"""Non-private reference lines of Honkela et al. 2018, Fig. 2/6 (thesis Figs 4.5/4.6) and Fig. 3.

* ``lr_public``: Bayesian LR trained on the *public rows only* (fixed precisions λ = λ0 = 1 by default, as the
  thesis' baselines; ``prior: gamma`` uses the Gamma(2, 2) VB engine).  With ``d`` set, the public and test rows are
  taken from the dataset's view of the same split with ``d`` genes (``split.meta['view']``, GDSC), which draws the
  d = 64 baseline of Fig. 2 beside the d = 10 methods.  It ignores the private rows, so its value does not depend on
  ``n_private``: plots draw it as a horizontal line.
* ``rlr``: non-private robust LR — the same clipping as ``rplr`` (same thresholds, tuned the same way) on the
  private rows (and the public rows with ``clip_public``), exact statistics, no noise (thesis §3.8.1 "non-private
  version with clipping"; the authors' code: the rplr script with the noise switched off).  ``tune_epsilon`` should
  be the ε of the private method it accompanies, so both use the same tuned ω.

Neither is private (``private = False``): they release nothing under DP and spend no budget.  ``lr_public``
touches no private row: its guarantee is 0-DP on the private rows (``ledger.public_only``), subject to the
dataset's preprocessing statement (e.g. GDSC centring over all lines, noted on every row); ``rlr`` reads the private
rows without noise: guarantee ``none``.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field

from dpexp import cache
from dpexp.chunk import ChunkRows, context
from dpexp.components import BatchedAlgorithm, Params, Reference
from dpexp.errors import UserError
from dpexp.families.gdsc.batching import Rows, each, groups, record_each, repeat_trials
from dpexp.families.gdsc.algorithms.rplr import RobustPrivateLR
from dpexp.families.gdsc.model import exact_gamma_weights
from dpexp.families.gdsc.train_rows import shared_train_rows
from dpexp.privacy.guarantee import Spend
from dpexp.privacy.ledger import as_ledger
from dpexp.registry import register_algorithm
from dpexp.types import Output, Split


def _fit(XX: np.ndarray, Xy: np.ndarray, yy: np.ndarray | None, n: np.ndarray | None, prior: str, lam: float,
         lam0: float) -> np.ndarray:
    if prior == "fixed":
        # exact (non-noisy) statistics: XX is PSD, so λ0 I + λ XX is positive definite — a plain solve suffices
        prec = lam0 * np.eye(XX.shape[-1]) + lam * XX
        return np.linalg.solve(prec, lam * Xy[..., None])[..., 0]
    from dpexp.models.vb import posterior_mean_gamma

    return posterior_mean_gamma(XX, Xy, yy, n)


class _PublicParams(Params):
    d: int | None = Field(None, ge=1, description="genes used (None: the split's d; else the dataset's view)")
    prior: Literal["fixed", "gamma"] = Field("fixed", description="fixed precisions or Gamma(2,2) priors (VB)")
    lam: float = Field(1.0, gt=0, description="noise precision lambda (prior: fixed)")
    lam0: float = Field(1.0, gt=0, description="weight precision lambda0 (prior: fixed)")


@register_algorithm
class PublicOnlyLR(Reference, BatchedAlgorithm):
    """Non-private Bayesian LR on the public rows only (the horizontal baselines of Fig. 2; Fig. 3's reference)."""

    name = "lr_public"
    family = "gdsc"
    description = "non-private Bayesian LR on the public rows only (baseline; optional other d via the view)"
    guarantee_text = "0-DP on the private rows (public rows only, subject to the dataset's preprocessing statement)"
    Params = _PublicParams

    def _rows(self, split: Split) -> tuple[np.ndarray, np.ndarray]:
        d = self.params.d
        if d is None or d == split.d:
            return split.X_public, split.X_test
        view = split.meta.get("view")
        if view is None:
            raise UserError(f"lr_public: params.d={d} differs from the data's d={split.d} and the dataset offers "
                            "no view with another d (only gdsc does)")
        return view(d)

    def run_many(self, splits: list[Split], epsilon: float, delta: float, ledgers: list,
                 trials: int = 1, chunk: ChunkRows | None = None) -> list[Output | Exception]:
        """Every split's fit of its public rows, one batched solve per d.  ``prior: fixed``: the weights are a pure
        function of the public rows and responses (and λ, λ0), the same for every size of the grid (a run's
        ``run_many`` calls of one chunk hold the same drugs at each n_private): memoised by their bytes, so a
        drug's public fit is solved once per chunk (each problem of a batched solve is solved on its own: the
        same floats as in any batch).  The weights and test predictions are also kept in the chunk's scratch under
        the names of the public and test rows (``ChunkRows.rows``: with a dataset of nested sizes, the same at every
        size of the chunk with those rows), found without hashing the rows' bytes or taking the view's rows."""
        p = self.params
        chunk = context(chunk, splits)
        every = range(len(splits))
        names = list(zip(chunk.rows("public", every), chunk.rows("test", every)))
        ledgers = [as_ledger(lg) for lg in ledgers]
        out: list[Output | Exception] = [UserError("not run")] * len(splits)
        rows: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        W: dict[int, np.ndarray] = {}
        keys: dict[int, tuple] = {}
        known: dict[int, tuple[np.ndarray, np.ndarray]] = {}   # (weights, predictions) kept by the arrays
        fit_key = (float(p.lam), float(p.lam0), p.d)

        def take(k: int) -> None:   # the public and test rows (of the view with d genes), the public responses
            if p.prior == "fixed":
                try:
                    known[k] = chunk.kept(_NS_OBJ, (*names[k], fit_key), _not_memoised, maxsize=_MAXSIZE)
                    W[k] = known[k][0]
                    return
                except _NotMemoised:
                    pass
            Xu, Xt = self._rows(splits[k])
            yu = splits[k].y_public
            rows[k] = (Xu, yu, Xt)
            if p.prior == "fixed":
                keys[k] = _public_key(Xu, yu, p.lam, p.lam0)
                try:
                    W[k] = cache.memo(_NS, keys[k], _not_memoised, maxsize=_MAXSIZE)
                except _NotMemoised:
                    pass

        ks = each(range(len(splits)), out, take)
        stats: dict[int, tuple[np.ndarray, ...]] = {}

        def statistics(k: int) -> None:   # the public rows' XᵀX (zeros when there are none), Xᵀy, y'y, n
            Xu, yu, _ = rows[k]
            stats[k] = (Xu.T @ Xu, Xu.T @ yu, yu, float(Xu.shape[0]))

        fit = each([k for k in ks if k not in W], out, statistics)
        for group in groups(fit, lambda k: stats[k][0].shape[-1]).values():
            XX, Xy = np.stack([stats[k][0] for k in group]), np.stack([stats[k][1] for k in group])
            if p.prior == "fixed":   # y'y and n enter the Gamma-prior fit only
                yy = n = None
            else:
                yy = np.array([float(stats[k][2] @ stats[k][2]) for k in group])
                n = np.array([stats[k][3] for k in group])
            try:
                Wg = _fit(XX, Xy, yy, n, p.prior, p.lam, p.lam0)
            except Exception as exc:  # recorded for each cell of the group
                for k in group:
                    out[k] = exc
                continue
            for k, w in zip(group, Wg):
                if p.prior == "fixed":
                    w.setflags(write=False)   # shared by the cells of this drug at every size
                    w = cache.memo(_NS, keys[k], lambda w=w: w, maxsize=_MAXSIZE)
                W[k] = w
        done = [k for k in ks if k in W]
        record_each((ledgers[k] for k in done), lambda lg: lg.public_only("public rows only"))
        for k in done:
            got = known.get(k)
            if got is None:
                Xu, yu, Xt = rows[k]
                got = W[k], Xt @ W[k]
                if p.prior == "fixed":   # the same floats for the drug's later sizes (read-only: shared)
                    got[1].setflags(write=False)
                    got = chunk.kept(_NS_OBJ, (*names[k], fit_key), lambda got=got: got, maxsize=_MAXSIZE)
            w, pred = got
            out[k] = Output(predictions=repeat_trials(pred, trials), coef=repeat_trials(w, trials),
                            guarantee=ledgers[k].guarantee())
        return out


#: the memo of lr_public's fixed-precision weights (``PublicOnlyLR.run_many``): namespace and bound (a chunk's drugs)
_NS, _MAXSIZE = "gdsc.lr_public_weights", 1024
#: the chunk's scratch entry of its weights and test predictions by the names of the public and test rows
_NS_OBJ = "gdsc.lr_public_fits"


class _NotMemoised(Exception):
    """Raised by ``_not_memoised``: a look-up of the memo that must not compute (the weights are fitted in a
    batch, then stored)."""


def _not_memoised() -> np.ndarray:
    raise _NotMemoised


def _public_key(Xu: np.ndarray, yu: np.ndarray, lam: float, lam0: float) -> tuple:
    """The memo key of a fixed-precision fit: λ, λ0 and the public rows' and responses' shapes, dtypes and bytes
    (exact: equal keys are equal inputs)."""
    Xu, yu = np.asarray(Xu), np.asarray(yu)
    return (float(lam), float(lam0), Xu.shape, Xu.dtype.str, Xu.tobytes(), yu.shape, yu.dtype.str, yu.tobytes())


# ----------------------------------------------------------------------------------------------------------------
# rlr: non-private with the same clipping as rplr
# ----------------------------------------------------------------------------------------------------------------
def _clip_parts(A: np.ndarray, counts: list[int], bounds: list[float]) -> None:
    """Clip, in place, the consecutive row blocks of ``A`` (``counts[i]`` rows each) to [−bounds[i], bounds[i]]:
    neighbouring blocks of one bound in one call (e.g. all splits of the paper path, whose σ is pooled), an
    infinite bound left alone (clip(x, −∞, ∞) is x)."""
    start = 0
    i, n = 0, len(counts)
    while i < n:
        b, stop = bounds[i], start + counts[i]
        i += 1
        while i < n and bounds[i] == b:   # NaN bounds are never equal: clipped block by block, as np.clip would
            stop += counts[i]
            i += 1
        if b != np.inf and stop > start:
            np.clip(A[start:stop], -b, b, out=A[start:stop])
        start = stop


class _RLRParams(RobustPrivateLR.Params):  # type: ignore[misc, valid-type]
    tune_epsilon: float = Field(2.0, gt=0)
    """epsilon at which rplr's thresholds are chosen (no noise is added; rlr is non-private)"""


@register_algorithm
class RobustLR(Reference):
    """Non-private robust LR: clip the private rows exactly as ``rplr`` with the same parameters would (thresholds
    B = ω·σ, tuned for ``tune_epsilon`` when rplr tunes them), add the public rows, fit the same model from the
    exact statistics — no noise (thesis §3.8.1, the "non-private version with clipping")."""

    name = "rlr"
    family = "gdsc"
    description = "non-private LR with rplr's clipping, no noise (reference for the cost of the projection)"
    Params = _RLRParams

    def _bounds(self, ref: RobustPrivateLR, split: Split) -> tuple[float, float]:
        """(B_x, B_y): the thresholds rplr would use here (``ref.bounds``, stats.Clipping), ∞ where it tunes none."""
        B_x, B_y = ref.bounds(split, epsilon=self.params.tune_epsilon)
        if not (np.isfinite(B_x) and np.isfinite(B_y)):   # rplr tunes nothing without private rows: no clipping
            B_x = B_y = np.inf
        return B_x, B_y

    def _clipped(self, ref: RobustPrivateLR, split: Split) -> tuple[np.ndarray, np.ndarray, float, float]:
        """The public rows plus the private rows clipped at the thresholds rplr would use here, and (B_x, B_y): one
        split's rows as ``run_many`` clips them for all its splits at once (the reference of its tests)."""
        B_x, B_y = self._bounds(ref, split)
        Xc, yc = np.clip(split.X_private, -B_x, B_x), np.clip(split.y_private, -B_y, B_y)
        Xu, yu = split.X_public, split.y_public
        if ref.params.clip_public:   # as rplr with clip_public (the authors' code): the same bounds on public lines
            Xu, yu = np.clip(Xu, -B_x, B_x), np.clip(yu, -B_y, B_y)
        return np.concatenate([Xu, Xc]), np.concatenate([yu, yc]), B_x, B_y

    @staticmethod
    def _block_stats(splits: list[Split], group: list[int], bounds: dict, clip_public: bool,
                     chunk: ChunkRows | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """``run_many``'s statistics of a group from its rows laid out with splits of equal n adjacent — the
        layout lr's statistics use on the same splits (``train_rows.shared_train_rows``) — clipped into a copy as
        ``run_many`` clips them, and their products one stacked call per n (each split's summed as by its own
        calls: the same floats); (XX, Xy, yy, n), or None (rows not float64, or y parts not as long as the X parts:
        the split-by-split path)."""
        train = shared_train_rows([(splits[k].X_public, splits[k].X_private) for k in group],
                                  [(splits[k].y_public, splits[k].y_private) for k in group], chunk, group)
        if not train.floats:
            return None
        order = [group[i] for i in train.rows.order.tolist()]
        # each split's public part at its bounds (none without clip_public), then its private part
        bx, by = ([b for k in order for b in (bounds[k][j] if clip_public else np.inf, bounds[k][j])] for j in (0, 1))
        Xc, yc = train.clipped(bx, by)
        return (*train.rows.stats(Xc, yc), train.rows.counts.astype(float))

    @staticmethod
    def _row_stats(splits: list[Split], group: list[int], bounds: dict, clip_public: bool
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``_block_stats`` split by split (any rows): public then private rows of every split stacked, clipped in
        place at their split's bounds (none for public rows without clip_public: the same element-wise clip as
        split by split), each split's products its own calls."""
        X = Rows([(splits[k].X_public, splits[k].X_private) for k in group])
        y = Rows([(splits[k].y_public, splits[k].y_private) for k in group])
        for j, rows in ((0, X), (1, y)):
            if rows.stack.dtype != np.float64:   # clipped values are floats (as np.clip's result)
                rows.stack = rows.stack.astype(np.float64)
            parts = ((splits[k].X_public, splits[k].X_private) if j == 0 else
                     (splits[k].y_public, splits[k].y_private) for k in group)
            _clip_parts(rows.stack, [len(a) for pair in parts for a in pair],
                        [b for k in group for b in (bounds[k][j] if clip_public else np.inf, bounds[k][j])])
        Xs, ys = X.split(X.stack), y.split(y.stack)
        XX = np.stack([Xk.T @ Xk for Xk in Xs])
        Xy = np.stack([Xk.T @ yk for Xk, yk in zip(Xs, ys)])
        yy = np.array([yk @ yk for yk in ys])
        return XX, Xy, yy, np.array([float(len(yk)) for yk in ys])

    def run(self, split: Split, epsilon: float, delta: float, ledger, trials: int = 1) -> Output:
        out = self.run_many([split], epsilon, delta, [ledger], trials)[0]
        if isinstance(out, Exception):
            raise out
        return out

    def run_many(self, splits: list[Split], epsilon: float, delta: float, ledgers: list,
                 trials: int = 1, chunk: ChunkRows | None = None) -> list[Output | Exception]:
        """Clip the rows of all splits of equal d in one call (each row at its split's thresholds: ``_clipped``
        split by split), then fit them in one batched call (the model of ``_fit``)."""
        ledgers = [as_ledger(lg) for lg in ledgers]
        not_dp = Spend("not DP", "none", note="non-private baseline")   # what ``ledger.not_dp`` records (immutable)
        for lg in ledgers:
            lg.record(not_dp)
        kw = self.params.model_dump(exclude={"tune_epsilon"}, exclude_unset=True)
        ref = RobustPrivateLR(**kw)
        clip_public = ref.params.clip_public
        out: list[Output | Exception] = [UserError("not run")] * len(splits)
        bounds: dict[int, tuple[float, float]] = {}
        omegas: dict[tuple[int, int], tuple[float, float]] = {}

        tune_n, eps_t, nd = ref._tune_n, self.params.tune_epsilon, np.ndarray
        ks = []
        for k, s in enumerate(splits):   # each split's thresholds; one that raises fails alone (``each``)
            try:
                # rplr's bounds are B = ω·σ with ω a function of (the n it tunes for, d): ω asked once per such key,
                # as ref.bounds of the split with σ = 1 (exactly ω), then times the split's σ — ref.bounds' product
                Xu, Xv = s.X_public, s.X_private
                if not (type(Xu) is nd and type(Xv) is nd and Xu.ndim == Xv.ndim == 2 and Xu.shape[1] == Xv.shape[1]
                        and Xu.dtype == Xv.dtype):
                    np.concatenate([Xu[:0], Xv[:0]])   # the columns must agree (else this split fails alone)
                key = (tune_n(s), s.d)
                w = omegas.get(key)
                if w is None:
                    unit = Split(s.X_private, s.y_private, s.X_public, s.y_public, s.X_test, s.y_test,
                                 {**s.meta, "sigma_x": 1.0, "sigma_y": 1.0})
                    w = omegas[key] = ref.bounds(unit, epsilon=eps_t)
                meta = s.meta
                B_x, B_y = w[0] * meta["sigma_x"], w[1] * meta["sigma_y"]
                if not (math.isfinite(B_x) and math.isfinite(B_y)):   # rplr tunes nothing without private rows
                    B_x = B_y = np.inf                                  # there: no clipping
            except Exception as exc:  # recorded per cell
                out[k] = exc
                continue
            bounds[k] = B_x, B_y
            ks.append(k)
        for d, group in groups(ks, lambda k: splits[k].X_private.shape[1]).items():
            try:
                XX, Xy, yy, n = (self._block_stats(splits, group, bounds, clip_public, chunk)
                                 or self._row_stats(splits, group, bounds, clip_public))
                if ref.params.prior == "gamma" and all(bounds[k][0] == bounds[k][1] == np.inf for k in group):
                    W = exact_gamma_weights(XX, Xy, yy, n)   # nothing clipped: lr's statistics (its fit memoised)
                else:
                    W = _fit(XX, Xy, yy, n, ref.params.prior, ref.params.lam, ref.params.lam0)
            except Exception as exc:   # recorded for the cells of the group (counted in the manifest)
                for k in group:
                    out[k] = exc
                continue
            for k, w in zip(group, W):
                B_x, B_y = bounds[k]
                out[k] = Output(predictions=repeat_trials(splits[k].X_test @ w, trials), coef=repeat_trials(w, trials),
                                extras={"B_x": float(B_x) if math.isfinite(B_x) else float("nan"),
                                        "B_y": float(B_y) if math.isfinite(B_y) else float("nan")},
                                guarantee=ledgers[k].guarantee())
        return out
