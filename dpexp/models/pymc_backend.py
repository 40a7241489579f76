"""PyMC 5 back-end for the Gamma-prior Bayesian LR of Honkela et al. (2018): the paper's ADVI, and NUTS as a
reference.  Optional: needs the ``pymc`` extra (``pip install 'dpexp[pymc]'``); importing this module without PyMC
raises ``UserError`` with that remedy.

Model (Methods 4.1, Eqs. 2, 6 and 7), written on the sufficient statistics S = nXX, r = nXy, t = nyy and n only::

    λ ~ Gamma(a, b),  λ0 ~ Gamma(a0, b0)  (rate parametrisation; a = b = a0 = b0 = 2),
    β | λ0 ~ N(0, I/λ0),
    log p(y | X, β, λ) = n/2 log λ − λ/2 (βᵀSβ − 2βᵀr + t)          (pm.Potential; the −n/2 log 2π is dropped)

* ADVI (paper, Methods 4.5): mean-field normal on the unconstrained space (log λ, log λ0, β), PyMC's default
  optimiser (adagrad_window), ``n_iter`` = 5000 iterations by default, predictions from ``draws`` = 5000 draws of
  β from the fitted q (Eq. 8).  On this model 5000 iterations are not converged (docs/bayes_lr.md); pass
  ``n_iter=30000`` for a converged fit.
* NUTS: ``pm.sample`` with the same model; the posterior mean of β over the draws.

PyMC is slow to compile; :class:`PymcBayesLR` compiles the ADVI step function once per dimension d (the
statistics are pytensor shared variables) and resets the variational parameters and the optimiser state before every fit, so
repeated fits ("warm") cost only the iterations.  Statistics that are not a valid Gram matrix should be projected
first (``dpexp.models.vb`` does the joint PSD projection; :func:`project_stats` exposes it), otherwise the
posterior can be improper and ADVI diverges.

All randomness comes from the numpy Generator passed in: PyMC seeds are drawn from it.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from dpexp import cache
from dpexp.errors import UserError
from dpexp.models.vb import PAPER_PRIOR

try:  # optional dependency
    import pymc as pm
    import pytensor
    import pytensor.tensor as pt
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise UserError("the 'pymc' engine needs PyMC 5: pip install 'dpexp[pymc]'") from exc


def project_stats(nXX: np.ndarray, nXy: np.ndarray, nyy: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Joint PSD projection of [[nXX, nXy], [nXyᵀ, nyy]] (the ``vb`` engine's default; see dpexp.models.vb)."""
    d = nXX.shape[0]
    M = np.zeros((d + 1, d + 1))
    M[:d, :d] = 0.5 * (nXX + nXX.T)
    M[:d, d] = M[d, :d] = nXy
    M[d, d] = nyy
    w, U = np.linalg.eigh(M)
    M = (U * np.maximum(w, 0.0)) @ U.T
    return M[:d, :d], M[:d, d], float(M[d, d])


def _seed(rng: np.random.Generator) -> int:
    return int(rng.integers(0, 2**31 - 1))


class PymcBayesLR:
    """The paper's model in PyMC for one dimension ``d``; fit many statistics with one compilation.

    ``compile_seconds`` records the one-off cost of building the model and compiling the ADVI step.
    """

    def __init__(self, d: int, prior: tuple[float, float, float, float] = PAPER_PRIOR) -> None:
        t0 = time.perf_counter()
        a, b, a0, b0 = prior
        self.d = int(d)
        # plain shared variables, not pm.Data: PyMC's variational API freezes pm.Data into constants when the
        # inference object is built, which would force a recompilation for every new set of statistics.
        self._data = {"S": pytensor.shared(np.eye(d), name="S"), "r": pytensor.shared(np.zeros(d), name="r"),
                      "t": pytensor.shared(np.float64(0.0), name="t"), "n": pytensor.shared(np.float64(0.0), name="n")}
        S, r, t, n = (self._data[k] for k in ("S", "r", "t", "n"))
        with pm.Model() as model:
            lam = pm.Gamma("lam", alpha=a, beta=b)
            lam0 = pm.Gamma("lam0", alpha=a0, beta=b0)
            beta = pm.Normal("beta", mu=0.0, tau=lam0, shape=d)
            quad = pt.dot(beta, pt.dot(S, beta)) - 2.0 * pt.dot(beta, r) + t
            pm.Potential("loglik", 0.5 * n * pt.log(lam) - 0.5 * lam * quad)
        self.model = model
        self._advi: Any = None
        self._step: Any = None
        self._snapshot: dict[Any, Any] = {}
        self._data_names = {"S", "r", "t", "n"}
        self._build_advi()
        self.compile_seconds = time.perf_counter() - t0

    def _build_advi(self) -> None:
        with self.model:
            self._advi = pm.ADVI()
            # score=True as in Inference.fit's default; with score=False the fit diverged here (PyMC 5.28)
            self._step = self._advi.objective.step_function(score=True)
        self._shared = [v for v in self._step.get_shared() if getattr(v, "name", None) not in self._data_names]
        self._snapshot = {v: np.copy(v.get_value()) if isinstance(v.get_value(), np.ndarray) else v.get_value()
                          for v in self._shared}
        approx = self._advi.approx
        group = approx.groups[0]
        self._beta_slice = group.ordering["beta"][1]
        self._mu, self._rho = approx.params[0], approx.params[1]

    def _set_data(self, nXX: np.ndarray, nXy: np.ndarray, nyy: float, n: float) -> None:
        self._data["S"].set_value(np.asarray(nXX, dtype=float))
        self._data["r"].set_value(np.asarray(nXy, dtype=float))
        self._data["t"].set_value(np.float64(nyy))
        self._data["n"].set_value(np.float64(n))

    def fit_advi(self, nXX: np.ndarray, nXy: np.ndarray, nyy: float, n: float, rng: np.random.Generator,
                 n_iter: int = 5000, draws: int = 5000) -> np.ndarray:
        """Posterior-mean weights (d,) by the paper's mean-field ADVI: ``n_iter`` steps from the default start,
        then the mean of ``draws`` draws of β from q (Eq. 8)."""
        self._set_data(nXX, nXy, nyy, n)
        for v, val in self._snapshot.items():
            if isinstance(val, np.random.Generator):
                v.set_value(np.random.default_rng(_seed(rng)), borrow=True)
            else:
                v.set_value(np.copy(val) if isinstance(val, np.ndarray) else val)
        for _ in range(int(n_iter)):
            self._step()
        mu = self._mu.get_value()[self._beta_slice]
        sd = np.log1p(np.exp(self._rho.get_value()[self._beta_slice]))  # PyMC's rho -> sigma (softplus)
        if draws <= 0:
            return mu.copy()
        return (mu + sd * rng.standard_normal((int(draws), self.d))).mean(axis=0)

    def fit_nuts(self, nXX: np.ndarray, nXy: np.ndarray, nyy: float, n: float, rng: np.random.Generator,
                 draws: int = 2000, tune: int = 1000, chains: int = 2) -> np.ndarray:
        """Posterior-mean weights (d,) by NUTS (reference)."""
        self._set_data(nXX, nXy, nyy, n)
        with self.model:
            idata = pm.sample(draws=draws, tune=tune, chains=chains, cores=1, random_seed=_seed(rng),
                              progressbar=False, compute_convergence_checks=False)
        return np.asarray(idata.posterior["beta"].mean(dim=("chain", "draw")))


def engine(d: int, prior: tuple[float, float, float, float] = PAPER_PRIOR) -> PymcBayesLR:
    """A :class:`PymcBayesLR` per (d, prior), built once per process (``dpexp.cache``)."""
    key = (int(d), tuple(float(p) for p in prior))
    return cache.memo("models.pymc_engine", key, lambda: PymcBayesLR(*key))


def posterior_mean_pymc(nXX: np.ndarray, nXy: np.ndarray, nyy: np.ndarray, n: np.ndarray,
                        rng: np.random.Generator, method: str = "advi", project: bool = True,
                        prior: tuple[float, float, float, float] = PAPER_PRIOR, **kw: Any) -> np.ndarray:
    """Batched interface like ``dpexp.models.vb.posterior_mean_gamma``: loops over leading axes (slow)."""
    nXX = np.asarray(nXX, float)
    d = nXX.shape[-1]
    batch = nXX.shape[:-2]
    S = nXX.reshape(-1, d, d)
    r = np.broadcast_to(np.asarray(nXy, float), batch + (d,)).reshape(-1, d)
    t = np.broadcast_to(np.asarray(nyy, float), batch).reshape(-1)
    nn = np.broadcast_to(np.asarray(n, float), batch).reshape(-1)
    eng = engine(d, prior)
    out = np.empty((S.shape[0], d))
    for i in range(S.shape[0]):
        Si, ri, ti = project_stats(S[i], r[i], t[i]) if project else (S[i], r[i], t[i])
        if method == "advi":
            out[i] = eng.fit_advi(Si, ri, ti, nn[i], rng, **kw)
        elif method == "nuts":
            out[i] = eng.fit_nuts(Si, ri, ti, nn[i], rng, **kw)
        else:
            raise UserError(f"pymc method must be 'advi' or 'nuts', got {method!r}")
    return out.reshape(batch + (d,))


def fit_advi_many(nXX: np.ndarray, nXy: np.ndarray, nyy: np.ndarray, n: np.ndarray, rng: np.random.Generator,
                  n_iter: int = 5000, draws: int = 5000,
                  prior: tuple[float, float, float, float] = PAPER_PRIOR) -> np.ndarray:
    """The paper's mean-field ADVI of B independent problems in one model (nXX (B, d, d), nXy (B, d), nyy (B,), n
    (B,)), no positive-definite repair: λ, λ0 of shape (B,), β (B, d), the log-likelihood the sum of the problems'.
    Mean-field q and PyMC's adagrad_window (per-parameter step sizes) make the joint fit B separate fits — each
    parameter's gradient is its own problem's — so one compilation and ``n_iter`` steps serve all of them; a
    problem whose fit diverges (an improper posterior) gets non-finite weights and leaves the others alone.
    Returns the posterior-mean weights (B, d): the mean of ``draws`` draws of β from q (or q's mean if
    ``draws`` ≤ 0).  Randomness: PyMC's seed and the draws from ``rng``."""
    S = np.asarray(nXX, dtype=float)
    B, d = S.shape[0], S.shape[-1]
    r = np.asarray(nXy, dtype=float).reshape(B, d)
    t = np.asarray(nyy, dtype=float).reshape(B)
    nn = np.broadcast_to(np.asarray(n, dtype=float), (B,))
    a, b, a0, b0 = prior
    with pm.Model():
        lam = pm.Gamma("lam", alpha=a, beta=b, shape=B)
        lam0 = pm.Gamma("lam0", alpha=a0, beta=b0, shape=B)
        beta = pm.Normal("beta", mu=0.0, tau=lam0[:, None], shape=(B, d))
        Sb = pt.sum(pt.as_tensor_variable(S) * beta[:, None, :], axis=-1)
        quad = pt.sum(beta * Sb, axis=-1) - 2.0 * pt.sum(beta * pt.as_tensor_variable(r), axis=-1) + t
        pm.Potential("loglik", pt.sum(0.5 * nn * pt.log(lam) - 0.5 * lam * quad))
        advi = pm.ADVI(random_seed=_seed(rng))
        step = advi.objective.step_function(score=True)
    with np.errstate(all="ignore"):
        for _ in range(int(n_iter)):
            step()
    approx = advi.approx
    sl = approx.groups[0].ordering["beta"][1]
    mu = approx.params[0].get_value()[sl].reshape(B, d)
    with np.errstate(all="ignore"):
        sd = np.log1p(np.exp(approx.params[1].get_value()[sl].reshape(B, d)))
    if draws <= 0:
        return mu.copy()
    out = np.empty((B, d))
    step_rows = max(1, 2_000_000 // max(1, int(draws) * d))   # draws in blocks of ≈ 16 MB
    for i in range(0, B, step_rows):
        z = rng.standard_normal((int(draws), min(step_rows, B - i), d))
        with np.errstate(all="ignore"):
            out[i:i + step_rows] = (mu[i:i + step_rows] + sd[i:i + step_rows] * z).mean(axis=0)
    return out
