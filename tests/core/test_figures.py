"""Figures that do not mislead (issue 14, items 2, 3, 5): the shared style, titles from the resolved config, the
heat map's baseline guard, ECDFs that never cut data silently, identical curves, legends, non-DP daggers.

Every figure drawn here (and in every other test) also passes ``layout.misfits`` (tests/conftest.py): the declared
width, nothing drawn outside the canvas, the plot not squeezed.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from dpexp import registry
from dpexp.cli import main
from dpexp.plotting import layout, style, titles
from dpexp.plotting.base import grid_shape
from dpexp.plotting.ecdf import CLIP_NOTE, beyond
from dpexp.plotting.looks import Looks
from dpexp.plotting.privacy import NotDP
from dpexp.spec import PlotSpec

REPO = Path(__file__).resolve().parents[2]
CONFIGS = sorted((REPO / "configs").glob("*.yaml"))


@pytest.fixture
def drawn(monkeypatch):
    """The figures handed to ``layout.save`` (after the checks of tests/conftest.py)."""
    figs = []
    inner = layout.save

    def keep(fig, out_stem, formats):
        figs.append(fig)
        return inner(fig, out_stem, formats)

    monkeypatch.setattr(layout, "save", keep)
    return figs


def texts(fig) -> str:
    """Every text of a figure (suptitle, notes, legends, labels, ticks, annotations), wrapped lines joined."""
    out = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text") and callable(a.get_text))]
    return " | ".join(s.replace("\n", " ").replace("\u00a0", " ") for s in out if isinstance(s, str))


def legend_labels(fig) -> list[str]:
    return [t.get_text().replace("\u00a0", " ") for leg in fig.legends for t in leg.get_texts()]


def spec(kind: str, **kw) -> PlotSpec:
    return PlotSpec(kind=kind, **kw)


def manifest(title: str = "T", algorithms=(), **config) -> dict:
    return {"experiment": "e", "title": title, "config": {"title": title, **config}, "overrides": [],
            "algorithms": [{"name": n, "label": lb, "private": p, "formally_dp": True, "neighbouring": "replace-one",
                            "privacy_spent": [{"epsilon": 1.0, "delta": 0.0}]} for n, lb, p in algorithms]}


def png_width(path: Path) -> int:
    return struct.unpack(">I", path.read_bytes()[16:20])[0]


# ------------------------------------------------------------------------------------------------- the style
def test_every_algorithm_has_one_look_and_methods_of_one_figure_differ():
    for name in registry.builtin_names("algorithm"):
        assert style.method(name) in style.METHODS, f"{name}: add its colour and marker to plotting/style.py METHODS"
    assert style.method_colour("plr_paper") == style.method_colour("plr")
    for path in CONFIGS:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        algos = sorted({style.method(a["name"]) for a in raw["algorithms"]})
        colours = [style.method_colour(a)[0] for a in algos]
        assert len(set(colours)) == len(colours), (path.name, dict(zip(algos, colours)))


def test_the_same_label_looks_the_same_in_every_figure():
    eps2, eps1 = (yaml.safe_load((REPO / "configs" / f"{n}.yaml").read_text()) for n in ("gdsc_eps2", "gdsc_eps1"))
    looks = [Looks(None, {"algorithms": [{"name": a["name"], "label": a.get("label", a["name"])}
                                         for a in raw["algorithms"]]}) for raw in (eps2, eps1)]
    for a in eps2["algorithms"]:
        assert looks[0].look(a["label"]) == looks[1].look(a["label"])
    two = [a["label"] for a in eps2["algorithms"] if a["name"] == "rplr"]
    first, second = looks[0].look(two[0]), looks[0].look(two[1])
    assert first["color"] == second["color"] and first["linestyle"] != second["linestyle"]


def test_contrast_text_and_grid_shape():
    assert style.contrast_text((0.1, 0.0, 0.3, 1.0)) == "white"
    assert style.contrast_text((0.95, 0.95, 0.8, 1.0)) == "black"
    assert [grid_shape(n) for n in (1, 2, 3, 4, 5, 6, 7)] == [(1, 1), (1, 2), (1, 3), (2, 2), (2, 3), (2, 3),
                                                               (3, 3)]


# ------------------------------------------------------------------------------------------------- titles
def test_titles_take_the_resolved_values():
    m = {"experiment": "x", "config": {"privacy": {"epsilon": [1.0, 2.0], "delta": [1e-06]}, "repeats": 5,
                                       "sizes": {"n_public": [10]}, "datasets": [{"params": {"d": 10}}]}}
    assert titles.fill("d = {d}, {n_public} lines, ε = {epsilon}, δ = {delta}, {unknown}", m) == \
        "d = 10, 10 lines, ε = 1, 2, δ = 1e-6, {unknown}"
    raw = {"fast": {"set": ["sizes.n_private=[0]"]}}
    assert titles.split_overrides({"overrides": ["sizes.n_private=[0]", "privacy.epsilon=1"], "raw_config": raw,
                                   "fast": True}) == (True, ["sizes.n_private=[0]"], ["privacy.epsilon=1"])
    note = titles.run_note({"overrides": ["privacy.epsilon=1"], "fast": False, "repeats_override": 3})
    assert note == "--repeats 3; --set privacy.epsilon=1"


def test_config_titles_state_no_value_an_override_could_change():
    """A literal 'ε = 2' in a title stays 2 after --set privacy.epsilon=[1,2]: values go through placeholders."""
    literal = re.compile(r"(ε|δ|\bd|\bn|n_public|n_private|σx²|σe²|epsilon|delta) = [0-9]")
    for path in CONFIGS:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        for title in [raw.get("title") or ""] + [p.get("title") or "" for p in raw.get("plots") or []]:
            assert not literal.search(title), (path.name, title)
            assert "±" not in title and "IQR" not in title, (path.name, "the subtitle states the statistic")


def test_titles_reflect_overrides_end_to_end(tmp_path, drawn):
    raw = yaml.safe_load((REPO / "configs" / "demo.yaml").read_text(encoding="utf-8"))
    raw["algorithms"] = [a for a in raw["algorithms"] if a["name"] != "rplr"]
    cfg = tmp_path / "demo.yaml"
    cfg.write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")
    out = tmp_path / "res"
    r = CliRunner().invoke(main, ["run", str(cfg), "--out", str(out), "--repeats", "2", "--jobs", "1", "-q",
                                  "--set", "sizes.n_private=[0, 100]", "--set", "privacy.epsilon=[1,2]"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["plot", str(out), "--out", str(tmp_path / "f"), "--format", "png"])
    assert r.exit_code == 0, r.output
    fig = drawn[0]
    title = fig._suptitle.get_text().replace("\n", " ").replace("\u00a0", " ")
    assert "ε = 1, 2" in title and "ε = 2 " not in title
    assert "--set sizes.n_private=[0, 100], privacy.epsilon=[1,2]" in texts(fig)
    assert any("(ε = 1)" in lb for lb in legend_labels(fig)) and any("(ε = 2)" in lb for lb in legend_labels(fig))


# ------------------------------------------------------------------------------------------------- heat map
def _tradeoff_rows(baseline: float) -> pd.DataFrame:
    rows = []
    for rep in range(2):
        for n in (0, 100):
            for d, gain in ((5, 0.0), (10, 0.2)):
                rows.append(dict(algorithm="rplr", label="robust private LR", d=d, n_private=n, n_public=10,
                                 value=0.1 + gain + n / 1000))
        rows.append(dict(algorithm="lr_public", label="baseline", d=10, n_private=0, n_public=10, value=baseline))
    df = pd.DataFrame(rows)
    df["repeat"] = np.arange(len(df)) % 2
    return df.assign(metric="spearman", dataset="gdsc", dataset_params="", subset="Drug_1", params="", error="",
                     n_private_requested=df["n_private"], n_public_requested=df["n_public"], epsilon=2.0)


@pytest.mark.parametrize("baseline, relative", [(0.1, True), (-0.05, False), (0.0, False)])
def test_the_tradeoff_heat_map_never_divides_by_a_non_positive_baseline(tmp_path, drawn, baseline, relative):
    fn = registry.get("plot", "gdsc_tradeoff")
    fn(_tradeoff_rows(baseline), spec("gdsc_tradeoff", metric="spearman", x="n_private",
                                      options={"y": "d", "algorithm": "rplr"}),
       manifest(), tmp_path / "t", ["png"])
    fig = drawn[0]
    ax = fig.axes[0]
    z = np.asarray(ax.images[0].get_array())
    m = np.array([[0.1, 0.2], [0.3, 0.4]])               # rows d = 5, 10; columns n = 0, 100
    np.testing.assert_allclose(z, (m - baseline) / baseline if relative else m - baseline)
    cbar = fig.axes[1].get_ylabel()
    assert cbar.startswith("relative improvement") == relative and "improvement" in cbar
    notes = texts(fig)
    assert ("≤ 0: the absolute difference m − b is shown" in notes) == (not relative)
    assert "baseline baseline" not in fig._suptitle.get_text()
    cells = [t for t in ax.texts if re.fullmatch(r"-?\d+\.\d\d", t.get_text())]
    assert len(cells) == 4 and all(t.get_fontsize() >= style.SMALL for t in cells)
    for t in cells:  # contrast-aware: the text colour is the readable one on its cell's colour
        i, j = int(round(t.get_position()[1])), int(round(t.get_position()[0]))
        rgba = ax.images[0].cmap(ax.images[0].norm(z[i, j]))
        assert t.get_color() == style.contrast_text(rgba)


def test_budget_split_colour_bar_has_a_human_name(tmp_path, drawn):
    rows = [dict(algorithm="split_search", label=f"s[p1={p1},p2={p2}]", params=f"p1={p1},p2={p2}", repeat=r,
                 metric="aux_spearman", value=p1 + p2 + r / 10, subset="all", dataset="synthetic",
                 dataset_params="", n_private=500, n_public=0, error="", epsilon=2.0)
            for p1 in (0.1, 0.2) for p2 in (0.1, 0.2) for r in range(2)]
    registry.get("plot", "param_heatmap")(pd.DataFrame(rows), spec("param_heatmap", metric="aux_spearman", x="p2",
                                                                    options={"y": "p1", "algorithm": "split_search"}),
                                          manifest(), tmp_path / "b", ["png"])
    cbar = drawn[0].axes[1].get_ylabel().replace("\n", " ")
    assert cbar.startswith("Spearman rank correlation on auxiliary data") and "aux_spearman" not in cbar
    assert "p1: share of ε for X'X" in drawn[0].axes[0].get_ylabel().replace("\n", " ")


# ------------------------------------------------------------------------------------------------- curves
def _curve_rows(labels: dict[str, list[float]], x: list[float], x_col: str = "n_private",
                algos: dict[str, str] | None = None) -> pd.DataFrame:
    rows = []
    for label, ys in labels.items():
        for r in range(2):
            for xv, yv in zip(x, ys):
                rows.append({"dataset": "synthetic", "dataset_params": "", "label": label,
                             "algorithm": (algos or {}).get(label, label.split()[0]),
                             "metric": "mae", "repeat": r, "value": yv + r * 0.01, "subset": "all", "params": "",
                             "epsilon": 1.0, "delta": 0.0, "n_private": 100, "n_private_requested": 100,
                             "n_public_requested": 0, "n_test_requested": 10, "error": "", x_col: xv})
    return pd.DataFrame(rows)


def test_identical_curves_are_drawn_once_and_said(tmp_path, drawn):
    df = _curve_rows({"np A": [1, 2, 3], "ta B": [1, 2, 3], "ddp C": [3, 2, 1]}, [1.0, 2.0, 3.0], "epsilon")
    registry.get("plot", "curve")(df, spec("curve", metric="mae", x="epsilon"), manifest(), tmp_path / "c", ["png"])
    fig = drawn[0]
    assert legend_labels(fig) == ["np A = ta B", "ddp C"]
    assert len(fig.axes[0].containers) == 2 and layout.IDENTICAL_NOTE in texts(fig)


def test_log_epsilon_axis_is_ticked_at_the_grid_values_and_the_legend_is_below(tmp_path, drawn):
    eps = [1.0, 1.7782794, 3.1622777, 5.6234133, 10.0, 31.622777]
    algos = {"NP": "np", "TA": "ta", "TA proj": "ta_proj", "DDP": "ddp", "DDP proj": "ddp_proj",
             "IP": "input_perturbation"}
    df = _curve_rows({lb: [k + i for i in range(6)] for k, lb in enumerate(algos)}, eps, "epsilon", algos)
    registry.get("plot", "dca_accuracy")(df, spec("dca_accuracy", metric="mae"), manifest(), tmp_path / "d", ["png"])
    fig = drawn[0]
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "1.78", "3.16", "5.62", "10", "31.6"]
    assert ax.get_legend() is None and len(fig.legends) == 1 and fig.legends[0]._ncols > 1
    title = fig._suptitle.get_text()
    assert title.count("median") == 1 and "interquartile" in title


def test_a_very_long_label_keeps_the_declared_width(tmp_path):
    long = "LR (non-private) " + "with a very long description of its settings " * 4
    df = _curve_rows({"lr " + long: [1, 2, 3], "plr B": [3, 2, 1]}, [0, 100, 200])
    registry.get("plot", "curve")(df, spec("curve", metric="mae", x="n_private"), manifest(), tmp_path / "w", ["png"])
    assert png_width(tmp_path / "w.png") == int(style.COLUMN * style.DPI)   # and layout.misfits passed


def test_non_dp_curves_carry_a_dagger_and_the_reason(tmp_path, drawn):
    df = _curve_rows({"lr LR": [1, 2, 3], "plr B": [3, 2, 1]}, [0, 100, 200])
    m = manifest(algorithms=[("lr", "lr LR", False), ("plr", "plr B", True)])
    registry.get("plot", "curve")(df, spec("curve", metric="mae", x="n_private"), m, tmp_path / "p", ["png"])
    assert legend_labels(drawn[0]) == ["lr LR †", "plr B"]
    assert "† not differentially private: a non-private reference" in texts(drawn[0])
    # the per-row columns of results.csv win over the manifest's declaration
    rows = df.assign(guarantee=np.where(df["label"] == "plr B", "none", "pure"),
                     privacy_note=np.where(df["label"] == "plr B", "bound taken from private rows", ""))
    marks = NotDP(rows, m)
    assert marks.name("plr B") == "plr B †" and marks.name("lr LR") == "lr LR"
    assert marks.footnote() == "† not differentially private: bound taken from private rows"


def test_footnote_groups_labels_by_reason():
    m = manifest(algorithms=[("lr", "A", False), ("oi_mos", "OI", True)])
    m["algorithms"][1]["formally_dp"] = False
    marks = NotDP(None, m)
    for lb in ("A", "OI", "other"):
        marks.name(lb)
    assert marks.footnote() == ("† not differentially private: “A” — a non-private reference; “OI” — heuristic "
                                "noise, not formally DP")


def test_footnote_says_a_clause_once_when_rows_differ_only_in_numbers():
    """Rows of one curve whose notes differ per ε (e.g. the classic calibration's true δ) give one clause, numbers
    that differ elided, numbers that agree kept; the 'not DP: ' prefix of every row goes."""
    from dpexp.plotting.privacy import compact_note

    note = " / ".join(f"not DP: bound from data; classic at epsilon={e:g} >= 1: true delta {d:.3g} vs 0.0001; pre"
                      for e, d in ((1, 5.6e-7), (10, 2.7e-4)))
    assert compact_note(note) == "bound from data; classic at epsilon=… >= 1: true delta … vs 0.0001; pre"
    assert compact_note("not DP: σ from 2 private rows") == "σ from 2 private rows"


# ------------------------------------------------------------------------------------------------- ECDFs
def test_beyond_counts_what_lies_past_each_edge():
    x, y = np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.25, 0.5, 0.75, 0.9])   # 10 % failed: ends at 0.9
    assert beyond(x, y, 1.5, 3.5) == (0.25, 0.25, pytest.approx(0.15), 0.75)
    assert beyond(x, y, 0.0, 10.0) == (0.0, 0.0, 0.0, 0.9)


def _ecdf_rows(values: dict[str, list[float]]) -> pd.DataFrame:
    rows = [{"label": lb, "algorithm": lb, "subset": f"s{i}", "value": v, "repeat": 0, "metric": "error_bound_se",
             "dataset": "bikeshare", "dataset_params": "", "epsilon": 10.0, "params": "", "n_private": 50,
             "error": ""} for lb, vs in values.items() for i, v in enumerate(vs)]
    return pd.DataFrame(rows)


def test_ecdf_axis_spans_every_value_or_marks_what_it_cuts(tmp_path, drawn):
    vals = {"DPExp": list(np.linspace(0.5, 3, 19)) + [5067.0], "DPSS": list(np.linspace(1, 8, 20))}
    fn = registry.get("plot", "slr_ecdf")
    fn(_ecdf_rows(vals), spec("slr_ecdf"), manifest(), tmp_path / "e", ["png"])
    ax = drawn[0].axes[0]
    assert ax.get_xlim()[1] > 5067 and CLIP_NOTE not in texts(drawn[0])     # nothing cut: every curve reaches 1
    fn(_ecdf_rows(vals), spec("slr_ecdf", options={"xlim": [0.1, 100]}), manifest(), tmp_path / "f", ["png"])
    marks = [t.get_text() for t in drawn[1].axes[0].texts]
    assert "5%▸" in marks and CLIP_NOTE in texts(drawn[1])
    vals["DPSS"][3] = np.nan                                                  # a failed subset: said
    fn(_ecdf_rows(vals), spec("slr_ecdf"), manifest(), tmp_path / "g", ["png"])
    assert "A curve ending below 1" in texts(drawn[2])


def _quantile_rows(spreads: dict[str, float], eps: float = 1.0) -> pd.DataFrame:
    rows = []
    for lb, s in spreads.items():
        for q in range(5, 100, 10):
            rows.append({"label": lb, "algorithm": lb, "metric": f"q{q:02d}", "value": 0.25 + s * (q - 50) / 50,
                         "subset": "all", "repeat": 0, "dataset": "carbon", "dataset_params": "", "epsilon": eps,
                         "params": "", "n_private": 100, "error": ""})
    rows += [{"label": "x", "algorithm": "x", "metric": m, "value": v, "subset": "all", "repeat": 0,
              "dataset": "carbon", "dataset_params": "", "epsilon": eps, "params": "", "n_private": 100, "error": ""}
             for m, v in (("ols_estimate", 0.25), ("ols_se", 1e-3))]
    return pd.DataFrame(rows)


def test_output_ecdf_shows_curves_whose_spreads_differ_by_orders_of_magnitude(tmp_path, drawn):
    fn = registry.get("plot", "slr_output_ecdf")
    fn(_quantile_rows({"narrow": 0.002, "wide": 40.0}), spec("slr_output_ecdf"), manifest(), tmp_path / "a", ["png"])
    ax = drawn[0].axes[0]
    assert ax.get_xscale() == "asinh" and ax.get_xlim()[0] < -36 and ax.get_xlim()[1] > 36   # all of "wide"
    assert "▸" not in "".join(t.get_text() for t in ax.texts)
    fn(_quantile_rows({"one": 0.002, "two": 0.003}), spec("slr_output_ecdf"), manifest(), tmp_path / "b", ["png"])
    assert drawn[1].axes[0].get_xscale() == "linear"
    fn(_quantile_rows({"one": 0.002, "two": 0.05}), spec("slr_output_ecdf", options={"scale": "linear"}),
       manifest(), tmp_path / "c", ["png"])
    assert "▸" in "".join(t.get_text() for t in drawn[2].axes[0].texts)     # the window cuts "two": marked


# ------------------------------------------------------------------------------------------------- GDSC helpers
def test_requested_sizes_from_columns_and_from_legacy_metric_rows():
    from dpexp.families.gdsc.plots import mean_text, requested_sizes

    base = {"experiment": "e", "subset": "a", "label": "x", "repeat": 0, "error": ""}
    rows = []
    for req_priv, req_pub, seen_priv, seen_pub in ((100, 10, 90, 3), (200, 30, 90, 3)):
        for metric, value in (("spearman", req_priv / 1000), ("n_private_requested", req_priv),
                              ("n_public_requested", req_pub)):
            rows.append({**base, "n_private": seen_priv, "n_public": seen_pub, "metric": metric, "value": value})
    legacy = requested_sizes(pd.DataFrame(rows))
    assert legacy[["n_private", "n_public"]].values.tolist() == [[100, 10], [200, 30]]
    cols = pd.DataFrame(rows).assign(n_private_requested=[100] * 3 + [200] * 3, n_public_requested=[10] * 3 + [30] * 3)
    out = requested_sizes(cols)
    assert out[["n_private", "n_public"]].values.tolist() == [[100, 10], [200, 30]] and set(out["metric"]) == {
        "spearman"}
    one = pd.DataFrame({"subset": ["all"], "dataset": ["synthetic"]})
    assert "over 1" not in mean_text(one, "std", 2) and mean_text(one, "std", 1) == "mean ± std over 1 repeat"


def test_footnote_gives_the_main_reason_only():
    """A figure's footnote names a curve's first reason; its preprocessing statements stay on the rows/report."""
    from dpexp.plotting.privacy import short_reason

    note = ("not DP: non-private baseline; gdsc centre: public (no private line read) / not DP: non-private baseline; "
            "gdsc centre: public (no private line read)")
    assert short_reason(note) == "non-private baseline"
    assert short_reason("paper protocol (matlab path): responses centred — not DP; more") == \
        "paper protocol (matlab path): responses centred"
    assert short_reason("") == "no differential-privacy guarantee"


def test_text_width_is_measured_once_per_text_size_and_hinting(monkeypatch):
    import matplotlib

    calls = []
    measure = layout._measured_width
    monkeypatch.setattr(layout, "_measured_width", lambda t, s: calls.append((t, s)) or measure(t, s))
    text = "robust private LR (ours): a width measured by this test only"
    w = layout.text_width(text, 7.5)
    assert calls == [(text, 7.5)] and w == measure(text, 7.5) > 0   # the kept width is the measured one
    assert layout.text_width(text, 7.5) == w and len(calls) == 1    # a second call measures nothing
    assert layout.text_width(text + "!", 7.5) > w                   # another text, another width
    assert layout.text_width(text, 9.0) > w                         # another size
    other = "no_hinting" if matplotlib.rcParams["text.hinting"] != "no_hinting" else "auto"
    with matplotlib.rc_context({"text.hinting": other}):
        layout.text_width(text, 7.5)                                # another hinting setting: measured again
    assert calls[-1] == (text, 7.5) and len(calls) == 4
