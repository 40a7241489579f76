"""Cost of a floating-point-safe secure release against the seeded textbook one (issue 29).

Prints, from one run, the time per release of ``dpexp.privacy.mechanisms.laplace`` and ``gaussian`` with a seeded
ledger (numpy's textbook samplers: what every Monte Carlo run uses) and with a secure ledger (OpenDP's
floating-point-safe samplers, ``dpexp.privacy.fp_safe``), for a GDSC-sized release (d = 10: the 55 entries of XᵀX's
upper triangle) and a 10,000-entry vector, and the ratio secure / seeded.  Nothing is timed in a test.

Usage: ``python benchmarks/secure_noise.py [--repeats R]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dpexp.privacy import fp_safe, mechanisms as mech
from dpexp.privacy.ledger import PrivacyLedger
from dpexp.privacy.noise import SecureNoise


def per_release(release, make_ledger, repeats: int) -> float:
    release(make_ledger())   # warm: the measurement of a scale is built once and kept
    t0 = time.perf_counter()
    for _ in range(repeats):
        release(make_ledger())
    return (time.perf_counter() - t0) / repeats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=200)
    a = ap.parse_args()
    if not fp_safe.available():
        raise SystemExit("the [secure] extra (OpenDP) is not installed")
    seeded = lambda: PrivacyLedger(np.random.default_rng(0))  # noqa: E731
    secure = lambda: PrivacyLedger(SecureNoise())  # noqa: E731
    print(f"{'release':<34}{'seeded us':>12}{'secure us':>12}{'ratio':>9}")
    for m in (55, 10_000):
        v = np.zeros(m)
        cases = {f"laplace, {m} entries": lambda lg, v=v: mech.laplace(v, 1.0, 1.0, lg),
                 f"gaussian (eps, delta), {m} entries": lambda lg, v=v: mech.gaussian(v, 2.0, lg, sensitivity=1.0,
                                                                                     epsilon=1.0)}
        for name, f in cases.items():
            r = a.repeats if m < 1000 else max(5, a.repeats // 20)
            t_seed, t_sec = per_release(f, seeded, r), per_release(f, secure, r)
            print(f"{name:<34}{t_seed * 1e6:>12.1f}{t_sec * 1e6:>12.1f}{t_sec / t_seed:>9.1f}")


if __name__ == "__main__":
    main()
