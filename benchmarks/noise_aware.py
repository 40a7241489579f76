"""Per-fit cost of the noise-aware Gibbs sampler and of its fast Gaussian approximation (issue #15).

Prints, from one run on the same released statistics (rplr's release of Eq. (10) data: n = 500, d = 10, ε = 2,
split (0.35, 0.6, 0.05), ω = 0.5), the seconds per fit of

1. the sampler with its default settings (300 burn-in + 200 draws × thin 2 = 700 sweeps), one problem per call
   and batched (``--batch`` problems per call), and the cost per sweep;
2. the fast approximation (``dpexp.models.noise_aware_fast.fit_gaussian``), one per call and batched;
3. rplr's naive VB (``dpexp.models.vb.fit_vb``) for reference;

and the ratios between them, plus what a GDSC Fig. 2 sized run (265 drugs × 50 repeats × 8 sizes) would cost at
the batched rates.

Then the registered algorithms as the runner calls them (``run_many`` on one chunk of 265 drug-like splits of
unit-norm Eq. (10) data, n_private = 300, 10 public rows, d = 10, ε = 2, σ from the data, the paper's split and
ω = (0.1, 0.4) fixed so no tuning is timed): seconds per split of rplr, narplr (fast approximation), narplr
(Gibbs; on ``--gibbs-splits`` splits) and adassp, release included, and their ratios to rplr.
Usage: ``.venv/bin/python benchmarks/noise_aware.py [--batch 1000] [--single 3] [--gibbs-splits 40]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dpexp.families.gdsc.release_batch import release_group  # noqa: E402
from dpexp.families.gdsc.stats import sensitivities  # noqa: E402
from dpexp.privacy.ledger import as_ledger  # noqa: E402
from dpexp.models.gram_prior import clipped_gaussian_gram_prior  # noqa: E402
from dpexp.models.noise_aware import NoisyStats, sample_posterior  # noqa: E402
from dpexp.models.noise_aware_fast import fit_gaussian  # noqa: E402
from dpexp.models.vb import fit_vb  # noqa: E402

N, D, EPS, SPLIT, OMEGA = 500, 10, 2.0, (0.35, 0.6, 0.05), 0.5
FIG2_FITS = 265 * 50 * 8


def releases(B: int, seed: int = 0) -> tuple[NoisyStats, object]:
    rng = np.random.default_rng(seed)
    Z, zxy, zyy = np.empty((B, D, D)), np.empty((B, D)), np.empty(B)
    bx = np.empty(B)
    for b in range(B):
        X = rng.normal(size=(N, D))
        y = X @ rng.normal(size=D) + rng.normal(size=N)
        # rplr's release (the production path, σ from the data: B = ω·σ), one trial
        g = release_group([X], [y], D, 1, [as_ledger(rng)], np.array([SPLIT]), EPS, np.array([[OMEGA, OMEGA]]),
                          ("data", np.array([X.std()]), np.array([y.std()])))
        Z[b], zxy[b], zyy[b], bx[b] = g.XX[0, 0], g.Xy[0, 0], g.yy[0, 0], g.B_x[0]
    by = OMEGA * np.sqrt(D + 1.0)
    s = sensitivities(D, bx, by)
    stats = NoisyStats(Z, zxy, zyy, float(N), s[0] / (SPLIT[0] * EPS), s[1] / (SPLIT[1] * EPS), s[2] / (SPLIT[2] * EPS))
    return stats, clipped_gaussian_gram_prior(N, D, bx, 1.0)


def take(stats: NoisyStats, prior, idx) -> tuple[NoisyStats, object]:
    pick = lambda a: np.asarray(a)[idx] if np.ndim(a) else a  # noqa: E731
    return (NoisyStats(pick(stats.XX), pick(stats.Xy), pick(stats.yy), stats.n, pick(stats.b_xx), pick(stats.b_xy),
                       pick(stats.b_yy)), type(prior)(prior.mean[idx], prior.var[idx]))


def timed(f, reps: int = 1) -> float:
    t0 = time.perf_counter()
    for _ in range(reps):
        f()
    return (time.perf_counter() - t0) / reps


def algorithm_costs(gibbs_splits: int) -> None:
    """Seconds per split of the registered algorithms on one GDSC-sized chunk (module docstring)."""
    from dpexp import registry
    from dpexp.families.gdsc.datasets.synthetic import generate_eq10, preprocess
    from dpexp.privacy.ledger import PrivacyLedger
    from dpexp.types import Split

    registry.load_all()
    rng = np.random.default_rng(3)
    splits = []
    for _ in range(265):
        X, y, _beta = generate_eq10(410, D, rng)
        X, y = preprocess(X, y)
        splits.append(Split(X[:300], y[:300], X[300:310], y[300:310], X[310:], y[310:],
                            {"sigma_x": float(X.std()), "sigma_y": float(y.std())}))
    fixed = dict(sigma="data", p1=0.05, p2=0.9, p3=0.05, omega_x=0.1, omega_y=0.4)
    variants = [("rplr", "rplr", fixed, len(splits)), ("narplr (fast approximation)", "narplr", fixed, len(splits)),
                ("narplr (Gibbs, 700 sweeps)", "narplr", {**fixed, "inference": "gibbs"}, gibbs_splits),
                ("adassp", "adassp", {"sigma": "data"}, len(splits))]
    per = {}
    for label, name, params, k in variants:
        alg = registry.get("algorithm", name)(**params)
        ledgers = [PrivacyLedger(np.random.default_rng(i)) for i in range(k)]
        per[label] = timed(lambda: alg.run_many(splits[:k], EPS, 0.0, ledgers, 1)) / k
    print(f"\nregistered algorithms, run_many on one chunk of 265 unit-norm Eq. 10 splits (n = 300, d = {D}, "
          f"ε = {EPS}; release + inference):")
    base = per["rplr"]
    for label, _, _, k in variants:
        print(f"  {label:32s}{per[label] * 1e3:10.2f} ms per split  ({per[label] / base:7.1f}x rplr; {k} splits)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=1000, help="problems per batched call (sampler)")
    ap.add_argument("--single", type=int, default=3, help="one-at-a-time sampler fits to average")
    ap.add_argument("--gibbs-splits", type=int, default=40, help="splits of the Gibbs run_many timing")
    args = ap.parse_args()
    B = args.batch
    stats, prior = releases(max(B, 10_000))
    sweeps = 300 + 200 * 2
    rng = np.random.default_rng(1)

    single_s = np.mean([timed(lambda i=i: sample_posterior(*take(stats, prior, slice(i, i + 1))[:1], rng,
                                                          gram_prior=take(stats, prior, slice(i, i + 1))[1]))
                        for i in range(args.single)])
    st_b, pr_b = take(stats, prior, slice(0, B))
    batch_s = timed(lambda: sample_posterior(st_b, rng, gram_prior=pr_b)) / B
    single_f = timed(lambda: [fit_gaussian(*take(stats, prior, slice(i, i + 1))[:1],
                                           gram_prior=take(stats, prior, slice(i, i + 1))[1]) for i in range(50)]) / 50
    batch_f = timed(lambda: fit_gaussian(stats, gram_prior=prior)) / stats.XX.shape[0]
    single_v = timed(lambda: [fit_vb(stats.XX[i], stats.Xy[i], stats.yy[i], N) for i in range(50)]) / 50
    batch_v = timed(lambda: fit_vb(stats.XX, stats.Xy, stats.yy, N)) / stats.XX.shape[0]

    print(f"noise-aware inference, d = {D}, n = {N}, ε = {EPS}, split {SPLIT}, ω = {OMEGA} (one run, this machine)")
    print(f"{'':34s}{'one per call':>16s}{'batched':>16s}")
    print(f"{'sampler (700 sweeps)':34s}{single_s * 1e3:13.1f} ms{batch_s * 1e3:13.2f} ms   (batch {B})")
    print(f"{'  per sweep':34s}{single_s / sweeps * 1e6:13.1f} µs{batch_s / sweeps * 1e6:13.1f} µs")
    print(f"{'fast approximation':34s}{single_f * 1e3:13.2f} ms{batch_f * 1e3:13.4f} ms   (batch {stats.XX.shape[0]})")
    print(f"{'rplr naive VB (reference)':34s}{single_v * 1e3:13.2f} ms{batch_v * 1e3:13.4f} ms")
    print(f"ratio sampler / fast: {single_s / single_f:,.0f}x one per call, {batch_s / batch_f:,.0f}x batched")
    print(f"ratio fast / naive VB: {single_f / single_v:.1f}x one per call, {batch_f / batch_v:.1f}x batched")
    print(f"batching speed-up: sampler {single_s / batch_s:.0f}x, fast {single_f / batch_f:.0f}x")
    print(f"GDSC Fig. 2 scale ({FIG2_FITS:,} fits, one core, batched rates): sampler {FIG2_FITS * batch_s / 60:.0f} min, "
          f"fast {FIG2_FITS * batch_f:.0f} s, naive VB {FIG2_FITS * batch_v:.1f} s")
    algorithm_costs(args.gibbs_splits)


if __name__ == "__main__":
    main()
