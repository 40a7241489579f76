"""``algorithms[].datasets``: an algorithm entry runs only on the dataset entries it names (by label, else name), so
one figure can draw curves that need different data paths (issue 11: the paper protocol beside ours)."""

from __future__ import annotations

import json
import textwrap

import pandas as pd
import pytest
from click.testing import CliRunner

from dpexp import runner, spec
from dpexp.cli import main
from dpexp.errors import ConfigError

CFG = textwrap.dedent("""\
    name: restrict
    seed: 5
    repeats: 2
    datasets:
      - name: honkela_synthetic
        label: small
        params: {d: 2}
      - name: honkela_synthetic
        label: wide
        params: {d: [3, 4]}
    sizes:
      n_private: [0, 20]
      n_public: 5
      n_test: 10
    privacy:
      epsilon: 1.0
    algorithms:
      - name: lr
      - name: null_model
        label: only_small
        datasets: [small]
      - name: null_model
        label: only_wide
        datasets: [wide]
    metrics: [mae]
    chunk_work: 10
    """)


def _load(tmp_path, text=CFG):
    p = tmp_path / "c.yaml"
    p.write_text(text)
    return spec.load(p)


def test_each_entry_runs_only_on_its_datasets(tmp_path):
    exp = _load(tmp_path)
    small, w3, w4 = exp.datasets
    assert [a.label for a in exp.algorithms_for(small)] == ["lr", "only_small"]
    assert [a.label for a in exp.algorithms_for(w3)] == ["lr", "only_wide"]
    assert [a.label for a in exp.algorithms_for(w4)] == ["lr", "only_wide"]
    assert exp.n_cells == 3 * 2 * 2 * 2                       # 3 dataset variants x 2 repeats x 2 sizes x 2 algorithms
    assert sum(len(c.subsets) * exp.cells_per_subset_repeat(exp.datasets[c.dataset])
               for c in runner.plan_chunks(exp)) == exp.n_cells
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["run", str(tmp_path / "c.yaml"), "--out", str(out), "--jobs", "1", "-q"])
    assert r.exit_code == 0, r.output
    df = pd.read_csv(out / "results.csv", keep_default_na=False)
    assert set(df[df["label"] == "only_small"]["dataset_params"]) == {"d=2"}
    assert set(df[df["label"] == "only_wide"]["dataset_params"]) == {"d=3", "d=4"}
    assert set(df[df["label"] == "lr"]["dataset_params"]) == {"d=2", "d=3", "d=4"}
    assert len(df) == exp.n_cells                              # one metric row per cell
    man = json.loads((out / "manifest.json").read_text())
    recs = {a["label"]: a for a in man["algorithms"]}
    assert "datasets" not in recs["lr"] and recs["only_wide"]["datasets"] == ["wide"]


def _unknown(t):
    return t.replace("datasets: [small]", "datasets: [tiny]")


def _ambiguous(t):
    return (t.replace("    label: small\n", "").replace("    label: wide\n", "")
            .replace("datasets: [small]", "datasets: [honkela_synthetic]"))


def _idle(t):   # no entry runs on 'small'
    return t.replace("  - name: lr\n", "").replace("datasets: [small]", "datasets: [wide]")


def _empty(t):
    return t.replace("datasets: [small]", "datasets: []")


@pytest.mark.parametrize("edit,fragment", [
    (_unknown, r"algorithms\[1\]\.datasets\[0\] names no dataset entry"),
    (_ambiguous, "names several dataset entries"),
    (_idle, r"datasets\[0\] \(small\) runs no algorithm"),
    (_empty, r"algorithms\[1\]\.datasets"),
])
def test_bad_restrictions_are_config_errors(tmp_path, edit, fragment):
    with pytest.raises(ConfigError, match=fragment):
        _load(tmp_path, edit(CFG))


def test_configs_without_restrictions_plan_as_before(tmp_path):
    text = CFG.replace("    datasets: [small]\n", "").replace("    datasets: [wide]\n", "")
    exp = _load(tmp_path, text)
    assert all(a.datasets is None for a in exp.algorithms)
    assert all(len(exp.algorithms_for(dv)) == 3 for dv in exp.datasets)
    assert exp.n_cells == 3 * 2 * 2 * 3
