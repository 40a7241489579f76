"""End to end: a tiny SLR config (fixtures) through `dpexp run` -> `dpexp plot` with click's CliRunner."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from click.testing import CliRunner

from dpexp.cli import main

FIX = Path(__file__).parent / "fixtures"

CONFIG = """
name: slr_tiny
title: tiny SLR end-to-end
seed: 7
repeats: 2
trials: 20
datasets:
  - name: opportunity
  - name: bikeshare
    subsets: {first: 3}
  - name: stock_exchange
sizes: {n_private: all, n_test: 0}
privacy: {epsilon: [1, 8]}
algorithms:
  - {name: ols, label: OLS}
  - {name: noisy_stats, label: NoisyStats}
  - {name: dp_exp_theil_sen, label: DPExpTheilSen, params: {k: all}}
  - {name: dp_wide_theil_sen, label: DPWideTheilSen, params: {k: 1, theta: [0.01, 0.1]}}
  - {name: oi_mos, label: OI}
metrics:
  - error_bound_se
  - error_bound
  - failure_rate
  - ols_se
  - ols_estimate
  - n_var_x
  - {name: output_quantile, label: q10, params: {level: 10}}
  - {name: output_quantile, label: q50, params: {level: 50}}
  - {name: output_quantile, label: q90, params: {level: 90}}
plots:
  - {kind: slr_ecdf, name: ecdf}
  - {kind: slr_sorted, name: sorted, options: {labels: [DPExpTheilSen, OI]}}
  - {kind: slr_output_ecdf, name: outputs, options: {facet: dataset}}
  - {kind: slr_failure, name: failure_eps, options: {mode: epsilon}}
  - {kind: slr_failure, name: failure_sorted, options: {mode: sorted, epsilons: [8]}}
  - {kind: slr_curve, name: curve_theta, x: theta, metric: error_bound, options: {facet: epsilon}}
"""


def test_slr_run_and_plot(tmp_path, monkeypatch):
    monkeypatch.setenv("DPEXP_DATA_DIR", str(FIX))
    cfg = tmp_path / "slr_tiny.yaml"
    cfg.write_text(CONFIG)
    out, figs = tmp_path / "res", tmp_path / "figs"
    runner = CliRunner()
    r = runner.invoke(main, ["run", str(cfg), "--out", str(out), "--jobs", "1"])
    assert r.exit_code == 0, r.output
    df = pd.read_csv(out / "results.csv")
    assert set(df["dataset"]) == {"opportunity", "bikeshare", "stock_exchange"}
    assert df["error"].isna().all(), df[df["error"].notna()][["label", "error"]].head().to_string()
    # OLS has zero error against itself; NoisyStats may fail but never reports a failure as a number
    ols = df[(df["label"] == "OLS") & (df["metric"] == "error_bound")]["value"]
    assert (ols.abs() < 1e-12).all()
    fr = df[df["metric"] == "failure_rate"]["value"]
    assert fr.between(0, 1).all()
    assert set(df["n_test"]) == {2} and set(df["d"]) == {1}
    r = runner.invoke(main, ["plot", str(out), "--out", str(figs), "--format", "png"])
    assert r.exit_code == 0, r.output
    for stem in ("ecdf", "sorted", "outputs", "failure_eps", "failure_sorted", "curve_theta"):
        assert (figs / f"{stem}.png").stat().st_size > 1000
