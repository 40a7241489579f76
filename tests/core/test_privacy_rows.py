"""What every results row says about privacy (issue 10): the guarantee columns, seeded vs secure noise, the
manifest's privacy summary, datasets whose preprocessing leaks, old run directories, and `dpexp list`."""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from dpexp.cli import main
from dpexp.components import TREATED_AS, Preprocessing
from dpexp.privacy.guarantee import GUARANTEE_COLUMNS, NON_PRIVATE, Guarantee
from dpexp.results import COLUMNS, read_results
from dpexp.runner import cell_guarantee

CFG = textwrap.dedent("""\
    name: rows
    seed: 11
    repeats: 2
    datasets:
      - name: honkela_synthetic
        params: {d: 2, centre: law}
    sizes:
      n_private: [0, 40]
      n_public: 5
      n_test: 10
    privacy:
      epsilon: [1.0, 2.0]
    algorithms:
      - name: lr
      - name: rplr
        params: {p1: 0.35, p2: 0.6, p3: 0.05, omega_x: 1.0, omega_y: 1.0}
      - name: rplr
        label: paper
        params: {p1: 0.35, p2: 0.6, p3: 0.05, omega_x: 1.0, omega_y: 1.0, sigma: data}
      - name: plr
    metrics: [mae]
    """)



@pytest.fixture
def cfg(write_config):
    return write_config(CFG, "rows")


def test_guarantee_columns_on_every_row(cli, cfg, tmp_path):
    assert cli(["run", str(cfg), "--out", str(tmp_path / "a"), "--jobs", "1", "-q"]).exit_code == 0
    assert COLUMNS[COLUMNS.index("delta") + 1:COLUMNS.index("delta") + 6] == list(GUARANTEE_COLUMNS)
    df = read_results(tmp_path / "a")
    assert set(df["guarantee"]) <= {"pure", "none"} and (df["guarantee"] != "").all()
    # centre: law reads no private row (Eq. 10's means are 0): the algorithms' guarantees stand, no preprocessing note
    assert not df["privacy_note"].str.contains("centring").any()
    rplr = df[(df.label.str.startswith("rplr")) & (df.n_private == 40)]
    assert (rplr.guarantee == "pure").all() and (rplr.epsilon_spent == rplr.epsilon).all()
    assert rplr.delta_spent.eq(0).all() and rplr.rho_spent.isna().all()
    paper = df[(df.label == "paper") & (df.n_private == 40)]
    assert (paper.guarantee == "none").all() and paper.epsilon_spent.isna().all()
    assert paper.privacy_note.str.startswith("not DP: clipping σ from private rows").all()
    assert (df[df.n_private == 0].query("algorithm != 'lr'").epsilon_spent == 0).all()   # nothing private released
    lr = df[df.algorithm == "lr"]
    assert (lr.guarantee == "none").all() and lr.privacy_note.str.startswith("not DP: non-private baseline").all()
    # the manifest's summary is derived from those rows
    man = json.loads((tmp_path / "a" / "manifest.json").read_text())
    got = {(g["label"], g["epsilon"], g["guarantee"], g["epsilon_spent"]) for g in man["privacy_summary"]["guarantees"]}
    assert ("paper", 2.0, "none", None) in got and ("rplr[omega_x=1.0,omega_y=1.0,p1=0.35,p2=0.6,p3=0.05]", 2.0,
                                                     "pure", 2.0) in got
    assert sum(g["rows"] for g in man["privacy_summary"]["guarantees"]) == len(df)
    ds = man["privacy_summary"]["datasets"][0]
    assert ds["preprocessing"]["treated_as"] == TREATED_AS[False] and "fresh data set" in ds["release_point"]


def test_seeded_noise_is_reproducible_and_says_so(cli, cfg, tmp_path):
    for out in ("a", "b"):
        assert cli(["run", str(cfg), "--out", str(tmp_path / out), "--jobs", "1", "-q"]).exit_code == 0
    assert (tmp_path / "a" / "results.csv").read_bytes() == (tmp_path / "b" / "results.csv").read_bytes()
    man = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert man["noise"] == "seeded" and "anyone with this manifest can regenerate" in man["noise_statement"]
    assert (read_results(tmp_path / "a")["seed_key"] != "").all()


def test_secure_noise_records_no_seed_and_is_not_reproducible(cli, cfg, tmp_path):
    for out in ("a", "b"):
        r = cli(["run", str(cfg), "--out", str(tmp_path / out), "--jobs", "1", "-q", "--noise", "secure"])
        assert r.exit_code == 0, r.output
    a, b = read_results(tmp_path / "a"), read_results(tmp_path / "b")
    assert (a["seed_key"] == "").all() and (b["seed_key"] == "").all()
    man = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert man["noise"] == "secure" and man["privacy_summary"]["noise"] == "secure"
    assert "no seed that regenerates it" in man["noise_statement"] and "noise=secure" in man["overrides"]
    private = (a.algorithm != "lr") & (a.n_private == 40)
    assert not np.array_equal(a[private].value.to_numpy(), b[private].value.to_numpy())   # fresh OS noise
    np.testing.assert_array_equal(a[a.algorithm == "lr"].value, b[b.algorithm == "lr"].value)   # data still seeded
    np.testing.assert_array_equal(a.guarantee, b.guarantee)
    np.testing.assert_array_equal(a.epsilon_spent.fillna(-1), b.epsilon_spent.fillna(-1))


def test_config_key_noise_secure_and_bad_mode(cli, cfg, tmp_path):
    cfg.write_text(CFG + "noise: secure\n")
    assert cli(["run", str(cfg), "--out", str(tmp_path / "a"), "--jobs", "1", "-q"]).exit_code == 0
    assert (read_results(tmp_path / "a")["seed_key"] == "").all()
    cfg.write_text(CFG + "noise: os\n")
    r = CliRunner().invoke(main, ["validate", str(cfg)])
    assert r.exit_code == 2 and "noise" in r.output


def test_leaking_preprocessing_downgrades_every_row(cli, cfg, tmp_path, monkeypatch):
    from dpexp.families.gdsc.datasets.synthetic import HonkelaSynthetic

    leak = Preprocessing("bounds from the min and max of all rows", "test statement", leaks=True)
    monkeypatch.setattr(HonkelaSynthetic, "preprocessing", lambda self: leak)
    assert cli(["run", str(cfg), "--out", str(tmp_path / "a"), "--jobs", "1", "-q"]).exit_code == 0
    df = read_results(tmp_path / "a")
    assert (df["guarantee"] == "none").all() and df["epsilon_spent"].isna().all()
    assert df["privacy_note"].str.contains("bounds from the min and max of all rows").all()


def test_cell_guarantee_fallbacks():
    class Alg:
        private = True

    class Ref:
        private = False

    class Out:
        guarantee = None

    assert cell_guarantee(Alg(), RuntimeError("x")).reason == "cell failed: nothing released"
    assert cell_guarantee(Ref(), Out()) == NON_PRIVATE
    assert cell_guarantee(Alg(), Out()).reason == "algorithm reported no guarantee"
    g = Guarantee.pure(1.0)
    assert Preprocessing("n", leaks=False).apply(g).note == "n" and Preprocessing("").apply(g) == g


def test_old_results_schema_is_not_resumed_into(cli, cfg, tmp_path):
    out = tmp_path / "a"
    assert cli(["run", str(cfg), "--out", str(out), "--jobs", "1", "-q"]).exit_code == 0
    man = json.loads((out / "manifest.json").read_text())
    del man["results_schema"]                        # as written before the guarantee columns
    (out / "manifest.json").write_text(json.dumps(man))
    r = CliRunner().invoke(main, ["run", str(cfg), "--out", str(out), "--jobs", "1", "-q"])
    assert r.exit_code == 2 and "results schema 1" in r.output and "--force" in r.output
    assert cli(["run", str(cfg), "--out", str(out), "--jobs", "1", "-q", "--force"]).exit_code == 0


def test_list_shows_guarantees_and_preprocessing(cli):
    r = cli(["list", "algorithms", "rplr"])
    assert "guarantee: pure ε-DP, replace-one" in r.output and "sigma: data → not DP" in r.output
    assert "privacy_spent" not in r.output
    r = cli(["list", "algorithms"])
    assert "pure ε-DP, replace-one" in r.output and "not DP (non-private baseline)" in r.output
    r = cli(["list", "datasets", "honkela_synthetic"])
    assert "one row's epsilon covers" in r.output


RANGES = "declared public ranges (x_range, y_range; the values shown are an example)"


@pytest.mark.parametrize("name, options", [
    ("honkela_synthetic", {"paper (default, centre: pool)": True, "centre: law": False, "preprocess: false": False}),
    ("rplr_synth_file", {"paper (default, centre: pool)": True, "centre: law": False, "preprocess: false": False}),
    ("bikeshare", {"paper (default)": True, RANGES: False}),
    ("stock_exchange", {"paper (default)": True, RANGES: False}),
    ("redwine", {"paper (default)": True,
                 "declared public ranges (ranges: {column: [lo, hi]} for every column)": False}),
    ("gdsc", {"ours (default, centre: public)": False, "paper (centre: all)": True,
              "paper protocol (protocol: python)": True, "paper protocol (protocol: matlab)": True}),
    ("opportunity", {"default parameters": True}),
    ("carbon_nanotubes", {"default parameters": False}),
])
def test_list_datasets_states_each_preprocessing_option_and_whether_it_is_public(cli, name, options):
    """`dpexp list datasets NAME`: one line per preprocessing option, built from the option's parameters, saying
    whether it reads private rows unpaid (guarantee none) or is public (the guarantee stands)."""
    out = " ".join(cli(["list", "datasets", name]).output.split())   # unwrapped
    for label, leaks in options.items():
        assert f"preprocessing, {label} [{TREATED_AS[leaks]}]" in out, (label, out[:600])
    assert out.count("preprocessing, ") == len(options)


def test_demo_writes_the_guarantee_columns(cli, tmp_path):
    """`dpexp run configs/demo.yaml` (fast) writes the guarantee columns; every private row says what it cost."""
    from pathlib import Path

    demo = Path(__file__).resolve().parents[2] / "configs" / "demo.yaml"
    r = cli(["run", str(demo), "--out", str(tmp_path / "d"), "--jobs", "1", "-q", "--fast",
              "--set", "sizes.n_private=[0, 100]", "--set", "algorithms[1].params={p1: 0.35, p2: 0.6, p3: 0.05, "
              "omega_x: 1.0, omega_y: 1.0}"])
    assert r.exit_code == 0, r.output
    df = pd.read_csv(tmp_path / "d" / "results.csv", keep_default_na=False)
    assert set(GUARANTEE_COLUMNS) <= set(df.columns)
    private = df[df.algorithm.isin(["rplr", "plr"])]
    assert (private.guarantee == "pure").all() and (private.epsilon_spent != "").all()
