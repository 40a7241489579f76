"""Functional-mechanism linear regression (``fmlr``): Zhang et al. 2012 (PVLDB 5(11)), as compared in Honkela et
al. 2018 (Methods 4.6).

The least-squares objective over the training rows, with a bias column z = (1, x̃) ∈ [−1, 1]^D, D = d + 1, is the
polynomial

    f(w) = Σ_i (ỹ_i − z_iᵀw)² = Σ_i ỹ_i²  −  Σ_i 2ỹ_i z_iᵀ w  +  wᵀ (Σ_i z_i z_iᵀ) w          (Zhang et al. §5.1)

with monomial coefficients α = −2Σ ỹ_i z_i (degree 1, D entries) and M = Σ z_i z_iᵀ (degree 2, one coefficient per
*ordered* pair (j, l), D² entries); the constant Σỹ² does not influence the minimiser and is not released.
x and y are scaled into [−1, 1] with public bounds: x̃ = clip(x/B_x, −1, 1), ỹ = clip(y/B_y, −1, 1).

Neighbouring relation: bounded DP, replace-one (one private row replaced).

Sensitivity (L1, replace-one; ours, tight).  Write one row's coefficients through ζ = (z, ỹ) ∈ [−1, 1]^{D+1}
with ζ_0 = 1 (the bias): M's D² entries are the products ζ_j ζ_l of the ordered pairs j, l < D, and α_j = −2ỹz_j
= −(ζ_D ζ_j + ζ_j ζ_D) is the two ordered pairs (j, D), (D, j).  So the released vector is every ordered product
ζ_j ζ_l of ζ except (D, D) (ỹ², not released), up to sign, and replacing ζ by ζ′ changes its L1 norm by at most
Σ_{j,l ≤ D} |ζ_j ζ_l − ζ′_j ζ′_l|.  With u = ζ − ζ′, v = ζ + ζ′, a = |u|, b = |v|: ζ_j ζ_l − ζ′_j ζ′_l =
½(u_j v_l + v_j u_l), so the sum is ≤ (Σ_j a_j)(Σ_l b_l).  The bias gives a_0 = 0, b_0 = 2, and a_j + b_j =
2 max(|ζ_j|, |ζ′_j|) ≤ 2 for j ≥ 1, so Σa + Σb ≤ 2 + 2D and (Σa)(Σb) ≤ ((Σa + Σb)/2)² ≤ (D + 1)²:

    Δ₁ = (D + 1)²,

attained by z = 1 (every coordinate), ỹ = 1 → z′ = (1, 0, …, 0), ỹ′ = −1: M moves by 1 in its D² − 1 entries
other than (0, 0), α_0 by 4 and α_j (j ≥ 1) by 2, in total D² − 1 + 4 + 2(D − 1) = (D + 1)²
(tests/gdsc/test_functional_mechanism.py, brute force).  Zhang et al. (2012, Lemma 1 and §5.1) bound each row's
contribution by D² + 2D and double it, Δ = 2D² + 4D (≈ 2× ours); the paper protocol's ``fmlr_paper`` keeps that
(``fm_sensitivity_paper``).  Adding Lap(Δ₁/ε) to each of the D² + D coefficients of the *private* rows is ε-DP
(Laplace mechanism); the exact coefficients of the public rows are then added.

Post-processing (no privacy cost, Zhang et al. §5.2–5.3): symmetrise M̃ ← (M̃ + M̃ᵀ)/2, regularise M̃ ← M̃ + reg·I,
eigendecompose M̃ = QΛQᵀ and drop the directions with Λ_k ≤ 0 (they make the noisy objective unbounded below);
minimise over the remaining span: w = −½ Q₊ Λ₊⁻¹ Q₊ᵀ α̃.  Prediction ŷ = B_y · z_testᵀ w.  With ``n_private = 0`` no
private coefficient is released and no noise is added.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from dpexp.components import Params
from dpexp.errors import UserError
from dpexp.families.gdsc.batching import Rows, each, record_each, repeat_trials, solve_stacked
from dpexp.families.gdsc.blocks import Blocks
from dpexp.families.gdsc.unit_box import UnitBoxLR, scale_unit, unit_box_rows, unit_box_y
from dpexp.privacy.mechanisms import laplace_rows, standard_laplace_rows
from dpexp.registry import register_algorithm
from dpexp.types import Output, Split


def fm_sensitivity(D: int) -> float:
    """The tight L1 sensitivity (D + 1)² of the (D² quadratic + D linear) coefficients, D = columns incl. bias
    (module docstring)."""
    return float((D + 1) * (D + 1))


def fm_sensitivity_paper(D: int) -> float:
    """Zhang et al.'s (2012, §5.1) L1 sensitivity 2D² + 4D (the paper protocol's ``fmlr_paper``)."""
    return 2.0 * D * D + 4.0 * D


def objective_noise_rows(D: int, trials: int, sensitivity: float, epsilon: float, ledgers: list
                         ) -> tuple[np.ndarray, np.ndarray]:
    """The Laplace release of the objective's coefficients (M, α), D × D and D, for ``trials`` runs of S cells: one
    mechanism per cell (one spend: Δ₁ = ``sensitivity``, b = Δ₁/ε), each cell's trials·(D² + D) draws from its own
    ledger in one generator call (standard Laplace draws, ``standard_laplace_rows``), scaled and recorded by
    ``laplace_rows``: M's trials·D² first, then α's (tests/gdsc/test_batched_paths.py holds it to a plain
    per-cell reference).  Returns the noise of (S, trials, D, D) and (S, trials, D)."""
    S, K = len(ledgers), trials * (D * D + D)
    if S == 0:
        return np.zeros((0, trials, D, D)), np.zeros((0, trials, D))
    std = standard_laplace_rows(ledgers, K)[:, None]
    flat = laplace_rows(np.zeros((S, 1, K)), std, np.full(S, float(sensitivity)), float(epsilon), ledgers,
                        label="objective")[:, 0]
    k = trials * D * D
    return flat[:, :k].reshape(S, trials, D, D), flat[:, k:].reshape(S, trials, D)


def with_bias(X: np.ndarray) -> np.ndarray:
    return np.concatenate([np.ones((X.shape[0], 1)), X], axis=1)


def trimmed_minimiser(M: np.ndarray, alpha: np.ndarray, reg: float, tol: float = 0.0) -> np.ndarray:
    """argmin of wᵀMw + αᵀw over the span of M's eigen-directions with eigenvalue > ``tol`` after symmetrising and
    adding reg·I; batched over leading axes: M (…,D,D), α (…,D) → (…,D)."""
    Ms = 0.5 * (M + np.swapaxes(M, -1, -2)) + reg * np.eye(M.shape[-1])
    ev, Q = np.linalg.eigh(Ms)
    pos = ev > tol
    inv = np.where(pos, 1.0 / np.where(pos, ev, 1.0), 0.0)
    c = np.einsum("...ji,...j->...i", Q, alpha)
    return -0.5 * np.einsum("...ij,...j->...i", Q, inv * c)


class _FMParams(Params):
    reg: float = Field(1.0, ge=0, description="ridge term added to the noisy quadratic (Zhang et al. 5.2)")
    bound_x: float | None = Field(None, gt=0, description="public bound B_x on |x_j| (None: meta['x_bound'])")
    bound_y: float = Field(..., gt=0, description="public bound B_y on |y| (declared; larger values are clipped)")


@register_algorithm
class FunctionalMechanismLR(UnitBoxLR):
    """Functional mechanism LR (Zhang et al. 2012): Laplace noise of scale (D + 1)²/ε (the tight sensitivity) on the
    quadratic objective's coefficients (D = d + 1 with bias), symmetrised, regularised, non-positive eigen-directions removed.

    ε-DP under replace-one neighbours; sensitivity derivation in the module docstring.
    """

    name = "fmlr"
    description = "functional mechanism LR: Laplace-perturbed objective coefficients (Zhang et al. 2012)"
    guarantee_text = "pure ε-DP, replace-one"
    Params = _FMParams

    def noise_scale(self, d: int, epsilon: float) -> float:
        """Laplace scale b = (D + 1)²/ε with D = d + 1."""
        return fm_sensitivity(d + 1) / epsilon

    def _run_group(self, d: int, B_x: float, B_y: float, ks: list[int], splits: list[Split], epsilon: float,
                   ledgers: list, trials: int, out: list) -> None:
        """The splits ``ks``, all of dimension d and bounds (B_x, B_y): ``out[k]`` an ``Output`` or the exception."""
        D = d + 1
        ks = each(ks, out, lambda k: _check_rows(splits[k], d))
        if not ks:
            return
        test = Rows([splits[k].X_test for k in ks])
        Zt = dict(zip(ks, test.split(with_bias(scale_unit(test.stack, None, B_x, B_y, l2_ball=False)[0]))))
        Ms, As = self._objectives(ks, splits, B_x, B_y)
        priv = [j for j, k in enumerate(ks) if splits[k].X_private.shape[0] > 0]
        record_each((ledgers[k] for k in ks if splits[k].X_private.shape[0] == 0), lambda lg: lg.public_only())
        Ms = repeat_trials(Ms, trials, axis=1)   # (splits, trials, D, D), a new array
        As = repeat_trials(As, trials, axis=1)
        if priv:
            # the private rows' M and α released together under one budget: one Laplace mechanism per split,
            # through its ledger (b = Δ₁/ε = noise_scale(d, ε))
            NM, NA = objective_noise_rows(D, trials, fm_sensitivity(D), epsilon, [ledgers[ks[j]] for j in priv])
            if len(priv) == len(ks):   # every split (the usual case): in place, the same sums without a gather
                Ms += NM
                As += NA
            else:
                Ms[priv] += NM
                As[priv] += NA
        W = solve_stacked(trimmed_minimiser, Ms, As, self.params.reg)
        for k, w in zip(ks, W):
            out[k] = w if isinstance(w, Exception) else Output(
                predictions=B_y * (w @ Zt[k].T), coef=w[:, 1:], guarantee=ledgers[k].guarantee())

    def _objectives(self, ks: list[int], splits: list[Split], B_x: float, B_y: float
                    ) -> tuple[np.ndarray, np.ndarray]:
        """The exact coefficients M = ZᵀZ (S, D, D) and α = −2Zᵀỹ (S, D) of every split's private plus public
        rows, scaled into the unit box with the bias column: each kind of rows concatenated once in blocks of
        equal n and their products stacked (``blocks.Blocks``)."""
        parts = []
        for rows in ("private", "public"):
            b = Blocks([getattr(splits[k], f"X_{rows}").shape[0] for k in ks])
            Z = unit_box_rows(b.cat([getattr(splits[k], f"X_{rows}") for k in ks]), B_x, bias=True)
            y = unit_box_y(b.cat([getattr(splits[k], f"y_{rows}") for k in ks]), B_y)
            parts.append(b.gram(Z, y))
        (Mv, av), (Mu, au) = parts
        return Mv + Mu, -2.0 * (av + au)


def _check_rows(s: Split, d: int) -> None:
    """A split's private and public rows are (n, d) with one response each: else it fails with this message."""
    for X, y, what in ((s.X_private, s.y_private, "private"), (s.X_public, s.y_public, "public")):
        if X.ndim != 2 or X.shape[1] != d or y.shape != X.shape[:1]:
            raise UserError(f"fmlr: the {what} rows X {X.shape} and y {y.shape} do not match (d = {d})")
