"""Cross-check of the ``vb`` engine against PyMC (NUTS and converged ADVI) on the same statistics.

Skipped cleanly when the optional ``pymc`` extra is not installed; marked slow (PyMC compilation ≈ 20–30 s).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("pymc")

from dpexp.models.vb import fit_vb  # noqa: E402


@pytest.mark.slow
def test_vb_agrees_with_nuts_and_converged_advi():
    from dpexp.models.pymc_backend import PymcBayesLR, posterior_mean_pymc

    warnings.filterwarnings("ignore")
    rng = np.random.default_rng(11)
    n, d = 120, 3
    X = rng.normal(size=(n, d))
    y = X @ rng.normal(size=d) + rng.normal(size=n)
    S, r, t = X.T @ X, X.T @ y, float(y @ y)
    X_test = rng.normal(size=(50, d))

    vb = fit_vb(S, r, t, n).mean
    eng = PymcBayesLR(d)
    nuts = eng.fit_nuts(S, r, t, n, np.random.default_rng(1), draws=2000, tune=1000, chains=2)
    advi = eng.fit_advi(S, r, t, n, np.random.default_rng(2), n_iter=30000, draws=5000)
    scale = np.abs(X_test @ nuts).max()
    # NUTS Monte Carlo error of the mean is ~ sd/sqrt(ESS) ≈ 0.1/60; tolerance 2% of the prediction range.
    assert np.abs(X_test @ vb - X_test @ nuts).max() <= 0.02 * scale
    assert np.abs(X_test @ advi - X_test @ nuts).max() <= 0.03 * scale
    # batched interface with the joint PSD projection (a no-op on exact statistics)
    batched = posterior_mean_pymc(S[None], r[None], np.array([t]), np.array([n]), np.random.default_rng(3),
                                  method="advi", n_iter=30000, draws=0)
    assert np.abs(X_test @ batched[0] - X_test @ vb).max() <= 0.03 * scale
