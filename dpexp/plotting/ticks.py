"""One tick-label format on every log axis the project draws.

Matplotlib's defaults mixed three notations on log axes: decimal ("100"), the grid-value formatter's ``%.3g``
("1e+03") and scientific minor labels ("6×10⁰").  ``LogTicks`` writes every label of a log axis one way:

* **decimal**, at most three significant digits, no exponent ("0.001", "0.5", "3.16", "100", "1000", "20000"),
  when every labelled decade of the axis lies in [1e-3, 1e6);
* otherwise **powers of ten** in Unicode superscripts, for every label of that axis ("10⁻⁴", "10⁰", "2×10⁵"),
  so one axis never mixes the two.

Minor ticks (2…9 × 10ᵏ) are labelled only when the axis shows fewer than two labelled decades (and then only at 2
and 5 × 10ᵏ), so that a short axis still has numbers.  ``apply_log_format`` sets it on every log axis of a
figure; ``layout.finish`` calls it, so every figure gets it; ``log_label_problems`` is the check the tests run on
every figure they draw.
"""

from __future__ import annotations

import math
import re
from typing import Any

from matplotlib.ticker import Formatter

DECIMAL_RANGE = (1e-3, 1e6)
_SUPER = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
DECIMAL_RE = re.compile(r"^−?\d+(\.\d+)?$")
POWER_RE = re.compile(r"^(\d(\.\d+)?×)?10⁻?[⁰¹²³⁴⁵⁶⁷⁸⁹]+$")


def decimal(v: float) -> str:
    """``v`` in plain decimal notation with at most three significant digits: 0.001, 0.5, 3.16, 1000, 20000."""
    if v == 0 or not math.isfinite(v):
        return "0" if v == 0 else str(v)
    digits = 2 - math.floor(math.log10(abs(v)))
    s = f"{round(v, digits):.{max(0, digits)}f}"
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s.replace("-", "−")


def power(v: float) -> str:
    """``v`` as a power of ten in superscripts: 10⁻⁴, 10⁰, 2×10⁵, 3.2×10⁻⁶ (two significant digits)."""
    if v <= 0 or not math.isfinite(v):
        return decimal(v)
    e = math.floor(math.log10(v) + 1e-9)
    m = round(v / 10 ** e, 1)
    if m >= 10:
        m, e = m / 10, e + 1
    head = "" if abs(m - 1) < 1e-9 else (f"{m:.1f}".rstrip("0").rstrip(".") + "×")
    return f"{head}10{str(e).translate(_SUPER)}"


def uses_powers(vmin: float, vmax: float) -> bool:
    """Whether a log axis viewing [vmin, vmax] is labelled in powers of ten (a decade in view outside
    ``DECIMAL_RANGE``; the view's ends when no decade is in view)."""
    lo, hi = sorted((float(vmin), float(vmax)))
    if not (lo > 0 and math.isfinite(hi)):
        return False
    k0, k1 = math.ceil(math.log10(lo) - 1e-9), math.floor(math.log10(hi) + 1e-9)
    ends = (10.0 ** k0, 10.0 ** k1) if k0 <= k1 else (lo, hi)
    return ends[0] < DECIMAL_RANGE[0] * (1 - 1e-9) or ends[1] >= DECIMAL_RANGE[1]


class LogTicks(Formatter):
    """The one label format of a log axis (module docstring); ``minor``: the formatter of the minor ticks."""

    def __init__(self, minor: bool = False) -> None:
        self.minor = minor

    def _view(self) -> tuple[float, float]:
        return tuple(self.axis.get_view_interval()) if self.axis is not None else (1.0, 10.0)

    def __call__(self, x: float, pos: Any = None) -> str:
        if not (x > 0 and math.isfinite(x)):
            return ""
        vmin, vmax = self._view()
        if self.minor:
            lo, hi = sorted((vmin, vmax))
            if lo <= 0:
                return ""
            decades = math.floor(math.log10(hi) + 1e-9) - math.ceil(math.log10(lo) - 1e-9) + 1
            mantissa = x / 10 ** math.floor(math.log10(x) + 1e-9)
            if decades >= 2 or not any(abs(mantissa - m) < 1e-6 for m in (2, 5)):
                return ""
        return power(x) if uses_powers(vmin, vmax) else decimal(x)


def _axes_of(fig: Any) -> list[tuple[Any, Any]]:
    """(axes, axis) for every log-scaled x or y axis of ``fig`` (colour bars included)."""
    out = []
    for ax in fig.axes:
        for axis, scale in ((ax.xaxis, ax.get_xscale()), (ax.yaxis, ax.get_yscale())):
            if scale == "log":
                out.append((ax, axis))
    return out


def apply_log_format(fig: Any) -> None:
    """Label every log axis of ``fig`` with ``LogTicks`` (major and minor ticks)."""
    for _ax, axis in _axes_of(fig):
        if not isinstance(axis.get_major_formatter(), LogTicks):
            axis.set_major_formatter(LogTicks())
        if not isinstance(axis.get_minor_formatter(), LogTicks) and \
                type(axis.get_minor_formatter()).__name__ != "NullFormatter":
            axis.set_minor_formatter(LogTicks(minor=True))


def log_label_problems(fig: Any, draw: bool = True) -> list[str]:
    """Log-axis tick labels of ``fig`` that break the one format: a label in neither form, or an axis that mixes
    decimal and power labels (empty when none).  ``draw``: draw the figure first (False: it was just drawn)."""
    if draw:
        fig.canvas.draw()
    problems = []
    for ax, axis in _axes_of(fig):
        lo, hi = sorted(axis.get_view_interval())
        labels = [t.get_text() for t in axis.get_ticklabels(minor=False) + axis.get_ticklabels(minor=True)
                  if t.get_text() and t.get_visible() and lo * (1 - 1e-9) <= t.get_position()[
                      0 if axis is ax.xaxis else 1] <= hi * (1 + 1e-9)]
        kinds = {"decimal" if DECIMAL_RE.match(s) else "power" if POWER_RE.match(s) else f"other {s!r}"
                 for s in labels}
        bad = sorted(k for k in kinds if k.startswith("other"))
        if bad or len(kinds) > 1:
            name = "x" if axis is ax.xaxis else "y"
            problems.append(f"log {name} axis of {ax.get_title() or ax.get_label() or 'a plot'!r}: labels "
                            f"{labels} ({', '.join(sorted(kinds))})")
    return problems
