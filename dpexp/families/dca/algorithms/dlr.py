"""Distributed DP Bayesian linear regression (Heikkilä et al. 2017, Alg. 2, §4.2.1 and supplement §10).

Model (supplement eqs. (9)–(13)): y | x ~ N(xᵀβ, 1/λ), β ~ N(0, I/λ0) with λ = λ0 = 1; the posterior mean
(λ0 I + λ Σ x xᵀ)⁻¹ λ Σ x y depends on the data only through the sufficient statistics; ``fit_predict`` solves
eq. (13) directly with the perturbed statistics, as the paper (``solver: psd_floor`` first floors negative
eigenvalues of the perturbed Σ x xᵀ at 0 — a post-processing that turns out far worse, see ``fit_predict``).
Predictions are x_testᵀ μ̂.

**Neighbouring relation: replace-one (bounded DP)** — "the two data sets have the same number of samples, but they
differ on a single one" (§3.1); N is public.

Released query (Alg. 2 step 4): per client the d(d+1)/2 + d unique terms (x_j x_k for j ≤ k, x_j y).  With
|x_j| ≤ c_j and |y| ≤ c_y, replacing one record changes a diagonal term by at most c_j², an off-diagonal term by at
most 2 c_j c_k and a cross term by at most 2 c_j c_y, so (supplement eqs. (15)–(18))
    Δ₂² ≤ Σ_j c_j⁴ + Σ_{j<k} (2 c_j c_k)² + Σ_j (2 c_j c_y)²,
which for a common feature bound c_x is d(2d − 1) c_x⁴ + 4 d c_x² c_y² (``ss_sensitivity``).

Marginal std round (Alg. 2 step 2): per client (x_1², …, x_d², y²) after projection to the assumed bounds; each
entry changes by at most c_j² under replacement, so Δ₂² = Σ_j c_j⁴ + c_y⁴ (``sq_sensitivity``).  The data are
assumed zero-centred (§5), so σ̂_j = sqrt(S_j / N); a negative noisy S_j gives σ̂_j = 0.5 (supplement §10).  This
round spends (p ε, p δ), p = ``share_std`` (default 0.3); the statistics round spends the rest ((1 − p) ε,
(1 − p) δ); by basic composition the whole run is (ε, δ)-DP.

Projection thresholds (Alg. 2 step 3; §5): b_j = min(c_j, ω_x σ̂_j) for every feature and b_y = min(c_y, ω_y σ̂_y),
with (ω_x, ω_y) chosen on *auxiliary synthetic data* from eqs. (4)–(6) of the same size N and dimension d (public
facts; the auxiliary data are seeded by a hash of these public inputs and the result is cached): a 20 × 20 grid of
ω ∈ linspace(0.1, 2.1, 20) (in units of the auxiliary data's std), 10 repeats, one ω for all features and one for
the target, minimising the mean absolute prediction error of the model fitted with the noise the real run will add
at the remaining budget.  No private data are touched by this search.  It is a different protocol from the GDSC
family's ``tune_thresholds`` (Honkela et al.: Spearman on the auxiliary training rows under Laplace noise at a
budget split, maximised over {0.1, …, 2.0}²), so both stay; they share the auxiliary-data draw
(``dpexp.models.bayes_lr.sample_data``) and the memo (``dpexp.cache``).

Settings (how the noise enters):
* ``ta``   trusted aggregator — Gaussian SSP: Σ z_i + N(0, σ_std²) on every term;
* ``ddp``  distributed — the DCA protocol (Alg. 1, ``dca.DCA``) with each client adding N(0, σ_std²/(N − T − 1))
  (Thm 1), run end to end in the ring Z/2^64;
* ``input`` input perturbation — every client makes its own z_i (ε, δ)-DP before sending it in the clear,
  z_i + N(0, σ_std²) with the same Δ₂ (any two records are neighbours of one client's one-record data set), so the
  sum carries N(0, N σ_std²) noise.  We draw that sum's noise directly, which has the same distribution.

Paper settings (the authors' code, DPBayes/dca-nips2017; ``configs/dca_*_paper.yaml``), each an explicit parameter
whose default is ours: ``calibration: classic`` (Eq. (1)); ``solver: abs_eig`` (negative eigenvalues of XX̂ flipped
to their absolute values, every model and the search); for TA/DDP/input perturbation ``bound_y_from_data: true``
(c_y = ⌈max |y|⌉ of the clients) and ``clip: false`` (data not projected); for the projected variants
``std_sensitivity: paper`` (√(d R² + c_y²) with R = ``std_r`` = 7.5, ``sq_sensitivity_paper``) and the search options
``aux_repeats: 20, aux_noise_draws: 20, aux_data: row_normalised, aux_score: in_sample, aux_noise_power: 4,
aux_budget: full, omega_max: 2.0`` (+ ``aux_n: 400`` on GDSC).  The data-reading and under-noised choices are recorded
with ``ledger.not_dp(reason)`` (guarantee ``none``); the search options touch no private data and change no
guarantee; the classic calibration at ε ≥ 1 is recorded with the true δ of its σ (larger than asked, with a note).

σ_std comes from ``noise.sigma_std`` (``calibration``: "analytic" by default, or the paper's "classic" Eq. (1),
which warns for ε ≥ 1); the choice is recorded in every result as the extra ``calibration_analytic`` (1 or 0).
"""

from __future__ import annotations

import functools
import math
import warnings
from typing import Literal

import numpy as np
from pydantic import Field

from dpexp import cache
from dpexp.audit.plan import AuditPlan
from dpexp.components import Algorithm, BatchedAlgorithm, Params, Reference
from dpexp.errors import UserError
from dpexp.families.dca.audit import (AUDIT_DELTA, FIXED_OMEGA, bounded_clients, bounded_clients_outliers,
                                      released_sums)
from dpexp.families.dca.protocol.dca import DCA
from dpexp.families.dca.protocol.noise import PrivacyCalibrationWarning, check_clients, noise_factor, sigma_std
from dpexp.models.bayes_lr import posterior_mean_fixed, sample_data
from dpexp.privacy.ledger import as_ledger
from dpexp.privacy.mechanisms import distributed_gaussian_spend, gaussian, gaussian_spend, warn_calibration
from dpexp.registry import register_algorithm
from dpexp.types import Output, Split

STD_FLOOR = 0.5          # σ̂ used when the noisy second moment is not positive (supplement §10)
OMEGA_GRID = np.linspace(0.1, 2.1, 20)


# ----------------------------------------------------------------------------------------------- statistics
def n_terms(d: int) -> int:
    """Number of unique sufficient-statistic terms d(d+1)/2 + d."""
    return d * (d + 1) // 2 + d


@functools.cache
def _triu(d: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.triu_indices(d)``, made once per d (read-only)."""
    iu, ju = np.triu_indices(d)
    iu.flags.writeable = ju.flags.writeable = False
    return iu, ju


def unique_terms(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-client query vectors (…, n, d(d+1)/2 + d): x_j x_k for j ≤ k (row-major upper triangle), then x_j y."""
    d = X.shape[-1]
    iu, ju = _triu(d)
    return np.concatenate([X[..., iu] * X[..., ju], X * y[..., None]], axis=-1)


def terms_to_stats(v: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of summing ``unique_terms``: (…, p) → symmetric XX (…, d, d) and Xy (…, d)."""
    iu, ju = _triu(d)
    m = iu.size
    XX = np.zeros(v.shape[:-1] + (d, d))
    XX[..., iu, ju] = v[..., :m]
    XX[..., ju, iu] = v[..., :m]
    return XX, v[..., m:m + d]


def ss_sensitivity(c_x: float | np.ndarray, c_y: float, d: int | None = None) -> float:
    """L2 sensitivity of the unique-terms query, supplement eq. (18) (replace-one; see module docstring).

    ``c_x`` is a common bound (then ``d`` is required) or one bound per feature.
    """
    c = np.asarray(c_x, dtype=float)
    if c.ndim == 0:
        if d is None:
            raise ValueError("d is required with a scalar c_x")
        cx = float(c)
        return math.sqrt(d * (2 * d - 1) * cx**4 + 4 * d * cx**2 * c_y**2)
    c2 = c**2
    diag = np.sum(c2**2)
    off = 4.0 * (np.sum(c2) ** 2 - np.sum(c2**2)) / 2.0
    cross = 4.0 * np.sum(c2) * c_y**2
    return float(math.sqrt(diag + off + cross))


def sq_sensitivity(c_x: np.ndarray, c_y: float) -> float:
    """L2 sensitivity of the second-moment query (x_1², …, x_d², y²): sqrt(Σ_j c_j⁴ + c_y⁴) (replace-one)."""
    c = np.asarray(c_x, dtype=float)
    return float(math.sqrt(np.sum(c**4) + c_y**4))


def sq_sensitivity_paper(d: int, r: float, r_y: float) -> float:
    """The std round's sensitivity in the authors' code: sqrt(d R² + R_y²) (the paper settings).

    **Under-noised, not DP at the claimed ε**: the released values are the *squares* x_j², y², which range over
    [0, R²] and [0, R_y²], so replace-one moves the query by up to sqrt(d R⁴ + R_y⁴) (``sq_sensitivity``); with
    R = R_y = 7.5 the authors' value is 7.5²/7.5 = 7.5 times too small per coordinate.  Kept to reproduce their
    curves; the algorithms record ``ledger.not_dp`` when it is chosen (``std_sensitivity: paper``).
    """
    return float(math.sqrt(d * r**2 + r_y**2))


SOLVERS = ("direct", "psd_floor", "abs_eig")


def abs_eigenvalues(A: np.ndarray) -> np.ndarray:
    """Symmetrise ``A`` (…, d, d) and replace every eigenvalue by its absolute value: V |Λ| Vᵀ.

    The authors' code (DPBayes/dca-nips2017) does this to the noisy XX̂ of every model before the posterior solve
    (``solver: abs_eig``, the paper settings).  Post-processing of the release: no privacy cost.
    """
    A = 0.5 * (A + np.swapaxes(A, -1, -2))
    w, V = np.linalg.eigh(A)
    return (V * np.abs(w)[..., None, :]) @ np.swapaxes(V, -1, -2)


def fit_predict(XX: np.ndarray, Xy: np.ndarray, X_test: np.ndarray, lam: float = 1.0, lam0: float = 1.0,
                solver: str = "direct") -> tuple[np.ndarray, np.ndarray]:
    """Posterior means (…, d) and predictions (…, n_test) of the fixed-precision BLR (supplement eqs. (11)–(13)).

    ``solver="direct"`` (default, the paper's eq. (13)): μ̂ = (λ0 I + λ XX̂)⁻¹ λ Xŷ with the perturbed statistics as
    released, even when the noise makes XX̂ indefinite.  ``solver="psd_floor"``: first raise the negative
    eigenvalues of XX̂ to 0 (``dpexp.models.bayes_lr.posterior_mean_fixed``).  ``solver="abs_eig"``: first flip the
    negative eigenvalues of XX̂ to their absolute values (the authors' code; ``abs_eigenvalues``), then eq. (13).
    All are post-processing of the DP release.  The floor looks safer but is much worse here: in a direction where the noise made XX̂ negative the
    floored precision is only λ0 = 1 while Xŷ carries noise of std σ_std, so that coefficient becomes ~σ_std
    (hundreds on the UCI data), whereas the direct solve divides by the large negative eigenvalue and shrinks it
    (red wine, TA, ε = 10: median MAE 2.6 direct vs 410 floored; docs/distributed.md).  An exactly singular system
    gives NaN predictions for that release (a failed trial).
    """
    if solver == "psd_floor":
        with np.errstate(all="ignore"):
            try:
                mu = posterior_mean_fixed(XX, Xy, lam=lam, lam0=lam0)
            except np.linalg.LinAlgError:
                mu = np.full(Xy.shape, np.nan)
        return mu, mu @ X_test.T
    if solver not in ("direct", "abs_eig"):
        raise UserError(f"solver must be one of {SOLVERS}, got {solver!r}")
    XX = np.asarray(XX, dtype=float)
    Xy = np.asarray(Xy, dtype=float)
    d = XX.shape[-1]
    if solver == "abs_eig":
        with np.errstate(all="ignore"):
            XX = abs_eigenvalues(XX)
    prec = lam0 * np.eye(d) + lam * 0.5 * (XX + np.swapaxes(XX, -1, -2))
    rhs = lam * Xy[..., None]
    with np.errstate(all="ignore"):
        try:
            mu = np.linalg.solve(prec, rhs)[..., 0]
        except np.linalg.LinAlgError:          # some system of the batch is singular: solve one by one
            P, R = prec.reshape(-1, d, d), rhs.reshape(-1, d, 1)
            out = np.full((P.shape[0], d), np.nan)
            for i in range(P.shape[0]):
                try:
                    out[i] = np.linalg.solve(P[i], R[i])[:, 0]
                except np.linalg.LinAlgError:
                    pass
            mu = out.reshape(Xy.shape)
    return mu, mu @ X_test.T


# ----------------------------------------------------------------------------------------------- releases
def release_sum(Z: np.ndarray, sensitivity: float | np.ndarray, epsilon: float, delta: float, setting: str,
                ledger, trials: int, calibration: str, n_compute: int = 10, n_faulty: int = 0,
                frac_bits: int = 32, value_bound: float | np.ndarray | None = None, label: str = "sum",
                shares: bool = True, total: np.ndarray | None = None) -> tuple[np.ndarray, float | np.ndarray]:
    """(trials, p) DP releases of Σ_i Z_i under ``setting`` (see module docstring) and the σ_std used.

    ``Z`` is (N, p), shared by every trial, or (trials, N, p) with ``sensitivity`` (and ``value_bound``) one per
    trial (the projected variants' statistics round: each trial's data clipped to its own DP bounds); σ_std is then
    one per trial (``sigma_std`` once per distinct sensitivity).  The noise is drawn through ``dpexp.privacy`` and
    the release recorded once in ``ledger`` (a ``PrivacyLedger``; a numpy Generator is wrapped), at the worst trial
    (largest Δ₂/σ: every trial spends the same ε, and δ grows with Δ₂/σ): ``ta`` is the Gaussian mechanism (ε, exact
    δ of σ_std); ``input`` records each client's local release (Δ₂, σ_std) and draws the sum's N(0, Nσ_std²)
    directly; ``ddp`` runs the DCA over all trials at once (``DCA.run_trials``: its clients draw
    N(0, σ_std²/(N − T − 1)) each; ``shares=False``: without the secret shares, the same totals bit for bit) and
    records the distributed Gaussian map of Thm 1 with the T colluders it allows.
    A classic calibration at ε ≥ 1 keeps its warning (``sigma_std``) and the ledger shows its true δ.
    """
    ledger = as_ledger(ledger)
    N, p = Z.shape[-2:]
    sens = np.asarray(sensitivity, dtype=float)
    if sens.ndim == 0:
        sens = float(sens)
        s: float | np.ndarray = sigma_std(sens, epsilon, delta, calibration)
    else:                                      # per trial: one calibration per distinct sensitivity
        u, inv = _distinct(sens)
        s = np.array([sigma_std(float(v), epsilon, delta, calibration) for v in u])[inv.reshape(-1)]
    total = Z.sum(axis=-2) if total is None else total   # Σ_i Z_i (the caller's, when it has it)
    per_trial = Z.ndim == 3
    if setting == "ta":
        if not per_trial:
            return gaussian(total, s, ledger, size=trials, sensitivity=sens, epsilon=epsilon, delta=delta,
                            calibration=calibration, label=label), s
        noise = gaussian(np.zeros(p), s, ledger, size=trials, sensitivity=sens, epsilon=epsilon, delta=delta,
                         calibration=calibration, label=label)
        return noise + total, s
    if setting == "input":
        out = gaussian(np.zeros(p) if per_trial else total, s * math.sqrt(N), ledger.noise, size=trials)
        ledger.record(gaussian_spend(sens, s, epsilon, delta=delta, calibration=calibration,
                                     label=f"{label}: each client's message (local DP)"))
        return (out + total if per_trial else out), s
    if setting == "ddp":
        check_clients(N, n_faulty)
        proto = DCA(n_compute=n_compute, frac_bits=frac_bits, n_faulty=n_faulty,
                    mode="secure" if ledger.secure else "seeded")
        sig = s / math.sqrt(N - n_faulty - 1)
        out = proto.run_trials(Z, sig, ledger.noise, trials, value_bound=value_bound, shares=shares)
        w = int(np.argmax(np.broadcast_to(sens / sig, (trials,)))) if per_trial else 0   # the worst trial
        ledger.record(distributed_gaussian_spend(float(np.broadcast_to(sens, (trials,))[w]),
                                                 float(np.broadcast_to(sig, (trials,))[w]), N, 0, n_faulty,
                                                 epsilon, delta=delta, calibration=calibration,
                                                 label=f"{label} (DCA)"))
        return out, s
    raise ValueError(f"unknown setting {setting!r}")


def _distinct(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, axis=0, return_inverse=True)`` (the distinct entries, or rows of a 2-D array, and where
    each came from); one entry is its own answer (most cells release one trial: numpy's unique costs ~0.1 ms)."""
    if len(values) == 1:
        return values, np.zeros(1, dtype=np.intp)
    return np.unique(values, axis=0, return_inverse=True)


def _noise_std_total(s: float, N: int, setting: str, n_faulty: int) -> float:
    if setting == "ta":
        return s
    if setting == "input":
        return s * math.sqrt(N)
    return s * math.sqrt(noise_factor(N, n_faulty))


def omega_grid(omega_max: float = 2.1, points: int = 20) -> np.ndarray:
    """The ω grid of the threshold search: ``points`` values from 0.1 to ``omega_max`` (the paper's text: 20 points
    up to 2.1, ``OMEGA_GRID``; the authors' code: 0.1, 0.2, …, 2.0)."""
    return np.linspace(0.1, float(omega_max), int(points))


AUX_DATA = ("gaussian", "row_normalised")
IN_SAMPLE_EVAL = 1000     # rows scored by the in-sample search (the first of the fitted rows; see choose_thresholds)
AUX_SCORES = ("holdout", "in_sample")


def search_sensitivity(bx: np.ndarray, by: np.ndarray, noise_power: int = 2) -> np.ndarray:
    """Δ₂ of eq. (18) for every (ω_x, ω_y) cell of the search: ``bx`` (Gx, R, d) feature thresholds, ``by`` (Gy, R)
    target thresholds → (Gx, Gy, R).  ``noise_power=2``: eq. (18) itself (∝ b²).  ``noise_power=4``: the authors'
    code, eq. (18) with every threshold b replaced by b² (noise ∝ b⁴; not a sensitivity — it only steers the
    public search)."""
    c2 = bx**2 if noise_power == 2 else bx**4                                 # (Gx, R, d)
    cy2 = by**2 if noise_power == 2 else by**4                                # (Gy, R)
    s1 = c2.sum(-1)
    s2 = (c2**2).sum(-1)
    return np.sqrt(s2[:, None] + 2.0 * (s1**2 - s2)[:, None] + 4.0 * s1[:, None] * cy2[None])


#: the modules the threshold search computes with (relative to ``dpexp``): their digest keys its disk cache
THRESHOLD_CODE = ("families/dca/algorithms/dlr.py", "families/dca/protocol/noise.py", "models/bayes_lr.py",
                  "privacy/mechanisms.py", "privacy/noise.py", "rng.py")


def choose_thresholds(n: int, d: int, epsilon: float, delta: float, rng: np.random.Generator, calibration: str,
                      setting: str = "ta", n_faulty: int = 0, grid: np.ndarray = OMEGA_GRID, repeats: int = 10,
                      n_test: int | None = None, lam: float = 1.0, lam0: float = 1.0,
                      solver: str = "direct", noise_draws: int = 1, aux_data: str = "gaussian",
                      score: str = "holdout", noise_power: int = 2) -> tuple[float, float]:
    """(ω_x, ω_y) minimising the mean MAE on auxiliary data from eqs. (4)–(6) (see module docstring).

    Vectorised over the whole grid and all repeats: XX for each ω_x, Xy for each (ω_x, ω_y), one batched solve per
    ω_x.  The Gaussian σ is linear in Δ₂, so σ(Δ) = Δ · σ(1) needs one calibration.  Defaults: ours (the paper's
    text).  The authors' code (paper settings) differs in: ``repeats=20, noise_draws=20`` (20 data sets × 20 noise
    draws), ``aux_data="row_normalised"`` (x centred, rows scaled to unit L2 norm, y from those rows, centred —
    ``dpexp.models.bayes_lr.sample_preprocessed``), ``score="in_sample"`` (MAE of the fit's predictions on its
    own auxiliary rows against the unclipped y; scored on the first ``IN_SAMPLE_EVAL`` = 1000 of them when N is
    larger — ours, for speed), the grid 0.1…2.0, and ``noise_power=4``: the simulated noise std
    scales with the thresholds to the 4th power instead of the 2nd.  The statistics are products of two bounded
    values, so their sensitivity (eq. (18)) and the noise std grow as b²; ``noise_power=4`` evaluates eq. (18) with
    every threshold b replaced by b² (noise ∝ b⁴).  None of these options touches private data.
    """
    if aux_data not in AUX_DATA or score not in AUX_SCORES or noise_power not in (2, 4):
        raise UserError(f"aux search: aux_data in {AUX_DATA}, score in {AUX_SCORES}, noise_power in (2, 4); got "
                        f"{aux_data!r}, {score!r}, {noise_power!r}")
    n_test = int(n_test or max(100, min(n, 1000))) if score == "holdout" else 0
    G, R, K = len(grid), repeats, int(noise_draws)
    if aux_data == "gaussian":
        X, y = sample_data(R, n + n_test, d, rng, lam, lam0)   # eqs. (4)-(6), the same draw as GDSC's tuning
    else:
        from dpexp.models.bayes_lr import sample_preprocessed

        X, y = sample_preprocessed(R, n + n_test, d, rng)     # like the real (row-normalised) data
    Xtr, ytr = X[:, :n], y[:, :n]
    # in-sample: the fitted rows, unclipped; the first IN_SAMPLE_EVAL of them (i.i.d. rows: an unbiased estimate of
    # the in-sample MAE) so that N = 3000 costs what N = 1000 does
    Xev, yev = (X[:, n:], y[:, n:]) if score == "holdout" else (Xtr[:, :IN_SAMPLE_EVAL], ytr[:, :IN_SAMPLE_EVAL])
    sx = Xtr.std(axis=1)                       # (R, d)
    sy = ytr.std(axis=1)                       # (R,)
    bx = grid[:, None, None] * sx[None]        # (G, R, d)
    by = grid[:, None] * sy[None]              # (G, R)
    yc = np.clip(ytr[None], -by[:, :, None], by[:, :, None])                  # (Gy, R, n)
    ycT = np.ascontiguousarray(yc.transpose(1, 2, 0))                          # (R, n, Gy)
    XX = np.empty((G, R, d, d))
    Xy = np.empty((G, G, R, d))
    for g in range(G):                                                         # one ω_x at a time: cache-sized
        XcT = np.clip(Xtr, -bx[g][:, None, :], bx[g][:, None, :]).transpose(0, 2, 1)      # (R, d, n)
        XX[g] = XcT @ XcT.transpose(0, 2, 1)
        Xy[g] = (XcT @ ycT).transpose(2, 0, 1)                                 # (Gy, R, d)
    sens = search_sensitivity(bx, by, noise_power)                            # (Gx, Gy, R)
    unit = _noise_std_total(sigma_std(1.0, epsilon, delta, calibration), n, setting, n_faulty)
    sd = sens * unit
    p = n_terms(d)
    noise = rng.standard_normal((G, G, R, K, p)) * sd[..., None, None]
    err = np.empty((G, G, R, K))
    XevT = np.ascontiguousarray(Xev.transpose(0, 2, 1))                       # (R, d, n_eval)
    for g in range(G):                                                         # one ω_x at a time: bounded memory
        nXX, nXy = terms_to_stats(noise[g], d)                                 # (Gy, R, K, d, d), (Gy, R, K, d)
        mu, _ = fit_predict(XX[g][None, :, None] + nXX, Xy[g][:, :, None] + nXy, np.zeros((0, d)), lam, lam0,
                            solver)                                            # (Gy, R, K, d)
        pred = mu @ XevT[None]                                                 # (Gy, R, K, n_eval)
        np.subtract(pred, yev[None, :, None, :], out=pred)
        err[g] = np.abs(pred, out=pred).mean(-1)
    err = err.reshape(G, G, R * K)
    score_ = np.nanmean(np.where(np.isfinite(err), err, np.nan), axis=-1)
    score_ = np.where(np.isfinite(score_), score_, np.inf)
    gx, gy = np.unravel_index(int(np.argmin(score_)), score_.shape)
    return float(grid[gx]), float(grid[gy])


AUX_STEPS_PER_DECADE = 32


def aux_size(n: int) -> int:
    """N rounded to a log grid with 32 steps per decade (~7.5% apart) for the auxiliary threshold search.

    The chosen thresholds vary slowly with N, and GDSC drugs have hundreds of distinct client counts: searching at
    the rounded size lets every drug with a similar N share one cached search (the search is ~70 ms; the rest of a
    cell ~2 ms).  The search uses only public quantities, so this changes no privacy guarantee.
    """
    if n < 10:
        return int(n)
    return int(round(10 ** (round(math.log10(n) * AUX_STEPS_PER_DECADE) / AUX_STEPS_PER_DECADE)))


@cache.memoize("dca.public_thresholds", maxsize=4096)
def public_thresholds(n: int, d: int, epsilon: float, delta: float, calibration: str, setting: str,
                      n_faulty: int, repeats: int, lam: float, lam0: float, solver: str = "direct",
                      noise_draws: int = 1, aux_data: str = "gaussian", score: str = "holdout",
                      noise_power: int = 2, omega_max: float = 2.1) -> tuple[float, float]:
    """``choose_thresholds`` with its auxiliary data seeded by a stable hash of its (public) arguments.

    The search uses only public quantities (N, d, ε, δ, ...), so its outcome may be shared by every cell with the
    same arguments; caching it makes large grids (GDSC: 265 drugs × repeats) affordable and keeps results
    independent of how cells are grouped.
    """
    from dpexp.rng import stream

    extra = (noise_draws, aux_data, score, noise_power, repr(float(omega_max)))
    # the stream of our default search is keyed as before the paper options existed (same thresholds as then)
    extra = () if extra == (1, "gaussian", "holdout", 2, repr(2.1)) else ("paper-options",) + extra
    names = (n, d, repr(float(epsilon)), repr(float(delta)), calibration, setting, n_faulty, repeats,
             repr(float(lam)), repr(float(lam0)), solver, *extra)

    def compute() -> tuple[float, float]:
        rng = stream(0, "dca-aux-thresholds", *names)
        return choose_thresholds(n, d, epsilon, delta, rng, calibration, setting, n_faulty,
                                 grid=omega_grid(omega_max), repeats=repeats, lam=lam, lam0=lam0, solver=solver,
                                 noise_draws=noise_draws, aux_data=aux_data, score=score, noise_power=noise_power)

    # kept on disk, shared by the processes of a run and by runs: ours costs ~35 ms and every worker would repeat
    # each of a GDSC run's hundreds of (N, epsilon) searches; the authors' (20 x 20 repeats, in-sample) seconds
    import hashlib

    # the file's name also holds the search code's digest, so a change to that code recomputes (the stream does not)
    name = hashlib.sha256(repr((names, cache.code_digest(THRESHOLD_CODE))).encode()).hexdigest()[:24]
    value, _ = cache.stored("dca_thresholds", name, lambda: dict(zip(("omega_x", "omega_y"), compute())),
                            describe=(f"DCA paper-settings threshold search (N={n}, d={d}, eps={epsilon:g})"
                                      if extra else None))
    return float(value["omega_x"]), float(value["omega_y"])


# ----------------------------------------------------------------------------------------------- algorithms
class _BoundParams(Params):
    bound_x: float | None = Field(None, gt=0)
    """assumed public bound c_x on |x_j| (default: split.meta 'bound_x')"""
    bound_y: float | None = Field(None, gt=0)
    """assumed public bound c_y on |y| (default: split.meta 'bound_y')"""
    calibration: Literal["analytic", "classic"] = "analytic"
    """Gaussian calibration: analytic (Balle & Wang 2018) or classic Eq. (1)"""
    lam: float = Field(1.0, gt=0, description="noise precision lambda (supplement §10: 1)")
    lam0: float = Field(1.0, gt=0, description="prior precision lambda0 (supplement §10: 1)")
    solver: Literal["direct", "psd_floor", "abs_eig"] = "direct"
    """posterior mean from the noisy statistics: direct solve of eq. (13) (paper text), psd_floor (negative eigenvalues
    of XX raised to 0 first) or abs_eig (flipped to their absolute values first: the authors' code, every model)"""


class _UnprojParams(_BoundParams):
    clip: bool = True
    """project the data to the assumed bounds (Alg. 2 step 1); false = the authors' code for TA/DDP/input perturbation:
    not clipped (not DP)"""
    bound_y_from_data: bool = False
    """c_y = ceil(max |y|) over the clients' targets instead of bound_y (the authors' code; not DP: a data-derived
    bound)"""


class _ProjParams(_BoundParams):
    share_std: float = Field(0.3, gt=0, lt=1, description="share of (epsilon, delta) for the std round")
    omega_x: float | None = Field(None, gt=0, description="fixed feature threshold in stds (None: auxiliary search)")
    omega_y: float | None = Field(None, gt=0, description="fixed target threshold in stds (None: auxiliary search)")
    aux_repeats: int = Field(10, ge=1)
    """auxiliary data sets of the threshold search (paper text: 10; the authors' code: 20)"""
    aux_noise_draws: int = Field(1, ge=1, description="noise draws per auxiliary data set (the authors' code: 20)")
    aux_data: Literal["gaussian", "row_normalised"] = "gaussian"
    """auxiliary x: N(0, I) (eqs. (4)-(6)) or centred with unit-norm rows like the preprocessed GDSC data (the authors'
    code)"""
    aux_score: Literal["holdout", "in_sample"] = "holdout"
    """MAE on held-out auxiliary rows (ours) or on the fitted rows vs the unclipped y (the authors' code)"""
    aux_noise_power: Literal[2, 4] = 2
    """search noise std grows as threshold^2 (eq. (18), ours) or threshold^4 (the authors' code)"""
    aux_budget: Literal["remaining", "full"] = "remaining"
    """noise simulated in the search at the statistics round's (1 - share_std) budget (ours) or at the full (epsilon,
    delta) (the authors' code)"""
    aux_n: int | None = Field(None, ge=3)
    """auxiliary data size (None: the clients' N rounded by aux_size; the authors' GDSC code: 400)"""
    omega_max: float = Field(2.1, gt=0.1)
    """largest omega of the 20-point grid from 0.1 (paper text: 2.1; the authors' code: 2.0)"""
    std_sensitivity: Literal["ours", "paper"] = "ours"
    """std round sensitivity: sqrt(sum c_j^4 + c_y^4) (ours, right) or sqrt(d R^2 + c_y^2) (the authors' code:
    under-noised, not DP)"""
    std_r: float = Field(7.5, gt=0)
    """R of the authors' std-round sensitivity sqrt(d R^2 + c_y^2) (std_sensitivity: paper only)"""


class _DistParams(_BoundParams):
    n_compute: int = Field(10, ge=2, description="Compute nodes M")
    n_faulty: int = Field(0, ge=0, description="T: clients that may collude or drop out (Thm 1)")
    frac_bits: int = Field(32, ge=1, le=62, description="fixed-point fractional bits")
    secret_shares: bool = False
    """simulate Alg. 1 step 2, every client word split into M additive shares with M - 1 uniform masks (true), or
    sum the clients' encoded words directly in the ring (false, ours): the shares cancel exactly in Z/2^64 and their
    masks have streams of their own, so both give the same releases bit for bit (tested); false skips about 3/4 of
    the secure sum's arithmetic at M = 10.  The protocol with its shares, dropouts and encryption is what
    dca_timing (Table 1) runs."""


class _DistUnprojParams(_UnprojParams, _DistParams):
    pass


class _DistProjParams(_ProjParams, _DistParams):
    pass


#: what the ledger says when a paper setting (the authors' code) is chosen: one line each
NOT_DP_CLIP = "data not clipped to the assumed bounds (the authors' code): sensitivity not enforced"
NOT_DP_BOUND_Y = "c_y = ceil(max |y|) of the clients' targets (the authors' code): a data-derived bound, no budget"
NOT_DP_STD = ("std round under-noised (the authors' code): sensitivity sqrt(d R^2 + c_y^2), but the squares range "
              "to R^2, so sqrt(sum c_j^4 + c_y^4) is needed")


def _split_terms(split: Split, Xc: np.ndarray, yc: np.ndarray, key: tuple) -> tuple[np.ndarray, np.ndarray]:
    """The clients' unique terms (N, p) of ``Xc, yc`` (the split's private rows as clipped, ``key`` = (c_x, c_y,
    clipped)) and their sum.  The unprojected settings (ta, ddp, input perturbation) release the same terms at every ε
    of a cell size, and the runner hands them one ``Split`` object: a split whose private rows are read-only keeps
    them (like ``Split.nonfinite``'s answer), each (c_x, c_y, clip) once.  Computed from the rows only: nothing is
    drawn, so the releases are the same with or without the memo."""
    frozen = all(isinstance(a, np.ndarray) and not a.flags.writeable for a in (split.X_private, split.y_private))
    memo = split.__dict__.setdefault("_dca_terms", {}) if frozen else {}
    got = memo.get(key)
    if got is None:
        Z = unique_terms(Xc, yc)
        got = memo[key] = (Z, Z.sum(axis=-2))
    return got


def _bounds(params: Params, split: Split, need_y: bool = True) -> tuple[float, float]:
    out = []
    for key in ("bound_x", "bound_y"):
        v = getattr(params, key, None)
        if key == "bound_y" and not need_y:
            out.append(float("nan"))
            continue
        if v is None:
            v = split.meta.get(key)
        if v is None or not (float(v) > 0):
            raise UserError(f"params.{key} must be given (> 0): the dataset declares no public {key} "
                            f"(split.meta) and none was set, got {v!r}")
        out.append(float(v))
    return out[0], out[1]


class _DLRBase(BatchedAlgorithm):
    family = "dca"
    neighbouring = "replace-one"
    requires_delta = True   # Gaussian mechanism: a config with delta = 0 is rejected before any work
    guarantee_text = ("(ε, δ)-DP, replace-one (exact δ of the σ drawn; calibration: classic at ε ≥ 1 shows its true "
                      "δ); clip: false → not DP (data not clipped to the assumed bounds, the authors' code); "
                      "bound_y_from_data: true → not DP (c_y read from the clients, the authors' code)")
    setting = "ta"
    project = False

    def run_many(self, splits: list[Split], epsilon: float, delta: float, ledgers: list, trials: int = 1
                 ) -> list[Output | Exception]:
        """Every split's releases (its own ledger and noise stream, in split order: a split's draws do not depend
        on the others), then one batched posterior solve and prediction over all splits × trials (``fit_predict``
        on the stacked statistics; splits with test sets of another size in a batch of their own).  A split that
        fails returns its exception in its place."""
        released: list = []
        for split, ledger in zip(splits, ledgers):
            try:
                released.append(self._release(split, epsilon, delta, as_ledger(ledger), trials))
            except Exception as exc:  # recorded per cell
                released.append(exc)
        ok = [i for i, r in enumerate(released) if not isinstance(r, Exception)]
        groups: dict[tuple[int, ...], list[int]] = {}
        for i in ok:
            groups.setdefault(np.shape(splits[i].X_test), []).append(i)
        out: list[Output | Exception] = list(released)
        d_p = self.params
        for idx in groups.values():
            XX = np.stack([released[i][0] for i in idx])
            Xy = np.stack([released[i][1] for i in idx])
            Xt = np.stack([np.asarray(splits[i].X_test, float) for i in idx])
            mu = fit_predict(XX, Xy, np.zeros((0, XX.shape[-1])), d_p.lam, d_p.lam0, d_p.solver)[0]
            pred = mu @ np.swapaxes(Xt, -1, -2)                                  # (splits, trials, n_test)
            pred = np.where(np.all(np.isfinite(pred), axis=-1, keepdims=True), pred, np.nan)
            for j, i in enumerate(idx):
                _, _, extras, ledger = released[i]
                out[i] = Output(predictions=pred[j], extras=extras, guarantee=ledger.guarantee())
        return out

    def _release(self, split: Split, epsilon: float, delta: float, ledger, trials: int):
        """The split's DP statistics (XX (trials, d, d), Xy (trials, d)), its extras and its ledger: the module
        docstring's rounds, drawn through ``ledger``."""
        p = self.params
        X, y = np.asarray(split.X_private, float), np.asarray(split.y_private, float)
        N, d = X.shape
        if N < 3:
            raise UserError(f"{self.name} needs at least 3 clients (private rows), got {N}")
        from_data = getattr(p, "bound_y_from_data", False)
        cx, cy = _bounds(p, split, need_y=not from_data)
        if from_data:                                              # the authors' code: read from the clients
            ledger.not_dp(NOT_DP_BOUND_Y)
            cy = float(max(math.ceil(float(np.max(np.abs(y)))), 1))
        if getattr(p, "clip", True):
            Xc, yc = np.clip(X, -cx, cx), np.clip(y, -cy, cy)      # Alg. 2 step 1
        else:
            ledger.not_dp(NOT_DP_CLIP)
            Xc, yc = X, y
        cxv = np.full(d, cx)
        kw = {}
        if self.setting == "ddp":
            kw = dict(n_compute=p.n_compute, n_faulty=p.n_faulty, frac_bits=p.frac_bits, shares=p.secret_shares)
        extras: dict[str, float] = {"calibration_analytic": float(p.calibration == "analytic")}
        if p.calibration == "classic" and epsilon >= 1:     # warned once per cell, not once per round
            warn_calibration(f"{self.name}: classic Gaussian calibration (Eq. (1)) with epsilon >= 1 is not proven "
                             "(epsilon, delta)-DP; each row's privacy_note gives the true delta of the sigma drawn")
        with warnings.catch_warnings():
            if p.calibration == "classic":
                warnings.simplefilter("ignore", PrivacyCalibrationWarning)
            if self.project:
                e1, d1 = p.share_std * epsilon, p.share_std * delta
                e2, d2 = epsilon - e1, delta - d1
                Q = np.concatenate([Xc**2, yc[:, None] ** 2], axis=1)             # step 2 query
                if p.std_sensitivity == "paper":
                    ledger.not_dp(NOT_DP_STD)
                    sens_sq = sq_sensitivity_paper(d, p.std_r, cy)
                else:
                    sens_sq = sq_sensitivity(cxv, cy)
                sq, _ = release_sum(Q, sens_sq, e1, d1, self.setting, ledger, trials, p.calibration,
                                    value_bound=float(max(cx, cy)) ** 2, label="std round", **kw)
                std = np.where(sq > 0, np.sqrt(np.maximum(sq, 0) / N), STD_FLOOR)   # (trials, d+1)
                if p.omega_x is None or p.omega_y is None:
                    es, ds = (epsilon, delta) if p.aux_budget == "full" else (e2, d2)
                    n_aux = p.aux_n if p.aux_n is not None else aux_size(N)
                    wx, wy = public_thresholds(n_aux, d, es, ds, p.calibration, self.setting,
                                               getattr(p, "n_faulty", 0), p.aux_repeats, p.lam, p.lam0, p.solver,
                                               p.aux_noise_draws, p.aux_data, p.aux_score, p.aux_noise_power,
                                               p.omega_max)
                    wx = p.omega_x or wx
                    wy = p.omega_y or wy
                else:
                    wx, wy = p.omega_x, p.omega_y
                extras.update(omega_x=wx, omega_y=wy)
                # step 4 for every trial at once: each trial's data clipped to its own bounds (trials, N, p), one
                # sensitivity per trial, one release (recorded at the worst trial; ``release_sum``)
                bx = np.minimum(cxv, wx * std[:, :d])                                 # (trials, d)
                by = np.minimum(cy, wy * std[:, d])                                   # (trials,)
                Z = unique_terms(np.clip(Xc[None], -bx[:, None, :], bx[:, None, :]),
                                 np.clip(yc[None], -by[:, None], by[:, None]))
                bounds, inv = _distinct(np.column_stack([bx, by]))
                sens = np.array([ss_sensitivity(r[:d], float(r[d])) for r in bounds])[inv.reshape(-1)]
                v, sig = release_sum(Z, sens, e2, d2, self.setting, ledger, trials, p.calibration,
                                     value_bound=np.maximum(bx.max(axis=1), by) ** 2 * 2,
                                     label="statistics round", **kw)
                sig = float(np.atleast_1d(sig)[-1])   # σ_std of the last trial (the one number recorded before)
                XX, Xy = terms_to_stats(v, d)
            else:
                Z, total = _split_terms(split, Xc, yc, (cx, cy, getattr(p, "clip", True)))
                v, sig = release_sum(Z, ss_sensitivity(cx, cy, d), epsilon, delta, self.setting, ledger, trials,
                                     p.calibration, value_bound=float(max(cx, cy)) ** 2 * 2, label="statistics",
                                     total=total, **kw)
                XX, Xy = terms_to_stats(v, d)
        extras["sigma_std"] = float(sig)
        if self.setting == "ddp":
            extras["noise_factor"] = noise_factor(N, p.n_faulty)
        return XX, Xy, extras, ledger


@register_algorithm
class NonPrivateBLR(Reference):
    """Non-private Bayesian LR (λ = λ0 = 1, supplement §10) on the unprojected data: the NP line of Figs. 2–3."""

    name = "np"
    family = "dca"
    description = "non-private Bayesian LR from exact sufficient statistics (Heikkila et al. 2017, NP)"

    class Params(Params):
        lam: float = Field(1.0, gt=0, description="noise precision lambda")
        lam0: float = Field(1.0, gt=0, description="prior precision lambda0")

    def run(self, split: Split, epsilon: float, delta: float, ledger, trials: int = 1) -> Output:
        ledger = as_ledger(ledger)
        ledger.not_dp("non-private baseline")
        X, y = np.asarray(split.X_private, float), np.asarray(split.y_private, float)
        _, pred = fit_predict(X.T @ X, X.T @ y, split.X_test, self.params.lam, self.params.lam0)
        return Output(predictions=np.repeat(pred[None], trials, axis=0), guarantee=ledger.guarantee())


@register_algorithm
class TrustedAggregatorBLR(_DLRBase):
    """Trusted-aggregator Gaussian SSP (TA): project to the assumed bounds, one release of the d(d+1)/2 + d terms
    with Δ₂ from supplement eq. (18) and the full (ε, δ).  Replace-one neighbours (see module docstring)."""

    name = "ta"
    audit = AuditPlan(design=bounded_clients, view=released_sums, delta=AUDIT_DELTA)
    description = "trusted aggregator Gaussian SSP Bayesian LR (Heikkila et al. 2017, TA)"
    Params = _UnprojParams


@register_algorithm
class TrustedAggregatorProjBLR(_DLRBase):
    """TA with projection (TA proj): Alg. 2 with the trusted aggregator adding the noise of both rounds."""

    name = "ta_proj"
    audit = AuditPlan(design=bounded_clients, view=released_sums, params=FIXED_OMEGA, delta=AUDIT_DELTA)
    description = "trusted aggregator SSP with std round + projection to omega*std (Heikkila et al. 2017, Alg. 2)"
    guarantee_text = ("(ε, δ)-DP, replace-one, both rounds composed (exact δ of the σ drawn; calibration: classic at "
                      "ε ≥ 1 shows its true δ); std_sensitivity: paper → not DP (std round under-noised, the "
                      "authors' code)")
    Params = _ProjParams
    project = True


@register_algorithm
class DistributedBLR(_DLRBase):
    """DDP: the TA release computed by the DCA protocol (Alg. 1) with per-client noise σ_std²/(N − T − 1) (Thm 1)."""

    name = "ddp"
    audit = AuditPlan(design=bounded_clients, view=released_sums, delta=AUDIT_DELTA)
    description = "distributed DP Bayesian LR via DCA secure sum (Heikkila et al. 2017, DDP)"
    guarantee_text = ("(ε, δ)-DP, replace-one, against any T clients that drop out or collude together (Thm 1, "
                      "exact δ of σ_std); clip: false → not DP (data not clipped to the assumed bounds, the authors' "
                      "code); bound_y_from_data: true → not DP (c_y read from the clients, the authors' code)")
    Params = _DistUnprojParams
    setting = "ddp"


@register_algorithm
class DistributedProjBLR(_DLRBase):
    """DDP proj: Algorithm 2 in full — two DCA rounds (std estimate, then projected sufficient statistics)."""

    name = "ddp_proj"
    audit = AuditPlan(design=bounded_clients, view=released_sums, params=FIXED_OMEGA, delta=AUDIT_DELTA)
    description = "distributed DP Bayesian LR with projection, two DCA rounds (Heikkila et al. 2017, Alg. 2)"
    guarantee_text = ("(ε, δ)-DP, replace-one, both rounds composed, against any T clients that drop out or collude "
                      "together (Thm 1); std_sensitivity: paper → not DP (std round under-noised, the authors' code)")
    Params = _DistProjParams
    setting = "ddp"
    project = True


@register_algorithm
class InputPerturbationBLR(_DLRBase):
    """Input perturbation: every client releases its own terms with N(0, σ_std²) (local (ε, δ)-DP, replace-one of
    its record, Δ₂ of eq. (18)); the aggregate noise variance N σ_std² grows with N."""

    name = "input_perturbation"
    audit = AuditPlan(design=bounded_clients_outliers, view=released_sums)
    description = "each client perturbs its own sufficient statistics; noise variance grows with N"
    Params = _UnprojParams
    setting = "input"
