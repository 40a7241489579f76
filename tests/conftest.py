"""Shared test helpers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _no_progress_noise(monkeypatch):
    monkeypatch.setenv("TQDM_DISABLE", "1")
    yield


@pytest.fixture(autouse=True)
def _every_figure_fits(monkeypatch):
    """Every figure a test draws keeps its declared width, shows all it draws and gives the plot room
    (``dpexp.plotting.layout.misfits``): the GDSC figure that grew to 1670 px with its plot squeezed to 55 %."""
    from dpexp.plotting import layout

    original = layout.save

    def checked(fig, out_stem, formats):
        problems = layout.misfits(fig)
        assert not problems, f"{out_stem.name}: {problems}"
        return original(fig, out_stem, formats)

    monkeypatch.setattr(layout, "save", checked)
    yield


@pytest.fixture(autouse=True)
def _calibration_warnings_anew():
    """Calibration warnings are said once per process (``mechanisms.warn_calibration``): every test starts afresh."""
    from dpexp import cache

    cache.clear("privacy.calibration_warnings")
    yield


@pytest.fixture
def isolated_cache(tmp_path, monkeypatch):
    """Disk caches in tmp_path and empty in-process memos, before and after the test (dpexp.cache)."""
    from dpexp import cache

    monkeypatch.setenv("DPEXP_CACHE_DIR", str(tmp_path))
    cache.clear()
    yield tmp_path
    cache.clear()


@pytest.fixture
def write_config(tmp_path):
    """Write a YAML text to tmp_path/<name>.yaml and return its path."""

    def _write(text: str, name: str = "cfg") -> Path:
        p = tmp_path / f"{name}.yaml"
        p.write_text(text, encoding="utf-8")
        return p

    return _write


def repo_env() -> dict[str, str]:
    env = dict(os.environ)
    env["TQDM_DISABLE"] = "1"
    return env
