"""AdaSSP (Wang 2018, "Revisiting differentially private linear regression", Algorithm 2): sufficient-statistics
perturbation with a differentially private ridge — the strongest simple baseline for rplr (issue 15).

Release (``dpexp.models.adassp``, replace-one neighbours of the private rows; sensitivities derived in that module's
docstring with ‖x‖₂ ≤ B_X, |y| ≤ B_Y): a private lower bound on λ_min(XᵀX) (Δ = B_X², Weyl), XᵀX on its d(d+1)/2
unique entries (Δ₂ = √2 B_X², Δ₁ = (d + 1)B_X²) and Xᵀy (Δ₂ = 2B_XB_Y, Δ₁ = 2√d B_XB_Y), each at a third of the
statistics' budget; the ridge max(0, s_xx√(d log(2d²/ρ)) − λ̃_min) and θ̂ = (XᵀX + N + λI)⁻¹(Xᵀy + N) are
post-processing.

Noise (``noise``): ``laplace`` (default) — pure ε-DP with the L1 sensitivities, so its curve sits on the same ε axis
as rplr, narplr and the other GDSC methods (all pure ε); ``gaussian`` — Wang's mechanism, (ε, δ)-DP with the L2
sensitivities and the analytic Gaussian calibration at (ε/3, δ/3) each, which needs the cell's δ > 0 and is a
weaker guarantee than the pure-ε curves beside it.

Bounds: rplr's interface — B = ω·σ with σ_x, σ_y from ``sigma: dp`` (default: released at ``sigma_share``·ε, per
trial) or ``sigma: data`` (the paper's protocol, not DP).  ``clip: norm`` (default, Wang's bound) projects every row
onto ‖x‖₂ ≤ B_X = ω_x σ_x √d (σ_x √d is the RMS row norm, so ω_x = 1 keeps unit-norm rows as they are);
``clip: coordinate`` clips every coordinate at B_x = ω_x σ_x as rplr does (then ‖x‖₂ ≤ B_X = √d B_x).  y is clipped
at B_Y = ω_y σ_y.  The public rows, clipped the same way, are added to the released statistics exactly, and the
ridge credits their smallest eigenvalue (Weyl: λ_min(A + P) ≥ λ_min(A) + λ_min(P)).  Without private rows nothing
is released: the Gamma-prior posterior mean of the public rows (as rplr).

Defaults ``clip: norm``, ω_x = 1, ω_y = 0.5: chosen on held-out Eq. (10) data (the paper's auxiliary-data model,
d = 10, n = 100 and 500; docs/noise_aware.md §8), never on GDSC: norm clipping beat coordinate clipping at every
ω_x tried, ω_x does not matter for unit-norm rows (norm clipping only rescales them), Spearman is flat in
ω_y ∈ [0.1, 0.5] and drops beyond (0.81 at 0.5, 0.76 at 2, n = 500, ε = 2).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field

from dpexp.audit.plan import AuditPlan
from dpexp.components import Algorithm
from dpexp.families.gdsc.algorithms.rplr import SigmaParams, clip_sigmas
from dpexp.families.gdsc.audit import adassp_releases, clipped_statistics
from dpexp.families.gdsc.model import public_posterior
from dpexp.models import adassp as core
from dpexp.privacy.ledger import as_ledger
from dpexp.registry import register_algorithm
from dpexp.types import Output, Split


class _AdaSSPParams(SigmaParams):
    noise: Literal["laplace", "gaussian"] = Field(
        "laplace", description="laplace: pure epsilon-DP (L1 sensitivities; comparable with rplr); gaussian: Wang's "
                               "(epsilon, delta)-DP mechanism with the analytic calibration (needs delta > 0)")
    clip: Literal["norm", "coordinate"] = Field(
        "norm", description="project rows onto ||x|| <= omega_x sigma_x sqrt(d) (Wang) or clip every coordinate at "
                            "omega_x sigma_x (rplr)")
    omega_x: float = Field(1.0, gt=0, description="B_X = omega_x sigma_x sqrt(d) (norm) or B_x = omega_x sigma_x "
                                                  "(coordinate)")
    omega_y: float = Field(0.5, gt=0, description="B_Y = omega_y sigma_y")
    rho: float = Field(0.05, gt=0, lt=1, description="failure probability of the eigenvalue bound and the ridge")
    public: bool = Field(True, description="add the clipped public rows' statistics to the release (exact)")


@register_algorithm
class AdaSSP(Algorithm):
    """AdaSSP (Wang 2018, Alg. 2) on rplr's clipping interface: DP λ_min, adaptive ridge, perturbed XᵀX and Xᵀy
    (module docstring).  ``noise: laplace`` (default) is pure ε-DP under replace-one neighbours; ``noise: gaussian``
    (ε, δ)-DP; ``sigma: data`` (σ from the data, the paper's protocol) is not DP."""

    name = "adassp"
    family = "gdsc"
    # view: the three raw releases (and DP σ̂), not the ridge estimate that mixes them (docs/audit.md)
    audit = AuditPlan(design=clipped_statistics, view=adassp_releases, params={"omega_x": 1.0, "omega_y": 1.0})
    description = "AdaSSP (Wang 2018): perturbed sufficient statistics with a DP-chosen ridge"
    neighbouring = "replace-one"
    guarantee_text = ("pure ε-DP, replace-one (σ̂ released at sigma_share·ε, per trial); "
                      "noise: gaussian → (ε, δ)-DP (analytic Gaussian, δ/3 per release); "
                      "sigma: data → not DP (clipping σ from private rows, the paper's protocol)")
    Params = _AdaSSPParams

    def _B(self, d: int, sx, sy):
        """(row-norm bound B_X, coordinate bound B_x, B_Y) from σ_x, σ_y (floats or (trials,) arrays)."""
        p = self.params
        if p.clip == "norm":
            B_X = p.omega_x * sx * math.sqrt(d)
            return B_X, B_X, p.omega_y * sy
        B_x = p.omega_x * sx
        return B_x * math.sqrt(d), B_x, p.omega_y * sy

    def bounds(self, split: Split, epsilon: float | None = None) -> tuple[float, float]:
        """(B_x, B_y) with the data σ of ``split.meta``: a box containing every clipped row (the audit design)."""
        _, B_x, B_Y = self._B(split.d, float(split.meta["sigma_x"]), float(split.meta["sigma_y"]))
        return float(B_x), float(B_Y)

    def _clip(self, X: np.ndarray, y: np.ndarray, B_X, B_x, B_Y, trials: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows clipped per trial: X (trials, m, d), y (trials, m)."""
        bX, bx, bY = (np.broadcast_to(np.asarray(b, dtype=float), (trials,))[:, None] for b in (B_X, B_x, B_Y))
        Xt = np.broadcast_to(X, (trials,) + X.shape)
        if self.params.clip == "norm":
            norms = np.linalg.norm(Xt, axis=-1)
            Xc = Xt * np.minimum(1.0, bX / np.maximum(norms, 1e-300))[..., None]
        else:
            Xc = np.clip(Xt, -bx[..., None], bx[..., None])
        return Xc, np.clip(np.broadcast_to(y, (trials,) + y.shape), -bY, bY)

    def run(self, split: Split, epsilon: float, delta: float, ledger, trials: int = 1) -> Output:
        ledger = as_ledger(ledger)
        p = self.params
        d = split.d
        n = split.X_private.shape[0]
        if n == 0:   # nothing private to release (as rplr): the public-only Bayesian LR
            ledger.public_only()
            w = np.broadcast_to(public_posterior(split.X_public, split.y_public).mean, (trials, d))
            return Output(predictions=w @ split.X_test.T, coef=w.copy(), guarantee=ledger.guarantee())
        if p.noise == "gaussian" and not 0 < delta < 1:
            raise ValueError(f"adassp noise: gaussian needs the cell's delta in (0, 1), got {delta}")
        sx, sy = clip_sigmas(p, split, epsilon, ledger, trials)
        eps = epsilon * (1.0 - p.sigma_share) if p.sigma == "dp" else epsilon
        B_X, B_x, B_Y = self._B(d, sx, sy)
        cal = core.calibrate(d, B_X, B_Y, eps, delta if p.noise == "gaussian" else 0.0, p.noise)
        Xc, yc = self._clip(split.X_private, split.y_private, B_X, B_x, B_Y, trials)
        XtX = np.swapaxes(Xc, -1, -2) @ Xc
        Xty = np.einsum("tnd,tn->td", Xc, yc)
        lm, XXn, Xyn = core.release(XtX, Xty, cal, ledger, trials)
        lam_t = core.private_lambda_min(lm, cal, p.rho)
        if p.public and split.X_public.shape[0]:
            Pc, pc = self._clip(split.X_public, split.y_public, B_X, B_x, B_Y, trials)
            XXp = np.swapaxes(Pc, -1, -2) @ Pc
            XXn, Xyn = XXn + XXp, Xyn + np.einsum("tnd,tn->td", Pc, pc)
            lam_t = lam_t + np.linalg.eigvalsh(XXp)[..., 0]
        ridge = core.adaptive_ridge(lam_t, d, cal, p.rho)
        w = core.estimate(XXn, Xyn, ridge)
        extras = {"ridge": float(np.mean(ridge)), "lambda_min_private": float(np.mean(lam_t)),
                  "B_X": float(np.mean(B_X)), "B_Y": float(np.mean(B_Y))}
        if p.sigma == "dp":
            extras.update({"sigma_x_dp": float(np.mean(sx)), "sigma_y_dp": float(np.mean(sy))})
        return Output(predictions=w @ split.X_test.T, coef=w, extras=extras, guarantee=ledger.guarantee())
