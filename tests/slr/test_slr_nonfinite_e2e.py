"""End to end (issue 33): slr_stock on a copy of the staged stock-exchange CSV with two NaN cells in its x column
and an empty cell in another ends (the subprocess timeout fails a hang) — with exit code 2 and one line naming the bad values (checked at
load), or with exit code 1 and every cell failed with the non-finite reason — never a hang, never a DP row."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
STOCK = REPO.parent / "shared" / "data" / "istanbul_stock_exchange" / "data_akbilgic.csv"


@pytest.mark.skipif(not STOCK.exists(), reason="staged stock-exchange data not present")
def test_slr_stock_with_nan_cells_ends_with_a_reason(tmp_path):
    rows = list(csv.reader(STOCK.open()))
    head = rows[0]
    x, other = head.index("ISE_TL"), head.index("EU")
    rows[5][x], rows[9][x], rows[12][other] = "NaN", "NaN", ""
    data = tmp_path / "data" / "istanbul_stock_exchange"
    data.mkdir(parents=True)
    with (data / STOCK.name).open("w", newline="") as f:
        csv.writer(f).writerows(rows)
    out = tmp_path / "out"
    env = {**os.environ, "DPEXP_DATA_DIR": str(tmp_path / "data"), "TQDM_DISABLE": "1"}
    r = subprocess.run([sys.executable, "-m", "dpexp.cli", "run", str(REPO / "configs" / "slr_stock.yaml"), "--fast",
                        "--jobs", "1", "--out", str(out), "--quiet"], capture_output=True, text=True, env=env,
                       timeout=300, cwd=REPO)
    assert r.returncode in (1, 2), (r.returncode, r.stderr[-2000:])
    if r.returncode == 2:
        lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
        assert len(lines) == 1 and STOCK.name in lines[0] and "column 'ISE_TL'" in lines[0], r.stderr
        assert "row 5" in lines[0] and ("missing value" in lines[0] or "non-finite" in lines[0]), r.stderr
        assert not (out / "results.csv").exists()
    else:
        fails = pd.read_csv(out / "failures.csv")
        assert len(fails) > 0 and fails["error"].str.contains("non-finite value in private x").all()
        res = pd.read_csv(out / "results.csv")
        ok = res[res["error"].isna()] if "error" in res else res
        assert ok.empty or set(ok.get("guarantee", pd.Series(dtype=str)).dropna()) <= {"none"}
