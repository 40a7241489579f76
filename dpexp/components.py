"""Base classes of the three pluggable component kinds: datasets, algorithms and metrics.

Conventions (ARCHITECTURE.md): a component has a stable ``name`` used in YAML and on the CLI; its parameters are
declared once as a pydantic model ``Params`` (extra keys forbidden, constraints stated with ``Field``); hyper-
parameters go to the constructor, data only to ``run``/``split``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict

from dpexp.chunk import ChunkRows
from dpexp.documented import Documented
from dpexp.errors import NonFiniteInput, UserError
from dpexp.privacy.guarantee import Guarantee
from dpexp.privacy.ledger import as_ledger
from dpexp.types import Output, Sizes, Split


class Params(Documented):
    """Base of every component's parameter model: unknown keys are errors, values are validated."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class NoParams(Params):
    pass


def key_omitted(params_cls: Any) -> dict[str, Any]:
    """The parameter values ``format_params`` leaves out for a parameter model: a parameter added after results were
    keyed without it may declare ``json_schema_extra={"key_omits": v}``, the value v that reproduces the behaviour
    from before it existed (e.g. rplr's ``sensitivity: paper``); given explicitly at v it stays out of the key, so
    the rows and noise streams keyed before keep their bytes."""
    out: dict[str, Any] = {}
    for name, f in getattr(params_cls, "model_fields", {}).items():
        extra = f.json_schema_extra
        if isinstance(extra, dict) and "key_omits" in extra:
            out[name] = extra["key_omits"]
    return out


def format_params(params: BaseModel | dict[str, Any], params_cls: Any = None) -> str:
    """Display string with sorted keys, e.g. ``omega_x=1.0,p1=0.35`` ('' when there are none).

    Only parameters given explicitly are shown, so adding a new parameter with a default keeps old keys stable; so
    is one given at the value that reproduces the behaviour from before it existed (``key_omitted`` of the model,
    ``params_cls`` for a dict of parameters).
    """
    if isinstance(params, BaseModel):
        d, omit = params.model_dump(exclude_unset=True), key_omitted(type(params))
    else:
        d, omit = dict(params), key_omitted(params_cls)
    return ",".join(f"{k}={d[k]}" for k in sorted(d) if not (k in omit and d[k] == omit[k]))


class Algorithm:
    """A (possibly private) regression algorithm.

    Class attributes every subclass sets:

    * ``name``: registry name; ``description``: one line for ``dpexp list``.
    * ``family``: the paper family the algorithm belongs to (``"gdsc"``, ``"slr"``, ``"dca"``...: the package
      ``dpexp/families/<family>/`` it lives in).
    * ``audit``: how ``dpexp audit`` tests its privacy claim, a ``dpexp.audit.plan.AuditPlan`` pointing to a
      design function of the family's ``audit.py`` (None for non-private algorithms, which are reported as not DP).
    * ``private``: False for non-private baselines (the runner then ignores epsilon and computes once per split).
    * ``formally_dp``: False for heuristics that use noise but carry no DP guarantee (e.g. ``oi_mos``).
    * ``neighbouring``: "replace-one" (bounded DP) or "add-remove" (unbounded DP); None when not private.
    * ``requires_delta``: True for (ε, δ) mechanisms that need δ > 0 (validation rejects δ = 0 for them).
    * ``guarantee_text``: the guarantee as a function of the parameters, for ``dpexp list algorithms NAME``, in the
      grammar of ``dpexp.privacy.guarantee_text`` (e.g. "pure ε-DP, replace-one; sigma: data → not DP"); a test runs
      every clause on a probe split and compares it with the ``Output.guarantee`` the code derives.
    * ``Params``: the pydantic parameter model.

    What a run spent is never declared here: it is ``Output.guarantee``, derived by the ledger from the mechanisms
    the run called (``dpexp.privacy``).
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    family: ClassVar[str] = ""
    audit: ClassVar[Any] = None   # dpexp.audit.plan.AuditPlan (not imported here: audit builds on components)
    private: ClassVar[bool] = True
    formally_dp: ClassVar[bool] = True
    neighbouring: ClassVar[str | None] = "replace-one"
    requires_delta: ClassVar[bool] = False
    guarantee_text: ClassVar[str] = ""
    Params: ClassVar[type[Params]] = NoParams

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every ``run`` and ``run_many`` a subclass defines refuses non-finite input at the estimator boundary
        (``_finite_run``, ``_finite_run_many``), so no estimator, built in or plugged in, loops on a NaN or releases
        a DP-labelled number computed from one (issue 33)."""
        super().__init_subclass__(**kwargs)
        for attr, guard in (("run", _finite_run), ("run_many", _finite_run_many)):
            f = cls.__dict__.get(attr)
            if f is not None and not getattr(f, "_finite_guard", False):
                setattr(cls, attr, guard(f))

    def __init__(self, **params: Any) -> None:
        self.params = self.Params(**params)

    @property
    def params_str(self) -> str:
        return format_params(self.params)

    def run(self, split: Split, epsilon: float, delta: float, ledger: Any, trials: int = 1) -> Output:
        """Fit on ``split``'s private (+ public) rows and predict its test rows, ``trials`` independent times.

        ``ledger`` is the cell's ``dpexp.privacy.PrivacyLedger`` (a numpy Generator or noise source is accepted too:
        ``as_ledger`` wraps it).  Privacy noise is drawn only through ``dpexp.privacy.mechanisms`` with the ledger as
        source; other randomness from ``ledger.noise.generator``.  The returned ``Output.guarantee`` is
        ``ledger.guarantee()``: derived from the mechanisms called, never from the config.
        """
        raise NotImplementedError

    def run_many(self, splits: list[Split], epsilon: float, delta: float, ledgers: list[Any],
                 trials: int = 1, chunk: ChunkRows | None = None) -> list[Output | Exception]:
        """Run on several splits (e.g. all drugs of a chunk) with one ledger each.

        Override to batch the linear algebra; the default loops.  Must draw each split's randomness only from its own
        ledger so results do not depend on how cells are grouped.  Return an ``Exception`` in place of an
        ``Output`` for a split that failed.  ``chunk`` (``dpexp.chunk.ChunkRows``, given by the runner; None for a
        call of its own) names the splits' rows within their chunk and holds the chunk's scratch, where a method
        may keep deterministic functions of those rows for the chunk's other calls (docs/extending.md, Caches).  The
        runner passes it only to a ``run_many`` that declares the parameter.
        """
        out: list[Output | Exception] = []
        for split, ledger in zip(splits, ledgers):
            try:
                out.append(self.run(split, epsilon, delta, ledger, trials))
            except Exception as exc:  # recorded per cell by the runner
                out.append(exc)
        return out


def _finite_run(run: Callable[..., Output]) -> Callable[..., Output]:
    """``run`` that first raises ``NonFiniteInput`` (one line: algorithm, then ``Split.nonfinite``'s reason) for a
    split with a NaN or ±inf among its private or public rows, before anything is drawn."""

    @functools.wraps(run)
    def checked(self: Algorithm, split: Split, *args: Any, **kwargs: Any) -> Output:
        reason = split.nonfinite()
        if reason:
            raise NonFiniteInput(f"{self.name}: {reason}")
        return run(self, split, *args, **kwargs)

    checked._finite_guard = True   # type: ignore[attr-defined]
    return checked


def _finite_run_many(run_many: Callable[..., list]) -> Callable[..., list]:
    """``run_many`` that returns ``NonFiniteInput`` in the place of each split with non-finite rows and runs the
    others (with their own ledgers, in their order: a split's draws do not depend on the others)."""

    @functools.wraps(run_many)
    def checked(self: Algorithm, splits: list[Split], epsilon: float, delta: float, ledgers: list[Any],
                *args: Any, **kwargs: Any) -> list:
        reasons = [s.nonfinite() for s in splits]
        if not any(reasons):
            return run_many(self, splits, epsilon, delta, ledgers, *args, **kwargs)
        keep = [i for i, r in enumerate(reasons) if not r]
        out: list = [NonFiniteInput(f"{self.name}: {r}") if r else None for r in reasons]
        if kwargs.get("chunk") is not None:   # the kept splits' names in their chunk
            kwargs["chunk"] = kwargs["chunk"].select(keep)
        if keep:
            done = run_many(self, [splits[i] for i in keep], epsilon, delta, [ledgers[i] for i in keep],
                            *args, **kwargs)
            for i, o in zip(keep, done):
                out[i] = o
        return out

    checked._finite_guard = True   # type: ignore[attr-defined]
    return checked


class BatchedAlgorithm(Algorithm):
    """An algorithm written as ``run_many`` (batched over the subsets of a chunk); ``run`` delegates to it and
    raises the exception a failed split returns."""

    def run(self, split: Split, epsilon: float, delta: float, ledger: Any, trials: int = 1) -> Output:
        out = self.run_many([split], epsilon, delta, [ledger], trials)[0]
        if isinstance(out, Exception):
            raise out
        return out

    def run_many(self, splits: list[Split], epsilon: float, delta: float, ledgers: list[Any],
                 trials: int = 1, chunk: ChunkRows | None = None) -> list[Output | Exception]:
        raise NotImplementedError

    def each_split(self, splits: list[Split], epsilon: float, ledgers: list[Any],
                   fit: Callable[[Split, Any], Output]) -> list[Output | Exception]:
        """``run_many`` of a pure-ε method fitted one split at a time: ε checked once (every split fails with the
        same one line if it is not > 0 and finite), then ``fit(split, ledger)`` per split with its ledger wrapped by
        ``as_ledger``, an exception recorded in place of that split's ``Output``."""
        if not (epsilon > 0 and np.isfinite(epsilon)):
            return [UserError(f"{self.name}: epsilon must be > 0 and finite, got {epsilon}") for _ in splits]
        out: list[Output | Exception] = []
        for split, ledger in zip(splits, ledgers):
            try:
                out.append(fit(split, as_ledger(ledger)))
            except Exception as exc:  # recorded per cell
                out.append(exc)
        return out


class Reference(Algorithm):
    """A non-private reference (a baseline line in a figure): it releases nothing under DP and spends no budget, so
    the runner computes it once per split whatever ε is, and the audit reports it as "not DP by design".  Mix it in
    before ``BatchedAlgorithm`` for a batched one (``class BayesLR(Reference, BatchedAlgorithm)``)."""

    private: ClassVar[bool] = False
    neighbouring: ClassVar[str | None] = None
    guarantee_text: ClassVar[str] = "not DP (non-private baseline)"


@dataclass(frozen=True)
class Preprocessing:
    """What a dataset computed before the split, and whether it read the private rows (one rule for every family,
    docs/privacy.md "Preprocessing"): a statistic of private rows used without paying for it makes every row
    ``guarantee: none``; bounds, centres or ranks that are public — declared in the config, or fixed by a synthetic
    generator's known law — keep the algorithm's guarantee.

    * ``note``: one short line on every row's ``privacy_note`` (kept short: it is repeated on every row); for a
      leaking statement it is the reason of the ``none`` guarantee, e.g. "min–max rescaling over the private rows
      (the paper's preprocessing), not DP";
    * ``detail``: the full statement (``dpexp list datasets NAME``, the manifest's privacy summary);
    * ``leaks``: True — a statistic of the private rows enters the rows at no cost, so the runner downgrades every
      row's guarantee to ``none`` with ``note`` as the reason; False — nothing computed reads a private row (public
      constants, row-local maps, public pools), the guarantee stands (with ``note``, if any, as a note).
    """

    note: str
    detail: str = ""
    leaks: bool = False

    def apply(self, guarantee: Guarantee) -> Guarantee:
        """``guarantee`` with this statement: downgraded to ``none`` (leaks) or with the note (public)."""
        if not self.note:
            return guarantee
        return guarantee.not_dp(self.note) if self.leaks else guarantee.with_note(self.note)

    def to_dict(self) -> dict[str, Any]:
        return {"note": self.note, "detail": self.detail or self.note,
                "treated_as": TREATED_AS[self.leaks]}


#: how a statement is treated, by ``Preprocessing.leaks`` (the manifest and ``dpexp list datasets NAME`` say it)
TREATED_AS = {True: "reads private rows unpaid: guarantee none", False: "public: the guarantee stands"}


#: the statement of a dataset that reads no row but its own (generators drawing independent rows)
NOTHING_SHARED = Preprocessing("", "nothing is computed across rows: each row is drawn or read on its own")


class Dataset:
    """A dataset: knows its subsets and how to draw the split of one cell.

    * ``shared_split``: if True the split stream is keyed by (dataset, repeat) only, so every subset of a repeat
      uses the same random split (GDSC protocol); otherwise by (dataset, subset, repeat).
    * ``download_hint``: the command that fetches missing files (shown in "data not found" errors).
    * ``release_point``: what one row's ε covers for this dataset and what composes on top, in plain words (the
      manifest's privacy summary; ``{n}`` is replaced by the number of subsets of the run), e.g. GDSC: per drug.
    * ``preprocessing()``: what was computed from all rows before the split (``Preprocessing``): every dataset
      states it, and the runner adds it to every row's guarantee.
    * ``preprocessing_options``: the parameter sets that choose the preprocessing, by a label naming the
      parameters (e.g. ``{"paper (default)": {}, "centre: law": {"centre": "law"}}``); ``dpexp list datasets NAME``
      states each option's ``preprocessing()`` (built from those parameters, so the text is the code's) and whether
      it is public.  Empty: the default parameters are the only option listed.
    * ``data_files``: the files the dataset reads (relative to a data directory) and their SHA-256 (None where no
      byte checksum is known); ``dpexp data download`` fetches nothing when they are present and verify.
    * ``subsets_share_rows``: True when every subset is a release about the same people (GDSC: each drug's model
      is fitted on the same cell lines), so a person's loss composes over the run's subsets; the manifest's
      privacy summary then states that total (``accounting.repeated_release``).  False: subsets are disjoint
      (parallel composition) or there is one.
    * ``nested_sizes``: True when, within one repeat, each part (test, public, private) of a subset's split is the
      first rows of that subset's whole part, whatever the other sizes (GDSC: prefixes of each pool or sequence of
      the fold), and read-only.  The runner's ``ChunkRows`` then names a part by its length, so what a method
      computes from it is shared by every size of the chunk.  False: shared within one size only.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    shared_split: ClassVar[bool] = False
    download_hint: ClassVar[str | None] = None
    release_point: ClassVar[str] = ""
    subsets_share_rows: ClassVar[bool] = False
    nested_sizes: ClassVar[bool] = False
    data_files: ClassVar[dict[str, str | None]] = {}
    preprocessing_options: ClassVar[dict[str, dict[str, Any]]] = {}
    Params: ClassVar[type[Params]] = NoParams

    def __init__(self, data_dir: Path | None = None, **params: Any) -> None:
        self.data_dir = data_dir
        self.params = self.Params(**params)

    @property
    def params_str(self) -> str:
        return format_params(self.params)

    def subsets(self) -> list[str]:
        """Names of the subsets (drugs, cells, tracts...); a dataset without subsets has one called 'all'."""
        return ["all"]

    def n_rows(self, subset: str) -> int | None:
        """Rows available in ``subset`` (None when unbounded, e.g. a generator); used to validate sizes."""
        return None

    def check(self) -> None:
        """Raise ``DataNotFoundError``/``UserError`` if the data cannot be used (called during validation)."""

    def preprocessing(self) -> Preprocessing:
        """What this dataset (with its parameters) computed from all rows before splitting; see ``Preprocessing``.
        Every registered dataset overrides it (a registry-wide test checks)."""
        raise NotImplementedError(f"dataset {self.name!r} does not state its preprocessing")

    def split(self, subset: str, sizes: Sizes, rng: np.random.Generator) -> Split:
        raise NotImplementedError

    @classmethod
    def expected_files(cls) -> dict[str, str | None]:
        """``data_files`` (a subclass may derive them from its own tables)."""
        return dict(cls.data_files)

    @classmethod
    def download(cls, dest: Path) -> list[Path]:
        """Fetch the public originals into ``dest`` (verifying checksums); used by ``dpexp data download NAME``.

        Datasets without a download (generators) raise ``UserError``.
        """
        from dpexp.errors import UserError

        raise UserError(f"dataset {cls.name!r} has no download (it is generated or must be placed by hand)")


class TableDataset(Dataset):
    """A dataset of one table of rows (``table()``: X, y; no subsets) split per repeat by one random permutation of
    its rows, cut into the test, public and private pools of ``Sizes.pools`` (nested prefixes over a size grid).
    ``check_sizes`` refuses the sizes the table cannot hold; ``split_meta`` is the ``Split.meta``."""

    def table(self) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def check_sizes(self, n: int, sizes: Sizes) -> None:
        """Raise ``UserError`` if ``sizes`` do not fit in the table's ``n`` rows."""

    def split_meta(self, X: np.ndarray, y: np.ndarray) -> dict[str, Any]:
        return {}

    def check(self) -> None:
        self.table()

    def n_rows(self, subset: str) -> int | None:
        return int(self.table()[0].shape[0])

    def split(self, subset: str, sizes: Sizes, rng: np.random.Generator) -> Split:
        X, y = self.table()
        n = X.shape[0]
        self.check_sizes(n, sizes)
        perm = rng.permutation(n)
        it, iu, iv = (perm[s] for s in sizes.pools(n))
        return Split(X[iv], y[iv], X[iu], y[iu], X[it], y[it], self.split_meta(X, y))


class Metric:
    """A scalar summary of one cell's ``Output`` against its ``Split``.

    ``reads_private``: True when the value is a function of the split's *private* rows beyond what the algorithm
    released (e.g. the error against the non-private OLS of the private rows): an evaluation against private data,
    not a release.  The runner writes such rows with guarantee ``none`` and the note "evaluation against private
    data; release: <the cell's guarantee>" (``privacy.guarantee.evaluation_columns``); plots and the report read the
    release's guarantee from the other rows or that note.  A subclass whose answer depends on its parameters makes
    it a property.  Metrics of the output against the test rows, public rows or public facts leave it False.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    Params: ClassVar[type[Params]] = NoParams
    reads_private: ClassVar[bool] = False

    def __init__(self, **params: Any) -> None:
        self.params = self.Params(**params)

    def __call__(self, output: Output, split: Split) -> float:
        raise NotImplementedError

    def many(self, outputs: list[Output], splits: list[Split]) -> list[float]:
        """The metric of every (output, split) pair — the cells of one algorithm and budget in a chunk.

        Override to vectorise over cells; the values must equal ``[self(o, s) ...]`` exactly (to the bit), so results
        never depend on how cells are grouped.  Raise ``errors.NotBatchable`` to decline (the runner then scores the
        cells one by one, each with its own error); any other exception fails the metric in every cell of the call,
        with its message."""
        return [float(self(o, s)) for o, s in zip(outputs, splits)]
