"""The privacy guarantee of every curve (algorithm label) of an experiment, and how figures, summaries and the report
mark the curves that are not differentially private (a dagger † and a footnote with the reason).

Preferred source: the per-row columns of ``results.csv`` (``guarantee`` in {pure, approx, zcdp, none},
``epsilon_spent``, ``delta_spent``, ``rho_spent``, ``privacy_note``), which state what each row actually cost.
Results written before those columns existed fall back to the manifest's per-algorithm record (``private``,
``formally_dp``, ``neighbouring``, ``privacy_spent``) — what the algorithm class declares, not a derivation, and the
page says so.  A curve whose guarantee is ``none`` is not differentially private and is marked with a dagger.
Rows of evaluation metrics (``Metric.reads_private``: guarantee ``none``, "evaluation against private data") are
not the curve's release: its guarantee comes from its other rows, or from those rows' notes, and the evaluation
metrics are listed apart (``CurvePrivacy.evaluation``; the report's privacy table and a figure's footnote say so).

One helper for every consumer: plot kinds (``NotDP.name`` on legend entries, ``NotDP.footnote`` under the figure),
``dpexp summarize`` (the label column and a footnote) and ``dpexp report`` (``curve_privacy``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import pandas as pd

from dpexp.formatting import fmt
from dpexp.results import map_unique
from dpexp.results_table import PRIVACY_COLUMNS
from dpexp.privacy.guarantee import RELEASE_PREFIX, is_evaluation, release_kind

DAGGER = "†"
GUARANTEE_WORDS = {
    "pure": "ε-DP (pure)",
    "approx": "(ε, δ)-DP",
    "zcdp": "ρ-zCDP",
    "none": "not DP",
}
ROW_COLUMNS = ("guarantee", "epsilon_spent", "delta_spent", "rho_spent", "privacy_note")


@dataclass
class CurvePrivacy:
    label: str
    algorithms: str            # registry name(s) behind the label
    guarantee: str             # pure | approx | zcdp | none | unknown (several joined by " / ")
    epsilon: str
    delta: str
    rho: str
    neighbouring: str
    note: str
    source: str                # "results.csv" or "manifest"
    evaluation: str = ""       # metrics of the curve that are evaluations against private data (guarantee none)

    @property
    def not_dp(self) -> bool:
        return "none" in self.guarantee.split(" / ")

    @property
    def words(self) -> str:
        return " / ".join(GUARANTEE_WORDS.get(g, g) for g in self.guarantee.split(" / "))


def curve_privacy(df: pd.DataFrame | None, manifest: dict[str, Any]) -> list[CurvePrivacy]:
    """One entry per label, in the order of the config's algorithms."""
    algos = [a for a in (manifest.get("algorithms") or []) if isinstance(a, dict)]
    order = list(dict.fromkeys([str(a.get("label", a.get("name", ""))) for a in algos]
                               + ([str(v) for v in df["label"].unique()] if df is not None else [])))
    by_label: dict[str, list[dict[str, Any]]] = {}
    for a in algos:
        by_label.setdefault(str(a.get("label", a.get("name", ""))), []).append(a)
    rows_known = df is not None and "guarantee" in df.columns
    if rows_known:
        # only the distinct rows of the columns read below matter (sets, and values in the order first seen, which
        # drop_duplicates keeps): millions of rows become a few hundred
        df = df[[c for c in _PRIVACY_COLUMNS if c in df.columns]].drop_duplicates()
    out = []
    for label in order:
        entries = by_label.get(label, [])
        neighbouring = _join(str(a["neighbouring"]) for a in entries if a.get("neighbouring"))
        if rows_known:
            d = df[df["label"] == label]
            if not d.empty:
                out.append(_from_rows(label, d, neighbouring))
                continue
        out.append(_from_manifest(label, entries, neighbouring))
    return out


#: the columns ``curve_privacy`` reads from the rows (a ``ResultsTable`` frame holds every distinct row of them)
_PRIVACY_COLUMNS = PRIVACY_COLUMNS
assert set(ROW_COLUMNS) <= set(PRIVACY_COLUMNS)


def _from_rows(label: str, d: pd.DataFrame, neighbouring: str) -> CurvePrivacy:
    """A curve's guarantee from its rows: the release's rows; the rows of evaluation metrics (guarantee ``none``,
    "evaluation against private data") say what the release spent only in their notes, so a curve with no other
    rows takes its kind from there (``release_kind``) and its numbers stay blank; the evaluation metrics are named
    in ``evaluation``."""
    d = d[d["error"].astype(str) == ""] if "error" in d.columns and (d["error"].astype(str) == "").any() else d
    evaluation = ""
    if "privacy_note" in d.columns:
        ev = map_unique(d["privacy_note"].astype(str), is_evaluation)
        if ev.any():
            evaluation = ", ".join(dict.fromkeys(str(m) for m in d.loc[ev, "metric"])) if "metric" in d else "yes"
            if not ev.all():
                d = d[~ev]
            else:   # only evaluation rows: the release's kind from their notes, no spent numbers shown
                kinds = _join(release_kind(str(v)) for v in d["privacy_note"]) or "unknown"
                notes = _join(str(v).split(f"; {RELEASE_PREFIX}", 1)[1] for v in d["privacy_note"])
                return CurvePrivacy(label, _join(str(v) for v in d["algorithm"]), kinds, "", "", "", neighbouring,
                                    notes, "results.csv", evaluation)
    note = _join(str(v) for v in d["privacy_note"]) if "privacy_note" in d.columns else ""
    guarantee = _join(str(v) for v in d["guarantee"]) or "unknown"
    return CurvePrivacy(label, _join(str(v) for v in d["algorithm"]), guarantee,
                        _range(d.get("epsilon_spent")), _range(d.get("delta_spent")), _range(d.get("rho_spent")),
                        neighbouring, note, "results.csv", evaluation)


def _from_manifest(label: str, entries: list[dict[str, Any]], neighbouring: str) -> CurvePrivacy:
    kinds, notes, eps, dl, rho = [], [], [], [], []
    for a in entries:
        spent = [s for s in (a.get("privacy_spent") or []) if isinstance(s, dict)]
        if a.get("private") is False:
            kinds.append("none")
            notes.append("a non-private reference")
        elif a.get("formally_dp") is False:
            kinds.append("none")
            notes.append("heuristic noise, not formally DP")
        elif any("rho" in s for s in spent):
            kinds.append("zcdp")
            notes.append("ρ-zCDP, converted to the (ε, δ) shown")
        elif any(float(s.get("delta") or 0) > 0 for s in spent):
            kinds.append("approx")
        elif spent:
            kinds.append("pure")
        else:
            kinds.append("unknown")
        if kinds[-1] != "none":
            eps += [s.get("epsilon") for s in spent]
            dl += [s.get("delta") for s in spent]
            rho += [s.get("rho") for s in spent]
    return CurvePrivacy(label, _join(str(a.get("name", "")) for a in entries), _join(kinds) or "unknown",
                        _range(eps), _range(dl), _range(rho), neighbouring, _join(notes), "manifest")


def _join(values) -> str:
    return " / ".join(dict.fromkeys(v for v in values if v and v != "nan"))


def _range(values) -> str:
    """'2', '1 … 31.62' or '' for the finite numbers among ``values``."""
    if values is None:
        return ""
    nums = sorted({float(v) for v in pd.to_numeric(pd.Series(list(values), dtype=object), errors="coerce")
                   if not (v is None or math.isnan(float(v)))})
    if not nums:
        return ""
    if len(nums) == 1:
        return fmt(nums[0])
    if len(nums) <= 4:
        return ", ".join(fmt(v) for v in nums)
    return f"{fmt(nums[0])} … {fmt(nums[-1])} ({len(nums)} values)"


_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:e[+-]?\d+)?")


def compact_note(note: str) -> str:
    """A curve's note (its rows' notes joined by ' / ') as one list of distinct clauses, without the 'not DP: '
    prefixes; clauses that differ only in their numbers (e.g. the true δ of a classic calibration at each ε) are
    said once with the numbers elided ('…'), so a footnote does not repeat a clause per grid point."""
    clauses: list[str] = []
    for part in note.split(" / "):
        clauses += [c.strip() for c in part.strip().removeprefix("not DP: ").split("; ") if c.strip()]
    groups: dict[str, list[str]] = {}
    for c in clauses:
        groups.setdefault(_NUMBER.sub("…", c), []).append(c)
    return "; ".join(_merge(v) for v in groups.values())


def _merge(variants: list[str]) -> str:
    """One clause for variants that differ only in numbers: a number kept where all agree, '…' where they differ."""
    parts = [_NUMBER.split(v) for v in variants]      # text pieces between the numbers (the same in every variant)
    nums = [_NUMBER.findall(v) for v in variants]
    out = parts[0][0]
    for i, piece in enumerate(parts[0][1:]):
        vals = {n[i] for n in nums}
        out += (vals.pop() if len(vals) == 1 else "…") + piece
    return out


def short_reason(note: str) -> str:
    """The main reason of a curve's note for a figure's footnote: the first clause of ``compact_note`` (a row's note
    is 'not DP: reason; further statements'); the report's privacy table and the rows' ``privacy_note`` keep the
    whole note."""
    first = compact_note(note).split("; ")[0].strip().removesuffix(" — not DP").strip()
    return first or "no differential-privacy guarantee"


class NotDP:
    """The curves of one experiment that are not DP (guarantee ``none``), with their reasons, for marking labels.

    ``name(label)`` is the label with a dagger when the curve is not DP (and records that it was shown);
    ``footnote()`` is the note for the labels shown so far: "† not differentially private: LR (…): non-private
    reference: no privacy protection".
    """

    def __init__(self, df: pd.DataFrame | None, manifest: dict[str, Any]) -> None:
        self.reasons: dict[str, str] = {c.label: short_reason(c.note) for c in curve_privacy(df, manifest)
                                        if c.not_dp}
        self.shown: list[str] = []

    def __contains__(self, label: object) -> bool:
        return label in self.reasons

    def name(self, label: str) -> str:
        """``label``, followed by a dagger when its curve is not DP."""
        label = str(label)
        if label not in self.reasons:
            return label
        if label not in self.shown:
            self.shown.append(label)
        return f"{label} {DAGGER}"

    def footnote(self, labels: list[str] | None = None, limit: int = 4) -> str:
        """'† not differentially private: “A”, “B” — reason; “C” — reason' for ``labels`` (default: those shown),
        labels that share a reason grouped, at most ``limit`` named per reason; '' when there are none."""
        labels = [lb for lb in (self.shown if labels is None else labels) if lb in self.reasons]
        if not labels:
            return ""
        by_reason: dict[str, list[str]] = {}
        for lb in dict.fromkeys(labels):
            by_reason.setdefault(self.reasons[lb], []).append(lb)
        if len(by_reason) == 1:  # the marked labels say which curves: the reason is enough
            return f"{DAGGER} not differentially private: {next(iter(by_reason))}"
        parts = []
        for reason, lbs in by_reason.items():
            named = ", ".join(f"“{lb}”" for lb in lbs[:limit])
            named += f" and {len(lbs) - limit} more" if len(lbs) > limit else ""
            parts.append(f"{named} — {reason}")
        return f"{DAGGER} not differentially private: " + "; ".join(parts)
