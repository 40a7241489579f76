"""`dpexp report` end to end: the page parsed with html.parser (links resolve, every experiment, provenance, privacy
marks, escaping), deterministic bytes, and bad input (one line, exit 2, nothing written)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from html.parser import HTMLParser

import pytest
from click.testing import CliRunner

from dpexp.cli import main

REPO = Path(__file__).resolve().parents[2]


class Page(HTMLParser):
    """Images, links, ids, tables (rows of cell texts) and all text of a page."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.imgs: list[str] = []
        self.hrefs: list[str] = []
        self.ids: list[str] = []
        self.tables: list[list[list[str]]] = []
        self.text: list[str] = []
        self.tags: list[str] = []
        self._cell: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        if tag == "img":
            self.imgs.append(a["src"])
        if tag == "a" and "href" in a:
            self.hrefs.append(a["href"])
        if "id" in a:
            self.ids.append(a["id"])
        if tag == "table":
            self.tables.append([])
        if tag == "tr":
            self.tables[-1].append([])
        if tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)

    def table_with(self, header: str) -> list[list[str]]:
        return [t for t in self.tables if t and header in t[0]]


def report(args: list[str]) -> tuple[int, str]:
    r = CliRunner().invoke(main, ["report", *args])
    return r.exit_code, r.output


@pytest.fixture(scope="module")
def built(runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("built") / "report"
    code, output = report([str(runs.root / "results"), "--out", str(out)])
    assert code == 0, output
    return out, Page((out / "index.html").read_text(encoding="utf-8")), output


def test_every_image_and_link_resolves_and_every_experiment_is_there(runs, built):
    out, page, output = built
    assert output.strip().endswith(str(out / "index.html"))
    assert {"exp-demo", "exp-inject"} <= set(page.ids)
    # demo: 2 figures found beside the results (figures/demo); inject: none there, drawn by the report
    assert len(page.imgs) == 4 and "inject: no figures found; drawing them into" in output
    for src in page.imgs:
        assert not src.startswith(("/", "http", "file:"))
        assert (out / src).is_file() and (out / src).stat().st_size > 5000
    for href in page.hrefs:
        if href.startswith("#"):
            assert href[1:] in page.ids
        else:
            assert (out / href).is_file(), href
    assert "script" not in page.tags  # no JavaScript needed (and none injected)
    assert (out / "figures" / "demo" / "demo_spearman.pdf").is_file()  # the PDF is linked beside the PNG


def test_provenance_summary_and_privacy(runs, built):
    _, page, _ = built
    text = "".join(page.text)
    manifest = json.loads((runs.root / "results" / "demo" / "manifest.json").read_text())
    for value in (str(manifest["root_seed"]), manifest["started"], manifest["finished"], manifest["fingerprint"],
                  f"numpy {manifest['versions']['numpy']}", "config as written", "honkela_synthetic"):
        assert value in text, value
    assert (manifest["git"]["commit"] or "unknown (not a git checkout)") in text
    # summary table of `dpexp summarize` for the plotted metric
    summaries = [t for t in page.table_with("mean") if "failed_rows" in t[0]]
    assert summaries and any(r[0].startswith("plr (private LR, no projection)") for r in summaries[0][1:])
    # privacy: the non-private curve carries the dagger, the DP one does not, and the footnote explains it
    priv = page.table_with("guarantee")[0]
    rows = {r[0]: r for r in priv[1:]}
    assert rows["LR (non-private, all data) †"][2] == "not DP"
    plr = rows["plr (private LR, no projection)"]
    # ε spent is derived from the rows: 2 where private rows were released, 0 at n_private = 0 (nothing private)
    assert plr[2] == "ε-DP (pure)" and plr[3] == "0, 2" and plr[6] == "replace-one"
    assert "† not differentially private" in text


def test_titles_and_labels_are_escaped(runs, built):
    out, page, _ = built
    raw = (out / "index.html").read_text(encoding="utf-8")
    assert "<script>" not in raw and "<img src=x" not in raw
    text = "".join(page.text)
    assert runs.evil_title in text and runs.evil_label in text  # shown as text, not interpreted


def test_same_inputs_same_bytes(runs, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for out in (a, b):  # inject's figures are drawn anew each time, demo's copied
        code, output = report([str(runs.root / "results"), "--out", str(out)])
        assert code == 0, output
    assert (a / "index.html").read_bytes() == (b / "index.html").read_bytes()
    files_a = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files_a == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert all((a / f).read_bytes() == (b / f).read_bytes() for f in files_a)


def test_one_results_table_in_memory_at_a_time(runs, tmp_path, monkeypatch):
    """The report reads each experiment's table while it renders that section and drops it before the next one:
    its memory is the largest table's, not the sum of all (make figures at full scale: millions of rows each)."""
    import gc
    import weakref

    from dpexp.results_table import ResultsTable

    real, alive, seen = ResultsTable.read.__func__, [], []

    def read(cls, d):
        gc.collect()
        seen.append(sum(r() is not None for r in alive))
        table = real(cls, d)
        alive.append(weakref.ref(table))
        return table

    monkeypatch.setattr(ResultsTable, "read", classmethod(read))
    figures = tmp_path / "figs"   # both experiments' figures drawn there first, so drawing reads its own tables
    assert report([str(runs.root / "results"), "--figures", str(figures), "--out", str(tmp_path / "a")])[0] == 0
    alive.clear(), seen.clear()
    assert report([str(runs.root / "results"), "--figures", str(figures), "--out", str(tmp_path / "b")])[0] == 0
    assert seen == [0, 0], seen   # two experiments, each read once, none alive when the next is read


def test_rerun_replaces_a_previous_report_only(runs, tmp_path):
    out = tmp_path / "rep"
    assert report([str(runs.root / "results"), "--out", str(out)])[0] == 0
    (out / "figures" / "stale.png").write_bytes(b"old")
    code, output = report([str(runs.root / "results" / "demo"), "--out", str(out)])
    assert code == 0, output
    assert not (out / "figures" / "stale.png").exists() and "exp-inject" not in (out / "index.html").read_text()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".rep.")]  # no temporary folder left


def test_figures_option_draws_missing_figures_there(runs, tmp_path):
    figs = tmp_path / "figs"
    code, output = report([str(runs.root / "results" / "inject"), "--out", str(tmp_path / "r"),
                           "--figures", str(figs)])
    assert code == 0, output
    assert (figs / "inject" / "inject_spearman.png").is_file() and (figs / "inject" / "inject_mae.pdf").is_file()
    # a second report finds them and draws nothing
    code, output = report([str(runs.root / "results" / "inject"), "--out", str(tmp_path / "r"), "--figures",
                           str(figs)])
    assert code == 0 and "warning" not in output


def test_figures_older_than_the_results_are_redrawn(runs, tmp_path):
    res = tmp_path / "results" / "demo"
    shutil.copytree(runs.root / "results" / "demo", res)
    shutil.copytree(runs.root / "figures" / "demo", tmp_path / "figures" / "demo")
    for p in (tmp_path / "figures" / "demo").iterdir():
        os.utime(p, (1_000_000, 1_000_000))
    code, output = report([str(res), "--out", str(tmp_path / "r")])
    assert code == 0 and "older than the results" in output


def test_figures_of_another_run_are_not_borrowed(runs, tmp_path):
    """results/fast/X must not show the figures of results/X: figures/fast/X holding another run's images (same
    names) is recognised from the record `dpexp plot` leaves, and the report draws its own."""
    res = tmp_path / "results" / "fast" / "demo"
    shutil.copytree(runs.root / "results" / "demo", res)
    m = json.loads((res / "manifest.json").read_text())
    m["root_seed"] += 1   # another run of the same experiment
    (res / "manifest.json").write_text(json.dumps(m))
    shutil.copytree(runs.root / "figures" / "demo", tmp_path / "figures" / "fast" / "demo")
    for p in (tmp_path / "figures" / "fast" / "demo").iterdir():
        os.utime(p)
    code, output = report([str(res), "--out", str(tmp_path / "r")])
    assert code == 0 and "were drawn from another run" in output, output
    assert str(runs.root / "results" / "demo") in output


def test_bad_inputs_one_line_exit_2_nothing_written(runs, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes").mkdir()
    out = tmp_path / "out"
    for args in ([str(empty)], [str(tmp_path / "missing")], [str(runs.root / "results"), str(empty)]):
        code, output = report([*args, "--out", str(out)])
        assert code == 2 and output.count("\n") == 1 and output.startswith("error: "), output
        assert not out.exists()
    assert "no dpexp results directories" in report([str(empty), "--out", str(out)])[1]
    # an --out that holds something else is never overwritten
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    code, output = report([str(runs.root / "results"), "--out", str(other)])
    assert code == 2 and "not written by `dpexp report`" in output and (other / "keep.txt").read_text() == "mine"
    assert sorted(p.name for p in other.iterdir()) == ["keep.txt"]
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]
    # a broken paper-values file is a user error too
    bad = tmp_path / "pv.yaml"
    bad.write_text("papers: {}\nexperiments: {demo: {figure: x}}\n")
    code, output = report([str(runs.root / "results"), "--out", str(out), "--paper-values", str(bad)])
    assert code == 2 and "numbers_in_text" in output and not out.exists()


def test_incomplete_run_is_listed_not_fatal(runs, tmp_path):
    res = tmp_path / "results"
    shutil.copytree(runs.root / "results" / "demo", res / "demo")
    (res / "half").mkdir()
    manifest = json.loads((res / "demo" / "manifest.json").read_text())
    manifest.update(experiment="half", status="running", finished=None)
    (res / "half" / "manifest.json").write_text(json.dumps(manifest))
    code, output = report([str(res), "--out", str(tmp_path / "r")])
    assert code == 0, output
    page = Page((tmp_path / "r" / "index.html").read_text())
    assert "exp-half" in page.ids and "no results table yet (run status: running)" in "".join(page.text)


def test_help_lists_the_command():
    r = CliRunner().invoke(main, ["--help"])
    assert r.exit_code == 0 and "report" in r.output
    r = CliRunner().invoke(main, ["report", "--help"])
    assert r.exit_code == 0 and "--figures" in r.output and "--paper-values" in r.output
    assert CliRunner().invoke(main, ["report"]).exit_code == 2  # RESULTS is required


def test_per_row_guarantee_columns_are_shown(runs, tmp_path):
    """The privacy issue's columns (guarantee, *_spent, privacy_note) win over the manifest's declaration."""
    import pandas as pd

    res = tmp_path / "results" / "demo"
    shutil.copytree(runs.root / "results" / "demo", res)
    shutil.copytree(runs.root / "figures" / "demo", tmp_path / "figures" / "demo")
    df = pd.read_csv(res / "results.csv", keep_default_na=False, dtype=str)
    plr = df["algorithm"] == "plr"
    df["guarantee"] = ["none" if p else ("pure" if a == "lr_public" else "none") for p, a in zip(plr, df["algorithm"])]
    df["epsilon_spent"] = ["" if p else ("0.0" if a == "lr_public" else "") for p, a in zip(plr, df["algorithm"])]
    df["delta_spent"] = ""
    df["rho_spent"] = ""
    df["privacy_note"] = ["bound taken from private rows" if p else "" for p in plr]
    df.to_csv(res / "results.csv", index=False)
    for p in (tmp_path / "figures" / "demo").iterdir():  # still newer than the rewritten results
        os.utime(p)
    code, output = report([str(res), "--out", str(tmp_path / "r")])
    assert code == 0 and "warning" not in output, output
    page = Page((tmp_path / "r" / "index.html").read_text())
    rows = {r[0]: r for r in page.table_with("guarantee")[0][1:]}
    assert rows["plr (private LR, no projection) †"][2] == "not DP"
    assert rows["plr (private LR, no projection) †"][7] == "bound taken from private rows"
    assert rows["LR, 10 public rows only"][2] == "ε-DP (pure)" and rows["LR, 10 public rows only"][3] == "0"
    assert "From the per-row guarantee columns of results.csv" in "".join(page.text)


def test_images_of_other_plots_in_the_figure_folder_are_not_shown(runs, tmp_path):
    res = tmp_path / "results" / "demo"
    shutil.copytree(runs.root / "results" / "demo", res)
    figs = tmp_path / "figures" / "demo"
    shutil.copytree(runs.root / "figures" / "demo", figs)
    shutil.copyfile(figs / "demo_spearman.png", figs / "renamed_long_ago.png")
    code, output = report([str(res), "--out", str(tmp_path / "r")])
    assert code == 0 and "warning" not in output, output
    page = Page((tmp_path / "r" / "index.html").read_text())
    assert sorted(page.imgs) == ["figures/demo/demo_mae.png", "figures/demo/demo_spearman.png"]


def test_redraw_draws_every_figure_from_the_table_the_page_reads(runs, tmp_path, monkeypatch):
    """``--redraw`` (make figures): every experiment's figures drawn into --figures, even where up-to-date ones
    exist, from the one read of its table that the page uses; the figures are those of ``dpexp plot``."""
    from dpexp.results_table import ResultsTable

    real, reads = ResultsTable.read.__func__, []

    def read(cls, d):
        reads.append(Path(d).name)
        return real(cls, d)

    monkeypatch.setattr(ResultsTable, "read", classmethod(read))
    figs = tmp_path / "figs"
    code, output = report([str(runs.root / "results"), "--figures", str(figs), "--redraw", "--out",
                           str(tmp_path / "r")])
    assert code == 0, output
    assert sorted(reads) == ["demo", "inject"]          # one read per table: drawing and page share it
    assert "demo: drawing its figures into" in output and "warning" not in output
    page = (tmp_path / "r" / "index.html").read_text(encoding="utf-8")
    assert f"drawn by `dpexp report` into {figs / 'demo'}" in page
    plotted = tmp_path / "plotted"
    assert CliRunner().invoke(main, ["plot", str(runs.root / "results"), "--out", str(plotted)]).exit_code == 0
    drawn = sorted(p.relative_to(figs) for p in figs.rglob("*.p*"))
    assert drawn and drawn == sorted(p.relative_to(plotted) for p in plotted.rglob("*.p*"))
    assert all((figs / f).read_bytes() == (plotted / f).read_bytes() for f in drawn)


def test_redraw_exits_1_when_a_figure_cannot_be_drawn(runs, tmp_path, monkeypatch):
    from dpexp.report import collect

    def broken(results_dir, fig_dir, table=None):
        raise RuntimeError("no ink")

    monkeypatch.setattr(collect, "draw_figures", broken)
    code, output = report([str(runs.root / "results" / "demo"), "--figures", str(tmp_path / "f"), "--redraw",
                           "--out", str(tmp_path / "r")])
    assert code == 1 and "could not be drawn: demo" in output
    assert "figures could not be drawn: RuntimeError: no ink" in (tmp_path / "r" / "index.html").read_text()


def test_jobs_2_gives_the_same_page_and_figures_as_jobs_1(runs, tmp_path):
    """``--jobs 2`` (make figures): the experiments are read, drawn and rendered in two worker processes, the
    largest table first; the page, every copied image and every figure drawn are the same bytes as in one process,
    and the experiments keep their order on the page.  Both run as commands: in this process, the figure check
    of tests/conftest.py draws every figure once more before it is saved, which moves a few anti-aliased pixels."""
    out = {}
    for jobs in ("1", "2"):
        proc = subprocess.run([sys.executable, "-m", "dpexp.cli", "report", str(runs.root / "results"), "--figures",
                               str(tmp_path / f"f{jobs}"), "--redraw", "--jobs", jobs, "--out", str(tmp_path / f"r{jobs}")],
                              cwd=REPO, capture_output=True, text=True)
        assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr
        out[jobs] = {p.relative_to(tmp_path / f"r{jobs}"): p.read_bytes() for p in (tmp_path / f"r{jobs}").rglob("*")
                     if p.is_file()}
        out[jobs].update({Path("drawn") / p.relative_to(tmp_path / f"f{jobs}"): p.read_bytes()
                          for p in (tmp_path / f"f{jobs}").rglob("*") if p.is_file()})
    page = {j: o.pop(Path("index.html")).decode().replace(str(tmp_path / f"f{j}"), "FIGS") for j, o in out.items()}
    assert page["1"] == page["2"]
    assert out["1"].keys() == out["2"].keys()
    assert [k for k in out["1"] if out["1"][k] != out["2"][k]] == []
    assert page["1"].index('id="exp-demo"') < page["1"].index('id="exp-inject"')


def test_jobs_2_a_figure_that_cannot_be_drawn_still_fails_the_report(runs, tmp_path):
    """The drawing error of an experiment rendered in a worker comes back: one warning, its section, exit 1."""
    res = tmp_path / "results"
    shutil.copytree(runs.root / "results", res)
    m = json.loads((res / "inject" / "manifest.json").read_text())
    m["config"]["plots"] = [{"kind": "no_such_kind", "name": "broken"}]
    (res / "inject" / "manifest.json").write_text(json.dumps(m))
    code, output = report([str(res), "--figures", str(tmp_path / "f"), "--redraw", "--jobs", "2",
                           "--out", str(tmp_path / "r")])
    assert code == 1 and "could not be drawn: inject" in output, output
    assert output.count("inject: figures could not be drawn:") == 1
    assert "figures could not be drawn" in (tmp_path / "r" / "index.html").read_text()


def test_jobs_2_a_table_that_cannot_be_read_is_one_line_exit_2_nothing_written(runs, tmp_path):
    res = tmp_path / "results"
    shutil.copytree(runs.root / "results", res)
    table = next((res / "inject").glob("results.csv*"))
    table.unlink()
    (res / "inject" / "results.csv").write_text('experiment,label\n"cut short\n')
    code, output = report([str(res), "--jobs", "2", "--out", str(tmp_path / "r")])
    assert code == 2, output
    assert output.strip().splitlines()[-1].startswith(f"error: {res / 'inject' / 'results.csv'}: not a readable "
                                                      "results table (")
    assert not (tmp_path / "r").exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".r.")]


def test_table_is_the_tag_by_tag_markup():
    """``page.table`` writes what one ``tag`` per cell writes (the form it replaced): text escaped, markup kept,
    numbers as text, numeric columns of class "num", short rows as they are."""
    from dpexp.report.page import Html, join, table, tag

    def reference(headers, rows, numeric=None):
        numeric = numeric or set()
        head = tag("tr", join(tag("th", h) for h in headers))
        body = [tag("tr", join(tag("td", c, class_="num" if i in numeric else None) for i, c in enumerate(r)))
                for r in rows]
        return f"<table>\n<thead>{head}</thead>\n<tbody>\n" + "\n".join(body) + "\n</tbody>\n</table>\n"

    rows = [["a<b", 1.5, Html("<i>x</i>"), "q\"uote & 'apos'"], ["plain", -2, "", None], ["short"], []]
    for numeric in (None, {1}, {0, 3}):
        assert table(["h&1", "h2", "h3", "h4"], rows, numeric) == reference(["h&1", "h2", "h3", "h4"], rows, numeric)
    assert table(["only"], []) == reference(["only"], [])
    assert isinstance(table(["h"], [["v"]]), Html)
