"""Synthetic simple-linear-regression data of Alabi et al. (2020), §3.1.5 and Appendix D.2/E.1.

Model (one fresh dataset per repeat, drawn from the split ``rng``):

    x_i ~ N(x_mean, σx²)            (``x_dist: uniform`` gives U with the same mean and variance, as in §3.1.5)
    y_i = slope·x_i + intercept + e_i,   e_i ~ N(0, σe²)
    (x_i, y_i) clipped to [0, 1]²

Defaults follow the issue: x_mean = 0.5, slope = 0.5, intercept = 0.2 (Fig 16 uses x_mean = 0, intercept = 0.5).
The prediction points are ``x_new`` (default the pair (0.25, 0.75)); a single number gives one point (then the
whole ε goes to that one release).  ``y_test`` is the *true* line slope·x_new + intercept (before clipping), used by
the ``error_bound_true`` metrics.  ``n`` is ``sizes.n_private`` (nested prefixes of one draw of ``max_private`` rows).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field, field_validator

from dpexp.components import Dataset, Params, Preprocessing
from dpexp.errors import UserError
from dpexp.families.slr.datasets.uci import slr_split
from dpexp.registry import register_dataset
from dpexp.types import Sizes, Split


class _SynParams(Params):
    sigma_x2: float = Field(0.01, gt=0, description="variance of x (σx²)")
    sigma_e2: float = Field(0.005, ge=0, description="variance of the noise e (σe²)")
    x_new: float | list[float] = Field([0.25, 0.75], description="prediction point(s) in [0, 1]")
    x_mean: float = Field(0.5, description="mean of x")
    slope: float = Field(0.5, description="true slope α")
    intercept: float = Field(0.2, description="true intercept β")
    x_dist: Literal["normal", "uniform"] = Field("normal", description="distribution of x")

    @field_validator("x_new")
    @classmethod
    def _points(cls, v: float | list[float]) -> float | list[float]:
        pts = [v] if isinstance(v, (int, float)) else list(v)
        if not pts or any(not (0.0 <= float(p) <= 1.0) for p in pts):
            raise ValueError(f"x_new must be a number or non-empty list in [0, 1], got {v}")
        return v


@register_dataset
class SLRSynthetic(Dataset):
    """Synthetic SLR data (Alabi et al. §3.1.5): x ~ N(x_mean, σx²) (or uniform), y = slope·x + intercept +
    N(0, σe²), clipped to [0, 1]²; ``y_test`` = true line at ``x_new``.  Public facts in ``meta``: the true line
    and the generating parameters."""

    name = "synthetic"
    description = "simple-LR synthetic: x~N(0.5,sx2), y=0.5x+0.2+N(0,se2) clipped to [0,1]^2 (Alabi et al. Figs 10,11,16,18)"
    Params = _SynParams
    release_point = ("one fresh data set per repeat: a row's epsilon covers all predictions at x_new of one run on "
                     "it")

    def preprocessing(self) -> Preprocessing:
        return Preprocessing("", "nothing is computed across rows: each (x, y) is drawn independently and clipped "
                                 "to [0, 1]^2 on its own")

    @property
    def points(self) -> tuple[float, ...]:
        v = self.params.x_new
        return (float(v),) if isinstance(v, (int, float)) else tuple(float(p) for p in v)

    def split(self, subset: str, sizes: Sizes, rng: np.random.Generator) -> Split:
        if subset != "all":
            raise UserError(f"{self.name}: the only subset is 'all', got {subset!r}")
        n, n_max = int(sizes.n_private), int(max(sizes.max_private, sizes.n_private))
        if n < 2:
            raise UserError(f"{self.name}: sizes.n_private must be an integer >= 2 (n of the dataset), got {n}")
        p = self.params
        sd = float(np.sqrt(p.sigma_x2))
        if p.x_dist == "normal":
            x = p.x_mean + sd * rng.standard_normal(n_max)
        else:  # U[a, b] with mean x_mean and variance σx²: half-width sqrt(3)·σx
            x = p.x_mean + np.sqrt(3.0) * sd * rng.uniform(-1.0, 1.0, n_max)
        e = np.sqrt(p.sigma_e2) * rng.standard_normal(n_max)
        y = p.slope * x + p.intercept + e
        x, y = np.clip(x[:n], 0.0, 1.0), np.clip(y[:n], 0.0, 1.0)
        pts = np.asarray(self.points)
        meta = {"slope": p.slope, "intercept": p.intercept, "sigma_x2": p.sigma_x2, "sigma_e2": p.sigma_e2,
                "x_mean": p.x_mean, "true_coef": (p.slope, p.intercept)}
        full = Sizes(-1, 0, 0, n, 0, 0)
        return slr_split(x, y, full, rng, self.name, x_test=tuple(pts), y_test=p.slope * pts + p.intercept,
                         meta=meta)
