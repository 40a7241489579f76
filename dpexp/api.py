"""The public Python API: run a config and read its results from a notebook or a script (docs/api.md).

``dpexp.run(config, out=None, **overrides)`` runs exactly what ``dpexp run`` runs: it reads and validates the config
with ``dpexp.spec`` (``prepare``, which the CLI calls too) and executes it with ``dpexp.runner.run_experiment``, so
results, manifest and resume behave as on the command line.  ``dpexp.load(results_dir)`` reads a finished run.
Both return ``Results``: the tidy results table (``frame``), the manifest and ``plot()``/``summary()``, which call
the code of ``dpexp plot`` and ``dpexp summarize``.
"""

from __future__ import annotations

import copy
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from dpexp.errors import ConfigError, UserError

@dataclass
class Results:
    """A results directory: ``frame`` (the tidy table of ``results.csv``, one row per cell x metric), ``manifest``
    (``manifest.json``: config, seeds, environment, privacy summary) and ``path``.  ``failed_cells`` counts the
    cells that failed (their rows carry the error; ``path/failures.csv`` lists them)."""

    path: Path
    frame: pd.DataFrame
    manifest: dict[str, Any]
    failed_cells: int = 0
    figures: list[Path] = field(default_factory=list)

    def plot(self, out: str | Path | None = None, formats: tuple[str, ...] | list[str] = ("png",)) -> list[Path]:
        """Draw the config's figures (``dpexp plot``) into ``out`` (default: beside the results, as the CLI) and
        return the files written."""
        from dpexp.plotting.draw import FORMATS, draw_experiment, figure_dir

        fmts = [f.lower() for f in formats]
        bad = [f for f in fmts if f not in FORMATS]
        if bad or not fmts:
            raise UserError(f"formats must be a non-empty subset of {', '.join(FORMATS)}, got {list(formats)!r}")
        fig_dir = Path(out) if out is not None else figure_dir(self.path)
        self.figures = draw_experiment(self.path, fig_dir, fmts)
        return self.figures

    def summary(self, x: str | None = None, metric: str | None = None) -> pd.DataFrame:
        """Mean/std/median/IQR per algorithm x value over repeats (``dpexp summarize``)."""
        from dpexp import summary

        return summary.table(self.frame, self.manifest, x, metric)[0]

    def __repr__(self) -> str:
        return (f"Results({str(self.path)!r}: {self.manifest.get('experiment')}, {len(self.frame)} rows, "
                f"{self.failed_cells} failed cells)")


def load(results_dir: str | Path) -> Results:
    """The results of a finished run (``results.csv[.gz]`` + ``manifest.json`` in ``results_dir``)."""
    from dpexp import results

    path = Path(results_dir)
    manifest = results.read_manifest(path)
    return Results(path, results.read_results(path), manifest, int(manifest.get("failed_cells") or 0))


def _override_text(key: str, value: Any) -> str:
    """``key=value`` of ``--set``: ``privacy__epsilon=[1, 2]`` -> ``privacy.epsilon=[1, 2]`` (the value as JSON,
    which is YAML)."""
    try:
        text = json.dumps(value)
    except TypeError:
        raise UserError(f"override {key}: the value must be plain data (numbers, strings, lists, dicts), "
                        f"got {type(value).__name__}") from None
    return f"{key.replace('__', '.')}={text}"


def prepare(config: str | Path | Mapping[str, Any], overrides: list[str] | None = None,
            repeats: int | None = None, fast: bool = False, noise: str | None = None
            ) -> tuple[Any, dict[str, Any], int | None]:
    """Read and validate ``config`` (a YAML path or a dict) as ``dpexp run`` does: its ``fast:`` section when
    ``fast``, then the ``--set`` ``overrides``, ``repeats`` and ``noise``.  Returns (the resolved experiment, the
    raw config, the repeats override).  ``ConfigError`` on any problem."""
    from dpexp import spec

    if isinstance(config, Mapping):
        raw, source = copy.deepcopy(dict(config)), "config"
    elif isinstance(config, (str, Path)):
        raw, source = spec.read_yaml(Path(config)), str(config)
    else:
        raise ConfigError(f"config must be a YAML path or a dict, got {type(config).__name__}")
    all_overrides = list(overrides or [])
    if fast:
        fast_set, fast_repeats = spec.fast_settings(raw, source)
        all_overrides = fast_set + all_overrides
        repeats = repeats if repeats is not None else fast_repeats
    if noise is not None:
        all_overrides.append(f"noise={noise}")
    exp = spec.resolve(raw, source, all_overrides, repeats)
    exp.fast = fast
    return exp, raw, repeats


def run(config: str | Path | Mapping[str, Any], out: str | Path | None = None, *, jobs: int = 1,
        fast: bool = False, noise: str | None = None, resume: bool = True, progress: bool = False,
        set: list[str] | None = None, **overrides: Any) -> Results:  # noqa: A002 — the CLI's --set
    """Run the experiment ``config`` (a YAML path or a dict of the same keys) into ``out`` (default
    ``results/<name>``, as ``dpexp run``) and return its ``Results``.

    ``overrides`` change the config as ``--set`` does: ``repeats=2``, ``seed=7``, ``trials=5``, and nested keys with
    ``__`` for the dot (``privacy__epsilon=[0.5, 1]``); ``set`` takes ``--set`` strings as they are
    (``["algorithms[1].params.B_y=3"]``).  ``jobs``, ``fast``, ``noise``, ``resume`` are the CLI's options; a
    finished run in ``out`` is read back, not recomputed, unless ``resume=False``.  Failed cells are recorded (as
    the CLI does) and counted in ``Results.failed_cells`` with a warning.
    """
    from dpexp import runner

    if jobs == 0 or jobs < -1:
        raise UserError(f"jobs must be >= 1 or -1 (all cores), got {jobs}")
    repeats = overrides.pop("repeats", None)
    seed = overrides.pop("seed", None)
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63):
        raise UserError(f"seed must be an integer in [0, 2^63), got {seed!r}")
    texts = list(set or []) + [_override_text(k, v) for k, v in overrides.items()]
    exp, raw, repeats = prepare(config, texts, repeats, fast, noise)
    out_dir = Path(out) if out is not None else Path("results") / exp.spec.name
    report = runner.run_experiment(exp, raw, out_dir, jobs=jobs, seed=seed, resume=resume,
                                   repeats_override=repeats, progress=progress)
    res = load(out_dir)
    res.failed_cells = report.failed_cells
    if report.failed_cells:
        warnings.warn(f"{exp.spec.name}: {report.failed_cells} cells FAILED (see {out_dir / 'failures.csv'})",
                      RuntimeWarning, stacklevel=2)
    return res
