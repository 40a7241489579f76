"""One small registry for datasets, algorithms, metrics and plot kinds (name -> class or function).

Components register themselves with the decorators below when their module is imported.  ``load_all()`` imports
every module of the core packages ``dpexp.datasets``, ``dpexp.metrics`` and ``dpexp.plotting`` and every module
below ``dpexp.families`` (a ``pkgutil`` walk), so a new component is found by being a file in one of those folders:
there is no list to edit.  Then it loads the entry points of the group ``dpexp.plugins`` (``PLUGIN_GROUP``) of
every installed distribution, as pytest and benchopt do: each names a module (``pkg.algorithms``) whose import
registers its components with the same decorators, or a callable (``pkg:register``) that is called once.  A
plugin may not replace a built-in name (``TypeError``, as for any name registered twice).  The registry is loaded
lazily so that ``dpexp --help`` stays fast.  ``builtin(kind, name)`` tells the components of ``dpexp`` itself
from those of plugins: the registry-wide coverage tests (audit plan, colour) hold the built-in ones to them, and a
plugin algorithm without an audit plan runs with one warning (``dpexp audit`` reports it as ERROR).
"""

from __future__ import annotations

import difflib
import importlib
import os
import pkgutil
import types
import warnings
from importlib import metadata
from typing import Any, Callable, TypeVar

from dpexp.errors import UserError

#: packages whose every module is imported by ``load_all`` (core shared kinds first, then the paper families)
DISCOVERED_PACKAGES: tuple[str, ...] = ("dpexp.datasets", "dpexp.metrics", "dpexp.plotting", "dpexp.families")
#: the entry-point group through which installed packages register components (``[project.entry-points."dpexp.plugins"]``)
PLUGIN_GROUP = "dpexp.plugins"

_REGISTRIES: dict[str, dict[str, Any]] = {"algorithm": {}, "dataset": {}, "metric": {}, "plot": {}}
#: plot kind -> its pydantic options model (``register_plot(options=...)``), validated by ``spec`` before a run
_PLOT_OPTIONS: dict[str, Any] = {}
#: plot kind -> ``reads(spec, columns)``, the metrics its figure reads (``register_plot(reads=...)``)
_PLOT_READS: dict[str, Callable[[Any, list[str]], Any]] = {}
#: kind -> name -> the plugin (entry point "dist:name") that registered it; built-in components are not listed
_PLUGIN_OF: dict[str, dict[str, str]] = {k: {} for k in _REGISTRIES}
_loading_plugin: str | None = None
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
        if _loading_plugin is not None:
            _PLUGIN_OF[kind][name] = _loading_plugin
        return obj

    return deco


register_algorithm = _register("algorithm")
register_dataset = _register("dataset")
register_metric = _register("metric")
_register_plot_fn = _register("plot")


def register_plot(fn: T | None = None, *, options: Any = None,
                  reads: Callable[[Any, list[str]], Any] | None = None) -> Any:
    """Register a plot kind ``fn(df, spec, manifest, out_stem, formats) -> list[Path]`` under its function name.

    ``options`` is the kind's pydantic model of ``plots[i].options``; ``spec`` validates a config's options through
    ``plot_options(kind)`` before any work.  ``reads(spec, columns)``: the metrics whose rows the figure reads,
    given the table's columns (None: every metric).  The kind then gets only those metrics' rows, plus the first
    row of every distinct privacy tuple (``dpexp.results_table``), so its labels, looks and privacy marks are those
    of the whole table.  Use as ``@register_plot`` or ``@register_plot(options=Model, reads=fn)``.
    """
    def deco(f: T) -> T:
        _register_plot_fn(f)
        name = getattr(f, "name", None) or f.__name__  # type: ignore[attr-defined]
        if options is not None:
            _PLOT_OPTIONS[name] = options
        if reads is not None:
            _PLOT_READS[name] = reads
        return f

    return deco if fn is None else deco(fn)


def plot_reads(kind: str, spec: Any, columns: list[str]) -> list[str] | None:
    """The metrics plot kind ``kind`` reads for ``spec`` (None: every metric; see ``register_plot``)."""
    get("plot", kind)
    reads = _PLOT_READS.get(kind)
    metrics = reads(spec, columns) if reads is not None else None
    return None if metrics is None else list(metrics)


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
    """Import every module of ``DISCOVERED_PACKAGES``, then load the ``dpexp.plugins`` entry points, once
    (idempotent)."""
    global _loaded
    if _loaded:
        return
    for package in DISCOVERED_PACKAGES:
        _import_tree(package)
    load_plugins()   # a plugin that fails raises here, and again at the next call: never a silent half-registry
    _loaded = True


def plugin_entry_points() -> list[metadata.EntryPoint]:
    """The installed entry points of ``PLUGIN_GROUP``, sorted by distribution and name (a stable order)."""
    eps = metadata.entry_points(group=PLUGIN_GROUP)
    return sorted(eps, key=lambda ep: (getattr(ep.dist, "name", "") or "", ep.name))


def load_plugins() -> list[str]:
    """Load every ``dpexp.plugins`` entry point not loaded yet (``load_all`` calls it) and return their names
    ("dist:name").  A plugin that fails to import raises ``UserError`` naming it; an algorithm it registers without
    an audit plan is accepted with one warning."""
    global _loading_plugin
    if _loading_plugin is not None:   # a plugin's import asked the registry for names: it is being loaded already
        return []
    done = {p for names_ in _PLUGIN_OF.values() for p in names_.values()} | _LOADED_PLUGINS
    loaded = []
    for ep in plugin_entry_points():
        label = f"{getattr(ep.dist, 'name', None) or '?'}:{ep.name}"
        if label in done:
            continue
        before = {k: set(v) for k, v in _REGISTRIES.items()}
        _loading_plugin = label
        try:
            obj = ep.load()
            if callable(obj) and not isinstance(obj, (type, types.ModuleType)):
                obj()
        except Exception as exc:  # an installed plugin that cannot load is named, not hidden
            raise UserError(f"plugin {label} ({PLUGIN_GROUP} entry point {ep.value!r}) failed to load: "
                            f"{type(exc).__name__}: {exc}") from exc
        finally:
            _loading_plugin = None
        _LOADED_PLUGINS.add(label)
        loaded.append(label)
        for name in sorted(set(_REGISTRIES["algorithm"]) - before["algorithm"]):
            cls = _REGISTRIES["algorithm"][name]
            said = os.environ.get(_SAID, "").split()
            if getattr(cls, "private", True) and getattr(cls, "audit", None) is None and name not in said:
                # said once: worker processes (which inherit the environment) load the plugin again, silently
                os.environ[_SAID] = " ".join([*said, name])
                warnings.warn(f"algorithm {name!r} of plugin {label} declares no audit plan: it runs, but `dpexp "
                              "audit` reports it as ERROR (set `audit = AuditPlan(...)` on the class, "
                              "docs/extending.md)", UserWarning, stacklevel=2)
    return loaded


_LOADED_PLUGINS: set[str] = set()
#: environment variable naming the plugin algorithms whose missing audit plan was said (inherited by workers)
_SAID = "DPEXP_PLUGIN_WARNED"


def plugin_of(kind: str, name: str) -> str | None:
    """The plugin ("dist:entry-point") that registered ``name`` of ``kind``; None for a built-in component."""
    load_all()
    return _PLUGIN_OF[kind].get(name)


def builtin(kind: str, name: str) -> bool:
    """True for a component of ``dpexp`` itself (not registered by a plugin)."""
    return plugin_of(kind, name) is None


def builtin_names(kind: str) -> list[str]:
    """``names(kind)`` without the components of plugins: what the registry-wide coverage tests check."""
    return [n for n in names(kind) if builtin(kind, n)]


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
