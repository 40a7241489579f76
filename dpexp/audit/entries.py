"""One audit entry per registered algorithm: the audit dataset, the neighbouring relation and default (ε, δ).

An entry is found, in this order, by ``entry_for(name)``:

1. **not DP by design** — ``private = False`` (non-private baselines) or ``formally_dp = False`` (noisy heuristics
   such as ``oi_mos``): reported as "not DP by design", never audited as DP;
2. an explicit override in ``OVERRIDES`` (name → builder), for algorithms whose family default does not fit;
3. a hook on the class: ``audit_design(self) -> dpexp.audit.neighbours.Design`` (optional attributes
   ``audit_epsilon``, ``audit_delta``, ``audit_trials_factor``), so a new algorithm can ship its own entry;
4. a **family** default keyed by the algorithm's module (``FAMILIES``: module prefix → builder), derived from the
   family's public data conventions (declared bounds in ``Split.meta``, test points).

The neighbouring relation is always the algorithm's own ``neighbouring`` attribute.  A private algorithm that
matches none of these has *no entry*: the registry-wide coverage test then fails, and ``dpexp audit`` reports it as
ERROR, so an algorithm can never silently escape the audit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from dpexp import registry
from dpexp.audit.neighbours import Design
from dpexp.components import Algorithm
from dpexp.types import Split

DEFAULT_EPSILON = 1.0
#: δ used for algorithms that need δ > 0 (Gaussian noise) when the entry does not state one
DEFAULT_APPROX_DELTA = 1e-5


@dataclass(frozen=True)
class AuditEntry:
    """How to audit one algorithm.

    ``design(alg)`` builds the public facts of the stress datasets for the instantiated algorithm;
    ``params`` are its constructor parameters for the audit (defaults when empty); ``delta`` None means "0, or
    ``DEFAULT_APPROX_DELTA`` if the algorithm rejects δ = 0"; ``trials_factor`` scales the default trial count for
    slow algorithms; ``not_dp`` holds the reason when the algorithm is not audited.
    """

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


# --------------------------------------------------------------------------------------------- family designs
def design_robust_private_lr(alg: Algorithm) -> Design:
    """Robust private LR family (rplr, plr; Honkela et al. 2018): coordinates clipped to [−B_x, B_x], y to
    [−B_y, B_y] with B = ω·σ from ``meta['sigma_x'|'sigma_y']`` (set to 1 here, so B = ω) or the declared
    ``B_x``/``B_y`` parameters.  d = 1 keeps the released statistics few, so a scalar projection sees most of the
    privacy loss; the test point sits at the bound where predictions move most."""
    meta = {"sigma_x": 1.0, "sigma_y": 1.0}
    if hasattr(alg, "bounds"):
        probe = Split(np.zeros((1, 1)), np.zeros(1), np.empty((0, 1)), np.empty(0), np.zeros((1, 1)), np.zeros(1),
                      dict(meta))
        B_x, B_y = (float(v) for v in alg.bounds(probe))
    else:
        B_x = float(getattr(alg.params, "B_x", 1.0))
        B_y = float(getattr(alg.params, "B_y", 1.0))
    return Design(x_lo=(-B_x,), x_hi=(B_x,), y_lo=-B_y, y_hi=B_y, n=20, X_test=((B_x,),), meta=meta)


def design_simple_lr(alg: Algorithm) -> Design:
    """Simple LR family (Alabi et al. 2020): x, y ∈ [0, 1] declared in ``meta['bounds_x'|'bounds_y']``, one feature,
    predictions at x = 0.25 and 0.75 (the paper's p25/p75)."""
    return Design(x_lo=(0.0,), x_hi=(1.0,), y_lo=0.0, y_hi=1.0, n=20, X_test=((0.25,), (0.75,)),
                  meta={"bounds_x": (0.0, 1.0), "bounds_y": (0.0, 1.0)})


def design_distributed(alg: Algorithm) -> Design:
    """Distributed BLR family (Heikkilä et al. 2017): every |x_j| ≤ c_x and |y| ≤ c_y declared as
    ``meta['bound_x'|'bound_y']`` (1 here); Gaussian noise, so δ > 0 (found automatically); one feature, test
    point at the bound."""
    return Design(x_lo=(-1.0,), x_hi=(1.0,), y_lo=-1.0, y_hi=1.0, n=20, X_test=((1.0,),),
                  meta={"bound_x": 1.0, "bound_y": 1.0})


def design_gdsc_baselines(alg: Algorithm) -> Design:
    """Output perturbation (oplr) and functional mechanism (fmlr) of the GDSC comparison (Honkela et al. 2018,
    Methods 4.6): x scaled by the public B_x (``meta['x_bound']`` or the parameter) and y by B_y into [−1, 1]; the
    audit sets B_x = B_y = 1, one feature, test point at the bound."""
    return Design(x_lo=(-1.0,), x_hi=(1.0,), y_lo=-1.0, y_hi=1.0, n=20, X_test=((1.0,),), meta={"x_bound": 1.0})


#: module prefix -> (design builder, extra AuditEntry fields)
FAMILIES: dict[str, tuple[Callable[[Algorithm], Design], dict[str, Any]]] = {
    "dpexp.families.gdsc.algorithms.rplr": (design_robust_private_lr, {}),
    "dpexp.families.slr": (design_simple_lr, {}),
    "dpexp.families.dca": (design_distributed, {}),
    "dpexp.families.gdsc.algorithms.output_perturbation": (design_gdsc_baselines, {"params": {"bound_x": 1.0, "bound_y": 1.0}}),
    "dpexp.families.gdsc.algorithms.functional_mechanism": (design_gdsc_baselines, {"params": {"bound_x": 1.0, "bound_y": 1.0}}),
}

#: algorithm name -> extra AuditEntry fields (params, epsilon, delta, trials_factor, design, ...)
OVERRIDES: dict[str, dict[str, Any]] = {
    # the tuned defaults (split/omega: auto) depend only on public facts (n, d, ε); fixing them audits the same
    # release at the paper's split and ω = 1 without running the tuner on every call
    "rplr": {"params": {"p1": 0.35, "p2": 0.6, "p3": 0.05, "omega_x": 1.0, "omega_y": 1.0}},
    "dca_timing": {"skip": "timing harness: its outputs are zeros and wall times, the client values come from "
                           "meta['client_seed'], not from the split's rows (nothing data-dependent to audit)"},
    # the projected variants loop over trials in Python and the DCA runs in a fixed-point ring: fewer trials and a
    # smaller pilot keep `make audit` within its time box.  ω is fixed: the paper's auxiliary search uses only
    # public facts (N, d), so fixing it does not change what the release spends.
    "ddp": {"trials_factor": 0.3, "pilot_trials": 2_000},
    "ta_proj": {"params": {"omega_x": 1.0, "omega_y": 1.0}, "trials_factor": 0.3, "pilot_trials": 2_000},
    "ddp_proj": {"params": {"omega_x": 1.0, "omega_y": 1.0}, "trials_factor": 0.1, "pilot_trials": 1_000},
    # DP gradient descent iterates T steps over all rows per trial
    "dpgd_pure": {"trials_factor": 0.4, "pilot_trials": 2_000},
    "dpgd_approx": {"trials_factor": 0.4, "pilot_trials": 2_000},
    "dpgd_zcdp": {"trials_factor": 0.4, "pilot_trials": 2_000},
}


def _family_of(module: str) -> str | None:
    hits = [p for p in FAMILIES if module == p or module.startswith(p + ".")]
    return max(hits, key=len) if hits else None


def entry_for(name: str) -> AuditEntry | None:
    """The audit entry of the registered algorithm ``name`` (see the module docstring); None when it has none."""
    cls = registry.get("algorithm", name)
    if not getattr(cls, "private", True):
        return AuditEntry(name, not_dp="not DP by design (non-private baseline)", source="metadata")
    if not getattr(cls, "formally_dp", True):
        return AuditEntry(name, not_dp="not DP by design (noisy heuristic, formally_dp = False)", source="metadata")
    relation = getattr(cls, "neighbouring", None) or "replace-one"
    extra: dict[str, Any] = {}
    design: Callable[[Algorithm], Design] | None = None
    source = ""
    fam = _family_of(cls.__module__)
    if fam is not None:
        design, extra = FAMILIES[fam][0], dict(FAMILIES[fam][1])
        source = f"family {fam}"
    if hasattr(cls, "audit_design"):
        design = lambda alg: alg.audit_design()  # noqa: E731
        for attr, key in (("audit_epsilon", "epsilon"), ("audit_delta", "delta"),
                          ("audit_trials_factor", "trials_factor")):
            if hasattr(cls, attr):
                extra[key] = getattr(cls, attr)
        source = "class hook audit_design"
    if name in OVERRIDES:
        extra.update(OVERRIDES[name])
        design = extra.pop("design", design)
        source = "override"
    if extra.get("skip"):
        return AuditEntry(name, relation=relation, skip=extra["skip"], source=source)
    if design is None:
        return None
    return AuditEntry(name, relation=relation, design=design, source=source, **extra)


def all_entries() -> dict[str, AuditEntry | None]:
    """Entry (or None) for every registered algorithm."""
    return {n: entry_for(n) for n in registry.names("algorithm")}
