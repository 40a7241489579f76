"""Non-finite input at the estimator boundary (issue 33): every registered algorithm refuses a NaN or ±inf among
its private or public rows with one line naming them, instead of looping (the smooth-sensitivity median's loop
never ended on a NaN) or releasing a DP-labelled number computed from NaN; the loops whose exit depends on a float
comparison end on any input."""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from dpexp import registry
from dpexp.errors import NonFiniteInput
from dpexp.families.slr.dp_median import smooth_sensitivity, ss_median
from dpexp.privacy import accounting
from dpexp.privacy.noise import SecureNoise
from dpexp.types import Split

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("_contract", Path(__file__).with_name("test_contract.py"))
contract = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(contract)
registry.load_all()


def _with(split: Split, what: str, rows: list[int], value: float) -> Split:
    """A copy of ``split`` with ``value`` in column 0 of ``rows`` of one of its arrays."""
    arrays = {k: np.array(getattr(split, k), dtype=float) for k in
              ("X_private", "y_private", "X_public", "y_public", "X_test", "y_test")}
    a = arrays[what]
    for r in rows:
        if a.ndim == 2:
            a[r, 0] = value
        else:
            a[r] = value
    return Split(**arrays, meta=dict(split.meta))


def test_split_names_the_non_finite_rows():
    X, y = np.zeros((5, 2)), np.zeros(5)
    s = Split(X, y, X[:2], y[:2], X[:1], y[:1])
    assert s.nonfinite() is None
    bad = _with(_with(_with(s, "X_private", [1, 3], np.nan), "y_public", [0], np.inf), "y_test", [0], np.nan)
    assert bad.nonfinite() == "non-finite value in private x: 2 rows; non-finite value in public y: 1 row"
    two = _with(s, "X_private", [1], np.nan)
    two.X_private[1, 1] = -np.inf         # two bad cells of one row are one row
    assert two.nonfinite() == "non-finite value in private x: 1 row"


def test_split_check_is_kept_only_for_read_only_rows():
    X, y = np.zeros((4, 1)), np.zeros(4)
    s = Split(X, y, X[:0], y[:0], X[:1], y[:1])
    assert s.nonfinite() is None
    X[2, 0] = np.nan                        # writable arrays: checked again
    assert s.nonfinite() == "non-finite value in private x: 1 row"
    frozen = [a.copy() for a in (X, y, X[:0], y[:0])]
    for a in frozen:
        a.flags.writeable = False
    r = Split(*frozen, X[:1], y[:1])
    assert r.nonfinite() == "non-finite value in private x: 1 row"
    assert r.__dict__["_nonfinite"] == r.nonfinite()


def test_a_dataset_vouches_for_read_only_rows_only():
    # ``Split.vouch_finite`` records None without reading the rows, and only where ``nonfinite`` would keep its own
    # answer (every array read-only): a writable array is checked as before
    X, y = np.zeros((4, 1)), np.zeros(4)
    s = Split(X, y, X[:0], y[:0], X[:1], y[:1]).vouch_finite()
    X[2, 0] = np.nan
    assert "_nonfinite" not in s.__dict__ and s.nonfinite() == "non-finite value in private x: 1 row"
    frozen = [a.copy() for a in (X, y, X[:0], y[:0])]
    for a in frozen:
        a.flags.writeable = False
    r = Split(*frozen, X[:1], y[:1])
    assert r.vouch_finite() is r and r.nonfinite() is None   # the dataset's word (tests/gdsc/test_split_memo.py)


@pytest.mark.usefixtures("isolated_cache")
@pytest.mark.parametrize("name", registry.names("algorithm"))
@pytest.mark.parametrize("where,value", [("X_private", np.nan), ("y_private", np.inf), ("X_public", -np.inf),
                                         ("y_public", np.nan)])
def test_every_algorithm_refuses_non_finite_rows(name, where, value):
    """``run`` raises, and ``run_many`` returns the error in the bad split's place and runs the good one."""
    cls = registry.get("algorithm", name)
    alg = cls(**contract.PROBE_PARAMS.get(name, {}))
    good = contract.probe_split(cls)
    n = getattr(good, where).shape[0]
    if n == 0:                               # the family has no public rows: put one in
        good = Split(good.X_private, good.y_private, good.X_private[:2], good.y_private[:2], good.X_test,
                     good.y_test, good.meta)
    bad = _with(good, where, [0, 1], value)
    delta = contract.DELTA if getattr(cls, "requires_delta", False) or name == "dpgd_approx" else 0.0
    with pytest.raises(NonFiniteInput, match=f"^{name}: non-finite value in "):
        alg.run(bad, contract.EPS, delta, np.random.default_rng(0), 2)
    out = alg.run_many([bad, good], contract.EPS, delta, [np.random.default_rng(1), np.random.default_rng(2)], 2)
    assert isinstance(out[0], NonFiniteInput) and "2 rows" in str(out[0])
    assert not isinstance(out[1], NonFiniteInput)


_TIMED = textwrap.dedent("""
    import numpy as np
    from dpexp.errors import NonFiniteInput
    from dpexp.families.slr.dp_median import smooth_sensitivity, ss_median
    for bad in (np.nan, np.inf, -np.inf):
        zs = np.sort(np.r_[np.linspace(0, 1, 50), bad])
        for f in (lambda: smooth_sensitivity(zs, 3, 0.1, -0.5, 1.5),
                  lambda: ss_median(zs, 1.0, 3, -0.5, 1.5, np.random.default_rng(0), size=4)):
            try:
                f()
                raise SystemExit("no error on " + repr(bad))
            except NonFiniteInput:
                pass
    print("ok")
""")


def test_smooth_sensitivity_ends_on_non_finite_estimates():
    """In a child process with a timeout, so a regression to the endless loop fails instead of hanging the suite."""
    r = subprocess.run([sys.executable, "-c", _TIMED], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert r.returncode == 0, r.stderr + r.stdout
    assert r.stdout.strip() == "ok"


@pytest.mark.parametrize("args", [(np.array([0.1, 0.2]), 2, 0.1, np.nan, 1.0), (np.array([0.1]), 1, 0.1, 0.0, np.inf),
                                  (np.array([0.1]), 1, np.nan, 0.0, 1.0), (np.array([0.1]), 1, 0.1, 1.0, 1.0)])
def test_smooth_sensitivity_rejects_bad_ranges(args):
    with pytest.raises(NonFiniteInput):
        smooth_sensitivity(*args)


@pytest.mark.parametrize("N,k", [(0, 1), (1, 1), (7, 2), (50, 3), (201, 1), (10, 40)])
@pytest.mark.parametrize("t", [0.0, 1e-9, 0.05, 3.0])
def test_smooth_sensitivity_bounded_loop_gives_the_unbounded_answer(N, k, t):
    """The bounded loop gives what the old ``while True`` gave on finite input (a plain copy of it, here)."""
    rng = np.random.default_rng(N * 100 + k)
    zs = np.sort(rng.uniform(-1.0, 2.0, N))
    r_l, r_u = -0.5, 1.5
    bp = np.r_[r_l, np.clip(zs, r_l, r_u), r_u]
    at = lambda i: bp[np.clip(i, 0, N + 1)]  # noqa: E731
    m = (N + 1) // 2
    span = r_u - r_l
    S = float(max(at(m + k) - at(m), at(m) - at(m - k)))
    l = 1
    while True:
        decay = math.exp(-l * t)
        if decay * span <= S:
            break
        w = (l + 1) * k
        s = np.arange(w + 1)
        W = float(np.max(at(m + s) - at(m - w + s)))
        S = max(S, decay * W)
        if W >= span:
            break
        l += 1
    assert smooth_sensitivity(zs, k, t, r_l, r_u) == S


def test_ss_median_of_finite_estimates_still_releases():
    zs = np.sort(np.random.default_rng(3).uniform(0, 1, 30))
    out = ss_median(zs, 1.0, 2, -0.5, 1.5, np.random.default_rng(0), size=5)
    assert out.shape == (5,) and np.all(np.isfinite(out))


def test_float_loops_end_on_non_finite_parameters():
    with pytest.raises(ValueError):
        accounting.approx_dp_to_zcdp_best(np.inf, 1e-6)
    with pytest.raises(ValueError):
        accounting.approx_dp_to_zcdp_best(np.nan, 1e-6)
    with pytest.raises(ValueError, match="gamma shape"):
        SecureNoise().standard_gamma(np.inf, size=3)
    with pytest.raises(ValueError, match="gamma shape"):
        SecureNoise().standard_gamma(np.array([1.0, np.nan]))
