"""Calibration metrics (dpexp.metrics.calibration), the truth of Eq. 10 data (dpexp.families.gdsc.truth), the
plot kinds coverage_nominal / interval_width, and the noise_aware_synthetic config end to end."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from dpexp.cli import main
from dpexp.families.gdsc import truth
from dpexp.metrics.calibration import coverage, width
from dpexp.models.clipped_normal import clipped_regression_coef
from dpexp.models.intervals import draw_intervals, gaussian_intervals
from dpexp.types import Output, Split

REPO = Path(__file__).resolve().parents[2]


def _split(target):
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    return Split(np.zeros((0, 2)), np.zeros(0), np.zeros((0, 2)), np.zeros(0), X, np.zeros(3),
                 {"coef_target": target})


def test_coverage_and_width_known_values():
    """Target (1, 2) for every trial; trial 0's intervals cover both coefficients, trial 1's only the first:
    coefficient coverage 3/4; predictions x_testᵀw = (1, 2, 3): trial 0 covers all, trial 1 two of three."""
    lo = np.array([[0.5, 1.5], [0.5, 2.5]])
    hi = np.array([[1.5, 2.5], [1.5, 3.0]])
    plo = np.array([[0.0, 0.0, 0.0], [2.0, 2.0, 2.0]])
    phi = np.array([[4.0, 4.0, 4.0], [4.0, 4.0, 4.0]])
    out = Output(predictions=np.zeros((2, 3)), coef_interval={0.9: (lo, hi)}, pred_interval={0.9: (plo, phi)})
    s = _split(lambda b: np.array([1.0, 2.0]))
    assert coverage(out, s, "coef", 0.9) == 0.75
    assert coverage(out, s, "pred", 0.9) == pytest.approx(5 / 6)
    assert width(out, "coef", 0.9) == pytest.approx(np.mean(hi - lo))
    with pytest.raises(ValueError, match="no 0.5 interval"):
        coverage(out, s, "coef", 0.5)
    assert math.isnan(coverage(Output(predictions=np.zeros((1, 3))), s, "coef", 0.9))   # point estimator: n/a
    no_truth = Split(*(s.X_private, s.y_private, s.X_public, s.y_public, s.X_test, s.y_test), {})
    with pytest.raises(ValueError, match="no true coefficients"):
        coverage(out, no_truth, "coef", 0.9)


def test_target_receives_the_clip_bounds():
    seen = []
    s = _split(lambda b: seen.append(b) or np.zeros(2))
    b = np.array([[0.1, 0.2], [0.3, 0.4]])
    lo = np.full((2, 2), -1.0)
    out = Output(predictions=np.zeros((2, 3)), coef_interval={0.9: (lo, -lo)}, clip_bounds=b)
    assert coverage(out, s, "coef", 0.9) == 1.0
    np.testing.assert_array_equal(seen[0], b)


def test_interval_helpers():
    mean, cov = np.array([1.0, -1.0]), np.diag([4.0, 1.0])
    X = np.array([[1.0, 1.0]])
    ci, pi = gaussian_intervals(mean, cov, X, (0.9,))
    np.testing.assert_allclose(ci[0.9][1] - ci[0.9][0], 2 * 1.6448536 * np.array([2.0, 1.0]), rtol=1e-6)
    np.testing.assert_allclose(pi[0.9][0], -1.6448536 * math.sqrt(5), rtol=1e-6)
    w = np.random.default_rng(0).normal(size=(4000, 2)) * [2.0, 1.0] + mean
    ci_d, _ = draw_intervals(w, X, (0.9,))
    np.testing.assert_allclose(ci_d[0.9][0], ci[0.9][0], atol=0.15)
    with pytest.raises(ValueError):
        gaussian_intervals(mean, cov, X, (1.0,))


def test_truth_raw_design_is_the_closed_form_and_unit_norm_is_consistent():
    beta = np.array([1.0, -2.0, 0.5])
    raw = truth.coef_target_eq10(beta, 1.0, unit_norm=False)
    np.testing.assert_array_equal(raw(None), beta)
    b = np.array([[0.5, 1.0], [2.0, 3.0]])
    np.testing.assert_allclose(raw(b), clipped_regression_coef(np.stack([beta, beta]), 1.0, b[:, 0], b[:, 1]))
    unit = truth.coef_target_eq10(beta, 1.0, unit_norm=True)
    np.testing.assert_allclose(unit(None), truth._mean_norm(3) * beta)
    # unclipped x, y clipped far out: the Monte Carlo target tends to E‖x‖ β (3 % tolerance: the MC over u)
    np.testing.assert_allclose(unit(np.array([[10.0, 1e6]]))[0], truth._mean_norm(3) * beta, rtol=0.03)


def test_unit_norm_truth_matches_brute_force_simulation():
    """The target with quadrature over ‖x‖ and the noise agrees with a brute-force regression of clipped y on
    clipped unit-norm x over 400,000 simulated rows within 0.05 (the brute force's own s.e. ≈ 0.01)."""
    rng = np.random.default_rng(3)
    beta = rng.normal(size=5)
    x = rng.normal(size=(400_000, 5))
    y = x @ beta + rng.normal(size=len(x))
    u = np.clip(x / np.linalg.norm(x, axis=1, keepdims=True), -0.2, 0.2)
    yc = np.clip(y, -1.0, 1.0)
    brute = np.linalg.solve(u.T @ u, u.T @ yc)
    np.testing.assert_allclose(truth.unit_norm_target(beta, 1.0, 0.2, 1.0), brute, atol=0.05)


def _unit_norm_target_numpy(beta, lam, B_x, B_y):
    """The plain numpy form of ``truth.unit_norm_target`` (np.interp, np.clip, a matrix product)."""
    d = beta.size
    u = truth._unit_norm_population(d)
    s = u @ beta
    nb = float(np.linalg.norm(beta))
    grid = np.linspace(-nb, nb, truth.GRID_POINTS)
    g = np.interp(s, grid, truth._clipped_response(grid, d, lam, B_y)) if np.isfinite(B_y) else s * truth._mean_norm(d)
    uc = np.clip(u, -B_x, B_x)
    return (uc.T @ g) / np.sum(uc * uc) * d


def test_unit_norm_truth_compiled_pass_matches_numpy_and_is_batch_independent():
    """The compiled pass agrees with the numpy form to 1e-10 relative (summation order only), for clipped and
    unclipped bounds on either side; each bound's target is the same bits alone or in a batch."""
    beta = np.random.default_rng(5).normal(size=10) * 0.7
    bounds = np.array([[0.3, 1.5], [0.9, 0.4], [np.inf, 2.0], [0.2, np.inf], [1.0, 50.0], [np.inf, np.inf]])
    batch = truth.unit_norm_targets(beta, 1.3, bounds)
    for (bx, by), got in zip(bounds, batch):
        want = truth._mean_norm(10) * beta if not (np.isfinite(bx) or np.isfinite(by)) else \
            _unit_norm_target_numpy(beta, 1.3, bx, by)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(truth.unit_norm_target(beta, 1.3, bx, by), got)
    np.testing.assert_array_equal(truth.unit_norm_targets(beta, 1.3, bounds[::-1]), batch[::-1])
    np.testing.assert_array_equal(truth.unit_norm_targets(np.zeros(10), 1.0, bounds[:2]), np.zeros((2, 10)))


CONFIG = REPO / "configs" / "noise_aware_synthetic.yaml"


@pytest.mark.usefixtures("isolated_cache")
def test_noise_aware_synthetic_config_runs_and_plots(run_config, tmp_path):
    """The shipped config, shrunk (2 repeats, 2 sizes, 1 ε, 30 test rows, small tuning): every algorithm runs, the
    calibration metrics are filled for the interval-reporting ones and NaN for the point estimators, and every plot
    kind draws."""
    cfg = yaml.safe_load(CONFIG.read_text())
    cfg.update(repeats=2, fast=None)
    cfg["sizes"].update(n_private=[60, 120], n_test=30)
    cfg["privacy"]["epsilon"] = [2.0]
    for a in cfg["algorithms"]:
        if a["name"] in ("rplr", "narplr"):
            a.setdefault("params", {}).update(tune_reps=[[2, 2]], split_reps=[[1, 1]])   # a list value is a grid
    out, df = run_config(cfg)
    figs = tmp_path / "figs"
    assert (df["error"] == "").all(), df[df["error"] != ""]["error"].unique()[:3]
    cov = df[df["metric"] == "coef_coverage_90"]
    filled = cov[cov["value"] != ""]
    assert set(filled["algorithm"]) == {"rplr", "narplr"}
    assert filled["value"].astype(float).between(0, 1).all()
    r = CliRunner().invoke(main, ["plot", str(out), "--out", str(figs), "--format", "png"])
    assert r.exit_code == 0, r.output
    names = {f.name for f in figs.iterdir()}
    assert {"noise_aware_synthetic_coverage.png", "noise_aware_synthetic_width_coef.png",
            "noise_aware_synthetic_width_pred.png", "noise_aware_synthetic_spearman.png"} <= names
