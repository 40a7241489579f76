"""Registry-wide privacy contract (issue 10): every registered algorithm returns a derived guarantee, ``none``
exactly for the declared non-DP ones, within the requested (ε, δ) for the DP ones; its ``guarantee_text`` (what
``dpexp list algorithms NAME`` prints) agrees clause by clause with probe runs; every dataset states its
preprocessing; and no algorithm draws privacy noise other than through ``dpexp.privacy.mechanisms``."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from dpexp import registry
from dpexp.privacy.guarantee_text import parse
from dpexp.types import Split

REPO = Path(__file__).resolve().parents[2]
registry.load_all()
#: families whose algorithms are converted to the ledger in a later commit of this branch (strict xfail until then)
NOT_YET = {"slr", "dca", "diagnostics"}
ALGORITHMS = [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason="family not converted yet"))
              if registry.get("algorithm", n).family in NOT_YET else n for n in registry.names("algorithm")]

#: parameters a probe needs beyond the defaults: required public bounds, and small auxiliary-data tuning (public
#: simulations: they change no guarantee, only the time a probe takes)
PROBE_PARAMS = {
    "fmlr": {"bound_y": 1.0}, "oplr": {"bound_y": 1.0},
    "rplr": {"tune_reps": (1, 1), "split_reps": (1, 1)},
    "narplr": {"tune_reps": (1, 1), "split_reps": (1, 1)},
    "rlr": {"tune_reps": (1, 1), "split_reps": (1, 1)},
    "split_search": {"split_reps": (1, 1)},
    "ta_proj": {"aux_repeats": 1}, "ddp_proj": {"aux_repeats": 1},
}
EPS, DELTA = 1.5, 1e-5


def _rows(n: int, d: int, lo: float, hi: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.uniform(lo, hi, size=(n, d)), rng.uniform(lo, hi, size=n)


def probe_split(cls) -> Split:
    """A tiny split of the algorithm's family, with the public facts its datasets declare."""
    fam = cls.family
    if fam == "slr":
        X, y = _rows(12, 1, 0.0, 1.0, 1)
        return Split(X, y, X[:0], y[:0], np.array([[0.25], [0.75]]), np.full(2, np.nan), {})
    if cls.name == "dca_timing":
        return Split(np.zeros((20, 2)), np.zeros(20), np.zeros((0, 2)), np.zeros(0), np.zeros((1, 2)), np.zeros(1),
                     {"n_clients": 20, "dim": 2, "client_seed": 3, "bound": 1.0})
    X, y = _rows(40, 2, -0.7, 0.7, 2)
    meta = {"sigma_x": float(X.std()), "sigma_y": float(y.std()), "x_bound": 1.0, "bound_x": 1.0, "bound_y": 1.0}
    return Split(X[:30], y[:30], X[30:35], y[30:35], X[35:], y[35:], meta)


def probe(name: str, extra: dict | None = None):
    cls = registry.get("algorithm", name)
    alg = cls(**{**PROBE_PARAMS.get(name, {}), **(extra or {})})
    gaussian = (extra or {}).get("noise") == "gaussian"    # adassp's (ε, δ) variant
    delta = DELTA if getattr(cls, "requires_delta", False) or name == "dpgd_approx" or gaussian else 0.0
    return cls, alg.run(probe_split(cls), EPS, delta, np.random.default_rng(0), 2), delta


@pytest.mark.usefixtures("isolated_cache")
@pytest.mark.parametrize("name", ALGORITHMS)
def test_every_algorithm_reports_a_derived_guarantee(name):
    cls, out, delta = probe(name)
    g = out.guarantee
    assert g is not None, f"{name} returned no guarantee (Output.guarantee = ledger.guarantee())"
    declared_not_dp = not cls.private or not getattr(cls, "formally_dp", True)
    if not getattr(cls, "formally_dp", True):
        assert g.kind == "none" and g.reason
    elif not cls.private:   # a non-private reference: not DP, or 0-DP when it touches no private row
        assert g.kind == "none" or (g.kind == "pure" and g.epsilon == 0.0), (name, g)
    else:
        assert not declared_not_dp and g.kind != "none", (name, g)
        if g.kind == "zcdp":
            assert g.rho <= EPS**2 / 2 * (1 + 1e-9), (name, g)
        else:
            assert g.within(EPS, delta), (name, g)
            assert g.epsilon >= EPS * (1 - 1e-9), (name, g)   # what it was asked to spend (no silent over-noising)


@pytest.mark.usefixtures("isolated_cache")
@pytest.mark.parametrize("name", ALGORITHMS)
def test_guarantee_text_matches_the_code(name):
    """``dpexp list algorithms NAME`` prints ``guarantee_text``; every clause of it is checked against a probe run
    with the clause's parameters, so the text cannot drift from what the code derives."""
    cls = registry.get("algorithm", name)
    clauses = parse(cls.guarantee_text)
    for clause in clauses:
        _, out, _ = probe(name, clause.params)
        assert out.guarantee.kind == clause.kind, (name, clause.text, out.guarantee)


@pytest.mark.parametrize("name", registry.names("dataset"))
def test_every_dataset_states_its_preprocessing(name):
    cls = registry.get("dataset", name)
    pre = cls().preprocessing()
    assert pre.detail or pre.note
    assert cls.release_point, f"{name}: say what one row's epsilon covers (release_point)"


# ------------------------------------------------------------------------------------------------ grep test
DRAWS = {"laplace", "normal", "standard_normal", "gumbel", "gamma", "standard_gamma", "exponential", "standard_t",
         "permutation", "choice", "integers", "random", "uniform", "permuted"}
#: where a draw under dpexp/families/ is allowed without a mechanism, and why
ALLOWED = {
    "datasets/": "data generators and splits (the data stream, not privacy noise)",
    "gdsc/tuning.py": "auxiliary-data simulations of the threshold/split tuning (public data, nothing released)",
    "gdsc/stats.py::laplace_noise": "simulated noise for the auxiliary-data tuning (public)",
    "gdsc/truth.py": "the population sample of the calibration metrics' target (evaluation only, nothing released)",
    "dca/algorithms/dlr.py::choose_thresholds": "auxiliary synthetic data of the threshold search (public)",
    "dca/protocol/dca.py::SyntheticClients.rows": "the timing harness generates client values (data, not noise)",
}
SCANNED = ("noise", "rng", "gen", "random", "g")


def _draw_calls(path: Path):
    """(qualified function, line, call) of every `<rng-like>.<draw>(...)` call in ``path``."""
    tree = ast.parse(path.read_text())
    out = []

    def visit(node, scope):
        for child in ast.iter_child_nodes(node):
            name = scope
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{scope}.{child.name}" if scope else child.name
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) and child.func.attr in DRAWS:
                base = child.func.value
                base_name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
                if any(base_name == s or base_name.endswith("_" + s) or base_name.startswith(s) for s in SCANNED):
                    out.append((name, child.lineno, ast.unparse(child)[:80]))
            visit(child, name)

    visit(tree, "")
    return out


@pytest.mark.parametrize("family", ["gdsc"] + [pytest.param(f, marks=pytest.mark.xfail(strict=True))
                                                 for f in sorted(NOT_YET)])
def test_no_algorithm_draws_privacy_noise_directly(family):
    """Privacy noise is drawn only by dpexp.privacy.mechanisms (which records what it spends); under
    dpexp/families/ only the allow-listed data generators and public simulations draw from a generator directly.
    Non-privacy randomness of algorithms (matchings, inference seeds) comes from ``ledger.noise.generator``."""
    root = REPO / "dpexp" / "families"
    bad = []
    for path in sorted((root / family).rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if any(rel.startswith(f) or f"/{f}" in f"/{rel}" for f in ALLOWED if f.endswith("/")):
            continue
        for func, line, call in _draw_calls(path):
            if f"{rel}::{func}" in ALLOWED or rel in ALLOWED:
                continue
            bad.append(f"{rel}:{line} in {func or '<module>'}: {call}")
    assert not bad, "draws outside dpexp.privacy.mechanisms:\n" + "\n".join(bad)


def test_grep_test_can_fail(tmp_path):
    p = tmp_path / "x.py"
    p.write_text("def run(rng):\n    return 1 + rng.laplace(0.0, 1.0)\n")
    assert _draw_calls(p) == [("run", 2, "rng.laplace(0.0, 1.0)")]
