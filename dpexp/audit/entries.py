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

import dataclasses
from dataclasses import dataclass

from dpexp import registry
from dpexp.audit.plan import DEFAULT_APPROX_DELTA, DEFAULT_EPSILON, AuditPlan

__all__ = ["AuditEntry", "DEFAULT_APPROX_DELTA", "DEFAULT_EPSILON", "all_entries", "entry_for"]


@dataclass(frozen=True)
class AuditEntry(AuditPlan):
    """How to audit one registered algorithm: its ``AuditPlan`` (the inherited fields) with the algorithm's name,
    its neighbouring relation, where the plan came from and, when it is not audited, the reason (``not_dp``; a plan's
    own ``skip``)."""

    name: str = ""
    relation: str | None = None
    not_dp: str | None = None
    source: str = ""

    @property
    def audited(self) -> bool:
        return self.not_dp is None and self.skip is None


def entry_for(name: str) -> AuditEntry | None:
    """The audit entry of the registered algorithm ``name`` (see the module docstring); None when it has none."""
    cls = registry.get("algorithm", name)
    if not getattr(cls, "private", True):
        return AuditEntry(name=name, not_dp="not DP by design (non-private baseline)", source="metadata")
    if not getattr(cls, "formally_dp", True):
        return AuditEntry(name=name, not_dp="not DP by design (noisy heuristic, formally_dp = False)",
                          source="metadata")
    plan = getattr(cls, "audit", None)
    if not isinstance(plan, AuditPlan):
        return None
    relation = getattr(cls, "neighbouring", None) or "replace-one"
    source = f"{getattr(cls, 'family', '') or cls.__module__} audit plan"
    if plan.design is None and not plan.skip:
        return None
    fields = {f.name: getattr(plan, f.name) for f in dataclasses.fields(AuditPlan)}
    return AuditEntry(**fields, name=name, relation=relation, source=source)


def all_entries() -> dict[str, AuditEntry | None]:
    """Entry (or None) for every registered algorithm."""
    return {n: entry_for(n) for n in registry.names("algorithm")}
