"""oplr / fmlr: the noise scale actually drawn, the exact constrained fit, and the public-only / clipped baselines.

Statistical checks use fixed seeds; tolerances are set at >= 5 standard errors (failure probability < 1e-6 for an
unseeded rerun).
"""

import numpy as np
import pytest

from dpexp.families.gdsc.algorithms.baselines import PublicOnlyLR, RobustLR
from dpexp.families.gdsc.algorithms.functional_mechanism import FunctionalMechanismLR, fm_sensitivity, trimmed_minimiser
from dpexp.families.gdsc.algorithms.output_perturbation import OutputPerturbationLR, ball_constrained_ridge
from dpexp.types import Split


def make_split(n_priv=200, n_pub=10, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_priv + n_pub + 30, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = X @ rng.normal(size=d) + 0.3 * rng.normal(size=X.shape[0])
    v, u, t = slice(0, n_priv), slice(n_priv, n_priv + n_pub), slice(n_priv + n_pub, None)
    return Split(X[v], y[v], X[u], y[u], X[t], y[t], {"x_bound": 1.0, "sigma_x": float(X.std()),
                                                     "sigma_y": float(y.std())})


def test_ball_constrained_ridge_matches_kkt():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(50, 5, 5))
    A = A @ np.swapaxes(A, 1, 2) / 5
    b = rng.normal(size=(50, 5)) * np.linspace(0.1, 5, 50)[:, None]
    lam = np.full(50, 0.1)
    w = ball_constrained_ridge(A, b, lam, R=1.0)
    free = np.linalg.solve(A + 0.1 * np.eye(5), b[..., None])[..., 0]
    inside = np.linalg.norm(free, axis=1) <= 1
    np.testing.assert_allclose(w[inside], free[inside], atol=1e-10)
    # outside: on the sphere and w = (A + (lam + mu) I)^-1 b for some mu >= 0 (KKT): check via mu estimate
    assert np.all(np.abs(np.linalg.norm(w[~inside], axis=1) - 1) < 1e-8)
    for Ak, bk, wk in zip(A[~inside], b[~inside], w[~inside]):
        r = bk - (Ak + 0.1 * np.eye(5)) @ wk        # = mu * w
        mu = r @ wk
        assert mu > 0 and np.allclose(r, mu * wk, atol=1e-7)


def test_oplr_noise_norm_is_gamma_d_scale():
    """||w_priv - w_hat|| ~ Gamma(d, 2(R+1)/(lambda n eps)): check mean and variance over 20000 trials."""
    sp = make_split(n_priv=300, d=4)
    alg = OutputPerturbationLR(bound_y=3.0)
    eps = 1.5
    trials = 20000
    out = alg.run(sp, eps, 0.0, np.random.default_rng(5), trials=trials)
    n, d = 310, 4
    lam = np.sqrt(d / (n * eps))
    scale = 2 * (1.0 + 1) / (lam * n * eps)
    assert alg.noise_scale(n, d, eps) == pytest.approx((lam, scale))
    w_hat = np.median(out.coef, axis=0)     # noise is symmetric: the median recovers the fit
    norms = np.linalg.norm(out.coef - w_hat, axis=1)
    se_mean = np.sqrt(d) * scale / np.sqrt(trials)
    assert abs(norms.mean() - d * scale) < 6 * se_mean + 0.02 * scale
    assert norms.var() == pytest.approx(d * scale**2, rel=0.08)
    # directions are uniform: the mean unit vector is ~0 (sd 1/sqrt(d * trials) per coordinate)
    u = (out.coef - w_hat) / norms[:, None]
    assert np.all(np.abs(u.mean(axis=0)) < 6 / np.sqrt(d * trials))


def test_oplr_no_private_rows_no_noise_and_predictions_scale_back():
    sp = make_split(n_priv=0, n_pub=10)
    out = OutputPerturbationLR(bound_y=3.0).run(sp, 1.0, 0.0, np.random.default_rng(0), trials=3)
    assert np.allclose(out.coef, out.coef[0])
    np.testing.assert_allclose(out.predictions[0], 3.0 * (sp.X_test @ out.coef[0]))


def test_fmlr_laplace_scale_on_coefficients():
    """Perturbed coefficients minus exact ones are Laplace((D+1)^2/eps), D = d + 1 (the tight sensitivity): check
    through the fitted minimiser is hard, so check the released quantities directly via a zero-data split of the
    private part."""
    d, eps = 3, 2.0
    D = d + 1
    assert fm_sensitivity(D) == (D + 1) ** 2
    alg = FunctionalMechanismLR(bound_y=1.0, reg=0.0)
    b = alg.noise_scale(d, eps)
    assert b == pytest.approx((D + 1) ** 2 / eps)
    # draw as run() does and compare the empirical scale (Laplace: mean |x| = b)
    rng = np.random.default_rng(3)
    draws = rng.laplace(0.0, b, size=(4000, D, D))
    assert np.mean(np.abs(draws)) == pytest.approx(b, rel=0.02)
    # run() with a fixed generator consumes exactly these draws first
    sp = make_split(n_priv=50, d=d)
    out1 = alg.run(sp, eps, 0.0, np.random.default_rng(3), trials=1)
    rng = np.random.default_rng(3)
    from dpexp.families.gdsc.algorithms.functional_mechanism import with_bias
    Zv, Zu = with_bias(np.clip(sp.X_private, -1, 1)), with_bias(np.clip(sp.X_public, -1, 1))
    yv, yu = np.clip(sp.y_private, -1, 1), np.clip(sp.y_public, -1, 1)
    M = Zv.T @ Zv + Zu.T @ Zu + rng.laplace(0.0, b, size=(1, D, D))
    a = -2 * (Zv.T @ yv + Zu.T @ yu) + rng.laplace(0.0, b, size=(1, D))
    w = trimmed_minimiser(M, a, 0.0)
    np.testing.assert_allclose(out1.predictions, w @ with_bias(sp.X_test).T, atol=1e-10)


def test_trimmed_minimiser_drops_negative_directions():
    M = np.diag([2.0, -1.0, 0.5])
    a = np.array([-4.0, 3.0, -1.0])
    w = trimmed_minimiser(M, a, reg=0.0)
    np.testing.assert_allclose(w, [1.0, 0.0, 1.0])


def test_fmlr_without_noise_is_least_squares():
    sp = make_split(n_priv=0, n_pub=40, d=3)
    out = FunctionalMechanismLR(bound_y=10.0, reg=0.0).run(sp, 1.0, 0.0, np.random.default_rng(0))
    Z = np.column_stack([np.ones(40), sp.X_public])
    w = np.linalg.lstsq(Z, sp.y_public / 10.0, rcond=None)[0]
    np.testing.assert_allclose(out.predictions[0], 10.0 * np.column_stack([np.ones(30), sp.X_test]) @ w, atol=1e-9)


def test_lr_public_ignores_private_rows_and_rlr_clips():
    a, b = make_split(n_priv=50, seed=2), make_split(n_priv=200, seed=2)
    b = Split(b.X_private, b.y_private, a.X_public, a.y_public, a.X_test, a.y_test, a.meta)
    pa = PublicOnlyLR().run(a, 1.0, 0.0, np.random.default_rng(0)).predictions
    pb = PublicOnlyLR().run(b, 1.0, 0.0, np.random.default_rng(0)).predictions
    np.testing.assert_allclose(pa, pb)
    XX = a.X_public.T @ a.X_public
    w = np.linalg.solve(np.eye(4) + XX, a.X_public.T @ a.y_public)
    np.testing.assert_allclose(pa[0], a.X_test @ w)
    with pytest.raises(Exception, match="no view"):
        PublicOnlyLR(d=7).run(a, 1.0, 0.0, np.random.default_rng(0))
    out = RobustLR(omega_x=0.5, omega_y=0.5, p1=0.35, p2=0.6, p3=0.05, prior="fixed").run(a, 1.0, 0.0,
                                                                                         np.random.default_rng(0))
    Bx, By = 0.5 * a.meta["sigma_x"], 0.5 * a.meta["sigma_y"]
    assert out.extras == pytest.approx({"B_x": Bx, "B_y": By})
    X = np.vstack([a.X_public, np.clip(a.X_private, -Bx, Bx)])
    y = np.concatenate([a.y_public, np.clip(a.y_private, -By, By)])
    w = np.linalg.solve(np.eye(4) + X.T @ X, X.T @ y)
    np.testing.assert_allclose(out.predictions[0], a.X_test @ w, atol=1e-10)


def test_run_many_uses_each_rng_and_matches_run():
    splits = [make_split(seed=s) for s in range(3)]
    for alg in (OutputPerturbationLR(bound_y=3.0), FunctionalMechanismLR(bound_y=3.0)):
        many = alg.run_many(splits, 1.0, 0.0, [np.random.default_rng(s) for s in range(3)], 2)
        for s, sp in enumerate(splits):
            one = alg.run(sp, 1.0, 0.0, np.random.default_rng(s), 2)
            np.testing.assert_allclose(many[s].predictions, one.predictions, atol=1e-9)
