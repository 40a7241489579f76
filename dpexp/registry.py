"""One small registry for datasets, algorithms, metrics and plot kinds (name -> class or function).

Components register themselves with the decorators below when their module is imported.  ``load_all()`` imports
every module of the core packages ``dpexp.metrics`` and ``dpexp.plotting`` and every module below
``dpexp.families`` (a ``pkgutil`` walk), so a new component is found by being a file in one of those folders:
there is no list to edit.  The registry is loaded lazily so that ``dpexp --help`` stays fast.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from typing import Any, Callable, TypeVar

from dpexp.errors import UserError

#: packages whose every module is imported by ``load_all`` (core shared kinds first, then the paper families)
DISCOVERED_PACKAGES: tuple[str, ...] = ("dpexp.metrics", "dpexp.plotting", "dpexp.families")

_REGISTRIES: dict[str, dict[str, Any]] = {"algorithm": {}, "dataset": {}, "metric": {}, "plot": {}}
#: plot kind -> its pydantic options model (``register_plot(options=...)``), validated by ``spec`` before a run
_PLOT_OPTIONS: dict[str, Any] = {}
_loaded = False

T = TypeVar("T")


def _register(kind: str) -> Callable[[T], T]:
    def deco(obj: T) -> T:
        name = getattr(obj, "name", None)
        if kind == "plot" and not isinstance(name, str):
            name = getattr(obj, "__name__", None)  # plot kinds may be plain functions
        if not isinstance(name, str) or not name:
            raise TypeError(f"{obj!r} has no string 'name' attribute")
        existing = _REGISTRIES[kind].get(name)
        if existing is not None and existing is not obj:
            raise TypeError(f"{kind} name {name!r} registered twice ({existing!r} and {obj!r})")
        _REGISTRIES[kind][name] = obj
        return obj

    return deco


register_algorithm = _register("algorithm")
register_dataset = _register("dataset")
register_metric = _register("metric")
_register_plot_fn = _register("plot")


def register_plot(fn: T | None = None, *, options: Any = None) -> Any:
    """Register a plot kind ``fn(df, spec, manifest, out_stem, formats) -> list[Path]`` under its function name.

    ``options`` is the kind's pydantic model of ``plots[i].options``; ``spec`` validates a config's options through
    ``plot_options(kind)`` before any work.  Use as ``@register_plot`` or ``@register_plot(options=Model)``.
    """
    def deco(f: T) -> T:
        _register_plot_fn(f)
        if options is not None:
            _PLOT_OPTIONS[getattr(f, "name", None) or f.__name__] = options  # type: ignore[attr-defined]
        return f

    return deco if fn is None else deco(fn)


def plot_options(kind: str) -> Any:
    """The options model of plot kind ``kind`` (None when it takes no options); ``UserError`` for unknown kinds."""
    get("plot", kind)
    return _PLOT_OPTIONS.get(kind)


def _import_tree(package: str) -> None:
    """Import ``package`` and every module below it, in sorted order (an import error is raised, never hidden)."""
    pkg = importlib.import_module(package)
    for info in pkgutil.iter_modules(pkg.__path__):
        name = f"{package}.{info.name}"
        if info.ispkg:
            _import_tree(name)
        else:
            importlib.import_module(name)


def load_all() -> None:
    """Import every module of ``DISCOVERED_PACKAGES`` once (idempotent)."""
    global _loaded
    if _loaded:
        return
    for package in DISCOVERED_PACKAGES:
        _import_tree(package)
    _loaded = True


def names(kind: str) -> list[str]:
    load_all()
    return sorted(_REGISTRIES[kind])


def closest(name: str, choices: list[str]) -> str | None:
    """The choice a mistyped ``name`` most likely meant (case-insensitive; ``difflib`` similarity ≥ 0.6), or None."""
    lower = {c.lower(): c for c in choices}
    key = str(name).lower()
    if key in lower:
        return lower[key]
    hit = difflib.get_close_matches(key, list(lower), n=1, cutoff=0.6)
    return lower[hit[0]] if hit else None


def suggestion(kind: str, name: str) -> str:
    """'did you mean 'rplr'? ' for a mistyped name of ``kind`` ('' when nothing is close), to put before the list of
    valid names in an error."""
    best = closest(name, names(kind))
    return f"did you mean {best!r}? " if best is not None and best != name else ""


def get(kind: str, name: str) -> Any:
    """The registered class of ``kind`` called ``name``; a ``UserError`` suggesting the closest name and listing the
    valid ones otherwise."""
    load_all()
    try:
        return _REGISTRIES[kind][name]
    except KeyError:
        valid = ", ".join(sorted(_REGISTRIES[kind]))
        raise UserError(f"unknown {kind} {name!r}; {suggestion(kind, name)}valid: {valid}") from None


def items(kind: str) -> list[tuple[str, Any]]:
    load_all()
    return sorted(_REGISTRIES[kind].items())
