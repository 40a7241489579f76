"""The report shows a panelled figure (``options.panels``) once, links its panels drawn alone, and sets the paper's
panel beside the paper's values (issue 32)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from dpexp.cli import main

from test_report_page import Page  # tests/ folders are on sys.path (rootdir-less test modules)

FIX = Path(__file__).resolve().parents[1] / "gdsc" / "fixtures"

CONFIG = {
    "name": "tiny_panels", "title": "tiny GDSC, panels", "seed": 4, "repeats": 2,
    "datasets": [{"name": "gdsc", "params": {"d": 5, "test_pool": 6, "public_pool": 4}, "subsets": {"first": 2}}],
    "sizes": {"n_private": [0, 8, 16], "n_public": 3, "n_test": 6},
    "privacy": {"epsilon": 2.0},
    "algorithms": [
        {"name": "lr", "label": "LR (as in the paper)"},
        {"name": "plr", "label": "private LR (as in the paper)", "params": {"B_y": 5.0}},
        {"name": "plr", "label": "private LR (ours)", "params": {"B_y": 2.0}},
        {"name": "lr_public", "label": "baseline (ours)"},
    ],
    "metrics": ["spearman", "wpc", "n_private_requested"],
    "plots": [{"kind": "gdsc_curve", "name": "tiny_spearman", "x": "n_private", "metric": "spearman",
               "options": {"baselines": ["baseline (ours)"], "panels": [
                   {"name": "paper", "title": "as in the paper", "paper": True,
                    "labels": ["LR (as in the paper)", "private LR (as in the paper)"],
                    "names": {"LR (as in the paper)": "LR"}},
                   {"name": "ours", "labels": ["private LR (ours)", "baseline (ours)"],
                    "references": ["LR (as in the paper)"]}]}},
              {"kind": "gdsc_curve", "name": "tiny_wpc", "x": "n_private", "metric": "wpc"}],
}

VALUES = {
    "papers": {"p": {"citation": "Someone 2018", "text": "p.txt"}},
    "experiments": {"tiny_panels": {"figure": "Fig. 9", "numbers_in_text": True, "entries": [
        {"id": "plr_at_16", "paper": "p", "source": "§1", "quantity": "private LR at n = 16",
         "as_written": "it stays low", "compare": "claim",
         "ours": {"metric": "spearman", "where": {"label": "private LR (as in the paper)",
                                                  "n_private_requested": 16}}}]}},
}


@pytest.mark.usefixtures("isolated_cache")
def test_the_report_shows_the_panelled_figure_and_the_papers_panel_beside_its_values(tmp_path, monkeypatch):
    monkeypatch.setenv("DPEXP_DATA_DIR", str(FIX))
    cfg, values = tmp_path / "tiny_panels.yaml", tmp_path / "values.yaml"
    cfg.write_text(yaml.safe_dump(CONFIG, sort_keys=False))
    values.write_text(yaml.safe_dump(VALUES, sort_keys=False))
    res = tmp_path / "results" / "tiny_panels"
    for args in (["run", str(cfg), "--out", str(res), "--jobs", "1", "-q"],
                 ["report", str(res), "--out", str(tmp_path / "r"), "--paper-values", str(values)]):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 0, r.output
    html = (tmp_path / "r" / "index.html").read_text(encoding="utf-8")
    page = Page(html)
    # the panelled figure and the other plot are the figures; each panel alone is linked, not shown again
    assert "Figures (2)" in html
    panel_imgs = ["figures/tiny_panels/tiny_spearman_paper.png", "figures/tiny_panels/tiny_spearman_ours.png"]
    assert all(p in page.hrefs for p in panel_imgs)
    assert page.imgs == ["figures/tiny_panels/tiny_spearman.png", "figures/tiny_panels/tiny_wpc.png",
                         "figures/tiny_panels/tiny_spearman_paper.png"]
    for p in panel_imgs + page.imgs:
        assert (tmp_path / "r" / p).is_file()
    # the paper's panel sits beside the table of the paper's values
    beside = html[html.index('<div class="beside">'):]
    assert beside.index("tiny_spearman_paper.png") < beside.index("<table>") < beside.index("private LR at n = 16")
    assert html.index("The paper&#x27;s values next to ours") < html.index('<div class="beside">')
