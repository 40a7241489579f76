"""The one figure style every plot kind uses: paper sizes, fonts, a colour-blind-safe palette and one look per method.

* **Sizes** (inches): ``COLUMN`` = 3.5 (one column of a two-column paper) and ``PAGE`` = 7.0 (the full text width).
  A figure keeps the width it is declared with: titles, legend entries and notes are wrapped to it, and figures are
  saved without ``bbox_inches="tight"`` (which used to widen a figure to fit an outside legend).  Only the height
  grows, by the rows a legend or a note below the plot needs.
* **Fonts**: DejaVu Sans (it has ε, δ, ρ, †, ≤), 8 pt text, 7 pt ticks and legends, 6.5 pt notes: readable at
  100 % in a paper.  PNG at ``DPI`` = 200, PDF (fonts embedded as Type 42) and SVG, reproducible bytes.
* **Palette**: Okabe & Ito (2008) without the yellow that vanishes on white, extended by four colours of Paul Tol's
  colour-blind-safe schemes; a grey for reference lines.  Colour is never the only cue: every method also has a
  marker, and variants of one method differ in line style.
* **One look per method**: ``METHODS`` fixes the colour and marker of every registered algorithm by its registry
  name, so the same method looks the same in every figure of every experiment.  Several curves of one algorithm in
  one figure (parameter variants) keep its colour and marker and differ in line style and marker fill, in the order
  of the config's ``algorithms`` list.  An algorithm missing from the table (a plugin's) gets a colour and marker of
  the palette from its name (stable: the same in every figure) and one warning per process.
"""

from __future__ import annotations

import warnings
import zlib
from typing import Any, Literal

COLUMN = 3.5   # inches: one column of a two-column paper
PAGE = 7.0     # inches: the full text width
DPI = 200
Width = Literal["column", "page"]
WIDTHS: dict[str, float] = {"column": COLUMN, "page": PAGE}

FONT_SIZE = 8.0
SMALL = 7.0      # ticks, legends, annotations
NOTE = 6.5       # footnotes below a figure
TITLE = 8.5

# Okabe & Ito (2008) without yellow; then Paul Tol's indigo, olive, wine and teal; GREY marks reference lines
BLUE, VERMILLION, GREEN, PURPLE, ORANGE, SKY, BLACK = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00",
                                                       "#56B4E9", "#000000")
INDIGO, OLIVE, WINE, TEAL = "#332288", "#999933", "#882255", "#44AA99"
GREY = "#7F7F7F"
PALETTE: tuple[str, ...] = (BLUE, VERMILLION, GREEN, PURPLE, ORANGE, SKY, BLACK, INDIGO, OLIVE, WINE, TEAL)
MARKERS: tuple[str, ...] = ("o", "s", "^", "D", "v", "P", "X", "h", "<", ">", "*")
LINESTYLES: tuple[Any, ...] = ("-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 3)))

#: colour and marker of every registered algorithm (registry name).  Methods that appear in the same figures have
#: different colours (tests/core/test_plot_style.py checks every config); references are black or grey.
METHODS: dict[str, tuple[str, str]] = {
    # GDSC and the thesis (Honkela et al. 2018, Nieminen 2017)
    "rplr": (BLUE, "o"), "split_search": (BLUE, "o"), "plr": (VERMILLION, "s"), "oplr": (PURPLE, "^"),
    "fmlr": (ORANGE, "D"), "lr": (BLACK, "v"), "rlr": (GREEN, "P"), "lr_public": (GREY, ""),
    # beyond the papers (issue 15): noise-aware robust private LR and AdaSSP
    "narplr": (INDIGO, "h"), "adassp": (WINE, "*"),
    # distributed learning (Heikkilä et al. 2017)
    "np": (BLACK, "v"), "ta": (SKY, "s"), "ta_proj": (BLUE, "o"), "ddp": (ORANGE, "^"), "ddp_proj": (VERMILLION, "D"),
    "input_perturbation": (PURPLE, "P"), "dca_timing": (BLUE, "o"),
    # simple linear regression (Alabi et al. 2020)
    "noisy_stats": (BLUE, "o"), "noisy_intercept": (SKY, "X"), "dp_exp_theil_sen": (VERMILLION, "s"),
    "dp_wide_theil_sen": (ORANGE, "^"), "dp_ss_theil_sen": (PURPLE, "D"), "dpgd_pure": (GREEN, "v"),
    "dpgd_approx": (OLIVE, "P"), "dpgd_zcdp": (INDIGO, "h"), "oi_mos": (WINE, "*"), "ols": (BLACK, "v"),
    "theil_sen": (GREY, "<"), "theil_sen_kmatch": (GREY, ">"),
    # diagnostics
    "null_model": (GREY, "x"),
}

#: algorithms that are another protocol of one method (the authors' code path beside ours): they share its look and,
#: drawn beside it, differ only in line style (``method``)
VARIANT_OF: dict[str, str] = {"plr_paper": "plr", "oplr_paper": "oplr", "fmlr_paper": "fmlr", "split_search": "rplr"}


def method(algorithm: str) -> str:
    """The method an algorithm draws as (itself, or the method it is a protocol variant of)."""
    return VARIANT_OF.get(algorithm, algorithm)


def rc() -> dict[str, Any]:
    """Matplotlib settings of the style (applied by ``apply``)."""
    from cycler import cycler

    return {
        "font.family": "DejaVu Sans", "font.size": FONT_SIZE, "axes.titlesize": TITLE, "axes.labelsize": FONT_SIZE,
        "xtick.labelsize": SMALL, "ytick.labelsize": SMALL, "legend.fontsize": SMALL,
        "figure.titlesize": TITLE, "figure.dpi": DPI, "savefig.dpi": DPI,
        "axes.prop_cycle": cycler(color=list(PALETTE)), "axes.grid": True, "grid.alpha": 0.3,
        "grid.linewidth": 0.5, "axes.linewidth": 0.6, "lines.linewidth": 1.3, "lines.markersize": 3.5,
        "errorbar.capsize": 2, "legend.frameon": False, "legend.handlelength": 2.2,
        "pdf.fonttype": 42, "ps.fonttype": 42, "svg.hashsalt": "dpexp", "image.cmap": "viridis",
    }


def apply() -> None:
    """Select the non-interactive back-end and the style (idempotent; every figure is made after this)."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams.update(rc())


def width_of(size: Width | float) -> float:
    return float(WIDTHS[size]) if isinstance(size, str) else float(size)


def method_colour(algorithm: str) -> tuple[str, str]:
    """(colour, marker) of an algorithm: ``METHODS``, else derived from its name (the same in every figure)."""
    algorithm = method(algorithm)
    if algorithm in METHODS:
        return METHODS[algorithm]
    h = zlib.crc32(algorithm.encode())
    look = PALETTE[h % len(PALETTE)], MARKERS[(h // len(PALETTE)) % len(MARKERS)]
    if algorithm not in _WARNED:
        _WARNED.add(algorithm)
        warnings.warn(f"algorithm {algorithm!r} has no look in dpexp.plotting.style.METHODS: drawn in {look[0]} "
                      f"with marker {look[1]!r} from the palette (chosen by its name)", UserWarning, stacklevel=2)
    return look


#: algorithms whose missing look was warned about (once per process)
_WARNED: set[str] = set()


def line_style(algorithm: str, variant: int = 0) -> dict[str, Any]:
    """Matplotlib keywords for curve ``variant`` (0, 1, ...) of ``algorithm``: its colour and marker; variants after
    the first get another line style and an open marker."""
    colour, marker = method_colour(algorithm)
    out: dict[str, Any] = {"color": colour, "marker": marker or None,
                           "linestyle": LINESTYLES[variant % len(LINESTYLES)]}
    if variant and marker:
        out["markerfacecolor"] = "white"
    return out


def contrast_text(rgba: tuple[float, ...]) -> str:
    """Black or white, whichever reads better on the colour ``rgba`` (WCAG relative luminance)."""
    def lin(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (lin(float(c)) for c in rgba[:3])
    lum = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "black" if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "white"
