"""What a release spent (``Spend``) and what a run guarantees (``Guarantee``): the records of the privacy map.

A ``Spend`` is written by a mechanism from the parameters it was actually called with; ``accounting.compose`` turns
the spends of one run into a ``Guarantee``.  A run is one independent execution of an algorithm on one split (one
*trial*); every number here is per run.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

NAN = float("nan")

Notion = Literal["pure", "approx", "zcdp", "none"]
KINDS: tuple[str, ...] = ("pure", "approx", "zcdp", "none")

#: result columns the runner writes for every row, in this order (values from ``Guarantee.row()``)
GUARANTEE_COLUMNS: tuple[str, ...] = ("guarantee", "epsilon_spent", "delta_spent", "rho_spent", "privacy_note")


class PrivacyAccountingError(Exception):
    """A privacy map is inconsistent (e.g. the noise drawn is smaller than the ε declared, or notions that cannot be
    composed without a conversion δ).  A bug in the calling algorithm, never a user error."""


@dataclass(frozen=True, init=False)
class Spend:
    """One release's cost, for one run.

    ``notion``: ``pure`` (ε-DP; ``delta`` = 0), ``approx`` ((ε, δ)-DP), ``zcdp`` (ρ-zCDP) or ``none`` (not DP;
    ``note`` says why).  ``rho`` may also be set on an ``approx`` spend when the mechanism is exactly ρ-zCDP too
    (Gaussian noise), so that it composes with zCDP releases without loss.  ``sensitivity`` and ``scale`` (Laplace b,
    Gaussian σ, Gamma scale, Student-t multiplier …) are what was used — the largest sensitivity and the smallest
    scale over trials when they vary per trial.  ``trial`` is None when the release belongs to every trial of the
    call (drawn with ``size=trials``) and the trial index when it was drawn inside a per-trial loop
    (``PrivacyLedger.for_trial``).  Each Spend also keeps ``_ck``, its ``composition_key`` (the memo key of
    ``PrivacyLedger.guarantee``; not a field: equality, hash, repr and ``to_dict`` ignore it).
    """

    mechanism: str
    notion: Notion
    epsilon: float = NAN
    delta: float = NAN
    rho: float = NAN
    sensitivity: float = NAN
    scale: float = NAN
    label: str = ""
    note: str = ""
    trial: int | None = None

    def __init__(self, mechanism: str, notion: Notion, epsilon: float = NAN, delta: float = NAN, rho: float = NAN,
                 sensitivity: float = NAN, scale: float = NAN, label: str = "", note: str = "",
                 trial: int | None = None) -> None:
        # the frozen dataclass's own __init__ (same signature, same checks), setting the fields with one update of
        # the instance dict instead of one object.__setattr__ each: a Spend is made per release, ~1 per GDSC cell
        if notion not in KINDS:
            raise PrivacyAccountingError(f"unknown notion {notion!r}; expected one of {KINDS}")
        if notion == "pure" and not (epsilon >= 0):
            raise PrivacyAccountingError(f"a pure spend needs epsilon >= 0, got {epsilon}")
        if notion == "approx" and not (epsilon >= 0 and 0 <= delta <= 1):
            raise PrivacyAccountingError(f"an approx spend needs epsilon >= 0, delta in [0, 1], got "
                                         f"({epsilon}, {delta})")
        if notion == "zcdp" and not (rho >= 0):
            raise PrivacyAccountingError(f"a zcdp spend needs rho >= 0, got {rho}")
        if notion == "none" and not note:
            raise PrivacyAccountingError("a 'none' spend needs a note saying why it is not DP")
        # ``_ck``: its ``composition_key`` (inline: a Spend is made per release)
        self.__dict__.update(mechanism=mechanism, notion=notion, epsilon=epsilon, delta=delta, rho=rho,
                             sensitivity=sensitivity, scale=scale, label=label, note=note, trial=trial,
                             _ck=epsilon if notion == "pure" and trial is None and not note
                             else (trial, notion, epsilon, delta, rho, note))

    def to_dict(self) -> dict[str, Any]:
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in asdict(self).items()}


def composition_key(trial: int | None, notion: str, epsilon: float, delta: float, rho: float, note: str) -> Any:
    """What ``accounting.compose`` reads of a spend, as one hashable value (the memo key of
    ``PrivacyLedger.guarantee``, kept on each ``Spend`` as ``_ck``): of a pure spend of every trial without a note
    (most releases) its ε alone — composition reads nothing else of it (rules 3-5 of ``compose``: Σε, or ε²/2) — and
    of any other the tuple (trial, notion, ε, δ, ρ, note).  Equal keys, equal compositions."""
    if notion == "pure" and trial is None and not note:
        return epsilon
    return (trial, notion, epsilon, delta, rho, note)


def tidy(x: float) -> float:
    """Remove floating-point dust from a composed total: the nearest 12-significant-digit value when it is within a
    relative 1e-14 of ``x`` (a few ulps), else ``x`` unchanged.

    Presentation only: sums such as T·(ε/T) come out as 0.9999999999999999; a value such as δ = 2⁻³⁰ is kept exactly.
    """
    if not math.isfinite(x) or x == 0:
        return float(x)
    r = float(f"{x:.12g}")
    return r if abs(r - x) <= 1e-14 * abs(x) else float(x)


@dataclass(frozen=True)
class Guarantee:
    """What one run of an algorithm guarantees for the private rows of its split.

    ``kind``: ``pure`` (``epsilon``, ``delta`` = 0), ``approx`` (``epsilon``, ``delta``; ``rho`` set when it was
    obtained by converting a zCDP total), ``zcdp`` (``rho``) or ``none`` (``reason`` says why; all numbers NaN —
    the noise may have been calibrated to some ε, but no ε is *spent* in the DP sense).  ``notes`` carry conditions
    a reader must see (e.g. a classic Gaussian calibration outside its proof), written to the ``privacy_note``
    column together with ``reason``.
    """

    kind: Notion
    epsilon: float = NAN
    delta: float = NAN
    rho: float = NAN
    reason: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise PrivacyAccountingError(f"unknown guarantee kind {self.kind!r}; expected one of {KINDS}")
        if self.kind == "none" and not self.reason:
            raise PrivacyAccountingError("a 'none' guarantee needs a reason")

    # ---- constructors
    @classmethod
    def none(cls, reason: str, notes: tuple[str, ...] = ()) -> "Guarantee":
        return cls("none", reason=reason, notes=tuple(notes))

    @classmethod
    def pure(cls, epsilon: float, notes: tuple[str, ...] = ()) -> "Guarantee":
        return cls("pure", epsilon=tidy(epsilon), delta=0.0, notes=tuple(notes))

    # ---- derived views
    @property
    def is_dp(self) -> bool:
        return self.kind != "none"

    @property
    def note(self) -> str:
        """The one-line ``privacy_note``: the reason (kind none) and the notes, joined by '; '."""
        parts = ([f"not DP: {self.reason}"] if self.kind == "none" else []) + list(self.notes)
        return "; ".join(parts)

    def row(self) -> tuple[str, float, float, float, str]:
        """Values of ``GUARANTEE_COLUMNS``."""
        return self.kind, self.epsilon, self.delta, self.rho, self.note

    def as_row(self) -> dict[str, Any]:
        return dict(zip(GUARANTEE_COLUMNS, self.row()))

    def describe(self) -> str:
        """Short human text, e.g. 'ε = 1 (pure DP)', '(ε, δ) = (1, 1e-05)', 'ρ = 0.5 (zCDP)', 'not DP: …'."""
        if self.kind == "pure":
            return f"ε = {self.epsilon:g} (pure DP)"
        if self.kind == "approx":
            return f"(ε, δ) = ({self.epsilon:g}, {self.delta:g})" + (
                f" (from ρ = {self.rho:g} zCDP)" if math.isfinite(self.rho) else "")
        if self.kind == "zcdp":
            return f"ρ = {self.rho:g} (zCDP)"
        return f"not DP: {self.reason}"

    def within(self, epsilon: float, delta: float = 0.0, rel: float = 1e-9) -> bool:
        """True if this guarantee is at least as strong as (ε, δ)-DP (zCDP is not compared: convert first)."""
        if self.kind == "pure":
            return self.epsilon <= epsilon * (1 + rel)
        if self.kind == "approx":
            return self.epsilon <= epsilon * (1 + rel) and self.delta <= delta * (1 + rel)
        return False

    # ---- downgrades and annotations (e.g. from the dataset's preprocessing statement)
    def with_note(self, note: str) -> "Guarantee":
        return replace(self, notes=self.notes + (note,))

    def not_dp(self, reason: str) -> "Guarantee":
        """The same run, declared not DP (e.g. its dataset's preprocessing leaked private rows)."""
        if self.kind == "none":
            return replace(self, reason=f"{self.reason}; {reason}")
        return Guarantee.none(reason, notes=self.notes)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["notes"] = list(self.notes)
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in d.items()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Guarantee":
        def f(v: Any) -> float:
            return NAN if v is None else float(v)

        return cls(d["kind"], f(d.get("epsilon")), f(d.get("delta")), f(d.get("rho")), d.get("reason", ""),
                   tuple(d.get("notes", ())))


#: what the runner writes for a non-private baseline
NON_PRIVATE = Guarantee.none("non-private baseline")

#: the reason on the rows of a metric that reads the private rows (``Metric.reads_private``): an evaluation against
#: private data, never a release, whatever the algorithm spent
EVALUATION = "evaluation against private data"
#: how an evaluation row names the guarantee of the release it evaluates (in its ``privacy_note``)
RELEASE_PREFIX = "release: "
NAN_COLUMNS = (NAN, NAN, NAN)


def evaluation_columns(cols: tuple[Any, ...]) -> tuple[Any, ...]:
    """The ``GUARANTEE_COLUMNS`` of a row of an evaluation metric, from those of its cell (``cols``: kind, ε, δ, ρ,
    note, as the release's rows carry them): kind ``none``, no numbers, and the note 'not DP: evaluation against
    private data; release: <the cell's guarantee>; <the cell's notes>' — the release's guarantee stays readable
    (``release_kind``), so plots and the report can tell an evaluated DP release from a non-DP one."""
    kind, eps, dl, rho, note = cols
    if kind == "none":
        reason = str(note).removeprefix("not DP: ")
        return ("none", *NAN_COLUMNS, f"not DP: {EVALUATION}; {RELEASE_PREFIX}not DP: {reason}")
    g = Guarantee(kind, float(eps), float(dl), float(rho))
    return ("none", *NAN_COLUMNS, f"not DP: {EVALUATION}; {RELEASE_PREFIX}{g.describe()}" + (f"; {note}" if note
                                                                                            else ""))


def is_evaluation(note: str) -> bool:
    """True for the ``privacy_note`` of an evaluation row (``evaluation_columns``)."""
    return str(note).startswith(f"not DP: {EVALUATION}; ")


def release_kind(note: str) -> str:
    """The guarantee kind of the release an evaluation row evaluates (pure, approx, zcdp or none), read back from
    its note (``Guarantee.describe``'s forms); '' for a note that is not an evaluation row's."""
    if not is_evaluation(note):
        return ""
    rel = str(note).split(f"; {RELEASE_PREFIX}", 1)[1]
    if rel.startswith("not DP: "):
        return "none"
    if rel.startswith("(ε, δ) = "):
        return "approx"
    if rel.startswith("ρ = "):
        return "zcdp"
    return "pure" if rel.startswith("ε = ") else ""
