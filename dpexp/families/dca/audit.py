"""Audit design of the distributed BLR family (Heikkilä et al. 2017).  An algorithm points to it with
``audit = AuditPlan(design=bounded_clients)`` on its class."""

from __future__ import annotations

from dpexp.audit.neighbours import Design
from dpexp.components import Algorithm


#: the record pair that realises the L2 sensitivity of the released terms (x², xy) for d = 1: x² unchanged, xy moved
#: by 2c_xc_y — an L2 change of 2 (the declared Δ₂ = sqrt(5) is 1.12× looser); the most distant corners
#: (−1, −1) ↔ (1, 1) change no term at all
REALISING_PAIR = ((1.0, -1.0), (1.0, 1.0))


def bounded_clients(alg: Algorithm) -> Design:
    """Every |x_j| ≤ c_x and |y| ≤ c_y declared as ``meta['bound_x'|'bound_y']`` (1 here); Gaussian noise, so
    δ > 0 (found automatically); one feature, test point at the bound.  The pair ``REALISING_PAIR`` on every base
    plus one corner pair per base (the DCA runs cost ~1 ms a trial: a short candidate list keeps the pilot short)."""
    return Design(x_lo=(-1.0,), x_hi=(1.0,), y_lo=-1.0, y_hi=1.0, n=20, X_test=((1.0,),),
                  meta={"bound_x": 1.0, "bound_y": 1.0}, extra_pairs=(REALISING_PAIR,), max_pairs=3)


#: the thresholds the projected variants are audited at: the paper's auxiliary search for ω uses only public facts
#: (N, d), so fixing ω audits the same release without running the search on every call
FIXED_OMEGA = {"omega_x": 1.0, "omega_y": 1.0}


def bounded_clients_outliers(alg: Algorithm) -> Design:
    """``bounded_clients`` plus the pair of clients (10, 10) → (10, −10) outside the declared bounds: clipping is the
    algorithm's first step (Alg. 2 step 1), so any record is a valid input and a correct run clips it to
    (1, ±1); a run that forgets to clip releases x·y = ±100 (tried on every base)."""
    d = bounded_clients(alg)
    from dataclasses import replace

    return replace(d, extra_pairs=(REALISING_PAIR, ((10.0, 10.0), (10.0, -10.0))))


class ReleasedSums:
    """Audit view of the distributed BLR family (ta, ddp, input perturbation and the projected variants): the noisy
    sums each ``dlr.release_sum`` call returned, as ``Output.coef`` — the statistics round (x², xy for d = 1) and,
    for the projected variants, the std round (x², y²) before it (the statistics round then has one call per trial,
    with that trial's bounds).  The predictions are a posterior-mean fit of these sums; auditing the sums themselves
    is valid (the outputs are post-processing of them) and sees the loss the fit folds together.  The view captures
    the values of the algorithm's own calls; its code runs unchanged."""

    def __init__(self, alg: Algorithm) -> None:
        self.alg = alg

    def run(self, split, epsilon, delta, ledger, trials=1):
        import numpy as np

        from dpexp.audit.instrument import capturing

        record: dict[str, list] = {}
        with capturing(self.alg, ("release_sum",), record):
            out = self.alg.run(split, epsilon, delta, ledger, trials)
        got = [np.asarray(r[0], dtype=float) for r in record.get("release_sum", [])]
        if len(got) == 1:
            out.coef = got[0].reshape(trials, -1)
        else:           # std round (trials, d + 1), then one (1, p) statistics round per trial
            out.coef = np.concatenate([got[0].reshape(trials, -1), np.concatenate(got[1:], axis=0)], axis=1)
        return out


def released_sums(alg: Algorithm) -> ReleasedSums:
    return ReleasedSums(alg)
