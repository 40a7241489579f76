"""One small registry for datasets, algorithms, metrics and plot kinds (name -> class).

Components register themselves with the decorators below when their module is imported;
``load_all()`` imports every module listed in ``PLUGIN_MODULES`` (add yours there).  The registry is loaded
lazily so that ``dpexp --help`` stays fast.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, TypeVar

from dpexp.errors import UserError

PLUGIN_MODULES: list[str] = [
    # runner issue: synthetic data, robust private LR family, basic metrics
    "dpexp.families.gdsc.datasets.synthetic",
    "dpexp.families.gdsc.algorithms.rplr",
    "dpexp.families.diagnostics.algorithms.null_model",
    "dpexp.metrics.accuracy",
    "dpexp.plotting.base",
    # later issues append their modules here (one line each)
    "dpexp.families.slr.datasets.opportunity",
    "dpexp.families.slr.datasets.uci",
    "dpexp.families.slr.datasets.synthetic",
    "dpexp.families.slr.metrics",
    "dpexp.families.slr.plots",
    "dpexp.families.dca.datasets.uci",
    "dpexp.families.dca.algorithms.dlr",
    "dpexp.families.slr.algorithms.dp_gd",
    "dpexp.families.slr.algorithms.dp_theil_sen",
    "dpexp.families.slr.algorithms.noisy_stats",
    "dpexp.families.slr.algorithms.oi_mos",
    "dpexp.families.slr.algorithms.references",
    "dpexp.families.dca.algorithms.timing",
    "dpexp.families.dca.datasets.clients",
    "dpexp.families.dca.plots",
    "dpexp.families.gdsc.datasets.gdsc",
    "dpexp.families.gdsc.datasets.staged_synth",
    "dpexp.families.gdsc.algorithms.output_perturbation",
    "dpexp.families.gdsc.algorithms.functional_mechanism",
    "dpexp.families.gdsc.algorithms.baselines",
    "dpexp.families.gdsc.metrics",
    "dpexp.families.gdsc.plots",
]

_REGISTRIES: dict[str, dict[str, Any]] = {"algorithm": {}, "dataset": {}, "metric": {}, "plot": {}}
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
register_plot = _register("plot")


def load_all() -> None:
    """Import every plugin module once (idempotent)."""
    global _loaded
    if _loaded:
        return
    for mod in PLUGIN_MODULES:
        importlib.import_module(mod)
    _loaded = True


def names(kind: str) -> list[str]:
    load_all()
    return sorted(_REGISTRIES[kind])


def get(kind: str, name: str) -> Any:
    """The registered class of ``kind`` called ``name``; a ``UserError`` listing valid names otherwise."""
    load_all()
    try:
        return _REGISTRIES[kind][name]
    except KeyError:
        valid = ", ".join(sorted(_REGISTRIES[kind]))
        raise UserError(f"unknown {kind} {name!r}; valid: {valid}") from None


def items(kind: str) -> list[tuple[str, Any]]:
    load_all()
    return sorted(_REGISTRIES[kind].items())
