"""The preprocessing rule on SLR data (docs/privacy.md "Preprocessing"): the paper's min–max rescaling over the whole
file reads the private rows unpaid, so every row says guarantee ``none`` with the reason; declared public ranges
compute nothing across rows and the algorithm's guarantee stands.  The OI ranks and release rule read every row:
``none``."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from dpexp.families.slr.datasets.opportunity import Opportunity
from dpexp.families.slr.datasets.uci import MINMAX_NOTE, BikeShare, StockExchange, _load_bikeshare
from dpexp.results import read_results

FIX = Path(__file__).parent / "fixtures"

CFG = textwrap.dedent("""\
    name: slr_pre
    seed: 3
    repeats: 1
    trials: 5
    datasets:
      - name: bikeshare
        label: paper
      - name: bikeshare
        label: declared
        params: {x_range: [[0.0, 1.0]], y_range: [[0.0, 1000.0]]}
    sizes: {n_private: all, n_test: 0}
    privacy:
      epsilon: 2
    algorithms:
      - {name: noisy_stats, label: NoisyStats}
    metrics: [failure_rate]
    """)


def test_minmax_is_none_with_the_note_and_declared_ranges_keep_the_guarantee(cli, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(CFG)
    r = cli(["--data-dir", FIX, "run", cfg, "--out", tmp_path / "o", "--jobs", "1", "-q"])
    assert r.exit_code == 0, r.output
    df = read_results(tmp_path / "o")
    declared_rows = df.dataset_params.fillna("").str.contains("x_range")
    paper, declared = df[~declared_rows], df[declared_rows]
    assert len(paper) and len(declared)
    assert (paper.guarantee == "none").all() and paper.epsilon_spent.isna().all()
    assert paper.privacy_note.str.startswith(f"not DP: {MINMAX_NOTE}").all()
    assert (declared.guarantee == "pure").all() and (declared.epsilon_spent == 2.0).all()
    assert not declared.privacy_note.str.contains("min–max").any()


def test_statements_follow_the_rule():
    assert BikeShare().preprocessing().leaks and BikeShare().preprocessing().note == MINMAX_NOTE
    assert not BikeShare(x_range=(0.0, 1.0), y_range=(0.0, 1000.0)).preprocessing().leaks
    assert BikeShare(x_range=(0.0, 1.0)).preprocessing().leaks           # y still min-max: still not DP
    assert StockExchange().preprocessing().leaks
    assert not StockExchange(x_range=(-0.1, 0.1), y_range=(-0.1, 0.1)).preprocessing().leaks
    pre = Opportunity().preprocessing()
    assert pre.leaks and "percentile ranks" in pre.note and pre.note.endswith("not DP")


@pytest.mark.parametrize("declared", [False, True])
def test_one_extreme_row_moves_the_other_rows_only_under_min_max(tmp_path, declared):
    """The reason for the rule, on the loader itself: change one row's raw x to an extreme value; with min–max
    every other rescaled row moves, with declared ranges none does."""
    import pandas as pd

    raw = pd.read_csv(FIX / "bike_sharing" / "hour.csv")
    x_range, y_range = ((0.0, 1.0), (0.0, 1000.0)) if declared else (None, None)
    out = []
    for k, t in enumerate((raw["temp"].iloc[0], 0.99)):   # row 0 (subset m01_h00) made extreme
        path = tmp_path / f"{k}.csv"
        raw.assign(temp=[t, *raw["temp"].iloc[1:]]).to_csv(path, index=False)
        out.append(_load_bikeshare(str(path), x_range, y_range))
    moved = any(not np.array_equal(out[0][s][0], out[1][s][0]) for s in out[0] if s != "m01_h00")
    assert moved is (not declared)
