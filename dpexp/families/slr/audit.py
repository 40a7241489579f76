"""Audit design of the simple-LR family (Alabi et al. 2020).  An algorithm points to it with
``audit = AuditPlan(design=unit_square)`` on its class."""

from __future__ import annotations

from dpexp.audit.neighbours import Design
from dpexp.components import Algorithm


def unit_square(alg: Algorithm) -> Design:
    """x, y ∈ [0, 1] declared in ``meta['bounds_x'|'bounds_y']``, one feature, predictions at x = 0.25 and 0.75
    (the paper's p25/p75)."""
    return Design(x_lo=(0.0,), x_hi=(1.0,), y_lo=0.0, y_hi=1.0, n=20, X_test=((0.25,), (0.75,)),
                  meta={"bounds_x": (0.0, 1.0), "bounds_y": (0.0, 1.0)})
