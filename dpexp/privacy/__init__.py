"""Privacy mechanisms (releases) and accounting (privacy maps), kept separate as in OpenDP.

* ``noise``: where noise comes from — ``SeededNoise`` (the cell's numpy Generator, reproducible) or ``SecureNoise``
  (OS CSPRNG, never seeded);
* ``mechanisms``: Laplace, Gaussian (analytic / classic / zCDP), Gamma-norm, exponential (Gumbel-max), smooth
  sensitivity with Student's t — each draws from a noise source and records its ``Spend`` in a ``PrivacyLedger``;
* ``snapping``: Mironov's floating-point-safe Laplace release (secure mode);
* ``guarantee`` / ``accounting`` / ``ledger``: spends, their composition into a run's ``Guarantee``, the ledger.

See docs/privacy.md for the API, the composition rules and the conversion guide.
"""

from dpexp.privacy.guarantee import GUARANTEE_COLUMNS, NON_PRIVATE, Guarantee, PrivacyAccountingError, Spend
from dpexp.privacy.ledger import PrivacyLedger, as_ledger
from dpexp.privacy.noise import NOISE_MODES, SecureNoise, SeededNoise, make_noise

__all__ = ["GUARANTEE_COLUMNS", "NON_PRIVATE", "NOISE_MODES", "Guarantee", "PrivacyAccountingError",
           "PrivacyLedger", "SecureNoise", "SeededNoise", "Spend", "as_ledger", "make_noise"]
