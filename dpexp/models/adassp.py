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
  λ_min(M) + ‖x'‖², so Δ = B_X² (a scalar: L1 = L2); attained by x = 0 → x' = B_X e where e is the bottom
  eigenvector of M and M's other eigenvalues are ≥ B_X².
* XᵀX, released as the vector u(A) of the d(d+1)/2 unique entries of A = xxᵀ − x'x'ᵀ:

  - L2: ‖u(A)‖₂² = (‖A‖_F² + Σ_j A_jj²)/2 ≤ ‖A‖_F² = ‖x‖⁴ + ‖x'‖⁴ − 2(xᵀx')² ≤ 2B_X⁴, so Δ₂ = √2 B_X² for
    d ≥ 2 (attained by B_X e₁ → B_X e₂); for d = 1, |x² − x'²| ≤ B_X², so Δ₂ = B_X².
  - L1, exactly: for signs S = (s_jk)_{j≤k}, Σ_{j≤k} s_jk A_jk = xᵀM_S x − x'ᵀM_S x' with (M_S)_jj = s_jj,
    (M_S)_jk = (M_S)_kj = s_jk/2, and ‖u(A)‖₁ is the largest of these over S (S the signs of u(A)).  Over
    ‖x‖ ≤ B_X, xᵀMx ranges up to B_X² max(λ_max(M), 0) and x'ᵀMx' down to B_X² min(λ_min(M), 0), so
    Δ₁ = c_d B_X² with c_d = max_S [max(λ_max(M_S), 0) − min(λ_min(M_S), 0)], attained by x, x' = B_X times the
    top and bottom eigenvectors of the best S (or 0).  c_d is unchanged by negating S (M → −M swaps the two terms),
    by permuting the coordinates (PMPᵀ) and by flipping a coordinate's sign (DMD, D = diag(±1): the signs s_jk,
    k ≠ j, flip, the diagonal stays), so p ≥ ⌈d/2⌉ diagonal signs +1 first and s_1k = +1 (k > 1) lose nothing:
    (⌊d/2⌋ + 1)·2^((d−1)(d−2)/2) patterns, enumerated for d ≤ 7 (:func:`xx_l1_factor`): c_1 = 1, c_2 = √5,
    c_3 ≈ 2.872, c_4 = √13, c_5 ≈ 4.272, c_6 = 5, c_7 ≈ 5.679 (and c_8 = √41 offline), against the earlier
    declared d + 1.
  - L1, a proven bound for any d (used for d > 7, :func:`xx_l1_bound`): t = Σ_j |A_jj| ≤ Σ_j (x_j² + x'_j²) ≤
    2B_X², and Σ_j A_jj² ≥ t²/d (Cauchy–Schwarz), so by Cauchy–Schwarz over the d(d−1)/2 off-diagonal entries
    Σ_{j<k} |A_jk| ≤ √(d(d−1)/2)·√((‖A‖_F² − Σ_j A_jj²)/2) ≤ √(d(d−1)/4)·√(2B_X⁴ − t²/d); hence ‖u(A)‖₁ ≤
    B_X² max_{0≤t≤2} [t + √(d(d−1)/4)·√(2 − t²/d)] — √5 at d = 2 (exact), 6.58 at d = 8 (c_8 = 6.40), 8.00 at
    d = 10 (a pattern reaches √61 ≈ 7.81).  Also (Mirsky 1956) λ_max(M) − λ_min(M) ≤ √(2‖M‖_F² − 2 tr(M)²/d)
    with ‖M_S‖_F² = d + d(d−1)/4 and |tr M_S| ≥ d mod 2, and max(λ_max, −λ_min) ≤ (d + 1)/2 (Gershgorin) when
    both eigenvalues have one sign: 8.06 at d = 10.  The smaller of the two is used.
  - Rows in the box |x_j| ≤ B_x (coordinate clipping; B_X = √d B_x): with a_j = |x_j − x'_j|, b_j = |x_j + x'_j|
    (a_j + b_j ≤ 2B_x), |A_jj| = a_j b_j ≤ B_x² and |A_jk| ≤ (a_j b_k + a_k b_j)/2, so ‖u(A)‖₁ ≤ ½Σ_j a_j b_j +
    ½(Σa)(Σb) ≤ d(d+1)B_x²/2, attained by B_x·1 → 0: exact, and below c_d B_X² = c_d d B_x² (c_d ≥ (d+1)/2, the
    all-plus pattern), so coordinate clipping uses it.
* Xᵀy: Δ₂ = ‖xy − x'y'‖₂ ≤ 2B_X B_Y;  Δ₁ ≤ 2‖x‖₁B_Y ≤ 2√d B_X B_Y; both attained by x = B_X 1/√d, x' = −x,
  y = y' = B_Y (in the box too).

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

import functools
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


#: the largest d whose XᵀX L1 factor is computed exactly, by enumerating the sign patterns (2^15·4 matrices at d = 7,
#: about a second once per process; 2^21·5 at d = 8 would take minutes)
EXACT_XX_L1_D = 7


@functools.lru_cache(maxsize=None)
def xx_l1_factor(d: int) -> float:
    """c_d with Δ₁ = c_d B_X² the replace-one L1 sensitivity of XᵀX's d(d+1)/2 unique entries for rows in the ball
    ‖x‖₂ ≤ B_X (module docstring): exact for d ≤ ``EXACT_XX_L1_D`` (the sign-pattern enumeration, rounded up by
    1e-12 relative to cover eigvalsh's rounding), the proven bound max_{0≤t≤2} t + √(d(d−1)/4)·√(2 − t²/d) beyond.
    c_1 = 1, c_2 = √5, c_3 ≈ 2.872, c_5 ≈ 4.272, c_10 ≤ 8 (the earlier d + 1: 2, 3, 4, 6, 11)."""
    d = int(d)
    if d < 1:
        raise ValueError(f"d must be >= 1, got {d}")
    if d <= EXACT_XX_L1_D:
        return _enumerated_xx_l1(d) * (1.0 + 1e-12)
    return xx_l1_bound(d)


def xx_l1_bound(d: int) -> float:
    """A proven upper bound on c_d for any d (module docstring), the smaller of two: (a) max over t ∈ [0, 2] of
    g(t) = t + c·√(2 − t²/d), c = √(d(d−1)/4) — g is concave with its maximum at t* = √(2/(c²/d² + 1/d)), so (a)
    is g(min(t*, 2)); (b) Mirsky's max((d + 1)/2, √(2d + d(d−1)/2 − 2(d mod 2)/d)).  (a) is the smaller for every
    even d and every odd d ≥ 9; exact at d = 2 (√5); 2.8 % above c_8 = √41, 2.4 % above √61 (a pattern's value, a
    lower bound on c_10) at d = 10."""
    c2 = d * (d - 1) / 4.0
    t = min(2.0, math.sqrt(2.0 / (c2 / d**2 + 1.0 / d)))
    a = t + math.sqrt(c2 * max(2.0 - t * t / d, 0.0))
    b = max((d + 1) / 2.0, math.sqrt(2.0 * d + d * (d - 1) / 2.0 - 2.0 * (d % 2) / d))
    return min(a, b)


def _enumerated_xx_l1(d: int, chunk: int = 1 << 14) -> float:
    """max over sign patterns S of max(λ_max(M_S), 0) − min(λ_min(M_S), 0), M_jj = s_jj, M_jk = s_jk/2, with the
    symmetries of the module docstring: p ≥ ⌈d/2⌉ diagonal signs +1 first, the off-diagonal signs of row 0 all +1,
    the other (d−1)(d−2)/2 enumerated."""
    off = [(j, k) for j in range(1, d) for k in range(j + 1, d)]
    best = 0.0
    for p in range(-(-d // 2), d + 1):
        base = np.diag(np.array([1.0] * p + [-1.0] * (d - p)))
        base[0, 1:] = base[1:, 0] = 0.5
        total = 1 << len(off)
        for start in range(0, total, chunk):
            idx = np.arange(start, min(total, start + chunk))
            M = np.repeat(base[None], idx.size, axis=0)
            for b, (j, k) in enumerate(off):
                M[:, j, k] = M[:, k, j] = np.where((idx >> b) & 1, -0.5, 0.5)
            ev = np.linalg.eigvalsh(M)
            best = max(best, float((np.maximum(ev[:, -1], 0.0) - np.minimum(ev[:, 0], 0.0)).max()))
    return best


def sensitivities(d: int, B_X, B_Y, norm: str, B_box=None) -> tuple:
    """Replace-one sensitivities (λ_min, XᵀX unique entries, Xᵀy) in the L2 or L1 norm (module docstring), rows in
    the ball ‖x‖₂ ≤ B_X; ``B_box``: the rows also lie in the box |x_j| ≤ B_box (coordinate clipping, B_X = √d
    B_box), whose exact XᵀX L1 sensitivity d(d+1)B_box²/2 is then used (it is below c_d B_X² for every d)."""
    if norm == "l2":
        return B_X**2, (1.0 if d == 1 else math.sqrt(2.0)) * B_X**2, 2.0 * B_X * B_Y
    if norm == "l1":
        xx = xx_l1_factor(d) * B_X**2 if B_box is None else (d * (d + 1) / 2.0) * B_box**2
        return B_X**2, xx, 2.0 * math.sqrt(d) * B_X * B_Y
    raise ValueError(f"norm must be 'l2' or 'l1', got {norm!r}")


def calibrate(d: int, B_X, B_Y, epsilon: float, delta: float = 0.0, noise: str = "gaussian",
              split: tuple[float, float, float] = (1 / 3, 1 / 3, 1 / 3), B_box=None) -> AdaSSPNoise:
    """Noise scales of the three releases for (ε, δ) (Gaussian) or ε (Laplace), split by ``split``.  ``B_X``,
    ``B_Y`` (and ``B_box``, the coordinate bound when rows are clipped per coordinate: :func:`sensitivities`) may be
    arrays (bounds chosen per cell and trial): the sensitivities and scales are then arrays too (a scale is
    proportional to its sensitivity at fixed (ε, δ))."""
    if len(split) != 3 or min(split) <= 0 or abs(sum(split) - 1.0) > 1e-9:
        raise ValueError(f"split must be three positive shares summing to 1, got {split}")
    if np.any(np.asarray(B_X) <= 0) or np.any(np.asarray(B_Y) <= 0):
        raise ValueError(f"bounds must be > 0, got B_X={B_X}, B_Y={B_Y}")
    eps = tuple(float(p) * epsilon for p in split)
    if noise == "gaussian":
        if not 0 < delta < 1:
            raise ValueError(f"the Gaussian AdaSSP needs 0 < delta < 1, got {delta}")
        sens = sensitivities(d, B_X, B_Y, "l2", B_box)
        dl = (delta / 3.0,) * 3
        sc = [s * analytic_gaussian_sigma(1.0, e, dd) if np.ndim(s) else analytic_gaussian_sigma(s, e, dd)
              for s, e, dd in zip(sens, eps, dl)]
    elif noise == "laplace":
        sens = sensitivities(d, B_X, B_Y, "l1", B_box)
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
