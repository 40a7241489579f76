"""Privacy mechanisms (releases) and accounting (privacy maps), kept separate as in OpenDP.

* ``noise``: where noise comes from — ``SeededNoise`` (the cell's numpy Generator, reproducible) or ``SecureNoise``
  (OS CSPRNG, never seeded);
* ``mechanisms``: Laplace, Gaussian (analytic / classic / zCDP), Gamma-norm, exponential (Gumbel-max), smooth
  sensitivity with Student's t — each draws from a noise source and records its ``Spend`` in a ``PrivacyLedger``;
* ``snapping``: Mironov's floating-point-safe Laplace release (secure mode);
* ``guarantee`` / ``accounting`` / ``ledger``: spends, their composition into a run's ``Guarantee``, the ledger.

See docs/privacy.md for the API, the composition rules and the conversion guide.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

# lazy re-exports: importing dpexp.privacy.accounting or .guarantee stays as cheap as the standard library
_EXPORTS = {
    "GUARANTEE_COLUMNS": "guarantee", "NON_PRIVATE": "guarantee", "Guarantee": "guarantee",
    "PrivacyAccountingError": "guarantee", "Spend": "guarantee",
    "PrivacyLedger": "ledger", "as_ledger": "ledger",
    "NOISE_MODES": "noise", "SecureNoise": "noise", "SeededNoise": "noise", "make_noise": "noise",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(f"dpexp.privacy.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'dpexp.privacy' has no attribute {name!r}")
