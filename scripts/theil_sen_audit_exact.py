"""Exact privacy loss of the DP Theil–Sen medians on their audit designs (docs/audit.md, "Theil–Sen").

Offline check, not part of the audit: the audit itself stays black-box.  Prints

1. for ``theil_sen_atom`` (dp_exp / dp_wide): the exact output distribution of the exponential-mechanism median
   (piecewise uniform over the intervals between the clipped, widened estimates — the estimates are computed by the
   algorithm's own code) for the correct median, the median sampled at 2·ε_med, and with every Gumbel draw halved
   (log-weights doubled), and the largest |ln P_D(S)/P_D′(S)| over intervals S;
2. for the smooth-sensitivity Student-t release med + (S/s)·T_d: the supremum of the log density ratio over every
   configuration a t-smooth bound allows (S′/S ∈ [e^−t, e^t], |med − med′| ≤ min(S, S′)), at the paper's β = 1/2
   and the audited β = 0.05 — correct, half the noise, and ε doubled;
3. for ``theil_sen_pivot`` (dp_ss): the exact loss of its pair (median r_l → r_u, both smooth bounds the span).

Run: ``python scripts/theil_sen_audit_exact.py`` (about a minute of CPU; part 2 dominates).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from dpexp import registry
from dpexp.audit.neighbours import candidate_pairs
from dpexp.families.slr.audit import theil_sen_atom, theil_sen_pivot
from dpexp.families.slr.dp_median import _dist, smooth_sensitivity, ss_params, widen_sorted
from dpexp.families.slr.matchings import all_pair_estimates

EPS = 1.0


def em_intervals(split, eps_med: float, theta: float, r_l: float, r_u: float, log_factor: float = 1.0):
    """(breakpoints, interval probabilities) of the (widened) exponential-mechanism median; ``log_factor`` 2 is the
    Gumbel-max sampler with every Gumbel draw halved."""
    z = all_pair_estimates(split.X_private.ravel(), split.y_private, float(split.X_test[0, 0]))
    zs = np.sort(np.clip(z, r_l, r_u))
    widen_sorted(zs, theta, r_l, r_u)
    b = np.concatenate([[r_l], zs, [r_u]])
    with np.errstate(divide="ignore"):
        lw = log_factor * (np.log(np.diff(b)) - 0.5 * eps_med * _dist(np.arange(zs.size + 1), zs.size))
    p = np.exp(lw - lw.max())
    return b, p / p.sum()


def cdf(b: np.ndarray, p: np.ndarray, t: np.ndarray) -> np.ndarray:
    out = np.zeros_like(t)
    for lo, hi, q in zip(b[:-1], b[1:], p):
        out += q * (np.clip((t - lo) / (hi - lo), 0, 1) if hi > lo else (t >= lo))
    return out


def max_interval_loss(A, B) -> tuple[float, float, float]:
    """max |ln P_A(S)/P_B(S)| over intervals S with end points at the breakpoints of either side: (loss, lo, hi)."""
    g = np.unique(np.concatenate([A[0], B[0]]))
    FA, FB = cdf(*A, g), cdf(*B, g)
    i, j = np.triu_indices(g.size, 1)
    P, Q = FA[j] - FA[i], FB[j] - FB[i]
    ok = (P > 1e-12) & (Q > 1e-12)
    L = np.abs(np.log(P[ok] / Q[ok]))
    m = int(np.argmax(L))
    return float(L[m]), float(g[i[ok][m]]), float(g[j[ok][m]])


def exponential_medians() -> None:
    print("1. exponential-mechanism medians on theil_sen_atom (eps = 1, one prediction)")
    for name in ("dp_exp_theil_sen", "dp_wide_theil_sen"):
        alg = registry.get("algorithm", name)()
        pair = candidate_pairs(theil_sen_atom(alg), "replace-one")[0]
        n = pair.D.X_private.shape[0]
        k, p = n - 1, alg.params
        theta = float(getattr(p, "theta", 0.0))
        for label, eps_med, lf in (("correct", EPS / k, 1.0), ("2 eps_med", 2 * EPS / k, 1.0),
                                   ("half Gumbel", EPS / k, 2.0)):
            A = em_intervals(pair.D, eps_med, theta, p.r_l, p.r_u, lf)
            B = em_intervals(pair.Dprime, eps_med, theta, p.r_l, p.r_u, lf)
            loss, lo, hi = max_interval_loss(A, B)
            print(f"   {name:18s} {label:12s} max |ln P_D(S)/P_D'(S)| = {loss:.3f}  at S = [{lo:.2f}, {hi:.2f}]")


def t_loss(x, m1, s1, m2, s2, d):
    return stats.t.logpdf((x - m1) / s1, d) - np.log(s1) - (stats.t.logpdf((x - m2) / s2, d) - np.log(s2))


def smooth_t_sup() -> None:
    print("2. sup of the Student-t smooth-sensitivity release's log density ratio (d = 3), every t-smooth config")
    d, x = 3.0, np.linspace(-60, 60, 120_001)
    for beta in (0.5, 0.05):
        for label, eps, nf in (("correct", EPS, 1.0), ("half noise", EPS, 0.5), ("2 eps", 2 * EPS, 1.0)):
            t, s = ss_params(eps, d, beta)
            best = 0.0
            for r in np.linspace(-t, t, 21):            # S' = e^r S, S = 1
                for sh in np.linspace(0, min(1.0, np.exp(r)), 21):
                    best = max(best, float(np.abs(t_loss(x, 0.0, nf / s, sh, nf * np.exp(r) / s, d)).max()))
            print(f"   beta = {beta:<4g} {label:10s} sup = {best:.3f}   (claim {EPS:g})")


def pivot() -> None:
    print("3. dp_ss_theil_sen on theil_sen_pivot (beta = 0.05, eps = 1, one prediction)")
    alg = registry.get("algorithm", "dp_ss_theil_sen")(beta=0.05)
    p = alg.params
    pair = candidate_pairs(theil_sen_pivot(alg), "replace-one")[0]
    k = pair.D.X_private.shape[0] - 1
    t, s = ss_params(EPS, p.d, p.beta)
    rel = []
    for sp in (pair.D, pair.Dprime):
        z = np.sort(np.clip(all_pair_estimates(sp.X_private.ravel(), sp.y_private, 0.25), p.r_l, p.r_u))
        med = z[(z.size + 1) // 2 - 1]
        rel.append((med, smooth_sensitivity(z, k, t, p.r_l, p.r_u)))
    print(f"   D: median {rel[0][0]:g}, S = {rel[0][1]:g};  D': median {rel[1][0]:g}, S = {rel[1][1]:g}")
    x = np.linspace(-80, 80, 160_001)
    for label, nf in (("correct", 1.0), ("half noise", 0.5)):
        (m1, S1), (m2, S2) = rel
        L = t_loss(x, m1, nf * S1 / s, m2, nf * S2 / s, p.d)
        P = stats.t.cdf((x - m1) / (nf * S1 / s), p.d)
        Q = stats.t.cdf((x - m2) / (nf * S2 / s), p.d)
        ok = P > 1e-3
        print(f"   {label:10s} sup density ratio {np.abs(L).max():.3f}; best event out <= c: "
              f"{np.max(np.log(P[ok] / Q[ok])):.3f}")


if __name__ == "__main__":
    exponential_medians()
    smooth_t_sup()
    pivot()
