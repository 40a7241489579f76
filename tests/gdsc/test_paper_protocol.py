"""The paper protocol of the GDSC figures (issue 11) on the tiny fixture: the authors' split positions, per-set
normalisation, σ_y pooled over all drugs, the Matlab path (training-line centring, file order, raw rows), the
n_private = 0 ridge of the Matlab scripts, the cube-biased direction of oplr_paper, fmlr_paper's min-max scaling,
the tuning variants and the guarantees written on the rows."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from dpexp import registry
from dpexp.cli import main
from dpexp.errors import UserError
from dpexp.families.gdsc.algorithms.compared_paper import _minmax, public_ridge
from dpexp.families.gdsc.datasets import protocols
from dpexp.families.gdsc.datasets.gdsc import Gdsc, load_raw, prepare
from dpexp.privacy.ledger import PrivacyLedger
from dpexp.privacy.mechanisms import gamma_norm, heuristic_gamma_norm
from dpexp.types import Sizes

FIX = Path(__file__).parent / "fixtures"
N = 28            # lines of the fixture's inner join
T, START = 6, 12  # test_pool and the python path's public_start on the fixture
registry.load_all()


def python_ds(**kw):
    return Gdsc(data_dir=FIX, d=5, test_pool=T, protocol="python", public_start=START, **kw)


def matlab_ds():
    return Gdsc(data_dir=FIX, d=5, test_pool=T, protocol="matlab")


def sizes(n_private, n_public=3, n_test=T, max_public=3):
    return Sizes(n_private, n_public, n_test, 12, max_public, T)


def raw():
    r = load_raw(FIX / "gdsc" / "gdsc_v17_expression_64genes.csv.gz", FIX / "gdsc" / "IC50_v17.csv.gz")
    return prepare(r, 5, "all")


# ------------------------------------------------------------------------------------------------ python path
def test_python_split_positions_and_nesting():
    perm = np.random.default_rng(4).permutation(N)
    it, iu, iv = protocols.set_indices("python", perm, T, 3, 8, T, START, 3)
    train = perm[T:]
    assert np.array_equal(it, perm[:T])
    assert np.array_equal(iv, train[:8])                        # private = the first n of the training permutation
    assert np.array_equal(iu, train[START:START + 3])            # public at positions START.. (800.. in the paper)
    it2, iu2, iv2 = protocols.set_indices("python", perm, T, 3, 12, T, START, 3)
    assert np.array_equal(iu2, iu) and np.array_equal(iv2[:8], iv)   # public does not depend on n; private nests
    with pytest.raises(UserError, match="n_private must be <= public_start"):
        protocols.set_indices("python", perm, T, 3, START + 1, T, START, 3)


def test_python_sets_normalised_separately_and_sigma_y_pooled():
    prep = raw()
    perm = np.random.default_rng(5).permutation(N)
    s = protocols.protocol_sets("python", ("fixture",), prep.X_raw, prep.Y_raw, perm, T, 3, 10, T, START, 3)
    for idx, X, Y in zip(s.index, s.X, s.Y):
        Xc = prep.X_raw[idx] - prep.X_raw[idx].mean(axis=0)                # genes centred over the set itself,
        np.testing.assert_allclose(X, Xc / np.linalg.norm(Xc, axis=1, keepdims=True))   # then rows to unit norm
        np.testing.assert_allclose(np.nanmean(Y, axis=0)[np.isfinite(Y).any(axis=0)], 0.0, atol=1e-12)
    # each set from its own raw lines only: the private set equals normalise_set of its raw rows
    Xv, Yv = protocols.normalise_set(prep.X_raw[s.index[2]], prep.Y_raw[s.index[2]])
    np.testing.assert_allclose(s.X[2], Xv)
    # sigma_x over all entries of the private x; sigma_y pooled over all drugs (not per drug)
    assert s.sigma_x == pytest.approx(float(Xv.std(ddof=1)))          # ddof = 1: diffpri.py:450-451
    assert s.sigma_y == pytest.approx(float(np.nanstd(Yv, ddof=1)))
    per_drug = [np.nanstd(Yv[:, j]) for j in range(Yv.shape[1])]
    assert not np.allclose(per_drug, s.sigma_y)
    # every drug's split carries the same pooled sigma_y, and the drug's tested lines of each set
    ds = python_ds()
    splits = [ds.split(d, sizes(10), np.random.default_rng(5)) for d in ds.subsets()]
    assert len({sp.meta["sigma_y"] for sp in splits}) == 1
    assert splits[0].meta["sigma_y"] == pytest.approx(s.sigma_y)
    j = prep.drug_index["Drug_5"]
    has = prep.has[s.index[2], j]
    np.testing.assert_allclose(splits[1].X_private, s.X[2][has])
    np.testing.assert_allclose(splits[1].y_private, s.Y[2][has, j])


def test_python_view_normalises_the_set_with_other_genes():
    ds = python_ds()
    sp = ds.split("Drug_1", sizes(8), np.random.default_rng(2))
    Xu, Xt = sp.meta["view"](6)
    assert Xu.shape == (sp.X_public.shape[0], 6) and Xt.shape == (sp.X_test.shape[0], 6)
    np.testing.assert_allclose(np.linalg.norm(Xt, axis=1), 1.0, atol=1e-12)


def test_protocol_options_are_validated():
    with pytest.raises(Exception, match="apply to protocol: ours only"):
        Gdsc(data_dir=FIX, protocol="python", centre="public")
    with pytest.raises(Exception, match="public_start applies to protocol: python only"):
        Gdsc(data_dir=FIX, protocol="matlab", public_start=3)
    assert python_ds().preprocessing().leaks and matlab_ds().preprocessing().leaks
    assert not Gdsc(data_dir=FIX).preprocessing().leaks


# ------------------------------------------------------------------------------------------------ matlab path
def test_matlab_split_file_order_centring_and_raw_rows():
    prep = raw()
    perm = np.random.default_rng(6).permutation(N)
    it, iu, iv = protocols.set_indices("matlab", perm, T, 3, 8, T, START, 3)
    train = np.sort(perm[T:])
    assert np.array_equal(iu, train[:3]) and np.array_equal(iv, train[3:11])   # file order, private after public
    assert np.array_equal(protocols.set_indices("matlab", perm, T, 3, 5, T, START, 3)[2], iv[:5])   # nested
    ds = matlab_ds()
    sp = ds.split("Drug_5", sizes(8), np.random.default_rng(6))
    j = prep.drug_index["Drug_5"]
    y_train = prep.Y_raw[perm[T:], j]
    mu = np.nanmean(y_train)                                  # centred over all tested training lines
    has_v = prep.has[iv, j]
    np.testing.assert_allclose(sp.y_private, prep.Y_raw[iv, j][has_v] - mu)
    Xv = protocols.normalise_set(prep.X_raw[iv], None)[0]      # x per set
    np.testing.assert_allclose(sp.X_private, Xv[has_v])
    rr = sp.meta["raw"]
    np.testing.assert_allclose(rr.X_private, prep.X_raw[iv][has_v])
    np.testing.assert_allclose(rr.x_min, prep.X_raw.min(axis=0))   # over all lines, test included
    # y's range: the union of the raw extremes and those of the training- and the test-centred responses (fact 2)
    y_test = prep.Y_raw[perm[:T], j]
    parts = [prep.Y_raw[:, j], y_train - mu, y_test - np.nanmean(y_test)]
    assert rr.y_max == pytest.approx(max(np.nanmax(p) for p in parts))
    assert rr.y_min == pytest.approx(min(np.nanmin(p) for p in parts))


def test_fmlr_y_range_is_the_union_of_raw_and_centred_extremes():
    # the authors' data_prepare.m:104-106, 157-158, 171-172 / trpred.m:5-6 (issue 28, fact 2), by hand: 6 lines,
    # test = lines 1, 3 (perm[:2]), training = lines 0, 2, 4, 5
    Y = np.array([[1.0, -3.0], [3.0, 0.0], [2.0, 3.0], [6.0, 0.0], [np.nan, 3.0], [4.0, 3.0]])
    perm = np.array([1, 3, 0, 2, 4, 5])
    # drug 0: raw 1 … 6; training (1, 2, 4) − 7/3; test (3, 6) − 4.5 = ±1.5  →  (−1.5 from test, 6 from raw)
    # drug 1: raw −3 … 3; training (−3, 3, 3, 3) − 1.5 = −4.5 … 1.5; test (0, 0) − 0  →  (−4.5 from training, 3)
    assert protocols._y_range(Y, 0, 2, perm) == (-1.5, 6.0)
    assert protocols._y_range(Y, 1, 2, perm) == (-4.5, 3.0)
    lo, hi = protocols._y_ranges(Y, 2, perm)
    assert lo == [-1.5, -4.5] and hi == [6.0, 3.0]
    # the old rule (the centred responses alone, all lines centred by the training mean) is narrower
    old = Y[:, 0] - np.nanmean(Y[perm[2:], 0])
    assert np.nanmax(old) < 6.0


def test_matlab_n0_is_the_public_ridge():
    ds = matlab_ds()
    sp = next(s for s in (ds.split("Drug_5", sizes(0), np.random.default_rng(k)) for k in range(20))
              if s.X_public.shape[0] >= 2)
    assert sp.X_private.shape[0] == 0
    w = public_ridge(sp.X_public, sp.y_public)
    np.testing.assert_allclose(w, np.linalg.solve(np.eye(5) + sp.X_public.T @ sp.X_public,
                                                  sp.X_public.T @ sp.y_public))
    preds = {}
    for name in ("plr_paper", "oplr_paper", "fmlr_paper"):
        out = registry.get("algorithm", name)().run(sp, 2.0, 0.0, np.random.default_rng(0), 2)
        assert out.guarantee.kind == "pure" and out.guarantee.epsilon == 0.0    # public only (dataset leaks: runner)
        preds[name] = out.predictions
    np.testing.assert_allclose(preds["plr_paper"], np.broadcast_to(sp.X_test @ w, preds["plr_paper"].shape))
    np.testing.assert_allclose(preds["oplr_paper"], preds["plr_paper"])          # identical for both
    rr = sp.meta["raw"]                                                          # fmlr: raw, uncentred x
    w_raw = public_ridge(rr.X_public, sp.y_public)
    np.testing.assert_allclose(preds["fmlr_paper"][0], rr.X_test @ w_raw)


def test_fmlr_paper_scales_with_all_line_ranges_and_is_not_dp():
    ds = matlab_ds()
    sp = ds.split("Drug_5", sizes(10), np.random.default_rng(8))
    rr = sp.meta["raw"]
    Z = _minmax(rr.X_private, rr.x_min, rr.x_max)
    assert Z.min() >= -1 - 1e-12 and Z.max() <= 1 + 1e-12
    np.testing.assert_allclose(_minmax(rr.x_min, rr.x_min, rr.x_max), -1.0)
    np.testing.assert_allclose(_minmax(rr.x_max, rr.x_min, rr.x_max), 1.0)
    assert _minmax(np.array([3.0]), 3.0, 3.0)[0] == 0.0                        # a constant column maps to 0
    out = registry.get("algorithm", "fmlr_paper")().run(sp, 2.0, 0.0, np.random.default_rng(0), 3)
    assert out.guarantee.kind == "none" and "min-max" in out.guarantee.reason
    assert np.all(np.isfinite(out.predictions))


def test_plr_paper_does_not_clip_y_and_is_never_dp():
    ds = matlab_ds()
    sp = ds.split("Drug_5", sizes(10), np.random.default_rng(9))
    alg = registry.get("algorithm", "plr_paper")(B_y=20.0)
    X, y = sp.X_train, sp.y_train * 100                               # |y| >> 20 is not clipped
    sp.y_private, sp.y_public = sp.y_private * 100, sp.y_public * 100
    out = alg.run(sp, 1e14, 0.0, np.random.default_rng(0), 2)       # noise negligible: the exact ridge solve
    np.testing.assert_allclose(out.coef[0], np.linalg.solve(np.eye(5) + X.T @ X, X.T @ y), rtol=1e-6)
    assert out.guarantee.kind == "none" and "not clipped" in out.guarantee.reason


# ------------------------------------------------------------------------------------------------ oplr direction
def test_oplr_paper_direction_is_cube_biased_and_ours_uniform():
    D, n = 10, 20000
    rng = np.random.default_rng(11)
    ledger = PrivacyLedger(rng)
    cube = heuristic_gamma_norm(np.zeros(D), 1.0, ledger, size=n, reason="test")
    sphere = gamma_norm(np.zeros(D), 1.0, 1.0, np.random.default_rng(12), size=n)
    u_c = cube / np.linalg.norm(cube, axis=1, keepdims=True)
    u_s = sphere / np.linalg.norm(sphere, axis=1, keepdims=True)
    # E Σ u_j⁴: 3/(D + 2) = 0.25 on the sphere; ≈ 1.8/D = 0.18 for a normalised uniform cube vector
    assert np.mean(np.sum(u_s**4, axis=1)) == pytest.approx(3 / (D + 2), abs=0.005)
    assert np.mean(np.sum(u_c**4, axis=1)) < 0.2
    assert np.mean(np.linalg.norm(cube, axis=1)) == pytest.approx(D * 1.0, rel=0.02)   # ‖b‖ ~ Gamma(D, 1)
    g = ledger.guarantee()
    assert g.kind == "none" and g.reason == "test"


def test_oplr_paper_objective_and_guarantee():
    ds = matlab_ds()
    sp = ds.split("Drug_5", sizes(10), np.random.default_rng(13))
    out = registry.get("algorithm", "oplr_paper")().run(sp, 2.0, 0.0, np.random.default_rng(0), 2)
    assert out.guarantee.kind == "none" and "direction" in out.guarantee.reason
    assert out.predictions.shape == (2, sp.X_test.shape[0])


# ------------------------------------------------------------------------------------------------ rplr and tuning
def test_preprocessed_auxiliary_data():
    from dpexp.models.bayes_lr import sample_preprocessed

    X, y = sample_preprocessed(3, 50, 4, np.random.default_rng(0))
    np.testing.assert_allclose(np.linalg.norm(X, axis=2), 1.0, atol=1e-12)
    np.testing.assert_allclose(y.mean(axis=1), 0.0, atol=1e-12)


def test_tuning_variants_keep_the_default_keys(isolated_cache):
    from dpexp.families.gdsc import tuning

    base = tuning._variant_key("eq10", "psd_floor", "paper")
    assert base == {}                                        # the paper rule's cache keys and seeds are unchanged
    assert tuning._variant_key("eq10", "psd_floor") == {"sensitivity": "tight"}   # ours: a key of its own
    args = dict(n=30, d=2, epsilon=1.0, split=(0.35, 0.6, 0.05), n_aux=2, n_noise=2, omegas=(0.5, 1.0),
                use_disk=False)
    a = tuning.tune_thresholds(**args)
    b = tuning.tune_thresholds(**args, aux="preprocessed", solver="direct")
    assert a["key"] != b["key"] and b["key"]["aux"] == "preprocessed" and b["key"]["solver"] == "direct"
    with pytest.raises(ValueError):
        tuning.tune_thresholds(**args, aux="bogus")


def test_rplr_clip_public_clips_the_public_lines():
    ds = python_ds()
    sp = ds.split("Drug_5", sizes(10), np.random.default_rng(14))
    sp.y_public = sp.y_public * 50                           # far beyond B_y
    common = dict(sigma="data", p1=0.35, p2=0.6, p3=0.05, omega_x=2.0, omega_y=0.5, prior="fixed",
                  solver="direct")
    rplr = registry.get("algorithm", "rplr")
    on = rplr(**common, clip_public=True).run(sp, 1e9, 0.0, np.random.default_rng(0), 1)
    off = rplr(**common).run(sp, 1e9, 0.0, np.random.default_rng(0), 1)
    Bx, By = 2.0 * sp.meta["sigma_x"], 0.5 * sp.meta["sigma_y"]
    X = np.concatenate([np.clip(sp.X_public, -Bx, Bx), np.clip(sp.X_private, -Bx, Bx)])
    y = np.concatenate([np.clip(sp.y_public, -By, By), np.clip(sp.y_private, -By, By)])
    np.testing.assert_allclose(on.coef[0], np.linalg.solve(np.eye(5) + X.T @ X, X.T @ y), rtol=1e-6)
    assert not np.allclose(on.coef, off.coef)
    assert on.guarantee.kind == "none"                      # sigma: data


PAPER_RPLR = dict(sigma="data", p1=0.35, p2=0.6, p3=0.05, clip_public=True, tune_aux="preprocessed",
                  tune_solver="direct", tune_reps=(2, 2))


@pytest.mark.usefixtures("isolated_cache")
def test_rplr_and_rlr_paper_at_n0_fit_the_public_lines_unclipped_without_noise():
    """n_private = 0 (the authors' Python scripts): no clipping and no noise, the Gamma-prior fit on the public lines
    only, for rplr and robust LR alike — even with clip_public and a public response far beyond any bound."""
    from dpexp.models.vb import fit_vb

    ds = python_ds()
    sp = ds.split("Drug_5", sizes(0), np.random.default_rng(15))
    assert sp.X_private.shape[0] == 0 and sp.X_public.shape[0] >= 2
    sp.y_public = sp.y_public * 50
    Xu, yu = sp.X_public, sp.y_public
    w = fit_vb(Xu.T @ Xu, Xu.T @ yu, float(yu @ yu), Xu.shape[0]).mean
    for name, kw in (("rplr", PAPER_RPLR), ("rlr", {**PAPER_RPLR, "tune_epsilon": 2.0})):
        out = registry.get("algorithm", name)(**kw).run(sp, 2.0, 0.0, np.random.default_rng(0), 2)
        np.testing.assert_allclose(out.predictions, np.tile(sp.X_test @ w, (2, 1)), rtol=1e-8)
    out = registry.get("algorithm", "rplr")(**PAPER_RPLR).run(sp, 2.0, 0.0, np.random.default_rng(0), 2)
    assert out.guarantee.kind == "pure" and out.guarantee.epsilon == 0.0      # nothing private released


@pytest.mark.usefixtures("isolated_cache")
def test_rplr_paper_thresholds_once_per_requested_n_and_epsilon():
    """ω is tuned once per (n, ε) — the requested n_private, whatever lines a drug lacks — and used as tuned (the
    grid optimum, no smoothing over n)."""
    from dpexp.families.gdsc import tuning

    ds = python_ds()
    splits = [ds.split(d, sizes(10), np.random.default_rng(16)) for d in ds.subsets()]
    assert len({s.X_private.shape[0] for s in splits}) > 1                  # drugs see different numbers of lines
    alg = registry.get("algorithm", "rplr")(**PAPER_RPLR)
    outs = [alg.run(s, 2.0, 0.0, np.random.default_rng(0), 1) for s in splits]
    assert len({(o.extras["omega_x"], o.extras["omega_y"]) for o in outs}) == 1
    th = tuning.tune_thresholds(10, 5, 2.0, (0.35, 0.6, 0.05), n_aux=2, n_noise=2, aux="preprocessed",
                                solver="direct")
    assert th["cache_hit"] and (outs[0].extras["omega_x"], outs[0].extras["omega_y"]) == (th["omega_x"],
                                                                                          th["omega_y"])
    scores = np.asarray(th["scores"])
    assert scores.max() == pytest.approx(th["score"])                        # the argmax of the grid itself


def test_python_path_average_counts_undefined_spearman_as_zero_over_all_drugs():
    """The authors' Python averaging: a drug whose Spearman is undefined (NaN there) counts as 0 and the sum runs
    over all drugs, divided by their number; our metric gives 0 where undefined and the summary averages all drugs
    of a repeat first."""
    from dpexp import results
    from dpexp.metrics.accuracy import spearman

    y = np.array([0.3, -1.0, 2.0, 0.5])
    assert spearman(np.zeros(4), y) == 0.0                                   # constant predictions: undefined
    vals = [spearman(np.array([1.0, 0.0, 3.0, 2.0]), y), spearman(np.zeros(4), y), 0.5]
    df = pd.DataFrame({"dataset": "gdsc", "dataset_params": "protocol=python", "label": "m", "metric": "spearman",
                       "subset": ["a", "b", "c"], "repeat": 0, "n_private": 10, "value": vals})
    for col in results.GRID_COLUMNS:
        df[col] = 0.0
    agg = results.aggregate(df, "n_private", "spearman")
    assert agg["mean"].iloc[0] == pytest.approx(sum(vals) / 3)


def test_rplr_repair_none_needs_pymc():
    with pytest.raises(Exception, match="repair: none needs"):
        registry.get("algorithm", "rplr")(repair="none")
    with pytest.raises(Exception, match="cross_check needs"):
        registry.get("algorithm", "rplr")(cross_check=True)


# ------------------------------------------------------------------------------------------------ end to end
CONFIG = {
    "name": "paper_tiny", "seed": 3, "repeats": 2,
    "datasets": [
        {"name": "gdsc", "label": "ours", "params": {"d": 5, "test_pool": T, "public_pool": 4, "centre": "public"},
         "subsets": {"first": 2}},
        {"name": "gdsc", "label": "py", "params": {"d": 5, "test_pool": T, "protocol": "python",
                                                   "public_start": START}, "subsets": {"first": 2}},
        {"name": "gdsc", "label": "ml", "params": {"d": 5, "test_pool": T, "protocol": "matlab"},
         "subsets": {"first": 2}},
    ],
    "sizes": {"n_private": [0, 8], "n_public": 3, "n_test": T},
    "privacy": {"epsilon": 2.0},
    "algorithms": [
        {"name": "rplr", "label": "rplr (paper protocol)", "datasets": ["py"],
         "params": {"sigma": "data", "p1": 0.35, "p2": 0.6, "p3": 0.05, "clip_public": True,
                    "tune_aux": "preprocessed", "tune_solver": "direct", "stabilize": "none",
                    "tune_reps": [[2, 2]]}},
        {"name": "rplr", "label": "rplr (ours)", "datasets": ["ours"],
         "params": {"tune_reps": [[2, 2]], "split_reps": [[1, 1]]}},
        {"name": "plr_paper", "label": "plr (paper protocol)", "datasets": ["ml"]},
        {"name": "oplr_paper", "label": "oplr (paper protocol)", "datasets": ["ml"]},
        {"name": "fmlr_paper", "label": "fmlr (paper protocol)", "datasets": ["ml"]},
        {"name": "lr_public", "label": "base (paper protocol)", "datasets": ["py"], "params": {"d": 6}},
    ],
    "metrics": ["spearman", "n_private_requested"],
    "plots": [{"kind": "gdsc_curve", "name": "curve", "x": "n_private", "metric": "spearman",
               "options": {"baselines": ["base (paper protocol)"]}}],
}


@pytest.mark.usefixtures("isolated_cache")
def test_paper_protocol_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setenv("DPEXP_DATA_DIR", str(FIX))
    cfg = tmp_path / "paper_tiny.yaml"
    cfg.write_text(yaml.safe_dump(CONFIG, sort_keys=False))
    out = tmp_path / "res"
    r = CliRunner().invoke(main, ["run", str(cfg), "--out", str(out), "--jobs", "1", "-q"])
    assert r.exit_code == 0, r.output
    df = pd.read_csv(out / "results.csv", keep_default_na=False)
    assert (df["error"] == "").all(), df["error"].unique()[:3]
    where = df.groupby("label")["dataset_params"].agg(set).to_dict()
    assert where["rplr (ours)"] == {"centre=public,d=5,public_pool=4,test_pool=6"}
    assert all(p == {"d=5,protocol=matlab,test_pool=6"} for k, p in where.items() if k.split()[0] in
               ("plr", "oplr", "fmlr"))
    kinds = df.groupby("label")["guarantee"].agg(set).to_dict()
    assert kinds["rplr (ours)"] == {"pure"}                  # DP end to end
    assert all(v == {"none"} for k, v in kinds.items() if "paper" in k)     # every paper-protocol row
    r = CliRunner().invoke(main, ["plot", str(out), "--out", str(tmp_path / "figs"), "--format", "png"])
    assert r.exit_code == 0, r.output


def test_sensitivity_paper_stays_out_of_the_row_key():
    """``sensitivity: paper`` reproduces what every run did before the parameter existed: it is left out of the
    params string (the rows' ``params`` and the noise-stream key, ``components.key_omitted``), so the paper-protocol
    rows keep their bytes; ``tight`` given explicitly is shown (the default, unset, is not)."""
    from dpexp.components import format_params, key_omitted

    rplr = registry.get("algorithm", "rplr")
    assert key_omitted(rplr.Params) == {"sensitivity": "paper"}
    assert rplr(sigma="data", sensitivity="paper").params_str == rplr(sigma="data").params_str == "sigma=data"
    assert rplr(sensitivity="tight").params_str == "sensitivity=tight"
    assert format_params({"sensitivity": "paper", "p1": 0.35}, rplr.Params) == "p1=0.35"
    assert format_params({"sensitivity": "paper", "p1": 0.35}) == "p1=0.35,sensitivity=paper"   # no model: all shown
    for name in ("plr", "split_search", "narplr", "rlr"):
        assert key_omitted(registry.get("algorithm", name).Params) == {"sensitivity": "paper"}, name
