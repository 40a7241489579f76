"""The fast paths of a run (ranks without scipy's per-call overhead, CSV formatting once per cell) give exactly
what the plain computations give."""

from __future__ import annotations

import csv
import io
import math

import numpy as np
import pytest
from scipy import stats

from dpexp.metrics.accuracy import average_ranks, spearman_rows
from dpexp.results import COLUMNS, Row
from dpexp.runner import _rows_to_csv


def test_average_ranks_known_values_and_ties():
    A = np.array([[3.0, 1.0, 2.0, 2.0, 5.0], [1.0, 1.0, 1.0, 1.0, 1.0]])
    assert average_ranks(A).tolist() == [[4.0, 1.0, 2.5, 2.5, 5.0], [3.0, 3.0, 3.0, 3.0, 3.0]]
    assert average_ranks(np.array([[0.5, -1.0, 7.0]])).tolist() == [[2.0, 1.0, 3.0]]


@pytest.mark.parametrize("seed", range(5))
def test_average_ranks_equal_scipy_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    for _ in range(40):
        m, n = int(rng.integers(1, 4)), int(rng.integers(1, 40))
        A = rng.integers(0, int(rng.integers(1, 8)), size=(m, n)).astype(float) if rng.random() < 0.5 \
            else rng.normal(size=(m, n))
        assert np.array_equal(average_ranks(A), stats.rankdata(A, axis=1))


def test_spearman_rows_against_scipy_with_ties_constants_and_nan():
    rng = np.random.default_rng(3)
    y = rng.normal(size=30)
    P = np.stack([y + rng.normal(size=30), np.round(y), np.full(30, 2.0), y])
    P[3, 4] = np.nan
    got = spearman_rows(P, y)
    assert got[0] == pytest.approx(stats.spearmanr(P[0], y)[0], abs=1e-12)
    assert got[1] == pytest.approx(stats.spearmanr(P[1], y)[0], abs=1e-12)
    assert got[2] == 0.0 and got[3] == 0.0          # constant row, non-finite row
    y2 = y.copy()                                    # another array with other values is not served from the memo
    y2[:] = -y
    assert spearman_rows(P[:1], y2)[0] == pytest.approx(-got[0], abs=1e-12)


def _plain(rows):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for r in rows:
        w.writerow(["" if isinstance(x, float) and math.isnan(x) else repr(x) if isinstance(x, float) else str(x)
                    for x in r])
    return buf.getvalue().encode()


def _row(eps, metric, value, err="", n_req=10):
    return Row("e", "gdsc", "d=10,missing=after_split", "Drug, \"1\"", "rplr", "lab", "", eps, 0.0, 5, 10, 100, 10,
               0, 1, n_req, 10, 100, metric, value, "abc", err)


def test_rows_to_csv_formats_like_the_plain_writer():
    one, one_f = 1, 1.0                  # equal values of other types must not share a formatted prefix
    cell = [_row(2.0, "spearman", 0.25), _row(2.0, "wpc", float("nan"), "boom, \"x\"")]
    rows = cell + [_row(one, "mae", 1e-300), _row(one_f, "mae", -0.0, n_req="all"), _row(one_f, "mae", 3.0)]
    got = _rows_to_csv(rows, header=True)
    assert got == (",".join(COLUMNS) + "\n").encode() + _plain(rows)
    assert b",1,0.0," in got and b",1.0,0.0," in got
