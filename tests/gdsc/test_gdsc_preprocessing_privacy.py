"""The preprocessing rule on the GDSC family's data (docs/privacy.md "Preprocessing"): Eq. (10)'s pool centring
(the paper's) reads the private rows unpaid — every row says guarantee ``none`` with the reason; ``centre: law``
(Eq. 10's means, 0) reads none and the guarantee stands.  ``wpc`` with the dataset's σ_y over all lines (the
authors') is an evaluation against private data; ``sd: test`` reads no private line."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np

from dpexp.families.gdsc.datasets.synthetic import POOL_NOTE, HonkelaSynthetic, generate_eq10, preprocess
from dpexp.families.gdsc.datasets.staged_synth import StagedSynthetic
from dpexp.families.gdsc.metrics import WPC
from dpexp.privacy.guarantee import EVALUATION, is_evaluation, release_kind
from dpexp.results import read_results
from dpexp.types import Sizes

FIX = Path(__file__).parent / "fixtures"

CFG = textwrap.dedent("""\
    name: gdsc_pre
    seed: 4
    repeats: 2
    datasets:
      - name: honkela_synthetic
        params: {d: 3}
      - name: honkela_synthetic
        params: {d: 3, centre: law}
    sizes: {n_private: 40, n_public: 5, n_test: 10}
    privacy:
      epsilon: 2.0
    algorithms:
      - name: plr
        params: {B_y: 5.0}
    metrics: [spearman]
    """)


def test_pool_centring_is_none_with_the_note_and_the_laws_centres_keep_the_guarantee(cli, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(CFG)
    r = cli(["run", cfg, "--out", tmp_path / "o", "--jobs", "1", "-q"])
    assert r.exit_code == 0, r.output
    df = read_results(tmp_path / "o")
    law_rows = df.dataset_params.fillna("").str.contains("centre=law")
    pool, law = df[~law_rows], df[law_rows]
    assert len(pool) == len(law) > 0
    assert (pool.guarantee == "none").all() and pool.privacy_note.str.startswith(f"not DP: {POOL_NOTE}").all()
    assert (law.guarantee == "pure").all() and (law.epsilon_spent == 2.0).all()


def test_statements_and_the_laws_centring_is_row_local():
    assert HonkelaSynthetic().preprocessing().leaks and HonkelaSynthetic().preprocessing().note == POOL_NOTE
    assert not HonkelaSynthetic(centre="law").preprocessing().leaks
    assert not HonkelaSynthetic(preprocess=False).preprocessing().leaks
    assert StagedSynthetic().preprocessing().leaks and not StagedSynthetic(centre="law").preprocessing().leaks
    X, y, _ = generate_eq10(50, 4, np.random.default_rng(0))
    Xl, yl = preprocess(X, y, "law")
    np.testing.assert_array_equal(yl, y)                                       # nothing subtracted
    np.testing.assert_allclose(Xl, X / np.linalg.norm(X, axis=1, keepdims=True), rtol=1e-15)
    X2 = X.copy()
    X2[0] *= 100.0                                                            # one extreme row
    assert np.array_equal(preprocess(X2, y, "law")[0][1:], Xl[1:])            # moves no other row
    assert not np.array_equal(preprocess(X2, y, "pool")[0][1:], preprocess(X, y, "pool")[0][1:])
    # the pool centring as before (Methods 4.4): features and y at their means, rows at unit norm
    Xp, yp = preprocess(X, y)
    np.testing.assert_allclose(yp, y - y.mean(), rtol=0, atol=1e-15)
    Xc = X - X.mean(axis=0)
    np.testing.assert_allclose(Xp, Xc / np.linalg.norm(Xc, axis=1, keepdims=True), rtol=1e-15)
    sp = HonkelaSynthetic(d=3, centre="law").split("all", Sizes(20, 2, 5, 20, 2, 5), np.random.default_rng(1))
    np.testing.assert_allclose(np.linalg.norm(sp.X_private, axis=1), 1.0, rtol=1e-12)


def test_wpc_with_the_drugs_sd_over_all_lines_is_evaluation(cli, tmp_path, monkeypatch):
    assert WPC().reads_private and not WPC(sd="test").reads_private
    monkeypatch.setenv("DPEXP_DATA_DIR", str(FIX))
    cfg = tmp_path / "w.yaml"
    cfg.write_text(textwrap.dedent("""\
        name: wpc_pre
        seed: 7
        repeats: 1
        datasets:
          - name: gdsc
            params: {d: 5, test_pool: 6, public_pool: 4}
            subsets: {first: 2}
        sizes: {n_private: 16, n_public: 4, n_test: 6}
        privacy:
          epsilon: 1.0
        algorithms:
          - name: plr
            params: {B_y: 5.0}
        metrics:
          - spearman
          - wpc
          - {name: wpc, label: wpc_test, params: {sd: test}}
        """))
    r = cli(["run", cfg, "--out", tmp_path / "o", "--jobs", "1", "-q"])
    assert r.exit_code == 0, r.output
    df = read_results(tmp_path / "o")
    ev, sp, wt = (df[df.metric == m] for m in ("wpc", "spearman", "wpc_test"))
    assert len(ev) == len(sp) == len(wt) == 2
    assert (ev.guarantee == "none").all() and ev.epsilon_spent.isna().all()
    assert ev.privacy_note.map(is_evaluation).all() and ev.privacy_note.str.contains(EVALUATION).all()
    assert (ev.privacy_note.map(release_kind) == "pure").all()                # the release evaluated is DP
    assert (sp.guarantee == "pure").all() and (wt.guarantee == "pure").all()
    # sd: test is the test responses' std; the default the drug's σ_y over all lines: different values
    assert not np.array_equal(ev.value.to_numpy(), wt.value.to_numpy())
