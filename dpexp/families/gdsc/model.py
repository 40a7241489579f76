"""The Bayesian linear regression the GDSC family fits to its (noisy) sufficient statistics (Honkela et al. 2018,
Methods 4.1): the fixed-precision parameters shared by ``lr``, ``rplr`` and ``plr``, and the engine dispatch."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from dpexp import cache
from dpexp.components import Params
from dpexp.families.gdsc.stats import sufficient_stats
from dpexp.models.vb import VBResult, fit_vb, fit_vb_each, ridge_stabilised


class FixedPrecisionParams(Params):
    lam: float = Field(1.0, gt=0, description="noise precision lambda (prior: fixed)")
    lam0: float = Field(1.0, gt=0, description="weight precision lambda0 (prior: fixed)")
    solver: Literal["psd_floor", "direct"] = "psd_floor"
    """prior: fixed: floor the eigenvalues of the perturbed X'X at 0 before the solve (default) or solve Eqs. 3-4 on the
    statistics as released (the papers' text)"""


_PUBLIC_NS, _PUBLIC_MAX = "gdsc.public_posterior", 256


def _public_fit(X: np.ndarray, y: np.ndarray) -> VBResult:
    XXp, Xyp, yyp = sufficient_stats(X, y)
    return _shared(fit_vb(XXp, Xyp, yyp, float(X.shape[0]), return_cov=True))


def _shared(res: VBResult) -> VBResult:
    for a in (res.mean, res.cov):   # shared by the cells that ask: read-only
        a.setflags(write=False)
    return res


def public_posterior(X_public: np.ndarray, y_public: np.ndarray) -> VBResult:
    """The Gamma-prior posterior of the public rows alone (``fit_vb`` with its covariance): the fit of a method
    that releases nothing when a split has no private rows (narplr, adassp).  Memoised by the rows' values, so the
    methods that fall back to it on one split fit it once (``public_posteriors``: of many splits at once)."""
    X = np.asarray(X_public, dtype=float)
    y = np.asarray(y_public, dtype=float)
    return cache.memo_array(_PUBLIC_NS, np.column_stack([X, y]) if X.ndim == 2 else X, y.shape,
                            lambda: _public_fit(X, y), maxsize=_PUBLIC_MAX)


def public_posteriors(X_publics: list[np.ndarray], y_publics: list[np.ndarray]) -> list[VBResult | Exception]:
    """``public_posterior`` of the public rows of many splits (e.g. every drug of a size without private rows), in
    order, each its value or the error its call raises: the same memo entries (keys, values, order of use), with
    the missing fits of equal d fitted in one ``fit_vb_each`` call — each problem the floats, types and flags
    ``fit_vb`` of that problem alone gives (tests/gdsc/test_public_prefit.py), ~6 times faster.  Rows of equal
    values fit once.  A lone fit of its d, or a group whose batched fit raises (e.g. non-finite rows), is fitted
    split by split, as ``public_posterior`` does."""
    rows = [(np.asarray(Xp, dtype=float), np.asarray(yp, dtype=float)) for Xp, yp in zip(X_publics, y_publics)]
    keys = [(*cache.array_key(np.column_stack([X, y]) if X.ndim == 2 else X), y.shape) for X, y in rows]
    todo: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}   # memo_array's key in public_posterior → rows
    for key, (X, y) in zip(keys, rows):
        # a probe that leaves the memo's order of use alone: that order is the final pass's
        if X.ndim == 2 and key not in todo and not cache.contains(_PUBLIC_NS, key):
            todo[key] = (X, y)
    groups: dict[int, list[tuple]] = {}
    for key, (X, y) in todo.items():
        groups.setdefault(X.shape[1], []).append(key)
    fitted: dict[tuple, VBResult] = {}
    for ks in groups.values():
        if len(ks) < 2:
            continue
        stats = [sufficient_stats(*todo[k]) for k in ks]
        try:
            fits = fit_vb_each(np.stack([s[0] for s in stats]), np.stack([s[1] for s in stats]),
                               np.array([s[2] for s in stats]), np.array([float(todo[k][0].shape[0]) for k in ks]),
                               return_cov=True)
        except (ArithmeticError, ValueError, np.linalg.LinAlgError):   # a numerical failure of one problem of the
            continue   # stack: each split's own fit below raises it (or not) for that split alone (public rows: no draw)
        fitted.update((k, _shared(res)) for k, res in zip(ks, fits))
    out: list[VBResult | Exception] = []
    for key, (X, y) in zip(keys, rows):
        try:
            out.append(cache.memo(_PUBLIC_NS, key, lambda k=key, X=X, y=y: fitted[k] if k in fitted else
                                  _public_fit(X, y), maxsize=_PUBLIC_MAX))
        except Exception as exc:  # recorded for its split
            out.append(exc)
    return out


def exact_gamma_weights(XX: np.ndarray, Xy: np.ndarray, yy: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``fit_weights(…, prior="gamma")`` of exact statistics (no noise, no ridge: ``fit_vb``'s posterior mean),
    memoised by their values (read-only result): ``lr`` with ``prior: gamma`` and ``rlr`` fit the same batch where
    rlr clips nothing (n_private = 0: no thresholds are tuned), so whichever runs second reuses the fit — a pure
    function of the values, hence the same floats."""
    XX, Xy = np.asarray(XX, dtype=float), np.asarray(Xy, dtype=float)
    yy, n = np.asarray(yy, dtype=float), np.asarray(n, dtype=float)

    def fit() -> np.ndarray:
        mean = fit_vb(XX, Xy, yy, n).mean
        mean.setflags(write=False)
        return mean

    values = np.concatenate([XX.ravel(), Xy.ravel(), yy.ravel(), n.ravel()])
    return cache.memo_array("gdsc.exact_gamma_weights", values, (XX.shape, Xy.shape, yy.shape, n.shape), fit,
                            maxsize=8)


def fixed_posterior(XX: np.ndarray, Xy: np.ndarray, lam: float, lam0: float, solver: str = "psd_floor",
                    with_cov: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """The fixed-precision posterior (Eqs. 3–4) of (possibly perturbed) statistics, batched over leading axes: mean
    (λ0 I + λ S)⁻¹ λ Xᵀy (…, d) and, with ``with_cov``, the covariance (λ0 I + λ S)⁻¹ (…, d, d), where S is XᵀX
    symmetrised and — ``solver="psd_floor"`` — with its negative eigenvalues floored at 0, each matrix on its own
    (one that needs no floor is used as it is); ``"direct"``: S symmetrised only (what the papers write).  The one
    fixed-precision fit of the family (rplr/lr ``prior: fixed``, plr through ``batching.fit_fixed_many``)."""
    XX = np.asarray(XX, dtype=float)
    Xy = np.asarray(Xy, dtype=float)
    if solver not in ("psd_floor", "direct"):
        raise ValueError(f"solver must be 'psd_floor' or 'direct', got {solver!r}")
    S = 0.5 * (XX + np.swapaxes(XX, -1, -2))
    if solver == "psd_floor":
        w, V = np.linalg.eigh(S)
        low = np.any(w < 0.0, axis=-1)
        if np.any(low):
            Vl = V[low]
            S[low] = (Vl * np.maximum(w[low], 0.0)[..., None, :]) @ np.swapaxes(Vl, -1, -2)
    prec = lam0 * np.eye(S.shape[-1]) + lam * S
    mean = np.linalg.solve(prec, lam * Xy[..., None])[..., 0]
    return mean, (np.linalg.inv(prec) if with_cov else None)


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
    return fit_posterior(XX, Xy, yy, n, prior, lam, lam0, engine, rng, ridge, solver, with_cov=False,
                         project=project)[0]


def fit_posterior(XX: np.ndarray, Xy: np.ndarray, yy: np.ndarray, n: np.ndarray | float, prior: str, lam: float,
                  lam0: float, engine: str = "vb", rng: np.random.Generator | None = None,
                  ridge: np.ndarray | float | None = None, solver: str = "psd_floor",
                  with_cov: bool = True, project: str = "joint") -> tuple[np.ndarray, np.ndarray | None]:
    """Posterior mean (…, d) and covariance (…, d, d) of the weights as ``fit_weights`` fits them, treating the
    statistics as exact (the *naive* posterior of a perturbed release): ``prior="fixed"``: (λ0 I + λ S)⁻¹ with S the
    matrix the mean was solved with; ``prior="gamma"``, ``vb``: the covariance of q(β); ``pymc``: None (not kept)."""
    if prior == "fixed":
        return fixed_posterior(XX, Xy, lam, lam0, solver, with_cov)
    if engine == "pymc":
        from dpexp.models.pymc_backend import posterior_mean_pymc

        return posterior_mean_pymc(XX, Xy, yy, n, rng if rng is not None else np.random.default_rng(0),
                                   project=project == "joint"), None
    eig = None
    if ridge is not None:
        XX, eig = ridge_stabilised(XX, ridge, with_eig=True)
    r = fit_vb(XX, Xy, yy, n, return_cov=with_cov, eig=eig)
    return r.mean, r.cov
