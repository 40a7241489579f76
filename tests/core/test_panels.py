"""Panelled figures (``options.panels``, dpexp/plotting/facets.py) and the one tick-label format of log axes
(dpexp/plotting/ticks.py).  Issue 32: Fig. 2 drew 20 curves and 4 baselines in one panel, its legend took 40 % of
the figure; log axes mixed "100", "1e+03" and "6×10⁰"."""

from __future__ import annotations

import re
import struct
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import yaml
from pydantic import ValidationError

from dpexp import registry
from dpexp.families.gdsc.plots import GdscCurveOptions
from dpexp.plotting import layout, style, ticks
from dpexp.plotting.facets import MAX_CURVES, PanelSpec, assign, check_panels, footnote

REPO = Path(__file__).resolve().parents[2]
PANELLED = ["gdsc_eps2", "gdsc_eps1"]


@pytest.fixture
def drawn(monkeypatch):
    """(file stem, figure) of every figure handed to ``layout.save`` (after the checks of tests/conftest.py)."""
    figs = []
    inner = layout.save

    def keep(fig, out_stem, formats):
        figs.append((out_stem.name, fig))
        return inner(fig, out_stem, formats)

    monkeypatch.setattr(layout, "save", keep)
    return figs


def png_width(path: Path) -> int:
    return struct.unpack(">I", path.read_bytes()[16:20])[0]


# ------------------------------------------------------------------------------------------------ log ticks
def test_log_labels_are_decimal_in_the_usual_range_and_powers_outside():
    assert [ticks.decimal(v) for v in (0.001, 0.00178, 0.5, 1.0, 3.1622777, 31.622777, 100.0, 1000.0, 20000.0,
                                       12345.0)] == \
        ["0.001", "0.00178", "0.5", "1", "3.16", "31.6", "100", "1000", "20000", "12300"]
    assert [ticks.power(v) for v in (1e-4, 1.0, 2e5, 3.2e-6, 9.96e6)] == ["10⁻⁴", "10⁰", "2×10⁵", "3.2×10⁻⁶", "10⁷"]
    assert not ticks.uses_powers(0.01, 10) and not ticks.uses_powers(100, 200000)
    assert ticks.uses_powers(1e-5, 1) and ticks.uses_powers(10, 2e6)
    assert ticks.uses_powers(0.0005, 0.0009) and not ticks.uses_powers(0.002, 0.009)   # no decade in view: the ends


def _log_figure(lo, hi, formatter=True):
    from dpexp.plotting.base import new_figure

    fig, ax = new_figure()
    ax.plot([lo, hi], [lo, hi])
    ax.set_xscale("log")
    ax.set_yscale("log")
    if formatter:
        ticks.apply_log_format(fig)
    return fig, ax


@pytest.mark.parametrize("lo, hi, want", [
    (1, 1000, ["1", "10", "100", "1000"]),
    (0.01, 10, ["0.01", "0.1", "1", "10"]),
    (1e-5, 1, ["10⁻⁵", "10⁻⁴", "10⁻³", "10⁻²", "10⁻¹", "10⁰"]),
    (2, 8, ["2", "5"]),                      # less than a decade: the minor ticks 2 and 5 are labelled
    (300, 3000, ["1000", "500", "2000"]),     # one decade in view: majors and the minors 2, 5
])
def test_every_log_axis_label_is_in_the_one_format(lo, hi, want):
    fig, ax = _log_figure(lo, hi)
    fig.canvas.draw()
    lo_v, hi_v = ax.get_xlim()
    shown = [t.get_text() for t in ax.xaxis.get_ticklabels() + ax.xaxis.get_ticklabels(minor=True)
             if t.get_text() and lo_v <= t.get_position()[0] <= hi_v]
    assert shown == want
    assert ticks.log_label_problems(fig) == []


def test_matplotlibs_own_log_labels_are_caught():
    fig, _ax = _log_figure(1e-5, 1, formatter=False)     # "$\\mathdefault{10^{-5}}$": neither form
    assert ticks.log_label_problems(fig)
    fig, ax = _log_figure(1, 1000)
    from matplotlib.ticker import FuncFormatter

    ax.xaxis.set_major_formatter(FuncFormatter(lambda t, _p: f"{t:.3g}"))   # the old grid-value format: 1e+03
    problems = ticks.log_label_problems(fig)
    assert problems and "1e+03" in problems[0]


def test_grid_ticks_use_the_one_format():
    from dpexp.plotting.curve import grid_ticks

    fig, ax = _log_figure(100, 100000)
    grid_ticks(ax, np.array([100, 1000, 10000, 100000]))
    fig.canvas.draw()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["100", "1000", "10000", "100000"]
    assert ticks.log_label_problems(fig) == []


# ------------------------------------------------------------------------------------------------ panel specs
def _spec(name, labels, **kw):
    return PanelSpec(name=name, labels=labels, **kw)


def test_a_panel_draws_at_most_eight_curves_and_names_only_its_own():
    with pytest.raises(ValidationError, match="at most 8"):
        _spec("a", [f"c{i}" for i in range(7)], references=["x", "y"])
    with pytest.raises(ValidationError, match="names for labels it does not draw"):
        _spec("a", ["c1"], names={"c2": "C"})
    with pytest.raises(ValidationError, match="twice"):
        _spec("a", ["c1"], references=["c1"])
    with pytest.raises(ValidationError):
        _spec("a b", ["c1"])     # a file-name suffix


def test_a_curve_is_at_home_in_one_panel():
    with pytest.raises(ValueError, match="at home in one panel"):
        check_panels([_spec("a", ["c1"]), _spec("b", ["c1"])])
    with pytest.raises(ValueError, match="in no panel's labels"):
        check_panels([_spec("a", ["c1"], references=["c9"])])
    with pytest.raises(ValueError, match="unique"):
        check_panels([_spec("a", ["c1"]), _spec("a", ["c2"])])
    with pytest.raises(ValueError, match="paper"):
        check_panels([_spec("a", ["c1"], paper=True), _spec("b", ["c2"], paper=True)])
    with pytest.raises(ValidationError, match="at home in one panel"):      # through the plot options
        GdscCurveOptions.model_validate({"panels": [{"name": "a", "labels": ["c1"]}, {"name": "b", "labels": ["c1"]}]})


def test_assign_drops_empty_panels_and_puts_unlisted_curves_in_panels_of_eight():
    specs = check_panels([_spec("a", ["c1", "c2"]), _spec("b", ["gone"]), _spec("c", ["c3"], references=["c1"])])
    present = ["c1", "c2", "c3"] + [f"u{i}" for i in range(10)]
    out = assign(present, specs)
    assert [(p.name, p.letter, p.labels, p.references) for p in out[:2]] == \
        [("a", "a", ["c1", "c2"], []), ("c", "b", ["c3"], ["c1"])]
    assert [p.name for p in out[2:]] == ["other", "other2"] and [len(p.labels) for p in out[2:]] == [8, 2]
    homes = [lb for p in out for lb in p.labels]
    assert sorted(homes) == sorted(present) and len(homes) == len(set(homes))     # each at home exactly once
    assert all(len(p.curves) <= MAX_CURVES for p in out)


def test_footnote_by_panel_names_curves_only_where_some_are_dp():
    specs = check_panels([_spec("p", ["a", "b"], names={"a": "A"}), _spec("o", ["c", "d"])])
    panels = assign(["a", "b", "c", "d"], specs)
    note = footnote(panels, {"a": "paper protocol", "b": "non-private", "c": "non-private"})
    assert note == "† not differentially private — (a) every curve: paper protocol; non-private. (b) “c”: non-private"
    assert footnote(panels, {}) == ""


# ------------------------------------------------------------------------------------------------ the configs
def _config(name):
    return yaml.safe_load((REPO / "configs" / f"{name}.yaml").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", PANELLED)
def test_fig2_and_fig6_panels_hold_every_curve_once_and_the_papers_eight_in_a(name):
    cfg = _config(name)
    labels = [a["label"] for a in cfg["algorithms"]]
    for plot in cfg["plots"]:
        o = GdscCurveOptions.model_validate(plot["options"])
        assert [p.name for p in o.panels] == ["paper", "ours", "beyond"]
        homes = [lb for p in o.panels for lb in p.labels]
        assert sorted(homes) == sorted(labels) and len(homes) == len(set(homes))
        paper = o.panels[0]
        assert paper.paper and len(paper.labels) == 8
        assert set(paper.labels) == {lb for lb in labels if "paper protocol" in lb}
        assert sum("baseline" in lb for lb in paper.labels) == 2
        assert not any("paper" in v or "ours" in v for v in paper.names.values())   # named as in the paper
        beyond = o.panels[2]
        assert {"narplr", "adassp"} <= {a["name"] for a in cfg["algorithms"] if a["label"] in beyond.labels}
        assert beyond.references == ["robust private LR (ours)", "LR (non-private, ours)"]


# ------------------------------------------------------------------------------------------------ the figure
NOT_DP = ("lr", "rlr", "lr_public")


def _results(cfg: dict, seed: int = 5) -> pd.DataFrame:
    """Synthetic results with the config's curves: 2 drugs, 2 repeats, 4 sizes, spearman and wpc."""
    rng = np.random.default_rng(seed)
    ds = {d["label"]: ",".join(f"{k}={v}" for k, v in sorted(d["params"].items())) for d in cfg["datasets"]}
    rows = []
    for a in cfg["algorithms"]:
        paper = "paper protocol" in a["label"]
        none = paper or a["name"] in NOT_DP
        level = rng.uniform(-0.05, 0.25)
        for metric in ("spearman", "wpc"):
            for n in (0, 200, 400, 800):
                for r in range(2):
                    for drug in ("D1", "D2"):
                        rows.append({
                            "experiment": cfg["name"], "dataset": "gdsc", "dataset_params": ds[a["datasets"][0]],
                            "subset": drug, "algorithm": a["name"], "label": a["label"], "params": "",
                            "epsilon": 2.0, "delta": 0.0, "n_private": n, "n_public": 10, "n_test": 100,
                            "n_private_requested": n, "n_public_requested": 10, "n_test_requested": 100,
                            "repeat": r, "metric": metric, "value": level + n / 8000 + rng.normal(0, 0.01),
                            "error": "", "guarantee": "none" if none else "pure",
                            "epsilon_spent": np.nan if none else 2.0, "delta_spent": 0.0, "rho_spent": np.nan,
                            "privacy_note": ("not DP: paper protocol" if paper else
                                             "not DP: non-private baseline" if none else "")})
    return pd.DataFrame(rows)


def _manifest(cfg: dict) -> dict:
    return {"experiment": cfg["name"], "title": cfg["title"], "config": cfg, "raw_config": cfg, "overrides": [],
            "algorithms": [{"name": a["name"], "label": a["label"]} for a in cfg["algorithms"]]}


def _home_curves(fig_axes, panels) -> list[tuple[int, str]]:
    """(panel index, results label) of every curve drawn at home in a panel (references excluded)."""
    out = []
    for j, (ax, p) in enumerate(zip(fig_axes, panels)):
        back = {p.shown(lb): lb for lb in p.labels}
        for name, _artist, _key in layout._curves(ax):
            name = name.replace("\u00a0", " ").replace("\n", " ").removesuffix(" †")
            if re.search(r"\(as in \([a-z]\)\)$", name):
                continue
            out.append((j, back[name]))
    return out


@pytest.mark.parametrize("name", PANELLED)
def test_the_panelled_figure_reads(name, tmp_path, drawn):
    cfg = _config(name)
    df = _results(cfg)
    plot = cfg["plots"][0]
    spec = SimpleNamespace(**{"title": None, "metric": None, "x": None, **plot})
    registry.get("plot", "gdsc_curve")(df, spec, _manifest(cfg), tmp_path / plot["name"], ["png"])
    stems = [s for s, _ in drawn]
    assert stems == [plot["name"]] + [f"{plot['name']}_{p}" for p in ("paper", "ours", "beyond")]
    o = GdscCurveOptions.model_validate(plot["options"])
    panels = assign(list(dict.fromkeys(df["label"])), o.panels)
    fig = drawn[0][1]
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) == 3 and [ax.get_title() for ax in axes] == \
        ["(a) paper protocol", "(b) ours (corrected, DP)", "(c) beyond the paper"]
    # no panel draws more than 8 curves; every curve of the results at home in exactly one panel
    assert all(len(layout._curves(ax)) <= 8 for ax in axes)
    homes = _home_curves(axes, panels)
    assert sorted(lb for _, lb in homes) == sorted(df["label"].unique())
    # one y axis; page width; a legend under each panel, together at most 30 % of the figure
    assert all(axes[0].get_shared_y_axes().joined(axes[0], ax) for ax in axes[1:])
    w, h = fig.get_size_inches()
    assert w == style.PAGE and png_width(tmp_path / f"{plot['name']}.png") == int(style.PAGE * style.DPI)
    assert len(fig.legends) == 3
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    def legend_share(f):
        r = FigureCanvasAgg(f).get_renderer()       # the saved figure was closed: measure it on a new canvas
        f.draw(r)
        boxes = [leg.get_window_extent(r) for leg in f.legends]
        fw, fh = f.get_size_inches()
        return sum(b.width * b.height for b in boxes) / (fw * fh * f.dpi ** 2), boxes, r

    share, boxes, r = legend_share(fig)
    assert share <= 0.30                          # measured 0.21 (Fig. 2); each panel alone 0.13-0.17
    for b, ax in zip(boxes, axes):                       # under its panel, inside the figure
        a = ax.get_window_extent(r)
        assert b.y1 < a.y0 and b.x0 >= 0 and b.x1 <= w * fig.dpi + 1
    # (a) names its curves as the paper does, and its legend has exactly its eight
    assert [t.get_text().replace("\u00a0", " ") for t in fig.legends[0].get_texts()] and \
        not any("paper protocol" in t.get_text() for t in fig.legends[0].get_texts())
    assert len(fig.legends[0].get_texts()) == 8
    # each panel alone, a column wide, on the same y range
    for stem, f in drawn[1:]:
        assert f.get_size_inches()[0] == style.COLUMN and png_width(tmp_path / f"{stem}.png") == \
            int(style.COLUMN * style.DPI)
        assert f.axes[0].get_ylim() == pytest.approx(axes[0].get_ylim())
        assert legend_share(f)[0] <= 0.30
    assert "(a) every curve" in " ".join(t.get_text() for t in fig.texts).replace("\n", " ").replace("\u00a0", " ")


@pytest.mark.parametrize("panels, fragment", [
    ([{"name": "a", "labels": ["LR typo"]}], "plots[0].options.panels[0].labels must name algorithm labels"),
    ([{"name": "a", "labels": ["gdsc LR"]}, {"name": "b", "labels": ["gdsc LR"]}], "at home in one panel"),
    ([{"name": "a", "labels": [f"x{i}" for i in range(9)]}], "at most 8"),
])
def test_a_bad_panel_is_a_config_error(tmp_path, monkeypatch, panels, fragment):
    from click.testing import CliRunner

    from dpexp.cli import main

    monkeypatch.setenv("DPEXP_DATA_DIR", str(REPO / "tests" / "gdsc" / "fixtures"))
    cfg = {"name": "p", "seed": 1, "repeats": 1, "datasets": [{"name": "gdsc", "params": {"d": 5, "test_pool": 6, "public_pool": 4}}],
           "sizes": {"n_private": [0], "n_public": 3, "n_test": 6}, "privacy": {"epsilon": 1.0},
           "algorithms": [{"name": "lr", "label": "gdsc LR"}], "metrics": ["spearman"],
           "plots": [{"kind": "gdsc_curve", "options": {"panels": panels}}]}
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    r = CliRunner().invoke(main, ["validate", str(path)])
    assert r.exit_code == 2 and fragment in r.output and len(r.output.strip().splitlines()) == 1, r.output


def test_another_varying_grid_column_gives_a_row_of_panels_per_value(tmp_path, drawn):
    cfg = _config("gdsc_eps2")
    one = _results(cfg)
    df = pd.concat([one, one.assign(epsilon=1.0, value=one["value"] - 0.05)], ignore_index=True)
    plot = cfg["plots"][0]
    spec = SimpleNamespace(**{"title": None, "metric": None, "x": None, **plot})
    registry.get("plot", "gdsc_curve")(df, spec, _manifest(cfg), tmp_path / "two", ["png"])
    fig = drawn[0][1]
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert titles == [f"({k}) {t}, ε = {e}" for e in (1, 2) for k, t in
                      zip("abc", ("paper protocol", "ours (corrected, DP)", "beyond the paper"))]
    assert len(fig.legends) == 3                                   # a legend per column, not per panel
    assert all(len(layout._curves(ax)) <= 8 for ax in fig.axes)
    assert [len(f.axes) for _, f in drawn[1:]] == [2, 2, 2]         # each panel alone: a row per ε
