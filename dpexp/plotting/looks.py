"""How each curve of an experiment is named and drawn: its legend name (a dagger when it is not DP) and its look
(colour and marker of its algorithm, ``style.METHODS``; variants of one algorithm in line style and marker fill)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from dpexp.plotting import style
from dpexp.plotting.privacy import NotDP


class Looks:
    """Names and looks of the curves (algorithm labels) of one experiment; every plot kind draws through one."""

    def __init__(self, df: pd.DataFrame | None, manifest: dict[str, Any]) -> None:
        self.not_dp = NotDP(df, manifest)
        algorithm: dict[str, str] = {}
        for a in manifest.get("algorithms") or []:
            if isinstance(a, dict) and "label" in a:
                algorithm.setdefault(str(a["label"]), str(a.get("name", a["label"])))
        if df is not None and {"label", "algorithm"} <= set(df.columns):
            for label, algo in df[["label", "algorithm"]].drop_duplicates().itertuples(index=False):
                algorithm.setdefault(str(label), str(algo))
        self.algorithm = algorithm
        seen: dict[str, int] = {}
        self.variant: dict[str, int] = {}
        for label, algo in algorithm.items():  # config order: the same label gets the same variant in every run
            m = style.method(algo)   # a protocol variant (plr_paper) is drawn as another curve of its method
            self.variant[label] = seen.get(m, 0)
            seen[m] = self.variant[label] + 1

    def name(self, label: str, shown: str | None = None) -> str:
        """The legend name of ``label``: the label (or ``shown``, another name for it), with a dagger when the
        curve is not DP."""
        marked = self.not_dp.name(label)
        return marked if shown is None else shown + marked[len(str(label)):]

    def within(self, labels: list[str]) -> "Looks":
        """The same names and colours with the variants of each method numbered over ``labels`` only (in their
        order): a panel that draws one curve of a method draws it solid, whatever other panels hold."""
        other = object.__new__(Looks)
        other.not_dp, other.algorithm = self.not_dp, self.algorithm
        seen: dict[str, int] = {}
        other.variant = {}
        for label in labels:
            m = style.method(self.algorithm.get(str(label), str(label)))
            other.variant[str(label)] = seen.get(m, 0)
            seen[m] = other.variant[str(label)] + 1
        return other

    def look(self, label: str, baseline: bool = False) -> dict[str, Any]:
        """Matplotlib keywords (colour, marker, line style) for the curve ``label``; ``baseline``: a horizontal
        reference line (dashed, no marker)."""
        algo = self.algorithm.get(str(label), str(label))
        variant = self.variant.get(str(label), 0)
        kw = style.line_style(algo, variant + (1 if baseline else 0))
        if baseline:
            kw.pop("marker", None)
            kw.pop("markerfacecolor", None)
        return kw

    def footnote(self) -> str:
        """The dagger's footnote for the non-DP curves named so far ('' when none)."""
        return self.not_dp.footnote()
