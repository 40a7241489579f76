"""Audit designs of the GDSC family (Honkela et al. 2018): the public facts of the stress datasets its algorithms
are audited on.  An algorithm points to one with ``audit = AuditPlan(design=...)`` on its class."""

from __future__ import annotations

import numpy as np

from dpexp.audit.neighbours import Design
from dpexp.audit.plan import AuditPlan
from dpexp.components import Algorithm
from dpexp.families.gdsc.stats import Clipping
from dpexp.types import Split


def clipped_statistics(alg: Clipping) -> Design:
    """Robust private LR family (rplr, plr, split_search): coordinates clipped to [−B_x, B_x], y to [−B_y, B_y]
    where the algorithm's ``bounds`` puts them (``stats.Clipping``): B = ω·σ from ``meta['sigma_x'|'sigma_y']``
    (set to 1 here, so B = ω) or the declared whole-range bounds.  d = 1 keeps the released statistics few, so a
    scalar projection sees most of the privacy loss; the test point sits at the bound where predictions move most."""
    meta = {"sigma_x": 1.0, "sigma_y": 1.0}
    probe = Split(np.zeros((1, 1)), np.zeros(1), np.empty((0, 1)), np.empty(0), np.zeros((1, 1)), np.zeros(1),
                  dict(meta))
    B_x, B_y = (float(v) for v in alg.bounds(probe))
    return Design(x_lo=(-B_x,), x_hi=(B_x,), y_lo=-B_y, y_hi=B_y, n=20, X_test=((B_x,),), meta=meta)


def unit_box(alg: Algorithm) -> Design:
    """Output perturbation (oplr) and functional mechanism (fmlr) of the GDSC comparison (Methods 4.6): x scaled by
    the public B_x (``meta['x_bound']`` or the parameter) and y by B_y into [−1, 1]; the plans set
    B_x = B_y = 1, one feature, test point at the bound."""
    return Design(x_lo=(-1.0,), x_hi=(1.0,), y_lo=-1.0, y_hi=1.0, n=20, X_test=((1.0,),), meta={"x_bound": 1.0})


#: the plan of oplr and fmlr: the unit-box design with the public bounds it assumes
UNIT_BOX = AuditPlan(design=unit_box, params={"bound_x": 1.0, "bound_y": 1.0})
