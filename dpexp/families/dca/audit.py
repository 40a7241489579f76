"""Audit design of the distributed BLR family (Heikkilä et al. 2017).  An algorithm points to it with
``audit = AuditPlan(design=bounded_clients)`` on its class."""

from __future__ import annotations

from dpexp.audit.neighbours import Design
from dpexp.components import Algorithm


def bounded_clients(alg: Algorithm) -> Design:
    """Every |x_j| ≤ c_x and |y| ≤ c_y declared as ``meta['bound_x'|'bound_y']`` (1 here); Gaussian noise, so
    δ > 0 (found automatically); one feature, test point at the bound."""
    return Design(x_lo=(-1.0,), x_hi=(1.0,), y_lo=-1.0, y_hi=1.0, n=20, X_test=((1.0,),),
                  meta={"bound_x": 1.0, "bound_y": 1.0})


#: the thresholds the projected variants are audited at: the paper's auxiliary search for ω uses only public facts
#: (N, d), so fixing ω audits the same release without running the search on every call
FIXED_OMEGA = {"omega_x": 1.0, "omega_y": 1.0}
