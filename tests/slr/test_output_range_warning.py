"""Issue 30 item 4: the DP Theil-Sen medians confine their release to [r_l, r_u]; data whose estimates fall
outside that range are said so, with counts, instead of being clamped silently."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpexp import registry
from dpexp.families.slr import checks
from dpexp.types import Split


def _split(y_scale: float) -> Split:
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, 20)
    y = (80 + 120 * x) if y_scale > 1 else x * 0.5 + 0.2
    return Split(x[:, None], y, np.empty((0, 1)), np.empty(0), np.array([[0.25], [0.75]]), np.full(2, np.nan))


@pytest.mark.parametrize("name", ["dp_exp_theil_sen", "dp_wide_theil_sen", "dp_ss_theil_sen"])
def test_estimates_outside_the_output_range_warn_with_counts(name, monkeypatch):
    monkeypatch.setattr(checks, "_WARNED_RANGE", set())
    alg = registry.get("algorithm", name)()
    with pytest.warns(checks.OutsideRangeWarning, match=rf"{name}: 190 of 190 pairwise estimates at x = 0.25 lie "
                                                        r"outside the output range \[r_l, r_u\] = \[-0.5, 1.5\] \(0 below, "
                                                        r"190 above\)") as w:
        out = alg.run(_split(120.0), 1.0, 0.0, np.random.default_rng(1), trials=3)
    assert len([x for x in w if issubclass(x.category, checks.OutsideRangeWarning)]) == 1   # once
    if name != "dp_ss_theil_sen":   # (the smooth-sensitivity median adds t noise after the clamp)
        assert np.all(out.predictions <= 1.5)       # the clamp the warning tells of
    with warnings.catch_warnings():
        warnings.simplefilter("error", checks.OutsideRangeWarning)
        monkeypatch.setattr(checks, "_WARNED_RANGE", set())
        alg.run(_split(1.0), 1.0, 0.0, np.random.default_rng(1), trials=3)   # data inside: silent
        z = np.r_[np.full(4, 9.0), np.full(6, 0.5)]      # 4 of 10 beyond the range: the median is inside, silent
        checks.warn_outside_range(name, z, -0.5, 1.5, 0.25)
    with pytest.warns(checks.OutsideRangeWarning, match=r"5 of 10 .* \(0 below, 5 above\)"):
        checks.warn_outside_range(name, np.r_[np.full(5, 9.0), np.full(5, 0.5), np.nan], -0.5, 1.5, 0.25)
