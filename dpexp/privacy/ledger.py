"""The privacy ledger of one run: a noise source plus the spends its mechanisms recorded.

The runner makes one ``PrivacyLedger`` per (cell, split) and hands it to the algorithm in place of the bare
generator; every mechanism in ``dpexp.privacy.mechanisms`` accepts it where it accepts a generator, draws from
``ledger.noise`` and appends a ``Spend``.  At the end the algorithm puts ``ledger.guarantee()`` on its ``Output``.

Trials: a mechanism called once with ``size=trials`` makes ``trials`` independent releases, one per run, and is
recorded once (a run pays once).  A release drawn inside a per-trial loop is recorded inside
``with ledger.for_trial(t):`` so that it is charged to trial t only; the guarantee is then the worst trial's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import operator
from typing import Any, Iterator

import numpy as np

from dpexp import cache
from dpexp.privacy import accounting
from dpexp.privacy.guarantee import Guarantee, Spend, composition_key
from dpexp.privacy.noise import SecureNoise, SeededNoise, as_noise


class PrivacyLedger:
    """Spends of one run, and the noise source its mechanisms draw from.

    ``noise``: a ``SeededNoise``/``SecureNoise`` (or anything with the ``NoiseSource`` API); a
    ``numpy.random.Generator`` is wrapped in ``SeededNoise``.  ``composed``: a dict shared by ledgers composed in
    one thread (the runner's, per chunk) where ``guarantee`` keeps the guarantees it found by their composition key,
    so most cells look theirs up there (one dict look-up) instead of in the process-wide memo.
    """

    def __init__(self, noise: Any, composed: dict[tuple[Any, ...], Guarantee] | None = None) -> None:
        # a noise source (the runner's, once per cell) is used as it is, checked first (one ``isinstance`` per
        # cell): what ``as_noise`` returns for one
        if not isinstance(noise, (SeededNoise, SecureNoise)):
            noise = SeededNoise(noise) if isinstance(noise, np.random.Generator) else as_noise(noise)
        self.noise = noise
        self.spends: list[Spend] = []
        self._trial: int | None = None
        self._composed = composed

    # ---- recording
    def record(self, spend: Spend) -> Spend:
        """Append ``spend`` (tagged with the current ``for_trial`` index, if any) and return it."""
        if self._trial is not None and spend.trial is None:
            spend = dataclasses.replace(spend, trial=self._trial)
        self.spends.append(spend)
        return spend

    def not_dp(self, reason: str, label: str = "") -> Spend:
        """Declare that this run is not DP, with a one-line reason (e.g. 'clipping σ from private rows').  The whole
        guarantee becomes ``none`` with that reason, whatever else was spent."""
        return self.record(Spend("not DP", "none", label=label, note=reason))

    def public_only(self, label: str = "no private rows released") -> Spend:
        """Declare that this run released nothing computed from private rows: a 0-DP spend."""
        return self.record(Spend("public only", "pure", epsilon=0.0, delta=0.0, label=label))

    @contextlib.contextmanager
    def for_trial(self, t: int) -> Iterator["PrivacyLedger"]:
        """Charge the spends recorded inside the block to trial ``t`` only (per-trial loops)."""
        if self._trial is not None:
            raise RuntimeError("for_trial blocks do not nest")
        self._trial = int(t)
        try:
            yield self
        finally:
            self._trial = None

    # ---- reading
    def guarantee(self, approx_delta: float | None = None) -> Guarantee:
        """The run's guarantee (``accounting.compose`` per trial, then ``accounting.worst`` over trials).

        ``approx_delta``: convert a zCDP total to (ε, approx_delta)-DP (needed when zCDP and (ε, δ) releases without
        a zCDP form are mixed; optional otherwise, e.g. an algorithm that reports (ε, δ) from zCDP steps).

        In secure mode, a run that drew from a textbook floating-point sampler (``SecureNoise.textbook_used``: the
        Gamma-norm, Gumbel-max, Student-t samplers, the DCA clients' Gaussian shares) is ``none``: secure mode is
        for releases, and those samplers' low bits may reveal the value they perturb (Mironov 2012), so the
        idealised mechanism's ε is not what the floats guarantee.  Seeded mode keeps the idealised guarantee (it is
        for simulation; docs/privacy.md).
        """
        used = getattr(self.noise, "textbook_used", None)
        if used:
            g = self._composed_guarantee(approx_delta)
            if g.kind == "none":
                return g
            return Guarantee.none(f"secure mode with a textbook floating-point sampler ({', '.join(sorted(used))}): "
                                  "not floating-point safe (Mironov 2012)", g.notes)
        return self._composed_guarantee(approx_delta)

    def _composed_guarantee(self, approx_delta: float | None) -> Guarantee:
        # a pure function of what composition reads of each spend: memoised (a run asks once per cell, and the
        # cells of a variant mostly spend alike); the key is the spends' ``composition_key``s, each made with its
        # Spend (``_ck``: read in C, one float for most), the spends copied only when composed; found first in the
        # ledger's ``composed`` dict, if it has one (no lock, no LRU upkeep)
        spends = self.spends
        try:
            key = (approx_delta, *map(_CK, spends))
        except AttributeError:   # a Spend made without its key (e.g. unpickled from an older run): made here
            key = (approx_delta, *[composition_key(*_COMPOSED(s)) for s in spends])
        known = self._composed
        try:
            if known is not None:
                got = known.get(key)
                if got is not None:
                    return got
            got = cache.memo("privacy.ledger_guarantee", key, lambda: _compose(list(spends), approx_delta),
                             maxsize=4096)
        except TypeError:   # an unhashable field (never recorded by dpexp's mechanisms): composed directly
            return _compose(list(spends), approx_delta)
        if known is not None:
            known[key] = got
        return got

    @property
    def secure(self) -> bool:
        return bool(getattr(self.noise, "secure", False))

    def summary(self) -> list[dict[str, Any]]:
        """The spends as plain dicts (for manifests and debugging)."""
        return [s.to_dict() for s in self.spends]

    def __repr__(self) -> str:
        return f"PrivacyLedger({self.noise!r}, {len(self.spends)} spends)"


#: what composition reads of a spend (``composition_key``'s arguments) and the key each Spend keeps
_COMPOSED = operator.attrgetter("trial", "notion", "epsilon", "delta", "rho", "note")
_CK = operator.attrgetter("_ck")


def _compose(spends: list[Spend], approx_delta: float | None) -> Guarantee:
    """``accounting.compose`` of the spends of every trial (those of no trial count in each), then
    ``accounting.worst`` over the trials."""
    common = [s for s in spends if s.trial is None]
    trials = sorted({s.trial for s in spends if s.trial is not None})
    if not trials:
        return accounting.compose(common, approx_delta)
    return accounting.worst([accounting.compose(common + [s for s in spends if s.trial == t], approx_delta)
                             for t in trials])


def as_ledger(source: Any) -> PrivacyLedger:
    """The ledger an algorithm works with: ``source`` itself if it is one, else a fresh ledger around it (a
    ``numpy.random.Generator`` — e.g. from the audit or an old test — or a noise source)."""
    if isinstance(source, PrivacyLedger):
        return source
    if isinstance(source, (np.random.Generator, SeededNoise, SecureNoise)):
        return PrivacyLedger(source)
    return PrivacyLedger(as_noise(source))
