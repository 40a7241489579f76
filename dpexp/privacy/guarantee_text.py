"""The grammar of ``Algorithm.guarantee_text``: an algorithm's guarantee as a function of its parameters, in words
that ``dpexp list algorithms NAME`` prints and a test checks against the code (so the text cannot drift).

Grammar (clauses separated by ``"; "`` outside parentheses)::

    <kind phrase>[, <relation>][ (<free text>)]            the guarantee with the default parameters
    <param>: <value> → <kind phrase>[ (<free text>)]        the guarantee when <param> is set to <value>

Kind phrases (the start of the phrase decides): ``pure ε-DP`` or ``0-DP`` → ``pure``; ``(ε, δ)-DP`` → ``approx``;
``ρ-zCDP`` → ``zcdp``; ``not DP`` → ``none``.  Example (rplr): ``"pure ε-DP, replace-one; sigma: data → not DP
(clipping σ from private rows)"``.  Values are parsed as YAML scalars (``data``, ``0.5``, ``true``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

KIND_PHRASES: tuple[tuple[str, str], ...] = (
    ("pure ε-DP", "pure"), ("0-DP", "pure"), ("(ε, δ)-DP", "approx"), ("ρ-zCDP", "zcdp"), ("not DP", "none"),
)


@dataclass(frozen=True)
class GuaranteeClause:
    kind: str                              # pure | approx | zcdp | none
    params: dict[str, Any]                 # {} for the default clause
    text: str


def kind_of(phrase: str) -> str:
    """The guarantee kind a phrase names (see the module docstring); ``ValueError`` when it names none."""
    p = phrase.strip()
    for prefix, kind in KIND_PHRASES:
        if p.startswith(prefix):
            return kind
    raise ValueError(f"guarantee phrase must start with one of {[k for k, _ in KIND_PHRASES]}, got {phrase!r}")


def parse(text: str) -> list[GuaranteeClause]:
    """The clauses of a ``guarantee_text``: the default clause first, then one per ``param: value → kind``."""
    import yaml

    if not text.strip():
        raise ValueError("empty guarantee_text")
    parts, depth, cur = [], 0, ""
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if ch == ";" and depth == 0 and text[i + 1:i + 2] == " ":
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts = [p.strip() for p in parts + [cur] if p.strip()]
    out = [GuaranteeClause(kind_of(parts[0]), {}, parts[0])]
    for part in parts[1:]:
        if "→" not in part:
            raise ValueError(f"guarantee clause must read 'param: value → kind', got {part!r}")
        cond, phrase = (s.strip() for s in part.split("→", 1))
        key, sep, value = cond.partition(":")
        if not sep or not key.strip().isidentifier():
            raise ValueError(f"guarantee clause condition must read 'param: value', got {cond!r}")
        out.append(GuaranteeClause(kind_of(phrase), {key.strip(): yaml.safe_load(value.strip())}, part))
    return out
