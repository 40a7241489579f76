"""Provenance of a run: ``OUT/manifest.json`` (resolved config, root seed, versions, git state, times, status).

The runner writes the manifest when a run starts (``started``, status "running") and again when it ends
(``finished``, "complete" or "complete_with_failures"); a resumed run reads it back (``read``) to check that it
continues the same config and seed.  Plots and summaries read it too (``dpexp.results.read_manifest``).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import platform
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from dpexp import __version__, cache
from dpexp.spec import ResolvedExperiment

FILE = "manifest.json"


def git_info() -> dict[str, Any]:
    """Commit and dirty flag of the dpexp source tree (None outside a git checkout)."""
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                                timeout=5).stdout.strip() or None
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                                    capture_output=True, text=True, timeout=5).stdout.strip()) if commit else None
    except (OSError, subprocess.SubprocessError):
        commit, dirty = None, None
    return {"commit": commit, "dirty": dirty}


def versions() -> dict[str, str]:
    import scipy

    return {"dpexp": __version__, "python": platform.python_version(), "numpy": np.__version__,
            "scipy": scipy.__version__, "platform": platform.platform()}


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def config_fingerprint(raw: dict[str, Any], overrides: list[str], repeats: int | None) -> str:
    """Short hash of what decides the results besides the seed: the raw config, the overrides and --repeats."""
    blob = json.dumps({"raw": raw, "overrides": overrides, "repeats": repeats}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def read(out: Path) -> dict[str, Any] | None:
    """The manifest in ``out`` (None when there is none or it cannot be read)."""
    path = Path(out) / FILE
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def write(out: Path, manifest: dict[str, Any]) -> None:
    cache.write_atomic(Path(out) / FILE, json.dumps(manifest, indent=2, default=str).encode())


def algorithm_records(exp: ResolvedExperiment) -> list[dict[str, Any]]:
    """What the manifest says about each algorithm variant, including its privacy map at every (ε, δ)."""
    return [{"name": a.name, "label": a.label, "params": a.params,
             "private": bool(getattr(a.instance, "private", True)),
             "formally_dp": bool(getattr(a.instance, "formally_dp", True)),
             "neighbouring": getattr(a.instance, "neighbouring", None),
             "privacy_spent": [a.instance.privacy_spent(e, d) for e in exp.epsilons for d in exp.deltas]}
            for a in exp.algorithms]


def started(exp: ResolvedExperiment, raw: dict[str, Any], fingerprint: str, root_seed: int, jobs: int,
            repeats_override: int | None, n_chunks: int, started_at: str | None = None) -> dict[str, Any]:
    """The manifest of a run that starts now (``started_at``: the first start of a resumed run)."""
    return {
        "experiment": exp.spec.name, "title": exp.spec.title, "config_file": exp.source,
        "config": exp.to_json(), "raw_config": raw, "overrides": exp.overrides, "repeats_override": repeats_override,
        "fast": exp.fast,
        "fingerprint": fingerprint, "root_seed": root_seed, "versions": versions(), "git": git_info(),
        "started": started_at or now(), "finished": None,
        "status": "running", "cells": exp.n_cells, "chunks": n_chunks, "jobs": jobs,
        "algorithms": algorithm_records(exp),
        "failures": None,
        "skipped_grid_points": {f"algorithms[{k}]": v for k, v in exp.skipped_grid_points.items()},
    }


def finished(manifest: dict[str, Any], results_file: Path, n_rows: int, failures: list[dict[str, str]],
             seconds: float) -> dict[str, Any]:
    """``manifest`` updated for a run whose results were merged into ``results_file``."""
    return {**manifest, "finished": now(), "status": "complete" if not failures else "complete_with_failures",
            "rows": n_rows, "results_file": results_file.name,
            "failures": {"count": len(failures), "first": failures[:50]},
            "seconds_this_invocation": round(seconds, 3)}
