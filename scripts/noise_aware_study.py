"""Reproduce the measured numbers of docs/noise_aware.md (issue #15).

    python scripts/noise_aware_study.py coverage [--reps 100] [--seed 15]
    python scripts/noise_aware_study.py split [--reps 200]

``coverage``: Eq. (10)-style data (x ~ N(0, I_10), β ~ N(0, I), y = xᵀβ + N(0, 1), as ``dpexp.models.bayes_lr.sample_data``),
10 public and n_private private rows clipped as rplr clips them (B = ω σ̂ with rplr's split and its tuned ω for
the case), released with rplr's own ``perturbed_stats``.  For every (n_private, ε) it prints the coverage of
nominal 50 % and 90 % intervals — for every coefficient and for 20 test predictions — of the noise-aware sampler,
its fast approximation and rplr's naive posterior (VB with and without the noise ridge), interval widths, and
the test Spearman of the posterior means.  The target is the clipped-data regression w̃ (see the doc); coverage of
the unclipped β is printed for the sampler as a reminder of what clipping does.

``split``: the analytic budget split (dpexp.models.budget_split) at the paper's case next to dpexp.families.gdsc.tuning's
auxiliary-data choice, their agreement over the 171 splits of Fig. 5, and a held-out check on fresh data.

Randomness: ``dpexp.rng.stream(seed, "noise_aware_study", …)``; results are deterministic for a seed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy import special, stats as sps

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dpexp.families.gdsc.release_batch import release_group  # noqa: E402
from dpexp.families.gdsc.stats import sensitivities  # noqa: E402
from dpexp.privacy.ledger import as_ledger  # noqa: E402
from dpexp.models.budget_split import analytic_split, expected_correlation  # noqa: E402
from dpexp.models.clipped_normal import clipped_regression_coef  # noqa: E402
from dpexp.models.gram_prior import clipped_gaussian_gram_prior, clipping_scaled_prior  # noqa: E402
from dpexp.models.noise_aware import ExactStats, NoisyStats, sample_posterior  # noqa: E402
from dpexp.models.noise_aware_fast import fit_gaussian  # noqa: E402
from dpexp.models.vb import PAPER_PRIOR, fit_vb, noise_ridge, ridge_stabilised  # noqa: E402
from dpexp.rng import stream  # noqa: E402
from dpexp.families.gdsc.tuning import spearman_rows, tune_split, tune_thresholds  # noqa: E402

D, N_PUB, N_TEST = 10, 10, 20
SIZES = (100, 200, 300, 400, 500, 600, 700, 800)
EPSILONS = (1.0, 2.0)


def clipped_truth_mc(beta, Bx, By, L, rng, m=100_000):
    """w̃ = E[x̃x̃ᵀ]⁻¹E[x̃ỹ] by Monte Carlo for x = L z, z ~ N(0, I) (correlated features; relative error ~1e-3)."""
    X = rng.standard_normal((m, beta.size)) @ L.T
    yc = np.clip(X @ beta + rng.standard_normal(m), -By, By)
    Xc = np.clip(X, -Bx, Bx)
    return np.linalg.solve(Xc.T @ Xc, Xc.T @ yc)


def make_cells(cells, reps, seed, split_of, omega_of, rho_x=0.0):
    """Data, releases and truths for every (n, ε) cell × ``reps``; everything stacked into one batch.  With
    ``rho_x`` > 0 the features are equicorrelated (unit variances) and the truth is computed by Monte Carlo."""
    L = np.linalg.cholesky((1 - rho_x) * np.eye(D) + rho_x * np.ones((D, D)))
    out = {k: [] for k in ("Z", "zxy", "zyy", "n", "bxx", "bxy", "byy", "Ap", "cp", "tp", "wt", "beta", "Xt",
                           "yt", "Bx", "sx", "cell", "wx", "wy")}
    for ci, (n, eps) in enumerate(cells):
        sp, (wx, wy) = split_of(n, eps), omega_of(n, eps)
        rng = stream(seed, "noise_aware_study", "coverage", n, eps)
        for _ in range(reps):
            m = n + N_PUB + N_TEST
            X = rng.standard_normal((m, D)) @ L.T
            beta = rng.standard_normal(D)
            y = X @ beta + rng.standard_normal(m)
            sx, sy = float(X.std()), float(y.std())      # rplr's σ: the pool's std (not DP, as the paper)
            Bx, By = wx * sx, wy * sy
            Xp, yp = X[n:n + N_PUB], y[n:n + N_PUB]
            g = release_group([X[:n]], [y[:n]], D, 1, [as_ledger(rng)], np.array([sp]), eps, np.array([[wx, wy]]),
                              ("data", np.array([sx]), np.array([sy])))   # rplr's release, σ from the data
            XX, Xy, yy = g.XX[:, 0], g.Xy[:, 0], g.yy[:, 0]
            sxx, sxy, syy = sensitivities(D, Bx, By)
            pub = ExactStats.of(np.clip(Xp, -Bx, Bx), np.clip(yp, -By, By))  # public rows clipped alike
            for k, v in (("Z", XX[0]), ("zxy", Xy[0]), ("zyy", yy[0]), ("n", n), ("bxx", sxx / (sp[0] * eps)),
                         ("bxy", sxy / (sp[1] * eps)), ("byy", syy / (sp[2] * eps)), ("Ap", pub.XX), ("cp", pub.Xy),
                         ("tp", pub.yy), ("wt", clipped_regression_coef(beta, 1.0, Bx, By) if rho_x == 0 else
                                          clipped_truth_mc(beta, Bx, By, L, rng)), ("beta", beta),
                         ("Xt", X[n + N_PUB:]), ("yt", y[n + N_PUB:]), ("Bx", Bx), ("sx", sx), ("cell", ci),
                         ("wx", wx), ("wy", wy)):
                out[k].append(v)
    return {k: np.asarray(v) for k, v in out.items()}


def covered(lo, hi, truth):
    return (lo <= truth) & (truth <= hi)


def normal_interval(mean, sd, level):
    z = float(special.ndtri(0.5 + level / 2))
    return mean - z * sd, mean + z * sd


def spearman(pred, y):
    return np.array([sps.spearmanr(p, t)[0] for p, t in zip(pred, y)])


def coverage(args):
    split = tuple(tune_split(500, D, 2.0)[k] for k in ("p1", "p2", "p3"))        # rplr's split (paper protocol)
    cells = [(n, e) for e in EPSILONS for n in SIZES if (not args.n or n in args.n) and (not args.eps or e in args.eps)]
    data = make_cells(cells, args.reps, args.seed, lambda n, e: split,
                      lambda n, e: (lambda t: (t["omega_x"], t["omega_y"]))(tune_thresholds(n, D, e, split)),
                      args.rho_x)
    stats = NoisyStats(data["Z"], data["zxy"], data["zyy"], data["n"], data["bxx"], data["bxy"], data["byy"])
    public = ExactStats(data["Ap"], data["cp"], data["tp"], float(N_PUB))
    prior = clipped_gaussian_gram_prior(data["n"], D, data["Bx"], data["sx"], args.rel_sd, args.corr_sd)
    lam_prior = clipping_scaled_prior(data["wx"], data["wy"]) if args.prior == "scaled" else PAPER_PRIOR
    t0 = time.perf_counter()
    dr = sample_posterior(stats, stream(args.seed, "noise_aware_study", "sampler"), public=public, gram_prior=prior,
                          prior=lam_prior)
    t_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    fa = fit_gaussian(stats, public=public, gram_prior=prior, prior=lam_prior)
    t_f = time.perf_counter() - t0
    XXs, Xys, yys, ns = data["Z"] + data["Ap"], data["zxy"] + data["cp"], data["zyy"] + data["tp"], data["n"] + N_PUB
    ridge = ridge_stabilised(XXs, noise_ridge(D, data["bxx"]))
    nv = fit_vb(ridge, Xys, yys, ns, return_cov=True)                      # rplr (default: noise ridge)
    nv0 = fit_vb(XXs, Xys, yys, ns, return_cov=True)                       # rplr with stabilize: none
    wt, Xt = data["wt"], data["Xt"]
    ft = np.einsum("bmd,bd->bm", Xt, wt)                                   # x_testᵀ w̃
    res = {}
    for name, lvl in (("50", 0.5), ("90", 0.9)):
        res["na" + name] = covered(*dr.interval(lvl), wt)
        res["na_beta" + name] = covered(*dr.interval(lvl), data["beta"])
        res["fa" + name] = covered(*fa.interval(lvl), wt)
        for key, v in (("nv", nv), ("nv0", nv0)):
            res[key + name] = covered(*normal_interval(v.mean, np.sqrt(np.diagonal(v.cov, axis1=1, axis2=2)), lvl), wt)
        _, plo, phi = dr.predict_interval(Xt, lvl)
        res["nap" + name] = covered(plo, phi, ft)
        _, plo, phi = fa.predict_interval(Xt, lvl)
        res["fap" + name] = covered(plo, phi, ft)
        sdp = np.sqrt(np.einsum("bmd,bde,bme->bm", Xt, nv.cov, Xt))
        res["nvp" + name] = covered(*normal_interval(np.einsum("bmd,bd->bm", Xt, nv.mean), sdp, lvl), ft)
    lo, hi = dr.interval(0.9)
    width = {"na": (hi - lo).mean(-1), "fa": 2 * 1.6449 * fa.sd().mean(-1),
             "nv": 2 * 1.6449 * np.sqrt(np.diagonal(nv.cov, axis1=1, axis2=2)).mean(-1)}
    rho = {"na": spearman(np.einsum("bmd,bd->bm", Xt, dr.mean()), data["yt"]),
           "fa": spearman(np.einsum("bmd,bd->bm", Xt, fa.mean), data["yt"]),
           "nv": spearman(np.einsum("bmd,bd->bm", Xt, nv.mean), data["yt"])}
    print(f"# coverage study: d={D}, n_public={N_PUB} (clipped), reps={args.reps}, rplr split={split}, "
          f"Gram prior rel_sd={args.rel_sd} corr_sd={args.corr_sd}, precision priors: {args.prior}, "
          f"feature correlation {args.rho_x}")
    print(f"# sampler {t_s:.1f} s for {len(data['n'])} problems ({1e3 * t_s / len(data['n']):.1f} ms each, "
          f"acceptance {', '.join(f'{k} {v.mean():.2f}' for k, v in dr.accept.items())}); fast {t_f:.2f} s")
    print("| n_private | ε | ω_x, ω_y | NA 90% | NA 50% | fast 90% | fast 50% | rplr 90% | rplr 50% | rplr(no ridge) 90% "
          "| pred NA 90% | pred fast 90% | pred rplr 90% | width NA / fast / rplr | Spearman NA / fast / rplr | "
          "NA 90% of β |")
    print("|" + "---|" * 16)
    for ci, (n, e) in enumerate(cells):
        s = data["cell"] == ci
        t = tune_thresholds(n, D, e, split)
        f = {k: 100 * v[s].mean() for k, v in res.items()}
        print(f"| {n} | {e:g} | {t['omega_x']:g}, {t['omega_y']:g} | {f['na90']:.1f} | {f['na50']:.1f} | "
              f"{f['fa90']:.1f} | {f['fa50']:.1f} | {f['nv90']:.1f} | {f['nv50']:.1f} | {f['nv090']:.1f} | "
              f"{f['nap90']:.1f} | {f['fap90']:.1f} | {f['nvp90']:.1f} | "
              f"{width['na'][s].mean():.2f} / {width['fa'][s].mean():.2f} / {width['nv'][s].mean():.2f} | "
              f"{rho['na'][s].mean():.3f} / {rho['fa'][s].mean():.3f} / {rho['nv'][s].mean():.3f} | "
              f"{f['na_beta90']:.1f} |")
    all90 = 100 * res["na90"].mean()
    print(f"# overall: NA 90% {all90:.1f}, 50% {100 * res['na50'].mean():.1f}; fast 90% {100 * res['fa90'].mean():.1f}; "
          f"rplr 90% {100 * res['nv90'].mean():.1f}")


def split_study(args):
    ts = tune_split(500, D, 2.0)
    tt = tune_thresholds(500, D, 2.0, (ts["p1"], ts["p2"], ts["p3"]))
    print("# analytic split at the paper's case (n = 500, d = 10, ε = 2)")
    print("| method | Gram prior (rel_sd, corr_sd) | p1 | p2 | p3 | ω_x | ω_y | J |")
    print("|---|---|---|---|---|---|---|---|")
    choices = {}
    for rel in (0.1, 0.3, 1e3):
        t0 = time.perf_counter()
        a = analytic_split(500, D, 2.0, rel_sd=rel, corr_sd=rel)
        choices[rel] = a
        print(f"| analytic ({time.perf_counter() - t0:.1f} s) | {rel:g}, {rel:g} | {a['p1']:.2f} | {a['p2']:.2f} | "
              f"{a['p3']:.2f} | {a['omega_x']:g} | {a['omega_y']:g} | {a['score']:.3f} |")
    print(f"| dpexp.families.gdsc.tuning (aux data, 5×5 + 20×20) | – | {ts['p1']:.2f} | {ts['p2']:.2f} | {ts['p3']:.2f} | "
          f"{tt['omega_x']:g} | {tt['omega_y']:g} | Spearman {ts['score']:.3f} |")
    # agreement over the Fig. 5 grid: J (best ω per split) vs the auxiliary-data score of each split
    table = np.asarray(ts["table"])
    om = np.array([0.1 * k for k in range(1, 21)])
    WX, WY = np.meshgrid(om, om, indexing="ij")
    for rel in (0.1, 0.3):
        J = expected_correlation(500, D, 2.0, table[:, 0], table[:, 1], WX.ravel(), WY.ravel(), rel, rel).max(-1)
        r = sps.spearmanr(J, table[:, 3])[0]
        print(f"# Fig. 5 grid (171 splits): Spearman between analytic J (rel_sd = corr_sd = {rel:g}) and the "
              f"auxiliary-data score: {r:.3f}")
    # held-out check on fresh Eq. (10) data: test Spearman of posterior means at each choice
    cases = {"rplr @ tuned": ("rplr", (ts["p1"], ts["p2"], ts["p3"]), (tt["omega_x"], tt["omega_y"])),
             "NA-fast @ tuned": ("fa", (ts["p1"], ts["p2"], ts["p3"]), (tt["omega_x"], tt["omega_y"]))}
    for rel in (0.1, 0.3):
        a = choices[rel]
        cases[f"NA-fast @ analytic({rel:g})"] = ("fa", (a["p1"], a["p2"], a["p3"]), (a["omega_x"], a["omega_y"]))
        cases[f"rplr @ analytic({rel:g})"] = ("rplr", (a["p1"], a["p2"], a["p3"]), (a["omega_x"], a["omega_y"]))
    print(f"# held-out check: fresh Eq. (10) data, n = 500, ε = 2, {args.reps} data sets (same data for every row)")
    print("| method @ choice | mean test Spearman | sd / √reps |")
    print("|---|---|---|")
    for label, (method, sp, om_) in cases.items():
        data = make_cells([(500, 2.0)], args.reps, args.seed, lambda n, e: sp, lambda n, e: om_)
        stats = NoisyStats(data["Z"], data["zxy"], data["zyy"], data["n"], data["bxx"], data["bxy"], data["byy"])
        public = ExactStats(data["Ap"], data["cp"], data["tp"], float(N_PUB))
        if method == "fa":
            rel = 0.3 if "0.3" in label else 0.1
            prior = clipped_gaussian_gram_prior(data["n"], D, data["Bx"], data["sx"], rel, rel)
            w = fit_gaussian(stats, public=public, gram_prior=prior).mean
        else:
            XXs = ridge_stabilised(data["Z"] + data["Ap"], noise_ridge(D, data["bxx"]))
            w = fit_vb(XXs, data["zxy"] + data["cp"], data["zyy"] + data["tp"], data["n"] + N_PUB).mean
        rho = spearman(np.einsum("bmd,bd->bm", data["Xt"], w), data["yt"])
        print(f"| {label} | {rho.mean():.3f} | {rho.std() / np.sqrt(len(rho)):.3f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["coverage", "split"])
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--rel-sd", type=float, default=0.1)
    ap.add_argument("--corr-sd", type=float, default=0.1)
    ap.add_argument("--prior", choices=["scaled", "paper"], default="scaled",
                    help="Gamma priors of λ, λ0: rescaled to the clipped data (clipping_scaled_prior) or Gamma(2, 2)")
    ap.add_argument("--n", type=int, nargs="*", help="only these n_private")
    ap.add_argument("--rho-x", type=float, default=0.0, help="equicorrelation of the features (misspecification)")
    ap.add_argument("--eps", type=float, nargs="*", help="only these epsilons")
    args = ap.parse_args()
    coverage(args) if args.what == "coverage" else split_study(args)


if __name__ == "__main__":
    main()
