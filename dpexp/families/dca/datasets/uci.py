"""UCI data sets of Heikkilä et al. (2017), Fig. 2: red wine, white wine (Cortez et al. 2009) and abalone.

Preprocessing (§5): every dimension — features and target — is centred at its mean (the paper assumes zero-centred
data) and scaled to a range of length 10; the algorithms then assume the public bounds [−7.5, 7.5]
(``meta['bound_x'] = meta['bound_y'] = 7.5``), which "clearly overestimate the length of the true range".  The
paper computes the means and ranges over the whole file "to simulate public prior knowledge"; they are statistics of
the private rows used without paying for them (one extreme row rescales every other row), so with the default
(``ranges`` unset) every row says ``guarantee: none`` with the reason (``preprocessing()``; docs/privacy.md
"Preprocessing").  The DP alternative: ``ranges`` declares a public range [lo, hi] for every column (features and
target, by the names in ``columns``); each value is then mapped row by row, centred at the declared midpoint,
scaled so that [lo, hi] has length ``range_length`` and clipped to ±``range_length``/2 — nothing is computed across
rows and the algorithm's guarantee stands.
Abalone uses 8 dimensions with sex coded 0 = male, 1 = otherwise (as the authors' data getter); its target is Rings.

Split per repeat: a random permutation of all rows; the first ``n_test`` rows are the test set, the next
``n_public`` the public pool (unused by these algorithms) and the next ``n_private`` (or all the rest) the clients.
Test and private prefixes nest across sizes within a repeat.  Paper sizes: red 1000 clients / 500 test,
white 3000 / 1000, abalone 3000 / 1000.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from pydantic import Field, field_validator

from dpexp import cache
from dpexp.components import Params, Preprocessing, TableDataset
from dpexp.datasets.base import data_path, download
from dpexp.datasets.checks import require_finite
from dpexp.errors import UserError
from dpexp.registry import register_dataset
from dpexp.types import Sizes

UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases"


def scale_range(A: np.ndarray, length: float) -> np.ndarray:
    """Centre each column at its mean and scale it to a range (max − min) of ``length`` (constant columns → 0)."""
    A = np.asarray(A, dtype=float)
    rng_ = A.max(axis=0) - A.min(axis=0)
    out = A - A.mean(axis=0)
    return np.divide(out * length, rng_, out=np.zeros_like(out), where=rng_ > 0)


def scale_declared(A: np.ndarray, ranges: list[tuple[float, float]], length: float) -> np.ndarray:
    """Each column j mapped row by row with its declared range [lo_j, hi_j]: centred at the midpoint, scaled so the
    range has length ``length``, clipped to ±``length``/2 (row-local: no value depends on another row)."""
    lo, hi = (np.array([r[i] for r in ranges], dtype=float) for i in (0, 1))
    half = 0.5 * length
    return np.clip((np.asarray(A, dtype=float) - 0.5 * (lo + hi)) * (length / (hi - lo)), -half, half)


#: the row note of the paper's whole-file scaling (the reason of the rows' ``none`` guarantee)
FILE_SCALING_NOTE = ("centring and range scaling over the whole file incl. private rows (the paper's preprocessing), "
                     "not DP")


class _UCIDataset(TableDataset):
    folder: ClassVar[str] = ""
    files: ClassVar[dict[str, tuple[str, str]]] = {}   # file -> (url, sha256); the first one is read
    release_point = ("one protocol run: a row's epsilon/delta covers the release(s) of one run of the algorithm on "
                     "the clients of the split (both rounds for the projected variants); repeats are independent "
                     "simulations")

    #: the columns (features, then the target) by the names ``ranges`` uses
    columns: ClassVar[tuple[str, ...]] = ()
    preprocessing_options = {"paper (default)": {},
                             "declared public ranges (ranges: {column: [lo, hi]} for every column)":
                                 {"ranges": {"x": (0.0, 1.0)}}}

    def preprocessing(self) -> Preprocessing:
        """Centring and range scaling over the whole file reads the private rows: leaks; declared ranges: public
        (module docstring)."""
        L, c = self.params.range_length, self.params.bound
        if self.params.ranges is not None:
            return Preprocessing(
                "", f"every column (features and target) is mapped row by row with its declared public range [lo, hi]: "
                    f"centred at the midpoint, scaled so the range has length {L:g} and clipped to +-{L / 2:g}; "
                    f"nothing is computed across rows. The algorithms assume the declared bounds +-{c:g}. Columns: "
                    f"{', '.join(self.columns)}.")
        return Preprocessing(
            FILE_SCALING_NOTE,
            f"every column (features and target) is centred at its mean and scaled to a range of length {L:g} over "
            "the whole file (private rows included), as Heikkila et al. 2017 (Sec. 5) do to simulate public prior "
            f"knowledge of the ranges; the algorithms then assume the declared bounds +-{c:g}. The means and ranges "
            "are read from the private rows at no cost (one extreme row rescales every other row): not DP (guarantee "
            "none on every row). Declare public ranges (ranges) to scale row by row instead.",
            leaks=True)

    class Params(Params):
        range_length: float = Field(10.0, gt=0, description="length of each dimension's range after scaling")
        bound: float = Field(7.5, gt=0, description="assumed public bound c on |x_j| and |y|")
        ranges: dict[str, tuple[float, float]] | None = None
        """declared public range [lo, hi] of every column (features and target, by name; ``dpexp list datasets
        NAME`` lists the names): scaled row by row, the DP choice; default: the whole file's means and ranges
        (paper; reads the private rows: guarantee none)"""

        @field_validator("ranges")
        @classmethod
        def _finite(cls, v: dict[str, tuple[float, float]] | None) -> dict[str, tuple[float, float]] | None:
            for name, (lo, hi) in (v or {}).items():
                if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo):
                    raise ValueError(f"ranges.{name} needs finite lo < hi, got {[lo, hi]}")
            return v

    def declared_ranges(self) -> list[tuple[float, float]] | None:
        """``ranges`` in column order (None when unset); a missing or unknown column is a ``UserError``."""
        r = self.params.ranges
        if r is None:
            return None
        missing, unknown = [c for c in self.columns if c not in r], sorted(set(r) - set(self.columns))
        if missing or unknown:
            raise UserError(f"dataset {self.name}: params.ranges must give [lo, hi] for every column "
                            f"{list(self.columns)}; missing {missing}, unknown {unknown}")
        return [tuple(r[c]) for c in self.columns]

    def _path(self) -> Path:
        return data_path(f"{self.folder}/{next(iter(self.files))}", self.download_hint, self.data_dir)

    @classmethod
    def expected_files(cls) -> dict[str, str | None]:
        return {f"{cls.folder}/{f}": sha for f, (_url, sha) in cls.files.items()}

    def read_raw(self, path: Path) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def table(self) -> tuple[np.ndarray, np.ndarray]:
        """Preprocessed (X, y) of the whole file (memoised per file version and range length)."""
        path = self._path()
        ranges = self.declared_ranges()
        key = (self.name, cache.file_key(path), self.params.range_length)
        if ranges is not None:   # the paper's key unchanged
            key += (tuple(ranges),)
        return cache.memo("dca.uci", key, lambda: self._preprocessed(path, ranges))

    def _preprocessed(self, path: Path, ranges: list[tuple[float, float]] | None) -> tuple[np.ndarray, np.ndarray]:
        X, y = self.read_raw(path)
        L = self.params.range_length
        if ranges is not None:
            return scale_declared(X, ranges[:-1], L), scale_declared(y[:, None], ranges[-1:], L)[:, 0]
        return scale_range(X, L), scale_range(y[:, None], L)[:, 0]

    def check_sizes(self, n: int, sizes: Sizes) -> None:
        need = sizes.max_test + sizes.max_public + max(sizes.max_private, 0)
        if need > n:
            raise UserError(f"dataset {self.name} has {n} rows; n_test + n_public + n_private = {need} is too many")

    def split_meta(self, X: np.ndarray, y: np.ndarray) -> dict[str, Any]:
        c = self.params.bound
        L = self.params.range_length
        how = (f"columns centred at their declared midpoints and scaled to range length {L:g} row by row (declared "
               "public ranges)" if self.params.ranges is not None else
               f"columns mean-centred and scaled to range length {L:g} on the whole file (Heikkila et al. 2017, "
               "Sec. 5)")
        return {"bound_x": c, "bound_y": c, "preprocessing": how}

    @classmethod
    def download(cls, dest: Path) -> list[Path]:
        return [download(url, Path(dest) / cls.folder / f, sha) for f, (url, sha) in cls.files.items()]


class _Wine(_UCIDataset):
    folder = "wine_quality"
    columns = ("fixed acidity", "volatile acidity", "citric acid", "residual sugar", "chlorides",
               "free sulfur dioxide", "total sulfur dioxide", "density", "pH", "sulphates", "alcohol", "quality")

    def read_raw(self, path: Path) -> tuple[np.ndarray, np.ndarray]:
        import pandas as pd

        df = pd.read_csv(path, sep=";")
        if "quality" not in df.columns or df.shape[1] != 12:
            raise UserError(f"{path}: expected 12 ';'-separated columns ending in 'quality', got {list(df.columns)}")
        require_finite(df, list(df.columns), path)
        return df.drop(columns="quality").to_numpy(float), df["quality"].to_numpy(float)


@register_dataset
class RedWine(_Wine):
    """UCI Wine Quality, red (1599 x 11 + quality)."""

    name = "redwine"
    download_hint = "dpexp data download redwine"
    description = "UCI red wine quality (Heikkila et al. 2017 Fig. 2a): 11 features, range 10, bounds +-7.5"
    files = {"winequality-red.csv": (f"{UCI}/wine-quality/winequality-red.csv",
                                     "4a402cf041b025d4566d954c3b9ba8635a3a8a01e039005d97d6a710278cf05e")}


@register_dataset
class WhiteWine(_Wine):
    """UCI Wine Quality, white (4898 x 11 + quality)."""

    name = "whitewine"
    download_hint = "dpexp data download whitewine"
    description = "UCI white wine quality (Heikkila et al. 2017 Fig. 2c): 11 features, range 10, bounds +-7.5"
    files = {"winequality-white.csv": (f"{UCI}/wine-quality/winequality-white.csv",
                                       "76c3f809815c17c07212622f776311faeb31e87610d52c26d87d6e361b169836")}


@register_dataset
class Abalone(_UCIDataset):
    """UCI Abalone (4177 rows): sex (0 = male, 1 = otherwise) + 7 measurements; target Rings."""

    name = "abalone"
    download_hint = "dpexp data download abalone"
    description = "UCI abalone (Heikkila et al. 2017 Fig. 2b): 8 features, range 10, bounds +-7.5"
    folder = "abalone"
    columns = ("sex", "length", "diameter", "height", "whole_weight", "shucked_weight", "viscera_weight",
               "shell_weight", "rings")   # sex coded 0 = male, 1 = otherwise
    files = {"abalone.data": (f"{UCI}/abalone/abalone.data",
                              "de37cdcdcaaa50c309d514f248f7c2302a5f1f88c168905eba23fe2fbc78449f")}

    def read_raw(self, path: Path) -> tuple[np.ndarray, np.ndarray]:
        import pandas as pd

        df = pd.read_csv(path, header=None)
        if df.shape[1] != 9:
            raise UserError(f"{path}: expected 9 comma-separated columns (sex, 7 measurements, rings), "
                            f"got {df.shape[1]}")
        named = df.set_axis([f"#{c + 1}" for c in range(9)], axis=1)   # 1-based column numbers in messages
        require_finite(named, [f"#{c}" for c in range(2, 10)], path, header_lines=0)
        sex = (df[0].astype(str).str.strip() != "M").to_numpy(float)
        X = np.column_stack([sex, df.iloc[:, 1:8].to_numpy(float)])
        return X, df[8].to_numpy(float)
