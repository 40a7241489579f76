"""The papers' reference values and claims (``docs/paper_values.yaml``) and how our number for each is computed.

Every entry quotes the paper's *text* (never a value read off a plot): ``as_written`` is the quote, ``value`` the
number in it (when there is one), ``source`` the paper's section/table.  ``ours`` says how to compute the matching
number from ``results.csv``:

* ``metric`` and ``where`` pick the rows; a ``where`` key is a results column (``label``, ``epsilon``,
  ``n_private_requested``, ...) or a dataset/algorithm parameter (``state``, ``beta``), numbers compared with a
  relative tolerance of 1e-9;
* ``stat`` reduces them: ``mean``/``median``/``std`` over Monte Carlo repeats of the subset-averaged value (the
  aggregation of ``dpexp summarize``, :func:`dpexp.results.aggregate`; the rows must form one point of one curve);
  ``subset_mean|median|min|max`` over subsets (drugs, tracts) of the per-subset mean; ``n_subsets``;
  ``argmax_params`` (the algorithm parameters of the best point, for searches);
* ``field`` reduces another column than ``value`` (e.g. ``n_private`` for dataset sizes);
* ``subsets: {by: METRIC, lowest|highest: FRACTION}`` keeps the subsets with the lowest/highest mean ``METRIC``;
* ``minus: {...}`` computes the same at a second point (``where`` updated with these keys) and reports the
  difference, e.g. one method minus another.

``compare`` says how the two are shown: ``difference`` (ours − paper), ``ratio`` (also paper ÷ ours), ``claim`` (a
statement without a number: ours is shown, with ``check`` — our reading of the claim as an inequality — when given),
``params`` (argmax parameters against the paper's).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import ConfigDict, Field, ValidationError, model_validator

from dpexp.documented import Documented
from dpexp.errors import UserError

DEFAULT_FILE = Path(__file__).resolve().parents[2] / "docs" / "paper_values.yaml"
STATS = ("mean", "median", "std", "subset_mean", "subset_median", "subset_min", "subset_max", "n_subsets",
         "argmax_params")
_POINT_KEYS = ["dataset", "dataset_params", "algorithm", "label", "params", "metric", "epsilon", "delta",
               "n_private_requested", "n_public_requested", "n_test_requested"]


class _Strict(Documented):
    model_config = ConfigDict(extra="forbid")


class SubsetSelect(_Strict):
    by: str = Field(description="metric whose per-subset mean orders the subsets")
    lowest: float | None = Field(None, gt=0, le=1)
    highest: float | None = Field(None, gt=0, le=1)

    @model_validator(mode="after")
    def _one(self) -> "SubsetSelect":
        if (self.lowest is None) == (self.highest is None):
            raise ValueError("give exactly one of lowest, highest")
        return self


class Ours(_Strict):
    metric: str
    where: dict[str, Any] = Field(default_factory=dict)
    stat: Literal[STATS] = "mean"  # type: ignore[valid-type]
    field: Literal["value", "n_private", "n_public", "n_test", "d"] = "value"
    subsets: SubsetSelect | None = None
    minus: dict[str, Any] | None = None

    @property
    def metrics(self) -> list[str]:
        """The metrics whose rows ``compute`` reads."""
        return [self.metric, *([self.subsets.by] if self.subsets is not None else [])]


class Check(_Strict):
    op: Literal["<", "<=", ">", ">=", "=="]
    value: float


class Entry(_Strict):
    id: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    paper: str
    source: str = Field(description="section / table / figure of the paper the quote is from")
    quantity: str
    as_written: str = Field(description="the paper's words or number, quoted")
    value: float | dict[str, float] | None = None
    compare: Literal["difference", "ratio", "claim", "params"] = "difference"
    check: Check | None = None
    ours: Ours | None = None
    note: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> "Entry":
        if self.compare in ("difference", "ratio") and not isinstance(self.value, float):
            raise ValueError(f"compare: {self.compare} needs a numeric value")
        if self.compare == "params" and not isinstance(self.value, dict):
            raise ValueError("compare: params needs value: {param: number, ...}")
        if self.ours is not None and (self.compare == "params") != (self.ours.stat == "argmax_params"):
            raise ValueError("compare: params goes with ours.stat: argmax_params (and only with it)")
        return self


class ExperimentRefs(_Strict):
    figure: str = Field(description="the paper figure/table the experiment reproduces")
    numbers_in_text: bool = Field(description="false: the figure's values are only in the plot image")
    entries: list[Entry] = Field(default_factory=list)


class Paper(_Strict):
    citation: str
    text: str = Field(description="file of the paper's text the quotes come from")


class PaperValues(_Strict):
    papers: dict[str, Paper]
    experiments: dict[str, ExperimentRefs]

    @model_validator(mode="after")
    def _known_papers(self) -> "PaperValues":
        for name, refs in self.experiments.items():
            ids = [e.id for e in refs.entries]
            if len(ids) != len(set(ids)):
                raise ValueError(f"experiments.{name}: entry ids must be unique")
            for e in refs.entries:
                if e.paper not in self.papers:
                    raise ValueError(f"experiments.{name}.{e.id}: paper {e.paper!r} is not in papers")
        return self


def load(path: Path | None = None) -> PaperValues | None:
    """The reference values; None when the default file is absent (an installed package without docs/)."""
    import yaml

    p = Path(path) if path is not None else DEFAULT_FILE
    if not p.is_file():
        if path is None:
            return None
        raise UserError(f"{p}: no such file (--paper-values)")
    try:
        raw = yaml.safe_load(p.read_text(encoding="utf-8"))
        return PaperValues.model_validate(raw)
    except yaml.YAMLError as exc:
        raise UserError(f"{p}: invalid YAML: {str(exc).splitlines()[0]}") from None
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise UserError(f"{p}: {where}: {err['msg']}") from None


# ------------------------------------------------------------------------------------------------------------------
# Computing ours


@dataclass
class Result:
    value: float | str | None
    parts: tuple[Any, Any] | None = None   # (first, second) when ``minus`` is used
    problem: str = ""                      # why there is no value (e.g. the point is not in this run)


def compute(df: pd.DataFrame, ours: Ours) -> Result:
    first = _one(df, ours, ours.where)
    if ours.minus is None or first.problem:
        return first
    second = _one(df, ours, {**ours.where, **ours.minus})
    if second.problem:
        return Result(None, problem=f"second point: {second.problem}")
    assert isinstance(first.value, float) and isinstance(second.value, float)
    return Result(first.value - second.value, (first.value, second.value))


def _one(df: pd.DataFrame, ours: Ours, where: dict[str, Any]) -> Result:
    from dpexp.results import aggregate

    if ours.metric not in set(df["metric"].unique()):
        return Result(None, problem=f"metric {ours.metric!r} is not in these results")
    d = select(df[df["metric"] == ours.metric], where)
    if d.empty:
        return Result(None, problem="no rows with " + ", ".join(f"{k} = {v}" for k, v in where.items()))
    if ours.subsets is not None:
        d = _subset_selection(df, d, where, ours.subsets)
    if ours.stat == "argmax_params":
        means = d.groupby("params", sort=True, observed=True)["value"].mean().dropna()
        if means.empty:
            return Result(None, problem="no finite values")
        return Result(str(means.idxmax()))
    keys = [k for k in _POINT_KEYS if k in d.columns]
    points = d[keys].drop_duplicates()
    if len(points) > 1:
        varying = [k for k in keys if d[k].nunique() > 1]
        return Result(None, problem=f"the rows form {len(points)} points (they differ in {', '.join(varying)}); "
                                    "pin them in `where`")
    if ours.stat == "n_subsets":
        return Result(float(d[["dataset_params", "subset"]].drop_duplicates().shape[0]))
    if ours.stat.startswith("subset_"):
        per_subset = d.groupby(["dataset_params", "subset"], sort=True, observed=True)[ours.field].mean().dropna()
        if per_subset.empty:
            return Result(None, problem="no finite values")
        fn = ours.stat.removeprefix("subset_")
        return Result(float(getattr(per_subset, fn)()))
    if ours.field != "value":
        return Result(None, problem=f"stat {ours.stat} applies to value; use a subset_ stat for {ours.field}")
    # x = the requested size: constant over the point (the sizes seen may differ per subset, e.g. GDSC drugs)
    agg = aggregate(d, "n_private_requested", ours.metric)
    if len(agg) != 1:
        return Result(None, problem=f"the rows form {len(agg)} points; pin them in `where`")
    v = float(agg[ours.stat].iloc[0])
    return Result(None, problem="no finite values") if math.isnan(v) else Result(v)


def select(d: pd.DataFrame, where: dict[str, Any]) -> pd.DataFrame:
    """Rows whose column (or dataset/algorithm parameter) equals each ``where`` value."""
    for key, val in where.items():
        col = _column(d, key)
        if col is None:
            return d.iloc[0:0]
        if isinstance(val, (int, float)) and not isinstance(val, bool):
            num = pd.to_numeric(col, errors="coerce").to_numpy(float)
            d = d[np.isclose(num, float(val), rtol=1e-9, atol=0.0)]
        else:
            d = d[col.astype(str) == str(val)]
    return d


def _column(d: pd.DataFrame, key: str) -> pd.Series | None:
    if key in d.columns:
        return d[key]
    from dpexp.results import parse_params  # k=v,k2=v2 strings of dataset_params/params

    # parse each distinct string once (a results table has few distinct parameter strings and many rows)
    dp = d["dataset_params"].map({s: parse_params(s).get(key) for s in d["dataset_params"].unique()})
    ap = d["params"].map({s: parse_params(s).get(key) for s in d["params"].unique()})
    col = dp.where(dp.notna(), ap)
    return None if col.isna().all() else col


def _subset_selection(df: pd.DataFrame, d: pd.DataFrame, where: dict[str, Any], sel: SubsetSelect) -> pd.DataFrame:
    """Keep the subsets whose mean ``sel.by`` is among the lowest/highest fraction (of those in ``d``)."""
    by_where = {k: v for k, v in where.items() if k not in ("metric",)}
    order = select(df[df["metric"] == sel.by], by_where).groupby(["dataset_params", "subset"],
                                                                 observed=True)["value"].mean()
    order = order.reindex(pd.MultiIndex.from_frame(d[["dataset_params", "subset"]].drop_duplicates())).dropna()
    k = max(1, int(round(len(order) * (sel.lowest or sel.highest))))
    chosen = order.nsmallest(k) if sel.lowest is not None else order.nlargest(k)
    keep = set(chosen.index)
    return d[[(a, b) in keep for a, b in zip(d["dataset_params"], d["subset"])]]


def check_holds(check: Check, value: float) -> bool:
    return {"<": value < check.value, "<=": value <= check.value, ">": value > check.value,
            ">=": value >= check.value, "==": math.isclose(value, check.value, rel_tol=1e-9, abs_tol=1e-12)}[check.op]


def params_match(paper: dict[str, float], ours: str) -> bool:
    from dpexp.results import parse_params

    got = parse_params(ours)
    return all(isinstance(got.get(k), float) and math.isclose(got[k], v, rel_tol=1e-9) for k, v in paper.items())
