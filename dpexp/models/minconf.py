"""The authors' oplr solver chain: minConf_PQN (Schmidt, van den Berg, Friedlander & Murphy, AISTATS 2009, "Optimizing
costly functions with simple constraints: a limited-memory projected quasi-Newton algorithm") under the authors'
"projection" (``projectRandom2C.c`` of DPBayes/robust-private-lr), written here from the published algorithm and
batched over many problems at once.

**The "projection"** (:func:`authors_projection`): c = w² (entry-wise) is projected onto {c ≥ 0, Σc ≤ R} —
unchanged when Σc ≤ R, else the Euclidean projection onto the simplex {c ≥ 0, Σc = R} (:func:`simplex_projection`,
c_i = max(w_i² − τ, 0)) — and multiplied by sign(w).  It is *not* a projection onto the L2 ball ‖w‖₂² ≤ R: inside
the ball it returns w·|w| (not w: the map is not idempotent), and outside its image has ‖·‖₁ = R (not ‖·‖₂ = √R).
A solver calling it as a projection is a heuristic; what it returns is shorter and sparser than the exact
ball-constrained minimiser.

**PQN** (:func:`minconf_pqn`, minConf_PQN at the defaults the authors call it with): x₀ = P(x_init); stop at the
start if max|P(x − g) − x| < optTol (1e-5).  Iteration 1 takes the projected-gradient point p = P(x − g); later
iterations keep L-BFGS pairs (s, y) (10 corrections, a pair kept only if yᵀs > 1e-10, scaling Hdiag = yᵀs / yᵀy) and
take p = the SPG minimiser of the quadratic model q(p) = gᵀ(p − x) + ½(p − x)ᵀB(p − x) under P, B in compact form
(Byrd, Nocedal & Schnabel 1994, Eq. 2.17: B = I/Hdiag − N M⁻¹ Nᵀ with N = [S/Hdiag, Y], M = [SᵀS/Hdiag, L; Lᵀ, −D]),
starting feasible at x.  Direction d = p − x; from iteration 2 on, stop if gᵀd > −progTol (1e-9).  Armijo
backtracking (suffDec 1e-4) from t = min(1, 1/‖g‖₁) at iteration 1, else t = 1; each backtrack t ← the cubic
interpolant's minimiser from (0, f, gᵀd) and (t, f_new, g_newᵀd) (minFunc's ``polyinterp``), clamped to [1e-3·t,
0.6·t], or t/2 if f_new or g_new is not finite; if max|t·d| < progTol the search gives up and x is kept.  After the
step stop if max|P(x − g) − x| < optTol, max|t·d| < progTol, |f − f_old| < progTol, or more than 500 function
evaluations were spent.

**SPG** (:func:`minconf_spg`, minConf_SPG as PQN calls it for the direction: at most 10 evaluations of the model,
optTol 1e-6 — not tested, as PQN passes ``testOpt = 0`` — progTol 1e-10, feasible start): Barzilai–Borwein step
α = sᵀs/sᵀy (α = 1 at the first iteration and outside [1e-10, 1e10]); d = P(x − αg) − x; stop if gᵀd > −progTol;
non-monotone Armijo (memory 10: the reference value is the largest of the last 10 f, suffDec 1e-4) with the same
t₀ and cubic backtracking as PQN; the same stops as PQN (the optimality one only with ``test_opt``).

**Batching** (array-first): ``fun(X, rows)`` evaluates the problems ``rows`` (indices into the batch) at the points
X (len(rows), d) and returns (f (len(rows),), G (len(rows), d)); ``proj`` maps (m, d) rows.  All live problems
advance one iteration together (they share the iteration count), each line search and each SPG subproblem runs for
its own problems under masks, and a problem that stops is left out of later work, so every problem follows the path
it follows alone, to the bit (the stacked products and solves act on each problem's matrices as on them alone):
``oplr_paper`` relies on this when it solves the problems of every size of a chunk in one call
(``compared_paper._pooled_fits``).  Two details are ours, and change nothing on the problems here: B is formed
once per iteration as a d × d matrix (the same operator minConf applies to a vector as v/Hdiag − N(M \\ Nᵀv));
and a backtracking step that comes out not finite is replaced by t/2 (minConf would carry NaN), as is SPG's
"f finite, g not" case (unreachable for a quadratic), and a line search is cut after ``MAX_BACKTRACKS`` rounds (a
direction with an infinite entry never reaches progTol).

:func:`oplr_minconf` is the fit ``oplr_paper`` runs: min wᵀAw − 2bᵀw + lam‖w‖² (Σ(xᵢᵀw − yᵢ)² + (λ/2)‖w‖² up to the
constant yᵀy, with A = XᵀX, b = Xᵀy, lam = λ/2) from x₀ = P(0) under the authors' "projection" with R.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

#: minConf_PQN's defaults as the authors' ``LR_output_perturbation.m`` calls it (module docstring)
PQN_DEFAULTS = dict(opt_tol=1e-5, prog_tol=1e-9, max_evals=500, corrections=10, suff_dec=1e-4,
                    spg_iters=10, spg_opt_tol=1e-6, spg_prog_tol=1e-10, spg_test_opt=False)
#: minConf_SPG's memory of the non-monotone Armijo rule, its BB bounds and the L-BFGS curvature threshold
SPG_MEMORY = 10
BB_BOUNDS = (1e-10, 1e10)
CURVATURE_MIN = 1e-10
#: a guard of ours: the most backtracking rounds of one line search (minConf has none; see the module docstring)
MAX_BACKTRACKS = 2000

#: stop reasons (``Result.stop``)
STOP_OPT_INITIAL, STOP_OPT, STOP_STEP, STOP_FCHANGE, STOP_EVALS, STOP_DIRECTION = 1, 2, 3, 4, 5, 6
STOP_NAMES = {0: "running", STOP_OPT_INITIAL: "optimal at the start", STOP_OPT: "optimality below optTol",
              STOP_STEP: "step below progTol", STOP_FCHANGE: "f changing by less than progTol",
              STOP_EVALS: "function evaluations exceed maxIter", STOP_DIRECTION: "directional derivative above -progTol"}

Fun = Callable[[np.ndarray, np.ndarray], "tuple[np.ndarray, np.ndarray]"]
Proj = Callable[[np.ndarray], np.ndarray]


@dataclass
class Result:
    """A batch of solutions: x (B, d), f (B,), evals (B,) function evaluations, iterations (B,), stop (B,) codes."""

    x: np.ndarray
    f: np.ndarray
    evals: np.ndarray
    iterations: np.ndarray
    stop: np.ndarray


# ------------------------------------------------------------------------------------------------ the projection
def simplex_projection(C: np.ndarray, R: float = 1.0) -> np.ndarray:
    """The Euclidean projection of every row of C (…, d) onto the simplex {c ≥ 0, Σc = R}: c_i = max(C_i − τ, 0)
    with τ from the sorted row (Held, Wolfe & Crowder 1974; Duchi et al. 2008, Fig. 1)."""
    C = np.asarray(C, dtype=float)
    d = C.shape[-1]
    U = -np.sort(-C, axis=-1)                                   # descending
    css = np.cumsum(U, axis=-1) - R
    cond = U - css / np.arange(1, d + 1) > 0
    rho = d - np.argmax(cond[..., ::-1], axis=-1)               # 1 + the last index where cond holds
    tau = np.take_along_axis(css, (rho - 1)[..., None], axis=-1) / rho[..., None]
    return np.maximum(C - tau, 0.0)


def authors_projection(W: np.ndarray, R: float = 1.0) -> np.ndarray:
    """The authors' "projection" of every row of W (…, d) (``projectRandom2C.c``): sign(w)·Π(w²), Π the projection
    onto {c ≥ 0, Σc ≤ R} (identity when Σw² ≤ R, else :func:`simplex_projection`).  Not idempotent, not the L2 ball's
    projection (module docstring)."""
    W = np.asarray(W, dtype=float)
    C = W * W
    outside = ~(C.sum(axis=-1) <= R)
    if np.any(outside):
        C[outside] = simplex_projection(C[outside], R)
    return np.sign(W) * C


# ------------------------------------------------------------------------------------------------ line search
def _cubic_step(f: np.ndarray, gtd: np.ndarray, t: np.ndarray, f_new: np.ndarray, gtd_new: np.ndarray
                ) -> np.ndarray:
    """minFunc's ``polyinterp`` for two points with values and derivatives, (0, f, gtd) and (t, f_new, gtd_new):
    the minimiser of the cubic interpolant clamped to [0, t]; the midpoint t/2 where it has no real minimiser."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        d1 = gtd + gtd_new - 3.0 * (f - f_new) / (0.0 - t)
        disc = d1 * d1 - gtd * gtd_new
        d2 = np.sqrt(np.where(disc >= 0, disc, 0.0))
        step = t - t * ((gtd_new + d2 - d1) / (gtd_new - gtd + 2.0 * d2))
    step = np.minimum(np.maximum(step, 0.0), t)
    return np.where(disc >= 0, step, 0.5 * t)


def _finite_rows(G: np.ndarray) -> np.ndarray:
    return np.isfinite(G).all(axis=-1)


def _line_search(fun: Fun, rows: np.ndarray, x: np.ndarray, f: np.ndarray, g: np.ndarray, d: np.ndarray,
                 t: np.ndarray, f_ref: np.ndarray, gtd: np.ndarray, prog_tol: float, suff_dec: float,
                 evals: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """minConf's backtracking Armijo search along d from x for the problems ``rows`` (module docstring): accept
    f_new ≤ f_ref + suffDec·gᵀ(x_new − x) with f_new finite.  Returns (x_new, f_new, g_new, t); where the search gives
    up, (x, f, g, 0).  ``evals[rows]`` counts the evaluations."""
    x_new = x + t[:, None] * d
    f_new, g_new = fun(x_new, rows)
    f_new, g_new = np.array(f_new, dtype=float), np.array(g_new, dtype=float)
    evals[rows] += 1
    t = t.copy()

    def failing(j: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            armijo = f_new[j] > f_ref[j] + suff_dec * np.sum(g[j] * (x_new[j] - x[j]), axis=-1)
        return armijo | ~np.isfinite(f_new[j])

    search = np.flatnonzero(failing(np.arange(len(rows))))
    for _ in range(MAX_BACKTRACKS):
        if search.size == 0:
            break
        temp = t[search]
        legal = np.isfinite(f_new[search]) & _finite_rows(g_new[search])
        cubic = _cubic_step(f[search], gtd[search], temp, f_new[search], np.sum(g_new[search] * d[search], axis=-1))
        tn = np.where(legal & np.isfinite(cubic), cubic, 0.5 * temp)
        tn = np.where(tn < temp * 1e-3, temp * 1e-3, np.where(tn > temp * 0.6, temp * 0.6, tn))
        with np.errstate(invalid="ignore", over="ignore"):
            give_up = (np.max(np.abs(tn[:, None] * d[search]), axis=-1) < prog_tol) | (tn == 0)
        gone = search[give_up]
        t[gone] = 0.0
        x_new[gone], f_new[gone], g_new[gone] = x[gone], f[gone], g[gone]
        search, tn = search[~give_up], tn[~give_up]
        if search.size == 0:
            break
        t[search] = tn
        x_new[search] = x[search] + tn[:, None] * d[search]
        fs, gs = fun(x_new[search], rows[search])
        f_new[search], g_new[search] = fs, gs
        evals[rows[search]] += 1
        search = search[failing(search)]
    else:   # the guard (module docstring): give up as minConf does when the step is too small
        t[search] = 0.0
        x_new[search], f_new[search], g_new[search] = x[search], f[search], g[search]
    return x_new, f_new, g_new, t


def _initial_steps(g: np.ndarray, first: bool) -> np.ndarray:
    """t₀ = min(1, 1/‖g‖₁) at the first iteration, else 1."""
    if not first:
        return np.ones(len(g))
    with np.errstate(divide="ignore"):
        return np.minimum(1.0, 1.0 / np.sum(np.abs(g), axis=-1))


def _stops(f_new: np.ndarray, f_old: np.ndarray, t: np.ndarray, d: np.ndarray, evals: np.ndarray,
           opt: np.ndarray | None, opt_tol: float, prog_tol: float, max_evals: int) -> np.ndarray:
    """minConf's end-of-iteration tests in its order: optimality, step, change of f, evaluations (0: go on)."""
    code = np.zeros(len(t), dtype=int)
    with np.errstate(invalid="ignore", over="ignore"):
        tests = [] if opt is None else [(opt < opt_tol, STOP_OPT)]
        tests += [(np.max(np.abs(t[:, None] * d), axis=-1) < prog_tol, STOP_STEP),
                  (np.abs(f_new - f_old) < prog_tol, STOP_FCHANGE), (evals > max_evals, STOP_EVALS)]
    for hit, c in reversed(tests):
        code = np.where(hit, c, code)
    return code


def _opt_cond(proj: Proj, x: np.ndarray, g: np.ndarray) -> np.ndarray:
    return np.max(np.abs(proj(x - g) - x), axis=-1)


# ------------------------------------------------------------------------------------------------ SPG
def minconf_spg(fun: Fun, x0: np.ndarray, proj: Proj, *, opt_tol: float = 1e-5, prog_tol: float = 1e-9,
                max_evals: int = 500, suff_dec: float = 1e-4, memory: int = SPG_MEMORY, feasible_init: bool = False,
                test_opt: bool = True) -> Result:
    """minConf_SPG (spectral projected gradient, BB step sᵀs/sᵀy, non-monotone Armijo, cubic backtracking) on a
    batch of problems (module docstring); its defaults are minConf_SPG's own."""
    x = np.array(x0, dtype=float) if feasible_init else proj(np.asarray(x0, dtype=float))
    B = x.shape[0]
    f, g = fun(x, np.arange(B))
    f, g = np.array(f, dtype=float), np.array(g, dtype=float)
    evals = np.ones(B, dtype=int)
    iters = np.zeros(B, dtype=int)
    stop = np.zeros(B, dtype=int)
    if test_opt:
        stop[_opt_cond(proj, x, g) < opt_tol] = STOP_OPT_INITIAL
    old_f = np.full((B, memory), -np.inf)
    x_old, g_old = np.zeros_like(x), np.zeros_like(g)
    i = 1
    while True:
        rows = np.flatnonzero(stop == 0)
        if rows.size == 0:
            break
        xr, gr, fr = x[rows], g[rows], f[rows]
        if i == 1:
            alpha = np.ones(rows.size)
        else:
            s, y = xr - x_old[rows], gr - g_old[rows]
            with np.errstate(invalid="ignore", divide="ignore"):
                alpha = np.sum(s * s, axis=-1) / np.sum(s * y, axis=-1)
            alpha = np.where((alpha <= BB_BOUNDS[0]) | (alpha > BB_BOUNDS[1]) | ~np.isfinite(alpha), 1.0, alpha)
        x_old[rows], g_old[rows] = xr, gr
        d = proj(xr - alpha[:, None] * gr) - xr
        gtd = np.sum(gr * d, axis=-1)
        nogo = gtd > -prog_tol
        stop[rows[nogo]] = STOP_DIRECTION
        go = ~nogo
        rows, xr, gr, fr, d, gtd = rows[go], xr[go], gr[go], fr[go], d[go], gtd[go]
        if rows.size == 0:
            break
        iters[rows] = i
        if memory == 1:
            f_ref = fr
        else:
            if i <= memory:
                old_f[rows, i - 1] = fr
            else:
                old_f[rows] = np.concatenate([old_f[rows, 1:], fr[:, None]], axis=1)
            f_ref = old_f[rows].max(axis=1)
        t = _initial_steps(gr, i == 1)
        x_new, f_new, g_new, t = _line_search(fun, rows, xr, fr, gr, d, t, f_ref, gtd, prog_tol, suff_dec, evals)
        x[rows], f[rows], g[rows] = x_new, f_new, g_new
        opt = _opt_cond(proj, x_new, g_new) if test_opt else None
        stop[rows] = _stops(f_new, fr, t, d, evals[rows], opt, opt_tol, prog_tol, max_evals)
        i += 1
    return Result(x, f, evals, iters, stop)


# ------------------------------------------------------------------------------------------------ L-BFGS
def lbfgs_update(S: np.ndarray, Y: np.ndarray, k: np.ndarray, hdiag: np.ndarray, rows: np.ndarray,
                 s: np.ndarray, y: np.ndarray) -> None:
    """minConf's ``lbfgsUpdate`` for the problems ``rows``, in place: the pair (s, y) is appended (the oldest dropped
    once ``S.shape[1]`` are kept) and Hdiag = yᵀs / yᵀy, where yᵀs > 1e-10; elsewhere nothing changes.  S, Y (B, m, d)
    hold each problem's pairs oldest first in their first k rows, zeros after."""
    ys = np.sum(y * s, axis=-1)
    keep = ys > CURVATURE_MIN
    r, s, y, ys = rows[keep], s[keep], y[keep], ys[keep]
    m = S.shape[1]
    full = k[r] >= m
    rf, rn = r[full], r[~full]
    if rf.size:
        S[rf, :-1], Y[rf, :-1] = S[rf, 1:], Y[rf, 1:]
        S[rf, -1], Y[rf, -1] = s[full], y[full]
    if rn.size:
        S[rn, k[rn]], Y[rn, k[rn]] = s[~full], y[~full]
        k[rn] += 1
    hdiag[r] = ys / np.sum(y * y, axis=-1)


def compact_hessian(S: np.ndarray, Y: np.ndarray, k: np.ndarray, hdiag: np.ndarray) -> np.ndarray:
    """The L-BFGS Hessian approximation of each problem (B, d, d) in compact form (module docstring): B = I/Hdiag −
    N M⁻¹ Nᵀ over the first k pairs (none: I/Hdiag).  Unused slots (zero pairs) get a unit diagonal in M, which
    leaves B unchanged (their columns of N are zero)."""
    Bn, m, d = S.shape
    h = hdiag[:, None, None]
    SY = S @ np.swapaxes(Y, -1, -2)                              # (B, m, m): s_i·y_j
    SS = S @ np.swapaxes(S, -1, -2)
    L = np.tril(SY, -1)
    M = np.zeros((Bn, 2 * m, 2 * m))
    M[:, :m, :m] = SS / h
    M[:, :m, m:] = L
    M[:, m:, :m] = np.swapaxes(L, -1, -2)
    idx = np.arange(m)
    M[:, m + idx, m + idx] = -SY[:, idx, idx]
    unused = idx[None, :] >= k[:, None]                          # (B, m)
    bb, jj = np.nonzero(unused)
    M[bb, jj, jj] = 1.0
    M[bb, m + jj, m + jj] = 1.0
    N = np.concatenate([np.swapaxes(S, -1, -2) / h, np.swapaxes(Y, -1, -2)], axis=-1)   # (B, d, 2m)
    NT = np.swapaxes(N, -1, -2)
    try:
        MiNT = np.linalg.solve(M, NT)
    except np.linalg.LinAlgError:   # a singular M: each problem on its own, least squares for the singular ones
        MiNT = np.empty_like(NT)
        for j in range(Bn):
            try:
                MiNT[j] = np.linalg.solve(M[j], NT[j])
            except np.linalg.LinAlgError:
                MiNT[j] = np.linalg.lstsq(M[j], NT[j], rcond=None)[0]
    return np.eye(d) / h - N @ MiNT


# ------------------------------------------------------------------------------------------------ PQN
def minconf_pqn(fun: Fun, x0: np.ndarray, proj: Proj, *, opt_tol: float = 1e-5, prog_tol: float = 1e-9,
                max_evals: int = 500, corrections: int = 10, suff_dec: float = 1e-4, spg_iters: int = 10,
                spg_opt_tol: float = 1e-6, spg_prog_tol: float = 1e-10, spg_test_opt: bool = False) -> Result:
    """minConf_PQN on a batch of problems (module docstring); the defaults are the authors' call's."""
    x = proj(np.asarray(x0, dtype=float))
    B, dim = x.shape
    f, g = fun(x, np.arange(B))
    f, g = np.array(f, dtype=float), np.array(g, dtype=float)
    evals = np.ones(B, dtype=int)
    iters = np.zeros(B, dtype=int)
    stop = np.zeros(B, dtype=int)
    stop[_opt_cond(proj, x, g) < opt_tol] = STOP_OPT_INITIAL
    S, Y = np.zeros((B, corrections, dim)), np.zeros((B, corrections, dim))
    k, hdiag = np.zeros(B, dtype=int), np.ones(B)
    x_old, g_old = np.zeros_like(x), np.zeros_like(g)
    i = 1
    while True:
        rows = np.flatnonzero(stop == 0)
        if rows.size == 0:
            break
        xr, gr, fr = x[rows], g[rows], f[rows]
        if i == 1:
            p = proj(xr - gr)
        else:
            lbfgs_update(S, Y, k, hdiag, rows, xr - x_old[rows], gr - g_old[rows])
            H = compact_hessian(S[rows], Y[rows], k[rows], hdiag[rows])
            p = _direction(xr, gr, H, proj, spg_iters, spg_opt_tol, spg_prog_tol, suff_dec, spg_test_opt)
        d = p - xr
        x_old[rows], g_old[rows] = xr, gr
        gtd = np.sum(gr * d, axis=-1)
        if i > 1:
            nogo = gtd > -prog_tol
            stop[rows[nogo]] = STOP_DIRECTION
            go = ~nogo
            rows, xr, gr, fr, d, gtd = rows[go], xr[go], gr[go], fr[go], d[go], gtd[go]
            if rows.size == 0:
                break
        iters[rows] = i
        t = _initial_steps(gr, i == 1)
        x_new, f_new, g_new, t = _line_search(fun, rows, xr, fr, gr, d, t, fr, gtd, prog_tol, suff_dec, evals)
        x[rows], f[rows], g[rows] = x_new, f_new, g_new
        stop[rows] = _stops(f_new, fr, t, d, evals[rows], _opt_cond(proj, x_new, g_new), opt_tol, prog_tol,
                            max_evals)
        i += 1
    return Result(x, f, evals, iters, stop)


def _direction(x: np.ndarray, g: np.ndarray, H: np.ndarray, proj: Proj, iters: int, opt_tol: float,
               prog_tol: float, suff_dec: float, test_opt: bool) -> np.ndarray:
    """PQN's ``solveSubProblem``: SPG on q(p) = gᵀ(p − x) + ½(p − x)ᵀH(p − x) from p = x (feasible start)."""
    n = len(x)

    def model(P: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # every problem (SPG's first iterations): the arrays themselves, not copies (the same floats)
        xr, Hr, gr = (x, H, g) if rows.size == n else (x[rows], H[rows], g[rows])
        dp = P - xr
        Hd = np.einsum("bij,bj->bi", Hr, dp)
        return np.sum(gr * dp, axis=-1) + 0.5 * np.sum(dp * Hd, axis=-1), gr + Hd

    return minconf_spg(model, x, proj, opt_tol=opt_tol, prog_tol=prog_tol, max_evals=iters, suff_dec=suff_dec,
                       feasible_init=True, test_opt=test_opt).x


# ------------------------------------------------------------------------------------------------ oplr's fit
def ridge_objective(A: np.ndarray, b: np.ndarray, lam: np.ndarray) -> Fun:
    """``fun`` of f(w) = wᵀAw − 2bᵀw + lam‖w‖², ∇f = 2(Aw − b + lam·w), for a batch A (B, d, d), b (B, d), lam (B,)."""
    lam = np.broadcast_to(np.asarray(lam, dtype=float), (A.shape[0],))

    def fun(W: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        Aw = np.einsum("bij,bj->bi", A[rows], W)
        r = Aw - b[rows] + lam[rows][:, None] * W
        return np.sum(W * (r - b[rows]), axis=-1), 2.0 * r

    return fun


def oplr_minconf(A: np.ndarray, b: np.ndarray, lam: np.ndarray, R: float = 1.0, **options) -> np.ndarray:
    """The authors' oplr fit (module docstring), batched over leading axes: A (…, d, d), b (…, d), lam (…); returns
    w (…, d) as minConf_PQN leaves it under :func:`authors_projection` with R, from P(0) = 0."""
    A, b = np.asarray(A, dtype=float), np.asarray(b, dtype=float)
    lead, d = b.shape[:-1], b.shape[-1]
    A2, b2 = A.reshape(-1, d, d), b.reshape(-1, d)
    lam2 = np.broadcast_to(np.asarray(lam, dtype=float), lead).reshape(-1)
    opts = {**PQN_DEFAULTS, **options}
    res = minconf_pqn(ridge_objective(A2, b2, lam2), np.zeros_like(b2), lambda W: authors_projection(W, R), **opts)
    return res.x.reshape(lead + (d,))
