"""Audit views' access to an algorithm's own helpers, found through the algorithm rather than imported: the
modules that define its class and its bases are where its code looks its helpers up, so a view that wraps (or calls)
a helper there sees exactly what the algorithm's run computes — and the family's ``audit.py``, which the algorithm
modules import for their designs, needs no import back (the house stays one-directional)."""

from __future__ import annotations

import contextlib
import sys
from types import ModuleType
from typing import Any, Callable, Iterator


def algorithm_modules(alg: Any) -> list[ModuleType]:
    """The dpexp modules defining ``alg``'s class and its bases, most derived first, then those of the classes it
    names in ``audit_delegates`` (classes whose code its run executes: ``split_search`` runs an ``rplr``)."""
    classes = [*type(alg).__mro__, *(c for k in getattr(alg, "audit_delegates", ()) for c in k.__mro__)]
    names = dict.fromkeys(c.__module__ for c in classes if c.__module__.startswith("dpexp."))
    return [sys.modules[n] for n in names if n in sys.modules]


def helper(alg: Any, name: str) -> Callable[..., Any]:
    """The function ``name`` as ``alg``'s code sees it (first of ``algorithm_modules`` that has it)."""
    for m in algorithm_modules(alg):
        if hasattr(m, name):
            return getattr(m, name)
    raise AttributeError(f"{type(alg).__name__}: no helper {name!r} in {[m.__name__ for m in algorithm_modules(alg)]}")


@contextlib.contextmanager
def capturing(alg: Any, names: tuple[str, ...], record: dict[str, list[Any]]) -> Iterator[None]:
    """For the duration: each function in ``names`` seen by ``alg``'s modules appends its return value to
    ``record[name]`` (the algorithm's code runs unchanged; the originals are restored after, also on errors)."""
    saved = [(m, a, getattr(m, a)) for m in algorithm_modules(alg) for a in names if hasattr(m, a)]

    def wrap(a: str, f: Callable[..., Any]) -> Callable[..., Any]:
        def g(*args: Any, **kw: Any) -> Any:
            r = f(*args, **kw)
            record.setdefault(a, []).append(r)
            return r
        return g

    try:
        for m, a, f in saved:
            setattr(m, a, wrap(a, f))
        yield
    finally:
        for m, a, f in saved:
            setattr(m, a, f)
