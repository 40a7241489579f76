"""Finishing a figure so that it keeps its declared width and shows everything it draws.

``finish`` is the last step of every plot kind: it merges curves with identical values (drawn once, legend
"A = B"), gathers the legend entries of every panel into one legend *below* the plot (as many columns as fit the
width; long entries wrapped) — or, with ``legend="panels"``, one legend under each column of panels holding that
column's curves —, labels every log axis in one format (``ticks``), wraps the title to the width, writes the notes (non-DP footnote, clipping, how the
run differed from its config) under the legend, grows the figure's *height* by what the legend and notes need, and
saves it.  The width never changes: a test checks that no saved figure is wider than declared and that no text
leaves the figure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Sequence

import numpy as np

from dpexp import cache
from dpexp.plotting import style, ticks

IDENTICAL_NOTE = "A = B in the legend: curves with identical values, drawn once"


#: widths kept per process (``text_width``): a legend is wrapped for several column counts and the same labels
#: recur in every figure of an experiment; each measurement lays the line out with FreeType (≈ 1 ms)
TEXT_WIDTHS_KEPT = 16_384


def text_width(text: str, size: float) -> float:
    """Width in inches of one line of ``text`` at font ``size`` in the style's font (measured, not estimated;
    kept per text, size and hinting setting)."""
    import matplotlib

    # text.hinting_factor, deprecated in Matplotlib 3.11, is not read: the style never sets it
    hinting = matplotlib.rcParams["text.hinting"]
    return cache.memo("plotting.text_width", (str(text), float(size), hinting),
                      lambda: _measured_width(str(text), float(size)), maxsize=TEXT_WIDTHS_KEPT)


def _measured_width(text: str, size: float) -> float:
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.font_manager import FontProperties

    renderer = cache.memo("plotting.text_renderer", "agg", lambda: RendererAgg(10, 10, 72))
    w, _h, _d = renderer.get_text_width_height_descent(text, FontProperties(family="DejaVu Sans", size=size),
                                                        ismath=False)
    return w / 72.0


#: spaces not to break at: 'ε = 2', 'm − b', 'et al. 2017' and a dagger after its label stay on one line (no-break
#: spaces look the same)
KEEP_TOGETHER = ((" = ", "\u00a0=\u00a0"), (" − ", "\u00a0−\u00a0"), ("et al. ", "et\u00a0al.\u00a0"),
                 (" †", "\u00a0†"))


def wrap(text: str, width_in: float, size: float) -> str:
    """``text`` broken into lines no wider than ``width_in`` inches at font ``size`` (greedy, at spaces but not
    inside ``KEEP_TOGETHER``; a word longer than a line is cut; existing line breaks kept)."""
    out: list[str] = []
    for a, b in KEEP_TOGETHER:
        text = str(text).replace(a, b)
    for para in str(text).split("\n"):
        line = ""
        for word in para.split(" "):
            trial = f"{line} {word}" if line else word
            if line and text_width(trial, size) > width_in:
                out.append(line)
                line = word
            else:
                line = trial
            while text_width(line, size) > width_in and len(line) > 1:   # one word wider than the line
                cut = max(1, int(len(line) * width_in / text_width(line, size)) - 1)
                out.append(line[:cut])
                line = line[cut:]
        out.append(line)
    return "\n".join(out)


def _curves(ax: Any) -> list[tuple[str, Any, bytes]]:
    """(label, artist, data key) of every labelled curve of ``ax``: error-bar containers and plain lines."""
    from matplotlib.container import ErrorbarContainer

    out = []
    inside: set[int] = set()
    for c in ax.containers:
        if not isinstance(c, ErrorbarContainer):
            continue
        line, caps, bars = c.lines
        for a in [line, *caps, *bars]:
            if a is not None:
                inside.add(id(a))
        if str(c.get_label()).startswith("_") or line is None:
            continue
        key = _key(line.get_xdata(), line.get_ydata())
        for b in bars:
            key += np.round(np.asarray(b.get_segments(), dtype=float), 12).tobytes()
        out.append((str(c.get_label()), c, key))
    for line in ax.lines:
        if id(line) in inside or str(line.get_label()).startswith("_"):
            continue
        if not np.isfinite(np.asarray(line.get_ydata(), dtype=float)).any():
            continue  # a legend proxy (no data) is not a curve
        out.append((str(line.get_label()), line, _key(line.get_xdata(), line.get_ydata())))
    return out


def _key(x: Any, y: Any) -> bytes:
    x = np.round(np.asarray(x, dtype=float), 12)
    y = np.round(np.asarray(y, dtype=float), 12)
    return x.shape.__repr__().encode() + x.tobytes() + y.tobytes()


def merge_identical(ax: Any) -> list[list[str]]:
    """Draw curves of ``ax`` with identical data once, labelled "A = B"; return the merged groups of labels."""
    groups: dict[bytes, list[tuple[str, Any]]] = {}
    for label, artist, key in _curves(ax):
        groups.setdefault(key, []).append((label, artist))
    merged = []
    for members in groups.values():
        if len(members) < 2:
            continue
        labels = list(dict.fromkeys(lb for lb, _ in members))
        members[0][1].set_label(" = ".join(labels))
        for _, artist in members[1:]:
            artist.remove()
            if artist in ax.containers:
                ax.containers.remove(artist)
        merged.append(labels)
    return merged


def legend_entries(axes: Sequence[Any]) -> tuple[list[Any], list[str]]:
    """The legend handles and labels of all ``axes``, each label once (panels usually repeat the same curves)."""
    handles, labels = [], []
    for ax in axes:
        for h, lb in zip(*ax.get_legend_handles_labels()):
            if lb not in labels and not lb.startswith("_"):
                handles.append(h)
                labels.append(lb)
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    return handles, labels


def finish(fig: Any, out_stem: Path, formats: list[str], *, title: str = "", notes: Sequence[str] = (),
           legend: Literal["below", "inside", "panels", "none"] = "below",
           legend_cols: int | None = None) -> list[Path]:
    """Lay out and save ``fig`` (see the module docstring).  ``notes``: lines printed under the legend (empty ones
    skipped).  ``legend``: "below" (one legend for all panels), "inside" (each panel keeps its own, best place),
    "panels" (one legend under each column of panels, with that column's curves) or "none".  Returns the written
    paths."""
    width, height = fig.get_size_inches()
    axes = [ax for ax in fig.axes if ax.get_visible() and ax.get_label() != "<colorbar>"]
    merged = [g for ax in axes for g in merge_identical(ax)]
    notes = [n for n in notes if n] + ([IDENTICAL_NOTE] if merged else [])
    ticks.apply_log_format(fig)
    if title:
        fig.suptitle(wrap(title, width - 0.1, style.TITLE))
    handles, labels = [], []
    columns: list[tuple[list[Any], list[str], list[Any]]] = []
    if legend == "below":
        handles, labels = legend_entries(axes)
    elif legend == "panels":
        columns = [(*legend_entries(col), col) for col in panel_columns(axes)]
    elif legend == "inside":
        for ax in axes:
            if ax.get_legend_handles_labels()[1]:
                ax.legend(loc="best")
    lay_out(fig)  # fixes the layout of the plot area before the labels and the strip below are measured
    for _ in range(3):  # wrapping changes the layout, which may narrow an axis again
        if not _wrap_axis_labels(fig, axes):
            break
        lay_out(fig)
    renderer = fig.canvas.get_renderer()
    leg = None
    legs: list[tuple[Any, float]] = []   # (legend, x of its centre in figure coordinates)
    if handles:
        leg = _bottom_legend(fig, handles, labels, width, renderer, legend_cols)
        legs = [(leg, 0.5)]
    elif columns:
        legs = [_column_legend(fig, h, lb, col) for h, lb, col in columns if h]
        leg = legs[0][0] if legs else None
    foot = fig.text(0.012, 0.0, wrap("\n".join(notes), width - 0.1, style.NOTE), fontsize=style.NOTE,
                    ha="left", va="top", color="0.25", linespacing=1.25) if notes else None
    leg_h = max((lg.get_window_extent(renderer).height / fig.dpi for lg, _x in legs), default=0.0)
    foot_h = foot.get_window_extent(renderer).height / fig.dpi if foot is not None else 0.0
    gap = 0.06
    extra = (leg_h + gap if leg is not None else 0.0) + (foot_h + gap if foot is not None else 0.0)
    total = height + extra
    fig.set_size_inches(width, total)
    engine = fig.get_layout_engine()
    if engine is not None and hasattr(engine, "set"):
        engine.set(rect=(0, extra / total, 1, 1 - extra / total))
    if foot is not None:
        foot.set_position((0.012, (foot_h + gap / 2) / total))
    for lg, x in legs:
        lg.set_bbox_to_anchor((x, extra / total), transform=fig.transFigure)
    return save(fig, out_stem, formats)


def lay_out(fig: Any) -> None:
    """Run ``fig``'s layout (its layout engine, tick and text placement) as a draw would, without rasterising it:
    the measuring draws before the save were about a third of drawing a figure, and give the same positions
    (the saved files are the same bytes)."""
    fig.draw_without_rendering()


def _wrap_axis_labels(fig: Any, axes: Sequence[Any]) -> bool:
    """Wrap axis labels and panel titles longer than their axis (a y label taller than the plot was cut at the
    figure's edge); True when one changed.  Lengths are the drawn extents (combining accents, mathtext)."""
    changed = False
    renderer = fig.canvas.get_renderer()
    for ax in list(axes) + [a for a in fig.axes if a.get_label() == "<colorbar>"]:
        box = ax.get_window_extent()
        for label, length, vertical in ((ax.xaxis.label, box.width, False), (ax.yaxis.label, box.height, True),
                                        (ax.title, box.width, False)):
            text = label.get_text()
            if not text:
                continue
            ext = label.get_window_extent(renderer)
            drawn = ext.height if vertical else ext.width
            if drawn <= 0.97 * length:
                continue
            # the drawn extent over the measured one: combining accents and mathtext measure short
            measured = max(text_width(t, label.get_fontsize()) for t in text.split("\n")) * fig.dpi
            scale = max(1.0, drawn / max(measured, 1e-9))
            new = wrap(text.replace("\n", " "), 0.92 * length / scale / fig.dpi, label.get_fontsize())
            if new != text:
                label.set_text(new)
                changed = True
    return changed


def panel_columns(axes: Sequence[Any]) -> list[list[Any]]:
    """The ``axes`` grouped by the column of the grid they sit in, left to right (one group per column)."""
    cols: dict[int, list[Any]] = {}
    for ax in axes:
        spec = ax.get_subplotspec() if hasattr(ax, "get_subplotspec") else None
        key = spec.colspan.start if spec is not None else round(ax.get_position().x0 * 1000)
        cols.setdefault(key, []).append(ax)
    return [cols[k] for k in sorted(cols)]


def _column_legend(fig: Any, handles: list[Any], labels: list[str], column: list[Any]) -> tuple[Any, float]:
    """One single-column legend under a column of panels, from its left edge, entries wrapped to its width (so
    it never reaches past the panel); returns it and the x of its left edge (figure coordinates)."""
    size = style.SMALL
    fig_w = fig.get_size_inches()[0]
    boxes = [ax.get_position() for ax in column]
    x0, x1 = min(b.x0 for b in boxes), max(b.x1 for b in boxes)
    pad = (2.2 + 0.8) * size / 72 + 0.12             # handle, handle-text gap and the legend's border, inches
    text = [wrap(lb, max(0.8, (x1 - x0) * fig_w - pad), size) for lb in labels]
    leg = fig.legend(handles, text, loc="upper left", bbox_to_anchor=(x0, 0.0), ncols=1, frameon=False,
                     fontsize=size, borderaxespad=0.0, borderpad=0.2, handletextpad=0.8, labelspacing=0.35)
    return leg, x0


def _bottom_legend(fig: Any, handles: list[Any], labels: list[str], width: float, renderer: Any,
                   cols: int | None) -> Any:
    """One legend under the plot: the number of columns (``cols``, else at most four) that makes it shortest,
    entries wrapped to their column; fewer columns when the measured legend is still wider than the figure."""
    size = style.SMALL
    pad = (2.2 + 0.8 + 2.0) * size / 72          # handle, handle-text gap and column gap, inches

    def lines(ncol: int) -> int:
        rows = -(-len(labels) // ncol)
        col_w = (width - 0.2) / ncol - pad
        n = [wrap(lb, col_w, size).count("\n") + 1 for lb in labels]
        return sum(max(n[r + c * rows] for c in range(ncol) if r + c * rows < len(n)) for r in range(rows))

    options = [k for k in range(1, min(len(labels), 4) + 1) if (width - 0.2) / k - pad >= 1.1] or [1]
    ncol = cols or min(options, key=lambda k: (lines(k), k))
    while True:
        col_w = (width - 0.2) / ncol - pad
        text = [wrap(lb, col_w, size) for lb in labels]
        leg = fig.legend(handles, text, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncols=ncol,
                         frameon=False, fontsize=size, borderaxespad=0.2, columnspacing=2.0, handletextpad=0.8)
        if ncol == 1 or leg.get_window_extent(renderer).width / fig.dpi <= width - 0.05:
            return leg
        leg.remove()
        ncol -= 1


def misfits(fig: Any, tolerance: float = 0.03) -> list[str]:
    """What breaks the declared size of ``fig`` (empty when nothing): a width other than a column or a page, any
    drawn element outside the canvas (cut text), a single plot squeezed below 60 % of the width.  The tests run it
    on every figure they draw."""
    problems = []
    width, height = fig.get_size_inches()
    if not any(abs(width - w) < 1e-6 for w in style.WIDTHS.values()):
        problems.append(f"width {width:.2f} in is neither a column ({style.COLUMN}) nor a page ({style.PAGE})")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = fig.get_tightbbox(renderer)
    if box.x0 < -tolerance or box.y0 < -tolerance or box.x1 > width + tolerance or box.y1 > height + tolerance:
        problems.append(f"drawn content {box.bounds} (in) leaves the {width:.2f} x {height:.2f} in canvas")
    plots = [ax for ax in fig.axes if ax.get_visible() and ax.get_label() != "<colorbar>"]
    if len(plots) == 1:  # the plot and its colour bar, if any
        boxes = [ax.get_position() for ax in fig.axes if ax.get_visible()]
        share = max(b.x1 for b in boxes) - min(b.x0 for b in boxes)
        if share < 0.6:
            problems.append(f"the plot spans {share:.0%} of the figure's width")
    return problems


def save(fig: Any, out_stem: Path, formats: list[str]) -> list[Path]:
    """Save ``fig`` as ``out_stem.<fmt>`` at its declared size (never ``bbox_inches="tight"``); close it; the
    same figure gives the same bytes (no creation dates)."""
    import matplotlib.pyplot as plt

    out_stem.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in formats:
        p = out_stem.with_suffix("." + fmt)
        meta = {"pdf": {"CreationDate": None}, "svg": {"Date": None}}.get(fmt)
        fig.savefig(p, dpi=style.DPI, metadata=meta)
        paths.append(p)
    plt.close(fig)
    return paths
