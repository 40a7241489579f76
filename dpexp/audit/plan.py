"""What an algorithm tells the auditor about itself: ``AuditPlan``, declared on the class as ``audit = ...``.

The plan names the design function (the public facts of the stress datasets, ``dpexp.audit.neighbours.Design``)
that the algorithm's family defines in ``dpexp/families/<family>/audit.py``, the parameters and privacy budget to
audit at, and the cost knobs of slow algorithms.  The auditor reads only this hook, so moving a file never changes
how it is audited; the neighbouring relation is always the algorithm's own ``neighbouring`` attribute.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

DEFAULT_EPSILON = 1.0
#: δ used for algorithms that need δ > 0 (Gaussian noise) when the plan does not state one
DEFAULT_APPROX_DELTA = 1e-5


@dataclass(frozen=True)
class AuditPlan:
    """How to audit one algorithm.

    ``design(alg)`` builds the public facts of the stress datasets for the instantiated algorithm; ``params`` are
    its constructor parameters for the audit (defaults when empty); ``delta`` None means "0, or
    ``DEFAULT_APPROX_DELTA`` if the algorithm rejects δ = 0"; ``trials_factor`` scales the default trial count and
    ``pilot_trials`` the pilot of slow algorithms; ``skip`` (a reason) leaves an algorithm whose output carries no
    data out of the audit.  ``view(alg)``, when set, returns an object with the algorithm's ``run`` signature whose
    ``Output.coef`` holds the raw noisy release before post-processing (defined in the family's ``audit.py``):
    auditing the release itself is valid (the outputs are post-processing of it) and sees the privacy loss that
    post-processing hides.  ``rho_delta``, when set, audits a ρ-zCDP claim — a ``zcdp`` guarantee, or an ``approx``
    one the ledger converted from ρ — at this δ, with the claimed ε = the tight conversion of ρ
    (``accounting.zcdp_to_approx_dp_cks``): ρ-zCDP implies (ε(δ), δ)-DP for every δ, so a FAIL at any δ refutes ρ,
    and a large δ is where an experiment sees the ρ (docs/audit.md).
    """

    design: Callable[[Any], Any] | None = None
    params: dict[str, Any] = field(default_factory=dict)
    epsilon: float = DEFAULT_EPSILON
    delta: float | None = None
    trials_factor: float = 1.0
    pilot_trials: int | None = None
    chunk: int = 25_000
    skip: str | None = None
    view: Callable[[Any], Any] | None = None
    rho_delta: float | None = None
