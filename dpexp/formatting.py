"""Number formatting shared by summaries, figures and the report (stable text for the same value)."""

from __future__ import annotations

import math


def fmt(v: float) -> str:
    """Four significant digits; whole numbers of 10⁴ and more with thousands separators; '' for NaN."""
    v = float(v)
    if math.isnan(v):
        return ""
    if math.isinf(v):
        return "∞" if v > 0 else "−∞"
    if 1e4 <= abs(v) < 1e15 and v == round(v):
        s = f"{v:,.0f}"
    else:
        s = format(v, ".4g")
    return "−" + s[1:] if s.startswith("-") else s


def signed(v: float) -> str:
    """A difference with its sign: '+0.1', '−2', '0'."""
    s = fmt(v)
    return s if (s.startswith("−") or s in ("0", "")) else "+" + s
