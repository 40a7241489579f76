"""Draw every figure of one experiment from its results directory (results table + manifest only), and where
its figures go by default.

Used by ``dpexp plot`` and by ``dpexp report`` (which draws missing figures), so both name, place and style figures
the same way.

**Where figures go** (``figure_dir``): the results directory's path with its last folder named ``results``
replaced by ``figures`` — ``results/X`` → ``figures/X``, ``results/fast/X`` → ``figures/fast/X``,
``/data/results/paper/X`` → ``/data/figures/paper/X``; a results directory outside any ``results`` folder gets a
``figures`` folder beside it: ``runs/X`` → ``runs/figures/X``, ``X`` → ``figures/X``.  So the figures of two runs
never share a folder unless ``--out`` says so, and each figure folder records which results it was drawn from
(``SOURCE``), so that replacing another run's figures is never silent.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

FORMATS = ("png", "pdf", "svg")
SOURCE = ".dpexp-figures.json"   # in a figure folder: the results directory its figures were drawn from


def figure_stem(manifest: dict, index: int, n_plots: int, name: str | None) -> str:
    """File stem of the ``index``-th plot: its ``name``, else the experiment's name (numbered when several)."""
    experiment = str(manifest.get("experiment", ""))
    return str(name or (experiment if n_plots == 1 else f"{experiment}_{index + 1}"))


def figure_dir(results_dir: Path) -> Path:
    """The default figure folder of ``results_dir`` (the rule in the module docstring)."""
    p = Path(os.path.normpath(results_dir))
    if p.name in ("", ".", ".."):
        p = p.resolve()
    parts = list(p.parts)
    if "results" in parts:
        i = len(parts) - 1 - parts[::-1].index("results")
        return Path(*parts[:i], "figures", *parts[i + 1:])
    return p.parent / "figures" / p.name


#: manifest fields that identify a run wherever its folder is moved
RUN_KEYS = ("experiment", "fingerprint", "root_seed", "started", "finished")


def drawn_from(fig_dir: Path) -> dict | None:
    """What ``fig_dir``'s figures were drawn from, as recorded then (``results``: the folder; ``RUN_KEYS``)."""
    try:
        rec = json.loads((Path(fig_dir) / SOURCE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return rec if isinstance(rec, dict) else None


def other_run(fig_dir: Path, manifest: dict, results_dir: Path | None = None) -> str | None:
    """The results folder of *another* run whose figures ``fig_dir`` holds.  None when nothing is recorded, when
    they were drawn from ``results_dir`` itself (an earlier run there is simply superseded), or from the same run
    (recognised by its manifest, so moving results and figures together keeps them matched)."""
    rec = drawn_from(fig_dir)
    if rec is None or all(rec.get(k) == manifest.get(k) for k in RUN_KEYS):
        return None
    if results_dir is not None and rec.get("results") == str(Path(results_dir).resolve()):
        return None
    return str(rec.get("results") or "another run")


def draw_experiment(results_dir: Path, fig_dir: Path, formats: list[str], table: Any = None) -> list[Path]:
    """Draw the plots the experiment's config lists (one default curve when it lists none) into ``fig_dir`` and
    record there which results they show (``SOURCE``).  ``table``: the experiment's ``ResultsTable`` when the
    caller has read it (``dpexp report``), else it is read here."""
    from dpexp import registry, results
    from dpexp.results_table import ResultsTable
    from dpexp.spec import PlotSpec

    manifest = results.read_manifest(Path(results_dir))
    table = table if table is not None else ResultsTable.read(Path(results_dir))
    plots = [PlotSpec.model_validate(p) for p in manifest.get("config", {}).get("plots") or []] or [PlotSpec()]
    written: list[Path] = []
    for i, p in enumerate(plots):
        fn = registry.get("plot", p.kind)
        df = table.frame(registry.plot_reads(p.kind, p, table.columns))   # only the rows this figure reads
        written += fn(df, p, manifest, Path(fig_dir) / figure_stem(manifest, i, len(plots), p.name), formats)
        del df
    Path(fig_dir).mkdir(parents=True, exist_ok=True)
    record = {"results": str(Path(results_dir).resolve()), **{k: manifest.get(k) for k in RUN_KEYS}}
    (Path(fig_dir) / SOURCE).write_text(json.dumps(record) + "\n", encoding="utf-8")
    return written
