"""dpexp: reproducible experiments on differentially private linear regression.

The Python API (docs/api.md): ``dpexp.run(config, out=None, **overrides)`` and ``dpexp.load(results_dir)`` return
``dpexp.Results``; ``dpexp.estimators`` holds scikit-learn style estimators.  They are imported on first use, so
``import dpexp`` (and ``dpexp --help``) stays fast.
"""

from __future__ import annotations

from typing import Any

from dpexp.version import __version__

__all__ = ["Results", "__version__", "estimators", "load", "run"]


def __getattr__(name: str) -> Any:
    if name in ("run", "load", "Results"):
        from dpexp import api

        return getattr(api, name)
    if name == "estimators":
        import importlib

        return importlib.import_module("dpexp.estimators")
    raise AttributeError(f"module 'dpexp' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
