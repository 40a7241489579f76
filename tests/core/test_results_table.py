"""``ResultsTable``: a results table read in chunks and held per metric gives exactly the rows of the table read at
once (``frame()``), or of a few metrics plus the first row of every distinct privacy tuple (``frame(metrics)``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpexp import registry, results, results_table
from dpexp.results_table import PRIVACY_COLUMNS, ResultsTable
from dpexp.spec import PlotSpec


def _table(tmp_path, rows=200, all_from=None, seed=0):
    """A results.csv.gz with several metrics, NaN values and spent columns, errors, repeated privacy tuples and
    (``all_from``) whole-dataset sizes ("all") from that row on."""
    rng = np.random.default_rng(seed)
    metrics = np.array(["spearman", "wpc", "B_x", "n_private_requested"])
    recs = []
    for i in range(rows):
        m = metrics[i % 4] if i % 13 else "late_metric" if i > rows // 2 else metrics[0]
        eps = [0.5, 1.0, 2.0][i % 3]
        failed = i % 17 == 5
        recs.append({
            "experiment": "t", "dataset": "gdsc", "dataset_params": "centre=public,d=10",
            "subset": f"Drug_{i % 7}", "algorithm": ["rplr", "lr"][i % 2], "label": ["ours", "LR"][i % 2],
            "params": "sigma=dp", "epsilon": eps, "delta": 0.0,
            "guarantee": ["pure", "none"][i % 2], "epsilon_spent": eps if i % 2 == 0 else "",
            "delta_spent": 0.0 if i % 2 == 0 else "", "rho_spent": "",
            "privacy_note": "" if i % 2 == 0 else "not DP: non-private reference",
            "n_private": int(rng.integers(5, 50)), "n_public": 10, "n_test": 30, "d": 10, "repeat": i // 40,
            "trials": 1,
            "n_private_requested": "all" if all_from is not None and i >= all_from else [10, 20, 40][i % 3],
            "n_public_requested": 10, "n_test_requested": 100, "metric": m,
            "value": "" if failed else float(rng.normal()), "seed_key": f"{i:016x}",
            "error": "boom" if failed else ""})
    d = tmp_path / "res"
    d.mkdir()
    pd.DataFrame(recs, columns=results.COLUMNS).to_csv(d / "results.csv.gz", index=False)
    return d


def _read_at_once(d):
    """The reference: the whole table parsed by one ``pd.read_csv`` with ``read_results(compact=True)``'s types.

    Compared exactly, not at a tolerance: both are pandas' one float parser on the same text, and the chunked
    reader only copies the parsed values (codes and takes), never computes with them, so no CPU feature or
    summation order can move a bit."""
    text = {c: "category" for c in (*results.REPEATED_COLUMNS, "n_private_requested")}
    spent = ["epsilon_spent", "delta_spent", "rho_spent"]
    df = pd.read_csv(results.results_file(d), dtype=text, usecols=lambda c: c != "seed_key", keep_default_na=False,
                     na_values={c: [""] for c in ["value", *spent]})
    req = df["n_private_requested"]
    if "all" not in req.cat.categories:
        cats = pd.to_numeric(pd.Series(req.cat.categories))
        df["n_private_requested"] = cats.iloc[req.cat.codes.to_numpy()].to_numpy()
    for c in ["value", *spent]:
        df[c] = pd.to_numeric(df[c], errors="coerce")
    return df


@pytest.mark.parametrize("chunk", [7, 64, 10_000])
@pytest.mark.parametrize("all_from", [None, 150])
def test_frame_is_the_table_read_at_once(tmp_path, monkeypatch, chunk, all_from):
    d = _table(tmp_path, all_from=all_from)
    monkeypatch.setattr(results_table, "CHUNK_ROWS", chunk)
    full = _read_at_once(d)
    table = ResultsTable.read(d)
    pd.testing.assert_frame_equal(table.frame(), full)
    pd.testing.assert_frame_equal(results.read_results(d, compact=True), full)
    assert table.metrics == list(dict.fromkeys(full["metric"]))
    # "all" only in a later chunk still keeps the requested sizes as text, as the read at once does
    assert isinstance(table.frame(["wpc"])["n_private_requested"].dtype, pd.CategoricalDtype) == (all_from is not None)

    first = ~full[list(PRIVACY_COLUMNS)].duplicated()
    for metrics in ([], ["spearman"], ["late_metric", "wpc"], ["B_x", "no_such_metric"]):
        want = full[full["metric"].isin(metrics).to_numpy() | first.to_numpy()]
        want.index = want.index.astype(np.int64)
        got = table.frame(metrics)
        # the categories of a few metrics' frame are those of the chunks that hold them: values and order compared
        pd.testing.assert_frame_equal(got, want, check_categorical=False)
        assert list(got["label"].unique()) == list(full["label"].unique())
        for c in results.REPEATED_COLUMNS:
            assert list(got[c].cat.categories) == sorted(got[c].cat.categories)


def test_first_rows_hold_every_distinct_privacy_tuple(tmp_path, monkeypatch):
    from dpexp.plotting.privacy import curve_privacy

    d = _table(tmp_path, rows=300, seed=3)
    monkeypatch.setattr(results_table, "CHUNK_ROWS", 11)
    full = _read_at_once(d)
    manifest = {"algorithms": [{"name": "rplr", "label": "ours"}, {"name": "lr", "label": "LR"}]}
    assert curve_privacy(ResultsTable.read(d).frame([]), manifest) == curve_privacy(full, manifest)


def test_plot_kinds_declare_the_metrics_they_read():
    registry.load_all()
    columns = results.COLUMNS
    assert registry.plot_reads("gdsc_curve", PlotSpec(kind="gdsc_curve", metric="wpc"), columns) == ["wpc"]
    old = [c for c in columns if not c.endswith("_requested")]   # a table before the requested-size columns
    assert registry.plot_reads("gdsc_tradeoff", PlotSpec(kind="gdsc_tradeoff"), old) == [
        "spearman", "n_private_requested", "n_public_requested"]
    assert registry.plot_reads("curve", PlotSpec(kind="curve", metric="mae"), columns) == ["mae"]
    assert registry.plot_reads("curve", PlotSpec(kind="curve"), columns) is None   # the table's first metric
    assert registry.plot_reads("slr_ecdf", PlotSpec(kind="slr_ecdf"), columns) is None


def _rewrite(d, edit):
    """The table of ``d`` as text, changed by ``edit`` (lines -> lines), written back as results.csv."""
    import gzip

    lines = gzip.decompress((d / "results.csv.gz").read_bytes()).decode().splitlines()
    (d / "results.csv.gz").unlink()
    (d / "results.csv").write_text("\n".join(edit(lines)) + "\n")


@pytest.mark.parametrize("compact", [True, False])
def test_a_value_that_is_not_a_number_is_an_error_naming_file_row_and_column(tmp_path, monkeypatch, compact):
    """Read as text, 'oops' would become a NaN: a failed cell that never failed.  One line instead, naming the data
    row (from 1 after the header), in a late chunk too, and not thrown off by an earlier error message that holds a
    line break (quoted: one row, two lines)."""
    monkeypatch.setattr(results_table, "CHUNK_ROWS", 64)
    d = _table(tmp_path)
    cols = results.COLUMNS

    def edit(lines):
        import csv
        import io

        def rewrite(i, column, text):
            row = next(csv.reader([lines[i]]))
            row[cols.index(column)] = text
            out = io.StringIO()
            csv.writer(out, lineterminator="\n").writerow(row)   # "\n" so that a field holding one is quoted
            lines[i] = out.getvalue()[:-1]

        rewrite(10, "error", "first line\nsecond line")   # data row 10
        rewrite(150, "value", "oops")                     # data row 150
        return lines

    _rewrite(d, edit)
    with pytest.raises(results.UserError, match=r"results\.csv: row 150, column value: 'oops' is not a number"):
        results.read_results(d, compact=compact)


@pytest.mark.parametrize("compact", [True, False])
def test_a_table_cut_short_or_without_its_columns_is_one_line(tmp_path, compact):
    d = _table(tmp_path)
    _rewrite(d, lambda lines: lines[:40] + ['t,"gdsc,unterminated'])
    with pytest.raises(results.UserError, match=r"results\.csv: not a readable results table \(.*\); rerun"):
        results.read_results(d, compact=compact)
    (d / "results.csv").write_text("experiment,label\nt,ours\n")
    with pytest.raises(results.UserError, match=r"not a dpexp results table \(no column algorithm, metric, value\)"):
        results.read_results(d, compact=compact)
    (d / "results.csv").unlink()
    (tmp_path / "w").mkdir()
    whole = (_table(tmp_path / "w", rows=2000) / "results.csv.gz").read_bytes()
    # a gzip header then garbage (ISA-L: an invalid deflate block), a member cut short (EOFError), not gzip at all
    for bad in (b"\x1f\x8b\x08\x00garbage", b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xffgarbagegarbage",
                whole[: len(whole) // 2], b"plain text, not gzip\n"):
        (d / "results.csv.gz").write_bytes(bad)
        with pytest.raises(results.UserError, match=r"results\.csv\.gz: not a readable results table \(.+\); rerun"):
            results.read_results(d, compact=compact)


@pytest.mark.parametrize("chunk", [7, 10_000])
def test_number_like_text_in_a_repeated_column_keeps_its_text(tmp_path, monkeypatch, chunk):
    """pandas' categorical parse types the categories by their look, per chunk: a subset "007" in every row of a
    chunk would come back as 7, a label "1.50" as 1.5.  The reader parses such a column again as text, so the frame
    holds the file's text, in every chunk."""
    d = _table(tmp_path, rows=60)
    monkeypatch.setattr(results_table, "CHUNK_ROWS", chunk)

    def edit(lines):
        import csv
        import io

        rows = list(csv.reader(lines))
        s, lab = rows[0].index("subset"), rows[0].index("label")
        for i, row in enumerate(rows[1:]):
            row[s] = "007" if i < 30 else f"Drug_{i % 3}"
            row[lab] = "1.50"
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows(rows)
        return out.getvalue().splitlines()

    _rewrite(d, edit)
    table = ResultsTable.read(d)
    frame = table.frame()
    assert list(frame["subset"].astype(str)[:30]) == ["007"] * 30 and frame["subset"].iloc[40] == "Drug_1"
    assert set(frame["label"].astype(str)) == {"1.50"}
    assert "label" in table.text and ("subset" in table.text) == (chunk < 30)   # a chunk of "007" subsets only
    assert list(frame.index) == list(range(60)) and table.rows == 60
