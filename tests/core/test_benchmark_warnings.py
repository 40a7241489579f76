"""benchmarks/paper_scale.py's host-phase warnings: when the two floors or the run's CPU per cell against the
in-process estimate say that the shared host's speed moved during a measurement."""

import importlib.util
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "paper_scale.py"


@pytest.fixture(scope="module")
def paper_scale():
    spec = importlib.util.spec_from_file_location("paper_scale_under_test", _PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_steady_host_gives_no_warning(paper_scale):
    # this session's steady runs: floors 50.0 / 47.8 s, estimate 110 us, run 109 us per cell
    assert paper_scale.host_phase_warnings(50.0, 47.8, 110e-6, 109e-6) == []
    assert paper_scale.host_phase_warnings(49.8, 48.1, 96e-6, 103e-6) == []     # +7 %: two processes' share


def test_floors_apart_warn(paper_scale):
    (line,) = paper_scale.host_phase_warnings(56.7, 79.1, 100e-6, 105e-6)
    assert "the two floors differ by 40%" in line


def test_run_slower_than_its_estimate_warns(paper_scale):
    # a slow phase during the run only: 96 us estimated, 125 us per cell in the run (+30 %)
    (line,) = paper_scale.host_phase_warnings(51.8, 48.9, 96e-6, 125e-6)
    assert "30% above" in line and "125 us" in line and "96 us" in line
    assert paper_scale.host_phase_warnings(51.8, 48.9, 96e-6, 1.2 * 96e-6) == []   # at the threshold: none
    assert len(paper_scale.host_phase_warnings(40.0, 50.0, 96e-6, 130e-6)) == 2
    # a short run's CPU is mostly its processes' start: no verdict on the host from it
    assert paper_scale.host_phase_warnings(51.8, 48.9, 96e-6, 166e-6, repeats=2) == []
