"""The Bayesian linear regression the GDSC family fits to its (noisy) sufficient statistics (Honkela et al. 2018,
Methods 4.1): the fixed-precision parameters shared by ``lr``, ``rplr`` and ``plr``, and the engine dispatch."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from dpexp.components import Params
from dpexp.models.bayes_lr import posterior_mean_fixed
from dpexp.models.vb import fit_vb, ridge_stabilised


class FixedPrecisionParams(Params):
    lam: float = Field(1.0, gt=0, description="noise precision lambda (prior: fixed)")
    lam0: float = Field(1.0, gt=0, description="weight precision lambda0 (prior: fixed)")
    solver: Literal["psd_floor", "direct"] = Field(
        "psd_floor", description="prior: fixed: floor the eigenvalues of the perturbed X'X at 0 before the solve "
                                 "(default) or solve Eqs. 3-4 on the statistics as released (the papers' text)")


def fit_weights(XX: np.ndarray, Xy: np.ndarray, yy: np.ndarray, n: np.ndarray | float, prior: str, lam: float,
                lam0: float, engine: str = "vb", rng: np.random.Generator | None = None,
                ridge: np.ndarray | float | None = None, solver: str = "psd_floor", project: str = "joint") -> np.ndarray:
    """Posterior-mean weights (…, d) from (possibly perturbed) statistics, batched over leading axes.

    ``prior="fixed"``: Eqs. 3–4 with fixed λ, λ0 (``dpexp.models.bayes_lr``).  ``prior="gamma"``: Gamma(2, 2) priors
    on λ and λ0 (Eq. 6), fitted by the ``vb`` engine (``dpexp.models.vb``, default; always after the joint PSD
    projection) or PyMC ADVI (``engine="pymc"``, the paper's 5000 iterations; optional extra, slow: one fit per
    problem), after the joint projection (``project="joint"``) or on the statistics as released (``"none"``, the
    authors' code).
    """
    if prior == "fixed":
        return posterior_mean_fixed(XX, Xy, lam, lam0, solver)
    if engine == "pymc":
        from dpexp.models.pymc_backend import posterior_mean_pymc

        return posterior_mean_pymc(XX, Xy, yy, n, rng if rng is not None else np.random.default_rng(0),
                                   project=project == "joint")
    if ridge is not None:
        XX = ridge_stabilised(XX, ridge)
    return fit_vb(XX, Xy, yy, n).mean
