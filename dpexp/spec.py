"""Experiment specs: pydantic models of the YAML, whole-config validation, ``--set`` overrides, grid expansion.

Validation happens entirely before any work.  Every problem becomes a ``ConfigError`` with one line
``<file>: <key path> <constraint>, got <value>``; unknown keys are errors.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types as at
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from dpexp.documented import Documented
from dpexp.errors import ConfigError, UserError

# ----------------------------------------------------------------------------------------------------------------
# Models


class _Strict(Documented):
    model_config = ConfigDict(extra="forbid")


def _grid(v: Any, what: str, kind: type) -> list[Any]:
    """Normalise a scalar-or-list grid value; raise ValueError with the offending value."""
    vals = v if isinstance(v, list) else [v]
    if len(vals) == 0:
        raise ValueError("must be a non-empty value or list, got []")
    out = []
    for x in vals:
        if isinstance(x, bool) or not isinstance(x, (int, float)) or (kind is int and not float(x).is_integer()):
            raise ValueError(f"must be {what}, got {x!r}")
        out.append(kind(x))
    return out


class DatasetSpec(_Strict):
    name: str
    label: str | None = None
    """name by which algorithm entries restrict themselves to this entry (algorithms[].datasets); default: the dataset
    name"""
    params: dict[str, Any] = Field(default_factory=dict)
    subsets: Union[Literal["all"], list[str], "FirstSubsets"] = "all"

    @property
    def key(self) -> str:
        """What ``algorithms[].datasets`` refers to: the label, else the name."""
        return self.label if self.label is not None else self.name


class FirstSubsets(_Strict):
    first: int = Field(gt=0)


DatasetSpec.model_rebuild()


class SizesSpec(_Strict):
    n_private: Any = Field(description="int, list of ints, or 'all'")
    n_public: Any = Field(0, validate_default=True)
    n_test: Any = Field(0, validate_default=True)

    @field_validator("n_private", mode="before")
    @classmethod
    def _priv(cls, v: Any) -> list[int]:
        if v == "all" or v == ["all"]:
            return [-1]
        vals = _grid(v, "an integer >= 0 or 'all'", int)
        if any(x < 0 for x in vals):
            raise ValueError(f"must be >= 0, got {min(vals)}")
        return vals

    @field_validator("n_public", "n_test", mode="before")
    @classmethod
    def _nonneg(cls, v: Any) -> list[int]:
        vals = _grid(v, "an integer >= 0", int)
        if any(x < 0 for x in vals):
            raise ValueError(f"must be >= 0, got {min(vals)}")
        return vals


class PrivacySpec(_Strict):
    epsilon: Any
    delta: Any = Field(0.0, validate_default=True)

    @field_validator("epsilon", mode="before")
    @classmethod
    def _eps(cls, v: Any) -> list[float]:
        vals = _grid(v, "a number > 0", float)
        bad = [x for x in vals if not (x > 0 and math.isfinite(x))]
        if bad:
            raise ValueError(f"must be > 0, got {bad[0]:g}")
        return vals

    @field_validator("delta", mode="before")
    @classmethod
    def _delta(cls, v: Any) -> list[float]:
        vals = _grid(v, "a number in [0, 1)", float)
        bad = [x for x in vals if not (0 <= x < 1)]
        if bad:
            raise ValueError(f"must be in [0, 1), got {bad[0]:g}")
        return vals


class AlgorithmSpec(_Strict):
    name: str
    label: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    skip_invalid: bool = False
    """leave out grid points whose parameters are invalid (e.g. off a simplex) instead of rejecting the config; counted
    in the manifest"""
    datasets: list[str] | None = Field(None, min_length=1)
    """run only on the dataset entries with these labels (datasets[].label, else name); default: on every dataset
    entry"""


class MetricSpec(_Strict):
    name: str
    label: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)


class PlotSpec(_Strict):
    kind: str = "curve"
    name: str | None = Field(None, description="output file stem (default: experiment name + index)")
    title: str | None = None
    metric: str | None = None
    x: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)


class FastSpec(_Strict):
    """What ``dpexp run --fast`` (``make figures FAST=1``) changes for a quick look: repeats and ``--set`` overrides."""

    repeats: int = Field(2, ge=1)
    set: list[str] = Field(default_factory=list, description="overrides applied before any --set of the CLI")


class ExperimentSpec(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    title: str = ""
    description: str = ""
    seed: int | None = Field(None, ge=0, lt=2**63)
    repeats: int = Field(1, ge=1, le=100_000)
    trials: int = Field(1, ge=1, le=10_000_000)
    chunk_work: int = Field(4000, ge=1, description="target cells x trials per chunk (fixed: independent of --jobs)")
    noise: Literal["seeded", "secure"] = "seeded"
    """privacy noise from the cell's seeded stream (reproducible: anyone with the manifest can regenerate it;
    experiments only) or from the OS CSPRNG (secure: never recorded)"""
    datasets: list[DatasetSpec] = Field(min_length=1)
    sizes: SizesSpec
    privacy: PrivacySpec
    algorithms: list[AlgorithmSpec] = Field(min_length=1)
    metrics: list[Union[str, MetricSpec]] = Field(min_length=1)
    plots: list[PlotSpec] = Field(default_factory=list)
    fast: FastSpec | None = None

    @field_validator("metrics", mode="after")
    @classmethod
    def _metric_objs(cls, v: list[Any]) -> list[MetricSpec]:
        return [MetricSpec(name=m) if isinstance(m, str) else m for m in v]


# ----------------------------------------------------------------------------------------------------------------
# Error formatting


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def _field_info(model: type[BaseModel] | None, loc: tuple[Any, ...]) -> tuple[Any, type[BaseModel] | None]:
    """Walk ``loc`` through nested models; return (FieldInfo of the last key or None, enclosing model)."""
    current: Any = model
    info = None
    parent = None
    for part in loc:
        if isinstance(current, type) and issubclass(current, BaseModel) and isinstance(part, str):
            if part not in current.model_fields:
                return None, current
            parent = current
            info = current.model_fields[part]
            current = info.annotation
        elif isinstance(part, int):
            args = get_args(current)
            current = args[0] if args else None
        else:
            return info, parent
        # unwrap Optional/Union/list to the first model type
        for _ in range(3):
            origin = get_origin(current)
            if origin is Union or (origin is not None and str(origin) == "types.UnionType"):
                models = [a for a in get_args(current) if isinstance(a, type) and issubclass(a, BaseModel)]
                current = models[0] if models else current
            else:
                break
    return info, parent


def _interval(info: Any) -> str | None:
    lo = hi = None
    lo_open = hi_open = True
    for m in getattr(info, "metadata", []):
        if isinstance(m, at.Gt):
            lo, lo_open = m.gt, True
        elif isinstance(m, at.Ge):
            lo, lo_open = m.ge, False
        elif isinstance(m, at.Lt):
            hi, hi_open = m.lt, True
        elif isinstance(m, at.Le):
            hi, hi_open = m.le, False
    if lo is not None and hi is not None:
        return f"must be in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
    if lo is not None:
        return f"must be {'>' if lo_open else '>='} {lo:g}"
    if hi is not None:
        return f"must be {'<' if hi_open else '<='} {hi:g}"
    return None


_TYPE_WORDS = {
    "int": "an integer", "float": "a number", "bool": "true or false", "string": "a string", "str": "a string",
    "list": "a list", "dict": "a mapping", "model": "a mapping",
}


def format_validation_error(exc: ValidationError, model: type[BaseModel] | None, prefix: tuple[Any, ...] = ()) -> str:
    """One line for the first error of a pydantic ``ValidationError`` (path, constraint, value)."""
    err = exc.errors(include_url=False)[0]
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and ("[" in p or p in ("str", "list[str]",
                                                                                          "FirstSubsets"))))
    path = _path(prefix + loc)
    etype = err["type"]
    value = err.get("input")
    if etype == "missing":
        return f"{path} is required"
    if etype == "extra_forbidden":
        _, parent = _field_info(model, loc)
        valid = f" (valid: {', '.join(parent.model_fields)})" if parent is not None else ""
        return f"{path} is not a known key{valid}"
    if etype in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        info, _ = _field_info(model, loc)
        constraint = _interval(info) if info is not None else None
        return f"{path} {constraint or err['msg'].lower()}, got {value!r}"
    if etype == "value_error":
        msg = str(err.get("ctx", {}).get("error", err["msg"]))
        msg = msg.removeprefix("Value error, ")
        return f"{path} {msg}" if ", got" in msg else f"{path} {msg}, got {value!r}"
    if etype == "string_pattern_mismatch":  # before the type words: it starts with "string_" too
        return f"{path} must match {err.get('ctx', {}).get('pattern')}, got {value!r}"
    for key, word in _TYPE_WORDS.items():
        if etype.startswith(key + "_") or etype == f"{key}_type":
            return f"{path} must be {word}, got {value!r}"
    if etype == "literal_error":
        return f"{path} {err['msg'].lower().replace('input should be', 'must be')}, got {value!r}"
    if etype in ("too_short", "too_long"):
        return f"{path} {err['msg'].lower().replace('list should', 'must')}, got {value!r}"
    return f"{path}: {err['msg']}, got {value!r}"


# ----------------------------------------------------------------------------------------------------------------
# Loading, overrides, resolution


def read_yaml(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise ConfigError(f"{path}: file not found")
    if path.is_dir():
        raise ConfigError(f"{path}: is a directory, expected a YAML file")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not valid UTF-8 (byte {exc.start}); save the file as UTF-8") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{path}: invalid YAML{where}: {problem}") from None
    if raw is None:
        raise ConfigError(f"{path}: the file is empty")
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: (top level) must be a mapping, got {type(raw).__name__}")
    return raw


_PATH_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def apply_override(raw: dict[str, Any], assignment: str) -> None:
    """Apply ``key.path[1].sub=value`` (value parsed as YAML) to ``raw`` in place."""
    if "=" not in assignment:
        raise UserError(f"--set {assignment!r}: expected key=value")
    key, _, value_text = assignment.partition("=")
    tokens = [(m.group(1), m.group(2)) for m in _PATH_TOKEN.finditer(key.strip())]
    if not tokens or "".join(t[0] or f"[{t[1]}]" for t in tokens).replace("].", "]") == "":
        raise UserError(f"--set {assignment!r}: empty key")
    try:
        value = yaml.safe_load(value_text)
    except yaml.YAMLError:
        raise UserError(f"--set {assignment!r}: value is not valid YAML") from None
    node: Any = raw
    for i, (name, index) in enumerate(tokens):
        last = i == len(tokens) - 1
        if index is not None:
            idx = int(index)
            if not isinstance(node, list) or idx >= len(node):
                raise UserError(f"--set {assignment!r}: {key} has no element [{idx}]")
            if last:
                node[idx] = value
            else:
                node = node[idx]
        else:
            if not isinstance(node, dict):
                raise UserError(f"--set {assignment!r}: cannot set key {name!r} inside a non-mapping")
            if last:
                node[name] = value
            else:
                nxt = tokens[i + 1]
                if name not in node or node[name] is None:
                    node[name] = [] if nxt[1] is not None else {}
                node = node[name]


def expand_grid(params: dict[str, Any]) -> list[dict[str, Any]]:
    """Cartesian product over list-valued parameters (benchopt convention); sorted keys, stable order."""
    keys = sorted(params)
    values = [params[k] if isinstance(params[k], list) else [params[k]] for k in keys]
    for k, v in zip(keys, values):
        if len(v) == 0:
            raise ValueError(f"{k} must be a non-empty list")
    return [dict(zip(keys, combo)) for combo in itertools.product(*values)]


@dataclass
class AlgoVariant:
    index: int          # position in the config's algorithm list
    name: str
    params: dict[str, Any]
    params_str: str
    label: str
    instance: Any
    datasets: frozenset[int] | None = None   # dataset entry indices it runs on (algorithms[].datasets); None: all


@dataclass
class DatasetVariant:
    index: int
    name: str
    params: dict[str, Any]
    params_str: str
    instance: Any
    subsets: list[str]


@dataclass
class ResolvedExperiment:
    """A validated spec with all component instances and grids expanded."""

    spec: ExperimentSpec
    source: str
    overrides: list[str]
    datasets: list[DatasetVariant]
    algorithms: list[AlgoVariant]
    metrics: list[tuple[str, Any]]         # (label, instance)
    n_private: list[int]
    n_public: list[int]
    n_test: list[int]
    epsilons: list[float]
    deltas: list[float]
    skipped_grid_points: dict[int, int]   # algorithm index -> invalid grid points left out (skip_invalid)
    fast: bool = False                    # the run applied the config's `fast:` section (dpexp run --fast)

    @property
    def size_grid(self) -> list[tuple[int, int, int]]:
        """(n_test, n_public, n_private) combinations in canonical order."""
        return list(itertools.product(self.n_test, self.n_public, self.n_private))

    def algorithms_for(self, dv: DatasetVariant) -> list[AlgoVariant]:
        """The algorithm variants that run on dataset variant ``dv`` (``algorithms[].datasets``; all by default)."""
        return [a for a in self.algorithms if a.datasets is None or dv.index in a.datasets]

    def cells_per_subset_repeat(self, dv: DatasetVariant) -> int:
        """Cells of one subset and repeat of ``dv``: sizes × its algorithms × ε × δ."""
        return len(self.size_grid) * len(self.algorithms_for(dv)) * len(self.epsilons) * len(self.deltas)

    @property
    def n_cells(self) -> int:
        return sum(len(d.subsets) * self.spec.repeats * self.cells_per_subset_repeat(d) for d in self.datasets)

    def to_json(self) -> dict[str, Any]:
        return json.loads(self.spec.model_dump_json())


def flat_list_hint(exc: ValidationError, raw_params: dict[str, Any] | None) -> str:
    """'; a list in params is a grid: write [[20, 80]] ...' when the first error is a list- or tuple-valued parameter
    that received one element of a flat list the config gave it (``x_range: [20, 80]`` expands into the grid points
    20 and 80); '' otherwise."""
    if not raw_params:
        return ""
    err = exc.errors(include_url=False)[0]
    loc = err.get("loc") or ()
    key = loc[0] if loc else None
    given = raw_params.get(key) if isinstance(key, str) else None
    wants_list = err["type"] in ("tuple_type", "list_type", "set_type", "frozen_set_type")
    if not (wants_list and isinstance(given, list) and given and not any(isinstance(v, list) for v in given)):
        return ""
    flat = json.dumps(given)
    return (f"; a list in params is a grid of values, so {key}: {flat} tried {json.dumps(given[0])} alone: write "
            f"[{flat}] for the single value {flat}")


def _instantiate(kind: str, cls: Any, params: dict[str, Any], where: tuple[Any, ...], source: str,
                 raw_params: dict[str, Any] | None = None) -> Any:
    try:
        return cls(**params)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {format_validation_error(exc, cls.Params, where)}"
                          f"{flat_list_hint(exc, raw_params)}") from None
    except UserError as exc:
        raise ConfigError(f"{source}: {_path(where)}: {exc}") from None


def _registered(kind: str, name: str, where: tuple[Any, ...], source: str) -> Any:
    from dpexp import registry

    try:
        return registry.get(kind, name)
    except UserError:
        valid = ", ".join(registry.names(kind))
        raise ConfigError(f"{source}: {_path(where)} must be a registered {kind}, got {name!r}; "
                          f"{registry.suggestion(kind, name)}valid: {valid}") from None


def resolve(raw: dict[str, Any], source: str, overrides: list[str] | None = None,
            repeats: int | None = None, check_data: bool = True) -> ResolvedExperiment:
    """Validate a raw config dict completely and build every component. Raises ``ConfigError``.

    Steps: apply the overrides and validate the schema, then build the datasets (checking their data), the
    algorithm grid, the metrics, check the plots against the registry and the sizes against the data.
    """
    from dpexp import registry

    overrides = list(overrides or [])
    spec = _validated_spec(raw, source, overrides, repeats)
    registry.load_all()
    datasets = _resolve_datasets(spec, source, check_data)
    algorithms, skipped = _resolve_algorithms(spec, source)
    _check_restrictions(spec, datasets, algorithms, source)
    metrics = _resolve_metrics(spec, source)
    _check_plots(spec, {a.label for a in algorithms}, source)
    if check_data:
        _check_sizes(spec, datasets, source)
    return ResolvedExperiment(spec, source, overrides, datasets, algorithms, metrics, spec.sizes.n_private,
                              spec.sizes.n_public, spec.sizes.n_test, spec.privacy.epsilon, spec.privacy.delta,
                              skipped)


def _validated_spec(raw: dict[str, Any], source: str, overrides: list[str], repeats: int | None) -> ExperimentSpec:
    """The config with the ``--set`` overrides and ``--repeats`` applied, validated against ``ExperimentSpec``."""
    raw = copy.deepcopy(raw)
    for ov in overrides:
        apply_override(raw, ov)
    if repeats is not None:
        raw["repeats"] = repeats
    raw.setdefault("name", Path(source).stem)
    try:
        return ExperimentSpec.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {format_validation_error(exc, ExperimentSpec)}") from None


def _component_grid(kind: str, i: int, name: str, params: dict[str, Any], source: str
                    ) -> tuple[Any, list[dict[str, Any]]]:
    """The registered class of ``kinds[i]`` and its expanded parameter grid (``kind`` is "dataset" or "algorithm")."""
    cls = _registered(kind, name, (f"{kind}s", i, "name"), source)
    try:
        return cls, expand_grid(params)
    except ValueError as exc:
        raise ConfigError(f"{source}: {kind}s[{i}].params.{exc}, got []") from None


def _chosen_subsets(i: int, ds: DatasetSpec, available: list[str], source: str, check_data: bool) -> list[str]:
    """The subsets ``datasets[i].subsets`` selects from ``available`` ("all", the first k, or named ones)."""
    if ds.subsets == "all":
        return list(available)
    if isinstance(ds.subsets, FirstSubsets):
        return list(available[: ds.subsets.first])
    unknown = [s for s in ds.subsets if s not in set(available)]
    if unknown and check_data:
        shown = ", ".join(available[:10]) + (", ..." if len(available) > 10 else "")
        raise ConfigError(f"{source}: datasets[{i}].subsets must name subsets of {ds.name} "
                          f"({shown}), got {unknown[0]!r}")
    if len(set(ds.subsets)) != len(ds.subsets):
        raise ConfigError(f"{source}: datasets[{i}].subsets must not repeat names, got {list(ds.subsets)!r}")
    return list(ds.subsets)


def _resolve_datasets(spec: ExperimentSpec, source: str, check_data: bool) -> list[DatasetVariant]:
    """One instance per dataset entry and parameter grid point, its data checked and its subsets chosen."""
    from dpexp.components import format_params

    datasets: list[DatasetVariant] = []
    for i, ds in enumerate(spec.datasets):
        cls, grid = _component_grid("dataset", i, ds.name, ds.params, source)
        for params in grid:
            inst = _instantiate("dataset", cls, params, ("datasets", i, "params"), source, ds.params)
            if check_data:
                try:
                    inst.check()
                except UserError as exc:
                    raise ConfigError(f"{source}: datasets[{i}] ({ds.name}): {exc}") from None
            subsets = _chosen_subsets(i, ds, inst.subsets() if check_data else ["all"], source, check_data)
            datasets.append(DatasetVariant(i, ds.name, params, format_params(params), inst, subsets))
    return datasets


def _resolve_algorithms(spec: ExperimentSpec, source: str) -> tuple[list[AlgoVariant], dict[int, int]]:
    """One instance per algorithm entry and valid grid point, with its label; and, per entry, the grid points that
    ``skip_invalid`` left out (entries with none omitted)."""
    from dpexp.components import format_params

    algorithms: list[AlgoVariant] = []
    skipped: dict[int, int] = {}
    seen_labels: set[str] = set()
    for i, alg in enumerate(spec.algorithms):
        cls, grid = _component_grid("algorithm", i, alg.name, alg.params, source)
        kept = 0
        for params in grid:
            try:
                inst = _instantiate("algorithm", cls, params, ("algorithms", i, "params"), source, alg.params)
            except ConfigError:
                if alg.skip_invalid:
                    continue
                raise
            kept += 1
            pstr = format_params(params, getattr(cls, "Params", None))
            if alg.label is None:
                label = alg.name + (f"[{pstr}]" if pstr else "")
            else:
                label = alg.label + (f"[{pstr}]" if len(grid) > 1 else "")
            if label in seen_labels:
                raise ConfigError(f"{source}: algorithms[{i}] duplicates the entry labelled {label!r}; "
                                  "give it a different label or params")
            seen_labels.add(label)
            if getattr(cls, "requires_delta", False) and any(d <= 0 for d in spec.privacy.delta):
                raise ConfigError(f"{source}: privacy.delta must be in (0, 1) for algorithm {alg.name} "
                                  f"(an (epsilon, delta) mechanism), got 0")
            algorithms.append(AlgoVariant(i, alg.name, params, pstr, label, inst, _dataset_entries(spec, i, source)))
        if kept == 0:
            raise ConfigError(f"{source}: algorithms[{i}].params: every grid point is invalid (skip_invalid left "
                              "nothing to run)")
        if len(grid) > kept:
            skipped[i] = len(grid) - kept
    return algorithms, skipped


def _dataset_entries(spec: ExperimentSpec, i: int, source: str) -> frozenset[int] | None:
    """The dataset entries ``algorithms[i].datasets`` names (by label, else name): each name must pick exactly one
    entry."""
    names = spec.algorithms[i].datasets
    if names is None:
        return None
    keys = [ds.key for ds in spec.datasets]
    out = set()
    for k, name in enumerate(names):
        hits = [j for j, key in enumerate(keys) if key == name]
        if len(hits) != 1:
            what = "names no dataset entry" if not hits else "names several dataset entries (give them labels)"
            raise ConfigError(f"{source}: algorithms[{i}].datasets[{k}] {what}; dataset labels are "
                              f"{', '.join(map(repr, keys))}, got {name!r}")
        out.add(hits[0])
    return frozenset(out)


def _check_restrictions(spec: ExperimentSpec, datasets: list[DatasetVariant], algorithms: list[AlgoVariant],
                        source: str) -> None:
    """With ``algorithms[].datasets``, every dataset entry must still run some algorithm."""
    if all(a.datasets is None for a in algorithms):
        return
    for i, ds in enumerate(spec.datasets):
        if not any(a.datasets is None or i in a.datasets for a in algorithms):
            raise ConfigError(f"{source}: datasets[{i}] ({ds.key}) runs no algorithm: every algorithm entry restricts "
                              f"itself to other datasets (algorithms[].datasets), got {ds.key!r} in none")


def _resolve_metrics(spec: ExperimentSpec, source: str) -> list[tuple[str, Any]]:
    """(label, instance) of every metric entry; labels must be distinct."""
    metrics: list[tuple[str, Any]] = []
    for i, m in enumerate(spec.metrics):
        cls = _registered("metric", m.name, ("metrics", i, "name"), source)
        inst = _instantiate("metric", cls, m.params, ("metrics", i, "params"), source)
        label = m.label or m.name
        if label in {lab for lab, _ in metrics}:
            raise ConfigError(f"{source}: metrics[{i}] repeats metric {label!r}; give it a distinct label")
        metrics.append((label, inst))
    return metrics


def _check_plots(spec: ExperimentSpec, labels: set[str], source: str) -> None:
    """Every plot kind is registered, its options validate against the model it registered, and its baselines
    name algorithm labels."""
    from dpexp import registry

    for i, p in enumerate(spec.plots):
        _registered("plot", p.kind, ("plots", i, "kind"), source)
        options = registry.plot_options(p.kind)   # the kind's model, registered with register_plot(options=...)
        try:
            if options is not None:
                options.model_validate(p.options)
        except ValidationError as exc:
            raise ConfigError(f"{source}: {format_validation_error(exc, None, ('plots', i, 'options'))}") from None
        unknown = [b for b in p.options.get("baselines") or [] if b not in labels]
        if unknown:  # a typo here used to drop the baseline from the figure silently
            raise ConfigError(f"{source}: plots[{i}].options.baselines must name algorithm labels "
                              f"({', '.join(map(repr, sorted(labels)))}), got {unknown[0]!r}")
        for j, panel in enumerate(p.options.get("panels") or []):
            for key in ("labels", "references"):
                unknown = [lb for lb in (panel or {}).get(key) or [] if lb not in labels]
                if unknown:  # the curve would be drawn in an "other curves" panel instead
                    raise ConfigError(f"{source}: plots[{i}].options.panels[{j}].{key} must name algorithm labels "
                                      f"({', '.join(map(repr, sorted(labels)))}), got {unknown[0]!r}")


def _check_sizes(spec: ExperimentSpec, datasets: list[DatasetVariant], source: str) -> None:
    """The largest cell of the size grid fits every subset's rows ('all' only for datasets with a row count)."""
    sizes = spec.sizes
    for dv in datasets:
        for subset in dv.subsets:
            rows = dv.instance.n_rows(subset)
            if rows is None:
                if min(sizes.n_private) < 0:
                    raise ConfigError(f"{source}: sizes.n_private must be a number for generated dataset "
                                      f"{dv.name}, got 'all'")
                continue
            need_fixed = max(sizes.n_test) + max(sizes.n_public)
            need = need_fixed + max(max(sizes.n_private), 0)
            if need > rows:
                key = "n_private" if max(sizes.n_private) > 0 else "n_public"
                raise ConfigError(
                    f"{source}: sizes.{key} must fit the data: n_test + n_public + n_private <= {rows} rows of "
                    f"{dv.name} subset {subset!r}, got {max(sizes.n_test)} + {max(sizes.n_public)} + "
                    f"{max(max(sizes.n_private), 0)} = {need}")


def fast_settings(raw: dict[str, Any], source: str) -> tuple[list[str], int]:
    """The overrides and repeats of the config's ``fast:`` section (defaults: none, 2 repeats)."""
    try:
        fast = FastSpec.model_validate(raw.get("fast") or {})
    except ValidationError as exc:
        raise ConfigError(f"{source}: {format_validation_error(exc, FastSpec, ('fast',))}") from None
    return list(fast.set), fast.repeats


def load(path: str | Path, overrides: list[str] | None = None, repeats: int | None = None,
         check_data: bool = True) -> ResolvedExperiment:
    """Read and fully validate a config file."""
    path = Path(path)
    raw = read_yaml(path)
    return resolve(raw, str(path), overrides, repeats, check_data)
