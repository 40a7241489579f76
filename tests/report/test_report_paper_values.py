"""docs/paper_values.yaml: every quote is in the paper's text, every entry fits its config; and the computations of
'ours' on a small table with known values."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from dpexp.errors import UserError
from dpexp.report import paper
from dpexp.report.paper import Ours, check_holds, compute, params_match

REPO = Path(__file__).resolve().parents[2]


def _papers_dir() -> Path | None:
    for d in (os.environ.get("DPEXP_PAPERS_DIR"), REPO.parent / "shared" / "papers", REPO / ".." / "shared/papers"):
        if d and Path(d).is_dir():
            return Path(d)
    return None


def _words(text: str) -> str:
    """Lower-case word stream; a token with digits or formula symbols becomes '#' (breaks runs of words)."""
    text = text.replace("’", "'").replace("“", '"').replace("”", '"')
    out = []
    for tok in text.lower().split():
        tok = tok.strip(".,;:()\"'")
        out.append(tok if re.fullmatch(r"[a-z]+(?:[-'][a-z]+)*", tok) else "#")
    return " " + " ".join(out) + " "


@pytest.fixture(scope="module")
def values() -> paper.PaperValues:
    pv = paper.load()
    assert pv is not None
    return pv


def test_every_quote_is_in_the_papers_text(values):
    """Each run of >= 3 plain words of `as_written`, and each number in it, occurs in the paper's text file."""
    root = _papers_dir()
    if root is None:
        pytest.skip("the papers' text (../shared/papers) is not available")
    texts = {k: (root / p.text).read_text(encoding="utf-8") for k, p in values.papers.items()}
    streams = {k: _words(t) for k, t in texts.items()}
    checked = 0
    for name, refs in values.experiments.items():
        for e in refs.entries:
            for run in re.split(r"\s#\s|\s#$|^#\s", _words(e.as_written).strip()):
                words = run.split()
                if len(words) >= 3:
                    assert f" {' '.join(words)} " in streams[e.paper], f"{name}.{e.id}: {' '.join(words)!r}"
                    checked += 1
            for num in re.findall(r"\d+(?:[.,]\d+)*", e.as_written):
                assert num in texts[e.paper], f"{name}.{e.id}: number {num} not in {e.paper}"
    assert checked >= 40


def test_entries_fit_the_configs(values):
    """Every experiment is a config; every label named in `where`/`minus` is one of its algorithm labels."""
    for name, refs in values.experiments.items():
        cfg = REPO / "configs" / f"{name}.yaml"
        assert cfg.is_file(), name
        raw = yaml.safe_load(cfg.read_text(encoding="utf-8"))
        labels = {a.get("label", a["name"]) for a in raw["algorithms"]}
        names = {a["name"] for a in raw["algorithms"]}
        # a gridded algorithm's rows carry 'label[k=v,...]': entries must pick it by algorithm + parameter
        gridded = {a.get("label", a["name"]) for a in raw["algorithms"]
                   if any(isinstance(v, list) for v in (a.get("params") or {}).values())}
        for e in refs.entries:
            if e.compare in ("difference", "ratio"):
                assert e.value is not None
            if e.ours is None:
                assert e.note, f"{name}.{e.id}: say why ours is not computed"
                continue
            for part in (e.ours.where, e.ours.minus or {}):
                if "label" in part:
                    assert part["label"] in labels - gridded, f"{name}.{e.id}: label {part['label']!r}"
                if "algorithm" in part:
                    assert part["algorithm"] in names, f"{name}.{e.id}: algorithm {part['algorithm']!r}"
        if not refs.numbers_in_text:
            assert all(e.compare != "ratio" for e in refs.entries)


def test_bad_files_are_one_line_user_errors(tmp_path):
    p = tmp_path / "v.yaml"
    p.write_text("papers: {a: {citation: A, text: a.txt}}\nexperiments:\n  x:\n    figure: F\n"
                 "    numbers_in_text: true\n    entries: [{id: e, paper: b, source: s, quantity: q, as_written: w, compare: claim}]\n")
    with pytest.raises(UserError, match="paper 'b' is not in papers"):
        paper.load(p)
    p.write_text("papers: {}\nexperiments: {x: {figure: F, numbers_in_text: true, entries: [{id: e, paper: a, "
                 "source: s, quantity: q, as_written: w, compare: difference}]}}\n")
    with pytest.raises(UserError, match="needs a numeric value"):
        paper.load(p)
    p.write_text("papers: [\n")
    with pytest.raises(UserError, match="invalid YAML"):
        paper.load(p)
    with pytest.raises(UserError, match="no such file"):
        paper.load(tmp_path / "none.yaml")


# ------------------------------------------------------------------------------------------------- computations


def _table() -> pd.DataFrame:
    """2 repeats x 3 subsets x 2 labels x 2 epsilons; value = repeat + subset index + (label B: 10) + ε/100."""
    rows = []
    for r in range(2):
        for si, subset in enumerate(["s0", "s1", "s2"]):
            for label, off, params in (("A", 0.0, "k=1"), ("B", 10.0, "k=2")):
                for eps in (1.0, 8.0):
                    common = dict(experiment="t", dataset="ds", dataset_params="state=IL", subset=subset,
                                  algorithm=label.lower(), label=label, params=params, epsilon=eps, delta=0.0,
                                  n_private=50 + 10 * si, n_public=0, n_test=5, d=1, repeat=r, trials=1,
                                  n_private_requested="all", n_public_requested=0, n_test_requested=5, seed_key="",
                                  error="")
                    rows.append({**common, "metric": "m", "value": r + si + off + eps / 100})
                    rows.append({**common, "metric": "nv", "value": float(si)})
    return pd.DataFrame(rows)


def test_mean_median_minus_and_subset_stats():
    df = _table()
    # per repeat: mean over subsets = r + 1 (+ offsets); over repeats: mean 1.5 (+0.01 at ε = 1)
    r = compute(df, Ours(metric="m", where={"label": "A", "epsilon": 1}))
    assert r.value == pytest.approx(1.51) and not r.problem
    r = compute(df, Ours(metric="m", where={"label": "B", "epsilon": 1.0}, stat="std"))
    assert r.value == pytest.approx(np.std([11.01, 12.01], ddof=1))
    r = compute(df, Ours(metric="m", where={"label": "B", "epsilon": 8}, minus={"label": "A"}))
    assert r.value == pytest.approx(10.0) and r.parts == (pytest.approx(11.58), pytest.approx(1.58))
    assert compute(df, Ours(metric="m", where={"label": "A", "epsilon": 8}, stat="subset_max")).value \
        == pytest.approx(2.5 + 0.08)
    assert compute(df, Ours(metric="m", where={"label": "A", "epsilon": 8}, stat="subset_min",
                            field="n_private")).value == 50
    assert compute(df, Ours(metric="m", where={"label": "A", "epsilon": 8, "state": "IL"},
                            stat="n_subsets")).value == 3
    # the lowest third of subsets by metric nv is s0: mean over repeats of r + 0 + ε/100
    r = compute(df, Ours(metric="m", where={"label": "A", "epsilon": 8}, stat="subset_mean",
                         subsets={"by": "nv", "highest": 1 / 3}))
    assert r.value == pytest.approx(0.5 + 2 + 0.08)
    r = compute(df, Ours(metric="m", where={"label": "A", "epsilon": 8}, stat="subset_mean",
                         subsets={"by": "nv", "lowest": 1 / 3}))
    assert r.value == pytest.approx(0.5 + 0.08)


def test_argmax_params_and_problems():
    df = _table()
    r = compute(df, Ours(metric="m", where={"epsilon": 1}, stat="argmax_params"))
    assert r.value == "k=2" and params_match({"k": 2.0}, r.value) and not params_match({"k": 1.0}, r.value)
    assert "2 points" in compute(df, Ours(metric="m", where={"label": "A"})).problem  # ε not pinned
    assert "is not in these results" in compute(df, Ours(metric="zz")).problem
    assert "no rows with" in compute(df, Ours(metric="m", where={"label": "C"})).problem
    assert "no rows with" in compute(df, Ours(metric="m", where={"nope": 1})).problem
    r = compute(df, Ours(metric="m", where={"label": "A", "epsilon": 1}, minus={"label": "C"}))
    assert r.value is None and r.problem.startswith("second point")
    assert check_holds(paper.Check(op="<=", value=0.12), 0.12) and not check_holds(paper.Check(op="<", value=0), 0.0)
