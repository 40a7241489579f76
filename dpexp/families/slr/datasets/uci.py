"""Real datasets of the DP simple-linear-regression study (Alabi, McMillan, Sarathy, Smith & Vadhan 2020, §3.1).

Every dataset here is one or more *fixed* small datasets ``{(x_i, y_i)} ⊂ [0, 1]²`` on which the DP algorithms are
run many times ("trials").  The split contract shared with the algorithms (issue 3) is:

* ``X_private`` has shape (n, 1), ``y_private`` shape (n,); there are no public rows (arrays of shape (0, 1)/(0,));
* ``X_test = [[0.25], [0.75]]`` (the two release points p25/p75 of the Opportunity Atlas) and ``y_test`` the true
  line there when it is known (synthetic data) else NaN;
* ``sizes.n_private == -1`` ("all") uses the whole subset; a positive ``n_private`` takes a random subsample drawn
  with the ``rng`` handed to ``split`` (a permutation drawn once per repeat, nested prefixes for a size grid).

Datasets in this module (file names relative to the data directory, see ``dpexp.datasets.base.data_path``):

* ``bikeshare`` — UCI Bike Sharing ``bike_sharing/hour.csv`` (§3.1.2): x = ``temp``, y = ``cnt``, each linearly
  rescaled to [0, 1] over the whole file (min-max), then cut into the 288 (month, hour) subsets ``m01_h00`` …
  ``m12_h23`` of 45–62 hours each.
* ``carbon_nanotubes`` — UCI Carbon Nanotubes ``carbon_nanotubes/carbon_nanotubes.csv`` (§3.1.3): x = "Initial
  atomic coordinate u", y = "Calculated atomic coordinates u'"; rows outside [0, 1]² are dropped (n = 10,683 of
  10,721). The file is ';'-separated; decimal commas (UCI original) and decimal points are both accepted.
* ``stock_exchange`` — UCI Istanbul Stock Exchange ``istanbul_stock_exchange/data_akbilgic.csv`` (§3.1.4): by
  default x = ``ISE_TL`` (the TL-based ISE national 100 index return, xlsx column "TL BASED / ISE") and
  y = ``ISE_USD`` (the USD-based ISE return, xlsx column "USD BASED / ISE"), each min-max rescaled to [0, 1] over
  the 536 days. The paper's n = 250 is obtained with ``sizes.n_private: 250`` (a random subsample of days); the
  columns can be changed with the ``x_column``/``y_column`` parameters.  When only the original
  ``data_akbilgic.xlsx`` is present it is read (needs the ``xlsx`` extra, openpyxl).

Values: a missing, non-numeric or infinite entry in a column used (``temp``, ``cnt``, ``mnth``, ``hr``; the two
carbon coordinates; the stock columns chosen) is a ``DataValueError`` naming the file, row and column
(``dpexp.datasets.checks``), never dropped silently.  Only the xlsx reader drops rows, the sheet's blank rows
without either ISE return.

Privacy of the preprocessing (``preprocessing()``, on every row; docs/privacy.md "Preprocessing"): by default the
min–max rescaling of ``bikeshare`` and ``stock_exchange`` uses the minimum and maximum of the whole file, private
rows included, as Alabi et al. do. That is a statistic of the private rows used without paying for it — one extreme
row moves every rescaled row (D = {0.5 ×(n−1), 1} vs D′ = {0.5 ×(n−1), 0} rescale to {0,…,0,1} vs {1,…,1,0}:
NoisyIntercept's ȳ moves by (n − 2)× its sensitivity) — so every row says ``guarantee: none`` with the note "min–max
rescaling over the private rows (the paper's preprocessing), not DP". The DP alternative: declared public ranges
(``x_range``, ``y_range``: rescaled with the declared [lo, hi] and clipped to [0, 1], row by row), with which
nothing is computed across rows and the algorithm's guarantee stands. ``carbon_nanotubes`` computes nothing across
rows (rows outside [0, 1]² are dropped one by one). Release point: one subset (all its predictions); the 288
bikeshare subsets are disjoint sets of hours (parallel composition).

``download(dest)`` fetches the UCI originals (URL + SHA-256 where a byte-verified checksum is known, otherwise a
shape check after download).
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import Field, field_validator

from dpexp import cache
from dpexp.components import Dataset, Params, Preprocessing
from dpexp.datasets.base import data_path, download, search_dirs, sha256_file
from dpexp.datasets.checks import require_finite
from dpexp.errors import DataNotFoundError, UserError
from dpexp.registry import register_dataset
from dpexp.types import Sizes, Split

#: The two release points of the Opportunity Atlas (p25, p75), used as X_test by every SLR dataset.
SLR_X_TEST = (0.25, 0.75)


# ----------------------------------------------------------------------------------------------- shared helpers
def minmax(v: np.ndarray) -> np.ndarray:
    """Linear rescaling of ``v`` onto [0, 1] (constant input maps to 0)."""
    v = np.asarray(v, dtype=float)
    lo, hi = float(np.min(v)), float(np.max(v))
    if hi <= lo:
        return np.zeros_like(v)
    return (v - lo) / (hi - lo)


Range = tuple[float, float]


def rescale(v: np.ndarray, declared: Range | None) -> np.ndarray:
    """``v`` onto [0, 1]: with a ``declared`` range (lo, hi) linearly and clipped (row-local: no row depends on
    another), else min-max over all of ``v`` (the paper's protocol)."""
    if declared is None:
        return minmax(v)
    lo, hi = declared
    return np.clip((np.asarray(v, dtype=float) - lo) / (hi - lo), 0.0, 1.0)


def scaling_statement(x_name: str, y_name: str, x_range: Range | None, y_range: Range | None) -> Preprocessing:
    """The statement of the rescaling: min-max for the variables without a declared range (reads the private rows:
    leaks), nothing across rows (public) when both ranges are declared."""
    computed = [n for n, r in ((x_name, x_range), (y_name, y_range)) if r is None]
    if computed:
        return minmax_statement(" and ".join(computed))
    return Preprocessing("", f"nothing is computed across rows: {x_name} and {y_name} are rescaled to [0, 1] with "
                             f"the declared ranges {list(x_range)} and {list(y_range)} and clipped there (row-local)")


def _check_range(v: Range | None) -> Range | None:
    if v is not None and not (np.isfinite(v[0]) and np.isfinite(v[1]) and v[1] > v[0]):
        raise ValueError(f"a declared range needs finite lo < hi, got {list(v)}")
    return v


class _RangeParams(Params):
    x_range: Range | None = None
    """declared public range [lo, hi] of x (rescaled and clipped row-locally); default: min-max over the whole file
    (paper; reads the private rows: guarantee none)"""
    y_range: Range | None = Field(None, description="declared range [lo, hi] of y; default: min-max over the file")

    @field_validator("x_range", "y_range")
    @classmethod
    def _finite(cls, v: Range | None) -> Range | None:
        return _check_range(v)


#: the row note of the paper's min–max rescaling (the reason of the rows' ``none`` guarantee)
MINMAX_NOTE = "min–max rescaling over the private rows (the paper's preprocessing), not DP"


def minmax_statement(what: str) -> Preprocessing:
    """The statement of a min–max rescaling over the whole file: it reads the private rows unpaid (module
    docstring), so it leaks."""
    return Preprocessing(
        MINMAX_NOTE,
        f"{what} are rescaled linearly to [0, 1] with the minimum and maximum of the whole file (private rows "
        "included), as Alabi et al. 2020 do. One extreme private row moves every rescaled row, at no cost: not DP "
        "(guarantee none on every row). Declare public ranges (x_range, y_range) to rescale row by row instead.",
        leaks=True)


def range_options(x_range: Range, y_range: Range) -> dict[str, dict[str, Any]]:
    """The options ``dpexp list datasets NAME`` states for a min–max dataset: the paper's, and declared ranges (the
    ranges given are an example of the form, not facts the dataset vouches for)."""
    return {"paper (default)": {},
            "declared public ranges (x_range, y_range; the values shown are an example)": {"x_range": x_range,
                                                                                             "y_range": y_range}}


#: one subset is one release point; subsets of a file partition its rows
DISJOINT_SUBSETS = ("one subset: a row's epsilon covers all predictions (p25, p75) of one subset; the run's {n} "
                    "subset(s) are disjoint sets of rows, so by parallel composition it is also each record's loss")


def take_rows(n_avail: int, sizes: Sizes, rng: np.random.Generator, what: str) -> np.ndarray | None:
    """Row indices for the requested ``sizes.n_private`` (None = all rows, in file order).

    A positive request takes the first ``n_private`` entries of one random permutation drawn from ``rng`` (the
    data stream of this (dataset, subset, repeat)), so sizes of one grid are nested.
    """
    n = int(sizes.n_private)
    if n == -1 or n == n_avail:
        return None
    if n <= 1 or n > n_avail:
        raise UserError(f"{what}: sizes.n_private must be 'all' or in [2, {n_avail}], got {n}")
    perm = rng.permutation(n_avail)
    return np.sort(perm[:n])


def slr_split(x: np.ndarray, y: np.ndarray, sizes: Sizes, rng: np.random.Generator, what: str,
              x_test: tuple[float, ...] = SLR_X_TEST, y_test: np.ndarray | None = None,
              meta: dict[str, Any] | None = None) -> Split:
    """Build the SLR ``Split`` of the issue-3 contract from 1-D ``x``, ``y`` (optionally subsampled)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    idx = take_rows(len(x), sizes, rng, what)
    if idx is not None:
        x, y = x[idx], y[idx]
    xt = np.asarray(x_test, dtype=float).reshape(-1, 1)
    yt = np.full(len(xt), np.nan) if y_test is None else np.asarray(y_test, dtype=float).reshape(-1)
    m = {"bounds_x": (0.0, 1.0), "bounds_y": (0.0, 1.0)}
    m.update(meta or {})
    return Split(X_private=x.reshape(-1, 1), y_private=y, X_public=np.empty((0, 1)), y_public=np.empty(0),
                 X_test=xt, y_test=yt, meta=m)


def _check_subset(subset: str, valid: list[str], what: str) -> None:
    if subset not in valid:
        raise UserError(f"{what}: unknown subset {subset!r}; valid: {valid[0]} … {valid[-1]} ({len(valid)} in all)")


def _checked(target: Path, ok: bool, problem: str) -> Path:
    """``target``, a download whose content checked ``ok``; otherwise it is removed and ``UserError(problem)`` raised,
    so that a bad download leaves nothing behind."""
    if not ok:
        target.unlink()
        raise UserError(problem)
    return target


class _OneSubset(Dataset):
    """An SLR dataset of one subset ``all``: ``_xy`` gives its (x, y), ``_meta`` what its ``Split.meta`` adds."""

    def _xy(self) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def _meta(self) -> dict[str, Any]:
        return {}

    def check(self) -> None:
        self._xy()

    def n_rows(self, subset: str) -> int | None:
        _check_subset(subset, ["all"], self.name)
        return len(self._xy()[0])

    def split(self, subset: str, sizes: Sizes, rng: np.random.Generator) -> Split:
        _check_subset(subset, ["all"], self.name)
        x, y = self._xy()
        return slr_split(x, y, sizes, rng, self.name, meta=self._meta())


# ----------------------------------------------------------------------------------------------- bikeshare
BIKE_FILE = "bike_sharing/hour.csv"
BIKE_URL = "https://archive.ics.uci.edu/ml/machine-learning-databases/00275/Bike-Sharing-Dataset.zip"
#: sha256 of the original hour.csv inside the UCI zip (byte-identical staged copy, see its SOURCE.md).
BIKE_HOUR_SHA256 = "e03de4ee4ef4dc376ac6e04bf829673c6269e8eba5c60fa121640fa2f829504f"


@cache.memoize("slr.bikeshare", maxsize=4)
def _load_bikeshare(path: str, x_range: Range | None = None,
                    y_range: Range | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    df = pd.read_csv(path)
    missing = {"mnth", "hr", "temp", "cnt"} - set(df.columns)
    if missing:
        raise UserError(f"{path}: bike-sharing file lacks columns {sorted(missing)}")
    require_finite(df, ["mnth", "hr", "temp", "cnt"], path)
    x = rescale(df["temp"].to_numpy(float), x_range)
    y = rescale(df["cnt"].to_numpy(float), y_range)
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    keys = df["mnth"].astype(int).to_numpy() * 100 + df["hr"].astype(int).to_numpy()
    for k in np.unique(keys):
        sel = keys == k
        out[f"m{k // 100:02d}_h{k % 100:02d}"] = (x[sel], y[sel])
    return out


@register_dataset
class BikeShare(Dataset):
    """UCI Bike Sharing, hourly (Fanaee-T & Gama 2013) as in Alabi et al. §3.1.2: x = temperature, y = user
    count, both min-max rescaled to [0, 1] over the whole file; 288 subsets = (month, hour of day), 45–62 points.
    Subset names ``mMM_hHH``. The privacy unit is an hour, not a person (the paper notes the same)."""

    name = "bikeshare"
    description = "UCI bike sharing: temp -> count, 288 month x hour subsets (Alabi et al. Fig 7, 12)"
    download_hint = "dpexp data download bikeshare"
    release_point = DISJOINT_SUBSETS
    Params = _RangeParams
    preprocessing_options = range_options((0.0, 1.0), (0.0, 1000.0))   # UCI: temp is normalised (÷ 41)
    data_files = {BIKE_FILE: BIKE_HOUR_SHA256}

    def preprocessing(self) -> Preprocessing:
        return scaling_statement("temp", "cnt", self.params.x_range, self.params.y_range)

    def _data(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        return _load_bikeshare(str(data_path(BIKE_FILE, self.download_hint).resolve()), self.params.x_range,
                               self.params.y_range)

    def check(self) -> None:
        self._data()

    def subsets(self) -> list[str]:
        return sorted(self._data())

    def n_rows(self, subset: str) -> int | None:
        data = self._data()
        _check_subset(subset, sorted(data), self.name)
        return len(data[subset][0])

    def split(self, subset: str, sizes: Sizes, rng: np.random.Generator) -> Split:
        data = self._data()
        _check_subset(subset, sorted(data), self.name)
        x, y = data[subset]
        return slr_split(x, y, sizes, rng, f"{self.name}/{subset}", meta={"subset": subset})

    @classmethod
    def download(cls, dest: Path) -> list[Path]:
        """Fetch the UCI zip, extract ``hour.csv`` and verify its SHA-256 (the zip itself has no fixed hash)."""
        zpath = download(BIKE_URL, Path(dest) / "bike_sharing" / "Bike-Sharing-Dataset.zip")
        target = Path(dest) / BIKE_FILE
        with zipfile.ZipFile(zpath) as zf:
            name = next(n for n in zf.namelist() if n.endswith("hour.csv"))
            target.write_bytes(zf.read(name))
        got = sha256_file(target)
        return [_checked(target, got == BIKE_HOUR_SHA256,
                         f"checksum mismatch for hour.csv from {BIKE_URL}: expected {BIKE_HOUR_SHA256}, got {got}")]


# ----------------------------------------------------------------------------------------------- carbon nanotubes
CARBON_FILE = "carbon_nanotubes/carbon_nanotubes.csv"
CARBON_URL = "https://archive.ics.uci.edu/ml/machine-learning-databases/00448/carbon_nanotubes.csv"
CARBON_X = "Initial atomic coordinate u"
CARBON_Y = "Calculated atomic coordinates u'"


def read_carbon(path: str | Path) -> pd.DataFrame:
    """Read the ';'-separated carbon-nanotube table with either decimal commas or decimal points."""
    raw = pd.read_csv(path, sep=";", dtype=str, skipinitialspace=True)
    raw.columns = [c.strip() for c in raw.columns]
    try:
        return raw.apply(lambda col: pd.to_numeric(col.str.strip().str.replace(",", ".", regex=False)))
    except ValueError as exc:
        raise UserError(f"{path}: carbon-nanotube file has non-numeric entries ({exc})") from None


@cache.memoize("slr.carbon", maxsize=4)
def _load_carbon(path: str) -> tuple[np.ndarray, np.ndarray, int]:
    df = read_carbon(path)
    if CARBON_X not in df.columns or CARBON_Y not in df.columns:
        raise UserError(f"{path}: expected columns {CARBON_X!r} and {CARBON_Y!r}, got {list(df.columns)}")
    require_finite(df, [CARBON_X, CARBON_Y], path)   # before the [0, 1]² filter, which would drop a NaN silently
    x = df[CARBON_X].to_numpy(float)
    y = df[CARBON_Y].to_numpy(float)
    keep = (x >= 0) & (x <= 1) & (y >= 0) & (y <= 1)
    return x[keep], y[keep], int(len(df))


@register_dataset
class CarbonNanotubes(_OneSubset):
    """UCI Carbon Nanotubes (Aci & Avci 2016) as in Alabi et al. §3.1.3: x = initial atomic coordinate u,
    y = calculated atomic coordinate u', rows outside [0, 1]² dropped (n = 10,683). One subset ``all``."""

    name = "carbon_nanotubes"
    description = "UCI carbon nanotubes: initial u -> calculated u', n = 10,683 (Alabi et al. Fig 9)"
    download_hint = "dpexp data download carbon_nanotubes"
    release_point = DISJOINT_SUBSETS

    def preprocessing(self) -> Preprocessing:
        return Preprocessing("", "nothing is computed across rows: rows outside [0, 1]^2 are dropped one by one "
                                 "(row-local); the values are used as given")
    data_files = {CARBON_FILE: None}   # no byte-verified checksum of the UCI original (download() checks content)

    def _data(self) -> tuple[np.ndarray, np.ndarray, int]:
        return _load_carbon(str(data_path(CARBON_FILE, self.download_hint).resolve()))

    def _xy(self) -> tuple[np.ndarray, np.ndarray]:
        return self._data()[:2]

    def _meta(self) -> dict[str, Any]:
        return {"rows_in_file": self._data()[2]}

    @classmethod
    def download(cls, dest: Path) -> list[Path]:
        """Fetch the UCI csv. No byte-verified checksum of the original exists (see the staged SOURCE.md), so the
        download is verified by content instead: 10,721 rows and the two columns used."""
        target = download(CARBON_URL, Path(dest) / CARBON_FILE)
        df = read_carbon(target)
        return [_checked(target, df.shape == (10721, 8) and CARBON_X in df.columns,
                         f"{CARBON_URL}: unexpected content (shape {df.shape}); expected 10721 x 8")]


# ----------------------------------------------------------------------------------------------- stock exchange
STOCK_FILE = "istanbul_stock_exchange/data_akbilgic.csv"
STOCK_XLSX = "istanbul_stock_exchange/data_akbilgic.xlsx"
STOCK_URL = "https://archive.ics.uci.edu/ml/machine-learning-databases/00247/data_akbilgic.xlsx"
STOCK_COLUMNS = ["date", "ISE_TL", "ISE_USD", "SP", "DAX", "FTSE", "NIKKEI", "BOVESPA", "EU", "EM"]


def read_stock_xlsx(path: str | Path) -> pd.DataFrame:
    """Read the UCI xlsx (two header rows: 'TL BASED'/'USD BASED', then date, ISE, ISE, SP, ...)."""
    try:
        df = pd.read_excel(path, header=None, skiprows=2)
    except ImportError:
        raise UserError("reading data_akbilgic.xlsx needs openpyxl: pip install 'dpexp[xlsx]'") from None
    df = df.iloc[:, : len(STOCK_COLUMNS)]
    df.columns = STOCK_COLUMNS
    return df.dropna(subset=["ISE_TL", "ISE_USD"]).reset_index(drop=True)


@cache.memoize("slr.stock", maxsize=4)
def _load_stock(path: str) -> pd.DataFrame:
    df = read_stock_xlsx(path) if path.endswith(".xlsx") else pd.read_csv(path)
    df.attrs.update(path=path, xlsx=path.endswith(".xlsx"))
    return df


class _StockParams(_RangeParams):
    x_column: str = Field("ISE_TL", description="column used as x (TL-based ISE 100 index return)")
    y_column: str = Field("ISE_USD", description="column used as y (USD-based ISE return)")


@register_dataset
class StockExchange(_OneSubset):
    """UCI Istanbul Stock Exchange (Akbilgic et al. 2014) as in Alabi et al. §3.1.4: x = ``ISE_TL`` (TL-based
    ISE 100 return), y = ``ISE_USD`` (USD-based ISE return), both min-max rescaled to [0, 1] over the 536 days.
    One subset ``all``; use ``sizes.n_private: 250`` for the paper's n = 250 (random subsample per repeat)."""

    name = "stock_exchange"
    description = "UCI Istanbul stock exchange: ISE (TL) -> ISE (USD), rescaled to [0,1] (Alabi et al. Fig 8)"
    release_point = DISJOINT_SUBSETS
    download_hint = "dpexp data download stock_exchange"
    data_files = {STOCK_FILE: None}    # derived from an Excel file re-saved by every copy: no byte checksum
    Params = _StockParams
    preprocessing_options = range_options((-0.1, 0.1), (-0.1, 0.1))     # daily index returns

    def preprocessing(self) -> Preprocessing:
        p = self.params
        return scaling_statement(p.x_column, p.y_column, p.x_range, p.y_range)

    def _frame(self) -> pd.DataFrame:
        try:
            p = data_path(STOCK_FILE, self.download_hint)
        except DataNotFoundError:
            try:
                p = data_path(STOCK_XLSX, self.download_hint)
            except DataNotFoundError:
                where = " or ".join(str(d / STOCK_FILE) for d in search_dirs())
                raise DataNotFoundError(
                    f"data file not found: expected {where} (or {STOCK_XLSX} there; set DPEXP_DATA_DIR or "
                    f"--data-dir); fetch it with `{self.download_hint}`") from None
        return _load_stock(str(p.resolve()))

    def _xy(self) -> tuple[np.ndarray, np.ndarray]:
        df = self._frame()
        for key in ("x_column", "y_column"):
            col = getattr(self.params, key)
            if col not in df.columns:
                raise UserError(f"{self.name}: params.{key} must be one of {list(df.columns[1:])}, got {col!r}")
        p = self.params
        # the csv's rows are the file's lines after the header; the xlsx's after its blank rows are dropped
        require_finite(df, [p.x_column, p.y_column], df.attrs.get("path", self.name),
                       None if df.attrs.get("xlsx") else 1)
        return rescale(df[p.x_column].to_numpy(float), p.x_range), rescale(df[p.y_column].to_numpy(float), p.y_range)

    def _meta(self) -> dict[str, Any]:
        return {"x_column": self.params.x_column, "y_column": self.params.y_column}

    @classmethod
    def download(cls, dest: Path) -> list[Path]:
        """Fetch the UCI xlsx and write the csv the loader reads. Every public copy was re-saved by Excel, so no
        byte checksum is known; the content is verified instead (536 trading days)."""
        xlsx = download(STOCK_URL, Path(dest) / STOCK_XLSX)
        df = read_stock_xlsx(xlsx)
        _checked(xlsx, len(df) == 536, f"{STOCK_URL}: expected 536 data rows, got {len(df)}")
        out = Path(dest) / STOCK_FILE
        buf = io.StringIO()
        df.assign(date=pd.to_datetime(df["date"]).dt.strftime("%Y-%m-%d")).to_csv(buf, index=False,
                                                                                 float_format="%.9g")
        out.write_text(buf.getvalue())
        return [xlsx, out]
