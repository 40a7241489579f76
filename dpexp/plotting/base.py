"""Core plot machinery shared by every plot kind: option models, axis labels, figures, panels and saving.

A plot kind is a function ``fn(df, spec, manifest, out_stem, formats) -> list[Path]`` that reads only the results
table and the manifest, registered with ``@register_plot(options=OptionsModel)`` (``dpexp.registry``): the
config's ``plots[i].options`` are validated against that model before any work.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

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
}
#: short names of grid columns in legends
SHORT = {"epsilon": "ε", "delta": "δ", "n_private_requested": "n", "n_public_requested": "n_public",
         "n_test_requested": "n_test"}


class PlotOptions(BaseModel):
    """Base of plot kinds' option models: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid")


def axis_label(name: str) -> str:
    return X_LABELS.get(name) or METRIC_LABELS.get(name) or name


def title_of(spec: Any, manifest: dict[str, Any]) -> str:
    return spec.title or manifest.get("title") or manifest.get("experiment", "")


def new_figure(width: float = 6.4, height: float = 4.4) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(width, height))


def panels(n: int, width: float = 5.2, height: float = 4.0) -> tuple[Any, list[Any]]:
    """A figure with ``n`` panels, at most three per row (constrained layout: no label overlap between panels)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False,
                             layout="constrained")
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def decorate(ax: Any, xlabel: str, ylabel: str, title: str = "", title_size: float = 9,
             legend_size: float = 7) -> None:
    """The finishing touches of a panel: axis labels, title, a light grid and the legend."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=title_size)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=legend_size)


def save(fig: Any, out_stem: Path, formats: list[str]) -> list[Path]:
    """Save ``fig`` as ``out_stem.<fmt>`` for each format; close it; return the paths."""
    import matplotlib.pyplot as plt

    out_stem.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in formats:
        p = out_stem.with_suffix("." + fmt)
        fig.savefig(p, bbox_inches="tight", dpi=150, metadata={"CreationDate": None} if fmt == "pdf" else None)
        paths.append(p)
    plt.close(fig)
    return paths


def save_with_title(fig: Any, spec: Any, manifest: dict[str, Any], out_stem: Path, formats: list[str]) -> list[Path]:
    """Put the experiment's title over a multi-panel figure and save it (``save``)."""
    fig.suptitle(title_of(spec, manifest), fontsize=10)
    return save(fig, out_stem, formats)
