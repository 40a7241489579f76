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

from dpexp import cache
from dpexp.version import __version__
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


#: the lock file of exact versions that ``make demo`` / ``make test`` install (beside the package in a checkout)
LOCK = Path(__file__).resolve().parent.parent / "requirements.lock"


def lock_hash(path: Path = LOCK) -> str | None:
    """SHA-256 of the lock file the environment was installed from (None outside a checkout that has one)."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def versions() -> dict[str, str | None]:
    """What decides the last bits of a result besides the code: interpreter, numpy/scipy, the platform, the lock
    file's hash and whether numpy's CPU dispatch was restricted (``NPY_DISABLE_CPU_FEATURES``)."""
    import os

    import scipy

    return {"dpexp": __version__, "python": platform.python_version(), "numpy": np.__version__,
            "scipy": scipy.__version__, "platform": platform.platform(), "lock_sha256": lock_hash(),
            "npy_disable_cpu_features": os.environ.get("NPY_DISABLE_CPU_FEATURES") or None}


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


#: what each noise mode means for the numbers of a run (written into the manifest)
NOISE_STATEMENTS = {
    "seeded": "privacy noise drawn from streams derived from the root seed recorded here: anyone with this manifest "
              "can regenerate (and subtract) every noise value of every row — fine for experiments and "
              "reproduction, never for releasing statistics about real people (use --noise secure)",
    "secure": "privacy noise drawn from the OS CSPRNG (os.urandom); no seed that regenerates it exists or is recorded "
              "(seed_key is empty): results are not reproducible by design; the root seed regenerates only the data "
              "splits and non-privacy randomness; Laplace and Gaussian releases use OpenDP's floating-point-safe "
              "samplers (their spends say so: dpexp.privacy.fp_safe), bounded scalar Laplace releases Mironov's "
              "snapping; the Gamma-norm, Gumbel-max and Student-t samplers and the DCA clients' noise shares are "
              "textbook floating-point transforms, not floating-point safe (Mironov 2012), so the rows they drew say "
              "guarantee none (docs/privacy.md)",
}


def algorithm_records(exp: ResolvedExperiment) -> list[dict[str, Any]]:
    """What the manifest says about each algorithm variant: what its class declares (relation, the guarantee as a
    function of its parameters).  What the run *spent* is in ``privacy_summary``, derived from the rows."""
    out = []
    for a in exp.algorithms:
        rec = {"name": a.name, "label": a.label, "params": a.params,
               "private": bool(getattr(a.instance, "private", True)),
               "formally_dp": bool(getattr(a.instance, "formally_dp", True)),
               "neighbouring": getattr(a.instance, "neighbouring", None),
               "guarantee_text": getattr(a.instance, "guarantee_text", "")}
        if a.datasets is not None:   # algorithms[].datasets: the dataset entries it runs on
            rec["datasets"] = sorted(exp.spec.datasets[i].key for i in a.datasets)
        out.append(rec)
    return out


def dataset_records(exp: ResolvedExperiment) -> list[dict[str, Any]]:
    """Per dataset variant: its preprocessing statement (public, or reads private rows unpaid: none) and what one
    row's ε covers (its release point, with the number of subsets of this run)."""
    out = []
    for dv in exp.datasets:
        n = len(dv.subsets)
        rule = getattr(dv.instance, "release_point", "") or "one run of the algorithm on the split (one subset)"
        extra = getattr(dv.instance, "manifest_record", None)   # e.g. the csv dataset's out-of-bounds counts
        out.append({"name": dv.name, "params": dv.params, "subsets": n,
                    "preprocessing": dv.instance.preprocessing().to_dict(),
                    "release_point": rule.replace("{n}", str(n)), **(extra() if extra is not None else {})})
    return out


def _num(v: str) -> float | None:
    return float(v) if v not in ("", "nan") else None


def privacy_summary(exp: ResolvedExperiment, spent: dict[tuple[str, ...], int]) -> dict[str, Any]:
    """The run's privacy summary, derived from its rows (``spent``: the distinct guarantee fields of the rows, from
    ``runner.merge_parts``, with their row counts): the distinct guarantees per algorithm and requested (ε, δ), the
    per-release-point rule and preprocessing statement of each dataset, the noise mode, and where subsets are
    releases about the same people, each guarantee's total over them (``repeated_releases``)."""
    rows = []
    for key, count in sorted(spent.items()):
        ds, dsp, alg, label, params, eps, delta, kind, e_s, d_s, r_s, note = key
        rows.append({"dataset": ds, "dataset_params": dsp, "algorithm": alg, "label": label, "params": params,
                     "epsilon": _num(eps), "delta": _num(delta), "guarantee": kind, "epsilon_spent": _num(e_s),
                     "delta_spent": _num(d_s), "rho_spent": _num(r_s), "privacy_note": note, "rows": count})
    return {
        "row_meaning": "a row's epsilon_spent/delta_spent/rho_spent is the guarantee of ONE run of the algorithm on "
                       "the private rows of ONE release point (see each dataset's release_point), for the "
                       "algorithm's neighbouring relation; trials are independent runs and are not added; "
                       "guarantee 'none' means not differentially private (privacy_note says why)",
        "noise": exp.spec.noise, "noise_statement": NOISE_STATEMENTS[exp.spec.noise],
        "datasets": dataset_records(exp),
        "guarantees": rows,
        "repeated_releases": repeated_releases(exp, rows),
    }


def repeated_releases(exp: ResolvedExperiment, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Where a dataset's subsets are releases about the same people (``Dataset.subsets_share_rows``: GDSC's drugs
    of one cell line), the total loss of one person over the run's subsets, per distinct DP guarantee of its rows:
    basic composition beside a tighter one (``accounting.repeated_release``, dpexp's own accounting; at the row's δ
    when it asked for one, else ``accounting.REPEATED_DELTA``).  An upper bound: a person missing from some subsets
    (a cell line not tested with a drug) is in fewer releases."""
    from dpexp.privacy.accounting import repeated_release
    from dpexp.privacy.guarantee import Guarantee, is_evaluation

    k_of = {(dv.name, dv.params_str): len(dv.subsets) for dv in exp.datasets
            if getattr(dv.instance, "subsets_share_rows", False) and len(dv.subsets) > 1}
    out: list[dict[str, Any]] = []
    seen: set[tuple[Any, ...]] = set()
    for r in rows:
        k = k_of.get((r["dataset"], r["dataset_params"]))
        if k is None or r["guarantee"] not in ("pure", "approx", "zcdp") or is_evaluation(r["privacy_note"] or ""):
            continue
        key = (r["dataset"], r["dataset_params"], r["algorithm"], r["label"], r["params"], r["epsilon"], r["delta"],
               r["guarantee"], r["epsilon_spent"], r["delta_spent"], r["rho_spent"])
        if key in seen:
            continue
        seen.add(key)
        nan = float("nan")
        g = Guarantee(r["guarantee"], *(nan if r[c] is None else float(r[c])
                                         for c in ("epsilon_spent", "delta_spent", "rho_spent")))
        asked_delta = r["delta"] if r["delta"] else None
        total = repeated_release(g, k, asked_delta)
        if total is not None:
            out.append({k2: r[k2] for k2 in ("dataset", "dataset_params", "algorithm", "label", "params", "epsilon",
                                              "delta", "guarantee", "epsilon_spent", "delta_spent", "rho_spent")}
                       | {"per": "person (one row of the private data) over the run's subsets", **total})
    return out


def started(exp: ResolvedExperiment, raw: dict[str, Any], fingerprint: str, root_seed: int, jobs: int,
            repeats_override: int | None, n_chunks: int, started_at: str | None = None) -> dict[str, Any]:
    """The manifest of a run that starts now (``started_at``: the first start of a resumed run)."""
    from dpexp.results import SCHEMA_VERSION

    return {
        "experiment": exp.spec.name, "title": exp.spec.title, "config_file": exp.source,
        "config": exp.to_json(), "raw_config": raw, "overrides": exp.overrides, "repeats_override": repeats_override,
        "fast": exp.fast,
        "fingerprint": fingerprint, "root_seed": root_seed, "results_schema": SCHEMA_VERSION,
        "noise": exp.spec.noise, "noise_statement": NOISE_STATEMENTS[exp.spec.noise],
        "versions": versions(), "git": git_info(),
        "started": started_at or now(), "finished": None,
        "status": "running", "cells": exp.n_cells, "chunks": n_chunks, "jobs": jobs,
        "algorithms": algorithm_records(exp),
        "datasets": dataset_records(exp),
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
