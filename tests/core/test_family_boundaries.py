"""Families never import each other (ARCHITECTURE.md, docs/extending.md): what two families share lives below both
of them (e.g. the auxiliary-data generators in ``dpexp.models.bayes_lr``, used by GDSC's tuning and DCA's threshold
search).  Checked on the source: every import statement of every module of a family."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

FAMILIES = Path(__file__).resolve().parents[2] / "dpexp" / "families"


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


@pytest.mark.parametrize("family", sorted(p.name for p in FAMILIES.iterdir() if (p / "__init__.py").exists()))
def test_a_family_imports_no_other_family(family):
    others = {p.name for p in FAMILIES.iterdir() if (p / "__init__.py").exists()} - {family}
    bad = [f"{path.relative_to(FAMILIES)}: {m}" for path in sorted((FAMILIES / family).rglob("*.py"))
           for m in _imports(path) for o in others if m == f"dpexp.families.{o}" or m.startswith(f"dpexp.families.{o}.")]
    assert not bad, f"{family} imports another family: {bad}"
