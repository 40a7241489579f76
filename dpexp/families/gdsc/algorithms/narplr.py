"""Noise-aware robust private LR (``narplr``): rplr's release, with a posterior that knows the release is noisy
(issue 15; docs/noise_aware.md).

Release: *exactly* rplr's (``RobustPrivateLR.release``: the same clipping bounds B = ω·σ, σ handling, budget split
and Laplace draws through the ledger, in the same order), so the privacy cost is rplr's by construction: ε-DP under
replace-one neighbours of the private rows with the default ``sigma: dp``, not DP with ``sigma: data``.  Everything
after the release is post-processing of (XᵀX + L, Xᵀy + L, yᵀy + L), the public Laplace scales, the public rows and
public facts.

Inference: model G of ``dpexp.models.noise_aware`` — the Laplace noise is part of the likelihood, the latent private
Gram matrix has a prior from public facts, and the exact statistics of the public rows enter their own exact
likelihood term (they are *not* added to the noisy ones as rplr does).  ``inference: gaussian`` (default) is the
errors-in-variables Gaussian approximation (``noise_aware_fast.fit_gaussian``: deterministic, ~0.1 ms per problem
of a call over drugs × trials); ``inference: gibbs`` is the exact-for-model-G batched Gibbs sampler
(``noise_aware.sample_posterior``; far slower), drawing its inference randomness (not privacy noise) from each
split's ``ledger.noise.generator`` through ``RowStreams``, so a split's draws do not depend on its chunk.

Public rows: clipped with the private rows' bounds (``clip_public: true``, default), so the public and private
statistics describe the same regression of clipped y on clipped x (rplr adds unclipped public statistics to the
clipped private ones: two different regressions in one sum).  ``clip_public: false`` keeps rplr's unclipped ones.

Design prior (the latent Gram matrix; at rplr's split XᵀX gets 5 % of ε and its release says little, so this prior
does most of the work):

* ``design: independent`` — features independent N(0, σ_x²) clipped at B_x (the paper's auxiliary-data model;
  ``gram_prior.clipped_gaussian_gram_prior``), with ``design_sd`` the prior uncertainty of each feature's scale and
  of every correlation (σ_x: the σ the bounds were built from — the DP σ̂ or, with ``sigma: data``, the data σ);
* ``design: public`` — estimated from the clipped public rows (``gram_prior.empirical_gram_prior``: their second
  moments with their standard errors, floored at the independent model's per-row variances): correlated features
  (GDSC genes) without any assumption beyond the public rows.

Precisions: ``precision_prior: scaled`` (default) restates the paper's Gamma(2, 2), stated for Eq. 10 data in raw
units, for the clipped data in their own units (``gram_prior.clipping_scaled_prior`` with the σ_x, σ_y the bounds
were built from: unit-norm rows have σ_x = 1/√d, so coefficients d^½ times larger than Eq. 10's), ``clipped`` for
clipping only (Eq. 10 units assumed), ``paper`` uses Gamma(2, 2) as is.  What is estimated: the population
regression of clipped y on clipped x (docs/noise_aware.md §2.3); ``Output.clip_bounds`` says at which bounds.
Outputs: posterior-mean coefficients and predictions, credible intervals of the coefficients and of the regression
function at the test rows (``dpexp.models.intervals.LEVELS``).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from dpexp.audit.plan import AuditPlan
from dpexp.chunk import ChunkRows
from dpexp.errors import UserError
from dpexp.families.gdsc.algorithms.rplr import (Release, RobustPrivateLR, _clip_bounds_many, _RPLRParams,
                                                _whole_batch)
from dpexp.families.gdsc.audit import clipped_statistics
from dpexp.families.gdsc.model import public_posteriors
from dpexp.families.gdsc.stats import sensitivities
from dpexp.models.gram_prior import (GramPrior, clipped_gaussian_gram_prior, clipping_scaled_prior,
                                     empirical_gram_prior)
from dpexp.models.intervals import draw_intervals, gaussian_intervals_many, lazy_gaussian_intervals
from dpexp.models.noise_aware import ExactStats, NoisyStats, sample_posterior
from dpexp.models.row_streams import RowStreams
from dpexp.models.vb import PAPER_PRIOR, VBResult
from dpexp.privacy.ledger import as_ledger
from dpexp.registry import register_algorithm
from dpexp.types import Output, Split

#: rplr parameters that choose its *inference*, not its release: they do not apply here
_RPLR_INFERENCE = ("prior", "engine", "stabilize", "lam", "lam0", "solver")


def fit_gaussian(*args: Any, **kwargs: Any) -> Any:
    """``dpexp.models.noise_aware_fast.fit_gaussian``, imported at the first fit: that module loads numba (≈ 0.5 s a
    process), which a run without ``narplr`` need not pay."""
    from dpexp.models.noise_aware_fast import fit_gaussian as fit

    return fit(*args, **kwargs)


class _NARPLRParams(_RPLRParams):
    inference: Literal["gaussian", "gibbs"] = "gaussian"
    """fast errors-in-variables Gaussian approximation (default) or the batched Gibbs sampler of model G (exact for the
    model, ~70x slower)"""
    design: Literal["independent", "public"] = "independent"
    """prior of the private Gram matrix: independent clipped-normal features (design_sd) or estimated from the clipped
    public rows (correlated features)"""
    design_sd: float = Field(0.1, ge=0, le=10)
    """design: independent: prior sd of each feature's relative scale and of every correlation (0 = the model is
    exact)"""
    precision_prior: Literal["scaled", "clipped", "paper"] = "scaled"
    """Gamma priors of lambda, lambda0: the paper's Gamma(2,2) restated for the clipped data in their own units (scaled:
    sigma_x, sigma_y of the bounds), for clipping only (clipped: Eq. 10 units assumed) or as is (paper)"""
    clip_public: bool = True
    """clip the public rows with the private rows' bounds (one regression of clipped data) or use them unclipped as rplr
    does"""
    gibbs: tuple[int, int, int] = (200, 300, 2)
    """inference: gibbs: kept draws, burn-in sweeps, thinning"""

    @model_validator(mode="after")
    def _no_rplr_inference(self) -> "_NARPLRParams":
        given = sorted(set(self.model_fields_set) & set(_RPLR_INFERENCE))
        if given:
            raise ValueError(f"{', '.join(given)}: rplr's inference settings do not apply to narplr (its inference "
                             "is set by inference, design, design_sd, precision_prior)")
        if min(self.gibbs) < 1:
            raise ValueError(f"gibbs (draws, burn_in, thin) must be >= 1 each, got {self.gibbs}")
        return self


def _trials(x: Any, trials: int) -> np.ndarray:
    """A float or (trials,) array as a (trials,) array."""
    return np.broadcast_to(np.asarray(x, dtype=float), (trials,)).astype(float)


def _stack_trials(xs: list[Any], trials: int) -> np.ndarray:
    """``np.stack([_trials(x, trials) for x in xs])`` (S, trials) in one conversion when the xs are all floats or
    all arrays of one shape (the releases of one batch); the same values."""
    try:
        a = np.array(xs, dtype=float)
    except ValueError:   # mixed shapes
        return np.stack([_trials(x, trials) for x in xs])
    if a.ndim == 1:
        a = a[:, None]
    return a if a.shape == (len(xs), trials) else np.broadcast_to(a, (len(xs), trials)).copy()


def _clipped_public_stats(Xs: list[np.ndarray], ys: list[np.ndarray], B_x: np.ndarray, B_y: np.ndarray
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``ExactStats.of`` of each row set (X (m_i, d), y (m_i)) clipped per trial at its bounds B_x, B_y (S, T) as
    ``release_batch.clipped_rows`` clips it, stacked: (S, T, d, d), (S, T, d), (S, T).  The sets of one shape are
    clipped as one stacked array (G, T, m, d), the layout ``np.stack`` gives their clipped pieces, and share one
    stacked call, equal to the bit to their own calls (np.clip is elementwise; numpy's stacked matmul and einsum sum
    each set's products in the order of its own call: tests/gdsc/test_release_batch.py); a lone set of its shape is
    its own (T, m, d) call."""
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, X in enumerate(Xs):
        groups.setdefault(X.shape, []).append(i)
    S, T = B_x.shape
    d = Xs[0].shape[1]
    XX, Xy, yy = np.empty((S, T, d, d)), np.empty((S, T, d)), np.empty((S, T))
    for (m, _), idx in groups.items():
        G = len(idx)
        # C order, as np.stack gives the clipped pieces (Fortran-ordered sets, alone or concatenated, would keep
        # their order through the clip and the products below take another BLAS call); C-ordered ones: no copy
        X = np.ascontiguousarray(Xs[idx[0]] if G == 1 else np.concatenate([Xs[i] for i in idx]))
        y = np.ascontiguousarray(ys[idx[0]] if G == 1 else np.concatenate([ys[i] for i in idx]))
        X, y = X.reshape(G, 1, m, d), y.reshape(G, 1, m)
        bx, by = B_x[idx][:, :, None], B_y[idx][:, :, None]     # (G, T, 1)
        Xc = np.clip(X, -bx[..., None], bx[..., None])           # (G, T, m, d)
        yc = np.clip(y, -by, by)
        q = ExactStats.of(Xc[0], yc[0]) if G == 1 else ExactStats.of(Xc, yc)
        XX[idx], Xy[idx], yy[idx] = q.XX, q.Xy, q.yy
    return XX, Xy, yy


@register_algorithm
class NoiseAwareRPLR(RobustPrivateLR):
    """Noise-aware robust private LR: rplr's release (same statistics, same ledger spends, so the same guarantee),
    posterior of model G with the Laplace noise in the likelihood and the public statistics exact (module
    docstring).  Pure ε-DP under replace-one neighbours with ``sigma: dp`` (default); ``sigma: data`` (the paper's
    protocol) is not DP.  Release parameters as rplr (split, thresholds, σ, ``split: analytic``); inference
    parameters ``inference``, ``design``, ``design_sd``, ``precision_prior``, ``clip_public``, ``gibbs``."""

    name = "narplr"
    family = "gdsc"
    audit = AuditPlan(design=clipped_statistics, params={"p1": 0.35, "p2": 0.6, "p3": 0.05, "omega_x": 1.0,
                                                         "omega_y": 1.0})
    description = "noise-aware robust private LR: rplr's release, posterior that models the Laplace noise"
    guarantee_text = ("pure ε-DP, replace-one (rplr's release, inference is post-processing); "
                      "sigma: data → not DP (clipping σ from private rows, the paper's protocol)")
    Params = _NARPLRParams

    # ------------------------------------------------------------------------------------------ model inputs
    def _problem(self, split: Split, r: Release, trials: int) -> dict[str, Any]:
        """The model's inputs for one split, every array with a leading (trials,) axis."""
        p = self.params
        d = split.d
        n = float(split.X_private.shape[0])
        Bx, By = _trials(r.B_x, trials), _trials(r.B_y, trials)
        s_xx, s_xy, s_yy = sensitivities(d, Bx, By, p.sensitivity)   # the scales rplr's release drew at
        p1, p2, p3 = r.split
        Xp, yp = split.X_public, split.y_public
        if p.clip_public:
            Xc = np.clip(Xp[None], -Bx[:, None, None], Bx[:, None, None])
            yc = np.clip(yp[None], -By[:, None], By[:, None])
            pub = ExactStats.of(Xc, yc)
            pub = ExactStats(pub.XX, pub.Xy, pub.yy, np.full(trials, float(Xp.shape[0])))
        else:
            Xc = np.broadcast_to(Xp, (trials,) + Xp.shape)
            XXp, Xyp, yyp = r.public
            pub = ExactStats(np.broadcast_to(XXp, (trials, d, d)), np.broadcast_to(Xyp, (trials, d)),
                             np.full(trials, yyp), np.full(trials, float(Xp.shape[0])))
        sx = _trials(r.sigma_x, trials)
        if p.design == "independent":
            gram = clipped_gaussian_gram_prior(n, d, Bx, sx, p.design_sd, p.design_sd)
        else:
            if Xp.shape[0] < 2:
                raise UserError(f"narplr design: public needs at least 2 public rows, got {Xp.shape[0]}")
            floor = clipped_gaussian_gram_prior(1.0, d, Bx, sx, 0.0, 0.0).var
            gram = empirical_gram_prior(np.clip(Xc, -Bx[:, None, None], Bx[:, None, None]), n, floor)
        wx, wy = r.extras["omega_x"], r.extras["omega_y"]
        if p.precision_prior == "scaled":
            prior = clipping_scaled_prior(wx, wy, units=(sx, _trials(r.sigma_y, trials), d))
        elif p.precision_prior == "clipped":
            prior = clipping_scaled_prior(wx, wy)
        else:
            prior = PAPER_PRIOR
        prior = tuple(np.broadcast_to(np.asarray(v, dtype=float), (trials,)) for v in prior)
        return {"XX": r.XX, "Xy": r.Xy, "yy": r.yy, "n": np.full(trials, n),
                "b_xx": s_xx / (p1 * r.eps), "b_xy": s_xy / (p2 * r.eps), "b_yy": s_yy / (p3 * r.eps),
                "pXX": pub.XX, "pXy": pub.Xy, "pyy": pub.yy, "pn": pub.n,
                "gm": np.broadcast_to(gram.mean, (trials, d, d)), "gv": np.broadcast_to(gram.var, (trials, d, d)),
                "prior": prior}

    def _problems(self, splits: list[Split], rs: list[Release], trials: int) -> dict[str, Any]:
        """``_problem`` of splits of equal d, stacked over a leading (splits,) axis (equal to the bit to stacking the
        per-split problems: the products over a split's rows per split, the elementwise work stacked)."""
        p = self.params
        if p.design != "independent":
            probs = [self._problem(s, r, trials) for s, r in zip(splits, rs)]
            st = {k: np.stack([pr[k] for pr in probs]) for k in probs[0] if k != "prior"}
            st["prior"] = tuple(np.stack([pr["prior"][i] for pr in probs]) for i in range(4))
            return st
        d, S = splits[0].d, len(splits)
        n = np.array([float(s.X_private.shape[0]) for s in splits])[:, None]
        # all rows of one batched release with σ̂ drawn per trial, in order: its (S, T) arrays are the stacks
        g = tok[0] if (tok := _whole_batch(rs)) is not None and tok[0].B_x.shape == (S, trials) else None
        if g is not None:
            Bx, By, sx = g.B_x, g.B_y, g.sigma_x
        else:
            Bx = _stack_trials([r.B_x for r in rs], trials)
            By = _stack_trials([r.B_y for r in rs], trials)
            sx = _stack_trials([r.sigma_x for r in rs], trials)
        s_xx, s_xy, s_yy = sensitivities(d, Bx, By, p.sensitivity)   # the scales rplr's release drew at
        e = np.array([[r.split[0] * r.eps, r.split[1] * r.eps, r.split[2] * r.eps] for r in rs])
        m = np.array([float(s.X_public.shape[0]) for s in splits])
        if p.clip_public:
            pXX, pXy, pyy = _clipped_public_stats([s.X_public for s in splits], [s.y_public for s in splits], Bx, By)
        else:
            pXX = np.broadcast_to(np.stack([r.public[0] for r in rs])[:, None], (S, trials, d, d))
            pXy = np.broadcast_to(np.stack([r.public[1] for r in rs])[:, None], (S, trials, d))
            pyy = np.broadcast_to(np.array([r.public[2] for r in rs], dtype=float)[:, None], (S, trials))
        gram = clipped_gaussian_gram_prior(np.broadcast_to(n, (S, trials)), d, Bx, sx, p.design_sd, p.design_sd)
        wx = np.array([r.extras["omega_x"] for r in rs])[:, None]
        wy = np.array([r.extras["omega_y"] for r in rs])[:, None]
        if p.precision_prior == "scaled":
            sy = g.sigma_y if g is not None else _stack_trials([r.sigma_y for r in rs], trials)
            prior = clipping_scaled_prior(wx, wy, units=(sx, sy, d))
        elif p.precision_prior == "clipped":
            prior = clipping_scaled_prior(wx, wy)
        else:
            prior = PAPER_PRIOR
        prior = tuple(np.broadcast_to(np.asarray(v, dtype=float), (S, trials)) for v in prior)
        if g is not None:   # the released arrays themselves (read, never written, by the fit)
            XX, Xy, yy = g.XX, g.Xy, g.yy
        else:
            XX, Xy, yy = np.stack([r.XX for r in rs]), np.stack([r.Xy for r in rs]), np.stack([r.yy for r in rs])
        return {"XX": XX, "Xy": Xy, "yy": yy, "n": np.broadcast_to(n, (S, trials)),
                "b_xx": s_xx / e[:, :1], "b_xy": s_xy / e[:, 1:2], "b_yy": s_yy / e[:, 2:],
                "pXX": pXX, "pXy": pXy, "pyy": pyy, "pn": np.broadcast_to(m[:, None], (S, trials)),
                "gm": gram.mean, "gv": gram.var, "prior": prior}

    def _fit(self, st: dict[str, Any], gens: list[np.random.Generator], trials: int):
        """Posterior of a group of S splits of equal d (``_problems``), batched over (splits, trials): (mean, cov)
        for ``gaussian`` (cov (S, trials, d, d)), (draws, None) for ``gibbs`` (draws (S, trials, n_draws, d)); and
        extras per split."""
        S = len(gens)
        prior = st["prior"]
        stats = NoisyStats(st["XX"], st["Xy"], st["yy"], st["n"], st["b_xx"], st["b_xy"], st["b_yy"])
        public = ExactStats(st["pXX"], st["pXy"], st["pyy"], st["pn"])
        gram = GramPrior(st["gm"], st["gv"])
        p = self.params
        if p.inference == "gaussian":
            post = fit_gaussian(stats, public, gram, prior)
            conv = post.converged.reshape(S, trials).mean(axis=1)
            return post.mean, post.cov, [{"na_converged": float(c)} for c in conv]
        draws, burn, thin = p.gibbs
        rng = RowStreams(gens, [trials] * S)
        post = sample_posterior(stats, rng, public=public, gram_prior=gram, prior=prior, n_draws=draws,
                                burn_in=burn, thin=thin)
        ex = [{f"accept_{k}": float(np.mean(v[i])) for k, v in post.accept.items()} for i in range(S)]
        return post.w, None, ex

    # ---------------------------------------------------------------------------------------------- running
    def run_many(self, splits: list[Split], epsilon: float, delta: float, ledgers: list,
                 trials: int = 1, chunk: ChunkRows | None = None) -> list[Output | Exception]:
        """Release each split through its own ledger (rplr's draws, in rplr's order: ``release_many``), then fit
        the noise-aware posterior of all splits × trials of equal d in one batched call."""
        p = self.params
        ledgers = [as_ledger(lg) for lg in ledgers]
        out: list[Output | Exception] = [UserError("not run")] * len(splits)
        groups: dict[int, list[tuple[int, Release]]] = {}
        # with clip_public the model clips the public rows itself (``_problems``): the release need not sum them
        rels = self.release_many(splits, epsilon, ledgers, trials, public_stats=not p.clip_public, chunk=chunk)
        pub = [k for k, r in enumerate(rels) if not isinstance(r, Exception) and r.B_x is None]
        posts = dict(zip(pub, public_posteriors([splits[k].X_public for k in pub], [splits[k].y_public for k in pub])))
        for k, (s, r) in enumerate(zip(splits, rels)):
            try:
                if isinstance(r, Exception):
                    raise r
                if r.B_x is None:                     # no private rows: the public-only posterior
                    out[k] = self._public_only(s, r, ledgers[k], trials, posts[k])
                    continue
                if p.inference == "gibbs" and s.X_private.shape[0] < s.d + 2:
                    raise UserError(f"narplr inference: gibbs needs n_private >= d + 2 = {s.d + 2}, got "
                                    f"{s.X_private.shape[0]}")
                groups.setdefault(s.d, []).append((k, r))
            except Exception as exc:  # recorded per cell
                out[k] = exc
        for d, items in groups.items():
            ss, rs = [splits[k] for k, _ in items], [r for _, r in items]
            try:
                centre, cov, ex = self._fit(self._problems(ss, rs, trials),
                                            [ledgers[k].noise.generator for k, _ in items], trials)
                X_tests = [s.X_test for s in ss]
                bands = gaussian_intervals_many(centre, cov, X_tests) if cov is not None else None
            except Exception as exc:   # recorded for the cells of the group (counted in the manifest)
                for k, _ in items:
                    out[k] = exc
                continue
            bounds = _clip_bounds_many(rs, trials)
            for j, (k, r) in enumerate(items):
                if bands is not None:
                    w = centre[j]
                    pred, ci, pi = bands[j]
                else:
                    w = centre[j].mean(axis=-2)
                    ci, pi = draw_intervals(centre[j], X_tests[j])
                    pred = w @ X_tests[j].T
                out[k] = Output(predictions=pred, coef=w, extras={**r.extras, **ex[j]},
                                guarantee=ledgers[k].guarantee(), coef_interval=ci, pred_interval=pi,
                                clip_bounds=bounds[j])
        return out

    def _public_only(self, split: Split, r: Release, ledger, trials: int, res: VBResult | Exception) -> Output:
        """No private rows (nothing released): the Gamma-prior posterior of the public rows alone (``fit_vb``;
        ``res``: its ``public_posteriors`` value or error)."""
        if isinstance(res, Exception):
            raise res
        w = np.broadcast_to(res.mean, (trials, split.d))
        cov = np.broadcast_to(res.cov, (trials, split.d, split.d))
        ci, pi = lazy_gaussian_intervals(w, cov, split.X_test)
        return Output(predictions=w @ split.X_test.T, coef=w.copy(), extras=dict(r.extras),
                      guarantee=ledger.guarantee(), coef_interval=ci, pred_interval=pi)
