"""Every shipped mutant changes what it targets (issue 27): on a fixed input — every candidate pair of its
algorithm's audit design, run through the audit's production path (``run_many`` with both splits) with the same
streams — the released numbers or the claimed (ε, δ) differ with the bug injected.  A mutant that patches a
function its algorithm no longer calls (``fmlr/unclipped`` once patched ``scale_unit`` after fmlr stopped calling
it) fails here instead of silently "passing" the audit."""

from __future__ import annotations

import numpy as np
import pytest

from dpexp import registry
from dpexp.audit.mutants import MUTANTS, injection

registry.load_all()


def _same(a, b) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))
    return type(a) is type(b) and a == b


@pytest.mark.usefixtures("isolated_cache")
@pytest.mark.parametrize("name", [m.name for m in MUTANTS])
def test_mutant_injects_its_bug(name):
    clean, mutated = injection(name)
    assert any(isinstance(r, np.ndarray) for r in clean["released"]), f"the clean algorithm failed: {clean}"
    changed = [k for k in ("released", "claim") if not _same(clean[k], mutated[k])]
    assert changed, f"{name} changes neither the released numbers nor the claim: it injects nothing"


def test_a_mutant_of_nothing_is_caught(monkeypatch):
    """The check can fail: a mutant whose patch does nothing is reported as injecting nothing."""
    import contextlib
    import dataclasses

    from dpexp.audit import mutants

    noop = dataclasses.replace(MUTANTS[0], name="noop", patch=contextlib.nullcontext)
    monkeypatch.setattr(mutants, "MUTANTS", [*mutants.MUTANTS, noop])
    clean, mutated = injection("noop")
    assert all(_same(clean[k], mutated[k]) for k in ("released", "claim"))
