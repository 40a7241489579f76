"""rplr as the proposed method: Gamma priors (vb), auto split/thresholds, σ choice, batched run_many; lr prior."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError

from dpexp.families.gdsc import tuning
from dpexp.families.gdsc.algorithms.lr import BayesLR
from dpexp.families.gdsc.algorithms.rplr import RobustPrivateLR, _dp_sigmas
from dpexp.models.vb import fit_vb
from dpexp.privacy.ledger import as_ledger
from dpexp.types import Split

SMALL = dict(tune_reps=(2, 2), split_reps=(1, 1))


pytestmark = pytest.mark.usefixtures("isolated_cache")  # tuning results in tmp_path, memos cleared


def _split(seed, n=80, d=3, n_requested=None):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n + 30, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = X @ rng.normal(size=d) + 0.3 * rng.normal(size=n + 30)
    meta = {"sigma_x": float(X.std()), "sigma_y": float(y.std())}
    if n_requested is not None:
        meta["n_requested"] = {"n_private": n_requested}
    return Split(X[:n], y[:n], X[n:n + 10], y[n:n + 10], X[n + 10:], y[n + 10:], meta)


EXPLICIT = dict(p1=0.35, p2=0.6, p3=0.05, omega_x=1.0, omega_y=1.0)


@pytest.mark.parametrize("prior", ["gamma", "fixed"])
def test_run_many_equals_run_loop(prior):
    splits = [_split(s) for s in range(4)]
    alg = RobustPrivateLR(prior=prior, **EXPLICIT)
    many = alg.run_many(splits, 2.0, 0.0, [np.random.default_rng(10 + k) for k in range(4)], trials=3)
    for k, s in enumerate(splits):
        one = alg.run(s, 2.0, 0.0, np.random.default_rng(10 + k), trials=3)
        np.testing.assert_allclose(many[k].predictions, one.predictions, rtol=1e-10)
        assert many[k].extras == one.extras


def test_gamma_prior_fit_is_vb_on_released_statistics():
    """prior: gamma fits VB to the released statistics after the noise-calibrated ridge (stabilize: noise_ridge,
    default) or to them as they are (stabilize: none)."""
    from dpexp.models.vb import noise_ridge, ridge_stabilised

    s = _split(1)
    n = len(s.y_private) + len(s.y_public)
    alg = RobustPrivateLR(stabilize="none", sigma="data", **EXPLICIT)
    XX, Xy, yy, ex, _ = alg._release(s, 2.0, as_ledger(np.random.default_rng(3)), 2)
    out = alg.run(s, 2.0, 0.0, np.random.default_rng(3), trials=2)
    np.testing.assert_allclose(out.coef, fit_vb(XX, Xy, yy, n).mean, rtol=1e-10)
    alg = RobustPrivateLR(sigma="data", **EXPLICIT)
    XX, Xy, yy, ex, ridge = alg._release(s, 2.0, as_ledger(np.random.default_rng(3)), 2)
    d = s.d
    b_xx = d * (d + 1) / 2 * ex["B_x"] ** 2 / (0.35 * 2.0)   # the tight X'X sensitivity (sensitivity: tight)
    assert ex["ridge"] == ridge == pytest.approx(2 * np.sqrt(2 * d) * b_xx)
    out = alg.run(s, 2.0, 0.0, np.random.default_rng(3), trials=2)
    np.testing.assert_allclose(out.coef, fit_vb(ridge_stabilised(XX, ex["ridge"]), Xy, yy, n).mean, rtol=1e-10)
    assert noise_ridge(4, 1.0) == pytest.approx(2 * np.sqrt(8))
    # sigma: dp (default): σ̂, hence B and the ridge, are drawn per trial; the fit uses each trial's own ridge
    alg = RobustPrivateLR(**EXPLICIT)
    XX, Xy, yy, ex, ridge = alg._release(s, 2.0, as_ledger(np.random.default_rng(3)), 2)
    assert np.shape(ridge) == (2,) and ridge[0] != ridge[1]
    out = alg.run(s, 2.0, 0.0, np.random.default_rng(3), trials=2)
    np.testing.assert_allclose(out.coef, fit_vb(ridge_stabilised(XX, ridge), Xy, yy, n).mean, rtol=1e-10)


def test_noise_ridge_restores_regularisation_on_synthetic_data():
    """On Eq. (10) data with heavy perturbation (the paper's X'X sensitivity, twice the tight one) the unstabilised
    Gamma-prior VB fit collapses (E[lambda0] -> 0); the noise ridge recovers the accuracy of the fixed-precision
    model (measured, fixed seeds)."""
    from dpexp.families.gdsc.datasets.synthetic import HonkelaSynthetic
    from dpexp.metrics.accuracy import spearman_rows
    from dpexp.types import Sizes

    scores = {"noise_ridge": [], "none": [], "fixed": []}
    for rep in range(4):
        sp = HonkelaSynthetic(d=10).split("all", Sizes(800, 10, 100, 800, 10, 100), np.random.default_rng(rep))
        for key in scores:
            kw = dict(prior="fixed") if key == "fixed" else dict(stabilize=key)
            alg = RobustPrivateLR(p1=0.35, p2=0.6, p3=0.05, omega_x=0.1, omega_y=0.3, sensitivity="paper", **kw)
            out = alg.run(sp, 2.0, 0.0, np.random.default_rng(100 + rep), trials=10)
            scores[key].append(spearman_rows(out.predictions, sp.y_test).mean())
    m = {k: float(np.mean(v)) for k, v in scores.items()}
    assert m["noise_ridge"] > m["none"] + 0.1
    assert m["noise_ridge"] > m["fixed"] - 0.05


def test_auto_split_and_thresholds_reported_as_extras():
    s = _split(2, n=60, n_requested=70)
    alg = RobustPrivateLR(split_tuning="case", **SMALL)
    out = alg.run(s, 2.0, 0.0, np.random.default_rng(0))
    ex = out.extras
    assert math.isclose(ex["p1"] + ex["p2"] + ex["p3"], 1.0)
    eps = alg.stats_epsilon(2.0)   # sigma: dp (default) leaves 0.9 ε for the statistics: the tuning's budget
    sp = tuning.tune_split(70, 3, eps, n_aux=1, n_noise=1)  # tuned at the *requested* n (cache hit)
    assert sp["cache_hit"] and (ex["p1"], ex["p2"], ex["p3"]) == (sp["p1"], sp["p2"], sp["p3"])
    th = tuning.tune_thresholds(70, 3, eps, (sp["p1"], sp["p2"], sp["p3"]), n_aux=2, n_noise=2)
    assert th["cache_hit"] and (ex["omega_x"], ex["omega_y"]) == (th["omega_x"], th["omega_y"])
    assert ex["B_x"] == pytest.approx(ex["omega_x"] * ex["sigma_x_dp"])   # sigma: dp, the default
    assert np.all(np.isfinite(out.predictions))
    data = RobustPrivateLR(split_tuning="case", sigma="data", **SMALL).run(s, 2.0, 0.0, np.random.default_rng(0))
    assert data.extras["B_x"] == pytest.approx(data.extras["omega_x"] * s.meta["sigma_x"])


def test_no_private_rows_uses_public_only():
    s = _split(3, n=0)
    out = RobustPrivateLR(**EXPLICIT).run(s, 2.0, 0.0, np.random.default_rng(0), trials=2)
    XX, Xy = s.X_public.T @ s.X_public, s.X_public.T @ s.y_public
    w = fit_vb(XX, Xy, s.y_public @ s.y_public, 10).mean
    np.testing.assert_allclose(out.predictions, np.tile(s.X_test @ w, (2, 1)), rtol=1e-10)


def test_dp_sigma_noise_scale_drawn():
    """sigma: dp releases Σclip(x)² + Lap(d·Bx²/ε_x) and Σclip(y)² + Lap(By²/ε_y) (replace-one sensitivities)."""
    n, d, Bx, By, ex, ey = 50, 4, 0.5, 2.0, 0.3, 0.7
    rng = np.random.default_rng(5)
    X = rng.normal(size=(n, d))
    y = 3 * rng.normal(size=n)
    sx, sy = _dp_sigmas(X, y, Bx, By, ex, ey, as_ledger(np.random.default_rng(9)))
    g = np.random.default_rng(9)
    Sx = np.sum(np.clip(X, -Bx, Bx) ** 2) + g.laplace(0.0, d * Bx * Bx / ex)
    Sy = np.sum(np.clip(y, -By, By) ** 2) + g.laplace(0.0, By * By / ey)
    assert sx == pytest.approx(math.sqrt(max(Sx, 0) / (n * d))) and sy == pytest.approx(math.sqrt(max(Sy, 0) / n))
    # statistical check of the released scale: zero data and one entry, so σ_x² = max(Lap(b), 0); over 4000 draws
    # P(noise > 0) = 1/2 and E[noise | noise > 0] = b.  Tolerance 5 standard errors (failure prob. < 1e-5).
    b = 1 * Bx * Bx / ex
    gen = np.random.default_rng(11)
    v = _dp_sigmas(np.zeros((1, 1)), np.zeros(1), Bx, By, ex, ey, as_ledger(gen), trials=4000)[0] ** 2
    pos = v[v > 0]
    assert abs(pos.mean() / b - 1) < 5 / math.sqrt(pos.size)
    # what the ledger records: two Laplace releases at (ε_x, ε_y), composed to ε_x + ε_y (pure)
    ledger = as_ledger(np.random.default_rng(12))
    _dp_sigmas(X, y, Bx, By, ex, ey, ledger, trials=3)
    g = ledger.guarantee()
    assert (g.kind, g.epsilon) == ("pure", pytest.approx(ex + ey))


def test_sigma_dp_spends_share_and_reports_estimates():
    s = _split(4, n=200)
    alg = RobustPrivateLR(sigma="dp", sigma_share=0.2, **EXPLICIT)
    out = alg.run(s, 2.0, 0.0, np.random.default_rng(1))
    assert "sigma_x_dp" in out.extras and out.extras["B_x"] == pytest.approx(out.extras["sigma_x_dp"])
    assert alg.stats_epsilon(2.0) == pytest.approx(1.6)
    # the guarantee is derived from the five Laplace releases (σ_x, σ_y at 0.2 each, X'X, X'y, y'y at 1.6 split)
    assert (out.guarantee.kind, out.guarantee.epsilon) == ("pure", 2.0)
    assert RobustPrivateLR().params.sigma == "dp"   # private by default


def test_sigma_drawn_per_trial():
    """Trials are independent runs: σ̂ (hence B) is released again in every trial, and the run's ε is that of one
    trial (not the sum over trials)."""
    s = _split(5, n=200)
    ledger = as_ledger(np.random.default_rng(2))
    XX, Xy, yy, ex, ridge = RobustPrivateLR(**EXPLICIT)._release(s, 2.0, ledger, 4)
    assert len(set(np.round(ridge, 12))) == 4
    assert ledger.guarantee().epsilon == pytest.approx(2.0)
    one = RobustPrivateLR(**EXPLICIT).run(s, 2.0, 0.0, np.random.default_rng(2), trials=1)
    many = RobustPrivateLR(**EXPLICIT).run(s, 2.0, 0.0, np.random.default_rng(2), trials=4)
    assert one.guarantee == many.guarantee


def test_parameter_validation():
    RobustPrivateLR(**EXPLICIT)  # the demo config's parameters stay valid
    # backwards compatible: missing explicit values take the former defaults (0.35, 0.60, 0.05), omega 1.0
    old = RobustPrivateLR(omega_x=0.5).params
    assert (old.omega_x, old.omega_y, old.p1) == (0.5, 1.0, None)
    assert RobustPrivateLR(p3=0.05).params.p1 == 0.35
    for bad in [dict(p1=0.5), dict(split="auto", p1=0.35, p2=0.6, p3=0.05),
                dict(omega="auto", omega_x=1.0, omega_y=1.0), dict(p1=0.5, p2=0.5, p3=0.5)]:
        with pytest.raises(ValidationError):
            RobustPrivateLR(**bad)


def test_lr_gamma_prior_is_vb_on_training_statistics():
    s = _split(6)
    out = BayesLR(prior="gamma").run(s, 0.0, 0.0, np.random.default_rng(0), trials=2)
    X, y = s.X_train, s.y_train
    w = fit_vb(X.T @ X, X.T @ y, y @ y, len(y)).mean
    np.testing.assert_allclose(out.predictions, np.tile(s.X_test @ w, (2, 1)), rtol=1e-10)
