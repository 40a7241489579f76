"""The releases of the clipped-statistics methods (rplr and the methods built on its release, plr), array-first:
written once over the splits of a call, a single split being a batch of one.

Neighbouring relation and sensitivities: those of ``stats`` (replace-one; XᵀX Δ₁ = d(d+1)B_x²/2 under the
``tight`` rule, d(d+1)B_x² under the ``paper`` rule of Methods 4.2; Xᵀy 2dB_xB_y, yᵀy B_y²) and of ``rplr._dp_sigmas`` (Σ clip(x)² Δ₁ = dB², Σ clip(y)² Δ₁ = B²).  Each split keeps its own
ledger and noise stream: its standard Laplace draws are one call (``privacy.mechanisms.standard_laplace_rows``) in
the order σ_x, σ_y, XᵀX, Xᵀy, yᵀy, and each release is recorded in its ledger (``privacy.mechanisms.laplace_rows``).
Reductions over a split's rows are stacked matmul/einsum calls over the splits of equal n (the rows laid out group
by group: ``RowBlocks``).  ``stats.clip`` and ``stats.sensitivities`` are looked up at call time (the audit's
mutants patch them there).  A plain per-split reference of rplr's release is the test oracle
tests/gdsc/rplr_reference.py (rtol 1e-12).

Set-up shared between methods: the deterministic functions of the rows that several methods compute — the private
rows' layout, σ sums and clipped statistics at bounds of the data σ (``shared_rows``: rplr, narplr, AdaSSP, and
the later sizes of a chunk that read the same private rows), the public rows' exact statistics
(``shared_sufficient_stats``) — are kept in the chunk's scratch (``dpexp.chunk.ChunkRows``) under the names of
the rows they read, read-only; nothing drawn or released is kept (docs/extending.md, Caches).  The training
rows' layout and statistics of lr and rlr: ``dpexp.families.gdsc.train_rows``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Hashable

import numpy as np

from dpexp.chunk import ChunkRows
from dpexp.families.gdsc import stats as gdsc_stats   # clip, sensitivities, triu_indices: looked up at call time
from dpexp.families.gdsc.blocks import Blocks as Layout
from dpexp.families.gdsc.stats import sufficient_stats, triu_indices
from dpexp.errors import UserError
from dpexp.privacy.mechanisms import laplace_rows, standard_laplace_rows




_NONE = object()   # ``RowBlocks.kept``'s "not computed yet" (a kept value may be None)


@dataclass
class GroupRelease:
    """The private part of rplr's release for S splits of equal d, T trials: noisy XX (S, T, d, d), Xy (S, T, d),
    yy (S, T); bounds and σ (S, T) per trial (``sigma: dp``) or (S,) (``sigma: data``)."""

    XX: np.ndarray
    Xy: np.ndarray
    yy: np.ndarray
    B_x: np.ndarray
    B_y: np.ndarray
    sigma_x: np.ndarray
    sigma_y: np.ndarray
    #: split index -> its one-line error (its statistics' rows in the arrays are then meaningless): the σ̂ drawn
    #: per trial gave sensitivities that are not finite
    failed: dict[int, Exception]


def _offsets(arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate([[0], np.cumsum([a.shape[0] for a in arrays])])


def release_group(Xs: list[np.ndarray], ys: list[np.ndarray], d: int, trials: int, ledgers: list[Any],
                  sp: np.ndarray, eps: float, w: np.ndarray, sigma: tuple | None, sensitivity: str = "tight",
                  chunk: ChunkRows | None = None, names: tuple = ()) -> GroupRelease:
    """Release the private statistics of S splits (rows ``Xs[i]`` (n_i, d) with n_i ≥ 1, ``ys[i]``), split i at the
    budget shares ``sp[i]`` = (p1, p2, p3) of ``eps`` and thresholds ``w[i]`` = (ω_x, ω_y).

    ``sigma``: ``("dp", bound_x, bound_y, eps_sigma)`` — σ̂_x, σ̂_y released per trial as ``rplr._dp_sigmas`` does
    (each at ``eps_sigma``), floored at 1e-12 as ``clip_sigmas``; or ``("data", sx, sy)`` with (S,) arrays of the
    data σ (no release here: the caller records 'not DP').  The caller guarantees finite positive bounds and, for
    ``data``, finite sensitivities.  With ``dp`` the bounds are known only after the σ̂ draws: a split whose
    sensitivities are not finite fails alone (``failed``; its σ̂ spends recorded), the others are released.
    ``sensitivity``: the rule of ``stats.sensitivities`` (``tight`` ours, ``paper`` the paper protocol).
    ``chunk``, ``names``: where the rows' layout is shared (``shared_rows``)."""
    S, T = len(Xs), int(trials)
    m = d * (d + 1) // 2
    per_trial = sigma[0] == "dp"
    # the rows (and with σ̂ their σ sums) shared with the other calls of these splits in the chunk: the other
    # methods (rplr ours and fixed, narplr, AdaSSP, plr) and the other budgets of a grid of ε (a layout is a pure
    # function of the rows: laid out once for every ε of a size, not once per ε)
    rows = shared_rows(Xs, ys, chunk, names)
    if per_trial:
        _, bx, by, eps_s = sigma
        sums = rows.sigma_sums(bx, by)
    L = standard_laplace_rows(ledgers, (2 * T if per_trial else 0) + T * (m + d + 1))
    j = 0
    if per_trial:
        sx, sy = release_sigmas(sums, rows.counts, d, bx, by, eps_s, L[:, :2 * T], ledgers)
        j = 2 * T
    else:
        sx, sy = sigma[1], sigma[2]
    B_x = w[:, :1] * sx if per_trial else w[:, 0] * sx
    B_y = w[:, 1:] * sy if per_trial else w[:, 1] * sy
    if per_trial:
        XX, Xy, yy = rows.clipped_stats(B_x, B_y, per_trial, T)
    else:   # bounds of the data σ, not drawn: a pure function of the rows and the bounds, kept for the later sizes
        # of the chunk that clip the same rows at the same bounds (a grid of n_public × n_private; ``shared_rows``)
        XX, Xy, yy = rows.kept(("clipped_stats", B_x.tobytes(), B_y.tobytes()),
                               lambda: tuple(map(_read_only, rows.clipped_stats(B_x, B_y, False, T))))
    s_xx, s_xy, s_yy = gdsc_stats.sensitivities(d, B_x, B_y, sensitivity)   # looked up at call time (mutants)
    e = sp * eps
    failed: dict[int, Exception] = {}
    if per_trial:   # σ̂ drawn (its spends recorded): a split whose sensitivities are not finite fails alone
        with np.errstate(invalid="ignore"):
            good = np.all(np.isfinite(s_xx) & np.isfinite(s_xy) & np.isfinite(s_yy), axis=1)
        for i in np.flatnonzero(~good).tolist():
            failed[i] = UserError(f"rplr: the DP sigma estimates give clipping bounds B_x = {B_x[i].tolist()}, "
                                  f"B_y = {B_y[i].tolist()} whose sensitivities are not finite (non-finite private "
                                  "rows, or an overflow)")
    gi = np.flatnonzero([i not in failed for i in range(S)])
    rel = (lambda a: a[gi]) if failed else (lambda a: a)   # noqa: E731  (the others' releases only)
    lgs = [ledgers[i] for i in gi.tolist()] if failed else ledgers

    def scatter(a: np.ndarray) -> np.ndarray:   # the released cells' rows in an (S, …) array (zeros elsewhere)
        if not failed:
            return a
        full = np.zeros((S,) + a.shape[1:])
        full[gi] = a
        return full

    G = gi.size
    iu = triu_indices(d)
    Ng = np.zeros((G, T, d, d))
    Ng[..., iu[0], iu[1]] = laplace_rows(np.zeros((G, T, m)), rel(L[:, j:j + T * m]).reshape(G, T, m), rel(s_xx),
                                         rel(e[:, 0]), lgs, "X'X")
    N = scatter(Ng)
    j += T * m
    N_xx = N + np.swapaxes(N, -1, -2) - N * np.eye(d)
    N_xy = scatter(laplace_rows(np.zeros((G, T, d)), rel(L[:, j:j + T * d]).reshape(G, T, d), rel(s_xy),
                                rel(e[:, 1]), lgs, "X'y"))
    j += T * d
    XXn = (XX[:, None] if XX.ndim == 3 else XX) + N_xx
    Xyn = (Xy[:, None] if Xy.ndim == 2 else Xy) + N_xy
    yyv = np.broadcast_to(yy[:, None], (S, T)) if yy.ndim == 1 else yy
    yyn = scatter(laplace_rows(rel(yyv), rel(L[:, j:j + T]), rel(s_yy), rel(e[:, 2]), lgs, "y'y"))
    return GroupRelease(XXn, Xyn, yyn, B_x, B_y, sx, sy, failed)


def clipped_stats_many(Xs: list[np.ndarray], ys: list[np.ndarray], B_x: np.ndarray, B_y: np.ndarray, trials: int
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The clipped (XᵀX, Xᵀy, yᵀy) of S row sets at their bounds (S,) or per trial (S, T), stacked."""
    return RowBlocks(Xs, ys).clipped_stats(B_x, B_y, B_x.ndim == 2, int(trials))


class RowBlocks:
    """The rows of S splits laid out group by group of equal n (``blocks.Blocks``, the one such layout of the
    family, in ``equal_n``'s order), with their clipping and statistics: one concatenation, after
    which a group's rows are one contiguous block (G·n rows from ``start``), so that stacking a group's rows is a
    reshape of that block rather than a gather.  ``counts`` (S,) the splits' n, in their own order.  A split's
    rows may be given as a tuple of arrays whose rows follow each other (e.g. its public then private rows,
    ``Split.X_train``); ``part_rows`` the rows of every part in the layout's order."""

    def __init__(self, Xs: list, ys: list) -> None:
        self.counts = np.array([sum(a.shape[0] for a in X) if isinstance(X, tuple) else X.shape[0] for X in Xs])
        lay = Layout(self.counts.tolist())
        self.blocks = lay.blocks                              # [(n, members, first row of the block)]
        self.order = np.array(lay.order, dtype=np.intp)
        self.part_rows = [a.shape[0] for i in lay.order for a in (Xs[i] if isinstance(Xs[i], tuple) else (Xs[i],))]
        self.X, self.y = lay.cat(Xs), lay.cat(ys)
        self.S = len(Xs)
        #: the rows' statistics kept for later callers (``shared_rows``' instances only; None: computed per call)
        self._known: dict | None = None

    def kept(self, name: Hashable, compute: Callable[[], Any]) -> Any:
        """``compute()``, a pure function of these rows: kept under ``name`` for the later callers of a shared
        instance (``shared_rows``; an array kept read-only), computed per call otherwise."""
        if self._known is None:
            return compute()
        got = self._known.get(name, _NONE)
        if got is _NONE:
            got = self._known[name] = compute()
            if isinstance(got, np.ndarray):
                _read_only(got)
        return got

    def _per_row(self, B: np.ndarray) -> np.ndarray:
        """Each row's value of the per-split array B (S,) or (S, T), in the blocks' row order: (N,) or (N, T)."""
        return np.repeat(B[self.order], self.counts[self.order], axis=0)

    #: mean rows per split from which ``_clipped_rows`` clips split by split (scalar bounds: numpy's fast clip
    #: loop) rather than in one call with per-row bounds (a broadcast clip, ~3x slower per element)
    CLIP_SPLITWISE_ROWS = 256

    def _splitwise(self, B_x: np.ndarray, B_y: np.ndarray) -> bool:
        """Clip split by split at bounds (S, T) (``_clipped_rows``): long splits, float64 rows, finite bounds."""
        S, T = B_x.shape
        return (self.X.shape[0] >= self.CLIP_SPLITWISE_ROWS * max(S, 1) * T
                and self.X.dtype == self.y.dtype == np.float64
                and bool(np.all(np.isfinite(B_x))) and bool(np.all(np.isfinite(B_y))))

    def _clipped_rows(self, B_x: np.ndarray, B_y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The rows clipped at their split's bounds B_x, B_y (S, T): X (T, N, d), y (T, N) in the blocks' row
        order — ``np.clip(X[None], -b, b)`` with b each row's bound.  Clipping is exact (a min and a max), so
        clipping each split's rows with its bounds as Python floats gives the same floats as the one broadcast
        call; done so when the splits are long, the rows float64 (a float32 array would be clipped in float32) and
        the bounds finite (else the broadcast call)."""
        S, T = B_x.shape
        N = self.X.shape[0]
        if self._splitwise(B_x, B_y):
            Xc, yc = np.empty((T,) + self.X.shape), np.empty((T, N))
            X, y = self.X, self.y
            stops = np.cumsum(self.counts[self.order]).tolist()
            bxs, bys = B_x[self.order].tolist(), B_y[self.order].tolist()
            a = 0
            for b, bx, by in zip(stops, bxs, bys):
                if b > a:
                    for t in range(T):
                        np.clip(X[a:b], -bx[t], bx[t], out=Xc[t, a:b])
                        np.clip(y[a:b], -by[t], by[t], out=yc[t, a:b])
                a = b
            return Xc, yc
        rb = self._per_row(B_x).T[:, :, None]                               # (T, N, 1)
        ry = self._per_row(B_y).T                                           # (T, N)
        return np.clip(self.X[None], -rb, rb), np.clip(self.y[None], -ry, ry)

    def sigma_sums(self, bx: float, by: float) -> np.ndarray:
        """``sigma_sums`` of the splits (S, 2), each sum the per-split ``float(np.sum(...))``: numpy's pairwise sum
        over the split's entries, one row-wise reduction per group (a reshape of its block; equal to the bit).
        A pure function of the rows and the public bounds: computed once per (bx, by) and kept (read-only), so the
        methods sharing these rows (``shared_rows``: rplr, narplr, AdaSSP) sum them once."""
        return self.kept(("sigma_sums", bx, by), lambda: self._sigma_sums(bx, by))

    def _sigma_sums(self, bx: float, by: float) -> np.ndarray:
        qx, qy = gdsc_stats.clip(self.X, self.y, bx, by)
        qx, qy = qx * qx, qy * qy
        out = np.empty((self.S, 2))
        for n, members, a in self.blocks:
            G = len(members)
            out[members, 0] = qx[a:a + G * n].reshape(G, n * qx.shape[1]).sum(axis=1)
            out[members, 1] = qy[a:a + G * n].reshape(G, n).sum(axis=1)
        return out

    def stats(self, X: np.ndarray | None = None, y: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``stats.sufficient_stats`` of every split's rows (of ``X``, ``y`` in the layout's row order; default
        the rows as given), stacked (S, d, d), (S, d), (S,) in the splits' order: a group of equal n one stacked
        call on its block (each split's products summed as by its own call: equal to the bit), a split alone of its
        n its own calls.  Float64 rows (the results are stored as float64)."""
        if X is None and y is None:   # the rows as given: kept by a shared instance
            return self.kept("stats", lambda: tuple(map(_read_only, self._stats(self.X, self.y))))
        return self._stats(self.X if X is None else X, self.y if y is None else y)

    #: ``_stats`` with ``clip``: a group whose rows take more than ``CLIP_WHOLE_BYTES`` is clipped and multiplied
    #: ``CLIP_PIECE_BYTES`` at a time (its clipped copy whole would leave the caches: d = 40, 222 splits of 800
    #: rows, 27.4 → 18.6 ms a call); a smaller group in one piece (d = 10: pieces took 6.5 ms against 4.4)
    CLIP_WHOLE_BYTES = 32 << 20
    CLIP_PIECE_BYTES = 4 << 20

    def _stats(self, X: np.ndarray, y: np.ndarray, clip: tuple[float, float] | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The statistics of every split's rows in ``X``, ``y``; with ``clip`` = (B_x, B_y) of the rows clipped at
        those bounds (``stats.clip``), a few splits at a time (``CLIP_PIECE_BYTES``), so that no clipped copy of
        all the rows is made: a stacked matmul computes each split's product as alone, so the pieces give the
        floats of the whole group's call."""
        S, d = self.S, X.shape[1]
        XX, Xy, yy = np.empty((S, d, d)), np.empty((S, d)), np.empty(S)
        for n, members, a in self.blocks:
            G = len(members)
            if G == 1:
                Xi, yi = X[a:a + n], y[a:a + n]
                if clip is not None:
                    Xi, yi = gdsc_stats.clip(Xi, yi, *clip)   # looked up at call time (the audit's mutants)
                XX[members[0]], Xy[members[0]], yy[members[0]] = Xi.T @ Xi, Xi.T @ yi, float(yi @ yi)
                continue
            row_bytes = 8 * n * (d + 1)   # a split's x and y
            P = G if clip is None or G * row_bytes <= self.CLIP_WHOLE_BYTES else \
                max(1, self.CLIP_PIECE_BYTES // row_bytes)
            for j in range(0, G, P):
                k = min(G, j + P)
                Xb, yb = X[a + j * n:a + k * n], y[a + j * n:a + k * n]
                if clip is not None:
                    Xb, yb = gdsc_stats.clip(Xb, yb, *clip)
                Xg, yg = Xb.reshape(k - j, n, d), yb.reshape(k - j, n)
                XgT = np.swapaxes(Xg, -1, -2)
                ms = members[j:k]
                XX[ms], Xy[ms] = XgT @ Xg, (XgT @ yg[..., None])[..., 0]
                yy[ms] = (yg[:, None, :] @ yg[:, :, None])[:, 0, 0]
        return XX, Xy, yy

    def clipped_stats(self, B_x: np.ndarray, B_y: np.ndarray, per_trial: bool, T: int
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The clipped (XᵀX, Xᵀy, yᵀy) of every split (``stats.clip``, then the products): (S, d, d), (S, d), (S,)
        for bounds (S,); (S, T, d, d), (S, T, d), (S, T) for per-trial bounds (S, T).  One stacked clip; the products of a group of equal n one stacked call
        on its block, C-contiguous and of the per-split arrays' layout (numpy's stacked matmul and einsum sum each
        split's products in the order of its own call: equal to the bit, tests/gdsc/test_release_batch.py)."""
        S, d = self.S, self.X.shape[1]
        if not per_trial:
            if S and self.X.dtype == self.y.dtype == np.float64 and _one_bound(B_x) and _one_bound(B_y):
                # one pair of bounds for every split (e.g. plr's public bounds, the paper protocol's pooled σ):
                # the rows clipped a few splits at a time and multiplied (clipping is elementwise: each split's
                # rows equal their own clip)
                return self._stats(self.X, self.y, clip=(float(B_x[0]), float(B_y[0])))
            Xc, yc = self._clipped_rows(B_x[:, None], B_y[:, None])
            return self.stats(Xc[0], yc[0])
        if self._splitwise(B_x, B_y):
            return self._clipped_stats_blockwise(B_x, B_y, T)
        Xc, yc = self._clipped_rows(B_x, B_y)
        XX, Xy, yy = np.empty((S, T, d, d)), np.empty((S, T, d)), np.empty((S, T))
        for n, members, a in self.blocks:
            G = len(members)
            if G == 1:
                i = members[0]
                Xi, yi = Xc[:, a:a + n], yc[:, a:a + n]
                if T > 1:   # the per-split arrays' layout (numpy's stacked matmul path depends on it)
                    Xi, yi = np.ascontiguousarray(Xi), np.ascontiguousarray(yi)
                XiT = np.swapaxes(Xi, -1, -2)
                XX[i], Xy[i], yy[i] = XiT @ Xi, (XiT @ yi[..., None])[..., 0], np.einsum("tn,tn->t", yi, yi)
                continue
            Xg = np.ascontiguousarray(np.swapaxes(Xc[:, a:a + G * n].reshape(T, G, n, d), 0, 1))   # (G, T, n, d)
            yg = np.ascontiguousarray(np.swapaxes(yc[:, a:a + G * n].reshape(T, G, n), 0, 1))      # (G, T, n)
            XgT = np.swapaxes(Xg, -1, -2)
            XX[members], Xy[members] = XgT @ Xg, (XgT @ yg[..., None])[..., 0]
            yy[members] = np.einsum("gtn,gtn->gt", yg, yg)
        return XX, Xy, yy


    def _clipped_stats_blockwise(self, B_x: np.ndarray, B_y: np.ndarray, T: int
                                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``clipped_stats`` with per-trial bounds (S, T) when ``_splitwise``: each group's rows clipped split by
        split (``_clipped_rows``' clip calls) straight into its (G, T, n, d) stack — the C-contiguous array the
        other path copies out of the clipped rows, so the same floats in the same layout, multiplied by the same
        stacked calls — and multiplied while they are still in cache, not after all groups are clipped."""
        S, d = self.S, self.X.shape[1]
        X, y = self.X, self.y
        bxs, bys = B_x.tolist(), B_y.tolist()
        XX, Xy, yy = np.empty((S, T, d, d)), np.empty((S, T, d)), np.empty((S, T))
        for n, members, a in self.blocks:
            G = len(members)
            Xg, yg = np.empty((G, T, n, d)), np.empty((G, T, n))
            r = a
            for j, i in enumerate(members):
                bx, by = bxs[i], bys[i]
                for t in range(T):
                    np.clip(X[r:r + n], -bx[t], bx[t], out=Xg[j, t])
                    np.clip(y[r:r + n], -by[t], by[t], out=yg[j, t])
                r += n
            if G == 1:
                i = members[0]
                Xi, yi = Xg[0], yg[0]
                XiT = np.swapaxes(Xi, -1, -2)
                XX[i], Xy[i], yy[i] = XiT @ Xi, (XiT @ yi[..., None])[..., 0], np.einsum("tn,tn->t", yi, yi)
                continue
            XgT = np.swapaxes(Xg, -1, -2)
            XX[members], Xy[members] = XgT @ Xg, (XgT @ yg[..., None])[..., 0]
            yy[members] = np.einsum("gtn,gtn->gt", yg, yg)
        return XX, Xy, yy


def _one_bound(B: np.ndarray) -> bool:
    """The bounds (S,) are one finite positive float64, bit for bit (a clip at it equals each split's own)."""
    if B.dtype != np.float64 or B.ndim != 1:
        return False
    u = B.view(np.uint64)
    return bool((u == u[0]).all()) and 0.0 < float(B[0]) < math.inf


def _read_only(a: np.ndarray) -> np.ndarray:
    """``a`` marked read-only (a value kept for later callers: writing into it would raise, not leak)."""
    a.flags.writeable = False
    return a


#: entries kept by ``shared_sufficient_stats`` (small arrays): the runner calls every method
#: of one size before the next size, so a size's entries are asked for within a few calls
SHARED = 2
#: row layouts kept by ``shared_rows`` (up to ~20 MiB of rows each at d = 10, 265 drugs): the current size's private
#: rows, and those of every private length a later size of the chunk asks again (``ChunkRows.recurring``: a grid of
#: n_public × n_private visits each n_private once per n_public)
SHARED_ROWS = 1


def shared_rows(Xs: list[np.ndarray], ys: list[np.ndarray], chunk: ChunkRows | None, names: tuple) -> RowBlocks:
    """``RowBlocks(Xs, ys)`` of private rows, shared by every call of the chunk whose rows have the same ``names``
    (``chunk.rows("private", ks)``; e.g. the private rows of rplr ours, rplr fixed, narplr and AdaSSP), kept in
    the chunk's scratch (bounded, ``SHARED_ROWS``); without a chunk, this call's own.  Its rows, σ sums and
    unclipped statistics are pure functions of the rows, computed once for all of them (read-only: a caller that
    clips works on its own copy); so are their clipped statistics at bounds that were not drawn (``sigma: data``,
    ``release_group``).  Kept for the chunk's later sizes that ask the same private rows again (``SHARED_ROWS``).
    Nothing drawn or released is kept."""
    def build() -> RowBlocks:
        rows = RowBlocks(Xs, ys)
        _read_only(rows.X)
        _read_only(rows.y)
        rows._known = {}
        return rows

    return build() if chunk is None else chunk.kept("gdsc.shared_rows", names, build,
                                                    maxsize=SHARED_ROWS + chunk.recurring("private"))


def shared_sufficient_stats(Xs: list[np.ndarray], ys: list[np.ndarray], chunk: ChunkRows | None = None,
                            names: tuple = ()) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """``sufficient_stats_many(Xs, ys)`` of public rows shared by every call of the chunk whose rows have the same
    ``names`` (``chunk.rows("public", ks)``; e.g. the public rows' exact statistics of rplr ours, rplr fixed and
    narplr), as ``shared_rows``; the arrays read-only."""
    def build() -> list:
        got = sufficient_stats_many(Xs, ys)
        for XX, Xy, _ in got:
            _read_only(XX)
            _read_only(Xy)
        return got

    return build() if chunk is None else chunk.kept("gdsc.shared_sufficient_stats", names, build, maxsize=SHARED)


def sufficient_stats_many(Xs: list[np.ndarray], ys: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """``stats.sufficient_stats`` of each row set (exact, unclipped): the C-contiguous sets of one shape share one
    stacked product (equal to the bit to their own calls, as ``RowBlocks.clipped_stats``); any other set its own call."""
    out: list[Any] = [None] * len(Xs)
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, (X, y) in enumerate(zip(Xs, ys)):
        if X.ndim == 2 and y.ndim == 1 and X.dtype == y.dtype == np.float64 and X.flags.c_contiguous \
                and y.flags.c_contiguous:
            groups.setdefault(X.shape, []).append(i)
        else:
            out[i] = sufficient_stats(X, y)
    for idx in groups.values():
        if len(idx) == 1:
            out[idx[0]] = sufficient_stats(Xs[idx[0]], ys[idx[0]])
            continue
        Xg, yg = np.stack([Xs[i] for i in idx]), np.stack([ys[i] for i in idx])
        XgT = np.swapaxes(Xg, -1, -2)
        XX, Xy = XgT @ Xg, (XgT @ yg[..., None])[..., 0]
        yy = (yg[:, None, :] @ yg[:, :, None])[:, 0, 0].tolist()
        for j, i in enumerate(idx):
            out[i] = (XX[j], Xy[j], yy[j])
    return out


# ---------------------------------------------------------------------------- the σ releases (rplr, adassp)
def release_sigmas(sums: np.ndarray, counts: np.ndarray, d: int, bx: float, by: float, eps_s: float,
                   standard: np.ndarray, ledgers: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """``clip_sigmas`` with ``sigma: dp`` of S splits from their ``sigma_sums``: S_x + Lap(d bx²/eps_s) and
    S_y + Lap(by²/eps_s) per trial (replace-one sensitivities of ``rplr._dp_sigmas``), each recorded in its cell's
    ledger as ``laplace`` records it; ``standard`` (S, 2T) the cells' first 2T standard draws (σ_x's T, then σ_y's).
    Returns σ̂_x, σ̂_y (S, T), floored at 1e-12."""
    S, T = sums.shape[0], standard.shape[1] // 2
    Sx = laplace_rows(np.broadcast_to(sums[:, :1], (S, T)), standard[:, :T], np.full(S, d * bx * bx), eps_s,
                      ledgers, "sigma_x")
    Sy = laplace_rows(np.broadcast_to(sums[:, 1:], (S, T)), standard[:, T:2 * T], np.full(S, by * by), eps_s,
                      ledgers, "sigma_y")
    sx = np.sqrt(np.maximum(Sx, 0.0) / np.maximum(counts * d, 1)[:, None])
    sy = np.sqrt(np.maximum(Sy, 0.0) / np.maximum(counts, 1)[:, None])
    return np.maximum(sx, 1e-12), np.maximum(sy, 1e-12)


def finite_rows(Xs: list[np.ndarray], ys: list[np.ndarray]) -> np.ndarray:
    """(S,) bool: split i's rows (``Xs[i]``, ``ys[i]``) are all finite (an empty split is)."""
    off = _offsets(Xs)
    bad = ~(np.isfinite(np.concatenate(Xs)).all(axis=1) & np.isfinite(np.concatenate(ys)))
    return np.diff(np.concatenate([[0], np.cumsum(bad)])[off]) == 0


def perturbed_stats_many(splits: list, B_x: float, B_y: float, epsilon: float, ledgers: list, trials: int,
                         out: list, sensitivity: str = "tight", chunk: ChunkRows | None = None) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """plr's release: the Laplace-perturbed XᵀX and Xᵀy (ε/2 each, no yᵀy) of each split's private rows clipped to
    (B_x, B_y), plus the exact statistics of its public rows, (trials, d, d) and (trials, d), keyed by split index
    in order (a single split is a batch of one); a failing split gets its exception in ``out``.

    The releases: XᵀX's d(d+1)/2 upper-triangle entries, mirrored, then Xᵀy, each a Laplace mechanism with
    Δ₁ = d(d+1)B_x²/2 (``sensitivity="tight"``; d(d+1)B_x² under ``"paper"``, Methods 4.2) and 2dB_xB_y under
    replace-one neighbours (``stats.sensitivities``).  Per d, the
    private rows laid out once (``RowBlocks``, clipped by ``stats.clip``), one ``standard_laplace_rows`` row per
    cell holding the trials·(d(d+1)/2 + d) draws of its two releases, scaled and recorded by ``laplace_rows``.
    ``clip``, ``sensitivities`` and ``triu_indices`` are looked up in ``stats`` at call time (the audit's mutants
    patch them there)."""
    eps = 0.5 * epsilon
    if not (math.isfinite(eps) and eps > 0):
        for k in range(len(splits)):
            out[k] = UserError(f"plr: epsilon must be > 0 and finite, got {epsilon}")
        return {}
    res: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    by_d: dict[int, list[int]] = {}
    for k, s in enumerate(splits):
        try:
            d = s.d
            with np.errstate(over="ignore"):
                sens = gdsc_stats.sensitivities(d, np.float64(B_x), np.float64(B_y), sensitivity)[:2]
            if not all(math.isfinite(float(v)) and v >= 0 for v in sens):
                raise UserError(f"plr: the bounds B_x = {B_x}, B_y = {B_y} give sensitivities {sens} that are not "
                                "finite")
            for X, y, what in ((s.X_private, s.y_private, "private"), (s.X_public, s.y_public, "public")):
                if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0] or X.shape[1] != d:
                    raise UserError(f"plr: the {what} rows X {X.shape} and y {y.shape} do not match (d = {d})")
            if s.X_private.shape[0] == 0:   # nothing private to release (as rplr): the public-only fit
                ledgers[k].public_only()
                Xu = s.X_public
                res[k] = (np.zeros((trials, d, d)) + Xu.T @ Xu, np.zeros((trials, d)) + Xu.T @ s.y_public)
                continue
            by_d.setdefault(d, []).append(k)
        except Exception as exc:  # recorded per cell (nothing drawn for it)
            out[k] = exc
    for d, group in by_d.items():
        try:
            res.update(_plr_group([splits[k] for k in group], group, d, B_x, B_y, eps,
                                  [ledgers[k] for k in group], trials, sensitivity, chunk))
        except Exception as exc:  # recorded for the cells of the group
            for k in group:
                out[k] = exc
    return {k: res[k] for k in sorted(res)}


def _plr_group(ss: list, ks: list[int], d: int, B_x: float, B_y: float, eps: float, lgs: list, trials: int,
               sensitivity: str, chunk: ChunkRows | None = None) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """``perturbed_stats_many`` of splits of one d, all with private rows."""
    S, m = len(ss), d * (d + 1) // 2
    rows = RowBlocks([s.X_private for s in ss], [s.y_private for s in ss])
    Xc, yc = gdsc_stats.clip(rows.X, rows.y, B_x, B_y)
    XXc, Xyc, _ = rows.stats(Xc, yc)
    pub = shared_sufficient_stats([s.X_public for s in ss], [s.y_public for s in ss], chunk,
                                  chunk.rows("public", ks) if chunk is not None else ())
    std = standard_laplace_rows(lgs, trials * (m + d))
    s_xx, s_xy, _ = gdsc_stats.sensitivities(d, B_x, B_y, sensitivity)
    N_up = laplace_rows(np.zeros((S, trials, m)), std[:, :trials * m].reshape(S, trials, m), np.full(S, s_xx), eps,
                        lgs, label="X'X")
    N_xy = laplace_rows(np.zeros((S, trials, d)), std[:, trials * m:].reshape(S, trials, d), np.full(S, s_xy), eps,
                        lgs, label="X'y")
    iu = gdsc_stats.triu_indices(d)
    N = np.zeros((S, trials, d, d))
    N[..., iu[0], iu[1]] = N_up
    XX = (XXc + np.stack([p[0] for p in pub]))[:, None] + (N + np.swapaxes(N, -1, -2) - N * np.eye(d))
    Xy = (Xyc + np.stack([p[1] for p in pub]))[:, None] + N_xy
    return {k: (XX[j], Xy[j]) for j, k in enumerate(ks)}
