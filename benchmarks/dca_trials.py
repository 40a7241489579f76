"""Benchmark: the distributed BLR releases vectorised over trials vs one call per trial (the audit's workload).

    .venv/bin/python benchmarks/dca_trials.py [--trials 2000]

Two measurements on the audit design's size (N = 20 clients, d = 1: p = 2 statistics, M = 10 Compute nodes):

1. ``dca``: ``DCA.run_trials`` (every role as array operations over a block of trials) vs one ``DCA.run`` per trial
   — the same totals bit for bit (tests/dca/test_dca_protocol.py);
2. ``ta_proj`` / ``ddp_proj`` statistics round: one ``release_sum`` with each trial's own clipped data and
   sensitivity vs one ``release_sum`` per trial inside ``ledger.for_trial`` (the loop the projected variants ran
   before) — the same releases and guarantee (tests/dca/test_dca_dlr.py); with every trial's bounds distinct (one
   σ_std root-find per trial either way) and as on the audit design (b = c in 99% of the trials).

Each line ends with the speed-up ``<ratio>x`` measured in this run (both sides timed back to back).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _time(f) -> float:
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=2000)
    T = ap.parse_args().trials

    import numpy as np

    from dpexp.families.dca.algorithms import dlr
    from dpexp.families.dca.protocol.dca import DCA
    from dpexp.privacy.ledger import as_ledger

    rng = np.random.default_rng(0)
    N = 20
    X, y = rng.uniform(-0.1, 0.1, (N, 1)), rng.choice([-1.0, 1.0], N)
    proto = DCA(n_compute=10)
    Z = dlr.unique_terms(X, y)
    loop = _time(lambda: [proto.run(Z, 0.5, np.random.default_rng(1)) for _ in range(T)])
    vec = _time(lambda: proto.run_trials(Z, 0.5, np.random.default_rng(1), T))
    print(f"dca round, {T} trials: per-trial run {loop:.3f} s, run_trials {vec:.3f} s: {loop / vec:.1f}x")

    # every trial's bounds distinct (real data: one σ_std root-find per trial on both sides), or b = c in 99% of
    # the trials as on the audit design (one root-find per distinct bound)
    for what, b in (("distinct bounds", rng.uniform(0.05, 0.1, T)),
                    ("audit design", np.where(rng.random(T) < 0.99, 0.1, rng.uniform(0.05, 0.1, T)))):
        Zt = dlr.unique_terms(np.clip(X[None], -b[:, None, None], b[:, None, None]), np.clip(y[None], -1.0, 1.0))
        sens = np.array([dlr.ss_sensitivity(np.array([v]), 1.0) for v in b])
        for setting in ("ta", "ddp"):
            def per_trial():
                led = as_ledger(np.random.default_rng(2))
                for t in range(T):
                    with led.for_trial(t):
                        dlr.release_sum(Zt[t], float(sens[t]), 0.7, 0.035, setting, led, 1, "analytic")

            def at_once():
                dlr.release_sum(Zt, sens, 0.7, 0.035, setting, as_ledger(np.random.default_rng(2)), T, "analytic")

            loop, vec = _time(per_trial), _time(at_once)
            print(f"{setting}_proj statistics round, {what}, {T} trials: per trial {loop:.3f} s, at once "
                  f"{vec:.3f} s: {loop / vec:.1f}x")

if __name__ == "__main__":
    main()
