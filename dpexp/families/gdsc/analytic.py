"""The analytic budget split and clipping multipliers of the robust private LR family (``split: analytic`` of
``rplr`` and ``narplr``): ``dpexp.models.budget_split.analytic_split`` for a test case (n, d, ε), cached in memory
and on disk beside the auxiliary-data tuning (``dpexp.cache``, namespace ``tuning``).

The analytic choice maximises a closed-form expected test correlation of the noise-aware posterior under the
paper's auxiliary-data model (Eq. 10; docs/noise_aware.md §7): no auxiliary data are simulated, no private row is
read, nothing is spent.  ``prior_sd`` is the design uncertainty the score assumes (``rel_sd = corr_sd``): a
confident design prior (0.1) gives rplr's tuned split (XᵀX is then nearly known: spend on Xᵀy), an uncertain one
(0.3) moves budget to XᵀX.
"""

from __future__ import annotations

from typing import Any

from dpexp import cache
from dpexp.errors import UserError
from dpexp.families.gdsc.tuning import CACHE_NAMESPACE, cache_key
from dpexp.models.budget_split import analytic_split


def analytic_choice(n: int, d: int, epsilon: float, prior_sd: float = 0.1, use_disk: bool = True,
                    sensitivity: str = "tight") -> dict[str, Any]:
    """``{"p1", "p2", "p3", "omega_x", "omega_y", "score"}`` of ``analytic_split(n, d, ε, rel_sd = corr_sd =
    prior_sd)`` for the release's XᵀX ``sensitivity`` rule (``stats.sensitivities``; in the key when ``tight``,
    so the keys of the paper rule are those stored before the rule existed); n is raised to d + 2 (the smallest
    case the score is defined for)."""
    if not (d >= 1 and epsilon > 0 and prior_sd >= 0):
        raise UserError(f"the analytic split needs d >= 1, epsilon > 0, prior_sd >= 0, got d={d}, "
                        f"epsilon={epsilon}, prior_sd={prior_sd}")
    n = max(int(n), d + 2)
    key: dict[str, Any] = dict(n=n, d=int(d), epsilon=float(epsilon), prior_sd=float(prior_sd))
    if sensitivity == "tight":
        key["sensitivity"] = "tight"

    def compute() -> dict[str, Any]:
        r = analytic_split(n, int(d), float(epsilon), rel_sd=float(prior_sd), corr_sd=float(prior_sd),
                           sensitivity=sensitivity)
        return {**{k: round(float(r[k]), 10) for k in ("p1", "p2", "p3", "omega_x", "omega_y", "score")}, "key": key}

    value, hit = cache.stored(CACHE_NAMESPACE, cache_key("analytic_split", **key), compute, use_disk,
                              describe=f"analytic budget split (closed form, no data; n={n}, d={d}, epsilon={epsilon})")
    return {**value, "cache_hit": hit}
