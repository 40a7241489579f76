"""Core plot machinery shared by every plot kind: option models, axis labels, figures, panels and finishing.

A plot kind is a function ``fn(df, spec, manifest, out_stem, formats) -> list[Path]`` that reads only the results
table and the manifest, registered with ``@register_plot(options=OptionsModel)`` (``dpexp.registry``): the
config's ``plots[i].options`` are validated against that model before any work.

Every kind draws with the shared style (``style``: paper sizes, fonts, palette, one look per method), names and
styles its curves through ``looks.Looks`` (a dagger on curves that are not DP) and ends with ``finish_plot``:
title from the resolved config (``titles``), one legend below the plot, notes (non-DP footnote, clipping, how the
run differed from its config), saved at its declared width (``layout``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal, Sequence

from pydantic import ConfigDict

from dpexp.documented import Documented
from dpexp.plotting import layout, style
from dpexp.plotting.titles import run_note, title_of  # noqa: F401  (title_of: part of this module's API)

X_LABELS = {
    "n_private": "private training rows n (count)",
    "n_private_requested": "private training rows n (count)",
    "n_public_requested": "public (non-private) training rows (count)",
    "n_test_requested": "test rows (count)",
    "n_public": "public (non-private) training rows (count)",
    "n_test": "test rows (count)",
    "epsilon": "privacy budget ε",
    "delta": "privacy parameter δ",
    "d": "dimension d (features)",
}
METRIC_LABELS = {
    "spearman": "Spearman rank correlation (test set)",
    "mae": "mean absolute error (target units)",
    "wpc": "weighted probabilistic concordance index",
    "aux_spearman": "Spearman rank correlation on auxiliary data",
    "seconds": "wall time (s)",
}
#: short names of grid columns in legends
SHORT = {"epsilon": "ε", "delta": "δ", "n_private_requested": "n", "n_public_requested": "n_public",
         "n_test_requested": "n_test"}


class PlotOptions(Documented):
    """Base of plot kinds' option models: unknown keys are errors.  ``size``: the figure's width — one column of a
    two-column paper (3.5 in) or the full text width (7 in); each kind has a default."""

    model_config = ConfigDict(extra="forbid")
    size: Literal["column", "page"] | None = None
    """figure width: column (3.5 in) or page (7 in); default: the kind's"""


def axis_label(name: str) -> str:
    return X_LABELS.get(name) or METRIC_LABELS.get(name) or name


def new_figure(width: style.Width | float = "column", height: float | None = None) -> tuple[Any, Any]:
    """A one-panel figure ``width`` wide ("column", "page" or inches), ``height`` inches high (default: 0.7 of a
    column's width, 0.45 of a page's), in the shared style with constrained layout."""
    import matplotlib.pyplot as plt

    style.apply()
    w = style.width_of(width)
    h = height if height is not None else (0.85 * w if w <= style.COLUMN else max(2.8, 0.45 * w))
    return plt.subplots(figsize=(w, h), layout="constrained")


def auto_width(n_curves: int) -> style.Width:
    """A one-panel figure's default width: a column, or the page when more than six curves need the room."""
    return "page" if n_curves > 6 else "column"


def grid_shape(n: int) -> tuple[int, int]:
    """(rows, columns) for ``n`` panels: one row up to three, 2 × 2 for four, then rows of three."""
    cols = n if n <= 3 else (2 if n == 4 else 3)
    return math.ceil(n / cols), cols


def panels(n: int, width: style.Width | float = "page", height: float | None = None, *,
           shape: tuple[int, int] | None = None, sharey: bool = False) -> tuple[Any, list[Any]]:
    """A figure with ``n`` panels (``grid_shape``, or ``shape`` = (rows, columns)) ``width`` wide; ``height`` per
    row (default: 0.75 of a panel's width, between 2.3 and 2.8 in), constrained layout; ``sharey``: one y axis for
    all panels (tick labels on the first column only)."""
    import matplotlib.pyplot as plt

    style.apply()
    rows, cols = shape or grid_shape(n)
    w = style.width_of(width)
    h = height if height is not None else min(2.8, max(2.3, 0.75 * w / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(w, h * rows), squeeze=False, layout="constrained",
                             sharey=sharey)
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def decorate(ax: Any, xlabel: str, ylabel: str, title: str = "", title_size: float | None = None,
             legend_size: float | None = None) -> None:
    """The finishing touches of a panel: axis labels, title and a light grid (the legend is drawn by ``finish``)."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=title_size or style.FONT_SIZE)
    ax.grid(alpha=0.3)


def finish_plot(fig: Any, spec: Any, manifest: dict[str, Any], out_stem: Path, formats: list[str], *,
                looks: Any = None, subtitle: str = "", notes: Sequence[str] = (),
                legend: Literal["below", "inside", "panels", "none"] = "below",
                title: str | None = None) -> list[Path]:
    """Title (the resolved config's, ``titles.title_of``) and ``subtitle``; notes under the figure: the non-DP
    footnote of ``looks``, ``notes``, and how the run differed from its config (``titles.run_note``); then
    ``layout.finish`` (one legend below, declared width) and save.  ``title``: instead of the config's."""
    title = (title if title is not None else title_of(spec, manifest)) + (f"\n{subtitle}" if subtitle else "")
    all_notes = [looks.footnote() if looks is not None else "", *notes, run_note(manifest)]
    return layout.finish(fig, out_stem, formats, title=title, notes=all_notes, legend=legend)


def save(fig: Any, out_stem: Path, formats: list[str]) -> list[Path]:
    """Lay out (legend below, declared width) and save ``fig`` without a title; see ``finish_plot``."""
    return layout.finish(fig, out_stem, formats)


def save_with_title(fig: Any, spec: Any, manifest: dict[str, Any], out_stem: Path, formats: list[str]) -> list[Path]:
    """Put the experiment's title over the figure and save it (``finish_plot`` without curve names)."""
    return finish_plot(fig, spec, manifest, out_stem, formats)
