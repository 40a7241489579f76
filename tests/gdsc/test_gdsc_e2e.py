"""End to end: a tiny GDSC config (fixture data, 2 drugs, 2 repeats) through `dpexp run` -> `dpexp plot`."""

from pathlib import Path
from types import SimpleNamespace

import pandas as pd
from click.testing import CliRunner

from dpexp.cli import main
from dpexp.families.gdsc import plots as gdsc_plots
from dpexp.results import read_manifest, read_results

FIX = Path(__file__).parent / "fixtures"

CONFIG = {
    "name": "gdsc_tiny",
    "title": "tiny GDSC fixture",
    "seed": 7,
    "repeats": 2,
    "datasets": [{"name": "gdsc", "params": {"d": 5, "test_pool": 6, "public_pool": 4}, "subsets": {"first": 2}}],
    "sizes": {"n_private": [0, 8, 16], "n_public": [2, 4], "n_test": 6},
    "privacy": {"epsilon": [1.0, 2.0]},
    "algorithms": [
        {"name": "rplr", "label": "rplr"},
        {"name": "plr", "params": {"B_y": 5.0}},
        {"name": "oplr", "params": {"bound_y": 5.0}},
        {"name": "fmlr", "params": {"bound_y": 5.0}},
        {"name": "lr"},
        {"name": "rlr"},
        {"name": "lr_public", "label": "base d5"},
        {"name": "lr_public", "label": "base d6", "params": {"d": 6}},
    ],
    "metrics": ["spearman", "wpc", "n_private_requested", "n_public_requested"],
    "plots": [
        {"kind": "gdsc_curve", "name": "curve", "x": "n_private", "metric": "spearman",
         "options": {"baselines": ["base d5", "base d6"]}},
        {"kind": "gdsc_tradeoff", "name": "tradeoff", "x": "n_private", "metric": "spearman",
         "options": {"y": "epsilon", "baseline": {"algorithm": "lr_public", "n_public": 4}}},
        {"kind": "gdsc_tradeoff", "name": "tradeoff_pub", "x": "n_private", "metric": "wpc",
         "options": {"y": "n_public", "baseline": {"algorithm": "lr_public", "n_public": 4}}},
        {"kind": "gdsc_thresholds", "name": "thr", "x": "n_private", "options": {"metrics": ["B_x", "B_y"]}},
        {"kind": "param_heatmap", "name": "heat", "x": "n_private", "metric": "spearman",
         "options": {"y": "epsilon", "algorithm": "oplr"}},
    ],
}


def test_tiny_gdsc_run_and_plot(run_config, tmp_path, monkeypatch):
    monkeypatch.setenv("DPEXP_DATA_DIR", str(FIX))
    out, df = run_config(CONFIG)
    figs = tmp_path / "figs"
    assert set(df["subset"]) == {"Drug_1", "Drug_5"}
    errors = df[df["error"] != ""]
    assert errors.empty, errors["error"].unique()[:3]
    req = df[df["metric"] == "n_private_requested"]
    assert set(req["value"].astype(float)) == {0.0, 8.0, 16.0}
    assert (req["n_private"] <= req["value"].astype(float)).all()       # untested lines dropped per drug
    r = CliRunner().invoke(main, ["plot", str(out), "--out", str(figs), "--format", "png"])
    assert r.exit_code == 0, r.output
    for stem in ("curve", "tradeoff", "tradeoff_pub", "thr", "heat"):
        assert (figs / f"{stem}.png").stat().st_size > 1000
    # Fig. 4 as the paper gives it, a table: the thresholds' means per (method, ε) and n, as the rows hold them
    table = (figs / "thr.md").read_text().splitlines()
    rows = df[(df["metric"] == "B_x") & (df["algorithm"] == "rplr")]   # the plot's default algorithm
    assert table[0].startswith("| method, ε (B_x / B_y) |") and len(table) == 2 + rows.groupby(
        ["label", "epsilon"], dropna=False).ngroups
    lab, e, n = rows[rows["label"] == "rplr"].iloc[0][["label", "epsilon", "n_private_requested"]]
    sel = lambda m: df[(df["metric"] == m) & (df["label"] == lab) & (df["epsilon"] == e)
                       & (df["n_private_requested"] == n)]["value"].astype(float)
    want = f"{sel('B_x').mean():.3g} / {sel('B_y').mean():.3g}"
    row = next(r for r in table if r.startswith(f"| {lab}, ε = {float(e):g} |"))
    col = 1 + sorted(rows["n_private_requested"].astype(float).unique().tolist()).index(float(n))
    assert row.split(" | ")[col].strip(" |") == want

    # epsilon and n_public both vary: one panel per (epsilon, n_public), never averaged over them
    captured = {}
    monkeypatch.setattr(gdsc_plots, "finish_plot", lambda fig, *a, **k: captured.setdefault("fig", fig) and [])
    spec = SimpleNamespace(options={"baselines": ["base d5", "base d6"]}, metric="spearman", x="n_private")
    gdsc_plots.gdsc_curve(read_results(out), spec, read_manifest(out), tmp_path / "c", ["png"])
    titles = [ax.get_title() for ax in captured["fig"].axes if ax.get_visible()]
    assert titles == ["ε = 1, n_public = 2", "ε = 1, n_public = 4", "ε = 2, n_public = 2", "ε = 2, n_public = 4"]
    lines = captured["fig"].axes[0].get_lines()
    assert lines and all(len(line.get_xdata()) in (2, 3) for line in lines)   # curves over n, or baselines


def test_requested_sizes_mapping():
    from dpexp.families.gdsc.plots import requested_sizes

    rows = []
    for req, seen in ((100, 90), (200, 90)):           # two cells that saw the same size: told apart by order
        for metric, value in (("spearman", req / 1000), ("n_private_requested", req)):
            rows.append({"experiment": "e", "subset": "a", "label": "x", "n_private": seen, "n_public": 3,
                         "repeat": 0, "metric": metric, "value": value, "error": ""})
    out = requested_sizes(pd.DataFrame(rows))
    assert out["n_private"].tolist() == [100, 200] and out["value"].tolist() == [0.1, 0.2]
