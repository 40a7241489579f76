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
    bxx, bxy, byy = noise_scales(10, np.array(0.5), np.array(2.0), (0.35, 0.6, 0.05), 2.0, "paper")
    assert bxx == pytest.approx(10 * 11 * 0.25 / 0.7)
    assert bxy == pytest.approx(2 * 10 * 0.5 * 2.0 / 1.2)
    assert byy == pytest.approx(4.0 / 0.1)
    tight = noise_scales(10, np.array(0.5), np.array(2.0), (0.35, 0.6, 0.05), 2.0)   # ours: X'X's d(d+1)B²/2
    assert tight == pytest.approx((10 * 11 / 2 * 0.25 / 0.7, bxy, byy))


@pytest.mark.parametrize("sensitivity", ["tight", "paper"])
def test_tuning_simulates_the_rule_s_scales_on_shared_draws(sensitivity):
    """The auxiliary problem's noisy statistics use the rule's scales (``stats.noise_scales``), and the two rules
    share their auxiliary data and noise draws (the seed leaves the rule out: common random numbers), while their
    cache keys differ (the key of the paper rule is the one every earlier result was stored under)."""
    n, d, eps, split = 30, 3, 2.0, (0.3, 0.6, 0.1)
    prob = tuning._AuxProblem(n, d, 2, 2, (0.5, 1.0), np.random.default_rng(1), sensitivity=sensitivity)
    XX, Xy, _ = prob.noisy(split, eps)
    bxx = noise_scales(d, prob.Bx[:, :, None], prob.By[:, None, :], split, eps, sensitivity)[0][:, :, 0]
    np.testing.assert_allclose(XX - prob.XX[:, None], prob.Lxx[:, :, None] * bxx[:, None, :, None, None],
                               rtol=1e-12, atol=1e-12)
    assert tuning._variant_key("eq10", "psd_floor", "paper") == {}
    assert tuning._variant_key("eq10", "psd_floor", "tight") == {"sensitivity": "tight"}
    key = {"n": 30, "sensitivity": "tight"}
    assert tuning._seed_fields(key) == tuning._seed_fields({"n": 30})


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


# ------------------------------------------------------------------ the paper protocol's draws (issue 28, facts 4-6)
def _authors_sequence(reps, n, d, n_noise, with_yy=False):
    """RandomState(42) in the order the authors' omega() draws (diffpri.py:146, 162-179), written out plainly."""
    rs = np.random.RandomState(42)
    out = []
    for _ in range(reps):
        x = rs.normal(size=(n, d))
        x = x / np.linalg.norm(x, axis=1, keepdims=True)
        beta = rs.normal(size=d)
        e = rs.normal(size=n)
        y = x @ beta + e
        noise = []
        for _ in range(n_noise):
            u = rs.laplace(size=(d * d + d) // 2)
            v = rs.laplace(size=d)
            noise.append((u, v, rs.laplace(size=1)[0] if with_yy else None))
        out.append((x, y - y.mean(), noise))
    return out


def test_paper_tuning_draws_are_randomstate_42_in_the_authors_order(monkeypatch):
    n, d = 40, 3
    want = _authors_sequence(3, n, d, 4)
    made = []
    real = tuning._AuxProblem

    def recording(*a, **k):
        made.append(real(*a, **k))
        return made[-1]

    monkeypatch.setattr(tuning, "_AuxProblem", recording)
    iu = np.triu_indices(d)
    for eps, split in ((2.0, (0.35, 0.6, 0.05)), (1.0, (0.1, 0.8, 0.1))):   # reseeded at every (n, d, ε)
        tuning.tune_thresholds(n, d, eps, split, n_aux=3, n_noise=4, omegas=(0.5, 1.0), use_disk=False,
                               aux="preprocessed", solver="direct")
        prob = made[-1]
        for a, (x, y, noise) in enumerate(want):
            assert prob.X[a].tobytes() == x.tobytes() and prob.y[a].tobytes() == y.tobytes()
            for k, (u, v, _) in enumerate(noise):
                assert prob.Lxx[a, k][iu].tobytes() == u.tobytes() and prob.Lxy[a, k].tobytes() == v.tobytes()
                np.testing.assert_array_equal(prob.Lxx[a, k], prob.Lxx[a, k].T)        # mirrored
            assert prob.sx[a] == np.std(x, ddof=1) and prob.sy[a] == np.std(y, ddof=1)   # ddof = 1
    assert len(made) == 2
    # unit-scale draws scaled per grid point are the draws at the scale, to the bit (legacy laplace: loc + scale·L)
    b = 3.7
    assert (np.random.RandomState(42).laplace(size=5) * b).tobytes() == \
        np.random.RandomState(42).laplace(0.0, b, size=5).tobytes()
    # the split scorer's separate data: RandomState(42) again, the same sets, then XᵀX, Xᵀy, yᵀy noise per draw
    X, y, Lxx, Lxy, Lyy = tuning.sample_authors_scoring(2, n, d, 3)
    for a, (x, yv, noise) in enumerate(_authors_sequence(2, n, d, 3, with_yy=True)):
        assert X[a].tobytes() == x.tobytes() and y[a].tobytes() == yv.tobytes()
        for k, (u, v, w) in enumerate(noise):
            assert Lxx[a, k][np.triu_indices(d)].tobytes() == u.tobytes() and Lxy[a, k].tobytes() == v.tobytes()
            assert Lyy[a, k] == w


def test_a_change_to_the_tuning_code_invalidates_the_stored_results(monkeypatch, tmp_path):
    args = dict(n=25, d=2, epsilon=1.5, split=(0.35, 0.6, 0.05), n_aux=2, n_noise=2, omegas=(0.5, 1.0))
    first = tuning.tune_thresholds(**args)
    assert tuning.tune_thresholds(**args)["cache_hit"] is True
    # a new version of the code whose output differs: the old entry must not be served
    planted = np.zeros((2, 2, 2, 2))
    planted[..., 1, 0] = 1.0
    monkeypatch.setattr(tuning._AuxProblem, "grid_scores", lambda self, split, eps: planted)
    monkeypatch.setattr(tuning, "_code_sources", lambda: [b"changed = 'tuning code'"])
    tuning.code_digest.cache_clear()
    cache.clear()
    try:
        new = tuning.tune_thresholds(**args)
        assert new["cache_hit"] is False and (new["omega_x"], new["omega_y"]) == (1.0, 0.5)
        assert new["scores"] != first["scores"]
        assert len(list((tmp_path / "tuning").glob("thresholds-*.json"))) == 2
    finally:
        tuning.code_digest.cache_clear()
    # the digest covers the tuning module itself
    assert "families/gdsc/tuning.py" in tuning.TUNING_CODE


def test_comments_and_docstrings_do_not_change_the_code_digest(monkeypatch):
    """The digest is of what the code computes: a comment, a docstring or a rewrapped line keeps the stored
    tuning results; a changed constant or operation does not."""
    base = b'"""Module."""\n\ndef f(x):\n    """Doc."""\n    return x + 1  # one\n\nclass C:\n    """C."""\n    y = 2\n'
    same = (b'"""Another module docstring."""\n# a comment\n\ndef f(x):\n    """Other doc."""\n    return (x\n'
            b'            + 1)\n\nclass C:\n    y = 2  # two\n')
    other = [base.replace(b"x + 1", b"x - 1"), base.replace(b"y = 2", b"y = 3"), base + b"z = f(1)\n",
             base.replace(b'    """Doc."""\n', b'    "doc"\n    "not a docstring: a second statement"\n')]

    def digest(src: bytes) -> str:
        monkeypatch.setattr(tuning, "_code_sources", lambda: [src])
        tuning.code_digest.cache_clear()
        try:
            return tuning.code_digest()
        finally:
            tuning.code_digest.cache_clear()

    assert digest(base) == digest(same)
    assert len({digest(base), *map(digest, other)}) == 1 + len(other)


def test_paper_split_scorer_vb_on_the_authors_data_and_advi_is_paper_only():
    splits = ((0.05, 0.05, 0.9), (0.45, 0.5, 0.05))
    res = tuning.tune_split(n=60, d=2, epsilon=1.0, n_aux=2, n_noise=2, splits=splits, omegas=(0.5, 1.0, 2.0),
                            use_disk=False, aux="preprocessed", solver="direct", scorer="vb")
    assert (res["p1"], res["p2"], res["p3"]) == splits[1] and len(res["table"]) == 2
    with pytest.raises(ValueError, match="scorer"):
        tuning.tune_split(n=60, d=2, epsilon=1.0, n_aux=2, n_noise=2, splits=splits, use_disk=False, scorer="advi")
