"""CPU per split of the SLR estimators whose ``run_many`` takes all splits of a call as arrays (issue 31): NoisyStats,
NoisyIntercept and OLS on S tract-like splits (n drawn from 20..400, as the simulated OI tracts of ``slr_oi``), one
``run_many`` call with a fresh seeded ledger per split.  Prints measured numbers only (process CPU time, the best of
``--rounds`` rounds).

Usage: ``.venv/bin/python benchmarks/slr_splits.py [--splits 300] [--trials 25] [--rounds 7]``.  Run it with another
checkout's interpreter (``/path/to/main/.venv/bin/python benchmarks/slr_splits.py``) to time that code: the script
only calls the registry's algorithms.
"""

from __future__ import annotations

import argparse
from pathlib import Path
import time

import numpy as np

from dpexp import registry
from dpexp.privacy.ledger import PrivacyLedger
from dpexp.registry import get, load_all
from dpexp.types import Split


def tracts(S: int, seed: int = 0) -> list[Split]:
    r = np.random.default_rng(seed)
    out = []
    for n in r.integers(20, 401, S):
        x = np.clip(r.normal(0.5, 0.15, n), 0, 1)
        y = np.clip(0.5 * x + 0.2 + r.normal(0, 0.1, n), 0, 1)
        out.append(Split(x[:, None], y, np.zeros((0, 1)), np.zeros(0), np.array([[0.25], [0.75]]), np.full(2, np.nan),
                         {}))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--splits", type=int, default=300)
    ap.add_argument("--trials", type=int, default=25)
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    load_all()
    splits = tracts(a.splits)
    print(f"dpexp from {Path(registry.__file__).parent}; {a.splits} splits (n 20..400), {a.trials} trials, best of {a.rounds}")
    for name in ("noisy_stats", "noisy_intercept", "ols"):
        alg = get("algorithm", name)()
        best = float("inf")
        for k in range(a.rounds):
            ledgers = [PrivacyLedger(np.random.default_rng(i)) for i in range(len(splits))]
            t0 = time.process_time()
            alg.run_many(splits, 16.0, 0.0, ledgers, a.trials)
            best = min(best, time.process_time() - t0)
        print(f"{name:16s} {1e6 * best / len(splits):8.1f} µs of CPU per split")


if __name__ == "__main__":
    main()
