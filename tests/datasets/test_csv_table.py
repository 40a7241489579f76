"""The `csv` dataset (dpexp/datasets/table.py): declared bounds, clipping with counts, subsets, public rows, and the
two worked examples (configs/examples/own_data*.yaml) end to end."""

from __future__ import annotations

import json
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from dpexp import spec
from dpexp.cli import main
from dpexp.datasets.table import CsvTable, OutOfBoundsWarning, from_domain, to_domain
from dpexp.errors import ConfigError, UserError
from dpexp.types import Sizes

REPO = Path(__file__).resolve().parents[2]


def _table(tmp_path: Path, rows: dict, name: str = "t.csv") -> Path:
    path = tmp_path / name
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _sizes(n_private, n_public=0, n_test=0):
    return Sizes(n_private, n_public, n_test, n_private, n_public, n_test)


def test_columns_are_mapped_with_the_declared_bounds_row_by_row(tmp_path):
    path = _table(tmp_path, {"x": [20.0, 50.0, 80.0, 35.0], "y": [100.0, 150.0, 200.0, 125.0]})
    ds = CsvTable(path=str(path), response={"y": [100, 200]}, features={"x": [20, 80]})
    s = ds.split("all", _sizes(-1), np.random.default_rng(0))
    got = sorted(zip(s.X_private[:, 0], s.y_private))
    assert got == [(-1.0, -1.0), (-0.5, -0.5), (0.0, 0.0), (1.0, 1.0)]   # symmetric: [lo, hi] -> [-1, 1]
    unit = CsvTable(path=str(path), response={"y": [100, 200]}, features={"x": [20, 80]}, domain="unit")
    s = unit.split("all", _sizes(-1), np.random.default_rng(0))
    assert sorted(s.X_private[:, 0]) == [0.0, 0.25, 0.5, 1.0]
    # one feature, no test rows: predictions at the 25 % and 75 % points of the declared range (x = 35, 65)
    assert s.X_test[:, 0].tolist() == [0.25, 0.75] and np.isnan(s.y_test).all()
    v = np.array([20.0, 41.5, 80.0])
    for domain in ("symmetric", "unit"):
        np.testing.assert_allclose(from_domain(to_domain(v, (20, 80), domain), (20, 80), domain), v, rtol=1e-15)


def test_nothing_is_computed_from_the_rows(tmp_path):
    """Changing one row (even to an extreme value) changes that row's mapped values only: no bound, scale or centre
    comes from the data."""
    base = {"x": [20.0, 50.0, 80.0, 35.0], "y": [100.0, 150.0, 200.0, 125.0]}
    a = _table(tmp_path, base, "a.csv")
    b = _table(tmp_path, {"x": [20.0, 50.0, 80.0, 1e6], "y": [100.0, 150.0, 200.0, -1e6]}, "b.csv")
    kw = dict(response={"y": [100, 200]}, features={"x": [20, 80]})
    sa = CsvTable(path=str(a), **kw).split("all", _sizes(-1), np.random.default_rng(3))
    with pytest.warns(OutOfBoundsWarning):
        CsvTable(path=str(b), **kw).manifest_record()
    sb = CsvTable(path=str(b), **kw).split("all", _sizes(-1), np.random.default_rng(3))
    changed = (sa.X_private[:, 0] != sb.X_private[:, 0]) | (sa.y_private != sb.y_private)
    assert changed.sum() == 1 and sb.X_private[changed, 0] == 1.0 and sb.y_private[changed] == -1.0
    assert sa.meta == sb.meta


def test_out_of_bounds_rows_are_clipped_counted_and_warned_once_or_refused(tmp_path):
    path = _table(tmp_path, {"x": [10.0, 50.0, 90.0, 95.0], "y": [0.5, 0.5, 2.0, 0.5], "g": list("abab")})
    kw = dict(path=str(path), response={"y": [0, 1]}, features={"x": [20, 80]})
    from dpexp import cache

    cache.clear("datasets.csv_warnings")   # said once per process and message
    ds = CsvTable(**kw)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds.check()   # validation (also in every worker process) says nothing
    with pytest.warns(OutOfBoundsWarning, match=r"3 of 4 rows outside their declared bounds were clipped "
                                                r"\(y: 1, x: 3;") as rec:
        ds.manifest_record()
        record = ds.manifest_record()
    assert len(rec) == 1
    assert record == {"out_of_bounds": {"action": "clip", "rows_clipped": 3, "rows": 4,
                                                      "by_column": {"y": 1, "x": 3}}}
    with pytest.raises(UserError, match=r"column 'y' must lie in its declared bounds \[0.0, 1.0\] \(out_of_bounds: "
                                        r"error\), got 2 in data row 3"):
        CsvTable(**kw, out_of_bounds="error").check()


def test_bad_configs_are_one_line_errors(tmp_path, write_config):
    path = _table(tmp_path, {"x": [1.0, 2.0, 3.0], "y": [1.0, "abc", 2.0]})

    def cfg(params: str) -> Path:
        return write_config(textwrap.dedent(f"""
            name: c
            datasets: [{{name: csv, params: {{path: {path}, {params}}}}}]
            sizes: {{n_private: 2}}
            privacy: {{epsilon: 1}}
            algorithms: [{{name: ols}}]
            metrics: [failure_rate]
            """), "c")

    with pytest.raises(ConfigError, match=r"datasets\[0\].params.features is required"):
        spec.load(cfg("response: {y: [0, 5]}"))
    with pytest.raises(ConfigError, match=r"datasets\[0\].params.response must be a mapping, got 'y'"):
        spec.load(cfg("response: y, features: {x: [0, 5]}"))
    with pytest.raises(ConfigError, match=r"need finite lo < hi, got \[5.0, 0.0\]"):
        spec.load(cfg("response: {y: [0, 5]}, features: {x: [5, 0]}"))
    with pytest.raises(ConfigError, match=r"column 'y' must be numeric and finite in every row, got 'abc' in data "
                                          r"row 2 \(1 such row\)"):
        spec.load(cfg("response: {y: [0, 5]}, features: {x: [0, 5]}"))
    with pytest.raises(ConfigError, match=r"no column 'z' \(columns: x, y\)"):
        spec.load(cfg("response: {y: [0, 5]}, features: {z: [0, 5]}"))
    with pytest.raises(ConfigError, match=r"data file not found: .*nope.csv"):
        spec.load(write_config(textwrap.dedent("""
            name: d
            datasets: [{name: csv, params: {path: nope.csv, response: {y: [0, 1]}, features: {x: [0, 1]}}}]
            sizes: {n_private: 2}
            privacy: {epsilon: 1}
            algorithms: [{name: ols}]
            metrics: [failure_rate]
            """), "d"))


def test_subsets_and_a_public_column(tmp_path):
    rng = np.random.default_rng(1)
    n = 40
    path = _table(tmp_path, {"x": rng.uniform(0, 1, n), "y": rng.uniform(0, 1, n), "site": ["a", "b"] * (n // 2),
                             "pub": [1, 0, 0, 0] * (n // 4)})
    ds = CsvTable(path=str(path), response={"y": [0, 1]}, features={"x": [0, 1]}, subset_by="site",
                  public_column="pub", domain="unit")
    assert ds.subsets() == ["a", "b"] and ds.n_rows("a") == 20
    s = ds.split("a", _sizes(6, 5, 3), np.random.default_rng(0))
    df = pd.read_csv(path)
    a_pub = set(df[(df.site == "a") & (df.pub == 1)].x.round(12))
    assert set(s.X_public[:, 0].round(12)) <= a_pub and len(s.X_public) == 5
    assert not set(s.X_private[:, 0].round(12)) & a_pub and len(s.X_private) == 6 and len(s.X_test) == 3
    with pytest.raises(UserError, match=r"sizes.n_public must be <= the 10 rows public_column marks, got 11"):
        ds.split("a", _sizes(2, 11, 0), np.random.default_rng(0))
    with pytest.raises(UserError, match="unknown subset 'c'"):
        ds.split("c", _sizes(2), np.random.default_rng(0))


def test_parquet_when_pyarrow_is_there(tmp_path):
    pytest.importorskip("pyarrow")
    path = tmp_path / "t.parquet"
    pd.DataFrame({"x": [0.0, 1.0, 2.0], "y": [1.0, 2.0, 3.0]}).to_parquet(path)
    s = CsvTable(path=str(path), response={"y": [0, 4]}, features={"x": [0, 2]}, domain="unit").split(
        "all", _sizes(-1), np.random.default_rng(0))
    assert sorted(s.y_private) == [0.25, 0.5, 0.75]


@pytest.mark.parametrize("config, figure", [("own_data", "own_data_spearman"), ("own_data_slr", "own_data_slr_error")])
def test_worked_examples_run_plot_and_report(tmp_path, monkeypatch, config, figure):
    from dpexp import cache

    monkeypatch.chdir(REPO)   # the configs name the shipped CSV relative to the repository root
    cache.clear("datasets.csv_warnings")   # said once per process and message
    out, figs = tmp_path / "res", tmp_path / "figs"
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        r = CliRunner().invoke(main, ["run", f"configs/examples/{config}.yaml", "--out", str(out), "--fast", "-q",
                                      "--jobs", "1"])
    assert r.exit_code == 0, (r.output, r.exc_info)
    assert "rows outside their declared bounds were clipped" in r.output + "".join(str(w.message) for w in rec)
    manifest = json.loads((out / "manifest.json").read_text())
    oob = manifest["datasets"][0]["out_of_bounds"]
    assert oob["rows_clipped"] > 0 and oob["rows"] == 3000
    df = pd.read_csv(out / "results.csv")
    assert df["error"].isna().all() and set(df["subset"]) == {"north", "south", "west"}
    # a release's rows carry its DP guarantee; evaluation metrics that read the private rows (the SLR error bounds
    # against the private OLS) say none, "evaluation against private data" (issue 29)
    released = df[(df["algorithm"] != "lr") & ~df["privacy_note"].fillna("").str.contains("evaluation against private")]
    assert set(released["guarantee"]) <= {"pure", "approx", "zcdp"} or config == "own_data"
    r = CliRunner().invoke(main, ["plot", str(out), "--out", str(figs), "--format", "png"])
    assert r.exit_code == 0, r.output
    assert (figs / f"{figure}.png").stat().st_size > 10_000
    r = CliRunner().invoke(main, ["report", str(out), "--figures", str(tmp_path / "all_figs"),
                                  "--out", str(tmp_path / "report")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "report" / "index.html").is_file()


def test_the_dca_methods_read_the_domain_bounds(tmp_path):
    """|x_j| <= 1 and |y| <= 1 of the symmetric domain are the public bounds DCA's ta/ddp take from split.meta."""
    import dpexp

    rng = np.random.default_rng(2)
    path = _table(tmp_path, {"a": rng.uniform(0, 4, 300), "b": rng.uniform(-1, 1, 300), "y": rng.uniform(0, 9, 300)})
    cfg = {"name": "dca_csv", "seed": 1, "datasets": [{"name": "csv", "params": {
        "path": str(path), "response": {"y": [0, 9]}, "features": {"a": [0, 4], "b": [-1, 1]}}}],
        "sizes": {"n_private": 200, "n_test": 50}, "privacy": {"epsilon": 1.0, "delta": 1e-4},
        "algorithms": [{"name": "ta"}, {"name": "ddp"}], "metrics": ["mae"]}
    r = dpexp.run(cfg, out=tmp_path / "out")
    rows = r.frame[r.frame["metric"] == "mae"]
    assert r.failed_cells == 0 and rows["value"].notna().all() and set(rows["guarantee"]) == {"approx"}
