"""Heat-map helper shared by plot kinds that map a metric over two variables (GDSC Figs. 3 and 5)."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pandas as pd

from dpexp.plotting.base import new_figure


def heat(ax: Any, fig: Any, table: pd.DataFrame, xlab: str, ylab: str, cbar: str, fmt: str, cmap: str,
          annotate: bool, mark: Literal["max", "min"]) -> tuple[Any, Any]:
    """Draw ``table`` (rows = y values, columns = x values) as a heat map with a colour bar, optionally annotated,
    and mark its optimum (``mark``: max or min) with a red cross; returns the optimum's (x, y) or (None, None)."""
    Z = table.to_numpy(float)
    im = ax.imshow(Z, origin="lower", aspect="auto", cmap=cmap)
    ax.set_xticks(range(Z.shape[1]), [f"{v:g}" if isinstance(v, (int, float, np.number)) else str(v)
                                      for v in table.columns], fontsize=8)
    ax.set_yticks(range(Z.shape[0]), [f"{v:g}" if isinstance(v, (int, float, np.number)) else str(v)
                                      for v in table.index], fontsize=8)
    ax.set_xlabel(xlab)
    ax.set_ylabel(ylab)
    fig.colorbar(im, ax=ax, label=cbar)
    if annotate:
        for i in range(Z.shape[0]):
            for j in range(Z.shape[1]):
                if np.isfinite(Z[i, j]):
                    ax.text(j, i, format(Z[i, j], fmt), ha="center", va="center", fontsize=6)
    if np.isfinite(Z).any():
        flat = np.nanargmax(Z) if mark == "max" else np.nanargmin(Z)
        i, j = np.unravel_index(flat, Z.shape)
        ax.plot([j], [i], marker="x", color="red", markersize=12, markeredgewidth=2.5,
                label=f"optimum: {table.columns[j]}, {table.index[i]} ({format(Z[i, j], fmt)})")
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0.0, -0.12))
        return table.columns[j], table.index[i]
    return None, None


def heat_figure(summary: pd.DataFrame, x: str, y: str, values: str, xlab: str, ylab: str, cbar: str, fmt: str,
                cmap: str, annotate: bool, mark: Literal["max", "min"], size: tuple[float, float]
                ) -> tuple[Any, Any, tuple[Any, Any]]:
    """A new figure with the heat map of ``summary[values]`` over (``x`` columns, ``y`` rows), both sorted;
    returns (figure, axes, optimum)."""
    table = summary.pivot(index=y, columns=x, values=values).sort_index().sort_index(axis=1)
    fig, ax = new_figure(*size)
    return fig, ax, heat(ax, fig, table, xlab, ylab, cbar, fmt, cmap, annotate, mark)
