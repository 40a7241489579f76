"""Synthetic data of Honkela et al. (2018), Eq. (10), with the paper's preprocessing.

x ~ N(0, I_d), β ~ N(0, I/λ0), y | x ~ N(xᵀβ, 1/λ) with λ = λ0 = 1 by default.  Preprocessing (Methods 4.4):
centre each feature, scale each row to unit L2 norm, centre y — applied to the whole generated pool, as the paper
preprocesses its whole data set.  Per repeat one pool of ``max_test + max_public + max_private`` rows is drawn and
split into test / public / private pools; each cell takes prefixes of the pools, so sizes nest within a repeat.

Privacy of the preprocessing (docs/privacy.md "Preprocessing"): ``centre: pool`` (default, the paper's) takes the
centring means over the whole generated pool, private rows included, as the paper preprocesses its whole data set.
Those sample means are a statistic of the private rows used without paying for it (through the unit-norm scaling
each private row moves every other row a little), so every row says ``guarantee: none`` with the reason.
``centre: law`` centres at the generating law's means instead — 0 for every feature and for y under Eq. (10)
(E x = 0, E y = E xᵀβ = 0) — i.e. it subtracts nothing, and the unit-norm scaling is row-local: no private row is
read, the guarantee stands.  ``preprocess: false`` uses the raw draws.  ``sigma_x``/``sigma_y`` in meta are stds of
the whole pool, used only by ``sigma: data`` (reported not DP).
``coef_target`` in meta gives the true coefficients an algorithm that clips estimates (``dpexp.families.gdsc.truth``;
evaluation only).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from dpexp.components import NOTHING_SHARED, Dataset, Params, Preprocessing
from dpexp.errors import UserError
from dpexp.families.gdsc.truth import coef_target_eq10
from dpexp.registry import register_dataset
from dpexp.types import Sizes, Split


def generate_eq10(n: int, d: int, rng: np.random.Generator, lam: float = 1.0, lam0: float = 1.0,
                  beta: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Draw (X, y, β) from Eq. (10) without preprocessing."""
    # the *data* (a synthetic population), not privacy noise: drawn from the data stream, nothing is released here
    if beta is None:
        beta = rng.normal(0.0, 1.0 / np.sqrt(lam0), size=d)
    X = rng.normal(size=(n, d))
    y = X @ beta + rng.normal(0.0, 1.0 / np.sqrt(lam), size=n)
    return X, y, beta


def preprocess(X: np.ndarray, y: np.ndarray, centre: str = "pool") -> tuple[np.ndarray, np.ndarray]:
    """Centre features, scale rows to unit L2 norm (zero rows stay zero), centre y (Methods 4.4).  ``centre``:
    ``pool`` — at the means of the rows given (the paper's); ``law`` — at the generating law's means, 0 for
    Eq. (10), so nothing is subtracted and each row's map is row-local."""
    if centre == "pool":
        X = X - X.mean(axis=0, keepdims=True)
        y = y - y.mean()
    elif centre != "law":
        raise ValueError(f"centre must be 'pool' or 'law', got {centre!r}")
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    X = np.divide(X, norms, out=np.zeros_like(X), where=norms > 0)
    return X, y


#: the row note of the pool centring (the reason of the rows' ``none`` guarantee)
POOL_NOTE = "centring at the means over the pool incl. private rows (the paper's preprocessing), not DP"

#: the statement of the Eq. (10) preprocessing over the whole pool or file (``honkela_synthetic``,
#: ``rplr_synth_file``, ``centre: pool``): it reads the private rows unpaid
POOL_CENTRING = Preprocessing(
    POOL_NOTE,
    "each feature and y are centred at their means over the whole generated pool or file (private rows included) and "
    "each row scaled to unit L2 norm, as the paper preprocesses its whole data set. The sample means are read from "
    "the private rows at no cost and, through the unit-norm scaling, each private row moves every other row: not DP "
    "(guarantee none on every row). centre: law centres at the generating law's means (0 for Eq. 10) and reads no "
    "row. sigma_x/sigma_y in meta (stds of the whole pool) are used only by sigma: data, which is reported not DP.",
    leaks=True)

#: the statement of ``centre: law``: public constants and a row-local scaling
LAW_CENTRING = Preprocessing(
    "",
    "each feature and y are centred at the generating law's means (0 for Eq. 10: nothing is subtracted) and each "
    "row scaled to unit L2 norm (row-local): no statistic of the rows is computed, the guarantee stands. "
    "sigma_x/sigma_y in meta (stds of the whole pool) are used only by sigma: data, which is reported not DP.")

#: what ``dpexp list datasets NAME`` states for an Eq. (10) dataset
CENTRE_OPTIONS = {"paper (default, centre: pool)": {}, "centre: law": {"centre": "law"},
                  "preprocess: false": {"preprocess": False}}


def centring_statement(preprocess_on: bool, centre: str) -> Preprocessing:
    """The statement of ``preprocess``/``centre`` (module docstring)."""
    if not preprocess_on:
        return NOTHING_SHARED
    return POOL_CENTRING if centre == "pool" else LAW_CENTRING


@register_dataset
class HonkelaSynthetic(Dataset):
    """Eq. (10) synthetic regression data, preprocessed as the paper (unit-norm rows, centred y)."""

    name = "honkela_synthetic"
    description = "Honkela et al. Eq. (10): x~N(0,I), beta~N(0,I/lam0), y~N(x'beta,1/lam); unit-norm rows"
    release_point = "one fresh data set per repeat: a row's epsilon covers the model fitted on its private rows"

    class Params(Params):
        d: int = Field(10, ge=1, le=1000, description="number of features")
        lam: float = Field(1.0, gt=0, description="noise precision lambda")
        lam0: float = Field(1.0, gt=0, description="weight precision lambda0")
        preprocess: bool = Field(True, description="centre, unit-norm rows, centre y (Methods 4.4)")
        centre: Literal["pool", "law"] = "pool"
        """the centres: pool = the pool's means (paper; reads the private rows: not DP), law = Eq. 10's means, 0
        (public: nothing subtracted)"""

    preprocessing_options = CENTRE_OPTIONS

    def preprocessing(self) -> Preprocessing:
        return centring_statement(self.params.preprocess, self.params.centre)

    def split(self, subset: str, sizes: Sizes, rng: np.random.Generator) -> Split:
        if sizes.max_private < 0:
            raise UserError("honkela_synthetic is a generator: n_private must be a number, not 'all'")
        p = self.params
        n = sizes.max_test + sizes.max_public + sizes.max_private
        X, y, beta = generate_eq10(n, p.d, rng, p.lam, p.lam0)
        if p.preprocess:
            X, y = preprocess(X, y, p.centre)
        t, u, v = sizes.pools(X.shape[0])
        meta = {"beta": beta, "sigma_x": float(X.std()), "sigma_y": float(y.std()),
                "sigma_source": "std of the whole preprocessed pool (not DP, as in the paper)",
                "lam": p.lam, "coef_target": coef_target_eq10(beta, p.lam, unit_norm=p.preprocess)}
        return Split(X[v], y[v], X[u], y[u], X[t], y[t], meta)
