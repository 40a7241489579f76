"""The audit table: printed, and written as CSV and Markdown."""

from __future__ import annotations

import csv
import math
from dataclasses import asdict
from pathlib import Path

from dpexp.audit.core import AuditResult

COLUMNS = ["algorithm", "claimed_epsilon", "claimed_delta", "epsilon_lb", "trials", "verdict", "seconds",
           "relation", "neighbours", "projection", "event", "k_d", "k_dprime", "n_d", "n_dprime", "note"]
SHORT = ["algorithm", "claimed_epsilon", "claimed_delta", "epsilon_lb", "trials", "verdict", "seconds"]


def _cell(r: AuditResult, col: str) -> str:
    v = getattr(r, col)
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        if col == "seconds":
            return f"{v:.1f}"
        if col == "claimed_delta":
            return f"{v:g}"
        return f"{v:.4f}" if col != "claimed_epsilon" else f"{v:g}"
    return str(v)


def format_table(results: list[AuditResult]) -> str:
    """Fixed-width table of the short columns plus the witness (event and counts) of every FAIL."""
    head = ["algorithm", "eps", "delta", "eps_lb", "trials", "verdict", "seconds"]
    rows = [[_cell(r, c) for c in SHORT] for r in results]
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in rows]
    for r in results:
        if r.verdict == "FAIL":
            lines.append(f"FAIL {r.algorithm}: {r.neighbours}; {r.projection}; event {r.event}; "
                         f"counts {r.k_d}/{r.n_d} on D vs {r.k_dprime}/{r.n_dprime} on D'")
        elif r.verdict in ("ERROR", "NOT-DP", "SKIP") and r.note:
            lines.append(f"{r.verdict} {r.algorithm}: {r.note}")
    return "\n".join(lines)


def write_csv(results: list[AuditResult], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in results:
            row = asdict(r)
            w.writerow({c: row[c] for c in COLUMNS})
    return path


def _md_escape(s: str) -> str:
    return s.replace("|", "\\|")


def write_markdown(results: list[AuditResult], path: Path, settings: dict[str, object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["# dpexp privacy audit", ""]
    lines.append("Settings: " + ", ".join(f"{k} = {v}" for k, v in settings.items()))
    lines += ["", "A PASS means no violation was detected: the audited value is a lower confidence bound on the",
              "privacy loss, not a proof of privacy (see docs/audit.md).", ""]
    cols = ["algorithm", "claimed ε", "claimed δ", "audited ε lower bound", "trials", "verdict", "seconds",
            "witness / note"]
    lines.append("| " + " | ".join(cols) + " |")
    lines.append("|" + "---|" * len(cols))
    for r in results:
        if r.verdict in ("PASS", "FAIL"):
            wit = (f"{r.neighbours}; {r.projection}; {r.event}; {r.k_d}/{r.n_d} vs {r.k_dprime}/{r.n_dprime}")
        else:
            wit = r.note
        vals = [_cell(r, c) for c in SHORT] + [wit]
        lines.append("| " + " | ".join(_md_escape(v) for v in vals) + " |")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
