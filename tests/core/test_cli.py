"""End-to-end CLI tests (click's CliRunner) for run, plot, summarize, validate, list, data, and --help speed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from dpexp import __version__
from dpexp.cli import main

REPO = Path(__file__).resolve().parents[2]


def _tiny_demo(tmp_path: Path) -> Path:
    text = (REPO / "configs" / "demo.yaml").read_text()
    cfg = tmp_path / "demo.yaml"
    cfg.write_text(text)
    return cfg


def test_run_plot_summarize_end_to_end(tmp_path):
    cfg = _tiny_demo(tmp_path)
    out = tmp_path / "res"
    r = CliRunner().invoke(main, ["run", str(cfg), "--out", str(out), "--repeats", "2", "--jobs", "1", "-q",
                                  "--set", "sizes.n_private=[0, 100]"])
    assert r.exit_code == 0, r.output
    assert (out / "results.csv").exists() and (out / "manifest.json").exists()
    figs = tmp_path / "figs"
    r = CliRunner().invoke(main, ["plot", str(out), "--out", str(figs), "--format", "png,pdf"])
    assert r.exit_code == 0, r.output
    assert (figs / "demo_spearman.png").stat().st_size > 10_000 and (figs / "demo_spearman.pdf").exists()
    md = tmp_path / "s.md"
    csvp = tmp_path / "s.csv"
    r = CliRunner().invoke(main, ["summarize", str(out), "--metric", "spearman", "--markdown", str(md),
                                  "--csv", str(csvp)])
    assert r.exit_code == 0, r.output
    assert "| metric | label | n_private_requested | mean | std | median | q25 | q75 | iqr |" in r.output
    assert "rplr (robust private LR)" in md.read_text() and csvp.read_text().startswith("metric,label,n_private_req")
    r = CliRunner().invoke(main, ["summarize", str(out), "--metric", "nope"])
    assert r.exit_code == 2 and "metric must be one of" in r.output


def test_plot_bad_inputs(tmp_path):
    r = CliRunner().invoke(main, ["plot", str(tmp_path)])
    assert r.exit_code == 2 and "manifest.json" in r.output


def test_validate_and_list():
    r = CliRunner().invoke(main, ["validate", str(REPO / "configs" / "demo.yaml")])
    assert r.exit_code == 0 and "OK (720 cells)" in r.output
    r = CliRunner().invoke(main, ["list"])
    assert r.exit_code == 0
    for name in ["rplr", "plr", "lr", "honkela_synthetic", "spearman", "mae", "curve"]:
        assert name in r.output
    r = CliRunner().invoke(main, ["list", "algorithms"])
    assert "DP, replace-one" in r.output and "non-private" in r.output
    assert CliRunner().invoke(main, ["list", "widgets"]).exit_code == 2


def test_data_where_and_download_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("DPEXP_DATA_DIR", str(tmp_path))
    r = CliRunner().invoke(main, ["data", "where"])
    assert r.exit_code == 0 and str(tmp_path) in r.output
    r = CliRunner().invoke(main, ["data", "download", "honkela_synthetic"])
    assert r.exit_code == 2 and "has no download" in r.output
    r = CliRunner().invoke(main, ["data", "download", "nonexistent"])
    assert r.exit_code == 2 and "unknown dataset" in r.output


def test_version_and_fast_help():
    """--help stays fast because the CLI imports no heavy library for it (checked by what is imported, not by a
    timing that a busy machine would break)."""
    r = CliRunner().invoke(main, ["--version"])
    assert __version__ in r.output
    code = ("import sys\nfrom dpexp.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print('LOADED=' + ','.join(m for m in HEAVY if m in sys.modules))")
    heavy = ("numpy", "pandas", "scipy", "matplotlib", "pymc", "distributed", "joblib", "pydantic")
    proc = subprocess.run([sys.executable, "-c", f"HEAVY = {heavy!r}\n{code}"], capture_output=True, text=True,
                          cwd=REPO)
    assert proc.returncode == 0 and "run" in proc.stdout and "plot" in proc.stdout
    assert "LOADED=\n" in proc.stdout, proc.stdout[-300:]


def test_bad_jobs_value(tmp_path):
    cfg = _tiny_demo(tmp_path)
    r = CliRunner().invoke(main, ["run", str(cfg), "--out", str(tmp_path / "x"), "--jobs", "0"])
    assert r.exit_code == 2 and "--jobs" in r.output


def test_readme_run_examples_are_valid(tmp_path):
    """Every `dpexp run configs/demo.yaml ...` line of the README's usage block must at least dry-run (the --set
    example once named rplr's p1, which conflicts with the demo's split: auto and exited 2)."""
    import re
    import shlex

    block = re.search(r"## Usage\s+```bash\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    assert block
    lines = [ln.split("  #")[0].strip() for ln in block.group(1).splitlines()]
    runs = [ln for ln in lines if ln.startswith("dpexp run configs/demo.yaml")]
    assert any("--set" in ln for ln in runs)
    for ln in runs:
        args = shlex.split(ln)[1:]
        args = [str(REPO / a) if a == "configs/demo.yaml" else a for a in args]
        r = CliRunner().invoke(main, args + ["--dry-run"])
        assert r.exit_code == 0, (ln, r.output)


def test_curve_baseline_has_its_own_colour(tmp_path, monkeypatch):
    """The demo's dashed public-only baseline was drawn in C0 like the first curve (axhline does not advance the
    colour cycle), so 'LR (non-private)' and the baseline looked like one series."""
    from types import SimpleNamespace

    from dpexp import results
    from dpexp.plotting import curve as plotting

    cfg = _tiny_demo(tmp_path)
    out = tmp_path / "res"
    r = CliRunner().invoke(main, ["run", str(cfg), "--out", str(out), "--repeats", "2", "--jobs", "1", "-q",
                                  "--set", "sizes.n_private=[0, 100]"])
    assert r.exit_code == 0, r.output
    figs = []
    from dpexp.plotting import layout

    monkeypatch.setattr(layout, "save", lambda fig, *a, **k: figs.append(fig) or [])
    spec = SimpleNamespace(kind="curve", metric="spearman", x="n_private", title=None,
                           options={"baselines": ["LR, 10 public rows only"]})
    plotting.curve(results.read_results(out), spec, results.read_manifest(out), tmp_path / "f", ["png"])
    import matplotlib.colors as mcolors

    handles, labels = figs[0].axes[0].get_legend_handles_labels()
    assert len(labels) == 4 and any("baseline" in lab for lab in labels)
    colours = [mcolors.to_hex(h.get_color() if hasattr(h, "get_color") else h[0].get_color()) for h in handles]
    assert len(set(colours)) == len(colours), dict(zip(labels, colours))


def test_unwritable_output_paths_are_one_line_errors(tmp_path):
    """--out / --csv / --markdown under a regular file gave a NotADirectoryError traceback (exit 1); a missing
    parent directory of --csv / --markdown gave pandas' OSError traceback instead of being created."""
    cfg = _tiny_demo(tmp_path)
    res = tmp_path / "res"
    r = CliRunner().invoke(main, ["run", str(cfg), "--out", str(res), "--repeats", "1", "--jobs", "1", "-q",
                                  "--set", "sizes.n_private=[0]"])
    assert r.exit_code == 0, r.output
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    for args in (["run", str(cfg), "--out", str(blocker / "x"), "-q"], ["plot", str(res), "--out", str(blocker / "x")],
                 ["summarize", str(res), "--csv", str(blocker / "s.csv")]):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 2, (args, r.output)
        assert "Traceback" not in r.output and r.output.startswith(f"error: {blocker}")
        assert len(r.output.strip().splitlines()) == 1, r.output
    r = CliRunner().invoke(main, ["summarize", str(res), "--csv", str(tmp_path / "new" / "s.csv"),
                                  "--markdown", str(tmp_path / "new2" / "s.md")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "new" / "s.csv").exists() and (tmp_path / "new2" / "s.md").exists()


def test_interrupt_exits_130_not_1(tmp_path, monkeypatch):
    """Ctrl-C ended in click's 'Aborted!' with exit 1, the code README gives to 'some cells failed'."""
    from dpexp import runner

    def interrupted(*_a, **_k):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run_experiment", interrupted)
    r = CliRunner().invoke(main, ["run", str(_tiny_demo(tmp_path)), "--out", str(tmp_path / "o"), "-q"])
    assert r.exit_code == 130, r.output
    assert "interrupted" in r.output and "rerun the same command to resume" in r.output
