"""Figure titles from the manifest: the config's title with ``{placeholders}`` filled from the *resolved* config, and
a note saying how the run differed from the config (``--fast``, ``--set``, ``--repeats``).

A title may name the resolved values it states — ``"GDSC, d = {d}, ε = {epsilon}"`` — so that a run with
``--set privacy.epsilon=[1,2]`` is titled "ε = 1, 2", never the config's "ε = 2".  Placeholders: ``epsilon``,
``delta``, ``n_private``, ``n_public``, ``n_test`` (the grid values, in order), ``repeats``, ``trials``,
``experiment``, and every dataset parameter (``d``, ``state``, ...; several datasets: their distinct values).  An
unknown placeholder is left as written.
"""

from __future__ import annotations

import re
from typing import Any

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def number(v: Any) -> str:
    """A grid value as text: 2.0 -> '2', 0.0001 -> '0.0001', 1e-06 -> '1e-6', 'all' -> 'all'."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    s = f"{float(v):g}"
    return re.sub(r"e([+-])0*(\d)", lambda m: "e" + ("-" if m[1] == "-" else "") + m[2], s)


def plural(n: int, noun: str) -> str:
    """'1 repeat', '2 repeats'."""
    return f"{n} {noun}{'s' * (n != 1)}"


def values(v: Any) -> str:
    """A config value (scalar or list) as text: [1, 2] -> '1, 2'."""
    if isinstance(v, (list, tuple)):
        return ", ".join(number(x) for x in dict.fromkeys(v)) if v else ""
    return "" if v is None else number(v)


def facts(manifest: dict[str, Any]) -> dict[str, str]:
    """What a title may state, from the manifest's resolved config (see the module docstring)."""
    cfg = manifest.get("config") or {}
    privacy, sizes = cfg.get("privacy") or {}, cfg.get("sizes") or {}
    out = {"epsilon": values(privacy.get("epsilon")), "delta": values(privacy.get("delta")),
           "n_private": values(sizes.get("n_private")), "n_public": values(sizes.get("n_public")),
           "n_test": values(sizes.get("n_test")), "repeats": values(cfg.get("repeats")),
           "trials": values(cfg.get("trials")), "experiment": str(manifest.get("experiment") or "")}
    params: dict[str, list[Any]] = {}
    for ds in cfg.get("datasets") or []:
        for k, v in ((ds or {}).get("params") or {}).items():
            vals = v if isinstance(v, list) else [v]
            if all(isinstance(x, (str, int, float, bool)) or x is None for x in vals):   # not a mapping (csv bounds)
                params.setdefault(k, []).extend(vals)
    for k, vs in params.items():
        out.setdefault(k, values(vs))
    return {k: v for k, v in out.items() if v != ""}


def fill(template: str, manifest: dict[str, Any]) -> str:
    """``template`` with every known ``{placeholder}`` replaced by its resolved value."""
    known = facts(manifest)
    return _PLACEHOLDER.sub(lambda m: known.get(m[1], m[0]), template)


def title_of(spec: Any, manifest: dict[str, Any]) -> str:
    """The plot's title (``plots[i].title``, else the config's ``title``, else the experiment name), filled."""
    template = (getattr(spec, "title", None) if spec is not None else None) or manifest.get("title") \
        or manifest.get("experiment", "")
    return fill(str(template), manifest)


def split_overrides(manifest: dict[str, Any]) -> tuple[bool, list[str], list[str]]:
    """(fast, the overrides ``--fast`` applied, the user's ``--set`` overrides).

    ``fast`` is the manifest's ``fast`` flag; runs recorded before the flag existed count as fast when their
    overrides start with the config's ``fast.set`` list (the order ``dpexp run --fast`` applies them in).
    """
    overrides = [str(o) for o in manifest.get("overrides") or []]
    fast_spec = (manifest.get("raw_config") or {}).get("fast")
    fast_set = [str(s) for s in (fast_spec.get("set") or [])] if isinstance(fast_spec, dict) else []
    if "fast" in manifest:
        fast = bool(manifest["fast"])
    else:
        fast = bool(fast_set) and overrides[:len(fast_set)] == fast_set
    n_fast = len(fast_set) if fast and overrides[:len(fast_set)] == fast_set else 0
    return fast, overrides[:n_fast], overrides[n_fast:]


def run_note(manifest: dict[str, Any]) -> str:
    """How this run differs from its config, for a line under a figure: 'quick look (--fast: 2 repeats, smaller
    grid); --set privacy.epsilon=[1,2]' ('' for a plain run)."""
    fast, _, user = split_overrides(manifest)
    parts = []
    reps = manifest.get("repeats_override")
    if fast:
        parts.append(f"quick look (--fast: {plural(int(reps), 'repeat') + ', ' if reps else ''}smaller grid)")
    elif reps:
        parts.append(f"--repeats {number(reps)}")
    if user:
        parts.append("--set " + ", ".join(user))
    return "; ".join(parts)
