"""AdaSSP: sufficient-statistics perturbation with a differentially private ridge (Wang 2018, "Revisiting
differentially private linear regression: optimal and adaptive prediction & estimation", Algorithm 2), as pure
functions of arrays.

Algorithm (bounds ‖x‖₂ ≤ B_X, |y| ≤ B_Y; ρ a failure probability, default 0.05; each of the three releases gets a
share of the budget, Wang: a third each):

1. release λ̃_min = max(λ_min(XᵀX) + N_1 − shift, 0)           (a private lower bound on the smallest eigenvalue)
2. ridge λ = max(0, s_xx · √(d log(2d²/ρ)) − λ̃_min)          (s_xx: standard deviation of one entry of N_2)
3. release XᵀX + N_2 (noise on the d(d+1)/2 unique entries, mirrored) and Xᵀy + N_3
4. θ̂ = (XᵀX + N_2 + λ I)⁻¹ (Xᵀy + N_3)

s_xx √(d log(2d²/ρ)) bounds the spectral norm of the symmetric noise matrix N_2 with probability ≥ 1 − ρ (Gaussian
case; Wang, Algorithm 2 step 3), so λ is the ridge that keeps XᵀX + N_2 + λI ⪰ λ_min-sized curvature: data with a
large smallest eigenvalue get no ridge ("adaptive").  The shift in step 1 makes λ̃_min ≤ λ_min with high probability:
shift = σ_1 √(log(6/δ)) (Gaussian, Wang's form as we recall it) or b_1 log(1/ρ) (Laplace: P(N_1 > shift) = ρ/2).
The shift and the ridge affect accuracy only, never the privacy guarantee.

Neighbouring relation: replace-one (bounded DP, as rplr; Honkela et al. 2018, Methods 4.2).  Sensitivities with
‖x‖₂ ≤ B_X, |y| ≤ B_Y (x, y the replaced row, x', y' the new one):

* λ_min(XᵀX): XᵀX' = XᵀX − xxᵀ + x'x'ᵀ and by Weyl's inequality λ_min(M) − ‖x‖² ≤ λ_min(M − xxᵀ + x'x'ᵀ) ≤
  λ_min(M) + ‖x'‖², so Δ = B_X² (a scalar: L1 = L2).
* XᵀX, released as the vector u of its d(d+1)/2 unique entries: L2: ‖u(xxᵀ) − u(x'x'ᵀ)‖₂ ≤ ‖xxᵀ − x'x'ᵀ‖_F and
  ‖xxᵀ − x'x'ᵀ‖_F² = ‖x‖⁴ + ‖x'‖⁴ − 2(xᵀx')² ≤ 2B_X⁴, so Δ₂ = √2 B_X² (attained by orthogonal rows of norm B_X);
  L1: ‖u(xxᵀ)‖₁ = Σ_{j≤k} |x_j x_k| = (‖x‖₁² + ‖x‖₂²)/2 ≤ (d + 1)B_X²/2, so Δ₁ = (d + 1)B_X².
* Xᵀy: Δ₂ = ‖xy − x'y'‖₂ ≤ 2B_X B_Y;  Δ₁ ≤ 2‖x‖₁B_Y ≤ 2√d B_X B_Y.

Noise (``noise=``):

* ``"gaussian"`` (Wang's mechanism): each release is the Gaussian mechanism calibrated by the *analytic* Gaussian
  mechanism (Balle & Wang 2018; ``dpexp.privacy.mechanisms.analytic_gaussian_sigma``) to (p_i ε, δ/3) for its L2
  sensitivity; basic composition gives (ε, δ)-DP.  Wang's Algorithm 2 uses a closed-form scale (as we recall it,
  √(log(6/δ))/(ε/3) · bound; not checked against the paper's text, which we did not have); we use the exact
  calibration instead, whose guarantee is checkable for any ε.
* ``"laplace"`` (pure ε, comparable with rplr): each release is the Laplace mechanism with its L1 sensitivity at
  p_i ε; sequential composition gives ε-DP (δ = 0).

All noise is drawn through ``dpexp.privacy.mechanisms`` from the Generator passed in.  Clipping to the bounds is the
caller's business (:func:`clip_rows` projects rows onto the ball ‖x‖ ≤ B_X and y onto [−B_Y, B_Y]; rplr's
per-coordinate clipping at B_x gives ‖x‖ ≤ √d B_x).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpexp.privacy.mechanisms import (analytic_gaussian_sigma, gaussian_rows, laplace_rows, laplace_scale,
                                     standard_laplace_rows, standard_normal_rows)


@dataclass(frozen=True)
class AdaSSPNoise:
    """Noise calibration of the three releases: ``kind`` ('gaussian' | 'laplace'); ``scale_*`` the σ (Gaussian)
    or b (Laplace) actually used for λ_min, the XᵀX entries and Xᵀy; ``eps`` the three ε shares; ``delta`` the
    three δ shares (zeros for Laplace); ``sens`` the sensitivities they were calibrated to."""

    kind: str
    scale_min: float
    scale_xx: float
    scale_xy: float
    eps: tuple[float, float, float]
    delta: tuple[float, float, float]
    sens: tuple[float, float, float]

    @property
    def entry_sd(self) -> float:
        """Standard deviation of one entry of the XᵀX noise (σ, or √2 b for Laplace)."""
        return self.scale_xx if self.kind == "gaussian" else math.sqrt(2.0) * self.scale_xx

    @property
    def spent(self) -> tuple[float, float]:
        """(ε, δ) of the whole release by sequential composition of the three mechanisms."""
        return float(sum(self.eps)), float(sum(self.delta))


def sensitivities(d: int, B_X: float, B_Y: float, norm: str) -> tuple[float, float, float]:
    """Replace-one sensitivities (λ_min, XᵀX unique entries, Xᵀy) in the L2 or L1 norm (module docstring)."""
    if norm == "l2":
        return B_X**2, math.sqrt(2.0) * B_X**2, 2.0 * B_X * B_Y
    if norm == "l1":
        return B_X**2, (d + 1) * B_X**2, 2.0 * math.sqrt(d) * B_X * B_Y
    raise ValueError(f"norm must be 'l2' or 'l1', got {norm!r}")


def calibrate(d: int, B_X, B_Y, epsilon: float, delta: float = 0.0, noise: str = "gaussian",
              split: tuple[float, float, float] = (1 / 3, 1 / 3, 1 / 3)) -> AdaSSPNoise:
    """Noise scales of the three releases for (ε, δ) (Gaussian) or ε (Laplace), split by ``split``.  ``B_X``,
    ``B_Y`` may be (trials,) arrays (bounds chosen per trial): the sensitivities and scales are then arrays too
    (a scale is proportional to its sensitivity at fixed (ε, δ))."""
    if len(split) != 3 or min(split) <= 0 or abs(sum(split) - 1.0) > 1e-9:
        raise ValueError(f"split must be three positive shares summing to 1, got {split}")
    if np.any(np.asarray(B_X) <= 0) or np.any(np.asarray(B_Y) <= 0):
        raise ValueError(f"bounds must be > 0, got B_X={B_X}, B_Y={B_Y}")
    eps = tuple(float(p) * epsilon for p in split)
    if noise == "gaussian":
        if not 0 < delta < 1:
            raise ValueError(f"the Gaussian AdaSSP needs 0 < delta < 1, got {delta}")
        sens = sensitivities(d, B_X, B_Y, "l2")
        dl = (delta / 3.0,) * 3
        sc = [s * analytic_gaussian_sigma(1.0, e, dd) if np.ndim(s) else analytic_gaussian_sigma(s, e, dd)
              for s, e, dd in zip(sens, eps, dl)]
    elif noise == "laplace":
        sens = sensitivities(d, B_X, B_Y, "l1")
        dl = (0.0, 0.0, 0.0)
        sc = [s / e if np.ndim(s) else laplace_scale(s, e) for s, e in zip(sens, eps)]
    else:
        raise ValueError(f"noise must be 'gaussian' or 'laplace', got {noise!r}")
    return AdaSSPNoise(noise, sc[0], sc[1], sc[2], eps, dl, sens)  # type: ignore[arg-type]


_LABELS = ("lambda_min(X'X)", "X'X", "X'y")


def draws_per_cell(d: int, trials: int) -> int:
    """Standard draws one cell's :func:`release_rows` reads: T for λ_min, T·d(d+1)/2 for XᵀX, T·d for Xᵀy."""
    return int(trials) * (1 + d * (d + 1) // 2 + d)


def standard_rows(cal: AdaSSPNoise, sources: list, d: int, trials: int) -> np.ndarray:
    """Each cell's standard draws for :func:`release_rows` (S, ``draws_per_cell``), from its own source: Laplace(0, 1)
    or N(0, 1) after ``cal.kind`` (``privacy.mechanisms.standard_laplace_rows`` / ``standard_normal_rows``)."""
    k = draws_per_cell(d, trials)
    return standard_laplace_rows(sources, k) if cal.kind == "laplace" else standard_normal_rows(sources, k)


def release_rows(XX: np.ndarray, Xy: np.ndarray, cal: AdaSSPNoise, standard: np.ndarray, sources: list
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The three private releases (steps 1 and 3) of S cells at once, one data set each: (λ_min + N_1 (S, T),
    XᵀX + N_2 mirrored (S, T, d, d), Xᵀy + N_3 (S, T, d)); a single data set is a batch of one.  ``XX`` (S, T, d, d)
    and ``Xy`` (S, T, d) (statistics of rows clipped per trial); ``cal`` a calibration whose sensitivities and
    scales are numbers or (S, T) / (S, 1) arrays (bounds per cell and trial) and whose ε, δ shares are numbers;
    ``standard`` (S, ``draws_per_cell``) each cell's standard draws (:func:`standard_rows`: λ_min's T, then T·m for
    XᵀX, T·d for Xᵀy).  Each release goes through ``privacy.mechanisms.laplace_rows`` (``laplace``) or
    ``gaussian_rows`` (``gaussian``, analytic calibration), which records its ``Spend`` in ``sources[i]`` (a
    ``PrivacyLedger``; a Generator or noise source records nothing).  Raises ``LinAlgError`` (nothing recorded)
    when an eigenvalue computation fails."""
    XX = np.asarray(XX, dtype=float)
    XX = 0.5 * (XX + np.swapaxes(XX, -1, -2))
    S, T, d = XX.shape[0], XX.shape[1], XX.shape[-1]
    lam_min = np.linalg.eigvalsh(XX)[..., 0]
    iu = np.triu_indices(d)
    m = iu[0].size
    if standard.shape != (S, draws_per_cell(d, T)):
        raise ValueError(f"release_rows: standard draws of shape {standard.shape}, expected {(S, draws_per_cell(d, T))}")
    sens = [np.asarray(v, dtype=float).reshape(S, -1) if np.ndim(v) else np.full((S, 1), float(v)) for v in cal.sens]
    scales = [np.asarray(v, dtype=float).reshape(S, -1) if np.ndim(v) else np.full((S, 1), float(v))
              for v in (cal.scale_min, cal.scale_xx, cal.scale_xy)]
    parts = (standard[:, :T], standard[:, T:T * (1 + m)].reshape(S, T, m), standard[:, T * (1 + m):].reshape(S, T, d))
    shapes = ((S, T), (S, T, m), (S, T, d))

    def noise(i: int) -> np.ndarray:
        if cal.kind == "laplace":
            return laplace_rows(np.zeros(shapes[i]), parts[i], sens[i], cal.eps[i], sources, _LABELS[i])
        if cal.kind == "gaussian":
            return gaussian_rows(np.zeros(shapes[i]), parts[i], scales[i], sens[i], cal.eps[i], cal.delta[i],
                                 sources, calibration="analytic", label=_LABELS[i])
        raise ValueError(f"noise must be 'gaussian' or 'laplace', got {cal.kind!r}")

    lm = lam_min + noise(0)
    u = XX[..., iu[0], iu[1]] + noise(1)
    xy = np.asarray(Xy, dtype=float) + noise(2)
    M = np.zeros(u.shape[:-1] + (d, d))
    M[..., iu[0], iu[1]] = u
    M = M + np.swapaxes(np.triu(M, 1), -1, -2)
    return lm, M, xy


def private_lambda_min(lam_min_noisy: np.ndarray, cal: AdaSSPNoise, rho: float = 0.05) -> np.ndarray:
    """λ̃_min = max(noisy λ_min − shift, 0) (step 1; shift in the module docstring)."""
    if cal.kind == "gaussian":
        shift = cal.scale_min * math.sqrt(math.log(6.0 / sum(cal.delta)))
    else:
        shift = cal.scale_min * math.log(1.0 / rho)
    return np.maximum(np.asarray(lam_min_noisy, dtype=float) - shift, 0.0)


def adaptive_ridge(lam_min_tilde: np.ndarray, d: int, cal: AdaSSPNoise, rho: float = 0.05) -> np.ndarray:
    """λ = max(0, s_xx √(d log(2d²/ρ)) − λ̃_min) (step 2)."""
    if not 0 < rho < 1:
        raise ValueError(f"rho must be in (0, 1), got {rho}")
    return np.maximum(cal.entry_sd * math.sqrt(d * math.log(2.0 * d * d / rho)) - np.asarray(lam_min_tilde), 0.0)


def estimate(XX_noisy: np.ndarray, Xy_noisy: np.ndarray, ridge: np.ndarray | float) -> np.ndarray:
    """θ̂ = (XᵀX + N_2 + λI)⁻¹(Xᵀy + N_3), batched over leading axes (step 4; a singular system, possible only
    with λ = 0 and an unlucky release, falls back to the pseudo-inverse)."""
    XX = np.asarray(XX_noisy, dtype=float)
    d = XX.shape[-1]
    M = XX + np.asarray(ridge, dtype=float)[..., None, None] * np.eye(d)
    b = np.broadcast_to(np.asarray(Xy_noisy, dtype=float), M.shape[:-1])
    try:
        return np.linalg.solve(M, b[..., None])[..., 0]
    except np.linalg.LinAlgError:
        return np.einsum("...ij,...j->...i", np.linalg.pinv(M), b)


def estimate_many(XX_noisy: np.ndarray, Xy_noisy: np.ndarray, ridge: np.ndarray) -> np.ndarray:
    """:func:`estimate` of S data sets (leading axis) in one batched solve; when a system is singular, each data set
    takes :func:`estimate` on its own (its pseudo-inverse fallback), so each result is the per-set one."""
    XX = np.asarray(XX_noisy, dtype=float)
    M = XX + np.asarray(ridge, dtype=float)[..., None, None] * np.eye(XX.shape[-1])   # as estimate's
    b = np.broadcast_to(np.asarray(Xy_noisy, dtype=float), M.shape[:-1])
    try:
        return np.linalg.solve(M, b[..., None])[..., 0]
    except np.linalg.LinAlgError:
        return np.stack([estimate(a, y, r) for a, y, r in zip(XX, b, np.broadcast_to(ridge, M.shape[:-2]))])


def clip_rows(X: np.ndarray, y: np.ndarray, B_X: float, B_Y: float) -> tuple[np.ndarray, np.ndarray]:
    """Project every row onto {‖x‖₂ ≤ B_X} (rescale longer rows) and y onto [−B_Y, B_Y]."""
    X = np.asarray(X, dtype=float)
    norms = np.linalg.norm(X, axis=-1, keepdims=True)
    scale = np.minimum(1.0, B_X / np.maximum(norms, 1e-300))
    return X * scale, np.clip(np.asarray(y, dtype=float), -B_Y, B_Y)


def adassp(X: np.ndarray, y: np.ndarray, B_X: float, B_Y: float, epsilon: float, rng: np.random.Generator,
           delta: float = 0.0, noise: str = "gaussian", rho: float = 0.05,
           split: tuple[float, float, float] = (1 / 3, 1 / 3, 1 / 3), trials: int | None = None
           ) -> tuple[np.ndarray, dict[str, np.ndarray | float]]:
    """AdaSSP on rows already within the bounds (use :func:`clip_rows`): θ̂ (d,) or (trials, d), and extras
    (the ridge λ, λ̃_min, the noise scales and the (ε, δ) spent)."""
    X = np.asarray(X, dtype=float)
    if np.any(np.linalg.norm(X, axis=1) > B_X * (1 + 1e-9)) or np.any(np.abs(y) > B_Y * (1 + 1e-9)):
        raise ValueError("rows exceed the bounds B_X, B_Y: clip them first (clip_rows), otherwise the "
                         "sensitivities and the privacy guarantee do not hold")
    d = X.shape[1]
    cal = calibrate(d, B_X, B_Y, epsilon, delta, noise, split)
    T = 1 if trials is None else int(trials)
    XX = np.broadcast_to(X.T @ X, (1, T, d, d))   # a batch of one data set
    Xy = np.broadcast_to(X.T @ np.asarray(y, dtype=float), (1, T, d))
    lm, XXn, Xyn = (a[0] if trials is not None else a[0, 0]
                    for a in release_rows(XX, Xy, cal, standard_rows(cal, [rng], d, T), [rng]))
    lt = private_lambda_min(lm, cal, rho)
    lam = adaptive_ridge(lt, d, cal, rho)
    theta = estimate(XXn, Xyn, lam)
    eps_spent, delta_spent = cal.spent
    return theta, {"ridge": lam, "lambda_min_private": lt, "scale_min": cal.scale_min, "scale_xx": cal.scale_xx,
                   "scale_xy": cal.scale_xy, "epsilon_spent": eps_spent, "delta_spent": delta_spent}
