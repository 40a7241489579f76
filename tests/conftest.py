"""Shared test helpers."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _no_progress_noise(monkeypatch):
    monkeypatch.setenv("TQDM_DISABLE", "1")
    yield


@pytest.fixture(autouse=True)
def _every_figure_fits(monkeypatch):
    """Every figure a test draws keeps its declared width, shows all it draws and gives the plot room
    (``dpexp.plotting.layout.misfits``): the GDSC figure that grew to 1670 px with its plot squeezed to 55 %.  Its
    log axes are labelled in the one format (``dpexp.plotting.ticks.log_label_problems``)."""
    from dpexp.plotting import layout, ticks

    original = layout.save

    def checked(fig, out_stem, formats):
        problems = layout.misfits(fig) + ticks.log_label_problems(fig, draw=False)
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


@pytest.fixture(scope="session")
def cli():
    """``cli([ARGS...])``: invoke ``dpexp ARGS`` in-process (click's CliRunner), exceptions propagating."""
    from click.testing import CliRunner

    from dpexp.cli import main

    def _invoke(args):
        return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)

    return _invoke


@pytest.fixture(scope="session")
def slow_config():
    """``slow_config(algorithm, null_params)``: YAML of 24 chunks of ~0.15 s each (``null_model`` sleeps beside
    ``algorithm``) - long enough to kill a run part-way, short enough for CI (the resume and cluster tests)."""

    def _text(algorithm: str, null_params: str, repeats: int = 24) -> str:
        return textwrap.dedent(f"""\
            name: slow
            seed: 3
            repeats: {repeats}
            datasets:
              - name: honkela_synthetic
                params: {{d: 3}}
            sizes: {{n_private: [10, 20], n_public: 2, n_test: 10}}
            privacy: {{epsilon: 1.0}}
            algorithms:
              - name: {algorithm}
              - name: null_model
                params: {null_params}
            metrics: [spearman, mae]
            chunk_work: 4
            """)

    return _text


@pytest.fixture
def run_config(tmp_path, cli):
    """``run_config(config, *args)``: write ``config`` (a dict) to tmp_path, ``dpexp run`` it into tmp_path/res with
    ``--jobs 1 -q`` and ``args``, check that it succeeded and return (results folder, results.csv as strings)."""
    import pandas as pd
    import yaml

    def _run(config: dict, *args: str):
        path = tmp_path / f"{config['name']}.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        out = tmp_path / "res"
        r = cli(["run", path, "--out", out, "--jobs", "1", "-q", *args])
        assert r.exit_code == 0, r.output
        return out, pd.read_csv(out / "results.csv", keep_default_na=False)

    return _run


@pytest.fixture
def many_equals_one():
    """``many_equals_one(name, outputs, splits)``: the registered metric ``name`` scores the cells at once
    (``Metric.many``) exactly as one cell at a time — the same floats to the bit; returns the per-cell values."""
    from dpexp import registry

    registry.load_all()

    def _check(name: str, outputs: list, splits: list) -> list[float]:
        metric = registry.get("metric", name)()
        one = [float(metric(o, s)) for o, s in zip(outputs, splits)]
        assert [repr(v) for v in metric.many(outputs, splits)] == [repr(v) for v in one]
        return one

    return _check


@pytest.fixture
def opendp_noise_off(monkeypatch):
    """Secure-mode tests that compare two code paths of one method (batched against one split, shared set-up
    against fresh) need the same numbers from the same bytes; OpenDP's floating-point-safe samplers
    (``dpexp.privacy.fp_safe``) draw from their own CSPRNG and cannot be seeded, so here they add no noise — every
    other secure draw still comes from the fixed byte streams, and the spends are recorded as in a real run.  The
    samplers themselves are tested in tests/privacy/test_fp_safe.py."""
    from dpexp.privacy import fp_safe

    monkeypatch.setattr(fp_safe, "add_laplace", lambda values, scales: np.array(values, dtype=float))
    monkeypatch.setattr(fp_safe, "add_gaussian", lambda values, sigmas: np.array(values, dtype=float))
    yield
