"""End to end: a tiny DCA config through `dpexp run` → `dpexp plot` (fixtures made up in tmp_path)."""

from __future__ import annotations

import pandas as pd
from click.testing import CliRunner
from test_dca_uci import write_wine  # tests/ is on sys.path (rootdir-less test modules)

from dpexp.cli import main

ACCURACY = """
name: tiny_dca
seed: 1
repeats: 2
datasets:
  - name: redwine
sizes: {n_private: 60, n_public: 0, n_test: 20}
privacy: {epsilon: [1.0, 10.0], delta: 1.0e-4}
algorithms:
  - {name: np, label: NP}
  - {name: ta, label: TA}
  - {name: ddp_proj, label: "DDP proj", params: {n_compute: 3, aux_repeats: 2}}
  - {name: input_perturbation, label: IP}
metrics: [mae]
plots:
  - {kind: dca_accuracy, name: acc, metric: mae}
"""

SCALING = """
name: tiny_scaling
seed: 1
repeats: 1
datasets:
  - name: dca_clients
    params: {n_clients: [50, 200], d: [3, 30]}
sizes: {n_private: all, n_public: 0, n_test: 1}
privacy: {epsilon: 1.0, delta: 1.0e-4}
algorithms:
  - {name: dca_timing, label: plain, params: {n_compute: 4}}
  - {name: dca_timing, label: aes, params: {n_compute: 4, encrypt: true}}
metrics: [failure_rate]
plots:
  - {kind: dca_table, name: table1, metric: seconds}
  - {kind: dca_noise_factor, name: fig1b, options: {T: [0, 5]}}
"""


def test_accuracy_config_run_and_plot(tmp_path, monkeypatch, write_config):
    write_wine(tmp_path / "data" / "wine_quality", "winequality-red.csv", 100, 4)
    monkeypatch.setenv("DPEXP_DATA_DIR", str(tmp_path / "data"))
    out, figs = tmp_path / "res", tmp_path / "figs"
    r = CliRunner().invoke(main, ["run", str(write_config(ACCURACY)), "--out", str(out), "--jobs", "1", "-q"])
    assert r.exit_code == 0, r.output
    df = pd.read_csv(out / "results.csv")
    assert df["error"].isna().all(), df["error"].dropna().unique()
    assert set(df["algorithm"]) == {"np", "ta", "ddp_proj", "input_perturbation"}
    assert (df[df.metric == "calibration_analytic"]["value"] == 1.0).all()
    assert {"omega_x", "omega_y", "noise_factor"} <= set(df.metric)
    r = CliRunner().invoke(main, ["plot", str(out), "--out", str(figs), "--format", "png"])
    assert r.exit_code == 0, r.output
    assert (figs / "acc.png").stat().st_size > 1000


def test_scaling_config_run_and_plot(tmp_path, write_config):
    out, figs = tmp_path / "res", tmp_path / "figs"
    r = CliRunner().invoke(main, ["run", str(write_config(SCALING)), "--out", str(out), "--jobs", "1", "-q"])
    assert r.exit_code == 0, r.output
    df = pd.read_csv(out / "results.csv")
    sec = df[df.metric == "seconds"]
    assert len(sec) == 8 and (sec["value"] > 0).all()
    assert sorted(sec["n_private"].unique()) == [50, 200] and sorted(sec["d"].unique()) == [3, 30]
    r = CliRunner().invoke(main, ["plot", str(out), "--out", str(figs), "--format", "png"])
    assert r.exit_code == 0, r.output
    md = (figs / "table1.md").read_text()
    assert "N=200" in md and "plain" in md and "aes" in md
    assert (figs / "table1.png").exists() and (figs / "fig1b.png").exists()
