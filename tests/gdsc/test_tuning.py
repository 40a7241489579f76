"""Tests of auxiliary-data tuning (dpexp.families.gdsc.tuning): grids, vectorised scores vs brute force, planted optima, cache,
determinism.  All problems are tiny (n ≤ 60, d ≤ 3)."""

from __future__ import annotations

import json
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest
from scipy import stats

from dpexp import cache
from dpexp.families.gdsc import tuning
from dpexp.families.gdsc.stats import clip, noise_scales, sensitivities
from dpexp.models.bayes_lr import posterior_mean_fixed

pytestmark = pytest.mark.usefixtures("isolated_cache")  # tuning results in tmp_path, memos cleared


def test_grids_match_the_paper():
    assert len(tuning.OMEGA_GRID) == 20 and tuning.OMEGA_GRID[0] == 0.1 and tuning.OMEGA_GRID[-1] == 2.0
    assert len(tuning.SPLIT_GRID) == 171
    for p in tuning.SPLIT_GRID:
        assert abs(sum(p) - 1) < 1e-9 and min(p) >= 0.05 - 1e-12 and max(p) <= 0.9 + 1e-12
    assert (0.35, 0.6, 0.05) in tuning.SPLIT_GRID


def test_spearman_rows_matches_scipy():
    rng = np.random.default_rng(0)
    y = rng.normal(size=40)
    pred = rng.normal(size=(5, 40)) + y
    rank = np.argsort(np.argsort(y))
    got = tuning.spearman_rows(pred, rank)
    want = [stats.spearmanr(p, y).statistic for p in pred]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_vectorised_grid_equals_brute_force_loop():
    """Every grid point of the batched computation equals a direct clip → perturb → fit → Spearman loop using the
    rplr building blocks and the same standard noise draws."""
    n, d, eps, split = 30, 3, 2.0, (0.3, 0.6, 0.1)
    omegas = (0.3, 1.0, 2.0)
    prob = tuning._AuxProblem(n, d, 2, 2, omegas, np.random.default_rng(1))
    got = prob.grid_scores(split, eps)
    for a in range(2):
        sx, sy = prob.X[a].std(), prob.y[a].std()
        for m in range(2):
            for i, wx in enumerate(omegas):
                for j, wy in enumerate(omegas):
                    Bx, By = wx * sx, wy * sy
                    Xc, yc = clip(prob.X[a], prob.y[a], Bx, By)
                    s_xx, s_xy, _ = sensitivities(d, Bx, By)
                    XX = Xc.T @ Xc + prob.Lxx[a, m] * s_xx / (split[0] * eps)
                    Xy = Xc.T @ yc + prob.Lxy[a, m] * s_xy / (split[1] * eps)
                    w = posterior_mean_fixed(XX, Xy, 1.0, 1.0)
                    want = stats.spearmanr(prob.X[a] @ w, prob.y[a]).statistic
                    assert got[a, m, i, j] == pytest.approx(want, abs=1e-5)  # float32 predictions


def test_noise_scales_follow_methods_4_3():
    bxx, bxy, byy = noise_scales(10, np.array(0.5), np.array(2.0), (0.35, 0.6, 0.05), 2.0)
    assert bxx == pytest.approx(10 * 11 * 0.25 / 0.7)
    assert bxy == pytest.approx(2 * 10 * 0.5 * 2.0 / 1.2)
    assert byy == pytest.approx(4.0 / 0.1)


def test_planted_threshold_optimum_is_found(monkeypatch):
    planted = np.zeros((1, 1, 20, 20))
    planted[0, 0, 3, 7] = 1.0
    monkeypatch.setattr(tuning._AuxProblem, "grid_scores", lambda self, split, eps: planted)
    res = tuning.tune_thresholds(20, 2, 1.0, (0.3, 0.6, 0.1), n_aux=1, n_noise=1, use_disk=False)
    assert (res["omega_x"], res["omega_y"]) == (tuning.OMEGA_GRID[3], tuning.OMEGA_GRID[7])
    assert res["score"] == 1.0


def test_planted_split_optimum_is_found():
    """Of a hopeless split (5% each to nXX and nXy) and a sensible one, the search must pick the sensible one."""
    splits = ((0.05, 0.05, 0.9), (0.45, 0.5, 0.05))
    res = tuning.tune_split(n=60, d=2, epsilon=1.0, n_aux=3, n_noise=3, splits=splits, omegas=(0.5, 1.0, 2.0),
                            use_disk=False)
    assert (res["p1"], res["p2"], res["p3"]) == splits[1]
    assert res["table"][1][3] > res["table"][0][3]


def test_cache_hit_memory_and_disk(tmp_path):
    args = dict(n=25, d=2, epsilon=1.5, split=(0.35, 0.6, 0.05), n_aux=2, n_noise=2, omegas=(0.5, 1.0))
    first = tuning.tune_thresholds(**args)
    assert first["cache_hit"] is False
    files = list((tmp_path / "tuning").glob("thresholds-*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text())["key"]["n"] == 25
    again = tuning.tune_thresholds(**args)
    assert again["cache_hit"] is True and again["scores"] == first["scores"]
    cache.clear()
    from_disk = tuning.tune_thresholds(**args)
    assert from_disk["cache_hit"] is True and from_disk["scores"] == first["scores"]


def test_deterministic_and_key_dependent():
    args = dict(n=25, d=2, epsilon=1.5, split=(0.35, 0.6, 0.05), n_aux=2, n_noise=2, omegas=(0.5, 1.0, 1.5),
                use_disk=False)
    a = tuning.tune_thresholds(**args)
    cache.clear()
    b = tuning.tune_thresholds(**args)
    assert a["scores"] == b["scores"]
    c = tuning.tune_thresholds(**{**args, "epsilon": 1.6})
    assert c["scores"] != a["scores"]
    assert tuning.cache_key("thresholds", n=1, x=0.1 + 0.2) == tuning.cache_key("thresholds", n=1, x=0.3)


def _tune_in_subprocess(cache_dir: str) -> list:
    import os

    os.environ["DPEXP_CACHE_DIR"] = cache_dir
    from dpexp.families.gdsc import tuning as t

    return t.tune_thresholds(30, 2, 1.0, (0.35, 0.6, 0.05), n_aux=2, n_noise=2, omegas=(0.5, 1.0))["scores"]


def test_two_processes_share_one_result(tmp_path):
    with ProcessPoolExecutor(2) as ex:
        r1, r2 = ex.map(_tune_in_subprocess, [str(tmp_path)] * 2)
    assert r1 == r2
    assert len(list((tmp_path / "tuning").glob("thresholds-*.json"))) == 1
    assert not list((tmp_path / "tuning").glob(".*.tmp"))
