"""Results across CPUs (ARCHITECTURE.md, "Reproducibility"; issue 27): the same ``--fast`` configs run with numpy's
full CPU dispatch and with its AVX-512 kernels disabled (``NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL"``, what a
machine without AVX-512 runs) give the same rows, the same texts and privacy columns, and numbers equal to a
relative 1e-9.  The tolerance: SIMD kernels may round a sum or a power differently in the last bit (numpy's
AVX-512 ``power`` differs from libm's for ~5 % of doubles), and the iterative fits carry such a bit through a few
dozen updates, far below 1e-9; an algorithm that turned last bits into a different decision (a flipped argmax, a
different branch) would show as a difference far above it.  Byte identity is promised only on one machine and
environment (--jobs, --cluster, resume: tests/core/test_runner.py, test_cluster.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
NO_AVX512 = "X86_V4 AVX512_ICL"
CONFIGS = ["demo", "gdsc_eps2", "slr_synthetic_n", "dca_uci_abalone", "noise_aware_synthetic"]
RTOL, ATOL = 1e-9, 1e-12


def _run(config: str, out: Path, disable: str | None) -> pd.DataFrame:
    env = {k: v for k, v in os.environ.items() if k != "NPY_DISABLE_CPU_FEATURES"}
    env["TQDM_DISABLE"] = "1"
    if disable:
        env["NPY_DISABLE_CPU_FEATURES"] = disable
    r = subprocess.run([sys.executable, "-m", "dpexp.cli", "run", str(REPO / "configs" / f"{config}.yaml"), "--fast",
                        "--jobs", "1", "--out", str(out), "--quiet"], capture_output=True, text=True, env=env,
                       cwd=REPO, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    files = sorted(out.glob("results.csv*"))
    return pd.read_csv(files[0])


def _dispatch_can_be_restricted() -> bool:
    code = "from numpy._core._multiarray_umath import __cpu_features__ as f; print(int(f.get('AVX512F', 0)))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "NPY_DISABLE_CPU_FEATURES": NO_AVX512})
    return r.returncode == 0


def compare(a: pd.DataFrame, b: pd.DataFrame) -> list[str]:
    """The differences beyond the stated tolerance (empty when none)."""
    problems = []
    if list(a.columns) != list(b.columns) or len(a) != len(b):
        return [f"shape or columns differ: {a.shape} {b.shape}"]
    for c in a.columns:
        x, y = a[c], b[c]
        if pd.api.types.is_float_dtype(x) and pd.api.types.is_float_dtype(y):
            xa, ya = x.to_numpy(), y.to_numpy()
            if not np.array_equal(np.isnan(xa), np.isnan(ya)):
                problems.append(f"{c}: NaN in different rows")
            elif not np.allclose(xa, ya, rtol=RTOL, atol=ATOL, equal_nan=True):
                bad = ~np.isclose(xa, ya, rtol=RTOL, atol=ATOL, equal_nan=True)
                problems.append(f"{c}: {int(bad.sum())} values beyond rtol {RTOL}, e.g. {xa[bad][0]!r} vs {ya[bad][0]!r}")
        elif not x.equals(y):
            problems.append(f"{c}: texts differ in {int((x.astype(str) != y.astype(str)).sum())} rows")
    return problems


def test_compare_sees_a_difference():
    a = pd.DataFrame({"v": [1.0, 2.0, np.nan], "t": ["x", "y", "z"]})
    assert compare(a, a.copy()) == []
    assert compare(a, a.assign(v=[1.0, 2.0 * (1 + 1e-15), np.nan])) == []
    assert compare(a, a.assign(v=[1.0, 2.0 * (1 + 1e-6), np.nan]))
    assert compare(a, a.assign(v=[1.0, np.nan, np.nan]))
    assert compare(a, a.assign(t=["x", "y", "w"]))


@pytest.mark.skipif(not _dispatch_can_be_restricted(), reason="numpy here cannot restrict its CPU dispatch")
@pytest.mark.parametrize("config", CONFIGS)
def test_fast_config_agrees_without_avx512(config, tmp_path):
    full = _run(config, tmp_path / "full", None)
    restricted = _run(config, tmp_path / "restricted", NO_AVX512)
    assert compare(full, restricted) == []
