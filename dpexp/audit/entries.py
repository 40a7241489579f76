"""One audit entry per registered algorithm, read from the algorithm's own class.

``entry_for(name)``:

1. **not DP by design** — ``private = False`` (non-private baselines) or ``formally_dp = False`` (noisy heuristics
   such as ``oi_mos``): reported as "not DP by design", never audited as DP;
2. otherwise the class attribute ``audit`` (a ``dpexp.audit.plan.AuditPlan``) says how: the design function of the
   algorithm's family (``dpexp/families/<family>/audit.py``), the parameters and budget to audit at, the cost
   knobs, or a documented reason to ``skip``.

The auditor never assigns a design by module path, so moving a file does not change how it is audited.  The
neighbouring relation is always the algorithm's own ``neighbouring`` attribute.  A private algorithm without a plan
has *no entry*: the registry-wide coverage test then fails, and ``dpexp audit`` reports it as ERROR, so an
algorithm can never silently escape the audit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from dpexp import registry
from dpexp.audit.neighbours import Design
from dpexp.audit.plan import DEFAULT_APPROX_DELTA, DEFAULT_EPSILON, AuditPlan
from dpexp.components import Algorithm

__all__ = ["AuditEntry", "DEFAULT_APPROX_DELTA", "DEFAULT_EPSILON", "all_entries", "entry_for"]


@dataclass(frozen=True)
class AuditEntry:
    """How to audit one algorithm: its ``AuditPlan`` resolved for a registered name (see ``AuditPlan`` for the
    fields), with the neighbouring relation and, when it is not audited, the reason (``not_dp`` or ``skip``)."""

    name: str
    relation: str | None = None
    design: Callable[[Algorithm], Design] | None = None
    params: dict[str, Any] = field(default_factory=dict)
    epsilon: float = DEFAULT_EPSILON
    delta: float | None = None
    trials_factor: float = 1.0
    pilot_trials: int | None = None
    chunk: int = 25_000
    not_dp: str | None = None
    skip: str | None = None
    source: str = ""

    @property
    def audited(self) -> bool:
        return self.not_dp is None and self.skip is None


def entry_for(name: str) -> AuditEntry | None:
    """The audit entry of the registered algorithm ``name`` (see the module docstring); None when it has none."""
    cls = registry.get("algorithm", name)
    if not getattr(cls, "private", True):
        return AuditEntry(name, not_dp="not DP by design (non-private baseline)", source="metadata")
    if not getattr(cls, "formally_dp", True):
        return AuditEntry(name, not_dp="not DP by design (noisy heuristic, formally_dp = False)", source="metadata")
    plan = getattr(cls, "audit", None)
    if not isinstance(plan, AuditPlan):
        return None
    relation = getattr(cls, "neighbouring", None) or "replace-one"
    source = f"{getattr(cls, 'family', '') or cls.__module__} audit plan"
    if plan.skip:
        return AuditEntry(name, relation=relation, skip=plan.skip, source=source)
    if plan.design is None:
        return None
    return AuditEntry(name, relation=relation, design=plan.design, params=dict(plan.params), epsilon=plan.epsilon,
                      delta=plan.delta, trials_factor=plan.trials_factor, pilot_trials=plan.pilot_trials,
                      chunk=plan.chunk, source=source)


def all_entries() -> dict[str, AuditEntry | None]:
    """Entry (or None) for every registered algorithm."""
    return {n: entry_for(n) for n in registry.names("algorithm")}
