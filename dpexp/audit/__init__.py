"""``dpexp audit``: black-box statistical auditing of every registered algorithm's (ε, δ) claim.

``run_audit`` is what the CLI calls.  Per algorithm (``core.audit_algorithm``): stress neighbours at the declared
bounds with a pilot search (``neighbours``), ≥ 10⁵ vectorised runs per side, events chosen on one half and
evaluated on the other (``events``) with Clopper–Pearson bounds (``bounds``), verdict PASS/FAIL; non-DP
algorithms are reported as "not DP by design".  What to audit comes from the ``AuditPlan`` each algorithm declares on
its class (``plan``, resolved by ``entries``).  The table goes to stdout, CSV and Markdown (``report``).  What a PASS does and does not mean: docs/audit.md.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

from dpexp.audit.core import ERROR, FAIL, NOT_DP, PASS, SKIP, AuditResult, audit_algorithm
from dpexp.audit.entries import DEFAULT_APPROX_DELTA, AuditEntry, entry_for
from dpexp.errors import UserError

__all__ = ["run_audit", "audit_entry", "AuditResult", "PASS", "FAIL", "NOT_DP", "SKIP", "ERROR", "DEFAULT_TRIALS",
           "DEFAULT_CONFIDENCE"]

#: runs per side (D and D′) of the main experiment; half select events, half evaluate them
DEFAULT_TRIALS = 100_000
DEFAULT_CONFIDENCE = 0.95
DEFAULT_SEED = 20_240_505


def _resolve_delta(alg, entry: AuditEntry, design, epsilon: float, seed: int) -> float:
    """δ of the entry; when unset, 0 unless the algorithm rejects δ = 0 (then ``DEFAULT_APPROX_DELTA``)."""
    if entry.delta is not None:
        return float(entry.delta)
    from dpexp.audit.neighbours import candidate_pairs
    from dpexp.rng import stream

    pair = candidate_pairs(design, entry.relation or "replace-one")[0]
    try:
        alg.run(pair.D, epsilon, 0.0, stream(seed, "audit", entry.name, "delta-probe"), 1)
    except Exception as exc:  # noqa: BLE001 — any refusal of δ = 0 that names delta
        if "delta" in str(exc).lower() or "δ" in str(exc):
            return DEFAULT_APPROX_DELTA
        raise
    return 0.0


def prepare(name: str, epsilon: float | None = None, delta: float | None = None, seed: int = DEFAULT_SEED,
            params: dict | None = None, design=None):
    """What ``audit_entry`` audits for ``name``: (the algorithm — or its audit view — built from its plan's
    parameters updated by ``params``, the design — the plan's, or ``design(alg)`` when given —, ε, δ).  The name
    must have an audited plan."""
    from dpexp import registry

    cls = registry.get("algorithm", name)
    entry = entry_for(name)
    alg = cls(**{**entry.params, **(params or {})})
    design = (design or entry.design)(alg)
    if entry.view is not None:   # audit the raw release (the outputs are post-processing of it)
        alg = entry.view(alg)
    eps = float(epsilon if epsilon is not None else entry.epsilon)
    dl = float(delta) if delta is not None else _resolve_delta(alg, entry, design, eps, seed)
    return alg, design, eps, dl


def audit_entry(name: str, epsilon: float | None = None, delta: float | None = None, trials: int | None = None,
                confidence: float = DEFAULT_CONFIDENCE, seed: int = DEFAULT_SEED,
                params: dict | None = None, design=None) -> AuditResult:
    """Audit one registered algorithm by name (one row of the table); never raises for algorithm failures.
    ``params`` update the plan's parameters and ``design`` replaces its design function (the mutants use them)."""
    t0 = time.perf_counter()
    from dpexp import registry

    cls = registry.get("algorithm", name)
    entry = entry_for(name)
    if entry is None:
        return AuditResult(name, ERROR, note=f"no audit plan for {name!r} ({cls.__module__}): declare "
                                             "`audit = AuditPlan(design=...)` on the class (designs: the family's "
                                             "audit.py)")
    if entry.skip:
        return AuditResult(name, SKIP, note=entry.skip, relation=entry.relation or "")
    if not entry.audited:
        return AuditResult(name, NOT_DP, note=entry.not_dp or "", relation=str(getattr(cls, "neighbouring", "")))
    try:
        alg, design, eps, dl = prepare(name, epsilon, delta, seed, params, design)
        n = int(trials if trials is not None else max(2_000, round(DEFAULT_TRIALS * entry.trials_factor)))
        return audit_algorithm(name, alg, design, entry.relation or "replace-one", eps, dl, n, confidence, seed,
                               pilot_trials=entry.pilot_trials, chunk=entry.chunk, rho_delta=entry.rho_delta)
    except Exception as exc:  # noqa: BLE001 — reported as one table row, the audit goes on
        return AuditResult(name, ERROR, seconds=time.perf_counter() - t0, relation=entry.relation or "",
                           note=f"{type(exc).__name__}: {exc}".replace("\n", " ")[:300])


def _validate(epsilon: float | None, delta: float | None, trials: int | None, confidence: float, jobs: int) -> None:
    if epsilon is not None and not (math.isfinite(epsilon) and epsilon > 0):
        raise UserError(f"--epsilon must be > 0 and finite, got {epsilon}")
    if delta is not None and not (0.0 <= delta < 1.0):
        raise UserError(f"--delta must be in [0, 1), got {delta}")
    if trials is not None and trials < 100:
        raise UserError(f"--trials must be >= 100 (runs per side; half select events, half test them), got {trials}")
    if not (0.0 < confidence < 1.0):
        raise UserError(f"--confidence must be in (0, 1), got {confidence}")
    if jobs < 1:
        raise UserError(f"--jobs must be >= 1, got {jobs}")


def run_audit(algorithms: list[str] | None, epsilon: float | None, delta: float | None, trials: int | None,
              confidence: float, out: Path | None, seed: int, jobs: int) -> int:
    """Audit ``algorithms`` (all registered ones when None/empty), print the table, write ``out/audit.csv`` and
    ``out/audit.md`` when ``out`` is given, and return the exit code: 0 when every audited algorithm PASSes
    (NOT-DP and SKIP rows do not count), 1 when any FAILs or could not be audited (ERROR).

    ``epsilon``/``delta``/``trials`` None use each entry's defaults; ``seed`` keys every random stream by
    algorithm name, so the table does not depend on ``jobs``.  Invalid arguments raise ``UserError``.
    """
    from dpexp import registry

    _validate(epsilon, delta, trials, confidence, jobs)
    names = list(algorithms) if algorithms else registry.names("algorithm")
    for n in names:
        registry.get("algorithm", n)  # UserError listing the valid names
    names = list(dict.fromkeys(names))
    args = (epsilon, delta, trials, confidence, int(seed))
    if jobs > 1 and len(names) > 1:
        from joblib import Parallel, delayed

        results = Parallel(n_jobs=min(jobs, len(names)))(delayed(audit_entry)(n, *args) for n in names)
    else:
        results = [audit_entry(n, *args) for n in names]

    from dpexp.audit.report import format_table, write_csv, write_markdown

    print(format_table(results), flush=True)
    if out is not None:
        out = Path(out)
        settings = {"confidence": confidence, "seed": seed, "trials": trials if trials is not None else "default",
                    "epsilon": epsilon if epsilon is not None else "entry default",
                    "delta": delta if delta is not None else "entry default"}
        csv_path = write_csv(results, out / "audit.csv")
        md_path = write_markdown(results, out / "audit.md", settings)
        print(f"wrote {csv_path} and {md_path}", flush=True)
    return 0 if all(r.verdict in (PASS, NOT_DP, SKIP) for r in results) else 1
