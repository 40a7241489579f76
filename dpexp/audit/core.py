"""Black-box audit of one algorithm's (ε, δ) claim (issue 5, steps 1–5).

1. candidate neighbouring pairs from the entry's ``Design`` (``neighbours.candidate_pairs``);
2. a short pilot on every candidate dataset, and for each (pair, scalar projection) a split-sample ε bound;
   the pair and projection with the largest bound are kept (pilot samples are *not* reused later);
3. ``trials`` fresh runs on each side of the kept pair through ``Algorithm.run_many`` — the production entry point
   the figures run — with both splits in every call, in alternating order (``_run_pair``), vectorised over trials
   in chunks, seeded by named streams (``dpexp.rng.stream``) so results do not depend on ``--jobs``;
4. events chosen on the first half of those runs, evaluated on the second half with Clopper–Pearson bounds
   (``events.audit_samples``) → ε̂_lb;
5. PASS if ε̂_lb ≤ the claimed ε, else FAIL with the witnessing event and counts.  The claim is the worst
   ``Output.guarantee`` of probe runs on the first candidate pair (derived by the algorithm's ledger from the
   mechanisms it called, never from the config); a ``none`` guarantee is reported NOT-DP with its reason.  A claim
   that spends more than the audit asked for (``privacy.budget.check_spend``: the runner fails such a cell) FAILs
   at once, without statistics: ``epsilon_lb`` is then the ε spent, by arithmetic, and the note says so.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from dpexp.audit.events import EventResult, audit_samples
from dpexp.audit.neighbours import Design, NeighbourPair, candidate_pairs
from dpexp.components import Algorithm
from dpexp.privacy.accounting import zcdp_to_approx_dp_best, zcdp_to_approx_dp_cks
from dpexp.privacy.budget import check_spend
from dpexp.rng import stream
from dpexp.types import Output, Split

PASS, FAIL, NOT_DP, SKIP, ERROR = "PASS", "FAIL", "NOT-DP", "SKIP", "ERROR"


@dataclass
class AuditResult:
    """One row of the audit table."""

    algorithm: str
    verdict: str
    claimed_epsilon: float = math.nan
    claimed_delta: float = math.nan
    epsilon_lb: float = math.nan
    trials: int = 0
    seconds: float = 0.0
    relation: str = ""
    neighbours: str = ""
    projection: str = ""
    event: str = ""
    k_d: int = 0
    k_dprime: int = 0
    n_d: int = 0
    n_dprime: int = 0
    note: str = ""
    extras: dict[str, float] = field(default_factory=dict)


def claimed_budget(alg: Algorithm, epsilon: float, delta: float, splits: list[Split] | None = None,
                   seed: int = 0, name: str = "", rho_delta: float | None = None) -> tuple[float, float, str]:
    """The (ε, δ) the algorithm claims for one run and, when it claims none, the reason (else "").

    The claim is what the algorithm's ledger derives: the worst ``Output.guarantee`` of one probe run on each of
    ``splits`` (the first candidate pair).  A zCDP guarantee is converted to (ε, δ) with
    ``accounting.zcdp_to_approx_dp_best`` at the requested δ (1e-6 when none was requested).
    """
    from dpexp.privacy.accounting import worst

    if not splits:
        raise ValueError("claimed_budget needs the probe splits")
    gs = []
    rngs = [stream(seed, "audit", name, "claim", i) for i in range(len(splits))]
    outs = _many(alg, list(splits), epsilon, delta, rngs, 1)
    for out in outs:
        if isinstance(out, Exception):
            raise out
        if out.guarantee is None:
            return math.nan, math.nan, "the algorithm reported no guarantee"
        gs.append(out.guarantee)
    g = worst(gs)
    if g.kind == "none":
        return math.nan, math.nan, g.reason
    over = check_spend(getattr(alg, "alg", alg), g, epsilon, delta)   # an audit view keeps its algorithm as .alg
    if over:
        raise Overspend(over, g)
    if rho_delta is not None and g.kind in ("zcdp", "approx") and math.isfinite(g.rho):
        return zcdp_to_approx_dp_cks(g.rho, rho_delta), float(rho_delta), ""
    if g.kind == "zcdp":
        dl = delta if delta > 0 else 1e-6
        return zcdp_to_approx_dp_best(g.rho, dl), dl, ""
    return float(g.epsilon), float(g.delta), ""


class Overspend(Exception):
    """The probe runs' guarantee spends more than the audit asked for (``budget.check_spend``): a FAIL found by
    arithmetic, before any statistics."""

    def __init__(self, reason: str, guarantee) -> None:
        super().__init__(reason)
        self.guarantee = guarantee


Projection = tuple[str, Callable[[Output], np.ndarray]]


def projections(out: Output, split: Split) -> list[Projection]:
    """Scalar projections of an output: the prediction at each test point, and each coefficient if given."""
    res: list[Projection] = []
    Xt = split.X_test
    for j in range(out.predictions.shape[1]):
        pt = ",".join(f"{v:g}" for v in Xt[j])
        res.append((f"prediction at x=({pt})", lambda o, j=j: o.predictions[:, j]))
    if out.coef is not None:
        C = np.asarray(out.coef)
        for j in range(C.reshape(C.shape[0], -1).shape[1]):
            res.append((f"coef[{j}]", lambda o, j=j: np.asarray(o.coef).reshape(o.predictions.shape[0], -1)[:, j]))
    return res


def features(o: Output) -> np.ndarray:
    """Every released number of an output as one row per trial: predictions, then coefficients (trials, m)."""
    parts = [np.asarray(o.predictions, dtype=float)]
    if o.coef is not None:
        parts.append(np.asarray(o.coef, dtype=float).reshape(o.predictions.shape[0], -1))
    return np.concatenate(parts, axis=1)


def score_projections(A: np.ndarray, B: np.ndarray) -> list[Projection]:
    """Joint projections of the whole release, fitted on pilot features ``A`` (runs on D) and ``B`` (on D′).

    A release of several noisy numbers spreads its privacy loss over all of them, so no single coordinate sees it.
    The privacy-loss random variable of independent Laplace noise is Σ_j (|v_j − μ′_j| − |v_j − μ_j|)/b_j and that
    of Gaussian noise is linear, Σ_j (μ_j − μ′_j) v_j / σ_j²; thresholds on it are the most powerful events
    (Neyman–Pearson).  We plug in per-coordinate medians (μ, μ′) and mean absolute deviations / standard deviations
    (b, σ) estimated from the pilot, which are discarded afterwards: the fitted score is a fixed function of the
    output, so the bound on fresh samples stays valid whatever the fit.  Coordinates that do not vary are left out
    (a constant coordinate that differs is caught by its single-coordinate projection).  A failed trial (NaN) maps
    to +∞ like any other failure.
    """
    okA, okB = np.all(np.isfinite(A), axis=1), np.all(np.isfinite(B), axis=1)
    if okA.sum() < 20 or okB.sum() < 20:
        return []
    A, B = A[okA], B[okB]
    ma, mb = np.median(A, axis=0), np.median(B, axis=0)
    mad = 0.5 * (np.mean(np.abs(A - ma), axis=0) + np.mean(np.abs(B - mb), axis=0))
    sd = np.sqrt(0.5 * (A.var(axis=0) + B.var(axis=0)))
    keep = (mad > 1e-12 * (1.0 + np.abs(ma))) & (sd > 0)
    if keep.sum() < 2:
        return []
    idx = np.flatnonzero(keep)
    ma, mb, mad, sd = ma[idx], mb[idx], mad[idx], sd[idx]
    w = (A[:, idx].mean(axis=0) - B[:, idx].mean(axis=0)) / sd**2

    mid, half, sgn = 0.5 * (ma + mb), 0.5 * np.abs(ma - mb), np.where(ma >= mb, 1.0, -1.0)

    def lap(o: Output, idx=idx, mid=mid, half=half, sgn=sgn, mad=mad) -> np.ndarray:
        # |v − μ′| − |v − μ| = 2 sgn(μ − μ′) clip(v − (μ + μ′)/2, ±|μ − μ′|/2): written with clip so that the
        # saturated values are exactly equal on both sides (no floating-point artefacts of the subtraction)
        F = features(o)[:, idx]
        with np.errstate(invalid="ignore"):
            return np.sum(2.0 * sgn * np.clip(F - mid, -half, half) / mad, axis=1)

    def gauss(o: Output, idx=idx, w=w) -> np.ndarray:
        return features(o)[:, idx] @ w

    return [(f"Laplace log-likelihood-ratio score of {idx.size} released numbers", lap),
            (f"Gaussian log-likelihood-ratio score of {idx.size} released numbers", gauss)]


def _many(alg, splits: list[Split], epsilon: float, delta: float, rngs: list, trials: int) -> list:
    """``alg.run_many``; an audit view that has none (a view of an algorithm whose ``run_many`` is the default
    loop over ``run``, e.g. ``slr.audit.NoisyStatsRelease``) runs split by split, as that loop does."""
    many = getattr(alg, "run_many", None)
    if many is not None:
        return many(splits, epsilon, delta, rngs, trials)
    return [alg.run(s, epsilon, delta, r, trials) for s, r in zip(splits, rngs)]


def _run_pair(alg: Algorithm, D: Split, Dprime: Split, epsilon: float, delta: float, rng_d: np.random.Generator,
              rng_dprime: np.random.Generator, trials: int, chunk: int) -> tuple[list[Output], list[Output]]:
    """``trials`` runs on each side of a neighbouring pair through ``run_many`` — the entry point the runner calls
    for every figure, with its batched paths — ``chunk`` trials a call.  Every call holds both splits, each with its
    own stream, and their order alternates from call to call, so the audited split sits first in one call and
    second in the next (a split's draws must not depend on its position or on the other split: the runner's
    contract).  A split the algorithm fails raises that split's exception."""
    outs_d: list[Output] = []
    outs_dprime: list[Output] = []
    left, call = int(trials), 0
    while left > 0:
        t = min(chunk, left)
        batch = [(D, rng_d, outs_d), (Dprime, rng_dprime, outs_dprime)]
        if call % 2:
            batch.reverse()
        res = _many(alg, [b[0] for b in batch], epsilon, delta, [b[1] for b in batch], t)
        for (_, _, sink), out in zip(batch, res):
            if isinstance(out, Exception):
                raise out
            sink.append(out)
        left -= t
        call += 1
    return outs_d, outs_dprime


def _project(outs: list[Output], proj: Callable[[Output], np.ndarray]) -> np.ndarray:
    return np.concatenate([np.asarray(proj(o), dtype=float).ravel() for o in outs])


def audit_algorithm(name: str, alg: Algorithm, design: Design, relation: str, epsilon: float, delta: float,
                    trials: int, confidence: float, seed: int, pilot_trials: int | None = None,
                    chunk: int = 25_000, top_k: int = 2, rho_delta: float | None = None) -> AuditResult:
    """Run steps 1–5 for ``alg`` (see the module docstring) and return its table row."""
    t0 = time.perf_counter()
    pairs = candidate_pairs(design, relation)
    try:
        claimed_eps, claimed_delta, not_dp = claimed_budget(alg, epsilon, delta, [pairs[0].D, pairs[0].Dprime],
                                                            seed, name, rho_delta)
    except Overspend as over:   # spent > asked: a FAIL by arithmetic (the claim is the ask, the spend its bound)
        g = over.guarantee
        spent = g.epsilon if g.kind != "zcdp" else zcdp_to_approx_dp_best(g.rho, delta if delta > 0 else 1e-6)
        return AuditResult(name, FAIL, float(epsilon), float(delta), epsilon_lb=float(spent), trials=0,
                           seconds=time.perf_counter() - t0, relation=relation, note=str(over))
    if not_dp:
        return AuditResult(name, NOT_DP, seconds=time.perf_counter() - t0, relation=relation,
                           note=f"not DP: {not_dp}")
    pilot = int(pilot_trials if pilot_trials is not None else max(2_000, min(5_000, trials // 20)))
    chunk = max(1, int(chunk))

    # -- step 2: pilot over candidate pairs and projections -------------------------------------------------
    cache: dict[tuple[str, str], tuple[list[Output], list[Output]] | Exception] = {}

    def pilot_run(p: NeighbourPair) -> tuple[list[Output], list[Output]] | Exception:
        key = (p.key_d, p.key_dprime)
        if key not in cache:
            try:
                cache[key] = _run_pair(alg, p.D, p.Dprime, epsilon, delta,
                                       stream(seed, "audit", name, "pilot", p.key_d),
                                       stream(seed, "audit", name, "pilot", p.key_dprime), pilot, chunk)
            except Exception as exc:  # a candidate the algorithm cannot handle is skipped
                cache[key] = exc
        return cache[key]

    best: tuple[float, NeighbourPair, str, Callable[[Output], np.ndarray]] | None = None
    errors: list[str] = []
    if len(pairs) == 1 and pilot_trials == 0:
        p = pairs[0]
        out, _ = _run_pair(alg, p.D, p.Dprime, epsilon, delta, stream(seed, "audit", name, "probe"),
                           stream(seed, "audit", name, "probe", "D'"), 1, 1)
        label, fn = projections(out[0], p.D)[0]
        best = (math.inf, p, label, fn)
    else:
        for p in pairs:
            ab = pilot_run(p)
            if isinstance(ab, Exception):
                errors.append(f"{p.description}: {type(ab).__name__}: {ab}")
                continue
            a, b = ab
            # joint scores are fitted on the first half of the pilot; every candidate is ranked on the second
            FA = np.concatenate([features(o) for o in a])
            FB = np.concatenate([features(o) for o in b])
            ha, hb = FA.shape[0] // 2, FB.shape[0] // 2
            cands = projections(a[0], p.D) + score_projections(FA[:ha], FB[:hb])
            for label, fn in cands:
                xa, xb = _project(a, fn), _project(b, fn)
                r = audit_samples(xa[ha:], xb[hb:], claimed_delta, confidence, top_k)
                score = r.epsilon_lb if math.isfinite(r.epsilon_lb) else -1e300
                if best is None or score > best[0]:
                    best = (score, p, label, fn)
    if best is None:
        return AuditResult(name, ERROR, claimed_eps, claimed_delta, seconds=time.perf_counter() - t0,
                           relation=relation, note="every candidate pair failed: " + "; ".join(errors[:2]))
    _, pair, label, fn = best

    # -- steps 3-4: fresh runs, events chosen on the first half, evaluated on the second -------------------
    outs_d, outs_dprime = _run_pair(alg, pair.D, pair.Dprime, epsilon, delta,
                                    stream(seed, "audit", name, "main", "D"), stream(seed, "audit", name, "main", "D'"),
                                    trials, chunk)
    a, b = _project(outs_d, fn), _project(outs_dprime, fn)
    r: EventResult = audit_samples(a, b, claimed_delta, confidence, top_k)
    lb = r.epsilon_lb
    verdict = FAIL if (math.isfinite(lb) and lb > claimed_eps + 1e-12) else PASS
    return AuditResult(
        algorithm=name, verdict=verdict, claimed_epsilon=claimed_eps, claimed_delta=claimed_delta,
        epsilon_lb=max(lb, 0.0) if math.isfinite(lb) else 0.0, trials=int(trials),
        seconds=time.perf_counter() - t0, relation=relation, neighbours=pair.description, projection=label,
        event=r.event.describe("out"), k_d=r.k_d, k_dprime=r.k_dprime, n_d=r.n_d, n_dprime=r.n_dprime,
        note=(f"{len(errors)} candidate pair(s) skipped" if errors else ""))
