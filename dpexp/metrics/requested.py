"""The requested sizes of a cell as metric rows (``n_private_requested``, ``n_public_requested``).

A dataset that drops rows per subset (GDSC drops the cell lines a drug was not tested on) states the sizes the
config asked for in ``split.meta['n_requested']``; these metrics write them next to the cell's other metrics so a
plot can use the requested sizes as its axis (``dpexp/families/gdsc/plots.py: requested_sizes``).
"""

from __future__ import annotations

from dpexp.components import Metric
from dpexp.registry import register_metric
from dpexp.types import Output, Split


def _requested(split: Split, key: str, actual: int) -> float:
    req = split.meta.get("n_requested") or {}
    return float(req.get(key, actual))


def _requested_many(splits: list[Split], key: str, rows: str) -> list[float]:
    """``_requested`` of every split (``rows``: the attribute whose length is the actual size), without a method
    call per cell."""
    return [float((s.meta.get("n_requested") or {}).get(key, len(getattr(s, rows)))) for s in splits]


@register_metric
class NPrivateRequested(Metric):
    """The n_private the config asked for (a dataset may drop rows per subset — GDSC drops untested lines per
    drug — so the rows seen can be fewer)."""

    name = "n_private_requested"
    description = "requested n_private of the cell (x axis for GDSC plots)"

    def __call__(self, output: Output, split: Split) -> float:
        return _requested(split, "n_private", len(split.y_private))

    def many(self, outputs: list[Output], splits: list[Split]) -> list[float]:
        return _requested_many(splits, "n_private", "y_private")


@register_metric
class NPublicRequested(Metric):
    """The n_public the config asked for (see ``n_private_requested``)."""

    name = "n_public_requested"
    description = "requested n_public of the cell (x/y axis for GDSC plots)"

    def __call__(self, output: Output, split: Split) -> float:
        return _requested(split, "n_public", len(split.y_public))

    def many(self, outputs: list[Output], splits: list[Split]) -> list[float]:
        return _requested_many(splits, "n_public", "y_public")
