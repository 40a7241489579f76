"""Opportunity Insights (OI) data for DP simple linear regression (Alabi et al. 2020, §3.1.1 and Appendix A).

In every cell/tract the regression is child income rank (y) on parent income rank (x), both in [0, 1].

``source: microdata`` (default)
    The simulated microdata published by Opportunity Insights with Chetty & Friedman (2019):
    ``opportunity_insights/private_data_by_cells.csv`` (columns ``parent_rank, kid_rank, cell``), 10,000 people in
    111 cells. Each cell is a subset ``cell001`` … ``cell111``; all cells form one group (``meta["group_id"] =
    "oi_microdata"``) for the ``oi_mos`` heuristic.

``source: simulated``
    A state of census tracts generated as in Appendix A.1 (the IL/NC tract tables of the paper are not public):

    * tract size n_t = ⌊Exp(scale 52) + 20⌋;
    * tract parameters (public in the OI protocol, drawn here from documented, adjustable distributions):
      μ_t ~ LogNormal(``mu_logmean``, ``mu_logsd``²) (mean parent household income of the tract),
      β_t ~ N(``beta_mean``, ``beta_sd``²) (log-log intergenerational elasticity),
      α_t ~ N(``alpha_mean``, ``alpha_sd``²) (log child income of the tract at the reference parent log income
      ``alpha_center``, default ``mu_logmean``; see the child-income line below);
    * parent income y_it lognormal with tract mean μ_t and tract variance V = ``within_var_factor`` · Var(μ)
      (4 × the between-tract sample variance: within-tract sd ≈ 2 × between-tract sd), i.e.
      ln y_it ~ N(2 ln μ_t − ½ ln(V + μ_t²), −2 ln μ_t + ln(V + μ_t²));
    * child income: ln c_it = α_t + β_t (ln y_it − c) + e_i, e_i ~ N(0, 0.2²), c = ``alpha_center``.  This is
      the paper's ln c = α'_t + β_t ln y with α'_t = α_t − β_t c.  Centring matters when α, β are *drawn*: with the
      uncentred intercept drawn independently of β_t, sd(β_t)·ln y ≈ 0.1 × 11 ≈ 1.1 made the between-tract spread
      of ln child income ~ 3× the within-tract spread (≈ 0.36), and some tracts had every child at rank 0.01 (y constant,
      σ̂(p̂) = 0, Ĉ/σ̂ up to 1e18 in Fig 6).  Real tract estimates have α'_t and β_t strongly negatively correlated,
      which centring reproduces.  A ``tract_table`` holds the paper's raw intercepts α'_t: its default centre is 0;
    * x = parent percentile rank and y = child percentile rank within the *state* (rank/N rounded up to the 2nd
      decimal place, so both lie in (0, 1]);
    * OI release rule (Appendix A.2): a tract is kept only if it has at least ``min_count`` = 20 people and at
      least ``min_frac`` = 10% of its parent ranks lie above the state median parent rank and 10% below.

    Presets ``state: IL`` (3,108 tracts) and ``state: NC`` (2,195 tracts); ``n_tracts`` overrides the count.
    A real tract table can be plugged in with ``tract_table: path.csv`` (columns ``alpha, beta, mu`` and optionally
    ``tract`` and ``n``; a relative path is looked up in the data directory); then those parameters replace the
    drawn ones.  The state is a *fixed* dataset determined by its parameters and ``state_seed`` (like a staged
    file): it is generated once per process from the named stream ``dpexp.rng.stream(state_seed, "opportunity",
    state)`` and cached, so every tract, repeat and algorithm sees the same state and ``subsets()``/``n_rows()``
    are known before the run.  The split ``rng`` is used only when a subsample (``n_private`` > 0) is requested.
    Subsets are the released tracts ``t0000`` … (or the table's ``tract`` ids); all tracts of the state form one
    group for ``oi_mos``.

Privacy of the preprocessing (``preprocessing()``, on every row; docs/privacy.md "Preprocessing"): x and y are
percentile ranks, computed over all people (the national OI ranks of the microdata; the state's people for
``simulated``), and the A.2 release rule decides from every tract's rows which tracts are released.  Both are the OI
protocol (Alabi et al. take them as given), and both are statistics of the private rows used without paying for
them (one person moves the ranks of others by 1/N and can decide whether a tract is released), so every row says
``guarantee: none`` with the reason.  There is no public alternative here: ranks need the population.  Release
point: one cell/tract; cells are disjoint (parallel composition).

``meta["group_data"]`` is one list of ``(x, y)`` 1-D array pairs, one per subset of the group, built once per load
and shared by every split (``oi_mos`` maximises its local-sensitivity bound over it; not formally DP).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import Field

from dpexp import cache
from dpexp.components import Dataset, Params, Preprocessing
from dpexp.datasets.base import data_path, download
from dpexp.datasets.checks import require_finite
from dpexp.errors import UserError
from dpexp.families.slr.datasets.uci import slr_split
from dpexp.registry import register_dataset
from dpexp.rng import stream
from dpexp.types import Sizes, Split

MICRO_FILE = "opportunity_insights/private_data_by_cells.csv"
MICRO_DTA = "opportunity_insights/private_data_by_cells.dta"
MICRO_URL = ("https://raw.githubusercontent.com/OpportunityInsights/Differential-Privacy/"
             "4a357c7d5acc20347846b2c63e20a6d43832eb75/example_code_implementation_guide/private_data_by_cells.dta")
MICRO_DTA_SHA256 = "48b8dd734bfbe73942ba4d864c8b132936503eec73344c0e7fcb09ca27a4a91d"

STATE_TRACTS = {"IL": 3108, "NC": 2195}


class _OIParams(Params):
    source: Literal["microdata", "simulated"] = Field("microdata", description="OI microdata cells or tract generator")
    state: Literal["IL", "NC"] = Field("IL", description="preset of the simulated state (tract count)")
    n_tracts: int | None = Field(None, ge=1, description="number of tracts drawn (default: the state preset)")
    state_seed: int = Field(2020, ge=0, description="seed of the fixed simulated state")
    tract_table: str | None = Field(None, description="csv with columns alpha, beta, mu [, tract, n]")
    tract_scale: float = Field(52.0, gt=0, description="tract size ~ floor(Exp(scale) + tract_min)")
    tract_min: int = Field(20, ge=2, description="tract size offset")
    mu_logmean: float = Field(math.log(60000.0), description="mean of ln mu_t (tract mean parent income)")
    mu_logsd: float = Field(0.5, ge=0, description="sd of ln mu_t")
    beta_mean: float = Field(0.35, description="mean of the log-log slope beta_t")
    beta_sd: float = Field(0.10, ge=0, description="sd of beta_t")
    alpha_mean: float = math.log(40000.0)
    """mean of alpha_t, the tract's ln child income at parent log income alpha_center"""
    alpha_sd: float = Field(0.15, ge=0, description="sd of alpha_t (between-tract spread of ln child income)")
    alpha_center: float | None = None
    """parent log income at which alpha_t is the intercept (default: mu_logmean when drawn, 0 = raw log-log intercept
    with a tract_table)"""
    noise_sd: float = Field(0.20, ge=0, description="sd of e_i in ln child income")
    within_var_factor: float = Field(4.0, gt=0, description="within-tract var of parent income / Var(mu_t)")
    min_count: int = Field(20, ge=0, description="release rule: minimum tract size")
    min_frac: float = Field(0.10, ge=0, le=0.5, description="release rule: share above and below state median")


def _ranks(v: np.ndarray) -> np.ndarray:
    """Percentile rank within the state: rank/N rounded up to the 2nd decimal (ties share the lowest rank)."""
    order = np.sort(v)
    r = np.searchsorted(order, v, side="left") + 1
    return np.ceil(100.0 * r / len(v) - 1e-9) / 100.0


def release_rule(x: np.ndarray, state_median: float, min_count: int, min_frac: float) -> bool:
    """OI release rule (Alabi et al. App. A.2): ≥ ``min_count`` people and ≥ ``min_frac`` of the parent ranks
    strictly above the state median parent rank and ≥ ``min_frac`` strictly below."""
    n = len(x)
    if n < min_count or n == 0:
        return False
    return bool(np.mean(x > state_median) >= min_frac and np.mean(x < state_median) >= min_frac)


def _read_table(spec: str) -> pd.DataFrame:
    p = Path(spec)
    if not p.is_absolute() and not p.exists():
        p = data_path(spec)
    if not p.exists():
        raise UserError(f"opportunity: params.tract_table file not found, got {spec!r}")
    df = pd.read_csv(p)
    missing = {"alpha", "beta", "mu"} - set(df.columns)
    if missing:
        raise UserError(f"opportunity: params.tract_table must have columns alpha, beta, mu; missing {sorted(missing)}")
    require_finite(df, ["alpha", "beta", "mu"] + (["n"] if "n" in df.columns else []), p)
    if (df["mu"] <= 0).any():
        raise UserError("opportunity: params.tract_table column mu must be > 0")
    return df


def simulate_state(p: _OIParams) -> tuple[list[str], list[tuple[np.ndarray, np.ndarray]], dict]:
    """Generate a state following Appendix A.1 and apply the release rule; returns names, (x, y) per kept tract
    and a summary dict."""
    rng = stream(p.state_seed, "opportunity", p.state)
    # tract sizes and parameters are the simulated *data*, not privacy noise (nothing is released here)
    if p.tract_table is not None:
        tab = _read_table(p.tract_table)
        T = len(tab)
        names = [str(t) for t in tab["tract"]] if "tract" in tab.columns else [f"t{i:04d}" for i in range(T)]
        alpha, beta, mu = (tab[c].to_numpy(float) for c in ("alpha", "beta", "mu"))
        sizes = (tab["n"].to_numpy(int) if "n" in tab.columns
                 else np.floor(rng.exponential(p.tract_scale, T) + p.tract_min).astype(int))
    else:
        T = p.n_tracts or STATE_TRACTS[p.state]
        names = [f"t{i:04d}" for i in range(T)]
        sizes = np.floor(rng.exponential(p.tract_scale, T) + p.tract_min).astype(int)
        mu = np.exp(p.mu_logmean + p.mu_logsd * rng.standard_normal(T))
        beta = p.beta_mean + p.beta_sd * rng.standard_normal(T)
        alpha = p.alpha_mean + p.alpha_sd * rng.standard_normal(T)
    var_mu = float(np.var(mu, ddof=1)) if T > 1 else float(mu[0] ** 2)
    V = p.within_var_factor * var_mu
    m_log = 2.0 * np.log(mu) - 0.5 * np.log(V + mu**2)
    s_log = np.sqrt(np.maximum(-2.0 * np.log(mu) + np.log(V + mu**2), 0.0))
    tract = np.repeat(np.arange(T), sizes)
    N = len(tract)
    ln_parent = m_log[tract] + s_log[tract] * rng.standard_normal(N)
    center = p.alpha_center if p.alpha_center is not None else (0.0 if p.tract_table is not None else p.mu_logmean)
    ln_child = alpha[tract] + beta[tract] * (ln_parent - center) + p.noise_sd * rng.standard_normal(N)
    x_all, y_all = _ranks(ln_parent), _ranks(ln_child)  # ranks are invariant to the monotone exp()
    med = float(np.median(x_all))
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    kept_names, data = [], []
    for t in range(T):
        xs, ys = x_all[bounds[t]:bounds[t + 1]], y_all[bounds[t]:bounds[t + 1]]
        if release_rule(xs, med, p.min_count, p.min_frac):
            kept_names.append(names[t])
            data.append((xs, ys))
    summary = {"tracts_drawn": T, "tracts_released": len(kept_names), "people": N, "state_median_rank": med}
    return kept_names, data, summary


@cache.memoize("slr.opportunity", maxsize=8)
def _load(params_json: str, micro_path: str | None) -> tuple[list[str], list[tuple[np.ndarray, np.ndarray]], dict]:
    p = _OIParams.model_validate_json(params_json)
    if p.source == "simulated":
        return simulate_state(p)
    df = pd.read_csv(micro_path)
    missing = {"parent_rank", "kid_rank", "cell"} - set(df.columns)
    if missing:
        raise UserError(f"{micro_path}: OI microdata lacks columns {sorted(missing)}")
    require_finite(df, ["parent_rank", "kid_rank", "cell"], micro_path)
    names, data = [], []
    for cell, g in df.groupby("cell", sort=True):
        names.append(f"cell{int(cell):03d}")
        data.append((g["parent_rank"].to_numpy(float), g["kid_rank"].to_numpy(float)))
    return names, data, {"cells": len(names), "people": int(len(df))}


@register_dataset
class Opportunity(Dataset):
    """Opportunity Insights parent-rank → child-rank data (Alabi et al. §3.1.1, App. A): the published OI
    simulated microdata (111 cells) or an Appendix-A.1 tract generator with the A.2 release rule (see module doc).
    Each cell/tract is a subset; ``meta`` carries ``group_id``/``group_data`` for the ``oi_mos`` heuristic."""

    name = "opportunity"
    description = "Opportunity Insights ranks: OI microdata cells or simulated IL/NC tracts (Alabi et al. Fig 6, 13-15)"
    download_hint = "dpexp data download opportunity"
    release_point = ("one cell/tract: a row's epsilon covers both predictions (p25, p75) of one tract; the {n} "
                     "tracts are disjoint groups of people, so by parallel composition it is also each person's loss")
    data_files = {MICRO_DTA: MICRO_DTA_SHA256, MICRO_FILE: None}   # the csv is derived from the .dta
    Params = _OIParams

    def preprocessing(self) -> Preprocessing:
        return Preprocessing(
            "percentile ranks and the OI release rule over all people incl. private rows (the paper's protocol), "
            "not DP",
            "x and y are percentile ranks computed over all people (the national OI ranks of the microdata; the "
            "simulated state's people for source: simulated) and the OI release rule (>= min_count people, >= "
            "min_frac above and below the state median parent rank) selects the released tracts from every "
            "tract's rows. Both are the Opportunity Insights protocol (as Alabi et al. 2020) and read the private "
            "rows at no cost: not DP (guarantee none on every row). oi_mos additionally reads every tract for its "
            "noise scale.",
            leaks=True)

    def _data(self) -> tuple[list[str], list[tuple[np.ndarray, np.ndarray]], dict]:
        return _load(*self._data_key())

    def _data_key(self) -> tuple[str, str | None]:
        """What the loaded data are a function of (``_load``'s arguments): the parameters and the microdata file."""
        micro = None
        if self.params.source == "microdata":
            micro = str(data_path(MICRO_FILE, self.download_hint).resolve())
        return self.params.model_dump_json(), micro

    @property
    def group_id(self) -> str:
        return "oi_microdata" if self.params.source == "microdata" else f"state_{self.params.state}"

    def check(self) -> None:
        names, _, _ = self._data()
        if not names:
            raise UserError("opportunity: no tract passes the release rule; lower params.min_count/min_frac")

    def subsets(self) -> list[str]:
        return list(self._data()[0])

    def _index(self, subset: str) -> int:
        names = self._data()[0]
        try:
            return names.index(subset)
        except ValueError:
            raise UserError(f"opportunity: unknown subset {subset!r}; valid: {names[0]} … {names[-1]} "
                            f"({len(names)} in all)") from None

    def n_rows(self, subset: str) -> int | None:
        return len(self._data()[1][self._index(subset)][0])

    def split(self, subset: str, sizes: Sizes, rng: np.random.Generator) -> Split:
        key = self._data_key()
        names, data, summary = _load(*key)
        x, y = data[self._index(subset)]
        meta = {"subset": subset, "group_id": self.group_id, "group_data": data, "group_key": key,
                "source": self.params.source}
        return slr_split(x, y, sizes, rng, f"{self.name}/{subset}", meta=meta)

    @classmethod
    def download(cls, dest: Path) -> list[Path]:
        """Fetch the OI microdata (.dta, SHA-256 verified) and write the csv the loader reads."""
        dta = download(MICRO_URL, Path(dest) / MICRO_DTA, sha256=MICRO_DTA_SHA256)
        out = Path(dest) / MICRO_FILE
        pd.read_stata(dta).to_csv(out, index=False, float_format="%.9g")
        return [dta, out]
