"""The ``csv`` dataset: a user's own table (CSV, or Parquet when pyarrow is installed) for every family whose
mathematics allows it — the GDSC methods (rplr, narplr, adassp, plr, lr: several features) and the SLR methods
(one feature, ``domain: unit``).  It lives below the families (docs/own_data.md), so no family imports another.

The config names the file, the response and feature columns, optional ``subset_by`` columns (each distinct value
is one subset: one release point, as GDSC's drugs are), how rows are split, and the **declared public bounds** of
every column it uses (required: nothing is computed from the rows to set them).  Each column is mapped with its
bounds [lo, hi] onto the method family's domain, row by row:

* ``domain: symmetric`` (default; the GDSC methods): v' = (v − (lo + hi)/2) / ((hi − lo)/2) ∈ [−1, 1], so
  |x_j| ≤ 1 (plr's ``B_x = 1``, the ``sigma_bound_x = 1`` of rplr's DP σ̂) and |y| ≤ 1.  These methods fit no
  intercept: the midpoint of the declared bounds is the origin.
* ``domain: unit`` (the SLR methods, Alabi et al.'s [0, 1]²): v' = (v − lo) / (hi − lo) ∈ [0, 1].

A value outside its declared bounds is clipped to them (``out_of_bounds: clip``, default) or refused
(``out_of_bounds: error``: a ``UserError`` naming the column, the count and the first row).  Clipping is a map of
each row on its own, so neighbouring tables stay neighbours and every method's guarantee holds for the original
rows.  The counts of clipped rows per column go to the manifest (``datasets[i].out_of_bounds``) and one warning
line; they are a fact about the table for its analyst, not a release of any run.

Split, per repeat, from the rows of one subset (``sizes`` as for every dataset, nested prefixes of one random
permutation): without ``public_column`` the permutation is cut into the test, public and private pools
(``Sizes.pools``); with it, the rows it marks (1/true/yes) are the public pool and the others are cut into test and
private.  ``sizes.n_private: all`` takes every remaining row.  With ``sizes.n_test: 0`` and one feature, the test
points are ``test_points`` (in the feature's own units; default the 25 % and 75 % points of its declared range,
Alabi et al.'s p25/p75) with unknown response (NaN), as the SLR datasets do.

Rows with a missing or non-numeric value in a used column are refused (``UserError`` with the row), never
silently dropped.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, field_validator, model_validator

from dpexp import cache
from dpexp.components import Dataset, Params, Preprocessing
from dpexp.errors import DataNotFoundError, UserError
from dpexp.registry import register_dataset
from dpexp.types import Sizes, Split

Bounds = tuple[float, float]


class OutOfBoundsWarning(UserWarning):
    """Rows of a ``csv`` dataset outside their declared bounds were clipped (counts in the manifest)."""


class CsvParams(Params):
    path: str
    """the table: a .csv file (or .parquet with pyarrow), absolute or relative to the working directory"""
    response: dict[str, Bounds]
    """the response column and its declared public bounds, e.g. {sbp: [80, 200]} (required: nothing is computed from
    the rows to set them)"""
    features: dict[str, Bounds]
    """the feature columns, in order, each with its declared public bounds, e.g. {age: [20, 80], bmi: [15, 45]}"""
    subset_by: str | list[str] | None = None
    """a column (or [[several]]) whose distinct values cut the table into subsets, each one release point; default:
    one subset 'all'"""
    public_column: str | None = None
    """a column marking the public rows (1/true/yes); default: public rows drawn at random (sizes.n_public)"""
    domain: Literal["symmetric", "unit"] = "symmetric"
    """map each column with its bounds onto [-1, 1] (GDSC methods) or [0, 1] (SLR methods)"""
    out_of_bounds: Literal["clip", "error"] = "clip"
    """values outside their declared bounds: clip them and count (manifest, one warning line), or refuse the table"""
    test_points: list[float] | None = None
    """one feature and sizes.n_test 0: the x values (own units) to predict at, written [[35, 65]]; default the 25 %
    and 75 % points of the declared range"""
    separator: str = Field(",", min_length=1, description="CSV field separator")

    @field_validator("response", "features")
    @classmethod
    def _bounds(cls, v: dict[str, Bounds]) -> dict[str, Bounds]:
        if not v:
            raise ValueError("must name at least one column with its bounds, e.g. {age: [20, 80]}")
        for col, (lo, hi) in v.items():
            if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
                raise ValueError(f"bounds of column {col!r} need finite lo < hi, got {[lo, hi]}")
        return v

    @property
    def target(self) -> str:
        return next(iter(self.response))

    @property
    def columns(self) -> list[str]:
        return list(self.features)

    @property
    def bounds(self) -> dict[str, Bounds]:
        return {**self.response, **self.features}

    @property
    def subset_columns(self) -> list[str]:
        return [self.subset_by] if isinstance(self.subset_by, str) else list(self.subset_by or [])

    @model_validator(mode="after")
    def _columns(self) -> "CsvParams":
        if len(self.response) != 1:
            raise ValueError(f"response must name exactly one column, got {list(self.response)}")
        if self.target in self.features:
            raise ValueError(f"the response {self.target!r} must not also be a feature")
        used = [self.target, *self.features]
        clash = [c for c in [*self.subset_columns, self.public_column] if c in used]
        if clash:
            raise ValueError(f"subset_by/public_column must not be a response or feature column, got {clash[0]!r}")
        if self.test_points is not None:
            if len(self.features) != 1:
                raise ValueError("test_points need exactly one feature")
            if not self.test_points:
                raise ValueError("test_points must be a non-empty list")
            lo, hi = self.features[self.columns[0]]
            off = [t for t in self.test_points if not lo <= t <= hi]
            if off:
                raise ValueError(f"test_points must lie in the declared bounds {[lo, hi]} of "
                                 f"{self.columns[0]!r}, got {off[0]:g}")
        return self


def to_domain(v: np.ndarray, bounds: Bounds, domain: str) -> np.ndarray:
    """``v`` (already within ``bounds``) mapped linearly onto [-1, 1] (``symmetric``) or [0, 1] (``unit``)."""
    lo, hi = bounds
    if domain == "unit":
        return (v - lo) / (hi - lo)
    return (v - 0.5 * (lo + hi)) / (0.5 * (hi - lo))


def from_domain(v: np.ndarray, bounds: Bounds, domain: str) -> np.ndarray:
    """The inverse of ``to_domain``: values of the domain back in the column's own units."""
    lo, hi = bounds
    if domain == "unit":
        return lo + np.asarray(v, dtype=float) * (hi - lo)
    return 0.5 * (lo + hi) + np.asarray(v, dtype=float) * 0.5 * (hi - lo)


def clip_to_bounds(values: np.ndarray, bounds: Bounds) -> tuple[np.ndarray, int]:
    """(``values`` clipped to ``bounds``, the number of values that were outside)."""
    lo, hi = bounds
    outside = int(np.count_nonzero((values < lo) | (values > hi)))
    return np.clip(values, lo, hi), outside


def _read(path: Path, sep: str) -> pd.DataFrame:
    if path.suffix.lower() in (".parquet", ".pq"):
        try:
            return pd.read_parquet(path)
        except ImportError:
            raise UserError(f"{path}: reading Parquet needs pyarrow (pip install pyarrow); or save the table as "
                            "CSV") from None
    return pd.read_csv(path, sep=sep)


def _numeric(df: pd.DataFrame, col: str, path: Path) -> np.ndarray:
    v = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float)
    bad = np.flatnonzero(~np.isfinite(v))
    if bad.size:
        raw = df[col].iloc[bad[0]]
        got = "a missing value" if pd.isna(raw) else repr(str(raw))
        raise UserError(f"{path}: column {col!r} must be numeric and finite in every row, got {got} in data row "
                        f"{bad[0] + 1} ({bad.size} such row{'s' * (bad.size != 1)}); fix or remove them")
    return v


@cache.memoize("datasets.csv", maxsize=4)
def load_table(path: str, stamp: Any, params_json: str) -> dict[str, Any]:
    """The table's subsets as mapped arrays and the out-of-bounds counts (memoised per file state and params)."""
    p = CsvParams.model_validate_json(params_json)
    file = Path(path)
    df = _read(file, p.separator)
    need = [p.target, *p.columns, *p.subset_columns, *([p.public_column] if p.public_column else [])]
    missing = [c for c in need if c not in df.columns]
    if missing:
        shown = ", ".join(map(str, df.columns[:12])) + (", ..." if len(df.columns) > 12 else "")
        raise UserError(f"{file}: no column {missing[0]!r} (columns: {shown})")
    if len(df) == 0:
        raise UserError(f"{file}: the table has no rows")
    counts: dict[str, int] = {}
    mapped: dict[str, np.ndarray] = {}
    outside_any = np.zeros(len(df), dtype=bool)
    for col in [p.target, *p.columns]:
        raw = _numeric(df, col, file)
        clipped, outside = clip_to_bounds(raw, p.bounds[col])
        outside_any |= (raw < p.bounds[col][0]) | (raw > p.bounds[col][1])
        if outside and p.out_of_bounds == "error":
            first = int(np.flatnonzero((raw < p.bounds[col][0]) | (raw > p.bounds[col][1]))[0])
            raise UserError(f"{file}: column {col!r} must lie in its declared bounds {list(p.bounds[col])} "
                            f"(out_of_bounds: error), got {raw[first]:g} in data row {first + 1} ({outside} rows "
                            "outside); widen the bounds or use out_of_bounds: clip")
        counts[col] = outside
        mapped[col] = to_domain(clipped, p.bounds[col], p.domain)
    outside_rows = int(np.count_nonzero(outside_any))
    X = np.column_stack([mapped[c] for c in p.columns])
    y = mapped[p.target]
    public = np.zeros(len(df), dtype=bool)
    if p.public_column:
        marks = df[p.public_column].astype(str).str.strip().str.lower()
        ok = marks.isin(["1", "0", "true", "false", "yes", "no", "1.0", "0.0"])
        if not ok.all():
            i = int(np.flatnonzero(~ok.to_numpy())[0])
            raise UserError(f"{file}: public_column {p.public_column!r} must be 1/0, true/false or yes/no, got "
                            f"{df[p.public_column].iloc[i]!r} in data row {i + 1}")
        public = marks.isin(["1", "true", "yes", "1.0"]).to_numpy()
    if p.subset_columns:
        keys = df[p.subset_columns].astype(str).agg("/".join, axis=1).to_numpy()
    else:
        keys = np.full(len(df), "all", dtype=object)
    subsets = {str(k): np.flatnonzero(keys == k) for k in sorted(set(keys))}
    return {"X": X, "y": y, "public": public, "subsets": subsets, "counts": counts, "rows_clipped": outside_rows,
            "n_rows": len(df)}


@register_dataset
class CsvTable(Dataset):
    """A table of your own (CSV or Parquet): response and feature columns with declared public bounds, optional
    subsets and a public-row column; mapped onto [-1, 1] (GDSC methods) or [0, 1] (SLR methods); docs/own_data.md."""

    name = "csv"
    description = "your own table (CSV/Parquet): declared bounds, subsets, random or marked public rows"
    release_point = ("one subset: a row's epsilon covers one run on the private rows of one subset (one value of the "
                     "subset_by columns); the run's {n} subset(s) are disjoint sets of rows, so by parallel "
                     "composition that is also each row's loss per algorithm and budget")
    Params = CsvParams

    def _file(self) -> Path:
        f = Path(self.params.path).expanduser()
        if not f.is_file():
            raise DataNotFoundError(f"data file not found: {f} (csv dataset: path is absolute or relative to the "
                                    f"working directory {Path.cwd()})")
        return f

    def _data(self) -> dict[str, Any]:
        f = self._file().resolve()
        st = f.stat()
        return load_table(str(f), (st.st_size, st.st_mtime_ns), self.params.model_dump_json())

    def check(self) -> None:
        self._data()

    def manifest_record(self) -> dict[str, Any]:
        """What the manifest records of this table beside the preprocessing: the out-of-bounds counts.  Said also
        in one warning (once per process and message): the run's driver writes the manifest, so worker processes,
        which build the dataset again, do not repeat it."""
        data = self._data()
        n = data["rows_clipped"]
        if n:
            what = ", ".join(f"{c}: {k}" for c, k in data["counts"].items() if k)
            msg = (f"csv dataset {self.params.path}: {n} of {data['n_rows']} rows outside their declared bounds "
                   f"were clipped ({what}; counts in the manifest; out_of_bounds: error refuses them)")
            cache.memo("datasets.csv_warnings", msg, lambda: warnings.warn(msg, OutOfBoundsWarning, stacklevel=2)
                       or True)
        return {"out_of_bounds": {"action": self.params.out_of_bounds, "rows_clipped": data["rows_clipped"],
                                  "rows": data["n_rows"], "by_column": dict(data["counts"])}}

    def preprocessing(self) -> Preprocessing:
        p = self.params
        target = "[-1, 1]" if p.domain == "symmetric" else "[0, 1]"
        return Preprocessing("", f"nothing is computed across rows: every column is mapped with its declared public "
                                 f"bounds onto {target} and values outside them are "
                                 f"{'clipped' if p.out_of_bounds == 'clip' else 'refused'} row by row "
                                 f"({', '.join(f'{c} in {list(b)}' for c, b in p.bounds.items())})")

    def subsets(self) -> list[str]:
        return list(self._data()["subsets"])

    def _rows(self, subset: str) -> np.ndarray:
        subs = self._data()["subsets"]
        if subset not in subs:
            raise UserError(f"csv dataset {self.params.path}: unknown subset {subset!r}; valid: "
                            f"{', '.join(list(subs)[:10])}")
        return subs[subset]

    def n_rows(self, subset: str) -> int | None:
        return int(self._rows(subset).size)

    def split(self, subset: str, sizes: Sizes, rng: np.random.Generator) -> Split:
        data, p = self._data(), self.params
        rows = self._rows(subset)
        X, y, public = data["X"], data["y"], data["public"]
        what = f"csv dataset {p.path} subset {subset!r}"
        if p.public_column:
            pub = rows[public[rows]]
            rest = rows[~public[rows]]
            pub = pub[rng.permutation(pub.size)]
            rest = rest[rng.permutation(rest.size)]
            if sizes.max_public > pub.size:
                raise UserError(f"{what}: sizes.n_public must be <= the {pub.size} rows public_column marks, got "
                                f"{sizes.max_public}")
            need = sizes.max_test + max(sizes.max_private, 0)
            if need > rest.size:
                raise UserError(f"{what}: sizes.n_test + n_private must be <= the {rest.size} unmarked rows, got "
                                f"{need}")
            iu = pub[: sizes.n_public]
            it = rest[: sizes.n_test]
            n_priv = rest.size - sizes.max_test if sizes.n_private < 0 else sizes.n_private
            iv = rest[sizes.max_test: sizes.max_test + n_priv]
        else:
            perm = rows[rng.permutation(rows.size)]
            need = sizes.max_test + sizes.max_public + max(sizes.max_private, 0)
            if need > rows.size:
                raise UserError(f"{what}: sizes must fit its {rows.size} rows, got n_test + n_public + n_private = "
                                f"{need}")
            it, iu, iv = (perm[s] for s in sizes.pools(rows.size))
        X_test, y_test = X[it], y[it]
        if sizes.n_test == 0 and len(p.features) == 1:
            lo, hi = p.features[p.columns[0]]
            pts = p.test_points if p.test_points is not None else [lo + 0.25 * (hi - lo), lo + 0.75 * (hi - lo)]
            X_test = to_domain(np.asarray(pts, dtype=float), (lo, hi), p.domain).reshape(-1, 1)
            y_test = np.full(X_test.shape[0], np.nan)
        box = (-1.0, 1.0) if p.domain == "symmetric" else (0.0, 1.0)
        # the public bounds every family reads, all of the domain: SLR's box, |x_j| <= 1 (oplr/fmlr's x_bound,
        # DCA's bound_x) and |y| <= 1 (DCA's bound_y)
        meta = {"subset": subset, "bounds_x": box, "bounds_y": box, "x_bound": 1.0, "bound_x": 1.0, "bound_y": 1.0,
                "domain": p.domain,
                "features": p.columns, "response": p.target,
                "declared_bounds": {c: list(b) for c, b in p.bounds.items()}}
        return Split(X[iv], y[iv], X[iu], y[iu], X_test, y_test, meta)
