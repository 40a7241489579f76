"""Panels of curves: a figure split by groups of labels (``panels:`` in a plot's options), at most
``MAX_CURVES`` curves a panel, each curve at home in exactly one panel.

A config lists the panels of a figure, each with the labels it draws (``labels``), optional ``references`` (curves
at home in another panel, drawn again here for comparison), legend ``names`` and a ``title``.  ``assign`` turns the
labels present in a results table into the panels to draw: a panel none of whose labels are present is dropped,
and labels that no panel lists go to extra panels ("other curves", at most ``MAX_CURVES`` each), so that every
curve of the results is drawn, and at home in exactly one panel, whatever ``--set`` changed.  One panel may be
marked ``paper: true``: the one to set beside the published figure (the report puts the paper's values beside it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pydantic import Field, model_validator

from dpexp.documented import Documented
from dpexp.plotting.privacy import DAGGER

MAX_CURVES = 8   # a reader tells apart at most this many curves in one panel (issue 32: 24 were drawn in one)
LETTERS = "abcdefghijklmnopqrstuvwxyz"


class PanelSpec(Documented):
    """One panel of a panelled figure (``options.panels[i]``)."""

    model_config = {"extra": "forbid"}
    name: str = Field(pattern=r"^[A-Za-z0-9_-]+$")
    """short name: the panel's own figure file is ``<plot name>_<name>.<format>``"""
    title: str = ""
    """the panel's title (default: its name); the figure prefixes it with (a), (b), ..."""
    labels: list[str] = Field(min_length=1)
    """the curves (algorithm labels) at home in this panel, in legend order"""
    references: list[str] = Field(default_factory=list)
    """curves at home in another panel, drawn here again (lighter) to compare against"""
    names: dict[str, str] = Field(default_factory=dict)
    """legend names for some of the labels (e.g. the paper's own method names), label -> name"""
    paper: bool = False
    """the panel to set beside the published figure: the report shows the paper's values beside it"""

    @model_validator(mode="after")
    def _consistent(self) -> "PanelSpec":
        n = len(self.labels) + len(self.references)
        if n > MAX_CURVES:
            raise ValueError(f"panel {self.name!r} draws {n} curves (labels + references); at most {MAX_CURVES}")
        dup = sorted({lb for lb in self.labels + self.references if (self.labels + self.references).count(lb) > 1})
        if dup:
            raise ValueError(f"panel {self.name!r} lists {dup} twice (a label is in labels or references, once)")
        unknown = sorted(set(self.names) - set(self.labels) - set(self.references))
        if unknown:
            raise ValueError(f"panel {self.name!r}: names for labels it does not draw: {unknown}")
        return self


def check_panels(panels: list[PanelSpec]) -> list[PanelSpec]:
    """The figure-level rules: unique panel names, a label at home in one panel only, every reference at home in
    another panel, at most one ``paper`` panel.  Raises ValueError (a config error)."""
    names = [p.name for p in panels]
    if len(names) != len(set(names)):
        raise ValueError(f"panel names must be unique, got {names}")
    home: dict[str, str] = {}
    for p in panels:
        for lb in p.labels:
            if lb in home:
                raise ValueError(f"label {lb!r} is in the labels of panels {home[lb]!r} and {p.name!r}: a curve is "
                                 "at home in one panel (list it under `references` to draw it in another)")
            home[lb] = p.name
    for p in panels:
        for lb in p.references:
            if lb not in home:
                raise ValueError(f"panel {p.name!r}: reference {lb!r} is in no panel's labels (a reference is a "
                                 "curve at home in another panel)")
    if sum(p.paper for p in panels) > 1:
        raise ValueError("at most one panel can be `paper: true`")
    return panels


@dataclass
class Panel:
    """A panel to draw: its labels and references present in the results, in order."""

    name: str
    title: str
    labels: list[str]
    references: list[str] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)
    paper: bool = False
    letter: str = ""

    @property
    def curves(self) -> list[str]:
        """Everything the panel draws: its own curves, then the references."""
        return self.labels + self.references

    @property
    def heading(self) -> str:
        return f"({self.letter}) {self.title}" if self.letter else self.title

    def shown(self, label: str) -> str:
        """The legend name of ``label`` in this panel (its ``names`` entry, else the label)."""
        return self.names.get(label, label)


def assign(present: list[str], specs: list[PanelSpec]) -> list[Panel]:
    """The panels for the labels ``present`` in the results (module docstring), lettered (a), (b), ... in order."""
    out = []
    listed: set[str] = set()
    have = set(present)
    for sp in specs:
        listed.update(sp.labels)
        labels = [lb for lb in sp.labels if lb in have]
        if labels:
            out.append(Panel(sp.name, sp.title or sp.name, labels, [lb for lb in sp.references if lb in have],
                             dict(sp.names), sp.paper))
    rest = [lb for lb in dict.fromkeys(present) if lb not in listed]
    for k in range(0, len(rest), MAX_CURVES):
        n = k // MAX_CURVES
        out.append(Panel("other" + (str(n + 1) if n else ""), "other curves", rest[k:k + MAX_CURVES]))
    for i, p in enumerate(out):
        p.letter = LETTERS[i % len(LETTERS)]
    return out


def footnote(panels: list[Panel], reasons: dict[str, str], limit: int = 3) -> str:
    """'† not differentially private — (a) every curve: reason; reason. (b) “A”, “B”: reason' over the curves at
    home in each panel (``reasons``: label -> why it is not DP, for the curves that are not); '' when none is."""
    parts = []
    for p in panels:
        mine = [lb for lb in p.labels if lb in reasons]
        if not mine:
            continue
        by_reason: dict[str, list[str]] = {}
        for lb in mine:
            by_reason.setdefault(reasons[lb], []).append(lb)
        if len(mine) == len(p.labels):  # the daggers mark them all: the reasons are enough
            parts.append((f"({p.letter}) " if p.letter else "") + "every curve: " + "; ".join(by_reason))
            continue
        items = []
        for reason, lbs in by_reason.items():
            named = ", ".join(f"“{p.shown(lb)}”" for lb in lbs[:limit])
            named += f" and {len(lbs) - limit} more" if len(lbs) > limit else ""
            items.append(f"{named}: {reason}")
        parts.append((f"({p.letter}) " if p.letter else "") + "; ".join(items))
    return f"{DAGGER} not differentially private — " + ". ".join(parts) if parts else ""

