"""Speed at paper scale, measured in one run: the overhead ratio of a full GDSC figure, the wall time of full runs,
and the peak memory of every process.

Prints:

1. the **batched-fit floor** of ``configs/gdsc_eps2.yaml`` (Honkela et al. 2018, Fig. 2, as the config is now: our
   curves and the paper-protocol curves).  Definition: every algorithm variant of the run is mapped to the fit it
   performs per cell and trial — ``vb`` (Gamma-prior Bayesian LR, ``dpexp.models.vb.fit_vb``: rplr/lr/rlr with
   ``prior: gamma``), ``fixed`` (the fixed-precision posterior mean with its solver, ``posterior_mean_fixed``:
   rplr/lr/plr with ``prior: fixed``, psd_floor or direct), ``solve`` (one linear solve: lr_public, plr_paper),
   ``ball`` (``ball_constrained_ridge``: oplr), ``minconf`` (``models.minconf.oplr_minconf``, the authors'
   solver chain: oplr_paper, timed on problems built as it builds them: ``_oplr_paper_problems``), ``fm``
   (``trimmed_minimiser`` on D = d + 1:
   fmlr, fmlr_paper), ``narplr`` (the noise-aware posterior's Gaussian approximation, ``fit_gaussian``, with its
   design and precision priors; ``narplr/gibbs`` for ``inference: gibbs``: ``sample_posterior`` with the
   variant's draws) or ``adassp`` (the smallest eigenvalue of the private and of the public XᵀX, ``eigvalsh``, and
   the ridge solve, ``models.adassp.estimate``), ``pymc`` (rplr with ``engine: pymc``: the authors' ADVI,
   ``posterior_mean_pymc``, timed on 3 problems after one that compiles the model, so the sampler's own time per
   fit; with ``cross_check: true`` each also counts two ``vb`` fits, without and with the ridge) — split_search's
   cells are rplr's ``vb`` fits (its split search on auxiliary data is cached, like the tuning) — at its number of
   coefficients d; the floor is Σ over (kind, d) of (number of such fits in
   the run) × (CPU time per fit of that kind batched 5,000 random GDSC-like problems per call, best of 3, one
   core, measured here: CPU time, so that other load on a shared machine does not inflate it).  So the floor is
   the run's arithmetic of fitting with every Python overhead removed: no data split, noise draw, metric, row or
   CSV.  Fits are counted where the run performs them (``count_fits``): once per split for non-private algorithms
   (the runner runs them once and repeats their rows per budget), and once for problems solved once for several
   cells (lr_public's public-rows fit, the public-only posterior of narplr and AdaSSP at n_private = 0, rlr's
   n_private = 0 fit shared with lr);
2. the wall time of the run (``dpexp run`` through this interpreter, ``--jobs J`` or ``--cluster ADDRESS``,
   tuning cache warmed first) and ``overhead ratio = full run wall / batched-fit floor`` (target <= 3; the floor
   is one core's, the run uses J), and the CPU ratio (CPU-seconds of all the run's processes / floor: independent
   of the cores used and of other load on the machine); ``--repeats R`` runs R repeats instead of 50 (the floor is
   then counted for R repeats too: chunks hold one repeat each, so the ratio does not depend on R);
3. where a cell's CPU goes: a few chunks run in this process with the runner's stages timed (data splits, noise
   streams, algorithms, metrics, row building, CSV formatting);
4. the peak resident memory (VmHWM) of the driver and of each worker process (target < 2 GiB each);
5. the same for ``configs/slr_oi.yaml`` with ``--slr``: its wall, and the runner-overhead ratio against the time
   spent inside its algorithms (CPU time, measured in process on 5 chunks per dataset variant after a warm-up
   chunk, scaled by cells; the SLR algorithms are not batched model fits);
6. with ``--configs all`` (or names; ``NAME:R`` runs R repeats): ``make figures`` as one measured run — every
   config run (``dpexp run``, ``--jobs J``) into a temporary folder, then every figure drawn and the HTML report
   made in one ``dpexp report --redraw --jobs`` of the folder (as the Makefile's ``figures``); per config
   its wall, the CPU of all its processes (the run and its workers), its own floor by family (``config_floor``:
   gdsc the batched-fit floor of part 1, dca the arithmetic of its releases and solves ``dca_floor``, slr the CPU
   inside its algorithms ``algorithm_floor``; docs/performance.md), the CPU ratio to the floor, the peak RSS of
   every process, ranked with the slowest relative to its floor first; then the figures-and-report step's wall,
   CPU and peak RSS, and the total wall.  ``--fast`` runs each config's ``fast:`` section (``dpexp run --fast``), the
   cheap check of the harness.

The results of every run go to a temporary folder, removed at the end (``--keep DIR``: to DIR, kept); nothing
under results/ is touched.
Usage: ``python benchmarks/paper_scale.py [--jobs 2 | --cluster local:2] [--repeats R] [--slr]
[--configs all|NAME[:R] ...] [--fast] [--skip-gdsc] [--keep DIR]`` (``make figures-bench``: ``--skip-gdsc --configs all``).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
GDSC = REPO / "configs" / "gdsc_eps2.yaml"


def env() -> dict[str, str]:
    """The environment of the runs: this checkout first on the path, no progress bars."""
    e = dict(os.environ, TQDM_DISABLE="1")
    e["PYTHONPATH"] = os.pathsep.join([str(REPO), e.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return e


def dpexp(*args: str) -> list[str]:
    """The CLI through the running interpreter (works from any environment that has dpexp's dependencies)."""
    return [sys.executable, "-m", "dpexp.cli", *args]


def fit_kind(av, dv) -> tuple[str, int] | None:
    """(kind, d) of the fit one cell of algorithm variant ``av`` on dataset variant ``dv`` performs (the module
    docstring's mapping), None for an algorithm that is not one of these fits (printed as such, not in the floor)."""
    p = av.instance.params
    d = int(getattr(p, "d", None) or dv.instance.params.d) if av.name == "lr_public" else int(dv.instance.params.d)
    prior = getattr(p, "prior", None)
    if av.name in ("rplr", "lr", "rlr", "plr"):
        if prior == "gamma":
            return ("vb", d) if getattr(p, "engine", "vb") == "vb" else ("pymc", d)
        return (f"fixed/{p.solver}", d)
    if av.name == "split_search":        # its cell is an rplr with the split's thresholds (Gamma priors, vb)
        return ("vb", d)
    if av.name in ("lr_public", "plr_paper"):
        return ("vb", d) if prior == "gamma" else ("solve", d)
    if av.name == "oplr":
        return ("ball", d)
    if av.name == "oplr_paper":
        return ("minconf", d)
    if av.name in ("fmlr", "fmlr_paper"):
        return ("fm", d + 1)
    if av.name == "narplr":
        if p.inference == "gibbs":
            return (f"narplr/gibbs/{','.join(map(str, p.gibbs))}", d)
        return ("narplr", d)
    if av.name == "adassp":
        return ("adassp", d)
    return None


def count_fits(exp) -> tuple[dict[tuple[str, int], int], dict[str, int]]:
    """Fits of the run per (kind, d), and the cells of algorithms that are none of the kinds (label -> cells).

    A fit is counted where the run performs it: once per split for a non-private algorithm (its rows are repeated
    per budget), and once for problems the run solves once for several cells —
    * ``lr_public`` with the fixed prior: its weights depend on the public rows only, memoised per drug, repeat and
      n_public (``baselines``), so once per distinct n_public of the grid, not per size; at n_public = 0 every
      drug's problem is the same (no rows: the memo key of empty rows, ``_public_key``), solved once for the run
      (a chunk's drugs are then one batched solve of equal problems before the memo holds it: at most a chunk's
      drugs per process, a few hundred fits of the whole run's thousands) — counted as one fit;
    * narplr and AdaSSP at n_private = 0 release nothing and take the public-only posterior (``public_posterior``, a
      one-problem ``vb`` fit memoised by the public rows): one ``vb`` fit per drug, repeat and n_public for the two;
    * rlr with the Gamma prior at n_private = 0 clips nothing and reuses the fit of ``lr`` with the Gamma prior on
      the same data path (``model.exact_gamma_weights``): none of its own there."""
    fits: dict[tuple[str, int], int] = {}
    other: dict[str, int] = {}
    grid, trials, repeats = exp.size_grid, exp.spec.trials, exp.spec.repeats
    budgets = len(exp.epsilons) * len(exp.deltas)
    n_public = len({npub for _, npub, _ in grid if npub != 0})   # lr_public's public fits; n_public = 0: one fit
    empty_public = any(npub == 0 for _, npub, _ in grid)
    public_only = len({npub for _, npub, npriv in grid if npriv == 0})   # grid points without private rows

    def add(kind, n):
        fits[kind] = fits.get(kind, 0) + n

    for dv in exp.datasets:
        algos = exp.algorithms_for(dv)
        d = int(dv.instance.params.d)
        drugs = len(dv.subsets) * repeats * trials
        lr_gamma = any(a.name == "lr" and getattr(a.instance.params, "prior", None) == "gamma" for a in algos)
        if any(a.name in ("narplr", "adassp") for a in algos):
            add(("vb", d), drugs * public_only)
        for av in algos:
            runs = budgets if getattr(av.instance, "private", True) else 1
            kind = fit_kind(av, dv)
            sizes = len(grid)
            if av.name in ("narplr", "adassp") or (av.name == "rlr" and lr_gamma and kind and kind[0] == "vb"):
                sizes = sum(1 for _, _, npriv in grid if npriv != 0)
            elif av.name == "lr_public" and kind and kind[0] == "solve":
                sizes = n_public
            n = drugs * sizes * runs
            if av.name == "lr_public" and kind and kind[0] == "solve" and empty_public:
                n += 1   # the one problem of no public rows (every drug, repeat and trial alike)
            if kind is None:
                other[av.label] = other.get(av.label, 0) + drugs * len(grid) * runs
            else:
                add(kind, n)
                if kind[0] == "pymc" and getattr(av.instance.params, "cross_check", False):
                    add(("vb", d), 2 * n)    # the vb engine on the same statistics, without and with the ridge
    return fits, other


#: the Laplace scale of ``_problems``' noise on XᵀX (the vb floor's noise ridge is made for it)
PROBLEM_LAPLACE_XX = 5.0


def _problems(rng: np.random.Generator, batch: int, d: int, n: int = 810):
    """``batch`` perturbed GDSC-like statistics (unit-norm rows, Laplace noise as in the releases)."""
    X = rng.normal(size=(n, d))
    X -= X.mean(0)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = X @ rng.normal(size=d) + rng.normal(size=n)
    S, r, t = X.T @ X, X.T @ y, float(y @ y)
    N = rng.laplace(0, PROBLEM_LAPLACE_XX, size=(batch, d, d))
    Sb = S[None] + 0.5 * (N + np.swapaxes(N, -1, -2))
    rb = r[None] + rng.laplace(0, 2.0, size=(batch, d))
    tb = t + np.abs(rng.laplace(0, 10.0, size=batch))
    return Sb, rb, tb, n


#: the median eigenvalues of XᵀX / N of oplr_paper's private rows in gdsc_eps2 (paper_matlab, d = 10, n_private
#: 800, one repeat): correlated genes, the smallest 14 times below the largest
_GDSC_SPECTRUM = (0.0164, 0.0343, 0.06, 0.0653, 0.0764, 0.0952, 0.1172, 0.1283, 0.1838, 0.2233)


def _oplr_paper_problems(rng: np.random.Generator, batch: int, d: int, epsilon: float = 2.0
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``batch`` problems of ``oplr_minconf`` as ``oplr_paper`` builds them in gdsc_eps2 (A = XᵀX, b = Xᵀy of N
    private rows, lam = λ/2 with λ = √(d/(Nε)), R = 1), from GDSC-like rows: N cycling over the run's n_private
    (100, …, 800); x with the GDSC rows' spectrum (``_GDSC_SPECTRUM``, in one random orientation), centred, rows of
    unit norm; y = xᵀβ + N(0, 1), centred, with ‖β‖ = 1.15·exp(0.3 z) per problem.  On these minConf spends
    function evaluations as on the run's (quartiles 21 / 43 / 108, p90 364 against the run's 20 / 41 / 128, 368;
    ‖b‖/N 0.139 against 0.145 at N = 800)."""
    spec = np.interp(np.linspace(0, 9, d), np.arange(10), _GDSC_SPECTRUM)
    L = np.sqrt(spec)[:, None] * np.linalg.qr(rng.normal(size=(d, d)))[0].T
    A, b, lam = np.empty((batch, d, d)), np.empty((batch, d)), np.empty(batch)
    for j in range(batch):
        N = 100 * (1 + j % 8)
        X = rng.normal(size=(N, d)) @ L
        X -= X.mean(0)
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        beta = rng.normal(size=d)
        beta *= 1.15 * np.exp(0.3 * rng.normal()) / np.linalg.norm(beta)
        y = X @ beta + rng.normal(size=N)
        y -= y.mean()
        A[j], b[j], lam[j] = X.T @ X, X.T @ y, np.sqrt(d / (N * epsilon)) / 2.0
    return A, b, lam


def per_fit_seconds(kind: str, d: int, batch: int = 5_000) -> float:
    """Time per fit of ``kind`` at ``d`` coefficients, ``batch`` problems in one call (best of 3, this process)."""
    from dpexp.families.gdsc.algorithms.functional_mechanism import trimmed_minimiser
    from dpexp.families.gdsc.algorithms.output_perturbation import ball_constrained_ridge
    from dpexp.models import adassp
    from dpexp.models.bayes_lr import posterior_mean_fixed
    from dpexp.models.vb import fit_vb

    S, r, t, n = _problems(np.random.default_rng(0), batch, d)
    if kind == "vb":
        from dpexp.models.vb import noise_ridge, ridge_stabilised

        rho = noise_ridge(d, np.full(batch, PROBLEM_LAPLACE_XX))

        def f():   # as rplr's fit_posterior: the noise ridge (its eigendecomposition handed on), then the fit
            XX, eig = ridge_stabilised(S, rho, with_eig=True)
            fit_vb(XX, r, t, n, eig=eig)
    elif kind.startswith("fixed/"):
        def f(): posterior_mean_fixed(S, r, 1.0, 1.0, kind.split("/")[1])
    elif kind == "solve":
        def f(): np.linalg.solve(S + np.eye(d), r[..., None])
    elif kind == "ball":
        lam = np.full(batch, 0.05)
        def f(): ball_constrained_ridge(S, r, lam, 1.0)
    elif kind == "minconf":
        from dpexp.models.minconf import oplr_minconf

        A, b, lam = _oplr_paper_problems(np.random.default_rng(0), batch, d)
        def f(): oplr_minconf(A, b, lam, 1.0)
    elif kind == "fm":
        def f(): trimmed_minimiser(S, -2.0 * r, 10.0, 1e-8)
    elif kind.startswith("narplr"):
        f = _narplr_fit(kind, batch, d)
    elif kind == "pymc":
        from dpexp.models.pymc_backend import posterior_mean_pymc

        posterior_mean_pymc(S[:1], r[:1], t[:1], n, np.random.default_rng(0))   # compiles the model: not a fit

        def f(): posterior_mean_pymc(S, r, t, n, np.random.default_rng(1))
    elif kind == "adassp":
        P = S / 80.0                    # a public XᵀX: 10 of the 810 lines
        ridge = np.full(batch, 0.5)

        def f():
            np.linalg.eigvalsh(S)
            np.linalg.eigvalsh(P)
            adassp.estimate(S + P, r, ridge)
    else:
        raise ValueError(kind)
    best = float("inf")
    for _ in range(3):   # CPU time of this process: what the fits cost one core, whatever else the machine runs
        t0 = time.process_time()
        f()
        best = min(best, time.process_time() - t0)
    return best / batch


def _narplr_fit(kind: str, batch: int, d: int, n: int = 810):
    """narplr's batched inference on ``batch`` releases of one GDSC-like data set as rplr makes them (rows of unit
    norm clipped at B_x = 0.3, B_y = 1.5; Laplace scales of its sensitivities at the paper's split of ε = 1.8), with
    10 clipped public rows, its default design prior (independent clipped Gaussian features) and precision prior
    (clipping-scaled): ``fit_gaussian`` (``narplr``; it iterates ~20 times on these, as on the run's releases) or
    ``sample_posterior`` with the variant's (draws, burn-in, thin)."""
    from dpexp.models.gram_prior import clipped_gaussian_gram_prior, clipping_scaled_prior
    from dpexp.models.noise_aware import ExactStats, NoisyStats, sample_posterior
    from dpexp.models.noise_aware_fast import fit_gaussian

    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    X -= X.mean(0)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = X @ rng.normal(size=d) + rng.normal(size=n)
    Bx, By, sx = 0.3, 1.5, 0.3
    Xc, yc = np.clip(X, -Bx, Bx), np.clip(y, -By, By)
    b_xx, b_xy, b_yy = d * (d + 1) * Bx**2 / (0.35 * 1.8), 2 * d * Bx * By / (0.6 * 1.8), By**2 / (0.05 * 1.8)
    iu = np.triu_indices(d)
    N = np.zeros((batch, d, d))
    N[:, iu[0], iu[1]] = rng.laplace(0, b_xx, size=(batch, iu[0].size))
    ones = np.ones(batch)
    stats = NoisyStats(Xc.T @ Xc + N + np.swapaxes(N, -1, -2) - N * np.eye(d),
                       Xc.T @ yc + rng.laplace(0, b_xy, size=(batch, d)), yc @ yc + rng.laplace(0, b_yy, size=batch),
                       n * ones, b_xx * ones, b_xy * ones, b_yy * ones)
    Xp, yp = Xc[:10], yc[:10]
    public = ExactStats(np.broadcast_to(Xp.T @ Xp, (batch, d, d)), np.broadcast_to(Xp.T @ yp, (batch, d)),
                        (yp @ yp) * ones, 10.0 * ones)
    gram = clipped_gaussian_gram_prior(n * ones, d, Bx * ones, sx * ones, 0.1, 0.1)
    prior = tuple(np.broadcast_to(np.asarray(v, dtype=float), (batch,))
                  for v in clipping_scaled_prior(1.0, 1.0, units=(sx * ones, ones, d)))
    if kind == "narplr":
        return lambda: fit_gaussian(stats, public, gram, prior)
    draws, burn, thin = (int(v) for v in kind.split("/")[2].split(","))
    return lambda: sample_posterior(stats, rng, public=public, gram_prior=gram, prior=prior, n_draws=draws,
                                    burn_in=burn, thin=thin)


_per_fit_once = functools.cache(per_fit_seconds)


def fit_floor(exp, once: bool = False) -> tuple[float, list[tuple[str, int, int, float]], dict[str, int]]:
    """The batched-fit floor of ``exp`` in seconds, its terms (kind, d, fits, seconds per fit) and the cells that are
    no fit of the kinds; ``once``: each (kind, d) timed once per process (the ``--configs`` run's many configs)."""
    fits, other = count_fits(exp)
    per_fit = _per_fit_once if once else per_fit_seconds
    terms = [(k, d, n, per_fit(k, d, 3 if k == "pymc" else 200 if "gibbs" in k else 2_000 if d > 20 else 5_000))
             for (k, d), n in sorted(fits.items())]
    return sum(n * t for _, _, n, t in terms), terms, other


def stage_breakdown(exp, k: int = 2) -> tuple[float, dict[str, float], dict[str, tuple[float, float]]]:
    """CPU per cell of the run and its split over the runner's stages, from ``k`` chunks of each dataset variant
    (spread over the repeats) run in this process after one warm-up chunk each; the stages are timed by wrapping the
    runner's functions (algorithms = ``run_many``, metrics = ``_metric_table``, ...), the rest is 'other'.  The
    warm-up chunk is of another repeat than the measured ones: what is shared per repeat (the permutation, a drug's
    rows) is then computed in the measured chunks as in a run, while data and tuning look-ups are warm.

    Each dataset variant's CPU per cell (and per stage) is weighted by its share of the run's cells, so the total
    estimates the run's average (the data paths differ in cost per cell and in cells: gdsc_eps2's ``ours`` path
    holds 12 of its 20 curves).  Returns (CPU s per cell, seconds per cell by stage, {dataset label: (its share of
    the cells, its CPU s per cell)})."""
    from dpexp import runner

    chunks = runner.plan_chunks(exp)
    by: dict[int, list] = {}
    for c in chunks:
        by.setdefault(c.dataset, []).append(c)
    run_cells = {ds: sum(runner._chunk_cells(exp, c) for c in cs) for ds, cs in by.items()}
    total_cells = sum(run_cells.values())
    picks = {ds: [cs[int(i * (len(cs) - 1) / max(k - 1, 1))] for i in range(k)] for ds, cs in by.items()}
    picked_repeats = {c.repeat for cs in picks.values() for c in cs}
    for cs in by.values():
        warm = next((c for c in cs if c.repeat not in picked_repeats), cs[0])
        runner.compute_chunk(exp, warm, exp.spec.seed)          # warm: data, tuning look-ups
    spent: dict[str, float] = {}
    wrapped = {"data splits": "_splits", "algorithms": "_outputs", "metrics": "_metric_table",
               "noise streams": "stream_from_key", "CSV formatting": "_records_text"}
    saved = {name: getattr(runner, name) for name in wrapped.values()}

    active: list[str] = []   # the stages entered, innermost last: a stage run inside another counts for itself only
    # (the noise streams drawn inside the algorithms; a later size's data splits that oplr_paper's pooled fits make)

    def timed(stage, fn):
        def inner(*a, **kw):
            t0 = time.process_time()
            active.append(stage)
            try:
                return fn(*a, **kw)
            finally:
                active.pop()
                dt = time.process_time() - t0
                spent[stage] = spent.get(stage, 0.0) + dt
                if active:
                    spent[active[-1]] = spent.get(active[-1], 0.0) - dt
        return inner

    for stage, name in wrapped.items():
        setattr(runner, name, timed(stage, saved[name]))
    weighted: dict[str, float] = {}
    paths: dict[str, tuple[float, float]] = {}
    try:
        for ds, pick in picks.items():
            spent.clear()
            t0 = time.process_time()
            cells = 0
            for c in pick:
                runner.compute_chunk(exp, c, exp.spec.seed)
                cells += runner._chunk_cells(exp, c)
            total = time.process_time() - t0
            spent["rows, tuning look-ups, other"] = total - sum(spent.values())
            share = run_cells[ds] / total_cells
            for stage, v in spent.items():
                weighted[stage] = weighted.get(stage, 0.0) + share * v / cells
            dv = exp.datasets[ds]
            paths[exp.spec.datasets[dv.index].label or f"{dv.name}[{dv.params_str}]"] = (share, total / cells)
    finally:
        for name, fn in saved.items():
            setattr(runner, name, fn)
    return sum(weighted.values()), weighted, paths


def print_breakdown(name: str, exp, k: int = 2) -> float:
    """Prints ``stage_breakdown``'s split of a cell's CPU; returns its estimate of the CPU per cell (seconds)."""
    per_cell, spent, paths = stage_breakdown(exp, k)
    total = sum(spent.values())
    print(f"  where a cell's CPU goes ({name}, {k} chunks per dataset variant in this process, each data path "
          f"weighted by its share of the run's cells): {per_cell * 1e6:.0f} us per cell = " + ", ".join(
              f"{stage} {v / total:.0%}" for stage, v in sorted(spent.items(), key=lambda kv: -kv[1])), flush=True)
    print("    per data path: " + ", ".join(f"{label} {share:.0%} of the cells at {cpu * 1e6:.0f} us"
                                            for label, (share, cpu) in paths.items()), flush=True)
    return per_cell


class PeakMemory:
    """Polls the peak resident set (VmHWM) and the CPU time of a process and all its descendants until stopped
    (CPU time as last seen, at most ``every`` seconds before a process ended)."""

    def __init__(self, pid: int, every: float = 0.25) -> None:
        self.pid, self.every = pid, every
        self.peaks: dict[int, tuple[str, int]] = {}
        self.cpu: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        import psutil

        root = psutil.Process(self.pid)
        while not self._stop.is_set():
            try:
                procs = [root, *root.children(recursive=True)]
            except psutil.Error:
                return
            for p in procs:
                try:
                    with open(f"/proc/{p.pid}/status") as fh:
                        hwm = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmHWM:"))
                    name = "driver" if p.pid == self.pid else _role(p.cmdline())
                    t = p.cpu_times()
                    self.cpu[p.pid] = t.user + t.system
                except (OSError, StopIteration, psutil.Error):
                    continue
                self.peaks[p.pid] = (name, max(hwm, self.peaks.get(p.pid, ("", 0))[1]))
            self._stop.wait(self.every)

    def stop(self) -> dict[int, tuple[str, int]]:
        self._stop.set()
        self._thread.join()
        return self.peaks


def _role(cmdline: list[str]) -> str:
    text = " ".join(cmdline)
    for key, name in (("loky", "loky worker"), ("distributed", "dask process"), ("multiprocessing", "helper")):
        if key in text:
            return name
    return "child"


def timed_run(cfg: Path, out: Path, how: list[str], extra: list[str], timeout: float | None = None,
              cpu_by: dict[int, float] | None = None) -> tuple[float, dict[int, tuple[str, int]], float]:
    """Wall seconds of ``dpexp run cfg``, the peak memory of each of its processes and their CPU seconds (each
    process's in ``cpu_by``, by pid, if given); past ``timeout`` seconds the run is stopped and the wall returned is
    inf."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(dpexp("run", str(cfg), "--out", str(out), "--force", "-q", *how, *extra), cwd=REPO,
                            env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    mem = PeakMemory(proc.pid)
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 15)   # the run and its workers (their own session)
        proc.communicate()
        mem.stop()
        return float("inf"), mem.peaks, sum(mem.cpu.values())
    wall = time.perf_counter() - t0
    peaks = mem.stop()
    if cpu_by is not None:
        cpu_by.update(mem.cpu)
    if proc.returncode not in (0, 1):  # 1: some cells failed (recorded), still a full run
        raise SystemExit(f"{cfg.name}: dpexp run failed ({proc.returncode}): {err.strip()[-500:]}")
    return wall, peaks, sum(mem.cpu.values())


def load(cfg: Path, extra: list[str]):
    from dpexp import spec

    overrides = [extra[i + 1] for i, a in enumerate(extra) if a == "--set"]
    repeats = next((int(extra[i + 1]) for i, a in enumerate(extra) if a == "--repeats"), None)
    return spec.load(cfg, overrides, repeats)


def load_fast(cfg: Path):
    """The config as ``dpexp run --fast`` resolves it (its ``fast:`` section's overrides and repeats)."""
    from dpexp import spec

    raw = spec.read_yaml(cfg)
    overrides, repeats = spec.fast_settings(raw, str(cfg))
    return spec.resolve(raw, str(cfg), overrides, repeats)


def _with_repeats(cfg: Path, repeats: int):
    """The config's ``fast:`` overrides with ``repeats`` repeats (``--fast --repeats R``)."""
    from dpexp import spec

    raw = spec.read_yaml(cfg)
    overrides, _ = spec.fast_settings(raw, str(cfg))
    return spec.resolve(raw, str(cfg), overrides, repeats)


def algorithm_floor(exp, k: int = 5) -> float:
    """CPU seconds the run's algorithms (``run_many``) take over all its cells, estimated from ``k`` chunks per
    dataset variant run in this process after one warm-up chunk (data loading and one-off set-up excluded), scaled
    by cells (the floor of a config whose algorithms are not batched fits, e.g. slr_oi)."""
    from dpexp import runner

    chunks = runner.plan_chunks(exp)
    total = 0.0
    for di in range(len(exp.datasets)):
        cs = [c for c in chunks if c.dataset == di]
        runner.compute_chunk(exp, cs[-1], exp.spec.seed)      # warm: data, caches
        pick = [cs[int(i * (len(cs) - 1) / max(k - 1, 1))] for i in range(min(k, len(cs)))]
        spent, cells = 0.0, 0
        saved = runner._outputs

        def timed(*a, **kw):
            nonlocal spent
            t0 = time.process_time()
            try:
                return saved(*a, **kw)
            finally:
                spent += time.process_time() - t0
        runner._outputs = timed
        try:
            for c in pick:
                runner.compute_chunk(exp, c, exp.spec.seed)
                cells += runner._chunk_cells(exp, c)
        finally:
            runner._outputs = saved
        all_cells = sum(runner._chunk_cells(exp, c) for c in cs)
        total += spent / max(cells, 1) * all_cells
    return total


def _min_cpu(f, repeats: int = 3) -> float:
    """Smallest CPU time of ``repeats`` calls of ``f`` (this process)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        f()
        best = min(best, time.process_time() - t0)
    return best


@functools.cache
def dca_unit_costs(d: int = 10, M: int = 10) -> dict[str, float]:
    """CPU seconds per unit of the DCA family's arithmetic, each as one call on a large array (no Python loop):
    ``normal`` per standard normal, ``mask`` per uniform ring word (PCG64 ``random_raw``), ``ring`` per client
    message word (encoding z + η in Z/2^64, the M-th share, the Compute sums), ``terms`` per unique term
    x_j x_k / x_j y of a client (``dlr.unique_terms``), ``solve/d`` per batched posterior solve of d coefficients
    (5,000 systems a call), ``aes`` per byte encrypted and decrypted with AES-256-GCM (64 KiB messages)."""
    from dpexp.families.dca.algorithms.dlr import n_terms, unique_terms
    from dpexp.families.dca.protocol.fixed_point import FixedPoint, ring_sum

    rng = np.random.default_rng(0)
    n = 1 << 20
    fp = FixedPoint(32)
    p = n_terms(d)
    clients = max(1, (256 << 10) // (8 * M * p))           # a cache-sized block of messages, as run_trials
    msgs = rng.integers(0, 2**63, size=(M, clients, p), dtype=np.uint64)
    vals = rng.uniform(-1, 1, (clients, p))
    reps = max(1, n // (clients * p))

    def ring():
        for _ in range(reps):
            enc = fp.encode(vals)
            np.negative(ring_sum(msgs[: M - 1], axis=0), out=msgs[M - 1])
            msgs[0] += enc
            ring_sum(msgs, axis=1)
    X, y = rng.uniform(-1, 1, (n // p, d)), rng.uniform(-1, 1, n // p)
    S = rng.normal(size=(5_000, d, d))
    S = S @ np.swapaxes(S, -1, -2) + np.eye(d)
    r = rng.normal(size=(5_000, d, 1))
    g = np.random.Generator(np.random.PCG64(1))
    out = {"normal": _min_cpu(lambda: g.standard_normal(n)) / n,
           "mask": _min_cpu(lambda: g.bit_generator.random_raw(n)) / n,
           "ring": _min_cpu(ring) / (reps * clients * p * M),
           "terms": _min_cpu(lambda: unique_terms(X, y)) / (X.shape[0] * p),
           f"solve/{d}": _min_cpu(lambda: np.linalg.solve(S, r)) / 5_000}
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        aes, msg = AESGCM(bytes(32)), bytes(64 << 10)

        def enc_dec():
            for i in range(16):
                aes.decrypt(i.to_bytes(12, "little"), aes.encrypt(i.to_bytes(12, "little"), msg, None), None)
        out["aes"] = _min_cpu(enc_dec) / (16 * len(msg))
    except ImportError:
        out["aes"] = 0.0
    return out


def dca_cell_work(name: str, params, N: int, d: int, trials: int, M: int = 10) -> dict[str, float]:
    """Units of arithmetic (``dca_unit_costs``' keys) of one cell of DCA algorithm ``name`` on N clients, d
    features, ``trials`` trials: its releases (the clients' terms, the noise, for ddp every client word in the ring,
    with its M shares where ``secret_shares`` asks for them) and its posterior solves.  ``dca_timing`` is one round of N d-vectors (+ AES-GCM of every message)."""
    from dpexp.families.dca.algorithms.dlr import n_terms

    w: dict[str, float] = {}

    def add(k, v):
        w[k] = w.get(k, 0.0) + v
    if name == "dca_timing":
        M = int(getattr(params, "n_compute", M))
        add("normal", N * d)
        add("mask", (M - 1) * N * d)
        add("ring", M * N * d)
        if getattr(params, "encrypt", False):
            add("aes", 8 * M * N * d)
        return w
    p = n_terms(d)
    M = int(getattr(params, "n_compute", M))
    rounds = [p] if name in ("np", "ta", "ddp", "input_perturbation") else [d + 1, p]
    for q in rounds:
        per = trials if name.endswith("_proj") and q == p else 1   # a projected round clips each trial's data
        add("terms", per * N * q)
        if name.startswith("ddp"):
            add("normal", trials * N * q)
            if getattr(params, "secret_shares", True):   # step 2's M shares of every word
                add("mask", trials * (M - 1) * N * q)
                add("ring", trials * M * N * q)
            else:                                        # the encoded word summed directly
                add("ring", trials * N * q)
        elif name != "np":
            add("normal", trials * q)
    add(f"solve/{d}", 1 if name == "np" else trials)
    return w


def dca_floor(exp, k: int = 3) -> float:
    """The DCA family's floor: Σ over the run's cells of their arithmetic (``dca_cell_work``) at its measured unit
    costs (``dca_unit_costs``).  The cells' client counts N and dimensions come from ``k`` chunks per dataset
    variant whose splits are made in this process (the algorithms are not run: every group of cells gets a
    ``FloorOnly`` failure in place of its outputs, so that the chunk goes on to its next algorithm and budget), and
    the work of those chunks is scaled by cells (all cells / the cells of the chunks seen)."""
    from dpexp import runner

    chunks = runner.plan_chunks(exp)
    total = 0.0
    for di, dv in enumerate(exp.datasets):
        cs = [c for c in chunks if c.dataset == di]
        pick = [cs[int(i * (len(cs) - 1) / max(k - 1, 1))] for i in range(min(k, len(cs)))]
        seen: list = []
        saved = runner._outputs

        def record(exp_, av, splits, ledgers, epsilon, delta, *rest, **kw):   # runner._outputs' signature
            seen.append((av, splits))
            return [FloorOnly(av.name)] * len(splits)
        runner._outputs = record
        try:
            for c in pick:
                runner.compute_chunk(exp, c, exp.spec.seed)
        finally:
            runner._outputs = saved
        if not seen:   # the recorder was never called (e.g. runner._outputs changed): a floor of 0 would say nothing
            raise RuntimeError(f"dca_floor: no splits recorded for dataset variant {di} ({dv.name})")
        cost = 0.0
        for av, splits in seen:
            for sp in splits:
                if not hasattr(sp, "X_private"):
                    continue
                meta = getattr(sp, "meta", {}) or {}
                if av.name == "dca_timing":
                    N, d = int(meta["n_clients"]), int(meta["dim"])
                else:
                    N, d = sp.X_private.shape
                units = dca_unit_costs(d if av.name != "dca_timing" else 10)
                work = dca_cell_work(av.name, av.instance.params, N, d, exp.spec.trials)
                cost += sum(units.get(key, units.get("solve/10", 0.0)) * v for key, v in work.items()
                            if not key.startswith("solve")) + sum(
                    dca_unit_costs(int(key.split("/")[1]))[key] * v for key, v in work.items() if key.startswith("solve"))
        cells_seen = sum(runner._chunk_cells(exp, c) for c in pick)
        all_cells = sum(runner._chunk_cells(exp, c) for c in cs)
        total += cost / max(cells_seen, 1) * all_cells
    return total


class FloorOnly(RuntimeError):
    """The output ``dca_floor``'s recorder gives every cell: the floor wants the splits, not the algorithms' work."""


def config_family(exp) -> str:
    """The family of a config's algorithms (one family per config: "gdsc", "slr", "dca"; "mixed" otherwise)."""
    fams = {av.instance.family for av in exp.algorithms}
    return fams.pop() if len(fams) == 1 else "mixed"


def config_floor(exp) -> tuple[float, str]:
    """(floor seconds, what it is) of a config by its family (docs/performance.md, "The floor of every config"):
    gdsc — the batched-fit floor (``fit_floor``); dca — the arithmetic of its releases and solves (``dca_floor``);
    slr and any other — the CPU inside its algorithms' ``run_many`` (``algorithm_floor``)."""
    fam = config_family(exp)
    if fam == "gdsc":
        floor, _, other = fit_floor(exp, once=True)
        return floor, "batched fits" + (f" ({sum(other.values()):,} cells of no fit kind excluded)" if other else "")
    if fam == "dca":
        return dca_floor(exp), "release + solve arithmetic"
    return algorithm_floor(exp), "inside run_many"


class ConfigTiming:
    """One config of the ``--configs`` run: its family, wall and CPU seconds (all its processes), floor, the peak
    RSS of each of its processes (name, bytes)."""

    def __init__(self, name: str, family: str, wall: float, cpu: float, floor: float, floor_kind: str,
                 peaks: list[tuple[str, int]], error: str = "", sys: float | None = None) -> None:
        self.name, self.family, self.wall, self.cpu, self.floor = name, family, wall, cpu, floor
        self.floor_kind, self.peaks, self.error = floor_kind, peaks, error
        self.sys = sys   # system seconds within ``cpu`` (None: not measured)

    @property
    def sys_share(self) -> float | None:
        """The share of its CPU spent in the kernel (issue 31: at most 10 % for an SLR config)."""
        return self.sys / self.cpu if self.sys is not None and self.cpu > 0 else None

    @property
    def ratio(self) -> float:
        """CPU-seconds of all the run's processes / its one-core floor (inf without a floor)."""
        return self.cpu / self.floor if self.floor > 0 else float("inf")


def ranked(timings: list[ConfigTiming]) -> list[ConfigTiming]:
    """The configs slowest relative to their floor first (no floor: first of all; then by CPU ratio, then name)."""
    return sorted(timings, key=lambda t: (-t.ratio, t.name))


def seconds(x: float) -> str:
    """A floor in seconds: two decimals, or three significant digits below 0.1 s (a small config's floor of a few
    milliseconds is not printed as 0.00)."""
    return f"{x:.2f}" if x >= 0.1 or x == 0 else f"{x:.3g}"


class Step:
    """The ``dpexp`` command after the runs (every figure and the report): wall, CPU, peak RSS."""

    def __init__(self, wall: float = 0.0, cpu: float = 0.0, peak: int = 0) -> None:
        self.wall, self.cpu, self.peak = wall, cpu, peak

    def words(self) -> str:
        return f"{self.wall:.1f} s wall, {self.cpu:.1f} CPU-s, peak RSS {self.peak / 2**20:.0f} MiB"


def format_table(timings: list[ConfigTiming], total_wall: float, figures: Step, runs_wall: float | None = None,
                 slots: int = 1) -> list[str]:
    """The lines ``--configs`` prints: one per config, ranked (``ranked``), then the figures-and-report step and
    the totals.  ``runs_wall``: the wall of the runs (the queue's, where configs ran ``slots`` side by side; None:
    one after another, the sum of their walls)."""
    lines = [f"{'config':26s} {'family':6s} {'wall s':>8s} {'CPU s':>8s} {'floor s':>8s} {'CPU/floor':>9s} "
             f"{'sys':>5s} {'peak RSS MiB (each process)':s}"]
    for t in ranked(timings):
        rss = ", ".join(f"{name} {b / 2**20:.0f}" for name, b in sorted(t.peaks, key=lambda x: -x[1]))
        ratio = f"{t.ratio:9.1f}" if t.ratio != float("inf") else f"{'-':>9s}"
        share = t.sys_share
        sys_col = f"{share:5.0%}" if share is not None else f"{'-':>5s}"
        lines.append(f"{t.name:26s} {t.family:6s} {t.wall:8.1f} {t.cpu:8.1f} {seconds(t.floor):>8s} {ratio} "
                     f"{sys_col} {rss}" + (f"  ({t.error})" if t.error else ""))
    side = runs_wall is not None
    runs = runs_wall if side else sum(t.wall for t in timings)
    cpu = sum(t.cpu for t in timings)
    lines.append(f"figures and report (`dpexp report --redraw --jobs`, as the runs): {figures.words()}")
    largest = max([b for t in timings for _, b in t.peaks] + [figures.peak])
    how = f" ({slots} configs side by side: {cpu / max(runs * slots, 1e-9):.0%} of the cores busy)" if side else ""
    lines.append(f"total: {total_wall:.1f} s wall = runs {runs:.1f} s{how} + figures and report {figures.wall:.1f} s "
                 f"(+ {max(total_wall - runs - figures.wall, 0.0):.1f} s of floors and set-up, not part of "
                 f"`make figures`); CPU of the runs {cpu:.1f} s; "
                 f"largest process {largest / 2**20:.0f} MiB; `make figures` itself (runs + figures and report): "
                 f"{runs + figures.wall:.1f} s = {(runs + figures.wall) / 60:.1f} min")
    return lines


def cli_step(args: list[str]) -> Step:
    """One ``dpexp`` command run quietly: its wall, CPU and peak RSS (``PeakMemory``, polled);
    raises SystemExit if it fails."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(dpexp(*args), cwd=REPO, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    mem = PeakMemory(proc.pid)
    _, err = proc.communicate()
    wall = time.perf_counter() - t0
    peaks = mem.stop()
    if proc.returncode != 0:
        raise SystemExit(f"dpexp {args[0]} failed ({proc.returncode}): {err.strip()[-500:]}")
    return Step(wall, sum(mem.cpu.values()), max((b for _, b in peaks.values()), default=0))


def bench_figures(names: list[str], work: Path, how: list[str], fast: bool, timeout: float | None) -> None:
    """``make figures`` as one measured run (``--configs all``): every config's floor measured in this process
    (``config_floor``), then every config run into work/results/<name> by one ``dpexp run CONFIG... --into work/results --jobs J`` (the
    configs side by side, one process each, as ``make figures`` runs them), then every figure drawn into
    work/figures/<name> and the report made (``dpexp report --redraw``); per config its wall, CPU, floor, ratio and
    peak RSS (from the queue's ``runs.json``), ranked by ratio, then the figures-and-report step (``format_table``).
    ``NAME:R`` runs R repeats: the configs of each repeats setting are one queue, one queue after another."""
    if "--cluster" in how:
        raise SystemExit("--configs runs the configs side by side on this machine (--jobs), not on a cluster")
    jobs = how[how.index("--jobs") + 1] if "--jobs" in how else "1"
    t_all = time.perf_counter()
    res, figs = work / "results", work / "figures"
    groups: dict[str, list[tuple[str, Path]]] = {}
    floors: dict[str, tuple[str, float, str]] = {}
    for item in names:
        name, _, r = item.partition(":")          # NAME:R: R repeats instead of the config's (or its fast ones)
        cfg = REPO / "configs" / f"{name}.yaml"
        exp = load_fast(cfg) if fast else load(cfg, [])
        if r:
            exp = load(cfg, ["--repeats", r]) if not fast else _with_repeats(cfg, int(r))
        floor, kind = config_floor(exp)
        floors[name] = (config_family(exp), floor, kind)
        print(f"  floor of {name:26s} {seconds(floor):>8s} s ({kind})", flush=True)
        groups.setdefault(r, []).append((name, cfg))
    timings: list[ConfigTiming] = []
    runs_wall = 0.0
    for r, group in groups.items():
        extra = (["--fast"] if fast else []) + (["--repeats", r] if r else [])
        args = ["run", *(str(cfg) for _, cfg in group), "--into", str(res), "--force", "-q", "--jobs", jobs, *extra]
        (res / "runs.json").unlink(missing_ok=True)      # an earlier group's
        t0 = time.perf_counter()
        proc = subprocess.Popen(dpexp(*args), cwd=REPO, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 15)   # the queue and its runs (their own session)
            _, err = proc.communicate()
        runs_wall += time.perf_counter() - t0
        print(err.strip(), flush=True)
        try:
            runs = {Path(d["config"]).stem: d for d in json.loads((res / "runs.json").read_text())["runs"]}
        except (OSError, ValueError):
            runs = {}
        for name, _ in group:
            family, floor, kind = floors[name]
            d = runs.get(name)
            if d is None:
                timings.append(ConfigTiming(name, family, float("inf"), 0.0, floor, kind, [],
                                            error=f"not run (stopped after {timeout:.0f} s?)" if timeout else "not run"))
                continue
            t = ConfigTiming(name, family, d["wall_s"], d["cpu_s"], floor, kind, [("run", int(d["peak_mib"] * 2**20))],
                             sys=d.get("sys_s"))
            if d["returncode"] not in (0, 1):   # 1: some cells failed (recorded), still a full run
                t.error = f"exit {d['returncode']}: {d['message']}"
            timings.append(t)
    # as make figures: every figure and the report, each table read once, in as many processes as the runs had
    figures = cli_step(["report", str(res), "--figures", str(figs), "--redraw", "--out", str(work / "report"),
                        "--jobs", jobs])
    slots = min(int(jobs) if int(jobs) > 0 else (os.cpu_count() or 1), max(len(g) for g in groups.values()))
    for line in format_table(timings, time.perf_counter() - t_all, figures, runs_wall, slots):
        print(line)


def host_phase_warnings(floor_before: float, floor_after: float, estimate: float, run_per_cell: float,
                        repeats: int = 50) -> list[str]:
    """Signs that the host's speed moved during the measurement (a shared VM goes through slower phases that last
    minutes; the fits are LAPACK-bound and the run mostly Python, so a phase can slow one far more than the other):
    the floors measured before and after the run differ by more than 10 %, or the run's CPU per cell is more than
    20 % above the in-process estimate of ``stage_breakdown`` taken minutes before it (two worker processes sharing
    the machine's caches put it 0-15 % above on an idle host; checked for runs of 20+ ``repeats`` only: the start of
    each process, ~2 s of CPU, is a tenth of the CPU of a 2-repeat run).  Either way the overhead ratio of that run
    says little on its own: compare it with other runs."""
    lines = []
    if abs(floor_after - floor_before) > 0.1 * min(floor_before, floor_after):
        lines.append(f"the two floors differ by {abs(floor_after - floor_before) / min(floor_before, floor_after):.0%}:"
                     " the host's speed moved; the overhead ratio below is only as good as the floor (compare it "
                     "with other runs' floors)")
    if repeats >= 20 and estimate > 0 and run_per_cell > 1.2 * estimate:
        lines.append(f"the run's CPU per cell ({run_per_cell * 1e6:.0f} us) is {run_per_cell / estimate - 1:.0%} above "
                     f"the in-process estimate taken before it ({estimate * 1e6:.0f} us; 0-15 % above on an idle "
                     "host): the host was probably slower during the run, so its overhead ratio is pessimistic "
                     "(compare it with other runs)")
    return lines


def bench_gdsc(exp, work: Path, how: list[str], extra: list[str]) -> None:
    """Parts 1-4 of the module docstring for gdsc_eps2."""
    floor, terms, other = fit_floor(exp)
    print(f"batched-fit floor of {GDSC.name} ({exp.n_cells:,} cells, {exp.spec.repeats} repeats): {floor:.1f} s "
          "(one core) =", flush=True)
    for kind, d, n, t in terms:
        print(f"  {kind:16s} d = {d:2d}: {n:9,} fits x {t * 1e6:6.1f} us = {n * t:6.1f} s")
    for label, n in other.items():
        print(f"  (not a fit of these kinds, not in the floor: {label}, {n:,} cells)")
    # warm the tuning cache (all sizes, two drugs) so the timed run is the runner, not the one-off tuning
    warm = [x for i in range(len(exp.datasets)) for x in ("--set", f"datasets[{i}].subsets={{first: 2}}")]
    subprocess.run(dpexp("run", str(GDSC), "--out", str(work / "warm"), "--force", "-q", "--jobs", "1",
                         "--repeats", "1", *warm),
                   cwd=REPO, env=env(), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    estimate = print_breakdown(GDSC.name, exp)
    cpu_by: dict[int, float] = {}
    wall, peaks, cpu_s = timed_run(GDSC, work / "gdsc_eps2", how, extra, cpu_by=cpu_by)
    size = sum(f.stat().st_size for f in (work / "gdsc_eps2").glob("results.csv*"))
    floor2, _, _ = fit_floor(exp)   # again: the machine may be shared; the faster one is the floor
    print(f"  (floor measured again after the run: {floor2:.1f} s)")
    cells = exp.n_cells
    for line in host_phase_warnings(floor, floor2, estimate, cpu_s / cells, exp.spec.repeats):
        print(f"  WARNING: {line}")
    floor = min(floor, floor2)
    print(f"full run of {GDSC.name}: {wall:.1f} s wall, {cpu_s:.0f} CPU-seconds in all its processes "
          f"({cells / wall:,.0f} cells/s, {cpu_s / cells * 1e6:.0f} us of CPU per cell; results {size / 1e6:.0f} MB;"
          f" load average {os.getloadavg()[0]:.1f} at the end)")
    print(f"overhead ratio = full run wall / batched-fit floor = {wall:.1f} / {floor:.1f} = "
          f"{wall / floor:.1f} (target <= 3)")
    print(f"  CPU ratio = CPU-seconds of the run / floor = {cpu_s / floor:.1f} (independent of the cores used "
          f"and of other load; the wall ratio on J idle cores is about this / J)")
    by_role: dict[str, float] = {}
    for pid, t in cpu_by.items():
        role = peaks.get(pid, ("other", 0))[0]
        by_role[role] = by_role.get(role, 0.0) + t
    print("  CPU by process kind: " + ", ".join(f"{role} {t:.0f} s ({t / cells * 1e6:.0f} us per cell)"
                                                for role, t in sorted(by_role.items(), key=lambda kv: -kv[1])))
    for pid, (name, hwm) in sorted(peaks.items(), key=lambda kv: -kv[1][1]):
        print(f"  peak RSS {name:13s} pid {pid}: {hwm / 2**20:7.0f} MiB (target < 2048 MiB)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--cluster", default=None, help="run on this Dask cluster (e.g. local:2) instead of --jobs")
    ap.add_argument("--repeats", type=int, default=None, help="override the repeats of gdsc_eps2 (and of --configs)")
    ap.add_argument("--slr", action="store_true", help="also time slr_oi.yaml's full run and its overhead ratio")
    ap.add_argument("--configs", nargs="*", default=[], help="also time these configs' full runs ('all': every one; "
                                                               "NAME:R runs R repeats and scales)")
    ap.add_argument("--timeout", type=float, default=None, help="stop a --configs run after this many seconds")
    ap.add_argument("--skip-gdsc", action="store_true", help="only the --slr / --configs parts")
    ap.add_argument("--fast", action="store_true", help="--configs: each config's `fast:` section (dpexp run --fast)")
    ap.add_argument("--keep", type=Path, default=None, metavar="DIR",
                    help="put the results, figures and report in DIR (a new or empty folder) and keep them, e.g. "
                         "to profile `dpexp report` on a full run afterwards")
    a = ap.parse_args()
    how = ["--cluster", a.cluster] if a.cluster else ["--jobs", str(a.jobs)]
    extra = ["--repeats", str(a.repeats)] if a.repeats else []
    if a.keep is not None:
        if a.keep.exists() and any(a.keep.iterdir()):
            ap.error(f"--keep {a.keep}: the folder is not empty")
        a.keep.mkdir(parents=True, exist_ok=True)
    work = a.keep.resolve() if a.keep is not None else Path(tempfile.mkdtemp(prefix="dpexp_bench_"))
    load1 = os.getloadavg()[0]
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               "?") if Path("/proc/cpuinfo").exists() else "?"
    print(f"machine: {os.cpu_count()} cores ({cpu}), load average {load1:.1f} at the start; runs with "
          f"{' '.join(how)}" + (f", --repeats {a.repeats}" if a.repeats else " --fast" if a.fast else " (full scale)"),
          flush=True)
    try:
        from dpexp.errors import UserError

        try:
            exp = load(GDSC, extra)
        except UserError as exc:  # e.g. no GDSC data here: say so, as the other benchmarks do
            print(f"paper-scale benchmark skipped: {exc}")
            return
        if not a.skip_gdsc:
            bench_gdsc(exp, work, how, extra)
        if a.slr:
            slr = REPO / "configs" / "slr_oi.yaml"
            sexp = load(slr, [])
            sfloor = algorithm_floor(sexp)
            w, pk, c = timed_run(slr, work / "slr_oi", how, [])
            print(f"full run of {slr.name}: {w:.1f} s wall, {c:.0f} CPU-seconds; time inside its algorithms "
                  f"(run_many, in process, sampled chunks) {sfloor:.1f} s; overhead ratio = {w:.1f} / {sfloor:.1f} "
                  f"= {w / sfloor:.2f}, CPU ratio {c / sfloor:.2f}; peak RSS of its largest process "
                  f"{max(h for _, h in pk.values()) / 2**20:.0f} MiB", flush=True)
        names = [p.stem for p in sorted((REPO / "configs").glob("*.yaml"))] if a.configs == ["all"] else a.configs
        if names:
            print(f"make figures as one measured run ({len(names)} configs, {' '.join(how)}"
                  f"{', --fast' if a.fast else ', full scale'}; results, figures and report in {work}):", flush=True)
            bench_figures(names, work, how, a.fast, a.timeout)
    finally:
        if a.keep is None:
            shutil.rmtree(work, ignore_errors=True)


def one_blas_thread():
    """A context in which this process's BLAS/LAPACK (OpenBLAS) uses one thread, as a run's workers do (joblib's loky
    sets OPENBLAS_NUM_THREADS=1 in each): the floors and the in-process chunks are then measured as the runs
    compute.  With the default two threads on 2 cores, a batched ``eigh`` of 41 × 41 matrices costs twice the CPU
    (493 µs against 246 µs each), which inflated the floors of large-d fits (gdsc_tradeoff_dim)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:   # not installed (it comes with the test extra): measure as the process is
        return contextlib.nullcontext()
    return threadpool_limits(limits=1)


if __name__ == "__main__":
    with one_blas_thread():
        main()
