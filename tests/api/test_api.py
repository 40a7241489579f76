"""The public Python API (dpexp.run / dpexp.load / Results): the same code path and files as `dpexp run`."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

import dpexp
from dpexp.errors import ConfigError, UserError

REPO = Path(__file__).resolve().parents[2]


def test_dir_lists_the_api():
    assert {"run", "load", "Results", "estimators"} <= set(dir(dpexp))


def test_run_demo_returns_the_tidy_frame_and_plots(tmp_path):
    # the line, with a temporary out dir (and two sizes to keep it short)
    r = dpexp.run(REPO / "configs" / "demo.yaml", out=tmp_path / "demo", repeats=2, sizes__n_private=[0, 100])
    assert isinstance(r.frame, pd.DataFrame) and set(r.frame["repeat"]) == {0, 1}
    assert set(r.frame["n_private"]) == {0, 100}
    assert {"algorithm", "metric", "value", "epsilon_spent", "guarantee"} <= set(r.frame.columns)
    assert r.manifest["experiment"] == "demo" and r.failed_cells == 0
    # the overrides are recorded as the CLI records --set
    assert "sizes.n_private=[0, 100]" in r.manifest["overrides"]
    figs = r.plot(tmp_path / "figs")
    assert [p.name for p in figs] == ["demo_spearman.png"] and figs[0].stat().st_size > 10_000
    tab = r.summary(metric="spearman")
    assert set(tab["label"]) >= {"rplr (robust private LR)"}
    back = dpexp.load(tmp_path / "demo")
    pd.testing.assert_frame_equal(back.frame, r.frame)
    assert re.match(r"Results\('.*demo': demo, \d+ rows, 0 failed cells\)", repr(back))


def test_run_equals_the_cli_bytes(tmp_path):
    """dpexp.run and `dpexp run` write the same results.csv bytes for the same config and seed."""
    from click.testing import CliRunner

    from dpexp.cli import main

    cfg = {"name": "tiny", "seed": 5, "repeats": 2, "datasets": [{"name": "honkela_synthetic", "params": {"d": 3}}],
           "sizes": {"n_private": [20, 40], "n_public": 5, "n_test": 20}, "privacy": {"epsilon": 1.0},
           "algorithms": [{"name": "plr"}, {"name": "lr"}], "metrics": ["mae"]}
    r = dpexp.run(cfg, out=tmp_path / "api")
    import yaml

    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(cfg))
    res = CliRunner().invoke(main, ["run", str(path), "--out", str(tmp_path / "cli"), "-q", "--jobs", "1"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "api" / "results.csv").read_bytes() == (tmp_path / "cli" / "results.csv").read_bytes()
    assert len(r.frame) == 2 * 2 * 2   # repeats x sizes x algorithms, one metric


def test_run_rejects_bad_input(tmp_path):
    with pytest.raises(ConfigError, match=r"privacy.epsilon must be > 0"):
        dpexp.run(REPO / "configs" / "demo.yaml", out=tmp_path / "x", privacy__epsilon=-1)
    with pytest.raises(ConfigError, match="config must be a YAML path or a dict"):
        dpexp.run(42, out=tmp_path / "x")
    with pytest.raises(UserError, match="seed must be an integer"):
        dpexp.run(REPO / "configs" / "demo.yaml", out=tmp_path / "x", seed=-3)
    with pytest.raises(UserError, match="no manifest.json"):
        dpexp.load(tmp_path)


def test_make_demo_prints_a_short_summary_and_writes_the_table(tmp_path):
    """`make demo` ends with `dpexp summarize ... --brief`: one line and where the full table went (issue 30)."""
    from click.testing import CliRunner

    from dpexp.cli import main

    make = (REPO / "Makefile").read_text()
    line = next(ln.strip() for ln in make.splitlines() if "dpexp summarize results/demo" in ln)
    assert line.endswith("--metric spearman --markdown results/demo/summary.md --brief"), line
    dpexp.run(REPO / "configs" / "demo.yaml", out=tmp_path / "demo", repeats=2, sizes__n_private=[0, 100])
    md = tmp_path / "summary.md"
    r = CliRunner().invoke(main, ["summarize", str(tmp_path / "demo"), "--metric", "spearman", "--markdown", str(md),
                                  "--brief"])
    assert r.exit_code == 0, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("demo: complete, --set sizes.n_private=[0, 100]; 2 repeats; 4 curves")
    assert "spearman at n = 100:" in lines[0] and lines[1] == f"full table: {md}"
    assert "| metric | label |" in md.read_text()
