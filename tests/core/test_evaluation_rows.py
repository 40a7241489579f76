"""Evaluation metrics marked (issue 29): a metric that reads the private rows (``Metric.reads_private``) writes its
rows with guarantee ``none`` ("evaluation against private data", the release named in the note), in the same row
order; the curve's guarantee in plots, summaries and the report stays the release's."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from dpexp import registry
from dpexp.plotting.privacy import NotDP, curve_privacy
from dpexp.privacy.guarantee import Guarantee, evaluation_columns, is_evaluation, release_kind
from dpexp.results import read_manifest, read_results

FIX = Path(__file__).resolve().parents[1] / "slr" / "fixtures"
registry.load_all()

CFG = """\
name: eval_rows
seed: 3
repeats: 1
trials: 10
datasets:
  - name: stock_exchange      # declared public ranges: the rows' guarantee is the release's (min-max: none)
    params: {x_range: [[-0.1, 0.1]], y_range: [[-0.1, 0.1]]}
sizes: {n_private: all, n_test: 0}
privacy: {epsilon: [1, 4]}
algorithms:
  - {name: ols, label: OLS}
  - {name: noisy_stats, label: NoisyStats}
metrics: [error_bound_se, failure_rate, ols_estimate, {name: output_quantile, label: q50, params: {level: 50}},
          n_var_x, prediction]
"""
EVAL = {"error_bound_se", "ols_estimate", "n_var_x"}


@pytest.fixture
def run(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("DPEXP_DATA_DIR", str(FIX))
    cfg = tmp_path / "eval.yaml"

    def _run(text: str = CFG, name: str = "a"):
        cfg.write_text(text)
        r = cli(["run", str(cfg), "--out", str(tmp_path / name), "--jobs", "1", "-q"])
        return r, tmp_path / name

    return _run


def test_metrics_declare_whether_they_read_private_rows():
    reads = {n: registry.get("metric", n)().reads_private for n in registry.names("metric")}
    assert all(isinstance(v, bool) for v in reads.values())
    assert {n for n, v in reads.items() if v} >= {"error_bound", "error_bound_se", "ols_estimate", "ols_se",
                                                 "n_var_x", "error_bound_true_se"}
    for n in ("failure_rate", "output_quantile", "prediction", "error_bound_true", "mae", "n_private_requested"):
        if n in reads:
            assert not reads[n], n
    eb = registry.get("metric", "error_bound_true")
    assert not eb().reads_private and eb(normalize="se").reads_private and not eb(normalize="se_true").reads_private


def test_evaluation_columns_keep_the_release_readable():
    cols = evaluation_columns(Guarantee.pure(1.0).row())
    assert cols[0] == "none" and all(math.isnan(v) for v in cols[1:4])
    assert cols[4] == "not DP: evaluation against private data; release: ε = 1 (pure DP)"
    assert is_evaluation(cols[4]) and release_kind(cols[4]) == "pure"
    for g, kind in ((Guarantee("approx", 1.0, 1e-5), "approx"), (Guarantee("zcdp", rho=0.5), "zcdp"),
                    (Guarantee.none("non-private baseline"), "none")):
        assert release_kind(evaluation_columns(g.row())[4]) == kind
    assert release_kind("not DP: non-private baseline") == "" and not is_evaluation("ε = 1")


def test_evaluation_rows_say_none_and_keep_their_order(run):
    r, out = run()
    assert r.exit_code == 0, r.output
    df = read_results(out)
    ns = df[df.label == "NoisyStats"]
    ev, rel = ns[ns.metric.isin(EVAL)], ns[~ns.metric.isin(EVAL)]
    assert (ev.guarantee == "none").all() and ev.epsilon_spent.isna().all()
    assert ev.privacy_note.map(is_evaluation).all()
    assert ev.privacy_note.str.contains(r"release: ε = (?:1|4) \(pure DP\)").all()
    assert (rel[rel.metric.isin(["failure_rate", "q50", "prediction"])].guarantee == "pure").all()
    # the rows of one cell in the config's metric order, as before (runs of a record cut, never reordered)
    cell = ns[(ns.epsilon == 1)]
    assert list(cell.metric[:6]) == ["error_bound_se", "failure_rate", "ols_estimate", "q50", "n_var_x",
                                     "prediction"]
    # the curves: the release's guarantee, the evaluation metrics named apart; only OLS is not DP
    cps = {c.label: c for c in curve_privacy(df, read_manifest(out))}
    assert cps["NoisyStats"].guarantee == "pure" and not cps["NoisyStats"].not_dp
    assert set(cps["NoisyStats"].evaluation.split(", ")) == EVAL
    assert cps["OLS"].not_dp and set(NotDP(df, read_manifest(out)).reasons) == {"OLS"}


def test_a_curve_of_evaluation_rows_only_takes_the_release_kind_from_the_notes(run):
    r, out = run(CFG.replace("metrics: [error_bound_se, failure_rate, ols_estimate, {name: output_quantile, "
                             "label: q50, params: {level: 50}},\n          n_var_x, prediction]",
                             "metrics: [error_bound_se]"), "b")
    assert r.exit_code == 0, r.output
    df = read_results(out)
    df = df[df.metric == "error_bound_se"]     # (NoisyStats' extras are release rows: left out here)
    assert len(df) and (df.guarantee == "none").all()
    cps = {c.label: c for c in curve_privacy(df, read_manifest(out))}
    assert cps["NoisyStats"].guarantee == "pure" and not cps["NoisyStats"].not_dp
    assert cps["NoisyStats"].evaluation == "error_bound_se" and cps["OLS"].not_dp


def test_the_report_names_the_evaluation_metrics():
    from dpexp.plotting.privacy import CurvePrivacy
    from dpexp.report.page import _privacy_table

    c = CurvePrivacy("NS", "noisy_stats", "pure", "1", "0", "", "replace-one", "", "results.csv", "ols_se")
    html = str(_privacy_table([c]))
    assert "evaluation metrics" in html and "ols_se" in html and "evaluation against private data" in html
    assert "evaluation against private data" not in str(_privacy_table([CurvePrivacy(
        "NS", "noisy_stats", "pure", "1", "0", "", "replace-one", "", "results.csv")]))
