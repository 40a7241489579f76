"""Heat-map helper shared by plot kinds that map a metric over two variables (GDSC Figs. 3 and 5).

Cells are annotated in a colour chosen against the cell's own colour (``style.contrast_text``) at the style's
small font, or not at all when the cells are too small to hold the numbers (the figure says so).  Empty cells
(grid points that were not run) stay blank.  The optimum's cell is framed (white inside black, visible on every
colour, its number still readable) and reported in the returned value (the caller says it in the subtitle or a
note, never in a legend that covers cells).  ``center`` puts a diverging colour map's middle at a value (0 for
differences to a baseline), symmetric about it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from dpexp.plotting import style
from dpexp.plotting.base import new_figure
from dpexp.plotting.layout import lay_out, text_width


@dataclass
class Optimum:
    x: Any
    y: Any
    value: float


def _number(v: float, fmt: str) -> str:
    """``v`` formatted, without the sign of a value that rounds to zero ('-0.00' reads as a loss)."""
    s = format(v, fmt)
    return s.lstrip("-") if s.startswith("-") and float(s) == 0 else s


def _tick(v: Any) -> str:
    return f"{v:g}" if isinstance(v, (int, float, np.number)) else str(v)


def heat(ax: Any, fig: Any, table: pd.DataFrame, xlab: str, ylab: str, cbar: str, fmt: str, cmap: str,
         annotate: bool, mark: Literal["max", "min"], center: float | None = None) -> tuple[Optimum | None, bool]:
    """Draw ``table`` (rows = y values, columns = x values) as a heat map with a colour bar, annotated when the
    cells are large enough, and mark its optimum (``mark``: max or min).  Returns (the optimum or None, whether the
    numbers were written)."""
    from matplotlib.colors import CenteredNorm

    Z = table.to_numpy(float)
    finite = Z[np.isfinite(Z)]
    # symmetric about the centre: equal distances from "no improvement" get equally strong colours
    norm = CenteredNorm(vcenter=center) if center is not None and finite.size else None
    im = ax.imshow(np.ma.masked_invalid(Z), origin="lower", aspect="auto", cmap=cmap, norm=norm)
    step_x = max(1, int(np.ceil(Z.shape[1] / 12)))
    step_y = max(1, int(np.ceil(Z.shape[0] / 16)))
    ax.set_xticks(range(0, Z.shape[1], step_x), [_tick(v) for v in table.columns[::step_x]])
    ax.set_yticks(range(0, Z.shape[0], step_y), [_tick(v) for v in table.index[::step_y]])
    ax.set_xlabel(xlab)
    ax.set_ylabel(ylab)
    ax.grid(False)
    fig.colorbar(im, ax=ax, label=cbar)
    written = False
    if annotate and finite.size:
        w_in, h_in = _cell_size(ax, fig, Z.shape)
        longest = max(text_width(_number(v, fmt), style.SMALL) for v in finite)
        if longest < 0.9 * w_in and style.SMALL / 72 < 0.8 * h_in:
            for i in range(Z.shape[0]):
                for j in range(Z.shape[1]):
                    if np.isfinite(Z[i, j]):
                        colour = style.contrast_text(im.cmap(im.norm(Z[i, j])))
                        ax.text(j, i, _number(Z[i, j], fmt), ha="center", va="center", fontsize=style.SMALL,
                                color=colour)
            written = True
    if not finite.size:
        return None, written
    flat = np.nanargmax(Z) if mark == "max" else np.nanargmin(Z)
    i, j = np.unravel_index(flat, Z.shape)
    from matplotlib.patches import Rectangle

    for colour, lw, inset in (("black", 2.2, 0.0), ("white", 0.9, 0.0)):
        ax.add_patch(Rectangle((j - 0.5 + inset, i - 0.5 + inset), 1 - 2 * inset, 1 - 2 * inset, fill=False,
                               edgecolor=colour, linewidth=lw, label="_optimum", clip_on=False))
    return Optimum(table.columns[j], table.index[i], float(Z[i, j])), written


def _cell_size(ax: Any, fig: Any, shape: tuple[int, int]) -> tuple[float, float]:
    """Width and height of one cell in inches (after laying the figure out once)."""
    lay_out(fig)
    box = ax.get_window_extent()
    return box.width / fig.dpi / shape[1], box.height / fig.dpi / shape[0]


def heat_figure(summary: pd.DataFrame, x: str, y: str, values: str, xlab: str, ylab: str, cbar: str, fmt: str,
                cmap: str, annotate: bool, mark: Literal["max", "min"], size: style.Width | float = "column",
                center: float | None = None) -> tuple[Any, Any, Optimum | None, bool]:
    """A new figure with the heat map of ``summary[values]`` over (``x`` columns, ``y`` rows), both sorted;
    returns (figure, axes, optimum, numbers written)."""
    table = summary.pivot(index=y, columns=x, values=values).sort_index().sort_index(axis=1)
    w = style.width_of(size)
    fig, ax = new_figure(w, 0.8 * w if w <= style.COLUMN else 0.5 * w)
    opt, written = heat(ax, fig, table, xlab, ylab, cbar, fmt, cmap, annotate, mark, center)
    return fig, ax, opt, written
