"""Known values for the paper-protocol compared methods (plr_paper, oplr_paper, fmlr_paper): each recorded
``Spend.scale`` is the formula of the module docstring (and of the paper, where it states one), and the noise the
run adds has that scale — replayed from a generator of the same seed, one draw call after another in the order of
the authors' code.  (tests/gdsc/test_batched_paths.py holds the batched path only to itself.)

* plr_paper: X'X a full d × d Laplace(2d(d+1)B_x²/ε) draw, mirrored upper triangle; X'y Laplace(4dB_xB_y/ε)
  (Honkela et al. 2018, supplementary: Δᵢⱼ ~ Laplace(0, 2d(d+1)B_x²/ε), ‖δ‖₁ ~ Gamma(d, ε/(4dB_xB_y))).
* oplr_paper: ‖noise‖ ~ Gamma(D, (12R + 8)/(λNε)), λ = √(D/(Nε)), D = d; the direction a normalised
  Uniform[−½, ½]^D vector.
* fmlr_paper: one Laplace((2D² + 4D)/ε) release of the D × D and D objective coefficients, D = d + 1."""

from __future__ import annotations

import numpy as np
import pytest

from dpexp import registry
from dpexp.families.gdsc.algorithms.compared_paper import FM_EIG_TOL, _minmax, raw_view
from dpexp.families.gdsc.algorithms.functional_mechanism import trimmed_minimiser, with_bias
from dpexp.models.minconf import oplr_minconf
from dpexp.privacy.ledger import PrivacyLedger
from dpexp.types import Split
from gdsc_bitwise import make_split

SEED = 11


def _split(n_priv: int = 30, n_pub: int = 5, d: int = 3, seed: int = 1) -> Split:
    return make_split(n_priv, n_pub, d, seed)


def _run(name: str, s: Split, eps: float, trials: int, **params):
    lg = PrivacyLedger(np.random.default_rng(SEED))
    out = registry.get("algorithm", name)(**params).run_many([s], eps, 0.0, [lg], trials)[0]
    assert not isinstance(out, Exception), out
    return out, lg.spends


@pytest.mark.parametrize("d, eps, trials, params", [(3, 2.0, 1, {}), (4, 0.5, 3, {}),
                                                    (2, 1.0, 2, {"B_x": 0.5, "B_y": 3.0})])
def test_plr_paper_scales(d, eps, trials, params):
    s = _split(d=d)
    out, spends = _run("plr_paper", s, eps, trials, **params)
    B_x, B_y = params.get("B_x", 1.0), params.get("B_y", 20.0)
    b_xx, b_xy = 2 * d * (d + 1) * B_x**2 / eps, 4 * d * B_x * B_y / eps
    assert [x.label for x in spends] == ["X'X", "X'y"]
    assert spends[0].scale == pytest.approx(b_xx, rel=1e-14) and spends[1].scale == pytest.approx(b_xy, rel=1e-14)
    # replay: U (trials, d, d) then V (trials, d) from the same seed, U's upper triangle mirrored, λ = 1
    rng = np.random.default_rng(SEED)
    U = rng.laplace(0.0, b_xx, size=(trials, d, d))
    V = rng.laplace(0.0, b_xy, size=(trials, d))
    U = np.triu(U) + np.swapaxes(np.triu(U, 1), -1, -2)
    A = s.X_public.T @ s.X_public + s.X_private.T @ s.X_private + U + np.eye(d)
    b = s.X_public.T @ s.y_public + s.X_private.T @ s.y_private + V
    w = np.linalg.solve(A, b[..., None])[..., 0]
    np.testing.assert_allclose(out.coef, w, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out.predictions, w @ s.X_test.T, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("d, n, eps, trials, R", [(3, 30, 2.0, 1, 1.0), (4, 50, 0.5, 3, 1.0), (2, 20, 1.0, 2, 2.0)])
def test_oplr_paper_scale(d, n, eps, trials, R):
    s = _split(n_priv=n, d=d, seed=2)
    out, spends = _run("oplr_paper", s, eps, trials, R=R)
    lam = np.sqrt(d / (n * eps))
    scale = (12 * R + 8) / (lam * n * eps)
    assert [x.label for x in spends] == ["w"]
    assert spends[0].scale == pytest.approx(scale, rel=1e-14)
    # replay: the fit on the private lines, then direction (trials, d) and Gamma(d, 1) norms (trials,) × scale
    # (the authors' minConf_PQN under their "projection", dpexp.models.minconf)
    w0 = oplr_minconf((s.X_private.T @ s.X_private)[None], (s.X_private.T @ s.y_private)[None], lam / 2.0, R)[0]
    rng = np.random.default_rng(SEED)
    u = rng.uniform(-0.5, 0.5, size=(trials, d))
    u /= np.linalg.norm(u, axis=-1, keepdims=True)
    r = rng.gamma(shape=d, scale=1.0, size=trials) * scale
    np.testing.assert_allclose(out.coef, w0 + u * r[:, None], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(out.coef - w0, axis=-1), r, rtol=1e-9)


@pytest.mark.parametrize("d, eps, trials", [(3, 2.0, 1), (4, 0.5, 3), (2, 1.0, 2)])
def test_fmlr_paper_scale(d, eps, trials):
    s = _split(n_priv=40, d=d, seed=3)
    out, spends = _run("fmlr_paper", s, eps, trials)
    D = d + 1
    sens = 2 * D * D + 4 * D
    b = sens / eps
    lap = [x for x in spends if x.mechanism == "laplace"]
    assert [x.label for x in lap] == ["objective"]
    assert lap[0].scale == pytest.approx(b, rel=1e-14) and lap[0].sensitivity == sens and lap[0].epsilon == eps
    # replay: min–max scaling over all the split's lines, bias column, one flat Laplace(b) draw (M's D² per trial,
    # then α's D per trial), ridge 5√2·sens/ε, eigenvalues ≤ 1e-8 dropped
    Xv, _, Xt, lo, hi, y_lo, y_hi = raw_view(s)
    Z, Zt = with_bias(_minmax(Xv, lo, hi)), with_bias(_minmax(Xt, lo, hi))
    yz = _minmax(s.y_private, y_lo, y_hi)
    flat = np.random.default_rng(SEED).laplace(0.0, b, size=trials * (D * D + D))
    M = Z.T @ Z + flat[:trials * D * D].reshape(trials, D, D)
    a = -2.0 * Z.T @ yz + flat[trials * D * D:].reshape(trials, D)
    w = trimmed_minimiser(M, a, 5.0 * np.sqrt(2.0) * sens / eps, FM_EIG_TOL)
    np.testing.assert_allclose(out.coef, w, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(out.predictions, (w @ Zt.T + 1.0) * 0.5 * (y_hi - y_lo) + y_lo, rtol=1e-9,
                               atol=1e-12)
