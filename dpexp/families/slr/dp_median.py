"""Differentially private medians used by DP Theil–Sen (Alabi et al. 2020, Sec. 2.2, Appendices D and E).

Notation: ``z`` are the N pairwise estimates of one dataset, clipped to the public output range [r_l, r_u]
(clipping each entry is a fixed map and does not change which entries differ between neighbours).

Exponential-mechanism median (Sec. 2.2.1, Algorithm 3)
    Utility u(z, r) = -ceil(|#{z_j < r} - N/2|) = -ceil(|#above - #below| / 2).  Changing one entry of z moves
    #below by at most one; inserting or deleting one entry (a vertical pair appearing/disappearing) moves
    #below - N/2 by at most 1/2; ceil keeps the bound.  So u has sensitivity 1 per changed estimate and the density
    p(r) ∝ exp(eps_med * u(z, r) / 2) on [r_l, r_u] is eps_med-DP w.r.t. one changed estimate (McSherry & Talwar
    2007; Theorem 2 of the paper's Appendix B).  The density is piecewise constant between consecutive sorted
    points, so we sample the *interval* i (i = number of points below) with probability ∝ length_i * exp(-eps_med
    * dist_i / 2) by the Gumbel-max trick and then a uniform point inside it (Algorithm 3; Cormode).  Because one
    datapoint changes up to k estimates (k matchings, or n - 1 for all pairs), DP Theil–Sen calls this with
    eps_med = eps / k (Lemma 2 / Appendix D.1: T is k-Lipschitz).

    Sampling cost: sorting O(N log N) once; then an exact *two-level* Gumbel-max: the N + 1 log-weights are cut into
    ~sqrt(N) blocks, each block's log-sum-exp computed once (O(N)); a trial draws a block by Gumbel-max over the
    block log-sum-exps and then an interval by Gumbel-max inside that block.  This is exactly the exponential
    mechanism (P(block) P(i | block) = w_i / sum w) at O(sqrt(N)) per trial — never O(N * grid).

θ-widened exponential mechanism (Sec. 2.2.2, Algorithm 4)
    u_θ(z, r) = max_{|a - r| <= θ} u(z, a): a max of sensitivity-1 functions has sensitivity 1, so the same
    calibration holds.  Since -u is unimodal in r, u_θ is obtained from u by moving every breakpoint left of the
    central plateau down by θ and every breakpoint right of it up by θ (then clipping to [r_l, r_u]); the plateau
    around the median widens by 2θ.  This is what Algorithm 4's loop does; we derive the breakpoint indices
    directly (lower: j <= floor(N/2); upper: j >= ceil(N/2) + 1, 1-based; for odd N the median point stays).

Smooth-sensitivity median with Student's t noise (Sec. 2.2.3, Lemma 7, Algorithm 5)
    med(z) = z_(m) with m = ceil(N/2) (1-based order statistic; the lower median for even N, as in Lemma 7), and
    indices outside 1..N read as r_l (below) and r_u (above).  One changed datapoint changes at most k estimates
    and shifts every rank relative to the median by at most k, so
        S = max{ z_(m+k) - z_(m), z_(m) - z_(m-k),
                 max_{l >= 1} e^{-l t} max_{s = 0..(l+1)k} (z_(m+s) - z_(m-(l+1)k+s)) }
    is a t-smooth upper bound on the local sensitivity of med∘Z_k (Lemma 7 / Appendix E; the window maxima W(l)
    satisfy W_z(l) <= W_z'(l + 1) for neighbours, giving S(z) <= e^t S(z')).  Terms are added until the window
    covers [r_l, r_u] or e^{-l t}(r_u - r_l) cannot beat the current maximum (exact pruning).  The release is
    med(z) + (S / s) * T_d with T_d ~ Student's t(d), t = β eps / (d + 1), s = 2 sqrt(d) (eps - t (d + 1)) / (d + 1),
    which is eps-DP by Bun & Steinke (2019, Thms 31 and 46): |t|(d+1) + |s|(d+1)/(2 sqrt d) = eps.  β = 1/2 and
    d = 3 give Algorithm 5's t = eps / (2(d+1)), s = eps sqrt(d) / (d+1).  Here eps is the budget of one median
    and k enters only through S (no division of eps by k).

Randomness and accounting: every sampler takes ``source`` — a ``PrivacyLedger`` (draws from ``ledger.noise`` and
records the release's spend: ``exponential_spend(eps/2, k)`` once per ``exp_median``/``exp_median_rows`` call, with
utility sensitivity k — one changed datapoint changes k estimates, so the recorded ε is eps·k, the budget of one
prediction; ``smooth_sensitivity_t``'s spend for ``ss_median``) or a numpy Generator / noise source (draws only, for
tests).  The internal steps of the exponential mechanism (two-level Gumbel-max, uniform point inside the interval)
are not separate releases: they draw from the same source and the one spend covers them.
"""

from __future__ import annotations

import math

import numpy as np

from dpexp.errors import NonFiniteInput
from dpexp.privacy.ledger import PrivacyLedger
from dpexp.privacy.mechanisms import exponential_spend, gumbel_argmax, smooth_sensitivity_t
from dpexp.privacy.noise import as_noise


def _record_exponential(source, eps: float, k: int, label: str) -> None:
    """Record one exponential-mechanism median (coefficient eps/2 on a utility of sensitivity k per datapoint)."""
    if isinstance(source, PrivacyLedger):
        source.record(exponential_spend(0.5 * eps, float(k), label=label))

#: below this many (size x intervals) entries a single-level Gumbel-max is used
_SMALL = 1 << 18


def _dist(i: np.ndarray, N: int | np.ndarray) -> np.ndarray:
    """ceil(|i - N/2|) computed exactly in integers: (|2i - N| + 1) // 2."""
    return (np.abs(2 * i - N) + 1) // 2


def widen_sorted(zs: np.ndarray, theta: float, r_l: float, r_u: float) -> np.ndarray:
    """Apply the θ-widening to sorted, clipped ``zs`` in place (see module docstring) and return it.

    1-based breakpoints j <= floor(N/2) move down by θ, j >= ceil(N/2) + 1 move up by θ, both clipped.
    """
    N = zs.size
    if theta > 0 and N:
        seg = zs[:N // 2]
        seg -= theta
        np.maximum(seg, r_l, out=seg)
        seg = zs[(N + 1) // 2:]
        seg += theta
        np.minimum(seg, r_u, out=seg)
    return zs


def interval_log_weights(zs: np.ndarray, eps: float, r_l: float, r_u: float, out: np.ndarray | None = None,
                         chunk: int = 1 << 22) -> np.ndarray:
    """Log-weights (N + 1,) of the intervals [b_i, b_{i+1}] with b = (r_l, zs..., r_u) for sorted clipped ``zs``:
    log(b_{i+1} - b_i) - (eps / 2) * ceil(|i - N/2|)  (Algorithm 3's score)."""
    N = zs.size
    lw = np.empty(N + 1) if out is None else out
    if N == 0:
        lw[0] = math.log(r_u - r_l)
        return lw
    lw[0] = zs[0] - r_l
    np.subtract(zs[1:], zs[:-1], out=lw[1:N])
    lw[N] = r_u - zs[-1]
    with np.errstate(divide="ignore"):
        np.log(lw, out=lw)
    # ceil(|i - N/2|) = |i - N/2| + (N mod 2)/2 exactly (i integer); float arithmetic, in chunks
    half, c, off = 0.5 * N, 0.5 * eps, 0.5 * (N % 2)
    for a in range(0, N + 1, chunk):
        b = min(a + chunk, N + 1)
        d = np.arange(a, b, dtype=float)
        d -= half
        np.abs(d, out=d)
        d += off
        d *= c
        lw[a:b] -= d
    return lw


def _logsumexp_rows(a: np.ndarray) -> np.ndarray:
    mx = np.max(a, axis=1)
    fin = np.isfinite(mx)
    out = np.full(a.shape[0], -np.inf)
    if fin.any():
        s = np.exp(a[fin] - mx[fin, None]).sum(axis=1)
        out[fin] = mx[fin] + np.log(s)
    return out


def sample_intervals(lw: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
    """``size`` independent indices i with P(i) ∝ exp(lw_i): exact Gumbel-max, two-level for large inputs."""
    M = lw.size
    if M * size <= _SMALL or M <= 64:
        return gumbel_argmax(np.broadcast_to(lw, (size, M)), rng)
    B = int(math.ceil(math.sqrt(M)))
    nb = -(-M // B)
    full = M // B
    blse = np.empty(nb)
    step = max(1, (1 << 22) // B)
    for a in range(0, full, step):
        b = min(a + step, full)
        blse[a:b] = _logsumexp_rows(lw[a * B:b * B].reshape(b - a, B))
    if nb > full:
        blse[full] = _logsumexp_rows(lw[full * B:][None, :])[0]
    blocks = gumbel_argmax(np.broadcast_to(blse, (size, nb)), rng)
    idx = blocks[:, None] * B + np.arange(B)[None, :]
    inside = idx < M
    sub = np.where(inside, lw[np.minimum(idx, M - 1)], -np.inf)
    j = gumbel_argmax(sub, rng)
    return blocks * B + j


def interval_lengths(zs: np.ndarray, r_l: float, r_u: float, a: int = 0, b: int | None = None) -> np.ndarray:
    """Lengths L_i, i in [a, b), of the intervals between consecutive points of (r_l, sorted clipped zs, r_u);
    the full range is i = 0..N."""
    N = zs.size
    b = N + 1 if b is None else b
    vals = zs[max(a - 1, 0):min(b, N)]
    if a == 0:
        vals = np.concatenate([[r_l], vals])
    if b == N + 1:
        vals = np.concatenate([vals, [r_u]])
    return np.diff(vals)


def sample_intervals_structured(zs: np.ndarray, r_l: float, r_u: float, c: float, rng: np.random.Generator,
                                size: int) -> np.ndarray:
    """Exact two-level Gumbel-max over the intervals i = 0..N of (r_l, zs, r_u) with weights
    w_i = L_i exp(-c * ceil(|i - N/2|)), L_i the interval lengths.

    The distance term is linear inside a block that lies on one side of N/2, so a block's total weight is
    exp(-c * dist_ref) * Σ_j L_j exp(c * ramp_j) with a ramp in [0, c(B-1)]; choosing B with c(B-1) <= 600 keeps
    that sum finite, and the lengths are formed chunk by chunk (no extra N-sized array, no log pass over N).
    A block is drawn by Gumbel-max over the log block weights, then an interval inside it by Gumbel-max over its
    exact log-weights: P(block) P(i | block) = w_i / Σ w, exactly the exponential mechanism.
    """
    N = zs.size
    M = N + 1
    half, off = 0.5 * N, 0.5 * (N % 2)
    B = max(1, min(int(math.ceil(math.sqrt(M))), int(600.0 / c) + 1 if c > 0 else M))
    nb = -(-M // B)
    starts = np.arange(nb) * B
    ends = np.minimum(starts + B, M)  # exclusive
    left = ends - 1 <= half  # every i in the block has i <= N/2: dist = half - i + off
    right = starts >= half  # dist = i - half + off
    full = M // B
    regular = (left | right) & (np.arange(nb) < full)
    logw = np.empty(nb)
    ramp_l = np.exp(c * np.arange(B))  # left blocks: weight ∝ exp(c j), reference dist at j = 0
    ramp_r = ramp_l[::-1].copy()  # right blocks: exp(c (B-1-j)), reference dist at j = B-1
    step = max(1, (1 << 22) // B)
    with np.errstate(divide="ignore"):
        for a in range(0, full, step):
            b = min(a + step, full)
            blk = interval_lengths(zs, r_l, r_u, a * B, b * B).reshape(b - a, B)
            lm, rm = left[a:b] & regular[a:b], right[a:b] & regular[a:b]
            if lm.any():
                logw[a:b][lm] = np.log(blk[lm] @ ramp_l) - c * (half - starts[a:b][lm] + off)
            if rm.any():
                logw[a:b][rm] = np.log(blk[rm] @ ramp_r) - c * (starts[a:b][rm] + B - 1 - half + off)
        for k in np.flatnonzero(~regular):
            i = np.arange(starts[k], ends[k])
            lw = np.log(interval_lengths(zs, r_l, r_u, starts[k], ends[k])) - c * (np.abs(i - half) + off)
            mx = lw.max()
            logw[k] = mx + np.log(np.exp(lw - mx).sum()) if np.isfinite(mx) else -np.inf
        blocks = gumbel_argmax(np.broadcast_to(logw, (size, nb)), rng)
        out = np.empty(size, dtype=np.int64)
        for k in np.unique(blocks):
            rows = np.flatnonzero(blocks == k)
            i = np.arange(starts[k], ends[k])
            lw = np.log(interval_lengths(zs, r_l, r_u, starts[k], ends[k])) - c * (np.abs(i - half) + off)
            out[rows] = i[gumbel_argmax(np.broadcast_to(lw, (rows.size, i.size)), rng)]
    return out


def exp_median(z: np.ndarray, eps: float, r_l: float, r_u: float, rng, size: int = 1,
               theta: float = 0.0, presorted: bool = False, overwrite: bool = False, k: int = 1) -> np.ndarray:
    """``size`` independent draws of the (θ-widened) exponential-mechanism median of the 1-D array ``z``.

    Neighbouring relation: z, z' differing in one entry (change, insertion or deletion); eps-DP for that relation,
    eps·k-DP for datasets whose neighbours differ in ``k`` entries (k-Lipschitz T, Lemma 2) — what ``rng`` records
    when it is a ``PrivacyLedger`` (module docstring).
    ``overwrite=True`` lets the function clip/sort/widen ``z`` in place (saves memory for ~10^8 entries).
    Non-finite entries must have been removed by the caller.  Sorting once, then O(N) for the block weights and
    O(sqrt(N)) per draw.
    """
    zs = z if overwrite else np.array(z, dtype=float, copy=True)
    np.clip(zs, r_l, r_u, out=zs)
    if not presorted:
        zs.sort()
    widen_sorted(zs, theta, r_l, r_u)
    N = zs.size
    if (N + 1) * size <= _SMALL:
        with np.errstate(divide="ignore"):
            lw = np.log(interval_lengths(zs, r_l, r_u))
        lw -= (0.5 * eps) * _dist(np.arange(N + 1), N)
        i = sample_intervals(lw, rng, size)
    else:
        i = sample_intervals_structured(zs, r_l, r_u, 0.5 * eps, rng, size)
    _record_exponential(rng, eps, k, "exp median")
    if N == 0:
        return r_l + as_noise(rng).random(size) * (r_u - r_l)
    left = np.where(i == 0, r_l, zs[np.clip(i - 1, 0, N - 1)])
    right = np.where(i == N, r_u, zs[np.clip(i, 0, N - 1)])
    return left + as_noise(rng).random(size) * (right - left)


#: entries of one block of rows of ``exp_median_rows``' (rows, P + 2) arrays (2^18 floats: 2 MiB each)
ROW_BLOCK_ENTRIES = 1 << 18


def exp_median_rows(Z: np.ndarray, eps: float, r_l: float, r_u: float, rng,
                    theta: float = 0.0, k: int = 1, block: int = ROW_BLOCK_ENTRIES) -> np.ndarray:
    """One draw per row of ``Z`` (trials, P); NaN entries are absent estimates (vertical pairs).  Each row is one
    trial's release: recorded once, as ``exp_median`` (eps·k per datapoint).

    Rows are taken in blocks of about ``block`` entries: per block, the breakpoints b = (r_l, sorted clipped row,
    r_u) are built and sorted in one array, the log-weights log(b_{i+1} − b_i) − (eps/2)·ceil(|i − N/2|) in another
    (the distance term one row shared by the block when its rows have the same N, the usual case), and the block's
    Gumbel noise drawn — the blocks in row order draw the numbers one (trials, P + 1) draw would.  Then one uniform
    per row inside its interval, for all rows.  Temporaries stay a few MiB whatever trials × P."""
    T, P = Z.shape
    left, right = np.empty(T), np.empty(T)
    step = max(1, block // (P + 2))
    for r0 in range(0, T, step):
        r1 = min(T, r0 + step)
        Zb = Z[r0:r1]
        valid = np.isfinite(Zb)
        Nt = valid.sum(axis=1)
        b = np.empty((r1 - r0, P + 2))
        b[:, 0] = r_l
        b[:, P + 1] = r_u
        zs = b[:, 1:P + 1]
        np.clip(Zb, r_l, r_u, out=zs)
        zs[~valid] = np.inf
        zs.sort(axis=1)
        zs[~np.isfinite(zs)] = r_u
        if theta > 0:
            j = np.arange(P)[None, :]  # 0-based position
            lower = j < (Nt // 2)[:, None]
            upper = (j >= (-(-Nt // 2))[:, None]) & (j < Nt[:, None])
            zs[lower] = np.maximum(zs[lower] - theta, r_l)
            zs[upper] = np.minimum(zs[upper] + theta, r_u)
        lw = np.diff(b, axis=1)
        with np.errstate(divide="ignore"):
            np.log(lw, out=lw)
        i = np.arange(P + 1)[None, :]
        N = Nt[:1, None] if np.all(Nt == Nt[0]) else Nt[:, None]
        lw -= (0.5 * eps) * _dist(i, N)
        j = gumbel_argmax(lw, rng)
        rows = np.arange(r1 - r0)
        left[r0:r1], right[r0:r1] = b[rows, j], b[rows, j + 1]
    _record_exponential(rng, eps, k, "exp median")
    return left + as_noise(rng).random(T) * (right - left)


def median_index(N: int) -> int:
    """1-based index m = ceil(N / 2) of the median order statistic used by the smooth-sensitivity median."""
    return (N + 1) // 2


def smooth_sensitivity(zs: np.ndarray, k: int, t: float, r_l: float, r_u: float) -> float:
    """t-smooth upper bound S^k_{med∘Z, t} of Lemma 7 for sorted ``zs`` (clipped to [r_l, r_u] here): the row of one
    of ``smooth_sensitivity_rows``."""
    zs = np.asarray(zs, dtype=float)
    return float(smooth_sensitivity_rows(zs[None, :], np.array([zs.size]), k, t, r_l, r_u)[0])


def smooth_sensitivity_rows(zs: np.ndarray, N: np.ndarray, k: int, t: float, r_l: float, r_u: float) -> np.ndarray:
    """``smooth_sensitivity`` of every row of ``zs`` (R, P) at once: row r holds its N[r] sorted estimates first
    (entries past N[r] are ignored), each row is clipped to [r_l, r_u] and padded z_(0) = r_l, z_(N+1..) = r_u.

    Per row, S starts at max(z_(m+k) − z_(m), z_(m) − z_(m−k)) and the search over l = 1, 2, ... stops at the first
    l where e^{−lt}·(r_u − r_l) ≤ S (no wider window can raise S) or where the window of width w = (l + 1)k covers
    both paddings (W = r_u − r_l, the largest possible); until then S = max(S, e^{−lt} W(l)) with
    W(l) = max_{s=0..w} z_(m+s) − z_(m−w+s).  The second exit happens at the latest when w ≥ N + 1, i.e. at
    l = ⌈(N + 1)/k⌉ − 1, so the loop is bounded by ⌈(N + 1)/k⌉ steps for any finite input.  All rows step through l
    together (the rows still searching, as one gather of their windows); each row's S is the same number its own
    search gives.  A non-finite estimate, range or t raises ``NonFiniteInput`` first: with a NaN, S is NaN and
    neither exit test is ever true (issue 33)."""
    zs = np.asarray(zs, dtype=float)
    N = np.asarray(N, dtype=np.int64)
    if not (math.isfinite(r_l) and math.isfinite(r_u) and r_l < r_u):
        raise NonFiniteInput(f"smooth sensitivity: the output range [r_l, r_u] must be finite with r_l < r_u, "
                             f"got [{r_l}, {r_u}]")
    if not (math.isfinite(t) and t >= 0):
        raise NonFiniteInput(f"smooth sensitivity: the smoothing t must be finite and >= 0, got {t}")
    R, P = zs.shape
    col = np.arange(P)[None, :]
    inside = col < N[:, None]
    bad = int(np.count_nonzero(~np.isfinite(zs) & inside))
    if bad:
        raise NonFiniteInput(f"smooth sensitivity: non-finite value in the estimates: {bad} of {int(N.sum())}")
    m = (N + 1) // 2                 # median_index per row
    last = -(-(N + 1) // k)          # per row: the bound on l
    wmax = (int(last.max(initial=0)) + 1) * k
    zc = np.clip(zs, r_l, r_u)

    def aligned(wcap: int) -> np.ndarray:
        """(R, 2 wcap + 1): column wcap + p - m of row r holds z_(p) for p in [m - wcap, m + wcap] (r_l for
        p <= 0, r_u for p > N): every row aligned on its median, so a window is one slice of all rows."""
        pos = m[:, None] + np.arange(-wcap, wcap + 1)[None, :]
        vals = zc[np.arange(R)[:, None], np.clip(pos - 1, 0, max(P - 1, 0))] if P else np.zeros(pos.shape)
        return np.where(pos <= 0, r_l, np.where(pos > N[:, None], r_u, vals))

    wcap = min(wmax, max(4 * k, 1024))   # grown (doubled) when a window needs more: memory follows the search
    al, C = aligned(wcap), wcap
    diff = np.empty((R, wcap + 1))
    span = r_u - r_l
    S = np.maximum(al[:, C + k] - al[:, C], al[:, C] - al[:, C - k])
    active = last >= 1
    l = 0
    while active.any():
        l += 1
        over = active & (last < l)
        if over.any():  # unreachable for finite input: at l = ⌈(N + 1)/k⌉ − 1 the window covers both paddings
            r = int(np.flatnonzero(over)[0])
            raise RuntimeError(f"smooth sensitivity: no exit after {int(last[r])} steps (N = {int(N[r])}, k = {k})")
        decay = math.exp(-l * t)
        active &= ~(decay * span <= S)
        if not active.any():
            break
        w = (l + 1) * k
        if w > wcap:
            wcap = min(wmax, 2 * w)
            al, C = aligned(wcap), wcap
            diff = np.empty((R, wcap + 1))
        d = diff[:, :w + 1]
        np.subtract(al[:, C:C + w + 1], al[:, C - w:C + 1], out=d)
        W = d.max(axis=1)
        S = np.where(active, np.maximum(S, decay * W), S)
        active &= ~(W >= span)
    return S


def ss_params(eps: float, d: float, beta: float) -> tuple[float, float]:
    """(t, s) of the smooth-sensitivity Student's t mechanism (Appendix E.1): t = β eps/(d+1),
    s = 2 sqrt(d) (eps - t(d+1))/(d+1)."""
    t = beta * eps / (d + 1.0)
    s = 2.0 * math.sqrt(d) * (eps - t * (d + 1.0)) / (d + 1.0)
    return t, s


def ss_median(zs: np.ndarray, eps: float, k: int, r_l: float, r_u: float, rng,
              size: int = 1, d: float = 3.0, beta: float = 0.5) -> np.ndarray:
    """``size`` draws of med(z) + (S / s) T_d for sorted finite ``zs`` (Algorithm 5).

    An empty estimate set (every pair vertical) is handled by the same padding convention as any other set —
    z_(0) = r_l, z_(N+1) = r_u — so its median is r_l and its smooth sensitivity is the whole span r_u − r_l.
    Returning NaN there instead would be a deterministic, data-dependent output (found by ``dpexp audit``: all-x-equal
    data always failed, its neighbour never did).  The span is t-smooth against every neighbour: a neighbour with
    N' ≤ k estimates has a window at l = 1 covering both pads, so its bound is ≥ e^{−t}·(r_u − r_l)."""
    N = zs.size
    t, s = ss_params(eps, d, beta)
    S = smooth_sensitivity(zs, k, t, r_l, r_u)
    m = median_index(N)
    med = r_l if m == 0 else float(np.clip(zs[m - 1], r_l, r_u))
    return smooth_sensitivity_t(med, S, t, s, d, rng, size=size, label="smooth-sensitivity median")


def ss_median_rows(Z: np.ndarray, eps: float, k: int, r_l: float, r_u: float, ledger: PrivacyLedger,
                   d: float = 3.0, beta: float = 0.5) -> np.ndarray:
    """One ``ss_median`` draw per row of ``Z`` (trials, P), NaN entries absent (vertical pairs): row r is trial r's
    own estimate set, its smooth bound from ``smooth_sensitivity_rows`` (all rows at once) and its release
    ``smooth_sensitivity_t`` charged to trial r only (``ledger.for_trial``), in row order."""
    valid = np.isfinite(Z)
    N = valid.sum(axis=1)
    zs = np.sort(np.where(valid, Z, np.inf), axis=1)   # each row: its N finite estimates sorted, then +inf
    t, s = ss_params(eps, d, beta)
    S = smooth_sensitivity_rows(zs, N, k, t, r_l, r_u)
    m = (N + 1) // 2
    out = np.empty(Z.shape[0])
    for r in range(Z.shape[0]):
        med = r_l if m[r] == 0 else float(np.clip(zs[r, m[r] - 1], r_l, r_u))
        with ledger.for_trial(r):
            out[r] = smooth_sensitivity_t(med, float(S[r]), t, s, d, ledger, size=1,
                                          label="smooth-sensitivity median")[0]
    return out
