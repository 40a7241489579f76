"""Malformed configs: each gives exit code 2, exactly one readable line naming file/key/constraint/value, and
writes nothing."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from dpexp.cli import main
from dpexp.spec import apply_override, expand_grid, load

GOOD = textwrap.dedent("""\
    name: tiny
    seed: 1
    repeats: 2
    datasets:
      - name: honkela_synthetic
        params: {d: 3}
    sizes:
      n_private: [0, 20]
      n_public: 5
      n_test: 10
    privacy:
      epsilon: [1.0, 2.0]
    algorithms:
      - name: lr
      - name: rplr
        params: {p1: 0.3, p2: 0.6, p3: 0.1}
    metrics: [spearman]
    """)


def _mutate(fn):
    raw = yaml.safe_load(GOOD)
    fn(raw)
    return yaml.safe_dump(raw, sort_keys=False)


def _set(path, value):
    def f(raw):
        apply_override(raw, f"{path}={yaml.safe_dump(value, default_flow_style=True).strip().removesuffix('...').strip()}")
    return f


def _drop(*keys):
    def f(raw):
        node = raw
        for k in keys[:-1]:
            node = node[k]
        del node[keys[-1]]
    return f


CASES = [
    # (id, config text, expected fragments of the one-line message)
    ("missing_datasets", _mutate(_drop("datasets")), ["datasets is required"]),
    ("missing_privacy", _mutate(_drop("privacy")), ["privacy is required"]),
    ("unknown_top_key", _mutate(_set("repeatz", 3)), ["repeatz is not a known key", "valid:"]),
    ("unknown_param", _mutate(_set("algorithms[1].params.p4", 0.1)), ["algorithms[1].params.p4", "not a known key"]),
    ("p_out_of_range", _mutate(_set("algorithms[1].params.p1", 1.5)),
     ["algorithms[1].params.p1 must be in (0, 1), got 1.5"]),
    ("p_not_summing", _mutate(_set("algorithms[1].params.p1", 0.5)), ["p1 + p2 + p3 must equal 1"]),
    ("eps_zero", _mutate(_set("privacy.epsilon", [1.0, 0.0])), ["privacy.epsilon must be > 0, got 0"]),
    ("eps_negative", _mutate(_set("privacy.epsilon", -1)), ["privacy.epsilon must be > 0, got -1"]),
    ("delta_one", _mutate(_set("privacy.delta", 1.0)), ["privacy.delta must be in [0, 1), got 1"]),
    ("delta_negative", _mutate(_set("privacy.delta", -0.1)), ["privacy.delta must be in [0, 1), got -0.1"]),
    ("repeats_string", _mutate(_set("repeats", "many")), ["repeats must be an integer, got 'many'"]),
    ("repeats_zero", _mutate(_set("repeats", 0)), ["repeats must be in [1, 100000], got 0"]),
    ("unknown_algorithm", _mutate(_set("algorithms[0].name", "lasso")),
     ["algorithms[0].name must be a registered algorithm", "rplr", "got 'lasso'"]),
    ("unknown_dataset", _mutate(_set("datasets[0].name", "mnist")),
     ["datasets[0].name must be a registered dataset", "honkela_synthetic", "got 'mnist'"]),
    ("unknown_metric", _mutate(_set("metrics", ["spearman", "r2"])),
     ["metrics[1].name must be a registered metric", "spearman", "got 'r2'"]),
    ("empty_epsilon_grid", _mutate(_set("privacy.epsilon", [])), ["privacy.epsilon must be a non-empty"]),
    ("empty_algorithms", _mutate(_set("algorithms", [])), ["algorithms", "at least 1"]),
    ("empty_param_grid", _mutate(_set("algorithms[1].params.omega_x", [])), ["algorithms[1].params.omega_x"]),
    ("negative_size", _mutate(_set("sizes.n_public", -5)), ["sizes.n_public must be >= 0, got -5"]),
    ("float_size", _mutate(_set("sizes.n_private", [10, 2.5])), ["sizes.n_private must be an integer", "2.5"]),
    ("dataset_param_type", _mutate(_set("datasets[0].params.d", "ten")), ["datasets[0].params.d", "integer"]),
    ("all_on_generator", _mutate(_set("sizes.n_private", "all")), ["sizes.n_private must be a number"]),
    ("bad_yaml", "name: x\ndatasets: [\n  - {name: a\n", ["invalid YAML at line"]),
    ("not_mapping", "- a\n- b\n", ["(top level) must be a mapping"]),
    ("empty_file", "", ["the file is empty"]),
    ("unknown_plot_kind", _mutate(_set("plots", [{"kind": "pie"}])), ["plots[0].kind must be a registered plot"]),
    ("bad_plot_option", _mutate(_set("plots", [{"kind": "curve", "options": {"colour": "red"}}])),
     ["plots[0].options.colour is not a known key"]),
    ("bad_name", _mutate(_set("name", "de mo/x")), ["name must match ^[A-Za-z0-9_.-]+$, got 'de mo/x'"]),
    ("unknown_baseline_label", _mutate(_set("plots", [{"kind": "curve", "options": {"baselines": ["LR public"]}}])),
     ["plots[0].options.baselines must name algorithm labels", "'lr'", "got 'LR public'"]),
]


@pytest.mark.parametrize("case_id,text,fragments", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("command", ["validate", "run"])
def test_malformed_config(tmp_path, case_id, text, fragments, command):
    cfg = tmp_path / "x.yaml"
    cfg.write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    args = [command, str(cfg)] + (["--out", str(out), "--jobs", "1"] if command == "run" else [])
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1, res.output
    assert str(cfg) in lines[0]
    for frag in fragments:
        assert frag in lines[0], lines[0]
    assert "Traceback" not in res.output
    assert not out.exists()


def test_non_utf8_file(tmp_path):
    cfg = tmp_path / "latin1.yaml"
    cfg.write_bytes("name: caf\xe9\n".encode("latin-1"))
    res = CliRunner().invoke(main, ["validate", str(cfg)])
    assert res.exit_code == 2 and "not valid UTF-8" in res.output and len(res.output.strip().splitlines()) == 1


def test_missing_file(tmp_path):
    res = CliRunner().invoke(main, ["run", str(tmp_path / "nope.yaml"), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "file not found" in res.output
    assert not (tmp_path / "o").exists()


def test_sizes_larger_than_data(tmp_path, monkeypatch):
    """A dataset with a finite number of rows rejects sizes that do not fit (message names the limit)."""
    from dpexp.components import Dataset
    from dpexp.registry import _REGISTRIES

    class Tiny(Dataset):
        name = "tiny_fixed_rows"

        def n_rows(self, subset):
            return 30

    monkeypatch.setitem(_REGISTRIES["dataset"], "tiny_fixed_rows", Tiny)
    cfg = tmp_path / "big.yaml"
    cfg.write_text(GOOD.replace("honkela_synthetic", "tiny_fixed_rows").replace("params: {d: 3}", "params: {}"))
    res = CliRunner().invoke(main, ["validate", str(cfg)])
    assert res.exit_code == 2
    assert "sizes.n_private must fit the data" in res.output and "<= 30 rows" in res.output and "= 35" in res.output


def test_good_config_and_overrides(tmp_path):
    cfg = tmp_path / "ok.yaml"
    cfg.write_text(GOOD)
    exp = load(cfg)
    assert exp.n_cells == 1 * 2 * 2 * 2 * 2  # subsets x repeats x sizes x algorithms x epsilons
    exp2 = load(cfg, ["privacy.epsilon=[1, 2, 4]", "algorithms[1].params.omega_x=[0.5, 1.0]"], repeats=3)
    assert exp2.epsilons == [1.0, 2.0, 4.0] and exp2.spec.repeats == 3
    assert [a.label for a in exp2.algorithms] == ["lr", "rplr[omega_x=0.5,p1=0.3,p2=0.6,p3=0.1]",
                                                  "rplr[omega_x=1.0,p1=0.3,p2=0.6,p3=0.1]"]


def test_expand_grid_is_cartesian_and_sorted():
    assert expand_grid({"b": [1, 2], "a": 0}) == [{"a": 0, "b": 1}, {"a": 0, "b": 2}]
    assert expand_grid({}) == [{}]
    assert expand_grid({"bounds": [[-7.5, 7.5]]}) == [{"bounds": [-7.5, 7.5]}]


def test_skip_invalid_leaves_out_bad_grid_points(tmp_path):
    text = GOOD.replace("params: {p1: 0.3, p2: 0.6, p3: 0.1}", "params: {p1: [0.3, 0.5], p2: 0.6, p3: 0.1}")
    cfg = tmp_path / "g.yaml"
    cfg.write_text(text)
    res = CliRunner().invoke(main, ["validate", str(cfg)])
    assert res.exit_code == 2 and "p1 + p2 + p3 must equal 1" in res.output   # without skip_invalid: an error
    cfg.write_text(text.replace("  - name: rplr\n", "  - name: rplr\n    skip_invalid: true\n"))
    exp = load(cfg)
    assert [a.params["p1"] for a in exp.algorithms if a.name == "rplr"] == [0.3]
    assert exp.skipped_grid_points == {1: 1}
    cfg.write_text(text.replace("p1: [0.3, 0.5]", "p1: [0.5, 0.6]").replace("  - name: rplr\n",
                                                                          "  - name: rplr\n    skip_invalid: true\n"))
    res = CliRunner().invoke(main, ["validate", str(cfg)])
    assert res.exit_code == 2 and "every grid point is invalid" in res.output


def test_gaussian_algorithms_require_delta(tmp_path):
    cfg = tmp_path / "ddp.yaml"
    cfg.write_text(GOOD.replace("  - name: lr\n", "  - name: ta\n    params: {bound_x: 1.0, bound_y: 5.0}\n"))
    res = CliRunner().invoke(main, ["validate", str(cfg)])
    assert res.exit_code == 2 and "privacy.delta must be in (0, 1) for algorithm ta" in res.output


def test_a_flat_list_for_a_list_valued_parameter_says_how_to_write_it(tmp_path):
    """Issue 30 item 5: `x_range: [20, 80]` is a grid of 20 and 80; the error says to write [[20, 80]]."""
    import re

    from dpexp import spec as spec_mod
    from dpexp.errors import ConfigError

    text = (Path(__file__).resolve().parents[2] / "configs" / "slr_stock.yaml").read_text()
    cfg = tmp_path / "flat.yaml"
    cfg.write_text(text.replace("params: {x_column: ISE_TL, y_column: ISE_USD}",
                                "params: {x_column: ISE_TL, y_column: ISE_USD, x_range: [20, 80]}"))
    with pytest.raises(ConfigError, match=re.escape("datasets[0].params.x_range: Input should be a valid tuple, got "
                                                    "20; a list in params is a grid of values, so x_range: [20, 80] "
                                                    "tried 20 alone: write [[20, 80]] for the single value [20, 80]")):
        spec_mod.load(cfg, check_data=False)
    cfg.write_text(text.replace("params: {x_column: ISE_TL, y_column: ISE_USD}",
                                "params: {x_column: ISE_TL, y_column: ISE_USD, x_range: [[20, 80]]}"))
    assert spec_mod.load(cfg, check_data=False).datasets[0].params["x_range"] == [20, 80]
