"""`dpexp plot` and `dpexp summarize` on a folder of experiments, the default figure folder, the record of which
run a figure folder shows, and the manifest's fast flag (issue 14, items 1 and 3)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from dpexp.cli import main
from dpexp.plotting.draw import SOURCE, figure_dir

REPO = Path(__file__).resolve().parents[2]


def _config(tmp: Path, name: str, **extra) -> Path:
    """configs/demo.yaml without the slow rplr, two repeats, three sizes."""
    raw = yaml.safe_load((REPO / "configs" / "demo.yaml").read_text(encoding="utf-8"))
    raw.update(name=name, repeats=2, **extra)
    raw["sizes"]["n_private"] = [0, 100, 200]
    raw["algorithms"] = [a for a in raw["algorithms"] if a["name"] != "rplr"]
    p = tmp / f"{name}.yaml"
    p.write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return p


def invoke(args: list[str], code: int = 0):
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == code, r.output
    return r


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """cwd-relative layout: results/{demo, other} and results/fast/demo (a --fast run of the same config)."""
    root = tmp_path_factory.mktemp("folders")
    cfg = _config(root, "demo", fast={"repeats": 1, "set": ["sizes.n_private=[0, 100]"]})
    other = _config(root, "other")
    invoke(["run", cfg, "--out", root / "results" / "demo", "--jobs", "1", "-q"])
    invoke(["run", other, "--out", root / "results" / "other", "--jobs", "1", "-q"])
    invoke(["run", cfg, "--out", root / "results" / "fast" / "demo", "--jobs", "1", "-q", "--fast"])
    return root


@pytest.mark.parametrize("results, figures", [
    ("results/X", "figures/X"), ("results/fast/X", "figures/fast/X"), ("results/fast/X/", "figures/fast/X"),
    ("/data/results/paper/X", "/data/figures/paper/X"), ("runs/X", "runs/figures/X"), ("X", "figures/X"),
    ("../results/X", "../figures/X"), ("a/results/results/X", "a/results/figures/X")])
def test_default_figure_folder_follows_the_results_folder(results, figures):
    assert figure_dir(Path(results)) == Path(figures)


def test_plot_a_folder_of_experiments(runs, monkeypatch):
    monkeypatch.chdir(runs)
    r = invoke(["plot", "results"])
    lines = r.output.strip().splitlines()
    assert len(lines) == 2, r.output                         # one line per experiment (results/fast is not one)
    assert lines[0].startswith("demo: 1 figure (demo_spearman) as png, pdf -> figures/demo")
    assert lines[1].startswith("other: 1 figure (demo_spearman) as png, pdf -> figures/other")
    assert (runs / "figures" / "demo" / "demo_spearman.png").is_file()
    assert (runs / "figures" / "other" / "demo_spearman.pdf").is_file()
    r = invoke(["plot", "results/fast"])                     # the fast run: its own folder, not figures/demo
    assert "-> figures/fast/demo" in r.output and (runs / "figures" / "fast" / "demo" / "demo_spearman.png").is_file()
    src = json.loads((runs / "figures" / "fast" / "demo" / SOURCE).read_text())
    assert src["results"] == str((runs / "results" / "fast" / "demo").resolve()) and src["experiment"] == "demo"


def test_plot_one_experiment_prints_its_files_and_warns_before_replacing_another_runs(runs, monkeypatch, tmp_path):
    monkeypatch.chdir(runs)
    out = tmp_path / "figs"
    r = invoke(["plot", "results/demo", "--out", out])
    assert r.output.split() == [str(out / "demo_spearman.png"), str(out / "demo_spearman.pdf")]
    r = invoke(["plot", "results/demo", "--out", out])       # the same run again: no warning
    assert "warning" not in r.output
    r = invoke(["plot", "results/fast/demo", "--out", out])  # another run into the same folder: said
    assert "warning: " in r.output and "held the figures of" in r.output and "results/demo" in r.output
    moved = tmp_path / "moved"                               # results and figures moved together: still matched
    shutil.copytree(runs / "results" / "other", moved / "results" / "other")
    invoke(["plot", moved / "results" / "other"])
    r = invoke(["plot", moved / "results" / "other", "--out", moved / "figures" / "other"])
    assert "warning" not in r.output


def test_a_failing_or_unfinished_experiment_does_not_stop_the_others(runs, tmp_path):
    folder = tmp_path / "results"
    shutil.copytree(runs / "results" / "demo", folder / "demo")
    shutil.copytree(runs / "results" / "other", folder / "broken")
    m = json.loads((folder / "broken" / "manifest.json").read_text())
    m["config"]["plots"][0]["metric"] = "no_such_metric"
    (folder / "broken" / "manifest.json").write_text(json.dumps(m))
    shutil.copytree(runs / "results" / "other", folder / "running")
    (folder / "running" / "results.csv").unlink()
    r = invoke(["plot", folder], code=1)
    out = r.output.splitlines()
    assert any(ln.startswith("broken: FAILED: ") and "no_such_metric" in ln for ln in out), r.output
    assert any(ln.startswith("demo: 1 figure") for ln in out) and any(ln.startswith("running: FAILED") for ln in out)
    assert "2 of 3 experiments could not be plotted" in r.output
    assert (tmp_path / "figures" / "demo" / "demo_spearman.png").is_file()
    r = invoke(["summarize", folder])
    assert "running (experiment other): no results yet (status complete)" in r.output


def test_summarize_a_folder_one_line_each_and_every_table_in_the_files(runs, tmp_path):
    md, csv = tmp_path / "all.md", tmp_path / "all.csv"
    r = invoke(["summarize", runs / "results", "--markdown", md, "--csv", csv])
    lines = r.output.strip().splitlines()
    assert len(lines) == 2
    demo = lines[0]
    assert demo.startswith("demo: complete; 2 repeats; 3 curves (1 not DP †); 0 failed cells; spearman at n = 200: ")
    assert demo.endswith(f"[{runs / 'results' / 'demo'}]")
    r = invoke(["summarize", runs / "results" / "fast"])
    assert r.output.startswith("demo: complete, --fast; 1 repeat; 3 curves")
    text = md.read_text()
    assert text.count("## ") == 2 and "## demo" in text and "## other" in text
    assert "| LR (non-private, all data) † |" in text and "† not differentially private: " in text
    import pandas as pd

    table = pd.read_csv(csv)
    assert list(table.columns[:2]) == ["experiment", "metric"] and list(table.columns[-2:]) == ["failed_rows",
                                                                                                 "guarantee"]
    assert set(table["experiment"]) == {"demo", "other"}
    assert set(table.loc[table["label"].str.startswith("plr"), "guarantee"]) == {"pure"}
    assert set(table.loc[table["label"].str.startswith("LR (non"), "guarantee"]) == {"none"}


def test_summarize_one_experiment_marks_non_dp_curves(runs):
    r = invoke(["summarize", runs / "results" / "demo", "--metric", "spearman"])
    assert "| spearman | LR (non-private, all data) † | 0 |" in r.output
    assert "| spearman | plr (private LR, no projection) | 0 |" in r.output
    footnote = r.output.rstrip().splitlines()[-1]
    assert footnote.startswith("† not differentially private: non-private baseline")


def test_the_manifest_says_whether_the_run_was_fast(runs):
    assert json.loads((runs / "results" / "fast" / "demo" / "manifest.json").read_text())["fast"] is True
    assert json.loads((runs / "results" / "demo" / "manifest.json").read_text())["fast"] is False


def test_plot_and_summarize_errors(tmp_path):
    r = invoke(["plot", tmp_path], code=2)
    assert "no dpexp results directories" in r.output and "manifest.json" in r.output
    r = invoke(["summarize", tmp_path / "missing"], code=2)
    assert "no such directory" in r.output


def test_plot_a_folder_in_one_process_draws_what_one_process_each_draws(runs, tmp_path):
    """`make figures` plots every experiment of results/ in one process (`dpexp plot results --out figures`):
    each experiment's figures land in OUT/<name>, byte for byte those of plotting it alone (nothing drawn for
    one experiment leaks into the next)."""
    together = tmp_path / "together"
    r = invoke(["plot", runs / "results", "--out", together])
    assert [ln.split(":")[0] for ln in r.output.strip().splitlines()] == ["demo", "other"]
    for name in ("other", "demo"):                           # alone, and in the other order
        alone = tmp_path / "alone" / name
        invoke(["plot", runs / "results" / name, "--out", alone])
        files = sorted(p.name for p in alone.iterdir() if not p.name.startswith("."))
        assert files == ["demo_spearman.pdf", "demo_spearman.png"]
        assert sorted(p.name for p in (together / name).iterdir() if not p.name.startswith(".")) == files
        for f in files:
            assert (together / name / f).read_bytes() == (alone / f).read_bytes(), (name, f)
        assert json.loads((together / name / SOURCE).read_text())["results"] == str((runs / "results" / name)
                                                                                     .resolve())


def test_compact_read_holds_the_same_table(runs):
    """`dpexp plot` reads the repeated string columns as categoricals (sorted categories) and no seed_key; every
    value, and every numeric dtype, is that of the plain read; `map_unique` gives the same column for both."""
    import pandas as pd

    from dpexp.results import REPEATED_COLUMNS, map_unique, read_results

    plain = read_results(runs / "results" / "demo")
    compact = read_results(runs / "results" / "demo", compact=True)
    assert list(compact.columns) == [c for c in plain.columns if c != "seed_key"]
    for c in compact.columns:
        if c in REPEATED_COLUMNS:
            assert isinstance(compact[c].dtype, pd.CategoricalDtype), c
            cats = list(compact[c].cat.categories)
            assert cats == sorted(cats), c
            assert compact[c].astype(plain[c].dtype).equals(plain[c]), c
        else:
            assert compact[c].dtype == plain[c].dtype and compact[c].equals(plain[c]), c
    for c, f in (("label", lambda s: s.split(" (")[0]), ("metric", lambda m: m == "spearman"),
                 ("params", lambda p: len(p) / 2)):
        a, b = map_unique(plain[c], f), map_unique(compact[c], f)
        assert not isinstance(b.dtype, pd.CategoricalDtype) and b.dtype == a.dtype and b.equals(a), c
    sub = compact[compact["metric"] == "spearman"]           # categories the rows no longer hold are not mapped
    assert map_unique(sub["metric"], lambda m: {"spearman": 1}[m]).eq(1).all()
