"""The Table 1 harness's memory measurement (``timing.RoundMemory``): the round's peak from the kernel's resident
high-water mark, so the timed round runs untraced; ``tracemalloc`` where the mark cannot be reset."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from dpexp.families.dca.algorithms import timing


def _allocate(mib: int) -> None:
    a = np.ones(mib << 17)        # mib MiB of float64, every page written (resident)
    a += 1.0
    del a


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the high-water mark of /proc/self/status")
def test_round_peak_is_the_resident_high_water_mark():
    if timing.RoundMemory._reset() is None:
        pytest.skip("this kernel does not reset the high-water mark (clear_refs)")
    _allocate(120)                # an earlier, larger peak: the reset must hide it
    with timing.RoundMemory() as m:
        assert m._rss is not None                    # measured from the kernel, nothing traced
        _allocate(40)
    assert 35 <= m.peak_mib <= 80, m.peak_mib
    with timing.RoundMemory() as small:
        _allocate(1)
    assert 0 <= small.peak_mib < 35


def test_round_peak_falls_back_to_tracemalloc(monkeypatch):
    import tracemalloc

    monkeypatch.setattr(timing.RoundMemory, "_reset", staticmethod(lambda: None))
    with timing.RoundMemory() as m:
        assert tracemalloc.is_tracing()
        _allocate(30)
    assert not tracemalloc.is_tracing() and 29 <= m.peak_mib <= 40, m.peak_mib


def test_time_round_reports_seconds_and_peak():
    out = timing.time_round(1000, 100, 4, False, 1.0, 1e-4, np.random.default_rng(0))
    assert out["seconds"] > 0 and out["peak_mib"] >= 0 and out["noise_factor"] == pytest.approx(1000 / 999)
    assert timing.time_round(1000, 100, 4, False, 1.0, 1e-4, np.random.default_rng(0),
                             trace_memory=False)["peak_mib"] == 0.0
