"""Synthetic data of Honkela et al. (2018), Eq. (10), with the paper's preprocessing.

x ~ N(0, I_d), β ~ N(0, I/λ0), y | x ~ N(xᵀβ, 1/λ) with λ = λ0 = 1 by default.  Preprocessing (Methods 4.4):
centre each feature, scale each row to unit L2 norm, centre y — applied to the whole generated pool, as the paper
preprocesses its whole data set.  Per repeat one pool of ``max_test + max_public + max_private`` rows is drawn and
split into test / public / private pools; each cell takes prefixes of the pools, so sizes nest within a repeat.

Privacy of the preprocessing: the centring means are taken over the whole generated pool (private rows included),
as the paper preprocesses its whole data set — public by assumption (stated on every row): location constants of
the generating distribution (known to be 0 for Eq. 10); the sample means move every unit-norm row a little, so
guarantees are relative to the preprocessed rows (``preprocess: false`` avoids it).  ``sigma_x``/``sigma_y``
in meta are stds of the whole pool, used only by ``sigma: data`` (reported not DP).
``coef_target`` in meta gives the true coefficients an algorithm that clips estimates (``dpexp.families.gdsc.truth``;
evaluation only).
"""

from __future__ import annotations

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


def preprocess(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Centre features, scale rows to unit L2 norm (zero rows stay zero), centre y (Methods 4.4)."""
    X = X - X.mean(axis=0, keepdims=True)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    X = np.divide(X, norms, out=np.zeros_like(X), where=norms > 0)
    return X, y - y.mean()


#: the statement of the Eq. (10) preprocessing over the whole pool or file (``honkela_synthetic``,
#: ``rplr_synth_file``)
POOL_CENTRING = Preprocessing(
    "centred over the whole pool incl. private rows (paper): public by assumption",
    "each feature and y are centred at their means over the whole generated pool or file (private rows included) and "
    "each row scaled to unit L2 norm (row-local), as the paper preprocesses its whole data set. Treated as public by "
    "assumption: location constants of the generating distribution (0 for Eq. 10); the sample means move every "
    "unit-norm row a little, so guarantees are relative to the preprocessed rows. "
    "sigma_x/sigma_y in meta (stds of the whole pool) are used only by sigma: data, which is reported not DP.")


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

    def preprocessing(self) -> Preprocessing:
        return POOL_CENTRING if self.params.preprocess else NOTHING_SHARED

    def split(self, subset: str, sizes: Sizes, rng: np.random.Generator) -> Split:
        if sizes.max_private < 0:
            raise UserError("honkela_synthetic is a generator: n_private must be a number, not 'all'")
        p = self.params
        n = sizes.max_test + sizes.max_public + sizes.max_private
        X, y, beta = generate_eq10(n, p.d, rng, p.lam, p.lam0)
        if p.preprocess:
            X, y = preprocess(X, y)
        t, u, v = sizes.pools(X.shape[0])
        meta = {"beta": beta, "sigma_x": float(X.std()), "sigma_y": float(y.std()),
                "sigma_source": "std of the whole preprocessed pool (not DP, as in the paper)",
                "lam": p.lam, "coef_target": coef_target_eq10(beta, p.lam, unit_norm=p.preprocess)}
        return Split(X[v], y[v], X[u], y[u], X[t], y[t], meta)
