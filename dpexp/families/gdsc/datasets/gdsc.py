"""GDSC drug sensitivity data (Honkela et al. 2018, Methods 4.4–4.5; Nieminen 2017 thesis §3.8.2).

Files (found with ``dpexp.datasets.base.data_path``; staged offline copies live in ``../shared/data/gdsc/``):

* ``gdsc/gdsc_v17_expression_64genes.csv.gz``: ``COSMIC_ID, cell_line_name, evidence`` and the RMA expression of
  64 cancer genes, columns ordered by COSMIC mutation count (most mutated first);
* ``gdsc/IC50_v17.csv.gz``: ``COSMIC_ID`` and 265 columns ``Drug_<id>_IC50`` of natural-log IC50 (NaN = untested).

The inner join on COSMIC_ID has 955 cell lines.  Preprocessing (Methods 4.4), done once per (files, d, evidence)
and memoised in memory (``dpexp.cache``):

1. keep the first ``d`` genes (mutation order);
2. centre each gene over all retained cell lines;
3. scale each cell line's d-vector to unit L2 norm (zero rows stay zero);
4. per drug, centre the response over the cell lines that have one (NaN stays NaN = "missing").

Protocol (Methods 4.5): per Monte Carlo repeat one random permutation of the cell lines — the *same* for every
drug (``shared_split = True``) and algorithm — gives a test pool (first ``test_pool`` = 100 lines), a non-private
pool (next ``public_pool`` = 30) and a private pool (the rest).  A cell takes prefixes of the pools, so sizes nest.
Cell lines with a missing response to the drug are dropped per drug: by default *after* the prefixes are taken
(``missing: after_split``, the thesis §3.8.2 "after the splitting, the cell lines with missing responses ... are
discarded"; a drug with many untested lines then sees fewer than the requested rows), or *before*
(``missing: before_split``: the prefix is taken among the lines that have a response, so the requested sizes are
exact whenever the pool is large enough).

Facts put into ``Split.meta`` (used by algorithms/metrics): ``sigma_x`` / ``sigma_y`` — the std of all x entries
/ of y over the drug's cell lines (private ones included), as the paper uses for the clipping thresholds B = ω·σ
*without spending privacy budget*: not DP, used only by ``rplr``/``split_search`` with ``sigma: data``, which report
guarantee ``none`` (stated in ``sigma_source``); ``y_sd`` — the drug's response std (the ``sd`` of the wpc index,
evaluation only); ``x_bound`` = 1 (rows have unit L2 norm, so |x_j| ≤ 1 holds by construction: a public fact);
``view`` — a callable giving the public/test rows of the same split preprocessed with another number of genes (for
the d = 64 public-only baseline of Fig. 2).

Privacy of the preprocessing (``preprocessing()``, written on every row and in the manifest).  ``centre: public``
(default): each gene is centred at its mean over the repeat's test and public pools and each drug's response at its
mean over the tested lines of those pools — no private line is read, so the algorithms' guarantees need no
assumption.  ``centre: all`` (the paper's Methods 4.4): the gene means over all retained lines and each drug's mean
response over all its tested lines, private lines included.  They are *not* harmless location shifts: the unit-norm
scaling comes after the centring, so a private line that moves a gene mean by 1/N of its deviation changes the
direction of *every* preprocessed row, the other private lines' included (a line 4 sd out moves the other lines'
clipped XᵀX by ~0.3 of the one-row sensitivity, ``tests/gdsc/test_gdsc_privacy.py``; with unbounded raw values the
effect is unbounded, as for σ).  Computed from private rows without budget, so ``centre: all`` is reported as
**not DP** (guarantee ``none`` on every row, with this reason); the paper configs set it explicitly.
The number of private lines with a response to a drug is public (replace-one neighbours).
Release point: one drug; the drugs of a run are releases about the same cell lines (``release_point``).

The paper protocol (``protocol: python`` or ``matlab``; the default ``ours`` is everything above): the authors'
two data paths — per-set normalisation, their split positions, σ_y pooled over all drugs, the Matlab path's
training-line centring and raw rows for fmlr — in ``dpexp.families.gdsc.datasets.protocols``.  They read the
private set without budget, so the dataset declares that preprocessing as leaking (guarantee ``none`` on every row).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, model_validator

from dpexp import cache
from dpexp.components import Dataset, Params, Preprocessing
from dpexp.datasets.base import data_path
from dpexp.datasets.checks import require_finite
from dpexp.errors import UserError
from dpexp.families.gdsc.datasets import protocols
from dpexp.registry import register_dataset
from dpexp.types import Sizes, Split

EXPR_FILE = "gdsc/gdsc_v17_expression_64genes.csv.gz"
IC50_FILE = "gdsc/IC50_v17.csv.gz"
DOWNLOAD_HINT = "dpexp data download gdsc"
N_GENES = 64
#: bound of the per-drug memos (a drug's rows of one repeat: ``gdsc.drug_rows``, ``gdsc.protocol_drug``).  An entry
#: serves the sizes and algorithms of one chunk only (its key holds the repeat's permutation), so the bound need only
#: hold every drug of a chunk (GDSC has 265); a larger one kept dead entries alive: 1024 held 130 MB in a gdsc_eps2
#: worker, enough for loky to restart its workers as leaking (> 300 MB growth; a restart costs ~3 s of CPU)
DRUG_MEMO = 320

#: The 64 most mutated of the GDSC cancer genes, in COSMIC mutation-count order (SOURCE.md, "Column names").
GENES_64: tuple[str, ...] = (
    "JAK2", "BRAF", "KRAS", "TP53", "EGFR", "FLT3", "PIK3CA", "IDH1", "KIT", "CTNNB1", "CDKN2A", "NRAS", "FGFR3",
    "PTEN", "VHL", "NOTCH1", "TET2", "PDGFRA", "HRAS", "NF1", "GNAS", "FBXW7", "NF2", "SMAD4", "RB1", "ALK", "RUNX1",
    "EZH2", "EP300", "SMARCA4", "ERBB2", "CDH1", "MET", "KDR", "SETD2", "SMARCB1", "KDM6A", "BRCA1", "STK11",
    "PIK3R1", "FGFR2", "MSH6", "TSC1", "KDM5C", "MLH1", "SMO", "MAP2K4", "CYLD", "MSH2", "CDKN2C", "SOCS1", "AKT2",
    "BCR", "CCND1", "CCND2", "CCND3", "CDK4", "CDK6", "FLI1", "MDM2", "MLLT3", "AFF1", "MYC", "MYCN",
)

#: evidence levels kept by each value of the ``evidence`` option (SOURCE.md, "Evidence column").
EVIDENCE_LEVELS: dict[str, tuple[str, ...] | None] = {
    "all": None,
    "certain": ("exact_value_match", "order_between_exact_matches", "official_release"),
    "exact": ("exact_value_match", "official_release"),
}


# --------------------------------------------------------------------------------------------------------------
# loading and preprocessing (cached)
# --------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Raw:
    source: tuple             # version of the two files (dpexp.cache.file_key of each)
    cosmic: np.ndarray        # (N,) int
    evidence: np.ndarray      # (N,) str
    genes: tuple[str, ...]    # 64 names
    X: np.ndarray             # (N, 64) raw expression
    Y: np.ndarray             # (N, D) ln IC50, NaN = missing
    drugs: tuple[str, ...]    # D subset names "Drug_<id>"


@dataclass(frozen=True)
class _Prepared:
    X: np.ndarray             # (N, d) centred genes, unit-norm rows
    Y: np.ndarray             # (N, D) per-drug centred responses, NaN = missing
    has: np.ndarray           # (N, D) bool: response present
    sigma_x: np.ndarray       # (D,)
    sigma_y: np.ndarray       # (D,)
    drug_index: dict[str, int]
    X_raw: np.ndarray         # (N, d) raw expression of the kept lines (centre: public recentres it per split)
    Y_raw: np.ndarray         # (N, D) raw ln IC50 of the kept lines
    source: tuple = ()        # the data's key: (files' versions, d, evidence), for the memos of what derives from it
    has_rows: np.ndarray | None = None   # ``has`` as rows (D, N), contiguous: a drug's tested mask along a sequence


def load_raw(expr_path: Path, ic50_path: Path) -> _Raw:
    """Read and inner-join the two tables on COSMIC_ID (expression-file row order); memoised per file version."""
    key = (cache.file_key(expr_path), cache.file_key(ic50_path))
    return cache.memo("gdsc.raw", key, lambda: _read_raw(expr_path, ic50_path, key))


def _read_raw(expr_path: Path, ic50_path: Path, source: tuple) -> _Raw:
    expr = pd.read_csv(expr_path)
    ic = pd.read_csv(ic50_path)
    for col in ("COSMIC_ID",):
        if col not in expr.columns or col not in ic.columns:
            raise UserError(f"{expr_path} / {ic50_path}: both tables need a COSMIC_ID column")
    genes = [c for c in expr.columns if c not in ("COSMIC_ID", "cell_line_name", "evidence")]
    if len(genes) < 5:
        raise UserError(f"{expr_path}: expected gene columns after COSMIC_ID, cell_line_name, evidence; got {genes}")
    drug_cols = [c for c in ic.columns if c != "COSMIC_ID"]
    require_finite(expr, genes, expr_path)
    require_finite(ic, drug_cols, ic50_path, missing_ok=True)   # an empty IC50: untested, dropped per drug
    expr = expr.dropna(subset=["COSMIC_ID"]).drop_duplicates("COSMIC_ID", keep="first")
    expr["COSMIC_ID"] = expr["COSMIC_ID"].astype(np.int64)
    ic = ic.drop_duplicates("COSMIC_ID", keep="first")
    ic["COSMIC_ID"] = ic["COSMIC_ID"].astype(np.int64)
    joined = expr.merge(ic, on="COSMIC_ID", how="inner", sort=False)
    evidence = joined["evidence"].astype(str).to_numpy() if "evidence" in joined else np.full(len(joined), "")
    drugs = tuple(c[: -len("_IC50")] if c.endswith("_IC50") else c for c in drug_cols)
    return _Raw(source=source, cosmic=joined["COSMIC_ID"].to_numpy(), evidence=evidence, genes=tuple(genes),
                X=joined[genes].to_numpy(dtype=float), Y=joined[drug_cols].to_numpy(dtype=float), drugs=drugs)


def preprocess_expression(X: np.ndarray, d: int) -> np.ndarray:
    """First ``d`` genes, centre each gene, scale each row to unit L2 norm (Methods 4.4); zero rows stay 0."""
    Xd = X[:, :d] - X[:, :d].mean(axis=0, keepdims=True)
    norms = np.linalg.norm(Xd, axis=1, keepdims=True)
    return np.divide(Xd, norms, out=np.zeros_like(Xd), where=norms > 0)


def raw_genes(expr: Path, ic50: Path, d: int, evidence: str) -> tuple[np.ndarray, Any]:
    """The raw expression of the first ``d`` genes of the kept lines and the data's source key (the loader of the
    paper paths' ``protocols.ProtocolView``, passed in so that module needs nothing from this one)."""
    if not 1 <= d <= N_GENES:
        raise UserError(f"gdsc view: d must be in 1..{N_GENES}, got {d}")
    raw = load_raw(expr, ic50)
    return prepare(raw, d, evidence).X_raw, raw.source


def centre_responses(Y: np.ndarray) -> np.ndarray:
    """Centre each drug's column over the lines that have a response (NaN stays NaN)."""
    has = ~np.isnan(Y)
    mu = np.where(has, Y, 0.0).sum(axis=0) / np.maximum(has.sum(axis=0), 1)
    return Y - mu[None, :]


def prepare(raw: _Raw, d: int, evidence: str) -> _Prepared:
    """Preprocess for ``d`` genes and an evidence filter; memoised (runs once per process, file version and
    setting)."""
    return cache.memo("gdsc.prepared", (raw.source, d, evidence), lambda: _prepare(raw, d, evidence))


def _prepare(raw: _Raw, d: int, evidence: str) -> _Prepared:
    keep_levels = EVIDENCE_LEVELS[evidence]
    rows = np.ones(raw.X.shape[0], bool) if keep_levels is None else np.isin(raw.evidence, keep_levels)
    X = preprocess_expression(raw.X[rows], d)
    Y = centre_responses(raw.Y[rows])
    has = ~np.isnan(Y)
    cnt = has.sum(axis=0)
    safe = np.maximum(cnt, 1)
    # per-drug std of all x entries (over the drug's lines) and of y: matrix products, no Python loop
    s1 = has.T.astype(float) @ X.sum(axis=1)
    s2 = has.T.astype(float) @ (X**2).sum(axis=1)
    m = s1 / (safe * d)
    sigma_x = np.sqrt(np.maximum(s2 / (safe * d) - m**2, 0.0))
    Y0 = np.where(has, Y, 0.0)
    sigma_y = np.sqrt((Y0**2).sum(axis=0) / safe)  # responses are centred over the same lines
    return _Prepared(X=X, Y=Y, has=has, sigma_x=sigma_x, sigma_y=sigma_y,
                     drug_index={name: j for j, name in enumerate(raw.drugs)}, X_raw=raw.X[rows][:, :d],
                     Y_raw=raw.Y[rows], source=(raw.source, d, evidence), has_rows=np.ascontiguousarray(has.T))


def centre_rows(X_raw: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Genes centred at their mean over the lines ``ref``, rows scaled to unit norm (zero rows stay 0)."""
    Xd = X_raw - X_raw[ref].mean(axis=0, keepdims=True)
    norms = np.linalg.norm(Xd, axis=1, keepdims=True)
    return np.divide(Xd, norms, out=np.zeros_like(Xd), where=norms > 0)


def _centred_rows(source: tuple, d: int, evidence: str, X_raw: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """``centre_rows`` of a repeat's pools, memoised per (data, d, evidence, pools): the same for every drug."""
    key = (source, d, evidence, hashlib.sha256(np.ascontiguousarray(ref, dtype=np.int64).tobytes()).digest())
    return cache.memo("gdsc.centred_rows", key, lambda: centre_rows(X_raw, ref), maxsize=8)


def centre_on(X_raw: np.ndarray, y_raw: np.ndarray, ref: np.ndarray, X: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray, float, float]:
    """``centre: public``: genes centred at their mean over the lines ``ref`` (the non-private pools), rows scaled
    to unit norm (``X``: those rows if already computed, ``centre_rows``), the drug's response centred at its mean
    over the lines of ``ref`` that have one (0 if none); returns (X, y, σ_x, σ_y) with σ as in ``_prepare`` over the
    drug's lines (used only by ``sigma: data``)."""
    if X is None:
        X = centre_rows(X_raw, ref)
    has = ~np.isnan(y_raw)
    tested = ref[has[ref]]
    y = y_raw - (float(y_raw[tested].mean()) if tested.size else 0.0)
    lines = X[has]
    sx = float(lines.std()) if lines.size else 0.0
    # y[has] holds no NaN: its std is nanstd's value (numpy's nanvar of a NaN-free float array does var's
    # operations: sum, divide by the count, subtract, square, sum, divide), without nanvar's copies and mask
    sy = float(y[has].std()) if has.any() else 0.0
    return X, y, sx, sy


def drawn_permutation(rng: np.random.Generator, N: int) -> tuple[np.ndarray, str]:
    """``rng.permutation(N)`` and its digest, memoised by the generator's state (``dpexp.cache``): every drug and
    size of a repeat draws the same permutation from the same (rewound) stream, so it is drawn once.  The generator
    is left in the state the draw leaves it in, as if it had drawn; the permutation is read-only (shared)."""
    key = _state_key(rng)
    if key is None:   # a generator whose state is not plain data: draw
        perm = rng.permutation(N)
        return perm, protocols.digest(perm)
    perm, dig, after = cache.memo("gdsc.permutation", (N, key), lambda: _draw_permutation(rng, N), maxsize=64)
    rng.bit_generator.state = after
    return perm, dig


def _draw_permutation(rng: np.random.Generator, N: int) -> tuple[np.ndarray, str, dict]:
    perm = rng.permutation(N)
    perm.flags.writeable = False
    return perm, protocols.digest(perm), rng.bit_generator.state


def _state_key(rng: np.random.Generator) -> tuple | None:
    """A hashable copy of a PCG64-family generator's state (dpexp's streams are PCG64), None for any other."""
    try:
        st = rng.bit_generator.state
        inner = st["state"]
        key = (st["bit_generator"], inner["state"], inner["inc"], st["has_uint32"], st["uinteger"])
    except (AttributeError, KeyError, TypeError):
        return None
    if len(st) != 4 or len(inner) != 2 or not all(type(v) is int for v in key[1:]):
        return None
    return key


#: numbers for ``Gdsc.instance_key``
_INSTANCES = itertools.count()


@dataclass(frozen=True)
class _DrugRows:
    """What every size of a drug's split shares in one repeat (``protocol: ours``)."""

    X: np.ndarray               # (N, d) preprocessed rows (shared by all drugs)
    y: np.ndarray               # (N,) the drug's preprocessed responses
    sx: float
    sy: float
    ref: np.ndarray | None      # centre: public — the lines the means come from (test + public pools)
    tested: tuple               # each pool's (test, public, private) lines the drug was tested on, in pool order
    pos: tuple                  # their positions in the pool
    # (n_test, n_public) -> (test lines, public lines, X_test, y_test, X_public, y_public, whether the public rows
    # are all finite): the same for every n_private, one array each shared by the sizes' splits (inputs, never
    # written; the row arrays read-only)
    test_public: dict = field(default_factory=dict, compare=False)
    # the rows of all the drug's private lines (X, y; read-only) and whether they are all finite: each size's
    # private rows are a prefix of them
    private: list = field(default_factory=list, compare=False)


@dataclass
class _PaperDrug:
    """What every size of a drug's split shares in one fold (``protocol: python|matlab``)."""

    seqs: tuple                 # per sequence of the fold (test, public, private): (tested mask, positions, lines)
    raw: Any = None             # matlab: protocols.RawRows of the drug's lines along the sequences (read-only)
    y_private: Any = None       # matlab: its centred responses along the private sequence (read-only)
    # (n_test, n_public) -> (test positions, public positions, X_test, y_test, X_public, y_public, the view of
    # them with other genes, the drug's σ_y)
    test_public: dict = field(default_factory=dict)


def _all_finite(*arrays: np.ndarray) -> bool:
    """Every entry of ``arrays`` finite: what ``Split.nonfinite`` checks, once for the rows many splits share."""
    return all(bool(np.isfinite(a).all()) for a in arrays)


def _finite_drugs(sets: protocols.ProtocolSets, has: np.ndarray) -> np.ndarray:
    """(D,) bool: whether drug j's rows of the fold's public and private sets are all finite — every x row of a set
    (a drug's rows are some of them) and the set's responses of the drug at its tested lines (``has``, lines × drugs,
    whose positions the splits take).  Checked whole once per fold and size for every drug, so that the drugs'
    splits, whose rows are these, need not be read again (``Split.vouch_finite``); a False leaves a split to
    ``Split.nonfinite``, which names the rows."""
    ok = np.ones(has.shape[1], dtype=bool)
    for at in (1, 2):   # public, private (the test rows are only predicted at)
        X, Y, lines = sets.X[at], sets.Y[at], sets.index[at]
        if not np.isfinite(X).all():
            return np.zeros(has.shape[1], dtype=bool)
        ok &= (np.isfinite(Y) | ~has[lines]).all(axis=0)
    return ok


class GdscView:
    """Public and test rows of one split preprocessed with another number of genes (``view(d)``).

    Only non-private rows are exposed, so a public-only baseline can use d = 64 while the private methods use d = 10
    (Fig. 2, thesis Fig. 4.5).  Picklable (holds file paths, not closures).
    """

    def __init__(self, expr: Path, ic50: Path, evidence: str, idx_public: np.ndarray, idx_test: np.ndarray,
                 centre_ref: np.ndarray | None = None, shared: dict | None = None):
        self.expr, self.ic50, self.evidence = expr, ic50, evidence
        self.idx_public, self.idx_test = idx_public, idx_test
        self.centre_ref = centre_ref          # centre: public — the lines the gene means come from
        # d -> the preprocessed rows, shared by the views of one fold (every drug's: same data, same centre_ref),
        # so the files' versions and the memos are looked up once per fold and d, not per split
        self.shared = shared

    def __call__(self, d: int) -> tuple[np.ndarray, np.ndarray]:
        if not 1 <= d <= N_GENES:
            raise UserError(f"gdsc view: d must be in 1..{N_GENES}, got {d}")
        X = None if self.shared is None else self.shared.get(d)
        if X is None:
            raw = load_raw(self.expr, self.ic50)
            prep = prepare(raw, d, self.evidence)
            X = prep.X
            if self.centre_ref is not None:   # the pools' centring, once per repeat for all drugs (as the split's)
                X = _centred_rows(raw.source, d, self.evidence, prep.X_raw, self.centre_ref)
            if self.shared is not None:
                self.shared[d] = X
        # X[idx] (take: less overhead), read-only
        return protocols.view_rows(X, self.idx_public, X, self.idx_test)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "shared": None}   # rows of this process: an unpickled view looks them up


# --------------------------------------------------------------------------------------------------------------
# the dataset
# --------------------------------------------------------------------------------------------------------------
@register_dataset
class Gdsc(Dataset):
    """GDSC v17: 955 cell lines × 64 cancer genes (RMA) and ln IC50 of 265 drugs; each drug is a subset.

    Preprocessing Methods 4.4, protocol Methods 4.5 (module docstring).  The same random split of cell lines is
    used for every drug of a repeat (``shared_split``); ``split`` is index arithmetic on cached arrays, and
    ``split_many`` (the runner's path) gives the splits of many drugs of one size from one fold.
    """

    name = "gdsc"
    description = "GDSC v17 drug sensitivity: 955 cell lines, 64 cancer genes, 265 drugs (Honkela et al. 2018)"
    shared_split = True
    #: each part of a drug's split is a prefix of the drug's rows along its pool (``ours``) or its fold's sequence
    #: (``python``, ``matlab``), normalised per set, whose lines depend on that part's size alone: read-only
    nested_sizes = True
    download_hint = DOWNLOAD_HINT
    release_point = ("one drug: a row's epsilon covers the model of one drug's response fitted on the cell lines of "
                     "the split; the {n} drugs of this run are {n} releases about the same cell lines, so a cell "
                     "line's total loss is up to {n}·epsilon under basic composition (265·epsilon for all drugs)")
    subsets_share_rows = True   # the manifest states the total over the drugs (accounting.repeated_release)
    #: SHA-256 of the staged tables (the gdsc folder's SOURCE.md); a table built from a newer release differs
    data_files = {EXPR_FILE: "eb2c307bf5afa14125fa1abec822b8f1c1e9d73fe7d0e0480eee66e948346b85",
                  IC50_FILE: "db719ed21ab8725611b9c2ff74dfc0063ff657bc4758ccc97489a047ec46f9d7"}

    class Params(Params):
        d: int = Field(10, ge=5, le=64, description="number of genes kept (first d in mutation-count order)")
        evidence: Literal["all", "certain", "exact"] = "all"
        """cell-line identification evidence kept: all 955 lines, 'certain' (exact + between exact matches) or 'exact'
        only"""
        test_pool: int = Field(100, ge=1, description="test lines per repeat (Methods 4.5: 100)")
        public_pool: int = Field(30, ge=0, description="non-private pool per repeat (Methods 4.5: 30)")
        missing: Literal["after_split", "before_split"] = "after_split"
        """drop lines without a response after taking the pool prefixes (thesis 3.8.2) or before (exact sizes)"""
        centre: Literal["all", "public"] = "public"
        """centre genes and responses over the repeat's test + public pools only (no private line read; default) or over
        all lines (the paper's Methods 4.4: not DP)"""
        protocol: Literal["ours", "python", "matlab"] = "ours"
        """data path: ours (pools, dataset-wide preprocessing) or the authors' python (rplr, LR) / matlab (plr, oplr,
        fmlr) path: per-set normalisation, their split positions (not DP: reads the private set;
        dpexp.families.gdsc.datasets.protocols)"""
        public_start: int = Field(800, ge=0)
        """protocol: python: position of the first public line in the training permutation (the authors' code: 800)"""

        @model_validator(mode="after")
        def _protocol_options(self) -> "Gdsc.Params":
            ours_only = sorted({"centre", "missing", "public_pool"} & self.model_fields_set)
            if self.protocol != "ours" and ours_only:
                raise ValueError(f"{', '.join(ours_only)} apply to protocol: ours only (the paper paths fix their "
                                 f"own), got protocol: {self.protocol}")
            if self.protocol != "python" and "public_start" in self.model_fields_set:
                raise ValueError(f"public_start applies to protocol: python only, got protocol: {self.protocol}")
            return self

    preprocessing_options = {"ours (default, centre: public)": {}, "paper (centre: all)": {"centre": "all"},
                             "paper protocol (protocol: python)": {"protocol": "python"},
                             "paper protocol (protocol: matlab)": {"protocol": "matlab"}}

    def preprocessing(self) -> Preprocessing:
        """Centring (module docstring): ``public`` reads no private line; ``all`` and the paper paths
        (``protocol: python|matlab``) read private lines without budget and leak."""
        if self.params.protocol == "python":
            return Preprocessing(
                "paper protocol (python path): each set normalised by its own lines, the private one too; σ from "
                "the private set — not DP",
                "the authors' Python path: the test, public and private sets are each centred (genes, and each "
                "drug's response) at their own means and their rows scaled to unit L2 norm; the private set's means "
                "move with every private line, and the clipping scales σ_x, σ_y are the private set's stds (σ_y "
                "pooled over all drugs) read without budget: not DP (guarantee none on every row).",
                leaks=True)
        if self.params.protocol == "matlab":
            return Preprocessing(
                "paper protocol (matlab path): responses centred over all training lines, private x by its own "
                "lines — not DP",
                "the authors' Matlab path: each drug's response centred over all its tested training lines (private "
                "ones included), the x of each set centred at its own means and scaled to unit rows; fmlr's "
                "min-max ranges come from all lines: not DP (guarantee none on every row).", leaks=True)
        if self.params.centre == "public":
            return Preprocessing(
                "gdsc centre: public (no private line read)",
                "each gene is centred at its mean over the repeat's test and public pools (no private line), each "
                "line's d-vector scaled to unit L2 norm (row-local), each drug's ln IC50 centred at its mean over the "
                "tested lines of those pools: no quantity computed from private lines enters the rows. The data std "
                "in meta (sigma_x, sigma_y; private lines included) is used only by sigma: data, reported not DP.")
        return Preprocessing(
            "gdsc centre: all (paper), means over private lines too — not DP",
            "Methods 4.4: each gene centred over all retained cell lines (private, public and test), each line's "
            "d-vector scaled to unit L2 norm (row-local), each drug's ln IC50 centred over all lines tested with it. "
            "The means are read from private lines without budget and, through the unit-norm scaling, a private line "
            "moves every other row: not DP (guarantee none on every row). Use centre: public (the default) to read "
            "no private line. The data std in meta (sigma_x, sigma_y) is used only by sigma: data, reported not DP.",
            leaks=True)

    def __init__(self, data_dir: Path | None = None, **params: Any) -> None:
        super().__init__(data_dir, **params)
        #: names this instance in the memo of its data paths (``_split_data``): a new instance, a new look-up
        self.instance_key = next(_INSTANCES)

    def _paths(self) -> tuple[Path, Path]:
        return data_path(EXPR_FILE, DOWNLOAD_HINT, self.data_dir), data_path(IC50_FILE, DOWNLOAD_HINT, self.data_dir)

    def _prep(self) -> _Prepared:
        e, i = self._paths()
        return prepare(load_raw(e, i), self.params.d, self.params.evidence)

    def _split_data(self) -> tuple[Path, Path, _Raw, _Prepared]:
        """(paths, raw tables, prepared arrays) for ``split``, looked up once per instance and data location (a
        split is asked for every drug, size and repeat: finding and stat-ing the files each time was a tenth of
        it); a new run resolves new instances, so changed files are read again.  Memoised per (``instance_key``,
        data location): a pickled copy (a worker's) carries the key and finds its own paths in its process."""
        where = (os.environ.get("DPEXP_DATA_DIR"), os.getcwd())
        return cache.memo("gdsc.split_data", (self.instance_key, where), self._find_split_data, maxsize=64)

    def _find_split_data(self) -> tuple[Path, Path, _Raw, _Prepared]:
        e, i = self._paths()
        raw = load_raw(e, i)
        return e, i, raw, prepare(raw, self.params.d, self.params.evidence)

    def check(self) -> None:
        raw = load_raw(*self._paths())
        if raw.X.shape[1] < self.params.d:
            raise UserError(f"gdsc: params.d must be <= {raw.X.shape[1]} (genes in the file), got {self.params.d}")
        n = self._prep().X.shape[0]
        if self.params.protocol != "ours":
            if n <= self.params.test_pool:
                raise UserError(f"gdsc: test_pool must be < {n} cell lines, got {self.params.test_pool}")
            return
        if n <= self.params.test_pool + self.params.public_pool:
            raise UserError(f"gdsc: test_pool + public_pool must be < {n} cell lines, got "
                            f"{self.params.test_pool + self.params.public_pool}")

    def subsets(self) -> list[str]:
        e, i = self._paths()
        return list(load_raw(e, i).drugs)

    def n_rows(self, subset: str) -> int | None:
        """Cell lines available before the per-drug removal of missing responses (sizes refer to lines)."""
        return int(self._prep().X.shape[0])

    def split(self, subset: str, sizes: Sizes, rng: np.random.Generator) -> Split:
        data = self._split_data()
        j = self._drug(data[3], subset)
        return self._drug_split(self._fold(sizes, rng, data, vouch=False), subset, j, sizes)

    def split_many(self, subsets: list[str], sizes: Sizes, rng: np.random.Generator) -> list[Split | Exception]:
        """``split`` of every subset in ``subsets`` (one size) from one generator at the start of the dataset's
        split stream — the stream each ``split`` of a repeat gets (``shared_split``): the fold (permutation, pools
        or normalised sets, shared by all drugs) is made once, then each drug's rows.  A subset whose ``split``
        would raise gets that exception in its place; the splits equal ``split``'s, value for value."""
        data = self._split_data()
        fold: Any = None
        out: list[Split | Exception] = []
        for subset in subsets:
            try:
                j = self._drug(data[3], subset)
                if fold is None:
                    try:
                        fold = self._fold(sizes, rng, data)
                    except Exception as exc:   # a size this data cannot give: every known drug's error
                        fold = exc
                if isinstance(fold, Exception):
                    out.append(fold)
                    continue
                out.append(self._drug_split(fold, subset, j, sizes))
            except Exception as exc:   # this subset's split fails alone (the runner records it per cell)
                out.append(exc)
        return out

    @staticmethod
    def _drug(prep: _Prepared, subset: str) -> int:
        j = prep.drug_index.get(subset)
        if j is None:
            raise UserError(f"gdsc: unknown subset {subset!r}; subsets are drug names like "
                            f"{next(iter(prep.drug_index))!r}")
        return j

    def _fold(self, sizes: Sizes, rng: np.random.Generator, data: tuple, vouch: bool = True) -> tuple:
        """What every drug's split of one size shares in a repeat: the permutation drawn from ``rng`` and the pools
        (``protocol: ours``) or the normalised sets (the paper paths); errors of sizes the data cannot give.
        ``vouch`` (paper paths): check the sets' rows of every drug at once (``_finite_drugs``), worth it for the
        many splits of ``split_many``, not for the one of ``split`` (whose rows ``Split.nonfinite`` reads)."""
        p = self.params
        e, i, raw, prep = data
        N = prep.X.shape[0]
        if p.protocol != "ours":
            perm, dig = drawn_permutation(rng, N)     # same for every drug: the stream is keyed by repeat only
            train = N - p.test_pool
            n_priv = sizes.n_private
            if n_priv < 0:   # "all": every line before the public ones (python) or after them (matlab)
                n_priv = p.public_start if p.protocol == "python" else train - sizes.max_public
            sets = protocols.protocol_sets(p.protocol, raw.source + (p.d, p.evidence), prep.X_raw, prep.Y_raw,
                                           perm, sizes.n_test, sizes.n_public, n_priv, p.test_pool,
                                           p.public_start, sizes.max_public, dig)
            # the memo key of the fold's per-drug entries (``_paper_split``) as one string, hashed once per fold
            token = repr((p.protocol, raw.source, p.d, p.evidence, N, dig, p.test_pool, p.public_start,
                          sizes.max_public))
            return (e, i, raw, prep, N, perm, dig, n_priv, sets, {}, token,
                    _finite_drugs(sets, prep.has) if vouch else None)
        T, P = p.test_pool, p.public_pool
        if sizes.n_test > T:
            raise UserError(f"gdsc: sizes.n_test must be <= test_pool={T}, got {sizes.n_test}")
        if sizes.n_public > P:
            raise UserError(f"gdsc: sizes.n_public must be <= public_pool={P}, got {sizes.n_public}")
        perm, dig = drawn_permutation(rng, N)         # same for every drug: the stream is keyed by repeat only
        pools = (perm[:T], perm[T:T + P], perm[T + P:])
        n_priv = len(pools[2]) if sizes.n_private < 0 else sizes.n_private
        if n_priv > len(pools[2]):
            raise UserError(f"gdsc: sizes.n_private must be <= {len(pools[2])} (lines left after the test and "
                            f"public pools), got {n_priv}")
        return (e, i, raw, prep, N, perm, dig, n_priv, pools, {})

    def _drug_split(self, fold: tuple, subset: str, j: int, sizes: Sizes) -> Split:
        """Drug ``j``'s split of a fold (``_fold``)."""
        p = self.params
        if p.protocol != "ours":
            return self._paper_split(subset, j, sizes, fold)
        e, i, raw, prep, N, perm, dig, n_priv, pools, views = fold
        T, P = p.test_pool, p.public_pool
        # the drug's rows, centring and σ are the same for every size of the repeat: memoised per (repeat, drug)
        key = (raw.source, p.d, p.evidence, p.centre, p.missing, T, P, N, dig, j)
        dr = cache.memo("gdsc.drug_rows", key, lambda: self._drug_rows(raw, prep, j, pools), maxsize=DRUG_MEMO)
        X, y, sx, sy, ref = dr.X, dr.y, dr.sx, dr.sy, dr.ref
        after = p.missing == "after_split"
        # after_split: the tested lines among the pool's first n; before_split: the pool's first n tested lines
        tp = dr.test_public.get((sizes.n_test, sizes.n_public))
        if tp is None:
            # the test and public rows are the same for every n_private: one array each per (repeat, drug), shared
            # by the sizes' splits as a split's arrays are shared by its algorithms (inputs, never written)
            it, iu = (tested[:pos.searchsorted(n)] if after else tested[:n]
                      for tested, pos, n in zip(dr.tested, dr.pos, (sizes.n_test, sizes.n_public)))
            tp = (it, iu, X.take(it, axis=0), y.take(it), X.take(iu, axis=0), y.take(iu))
            for a in tp[2:]:   # read-only: inputs, never written
                a.flags.writeable = False
            tp = dr.test_public[(sizes.n_test, sizes.n_public)] = (*tp, _all_finite(tp[4], tp[5]))
        it, iu, Xt, yt, Xu, yu, public_finite = tp
        # the private rows: a prefix of the drug's private lines (after_split: those among the pool's first n; else
        # its first n), i.e. of their rows, taken once per (repeat, drug) and shared read-only by the sizes' splits
        pv = dr.private
        if not pv:
            rows = (X.take(dr.tested[2], axis=0), y.take(dr.tested[2]))
            for a in rows:
                a.flags.writeable = False
            # checked once for every size (a size's private rows are a prefix); one extend, so that a reader in
            # another thread sees the list empty or whole
            pv.extend((*rows, _all_finite(*rows)))
        m = int(dr.pos[2].searchsorted(n_priv)) if after else min(n_priv, len(dr.tested[2]))
        meta = {
            "drug": subset,
            "sigma_x": sx,
            "sigma_y": sy,
            "sigma_source": "std over the drug's preprocessed cell lines, no budget spent (as the paper; not DP)",
            "y_sd": sy,
            "x_bound": 1.0,
            "n_requested": {"n_private": int(n_priv), "n_public": int(sizes.n_public), "n_test": int(sizes.n_test)},
            "view": GdscView(e, i, p.evidence, iu, it, ref, views),
        }
        split = Split(pv[0][:m], pv[1][:m], Xu, yu, Xt, yt, meta)
        return split.vouch_finite() if pv[2] and public_finite else split

    def _drug_rows(self, raw: _Raw, prep: _Prepared, j: int, pools: tuple) -> _DrugRows:
        """Drug ``j``'s rows in the repeat of ``pools`` (test, public, private): centred on the test + public
        pools (``centre: public``) or the dataset-wide preprocessing (``all``)."""
        p = self.params
        has = prep.has[:, j]
        X, y = prep.X, prep.Y[:, j]
        sx, sy = float(prep.sigma_x[j]), float(prep.sigma_y[j])
        ref = None
        if p.centre == "public":   # the means come from the non-private pools of this repeat (all drugs alike)
            ref = np.concatenate([pools[0], pools[1]])
            X, y, sx, sy = centre_on(prep.X_raw, prep.Y_raw[:, j], ref,
                                     _centred_rows(raw.source, p.d, p.evidence, prep.X_raw, ref))
        pos = tuple(np.flatnonzero(has[pool]) for pool in pools)
        tested = tuple(pool[q] for pool, q in zip(pools, pos))
        y = np.ascontiguousarray(y)   # centre: all gives a column of Y; take (in split) needs a contiguous source
        for a in pos + tested + (y,):
            a.flags.writeable = False
        return _DrugRows(X, y, sx, sy, ref, tested, pos)

    def _paper_split(self, subset: str, j: int, sizes: Sizes, fold: tuple) -> Split:
        """The split of ``protocol: python|matlab`` (``protocols``): the fold's normalised sets of all drugs
        (``_fold``, memoised), then this drug's tested lines of each."""
        p = self.params
        e, i, raw, prep, N, perm, dig, n_priv, sets, views, token, finite = fold
        # the drug's tested lines of each set, after normalising: prefixes of its lines in the fold's sequences
        fd = cache.memo("gdsc.protocol_drug", (token, j),
                        lambda: self._fold_drug(perm, dig, sizes.max_public, prep, j), maxsize=DRUG_MEMO)
        (ht, pt, lt), (hu, pu, lu), (hv, pv, lv) = fd.seqs
        nt, nu = sizes.n_test, sizes.n_public
        (Xt, Xu, Xv), (Yt, Yu, Yv) = sets.X, sets.Y
        tp = fd.test_public.get((nt, nu))
        if tp is None:
            # the test and public sets are the same lines, normalised alike, for every n_private: their rows once
            # per (fold, drug), shared by the sizes' splits as a split's arrays are shared by its algorithms (never
            # written).  Positions of a mask's True entries select what the mask selects (take: the same rows, less
            # overhead).  The view of them with other genes too (the same lines: the same rows for every size)
            kt, ku = pt[:pt.searchsorted(nt)], pu[:pu.searchsorted(nu)]
            view = protocols.ProtocolView(e, i, p.evidence, sets.index[1], sets.index[0], ku, kt, raw_genes,
                                          views)   # positions in each set (of hu[:nu], ht[:nt])
            tp = fd.test_public[(nt, nu)] = (kt, ku, Xt.take(kt, axis=0), Yt[:, j].take(kt), Xu.take(ku, axis=0),
                                             Yu[:, j].take(ku), view, float(prep.sigma_y[j]))
            for a in tp[2:6]:   # read-only: inputs, never written
                a.flags.writeable = False
        kt, ku, Xt_, yt, Xu_, yu, view, y_sd = tp
        kv = pv[:pv.searchsorted(n_priv)]                                          # positions in each set
        meta = {
            "drug": subset,
            "protocol": p.protocol,
            "sigma_x": sets.sigma_x,
            "sigma_y": sets.sigma_y,
            "sigma_source": ("std of all entries of the private x and of the private y of all drugs pooled, no "
                             "budget spent (the authors' code; not DP)"),
            "y_sd": y_sd,
            "x_bound": 1.0,
            "n_requested": {"n_private": int(n_priv), "n_public": int(sizes.n_public), "n_test": int(sizes.n_test)},
            "view": view,
        }
        if p.protocol == "matlab":
            # the drug's raw rows of each set are prefixes of its raw rows along the fold's sequences (its lines of
            # each set: prefixes of its lines along them): those once per (fold, drug), read-only, then views
            full = fd.raw
            if full is None:
                full = fd.raw = protocols.raw_rows(prep.X_raw, prep.Y_raw, sets, None, j, p.test_pool, perm, dig,
                                                   [lt, lu, lv], read_only=True, source=prep.source)
            meta["raw"] = protocols.RawRows(full.X_private[:len(kv)], full.X_public[:len(ku)],
                                            full.X_test[:len(kt)], full.x_min, full.x_max, full.y_min, full.y_max,
                                            full)
            # the responses keep the training centring (the same for every size of the fold): the private ones
            # are a prefix of the drug's along the private sequence, taken once per (fold, drug)
            yv = fd.y_private
            if yv is None:
                yv = fd.y_private = protocols.matlab_centred_y(prep.Y_raw, perm, p.test_pool, dig,
                                                               prep.source)[:, j].take(lv)
                yv.flags.writeable = False
            yp = yv[:len(kv)]
        else:
            yp = Yv[:, j].take(kv)
            yp.flags.writeable = False
        Xp = Xv.take(kv, axis=0)
        Xp.flags.writeable = False                         # inputs, never written
        split = Split(Xp, yp, Xu_, yu, Xt_, yt, meta)
        # the private and public rows are rows of the fold's sets, checked whole (``_finite_drugs``)
        return split.vouch_finite() if finite is not None and finite[j] else split

    def _fold_drug(self, perm: np.ndarray, dig: str, max_public: int, prep: _Prepared, j: int) -> _PaperDrug:
        """Per sequence of the fold (``protocols.fold_sequences``): drug ``j``'s tested mask along it, the positions
        of its tested lines and those lines (read-only); the rows every size shares are added on first use."""
        p = self.params
        out = []
        # the tested masks as rows (per data version): a drug's is contiguous, gathered along each sequence
        has_j = prep.has_rows[j]
        for seq in protocols.fold_sequences(p.protocol, perm, p.test_pool, p.public_start, max_public, dig):
            has = has_j.take(seq)
            pos = np.flatnonzero(has)
            lines = seq.take(pos)
            has.flags.writeable = pos.flags.writeable = lines.flags.writeable = False
            out.append((has, pos, lines))
        return _PaperDrug(tuple(out))

    # ----------------------------------------------------------------------------------------------------------
    # download and build from the official release files
    # ----------------------------------------------------------------------------------------------------------
    @classmethod
    def download(cls, dest: Path) -> list[Path]:
        """Fetch the GDSC release files into ``dest/gdsc/raw`` and build the two tables this dataset reads.

        Checksums: the official files are not mirrored here, so their SHA-256 cannot be known offline; each
        download's SHA-256 is written to ``raw/SHA256SUMS`` and, when that file already exists (a pinned earlier
        download), verified against it.
        """
        from dpexp.datasets.base import download as fetch
        from dpexp.datasets.base import sha256_file

        raw_dir = Path(dest) / "gdsc" / "raw"
        raw_dir.mkdir(parents=True, exist_ok=True)
        pinned: dict[str, str] = {}
        sums = raw_dir / "SHA256SUMS"
        if sums.exists():
            for line in sums.read_text().splitlines():
                if line.strip():
                    h, name = line.split(maxsplit=1)
                    pinned[name.strip()] = h
        got = {}
        for name, url in RELEASE_FILES.items():
            target = raw_dir / name
            if not target.exists():
                fetch(url, target, sha256=pinned.get(name), timeout=600.0)
            got[name] = sha256_file(target)
            if name in pinned and pinned[name] != got[name]:
                raise UserError(f"checksum mismatch for {target}: expected sha256 {pinned[name]}, got {got[name]}")
        sums.write_text("".join(f"{h}  {n}\n" for n, h in sorted(got.items())))
        return build_tables(raw_dir / "Cell_line_RMA_proc_basalExp.txt.zip", raw_dir / "v17_fitted_dose_response.xlsx",
                            Path(dest) / "gdsc")


#: Official GDSC release files (release 6.0 / GDSC1000 web resources).  SHA-256 unknown offline (see download()).
RELEASE_FILES: dict[str, str] = {
    "Cell_line_RMA_proc_basalExp.txt.zip":
        "https://www.cancerrxgene.org/gdsc1000/GDSC1000_WebResources/Data/preprocessed/"
        "Cell_line_RMA_proc_basalExp.txt.zip",
    "v17_fitted_dose_response.xlsx":
        "https://ftp.sanger.ac.uk/pub/project/cancerrxgene/releases/release-6.0/v17_fitted_dose_response.xlsx",
}


def _read_text_table(path: Path) -> pd.DataFrame:
    """Tab-separated table from ``.txt``, ``.txt.gz`` or a ``.zip`` holding one ``.txt``."""
    path = Path(path)
    if path.suffix == ".zip":
        import zipfile

        with zipfile.ZipFile(path) as zf:
            names = [n for n in zf.namelist() if not n.endswith("/")]
            with zf.open(names[0]) as fh:
                return pd.read_csv(io.BytesIO(fh.read()), sep="\t")
    if path.suffix == ".gz":
        with gzip.open(path, "rb") as fh:
            return pd.read_csv(fh, sep="\t")
    return pd.read_csv(path, sep="\t")


def build_expression_table(rma: pd.DataFrame, cosmic_with_response: set[int] | None = None,
                           genes: tuple[str, ...] = GENES_64) -> pd.DataFrame:
    """Expression table of the dataset from the GDSC RMA matrix (rows = genes, ``GENE_SYMBOLS`` column, one
    ``DATA.<COSMIC_ID>`` column per cell line).

    Keeps ``genes`` in the given (mutation-count) order, one row per cell line in the file's column order (first
    occurrence of a duplicated id), optionally only lines with a drug response.  ``evidence`` is
    ``official_release`` for every row (the ids come from the official file).  A missing gene is an error.
    """
    if "GENE_SYMBOLS" not in rma.columns:
        raise UserError("RMA expression file: expected a GENE_SYMBOLS column")
    sym = rma["GENE_SYMBOLS"].astype(str)
    missing = [g for g in genes if g not in set(sym)]
    if missing:
        raise UserError(f"RMA expression file lacks genes {missing}")
    first = rma.loc[~sym.duplicated(keep="first")].set_index("GENE_SYMBOLS")
    data_cols = [c for c in rma.columns if c.startswith("DATA.")]
    seen: set[int] = set()
    rows, ids = [], []
    for c in data_cols:
        try:
            cid = int(float(c[len("DATA."):].split(".")[0]))
        except ValueError:
            continue
        if cid in seen or (cosmic_with_response is not None and cid not in cosmic_with_response):
            continue
        seen.add(cid)
        ids.append(cid)
        rows.append(c)
    values = first.loc[list(genes), rows].to_numpy(dtype=float).T
    out = pd.DataFrame(values, columns=list(genes))
    out.insert(0, "evidence", "official_release")
    out.insert(0, "cell_line_name", "")
    out.insert(0, "COSMIC_ID", np.asarray(ids, dtype=np.int64))
    return out


def build_ic50_table(dose: pd.DataFrame) -> pd.DataFrame:
    """``COSMIC_ID`` × ``Drug_<DRUG_ID>_IC50`` table of LN_IC50 from the v17 fitted dose response (long format:
    COSMIC_ID, DRUG_ID, LN_IC50); drugs in ascending id order, a repeated (line, drug) pair is averaged."""
    need = {"COSMIC_ID", "DRUG_ID", "LN_IC50"}
    if not need <= set(dose.columns):
        raise UserError(f"dose response file: expected columns {sorted(need)}, got {list(dose.columns)[:10]}")
    wide = dose.pivot_table(index="COSMIC_ID", columns="DRUG_ID", values="LN_IC50", aggfunc="mean")
    wide = wide.reindex(sorted(wide.columns), axis=1)
    wide.columns = [f"Drug_{int(c)}_IC50" for c in wide.columns]
    wide.index = wide.index.astype(np.int64)
    return wide.reset_index()


def build_tables(rma_path: Path, dose_path: Path, out_dir: Path, genes: tuple[str, ...] = GENES_64) -> list[Path]:
    """Build ``gdsc_v17_expression_64genes.csv.gz`` and ``IC50_v17.csv.gz`` in ``out_dir`` from the raw files.

    ``dose_path`` may be the official ``.xlsx`` (needs the ``xlsx`` extra: openpyxl) or a CSV with the same columns.
    Note: the official v17 release has more cell lines than the gdsctools copy staged offline (988), so a built
    table can have a few more rows than the staged one; values of common (line, drug) pairs agree.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    dose_path = Path(dose_path)
    if dose_path.suffix in (".xlsx", ".xls"):
        try:
            dose = pd.read_excel(dose_path)
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise UserError(f"reading {dose_path} needs openpyxl: pip install 'dpexp[xlsx]' ({exc})") from None
    else:
        dose = pd.read_csv(dose_path)
    ic = build_ic50_table(dose)
    expr = build_expression_table(_read_text_table(rma_path), set(ic["COSMIC_ID"].tolist()), genes)
    p_expr, p_ic = out_dir / "gdsc_v17_expression_64genes.csv.gz", out_dir / "IC50_v17.csv.gz"
    tmp_e, tmp_i = p_expr.with_suffix(".tmp"), p_ic.with_suffix(".tmp")
    expr.to_csv(tmp_e, index=False, compression="gzip")
    ic.to_csv(tmp_i, index=False, compression="gzip")
    os.replace(tmp_e, p_expr)
    os.replace(tmp_i, p_ic)
    return [p_expr, p_ic]
