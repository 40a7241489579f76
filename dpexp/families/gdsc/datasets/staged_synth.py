"""The synthetic data set shipped with the authors' code (DPBayes/robust-private-lr, python/synthdata): 1000 × 10,
x ~ N(0, 1), β ~ N(0, I), y ~ N(xᵀβ, 1) (Eq. 10 with λ = λ0 = 1, numpy seed 42), staged offline in
``robust-private-lr-synth/x_data.csv`` and ``y_data.csv`` (see that folder's SOURCE.md).

The thesis' Figs 4.2/4.3 use freshly generated Eq. (10) data (dataset ``honkela_synthetic``); this fixed file is the
authors' additional test set and a cross-check of the generator.  Protocol as the thesis §3.8.1: per repeat a random
permutation of the 1000 rows gives a test pool (first ``max_test``), a public pool (next ``max_public``) and the
private rest; cells take prefixes.  Preprocessing (optional, default on) as Methods 4.4 over all 1000 rows
(``centre: pool``: the file's means, private rows included — not DP) or at Eq. (10)'s means, 0 (``centre: law``:
public; see ``honkela_synthetic``).
``sigma_x``/``sigma_y`` in ``meta`` are the stds of the whole (preprocessed) file, not DP, as in the paper.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from dpexp import cache
from dpexp.components import Params, Preprocessing, TableDataset
from dpexp.datasets.base import data_path
from dpexp.datasets.checks import require_finite_array
from dpexp.errors import DataValueError, UserError
from dpexp.families.gdsc.datasets.synthetic import CENTRE_OPTIONS, centring_statement, preprocess
from dpexp.registry import register_dataset
from dpexp.types import Sizes

X_FILE = "robust-private-lr-synth/x_data.csv"
Y_FILE = "robust-private-lr-synth/y_data.csv"

def _loadtxt(path: Path, ndmin: int = 0) -> np.ndarray:
    try:
        return np.loadtxt(path, delimiter=",", ndmin=ndmin)
    except ValueError as exc:   # a non-numeric entry: one line naming the file (numpy names the row and column)
        raise DataValueError(f"{path}: {exc}") from None


@register_dataset
class StagedSynthetic(TableDataset):
    """The authors' fixed synthetic file (1000 × 10, Eq. 10, seed 42), split at random per repeat."""

    name = "rplr_synth_file"
    description = "authors' staged Eq. (10) synthetic data, 1000 x 10 (robust-private-lr/python/synthdata)"
    download_hint = None
    release_point = ("one split of the fixed file per repeat: a row's epsilon covers the model fitted on its private "
                     "rows")

    class Params(Params):
        preprocess: bool = Field(True, description="centre, unit-norm rows, centre y (Methods 4.4)")
        centre: Literal["pool", "law"] = "pool"
        """the centres: pool = the file's means (paper; reads the private rows: not DP), law = Eq. 10's means, 0
        (public: nothing subtracted)"""

    preprocessing_options = CENTRE_OPTIONS

    def _paths(self) -> tuple[Path, Path]:
        """The authors' two files (no download: they are placed by hand, see the folder's SOURCE.md)."""
        return data_path(X_FILE, None, self.data_dir), data_path(Y_FILE, None, self.data_dir)

    def table(self) -> tuple[np.ndarray, np.ndarray]:
        px, py = self._paths()
        key = (cache.file_key(px), cache.file_key(py), self.params.preprocess, self.params.centre)
        return cache.memo("gdsc.staged_synth", key, lambda: self._read(px, py))

    def _read(self, px: Path, py: Path) -> tuple[np.ndarray, np.ndarray]:
        X, y = _loadtxt(px, ndmin=2), _loadtxt(py).reshape(-1)
        require_finite_array(X, px)
        require_finite_array(y, py)
        if X.shape[0] != y.shape[0]:
            raise UserError(f"{px}: {X.shape[0]} rows but {py} has {y.shape[0]}")
        return preprocess(X, y, self.params.centre) if self.params.preprocess else (X, y)

    def preprocessing(self) -> Preprocessing:
        """Centring over all 1000 rows (``preprocess: true``, ``centre: pool``) reads the private rows: not DP;
        ``centre: law`` (the file is Eq. 10 with λ = λ0 = 1: means 0) reads none, as ``honkela_synthetic``."""
        return centring_statement(self.params.preprocess, self.params.centre)

    def check_sizes(self, n: int, sizes: Sizes) -> None:
        T, P = sizes.max_test, sizes.max_public
        if T + P >= n:
            raise UserError(f"rplr_synth_file: n_test + n_public must be < {n}, got {T + P}")
        if sizes.n_private > n - T - P:
            raise UserError(f"rplr_synth_file: n_private must be <= {n - T - P}, got {sizes.n_private}")

    def split_meta(self, X: np.ndarray, y: np.ndarray) -> dict[str, Any]:
        return {"sigma_x": float(X.std()), "sigma_y": float(y.std()), "x_bound": 1.0 if self.params.preprocess
                else None, "sigma_source": "std of the whole file (not DP, as in the paper)"}
