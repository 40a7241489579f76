"""The authors' data paths of the GDSC figures (Honkela et al. 2018; their code, DPBayes/robust-private-lr), used by
the ``gdsc`` dataset with ``protocol: python`` or ``protocol: matlab`` (the paper protocol; docs/reproduction.md).

Both paths start from the raw expression of the first d genes and the raw ln IC50 of every drug (no dataset-wide
preprocessing) and one random permutation of the cell lines per fold, shared by all drugs:

* **python** (rplr, robust LR, LR, the baselines): test = the first ``test_pool`` (100) lines of the permutation;
  the rest is the training permutation; private = its first n lines, public = its lines at positions
  ``public_start`` (800) … ``public_start + n_public − 1``, so the public lines do not depend on n.  Each set (test,
  public, private) is normalised on its own (``normalise_set``): every gene centred over the set's lines, every
  line's d-vector scaled to unit L2 norm, every drug's response centred over the set's lines tested with it.  The
  clipping scales are σ_x = std of all entries of the private x and σ_y = std of the private y of **all** drugs
  pooled (each drug centred over the private set), both with ddof = 1 as the authors' code — data statistics of
  the private set, no budget spent.
* **matlab** (plr, oplr, fmlr): the test lines as above; the training lines in file order; every drug's response
  centred over all its tested training lines; public = the first ``n_public`` training lines in file order,
  private = the first n of the lines after the ``max_public`` public ones (nested across n); x normalised per set
  as above (the response keeps the training centring).  fmlr switches the row normalisation off: its raw rows
  and the per-column minima and maxima of x over **all** lines (test included) are in ``Split.meta['raw']``
  (``RawRows``), with each drug's y range as the authors' code reads it — the union of the raw, uncentred ln IC50
  extremes and those of the training- and the test-centred responses (``_y_range``) — from which it min–max
  scales x and y to [−1, 1].

Lines without a response to a drug are dropped per drug after the sets are formed and normalised (the sets are
normalised as wholes, once per fold and size, for all drugs alike).  Folds come from the dataset's split stream
(the authors' Matlab folds came from Matlab's generator with a fixed seed: not reproducible here).

Not DP: the private set is centred (python: also x; matlab: x) by means over its own lines and σ_x, σ_y are read
from it without budget; the Matlab response centring reads all training lines.  The dataset declares this
preprocessing as leaking (every row's guarantee becomes ``none``, with the reason).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpexp import cache
from dpexp.errors import UserError

#: the two paths of the authors' code
PROTOCOLS = ("python", "matlab")


def normalise_set(X: np.ndarray, Y: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
    """One set normalised on its own lines: genes centred, rows scaled to unit L2 norm (zero rows stay 0), each
    response column centred over the lines that have a value (NaN stays NaN; ``Y`` None: x only)."""
    Xc = X - X.mean(axis=0, keepdims=True) if X.shape[0] else X
    norms = np.linalg.norm(Xc, axis=1, keepdims=True)
    Xn = np.divide(Xc, norms, out=np.zeros_like(Xc), where=norms > 0)
    if Y is None:
        return Xn, None
    return Xn, Y - _column_means(Y)[None, :]


def _column_means(Y: np.ndarray) -> np.ndarray:
    """Mean of each column over its non-NaN entries (0 for a column with none)."""
    has = ~np.isnan(Y)
    return np.where(has, Y, 0.0).sum(axis=0) / np.maximum(has.sum(axis=0), 1)


@dataclass(frozen=True)
class RawRows:
    """The Matlab path's unnormalised rows of one drug's sets (for fmlr, whose row normalisation is off) and the
    per-column ranges over all lines of the data, test lines included (its min–max scaling).  ``whole``: the drug's
    rows along the fold's sequences (read-only) of which a split's rows are prefixes (their first rows, views of
    them), so that what is computed row by row from them serves every size of the fold."""

    X_private: np.ndarray
    X_public: np.ndarray
    X_test: np.ndarray
    x_min: np.ndarray        # (d,) over all lines
    x_max: np.ndarray
    y_min: float             # the drug's y range: raw, training- and test-centred extremes (``_y_range``)
    y_max: float
    whole: RawRows | None = None   # the drug's rows along the fold's sequences, whose prefixes these are (or None)


@dataclass(frozen=True)
class ProtocolSets:
    """One fold and size of a paper path, for all drugs: line indices of the sets (test, public, private), their
    normalised x and responses (centred per drug as the path says), and the private set's clipping scales."""

    index: tuple[np.ndarray, np.ndarray, np.ndarray]
    X: tuple[np.ndarray, np.ndarray, np.ndarray]
    Y: tuple[np.ndarray, np.ndarray, np.ndarray]
    sigma_x: float           # std of all entries of the private x (nan without private lines)
    sigma_y: float           # std of the private y of all drugs pooled (nan without private lines)


def digest(perm: np.ndarray) -> str:
    """A short SHA-256 digest of a line permutation or set (the memo keys of a fold)."""
    return hashlib.sha256(np.ascontiguousarray(perm, dtype=np.int64).tobytes()).hexdigest()[:24]


def set_indices(protocol: str, perm: np.ndarray, n_test: int, n_public: int, n_private: int, test_pool: int,
                public_start: int, max_public: int, perm_digest: str | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Line indices (test, public, private) of one fold of ``protocol`` (module docstring); errors in one line.
    Each set is a prefix of its ``fold_sequences`` sequence, so sizes nest."""
    N = perm.size
    train = N - test_pool
    if n_test > test_pool:
        raise UserError(f"gdsc: sizes.n_test must be <= test_pool={test_pool}, got {n_test}")
    if protocol == "python":
        if public_start + n_public > train:
            raise UserError(f"gdsc protocol python: public_start + n_public must be <= {train} training lines, "
                            f"got {public_start} + {n_public}")
        if n_private > public_start:
            raise UserError(f"gdsc protocol python: sizes.n_private must be <= public_start={public_start} (the "
                            f"private lines precede the public ones), got {n_private}")
    elif protocol == "matlab":
        if max_public + n_private > train:
            raise UserError(f"gdsc protocol matlab: n_public + n_private must be <= {train} training lines "
                            f"(N = {N}, test_pool = {test_pool}), got {max_public} + {n_private}")
    else:
        raise UserError(f"gdsc: protocol must be one of {PROTOCOLS} here, got {protocol!r}")
    seq_t, seq_u, seq_v = fold_sequences(protocol, perm, test_pool, public_start, max_public, perm_digest)
    return seq_t[:n_test], seq_u[:n_public], seq_v[:n_private]


def fold_sequences(protocol: str, perm: np.ndarray, test_pool: int, public_start: int, max_public: int,
                   perm_digest: str | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The line sequences of one fold whose prefixes are the sets (test, public, private) of every size: python —
    the permutation's first ``test_pool`` lines, the training permutation from ``public_start``, the training
    permutation; matlab — the test lines, the training lines in file order, the same from ``max_public``.
    Memoised per fold (``perm_digest``: ``digest(perm)`` if already known); read-only."""
    key = (protocol, perm.size, perm_digest or digest(perm), test_pool, public_start, max_public)
    return cache.memo("gdsc.fold_sequences", key,
                      lambda: _fold_sequences(protocol, perm, test_pool, public_start, max_public), maxsize=32)


def _fold_sequences(protocol: str, perm: np.ndarray, test_pool: int, public_start: int,
                    max_public: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    train = perm[test_pool:]
    if protocol == "python":
        seqs = (perm[:test_pool], train[public_start:], train)
    else:
        train = np.sort(train)                                   # file order
        seqs = (perm[:test_pool], train, train[max_public:])
    seqs = tuple(np.array(q) for q in seqs)
    for q in seqs:
        q.flags.writeable = False
    return seqs   # type: ignore[return-value]


def protocol_sets(protocol: str, source: tuple, X_raw: np.ndarray, Y_raw: np.ndarray, perm: np.ndarray,
                  n_test: int, n_public: int, n_private: int, test_pool: int, public_start: int,
                  max_public: int, perm_digest: str | None = None) -> ProtocolSets:
    """The normalised sets of one fold and size (module docstring), memoised per (data, fold, sizes): every drug of
    a chunk reuses them (``perm_digest``: ``digest(perm)`` if already known)."""
    dig = perm_digest or digest(perm)
    key = (protocol, source, X_raw.shape, dig, n_test, n_public, n_private, test_pool, public_start, max_public)
    return cache.memo("gdsc.protocol_sets", key, lambda: _sets(protocol, source, X_raw, Y_raw, perm, n_test, n_public,
                                                               n_private, test_pool, public_start, max_public,
                                                               dig),
                      maxsize=32)


def _sets(protocol: str, source: tuple, X_raw: np.ndarray, Y_raw: np.ndarray, perm: np.ndarray, n_test: int,
          n_public: int, n_private: int, test_pool: int, public_start: int, max_public: int, dig: str) -> ProtocolSets:
    idx = set_indices(protocol, perm, n_test, n_public, n_private, test_pool, public_start, max_public, dig)
    # each set is normalised on its own lines, so its arrays depend on (fold, which set, its lines) alone: memoised
    # per set, keyed by the lines themselves, every size of a fold with that set reuses them (a grid of n_public x
    # n_private asks each public set at every n_private: its test set once, each public and private set once,
    # instead of three sets per size)
    fold = (protocol, source, X_raw.shape, dig, test_pool, public_start, max_public)
    parts = [cache.memo("gdsc.protocol_set", (*fold, at, np.asarray(i).tobytes()),
                        lambda i=i, at=at: _one_set(protocol, X_raw, Y_raw, perm, i, test_pool, dig, source, at == 2),
                        maxsize=64)
             for at, i in enumerate(idx)]
    Xs, Ys = [q[0] for q in parts], [q[1] for q in parts]
    sx, sy = parts[2][2]
    return ProtocolSets(tuple(idx), tuple(Xs), tuple(Ys), sx, sy)      # type: ignore[arg-type]


def _one_set(protocol: str, X_raw: np.ndarray, Y_raw: np.ndarray, perm: np.ndarray, i: np.ndarray, test_pool: int,
             dig: str, source: tuple, scales: bool) -> tuple[np.ndarray, np.ndarray, tuple[float, float] | None]:
    """One set of a fold (lines ``i``) as the path normalises it: (x, responses, with ``scales`` (the private set)
    its clipping scales (σ_x, σ_y), else None).  python: x and responses centred on the set's lines; matlab: x per
    set, the responses centred over all training lines (the same for every size of a fold)."""
    if protocol == "python":
        X, Y = normalise_set(X_raw[i], Y_raw[i])
    else:
        X, Y = normalise_set(X_raw[i], None)[0], matlab_centred_y(Y_raw, perm, test_pool, dig, source)[i]
    if not scales:
        return X, Y, None
    # ddof = 1, as the authors' code (diffpri.py:450-451; issue 28, fact 4); nan with fewer than two values
    sx = float(X.std(ddof=1)) if X.size > 1 else float("nan")
    sy = float(np.nanstd(Y, ddof=1)) if np.isfinite(Y).sum() > 1 else float("nan")
    return X, Y, (sx, sy)


def matlab_centred_y(Y_raw: np.ndarray, perm: np.ndarray, test_pool: int, perm_digest: str,
                     source: tuple | None = None) -> np.ndarray:
    """The Matlab path's responses: every drug's centred over its tested training lines (the same for every size
    of a fold: memoised per (data, fold), the data named by ``source``, its key; computed each time without)."""
    def compute() -> np.ndarray:
        return Y_raw - _column_means(Y_raw[perm[test_pool:]])[None, :]

    if source is None:
        return compute()
    return cache.memo("gdsc.matlab_centred_y", (source, Y_raw.shape, perm_digest, test_pool), compute, maxsize=4)


def raw_rows(X_raw: np.ndarray, Y_raw: np.ndarray, sets: ProtocolSets, keep: list[np.ndarray] | None, j: int,
             test_pool: int, perm: np.ndarray, perm_digest: str | None = None,
             lines: list[np.ndarray] | None = None, read_only: bool = False, source: tuple | None = None) -> RawRows:
    """fmlr's view of the Matlab path for drug ``j``: its raw rows of each set (``keep``: the set positions with a
    response, as masks or as positions; ``lines``: those lines, if already known) and the ranges over all lines (x:
    every line; y: the drug's range of ``_y_range``; ``perm_digest``: ``digest(perm)`` if already known).
    ``read_only``: the rows' arrays are made read-only (shared by several splits' views).  ``source``: the data's
    key, under which what derives from the whole data (the contiguous rows, the ranges) is memoised (without:
    computed for this call)."""
    if lines is None:
        lines = [s[k] if k.dtype == bool else s.take(k) for s, k in zip(sets.index, keep)]
    it, iu, iv = lines
    # per data version: the ranges, and a contiguous copy of X_raw (a column slice of the raw table) for take
    def whole_x() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return np.ascontiguousarray(X_raw), X_raw.min(axis=0), X_raw.max(axis=0)

    def ranges() -> tuple[list[float], list[float]]:
        return _y_ranges(Y_raw, test_pool, perm)

    if source is None:
        (Xc, x_min, x_max), (lo, hi) = whole_x(), ranges()
    else:
        Xc, x_min, x_max = cache.memo("gdsc.raw_x", (source, X_raw.shape), whole_x, maxsize=8)
        # the same for every size of a fold: every drug's, memoised per (data, fold)
        lo, hi = cache.memo("gdsc.raw_y_ranges", (source, Y_raw.shape, perm_digest or digest(perm), test_pool),
                            ranges, maxsize=4)
    y_min, y_max = lo[j], hi[j]
    rows = (Xc.take(iv, axis=0), Xc.take(iu, axis=0), Xc.take(it, axis=0))
    if read_only:
        for r in rows:
            r.flags.writeable = False
    return RawRows(*rows, x_min, x_max, y_min, y_max)


def _y_range(Y_raw: np.ndarray, j: int, test_pool: int, perm: np.ndarray) -> tuple[float, float]:
    """Drug ``j``'s response range as the authors' fmlr reads it (``data_prepare.m:104-106, 157-158, 171-172``, used
    at ``trpred.m:5-6``; issue 28, fact 2): the union of the extremes of its raw, uncentred ln IC50 over all lines,
    of its training responses centred over its tested training lines (``perm[test_pool:]``), and of its test
    responses centred over its tested test lines (``perm[:test_pool]``, their own mean); finite values only, (0, 0)
    if there are none, and a zero extreme is +0.  The reference form of ``_y_ranges`` (one drug at a time)."""
    col = Y_raw[:, j]
    parts = [col]
    for lines in (perm[test_pool:], perm[:test_pool]):
        parts.append(col[lines] - _column_means(Y_raw[lines, j:j + 1])[0])
    vals = np.concatenate([v[np.isfinite(v)] for v in parts])
    return (float(vals.min()) + 0.0, float(vals.max()) + 0.0) if vals.size else (0.0, 0.0)


def _y_ranges(Y_raw: np.ndarray, test_pool: int, perm: np.ndarray) -> tuple[list[float], list[float]]:
    """``_y_range`` of every drug (column of ``Y_raw``) at once: (minima, maxima), the same floats.  Each drug's
    means are the sums of its own column's entries, as ``_column_means`` of that one column sums them: a contiguous
    row of the transposed rows is reduced as the one-column array is (numpy's pairwise sum of one contiguous run);
    minima and maxima do not depend on the order."""
    YT = np.ascontiguousarray(Y_raw.T)
    lo, hi = np.full(YT.shape[0], np.inf), np.full(YT.shape[0], -np.inf)
    for lines in (None, perm[test_pool:], perm[:test_pool]):
        if lines is None:
            V = YT
        else:
            T = YT.take(lines, axis=1)                         # (D, lines), C-contiguous
            has = ~np.isnan(T)
            V = T - (np.where(has, T, 0.0).sum(axis=1) / np.maximum(has.sum(axis=1), 1))[:, None]
        finite = np.isfinite(V)
        lo = np.minimum(lo, np.where(finite, V, np.inf).min(axis=1, initial=np.inf))
        hi = np.maximum(hi, np.where(finite, V, -np.inf).max(axis=1, initial=-np.inf))
    none = ~np.isfinite(lo)
    lo, hi = np.where(none, 0.0, lo) + 0.0, np.where(none, 0.0, hi) + 0.0
    return lo.tolist(), hi.tolist()


class ProtocolView:
    """Public and test rows of one drug's split of a paper path with another number of genes (``view(d)``: the
    d = 64 baseline of Fig. 2), normalised per set as the path does.  Picklable (holds file paths)."""

    def __init__(self, expr: Path, ic50: Path, evidence: str, public: np.ndarray, test: np.ndarray,
                 keep_public: np.ndarray, keep_test: np.ndarray, loader: Any, shared: dict | None = None):
        self.expr, self.ic50, self.evidence = expr, ic50, evidence
        self.loader = loader      # (expr, ic50, d, evidence) -> (raw expression of the kept lines, data source key)
        self.public, self.test = public, test                  # all lines of the sets
        # the drug's lines among them: masks, or their positions (taken: the same rows, less overhead)
        self.keep_public, self.keep_test = keep_public, keep_test
        # d -> the normalised sets (public, test), shared by the views of one fold and size (every drug's: the same
        # sets), so the files' versions and the memos are looked up once per fold and d, not per split
        self.shared = shared

    def __call__(self, d: int) -> tuple[np.ndarray, np.ndarray]:
        got = None if self.shared is None else self.shared.get(d)
        if got is None:
            X_raw, source = self.loader(self.expr, self.ic50, d, self.evidence)
            # each set's normalisation is the same for every drug of the fold: memoised per (data, d, set)
            got = tuple(cache.memo("gdsc.protocol_view_set", (source, d, self.evidence, digest(lines)),
                                   lambda lines=lines: normalise_set(X_raw[lines], None)[0], maxsize=16)
                        for lines in (self.public, self.test))
            if self.shared is not None:
                self.shared[d] = got
        return view_rows(got[0], self.keep_public, got[1], self.keep_test)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "shared": None}   # sets of this process: an unpickled view looks them up


def _rows(X: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """The rows of ``X`` that ``keep`` selects (a mask, or positions)."""
    return X[keep] if keep.dtype == bool else X.take(keep, axis=0)


def view_rows(Xu: np.ndarray, keep_public: np.ndarray, Xt: np.ndarray, keep_test: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """A view's public and test rows: the rows of the sets ``Xu``, ``Xt`` that ``keep_public``, ``keep_test`` select,
    read-only (``lr_public`` keeps its fit of them in the chunk's scratch, where the next size finds it without
    asking the view again)."""
    got = _rows(Xu, keep_public), _rows(Xt, keep_test)
    for a in got:
        a.flags.writeable = False
    return got
