"""The requested sizes of a cell as metric rows (``n_private_requested``, ``n_public_requested``).

A dataset that drops rows per subset (GDSC drops the cell lines a drug was not tested on) states the sizes the
config asked for in ``split.meta['n_requested']``; these metrics write them next to the cell's other metrics so a
plot can use the requested sizes as its axis (``dpexp/families/gdsc/plots.py: requested_sizes``).  Every row of the
present results schema carries them as the ``n_*_requested`` columns, which the plots read first, so the shipped
configs no longer ask for these metrics; they stay for configs of one's own that want the sizes as metric rows.
"""

from __future__ import annotations

from dpexp.components import Metric
from dpexp.registry import register_metric
from dpexp.types import Output, Split


class _Requested(Metric):
    """``split.meta['n_requested'][key]``, else the number of rows the split has in ``rows`` (a dataset that keeps
    every row it was asked for states nothing)."""

    key: str
    rows: str

    def __call__(self, output: Output, split: Split) -> float:
        return self.many([output], [split])[0]

    def many(self, outputs: list[Output], splits: list[Split]) -> list[float]:
        # a split is shared by every algorithm and budget of its size: read once per split object
        of: dict[int, float] = {}
        vals = []
        for s in splits:
            v = of.get(id(s))
            if v is None:
                v = of[id(s)] = float((s.meta.get("n_requested") or {}).get(self.key, len(getattr(s, self.rows))))
            vals.append(v)
        return vals


@register_metric
class NPrivateRequested(_Requested):
    """The n_private the config asked for (a dataset may drop rows per subset — GDSC drops untested lines per
    drug — so the rows seen can be fewer)."""

    name = "n_private_requested"
    description = "requested n_private of the cell (x axis for GDSC plots)"
    key, rows = "n_private", "y_private"


@register_metric
class NPublicRequested(_Requested):
    """The n_public the config asked for (see ``n_private_requested``)."""

    name = "n_public_requested"
    description = "requested n_public of the cell (x/y axis for GDSC plots)"
    key, rows = "n_public", "y_public"
