"""The authors' oplr solver chain: minConf_PQN (Schmidt, van den Berg, Friedlander & Murphy, AISTATS 2009, "Optimizing
costly functions with simple constraints: a limited-memory projected quasi-Newton algorithm") under the authors'
"projection" (``projectRandom2C.c`` of DPBayes/robust-private-lr), written here from the published algorithm for a
batch of quadratic problems.

**The "projection"** (:func:`authors_projection`): c = w² (entry-wise) is projected onto {c ≥ 0, Σc ≤ R} —
unchanged when Σc ≤ R, else the Euclidean projection onto the simplex {c ≥ 0, Σc = R} (:func:`simplex_projection`,
c_i = max(w_i² − τ, 0)) — and multiplied by sign(w).  It is *not* a projection onto the L2 ball ‖w‖₂² ≤ R: inside
the ball it returns w·|w| (not w: the map is not idempotent), and outside its image has ‖·‖₁ = R (not ‖·‖₂ = √R).
A solver calling it as a projection is a heuristic; what it returns is shorter and sparser than the exact
ball-constrained minimiser.  The solver also takes the exact projections ``ball`` (onto ‖w‖₂ ≤ R), ``box``
(onto |w_j| ≤ R) and ``none`` (unconstrained), on which its answers can be checked against known minimisers.

**The objective** (:func:`ridge_objective`): f(w) = wᵀAw − 2bᵀw + lam‖w‖², ∇f = 2(Aw − b + lam·w), one (A, b, lam)
per problem; :func:`oplr_minconf` is the fit ``oplr_paper`` runs (Σ(xᵢᵀw − yᵢ)² + (λ/2)‖w‖² up to the constant yᵀy,
with A = XᵀX, b = Xᵀy, lam = λ/2) from x₀ = P(0) under the authors' "projection" with R.

**PQN** (:func:`minconf_pqn`, minConf_PQN at the defaults the authors call it with): x₀ = P(x_init); stop at the
start if max|P(x − g) − x| < optTol (1e-5).  Iteration 1 takes the projected-gradient point p = P(x − g); later
iterations keep L-BFGS pairs (s, y) (10 corrections, a pair kept only if yᵀs > 1e-10, scaling Hdiag = yᵀs / yᵀy) and
take p = the SPG minimiser of the quadratic model q(p) = gᵀ(p − x) + ½(p − x)ᵀB(p − x) under P, B the L-BFGS
matrix of the kept pairs from B₀ = I/Hdiag, starting feasible at x.  Direction d = p − x; from iteration 2 on, stop
if gᵀd > −progTol (1e-9).  Armijo backtracking (suffDec 1e-4) from t = min(1, 1/‖g‖₁) at iteration 1, else t = 1;
each backtrack t ← the cubic interpolant's minimiser from (0, f, gᵀd) and (t, f_new, g_newᵀd) (minFunc's
``polyinterp``), clamped to [1e-3·t, 0.6·t], or t/2 if f_new or g_new is not finite; if max|t·d| < progTol the
search gives up and x is kept.  After the step stop if max|P(x − g) − x| < optTol, max|t·d| < progTol,
|f − f_old| < progTol, or more than 500 function evaluations were spent.

**SPG** (:func:`minconf_spg`, minConf_SPG as PQN calls it for the direction: at most 10 evaluations of the model,
optTol 1e-6 — not tested, as PQN passes ``testOpt = 0`` — progTol 1e-10, feasible start): Barzilai–Borwein step
α = sᵀs/sᵀy (α = 1 at the first iteration and outside [1e-10, 1e10]); d = P(x − αg) − x; stop if gᵀd > −progTol;
non-monotone Armijo (memory 10: the reference value is the largest of the last 10 f, suffDec 1e-4) with the same
t₀ and cubic backtracking as PQN; the same stops as PQN (the optimality one only with ``test_opt``).

Details that are ours, and change nothing on the problems here: B is formed once per PQN iteration as a d × d
matrix, by the recursive BFGS update of B₀ = I/Hdiag over the kept pairs, oldest first (the same matrix as minConf's
compact form v/Hdiag − N(M \\ Nᵀv), Byrd, Nocedal & Schnabel 1994, Eq. 2.17, which it applies to each vector; tested
equal); a backtracking step that comes out not finite is replaced by t/2 (minConf would carry NaN), as is SPG's
"f finite, g not" case (unreachable for a quadratic), and a line search is cut after ``MAX_BACKTRACKS`` rounds (a
direction with an infinite entry never reaches progTol).

**Batching** (array-first): every function takes a batch of problems, (B, d, d), (B, d), (B,), and solves each one
on its own in a compiled loop (numba), so a problem's path and answer do not depend on the others in its batch or
on their order: ``oplr_paper`` relies on this when it solves the problems of every size of a chunk in one call
(``compared_paper._pooled_fits``).  Compiled per problem because the solver's control flow is the problem's own
(line searches of different lengths, 1 to 500 evaluations a problem): as arrays over the batch, the per-iteration
calls on the few problems still running, not the arithmetic, were its cost.  The compiled code is cached on disk
(numba ``cache=True``) after its first compilation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

#: minConf_PQN's defaults as the authors' ``LR_output_perturbation.m`` calls it (module docstring)
PQN_DEFAULTS = dict(opt_tol=1e-5, prog_tol=1e-9, max_evals=500, corrections=10, suff_dec=1e-4,
                    spg_iters=10, spg_opt_tol=1e-6, spg_prog_tol=1e-10, spg_test_opt=False)
#: minConf_SPG's memory of the non-monotone Armijo rule, its BB bounds and the L-BFGS curvature threshold
SPG_MEMORY = 10
BB_LOW, BB_HIGH = 1e-10, 1e10
CURVATURE_MIN = 1e-10
#: a guard of ours: the most backtracking rounds of one line search (minConf has none; see the module docstring)
MAX_BACKTRACKS = 2000

#: stop reasons (``Result.stop``)
STOP_OPT_INITIAL, STOP_OPT, STOP_STEP, STOP_FCHANGE, STOP_EVALS, STOP_DIRECTION = 1, 2, 3, 4, 5, 6
STOP_NAMES = {0: "running", STOP_OPT_INITIAL: "optimal at the start", STOP_OPT: "optimality below optTol",
              STOP_STEP: "step below progTol", STOP_FCHANGE: "f changing by less than progTol",
              STOP_EVALS: "function evaluations exceed maxIter", STOP_DIRECTION: "directional derivative above -progTol"}

#: the projections the solver takes (module docstring), by name, and their codes in the compiled loop
PROJECTIONS = {"authors": 0, "ball": 1, "box": 2, "none": 3}

_jit = numba.njit(cache=True, error_model="numpy")   # IEEE arithmetic: x/0 is ±inf or NaN, as in numpy


@dataclass
class Result:
    """A batch of solutions: x (B, d), f (B,), evals (B,) function evaluations, iterations (B,), stop (B,) codes."""

    x: np.ndarray
    f: np.ndarray
    evals: np.ndarray
    iterations: np.ndarray
    stop: np.ndarray


# ------------------------------------------------------------------------------------------------ the projections
@_jit
def _simplex_row(c, R, out, u):
    """The Euclidean projection of c (d,) onto {c ≥ 0, Σc = R} into ``out`` (which may be c): c_i = max(c_i − τ, 0)
    with τ from the sorted entries (Held, Wolfe & Crowder 1974; Duchi et al. 2008, Fig. 1); ``u`` (d,) scratch."""
    d = c.shape[0]
    for j in range(d):                                          # u: c in descending order (insertion sort)
        v = c[j]
        i = j
        while i > 0 and u[i - 1] < v:
            u[i] = u[i - 1]
            i -= 1
        u[i] = v
    css, rho, tau = 0.0, d, 0.0
    found = False
    run = 0.0
    for j in range(d):                                          # the last j with u_j − (Σ_{i≤j} u_i − R)/(j+1) > 0
        run += u[j]
        if u[j] - (run - R) / (j + 1) > 0:
            rho, css, found = j + 1, run - R, True
    if not found:                                               # (none holds: rho = d, as argmax of all-False)
        css = run - R
    tau = css / rho
    for j in range(d):
        out[j] = max(c[j] - tau, 0.0) if c[j] - tau == c[j] - tau else c[j] - tau
    return out


@_jit
def _project_row(w, kind, R, out, u):
    """P(w) of the projection ``kind`` (``PROJECTIONS``) into ``out`` (not w; module docstring); ``u`` (d,)
    scratch."""
    d = w.shape[0]
    if kind == 0:                                               # the authors': sign(w)·Π(w²)
        s = 0.0
        for j in range(d):
            out[j] = w[j] * w[j]
            s += out[j]
        if not (s <= R):
            _simplex_row(out, R, out, u)
        for j in range(d):
            out[j] = np.sign(w[j]) * out[j]
    elif kind == 1:                                             # the ball ‖w‖₂ ≤ R
        s = 0.0
        for j in range(d):
            s += w[j] * w[j]
        scale = max(np.sqrt(s) / R, 1.0)
        for j in range(d):
            out[j] = w[j] / scale
    elif kind == 2:                                             # the box |w_j| ≤ R
        for j in range(d):
            out[j] = min(max(w[j], -R), R)
    else:
        for j in range(d):
            out[j] = w[j]
    return out


@_jit
def _project_rows(W, kind, R):
    out = np.empty_like(W)
    u = np.empty(W.shape[1])
    for i in range(W.shape[0]):
        _project_row(W[i], kind, R, out[i], u)
    return out


@_jit
def _simplex_rows(C, R):
    out, u = np.empty_like(C), np.empty(C.shape[1])
    for i in range(C.shape[0]):
        _simplex_row(C[i], R, out[i], u)
    return out


def _rows(W) -> tuple[np.ndarray, tuple[int, ...]]:
    W = np.asarray(W, dtype=float)
    return np.ascontiguousarray(W.reshape(-1, W.shape[-1])), W.shape


def simplex_projection(C: np.ndarray, R: float = 1.0) -> np.ndarray:
    """The Euclidean projection of every row of C (…, d) onto the simplex {c ≥ 0, Σc = R} (``_simplex_row``)."""
    C2, shape = _rows(C)
    return _simplex_rows(C2, float(R)).reshape(shape)


def project(W: np.ndarray, projection: str = "authors", R: float = 1.0) -> np.ndarray:
    """Every row of W (…, d) under ``projection`` (``PROJECTIONS``) with radius R."""
    W2, shape = _rows(W)
    return _project_rows(W2, PROJECTIONS[projection], float(R)).reshape(shape)


def authors_projection(W: np.ndarray, R: float = 1.0) -> np.ndarray:
    """The authors' "projection" of every row of W (…, d) (``projectRandom2C.c``): sign(w)·Π(w²), Π the projection
    onto {c ≥ 0, Σc ≤ R} (identity when Σw² ≤ R, else :func:`simplex_projection`).  Not idempotent, not the L2 ball's
    projection (module docstring)."""
    return project(W, "authors", R)


# ------------------------------------------------------------------------------------------------ pieces
@_jit
def _dot(a, b):
    s = 0.0
    for j in range(a.shape[0]):
        s += a[j] * b[j]
    return s


@_jit
def _matvec(A, v, out):
    d = v.shape[0]
    for i in range(d):
        s = 0.0
        for j in range(d):
            s += A[i, j] * v[j]
        out[i] = s
    return out


@_jit
def cubic_step(f, gtd, t, f_new, gtd_new):
    """minFunc's ``polyinterp`` for two points with values and derivatives, (0, f, gtd) and (t, f_new, gtd_new):
    the minimiser of the cubic interpolant clamped to [0, t] (NaN stays NaN); the midpoint t/2 where it has no real
    minimiser."""
    d1 = gtd + gtd_new - 3.0 * (f - f_new) / (0.0 - t)
    disc = d1 * d1 - gtd * gtd_new
    if not (disc >= 0):
        return 0.5 * t
    d2 = np.sqrt(disc)
    step = t - t * ((gtd_new + d2 - d1) / (gtd_new - gtd + 2.0 * d2))
    if step != step:
        return step
    return min(max(step, 0.0), t)


@_jit
def _objective(A, b, lam, w, gout):
    """f(w) = wᵀAw − 2bᵀw + lam‖w‖² and ∇f = 2(Aw − b + lam·w) into ``gout``."""
    d = w.shape[0]
    f = 0.0
    for i in range(d):
        s = 0.0
        for j in range(d):
            s += A[i, j] * w[j]
        r = s - b[i] + lam * w[i]
        f += w[i] * (r - b[i])
        gout[i] = 2.0 * r
    return f


@_jit
def _model(H, x, g, p, gout):
    """PQN's model q(p) = gᵀ(p − x) + ½(p − x)ᵀH(p − x) and its gradient g + H(p − x) into ``gout``."""
    d = p.shape[0]
    f = 0.0
    for i in range(d):
        s = 0.0
        for j in range(d):
            s += H[i, j] * (p[j] - x[j])
        gout[i] = g[i] + s
        f += g[i] * (p[i] - x[i]) + 0.5 * (p[i] - x[i]) * s
    return f


@_jit
def _evaluate(quadratic, A, b, lam, H, x, g, p, gout):
    return _model(H, x, g, p, gout) if not quadratic else _objective(A, b, lam, p, gout)


@_jit
def _all_finite(v):
    for j in range(v.shape[0]):
        if not np.isfinite(v[j]):
            return False
    return True


@_jit
def _max_abs_scaled(t, d):
    """max_j |t·d_j| (NaN if any entry is NaN, as ``np.max``)."""
    m = -np.inf
    for j in range(d.shape[0]):
        a = abs(t * d[j])
        if a != a:
            return np.nan
        if a > m:
            m = a
    return m


@_jit
def _opt_cond(x, g, kind, R, ws):
    """max|P(x − g) − x| (``ws``: the (3, d) scratch of ``_workspace``)."""
    d = x.shape[0]
    work, pw, u = ws[0], ws[1], ws[2]
    for j in range(d):
        pw[j] = x[j] - g[j]
    _project_row(pw, kind, R, work, u)
    m = -np.inf
    for j in range(d):
        a = abs(work[j] - x[j])
        if a != a:
            return np.nan
        m = max(m, a)
    return m


@_jit
def _line_search(quadratic, A, b, lam, H, x0, g0, x, f, g, d, t, f_ref, gtd, prog_tol, suff_dec, x_new, g_new):
    """minConf's backtracking Armijo search along d from x (module docstring): accept f_new ≤ f_ref +
    suffDec·gᵀ(x_new − x) with f_new finite.  Writes x_new, g_new; returns (f_new, t, evaluations); where the search
    gives up, x_new = x, g_new = g, f_new = f and t = 0.  ``quadratic``: the objective (A, b, lam), else the model
    of (H, x0, g0)."""
    n = x.shape[0]
    for j in range(n):
        x_new[j] = x[j] + t * d[j]
    f_new = _evaluate(quadratic, A, b, lam, H, x0, g0, x_new, g_new)
    evals = 1
    for rounds in range(MAX_BACKTRACKS + 1):
        dec = 0.0
        for j in range(n):
            dec += g[j] * (x_new[j] - x[j])
        if not (f_new > f_ref + suff_dec * dec) and np.isfinite(f_new):
            return f_new, t, evals
        if rounds == MAX_BACKTRACKS:   # the guard: give up as minConf does when the step is too small
            break
        temp = t
        legal = np.isfinite(f_new) and _all_finite(g_new)
        cub = cubic_step(f, gtd, temp, f_new, _dot(g_new, d))
        tn = cub if (legal and np.isfinite(cub)) else 0.5 * temp
        if tn < temp * 1e-3:
            tn = temp * 1e-3
        elif tn > temp * 0.6:
            tn = temp * 0.6
        if _max_abs_scaled(tn, d) < prog_tol or tn == 0:
            break
        t = tn
        for j in range(n):
            x_new[j] = x[j] + tn * d[j]
        f_new = _evaluate(quadratic, A, b, lam, H, x0, g0, x_new, g_new)
        evals += 1
    for j in range(n):
        x_new[j] = x[j]
        g_new[j] = g[j]
    return f, 0.0, evals


@_jit
def _stop_code(f_new, f_old, t, d, evals, opt, test_opt, opt_tol, prog_tol, max_evals):
    """minConf's end-of-iteration tests in its order: optimality, step, change of f, evaluations (0: go on)."""
    if test_opt and opt < opt_tol:
        return STOP_OPT
    if _max_abs_scaled(t, d) < prog_tol:
        return STOP_STEP
    if abs(f_new - f_old) < prog_tol:
        return STOP_FCHANGE
    if evals > max_evals:
        return STOP_EVALS
    return 0


#: rows of a problem's scratch (``_workspace``): SPG's iterate and what it keeps, then PQN's
_SPG_ROWS = 10      # x, g, x_old, g_old, d, x_new, g_new, and the three rows of the projection's scratch
_PQN_ROWS = 14      # the same seven, p, s, y, Bs, and the three rows of the projection's scratch


@_jit
def _spg(quadratic, A, b, lam, H, x0, g0, x_init, kind, R, opt_tol, prog_tol, max_evals, suff_dec, old_f,
         feasible_init, test_opt, ws):
    """minConf_SPG on one problem from ``x_init`` (module docstring); the answer is left in ``ws[0]``, returns
    (f, evals, iterations, stop).  ``quadratic``: on the objective (A, b, lam); else on PQN's model of (H, x0, g0).
    ``old_f`` (memory,): the non-monotone rule's last values; ``ws`` (``_SPG_ROWS``, d) scratch."""
    n = x_init.shape[0]
    x, g, x_old, g_old, d, x_new, g_new, work = ws[0], ws[1], ws[2], ws[3], ws[4], ws[5], ws[6], ws[7:10]
    if feasible_init:
        x[:] = x_init
    else:
        _project_row(x_init, kind, R, x, work[2])
    f = _evaluate(quadratic, A, b, lam, H, x0, g0, x, g)
    evals, iters, stop = 1, 0, 0
    if test_opt and _opt_cond(x, g, kind, R, work) < opt_tol:
        stop = STOP_OPT_INITIAL
    memory = old_f.shape[0]
    old_f[:] = -np.inf
    x_old[:] = 0.0
    g_old[:] = 0.0
    i = 1
    while stop == 0:
        if i == 1:
            alpha = 1.0
        else:
            ss, sy = 0.0, 0.0
            for j in range(n):
                s_j, y_j = x[j] - x_old[j], g[j] - g_old[j]
                ss += s_j * s_j
                sy += s_j * y_j
            alpha = ss / sy
            if alpha <= BB_LOW or alpha > BB_HIGH or not np.isfinite(alpha):
                alpha = 1.0
        x_old[:] = x
        g_old[:] = g
        pw = work[1]
        for j in range(n):
            pw[j] = x[j] - alpha * g[j]
        _project_row(pw, kind, R, d, work[2])
        for j in range(n):
            d[j] -= x[j]
        gtd = _dot(g, d)
        if gtd > -prog_tol:
            stop = STOP_DIRECTION
            break
        iters = i
        if memory == 1:
            f_ref = f
        else:
            if i <= memory:
                old_f[i - 1] = f
            else:
                for r in range(memory - 1):
                    old_f[r] = old_f[r + 1]
                old_f[memory - 1] = f
            f_ref = old_f.max()
        t = min(1.0, 1.0 / np.sum(np.abs(g))) if i == 1 else 1.0
        f_new, t, e = _line_search(quadratic, A, b, lam, H, x0, g0, x, f, g, d, t, f_ref, gtd, prog_tol, suff_dec,
                                   x_new, g_new)
        evals += e
        f_prev = f
        x[:] = x_new
        g[:] = g_new
        f = f_new
        opt = _opt_cond(x, g, kind, R, work) if test_opt else 0.0
        stop = _stop_code(f, f_prev, t, d, evals, opt, test_opt, opt_tol, prog_tol, max_evals)
        i += 1
    return f, evals, iters, stop


@_jit
def lbfgs_update(S, Y, k, hdiag, s, y):
    """minConf's ``lbfgsUpdate`` of one problem: the pair (s, y) is appended to the first k rows of S, Y (m, d),
    oldest first (the oldest dropped once m are kept), and Hdiag = yᵀs / yᵀy, where yᵀs > 1e-10; else nothing
    changes.  Returns (k, Hdiag)."""
    ys = _dot(y, s)
    if not (ys > CURVATURE_MIN):
        return k, hdiag
    m = S.shape[0]
    if k >= m:
        for r in range(m - 1):
            S[r] = S[r + 1]
            Y[r] = Y[r + 1]
        S[m - 1] = s
        Y[m - 1] = y
    else:
        S[k] = s
        Y[k] = y
        k += 1
    return k, ys / _dot(y, y)


@_jit
def _lbfgs_matrix_into(S, Y, k, hdiag, B, Bs):
    d = S.shape[1]
    B[:] = 0.0
    for i in range(d):
        B[i, i] = 1.0 / hdiag
    for r in range(k):
        s, y = S[r], Y[r]
        _matvec(B, s, Bs)
        sBs, ys = _dot(s, Bs), _dot(y, s)
        for i in range(d):
            yi, bi = y[i] / ys, Bs[i] / sBs      # one division per row, not per entry
            for j in range(d):
                B[i, j] += yi * y[j] - bi * Bs[j]
    return B


@_jit
def lbfgs_matrix(S, Y, k, hdiag):
    """The L-BFGS Hessian approximation (d, d) of the first k pairs of S, Y (m, d): B₀ = I/Hdiag updated by
    B ← B − (Bs)(Bs)ᵀ/(sᵀBs) + yyᵀ/(yᵀs) for each pair, oldest first (module docstring)."""
    d = S.shape[1]
    return _lbfgs_matrix_into(S, Y, k, hdiag, np.empty((d, d)), np.empty(d))


@_jit
def _pqn(A, b, lam, x_init, kind, R, opt_tol, prog_tol, max_evals, corrections, suff_dec, spg_iters, spg_opt_tol,
         spg_prog_tol, spg_test_opt, ws, spg_ws, old_f, S, Y, H):
    """minConf_PQN on one problem from ``x_init`` (module docstring); the answer is left in ``ws[0]``, returns
    (f, evals, iterations, stop).  ``ws`` (``_PQN_ROWS``, d), ``spg_ws`` (``_SPG_ROWS``, d), ``old_f`` (SPG's
    memory,), S, Y (corrections, d) and H (d, d): scratch."""
    n = x_init.shape[0]
    x, g, x_old, g_old, d, x_new, g_new = ws[0], ws[1], ws[2], ws[3], ws[4], ws[5], ws[6]
    p, s, y, Bs, work = ws[7], ws[8], ws[9], ws[10], ws[11:14]
    none = H[:1, :1]
    _project_row(x_init, kind, R, x, work[2])
    f = _objective(A, b, lam, x, g)
    evals, iters, stop = 1, 0, 0
    if _opt_cond(x, g, kind, R, work) < opt_tol:
        return f, evals, iters, STOP_OPT_INITIAL
    S[:] = 0.0
    Y[:] = 0.0
    k, hdiag = 0, 1.0
    x_old[:] = 0.0
    g_old[:] = 0.0
    i = 1
    while True:
        if i == 1:
            pw = work[1]
            for j in range(n):
                pw[j] = x[j] - g[j]
            _project_row(pw, kind, R, p, work[2])
        else:
            for j in range(n):
                s[j] = x[j] - x_old[j]
                y[j] = g[j] - g_old[j]
            k, hdiag = lbfgs_update(S, Y, k, hdiag, s, y)
            _lbfgs_matrix_into(S, Y, k, hdiag, H, Bs)
            _spg(False, none, g, 0.0, H, x, g, x, kind, R, spg_opt_tol, spg_prog_tol, spg_iters, suff_dec, old_f,
                 True, spg_test_opt, spg_ws)
            p[:] = spg_ws[0]
        for j in range(n):
            d[j] = p[j] - x[j]
        x_old[:] = x
        g_old[:] = g
        gtd = _dot(g, d)
        if i > 1 and gtd > -prog_tol:
            stop = STOP_DIRECTION
            break
        iters = i
        t = min(1.0, 1.0 / np.sum(np.abs(g))) if i == 1 else 1.0
        f_new, t, e = _line_search(True, A, b, lam, none, x, g, x, f, g, d, t, f, gtd, prog_tol, suff_dec, x_new,
                                   g_new)
        evals += e
        f_prev = f
        x[:] = x_new
        g[:] = g_new
        f = f_new
        stop = _stop_code(f, f_prev, t, d, evals, _opt_cond(x, g, kind, R, work), True, opt_tol, prog_tol,
                          max_evals)
        if stop:
            break
        i += 1
    return f, evals, iters, stop


@_jit
def _pqn_batch(A, b, lam, x0, kind, R, opt_tol, prog_tol, max_evals, corrections, suff_dec, spg_iters, spg_opt_tol,
               spg_prog_tol, spg_test_opt):
    B, n = b.shape
    X, F = np.empty_like(b), np.empty(B)
    E, I, S = np.empty(B, np.int64), np.empty(B, np.int64), np.empty(B, np.int64)
    ws, spg_ws = np.empty((_PQN_ROWS, n)), np.empty((_SPG_ROWS, n))
    old_f, Sm, Ym, H = np.empty(SPG_MEMORY), np.empty((corrections, n)), np.empty((corrections, n)), np.empty((n, n))
    for i in range(B):
        F[i], E[i], I[i], S[i] = _pqn(A[i], b[i], lam[i], x0[i], kind, R, opt_tol, prog_tol, max_evals, corrections,
                                      suff_dec, spg_iters, spg_opt_tol, spg_prog_tol, spg_test_opt, ws, spg_ws,
                                      old_f, Sm, Ym, H)
        X[i] = ws[0]
    return X, F, E, I, S


@_jit
def _spg_batch(A, b, lam, x0, kind, R, opt_tol, prog_tol, max_evals, suff_dec, memory, feasible_init, test_opt):
    B, n = b.shape
    X, F = np.empty_like(b), np.empty(B)
    E, I, S = np.empty(B, np.int64), np.empty(B, np.int64), np.empty(B, np.int64)
    ws, old_f, none = np.empty((_SPG_ROWS, n)), np.empty(memory), np.zeros((1, 1))
    for i in range(B):
        F[i], E[i], I[i], S[i] = _spg(True, A[i], b[i], lam[i], none, b[i], b[i], x0[i], kind, R, opt_tol, prog_tol,
                                      max_evals, suff_dec, old_f, feasible_init, test_opt, ws)
        X[i] = ws[0]
    return X, F, E, I, S


# ------------------------------------------------------------------------------------------------ the solvers
def _problems(A, b, lam, x0) -> tuple:
    A = np.ascontiguousarray(A, dtype=float)
    b = np.ascontiguousarray(b, dtype=float)
    lam = np.ascontiguousarray(np.broadcast_to(np.asarray(lam, dtype=float), b.shape[:1]))
    x0 = np.ascontiguousarray(np.broadcast_to(np.asarray(x0, dtype=float), b.shape))
    if A.ndim != 3 or b.ndim != 2 or A.shape != b.shape + b.shape[-1:]:
        raise ValueError(f"problems must be A (B, d, d), b (B, d): got {A.shape}, {b.shape}")
    return A, b, lam, x0


def minconf_pqn(A: np.ndarray, b: np.ndarray, lam: np.ndarray, x0: np.ndarray, projection: str = "authors",
                R: float = 1.0, *, opt_tol: float = 1e-5, prog_tol: float = 1e-9, max_evals: int = 500,
                corrections: int = 10, suff_dec: float = 1e-4, spg_iters: int = 10, spg_opt_tol: float = 1e-6,
                spg_prog_tol: float = 1e-10, spg_test_opt: bool = False) -> Result:
    """minConf_PQN on the problems (A (B, d, d), b (B, d), lam (B,)) of :func:`ridge_objective` from x0 (B, d) under
    ``projection`` with R (module docstring); the defaults are the authors' call's."""
    A, b, lam, x0 = _problems(A, b, lam, x0)
    return Result(*_pqn_batch(A, b, lam, x0, PROJECTIONS[projection], float(R), float(opt_tol), float(prog_tol),
                              int(max_evals), int(corrections), float(suff_dec), int(spg_iters), float(spg_opt_tol),
                              float(spg_prog_tol), bool(spg_test_opt)))


def minconf_spg(A: np.ndarray, b: np.ndarray, lam: np.ndarray, x0: np.ndarray, projection: str = "authors",
                R: float = 1.0, *, opt_tol: float = 1e-5, prog_tol: float = 1e-9, max_evals: int = 500,
                suff_dec: float = 1e-4, memory: int = SPG_MEMORY, feasible_init: bool = False,
                test_opt: bool = True) -> Result:
    """minConf_SPG (spectral projected gradient, BB step sᵀs/sᵀy, non-monotone Armijo, cubic backtracking) on the
    problems of :func:`ridge_objective` (module docstring); its defaults are minConf_SPG's own."""
    A, b, lam, x0 = _problems(A, b, lam, x0)
    return Result(*_spg_batch(A, b, lam, x0, PROJECTIONS[projection], float(R), float(opt_tol), float(prog_tol),
                              int(max_evals), float(suff_dec), int(memory), bool(feasible_init), bool(test_opt)))


def ridge_objective(A: np.ndarray, b: np.ndarray, lam: np.ndarray, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """f(w) = wᵀAw − 2bᵀw + lam‖w‖² and ∇f = 2(Aw − b + lam·w) of every problem at its row of W (B, d)."""
    A, b, lam, W = _problems(A, b, lam, W)
    return _objective_rows(A, b, lam, W)


@_jit
def _objective_rows(A, b, lam, W):
    f, G = np.empty(W.shape[0]), np.empty_like(W)
    for i in range(W.shape[0]):
        f[i] = _objective(A[i], b[i], lam[i], W[i], G[i])
    return f, G


def oplr_minconf(A: np.ndarray, b: np.ndarray, lam: np.ndarray, R: float = 1.0, **options) -> np.ndarray:
    """The authors' oplr fit (module docstring), batched over leading axes: A (…, d, d), b (…, d), lam (…); returns
    w (…, d) as minConf_PQN leaves it under :func:`authors_projection` with R, from P(0) = 0."""
    A, b = np.asarray(A, dtype=float), np.asarray(b, dtype=float)
    lead, d = b.shape[:-1], b.shape[-1]
    A2, b2 = A.reshape(-1, d, d), b.reshape(-1, d)
    lam2 = np.broadcast_to(np.asarray(lam, dtype=float), lead).reshape(-1)
    res = minconf_pqn(A2, b2, lam2, np.zeros_like(b2), "authors", R, **{**PQN_DEFAULTS, **options})
    return res.x.reshape(lead + (d,))
