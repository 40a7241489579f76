"""Distributed Bayesian LR (Heikkilä et al. 2017, Alg. 2): calibration, sensitivity eq. (18), noise scales, contract."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from scipy import stats

from dpexp.errors import UserError
from dpexp.families.dca.algorithms import dlr
from dpexp.families.dca.protocol.noise import PrivacyCalibrationWarning, client_sigma, noise_factor, sigma_std
from dpexp.types import Split


# ------------------------------------------------------------------------------------------ calibration
def test_classic_calibration_eq1_and_warning():
    # Eq. (1): σ = Δ sqrt(2 ln(1.25/δ)) / ε
    assert sigma_std(1.0, 0.5, 1e-5, "classic") == pytest.approx(math.sqrt(2 * math.log(1.25e5)) / 0.5, rel=1e-12)
    assert sigma_std(2.0, 0.5, 1e-5, "classic") == pytest.approx(9.689610525210778 * 2, rel=1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sigma_std(1.0, 0.9, 1e-5, "classic")                 # ε < 1: no warning
    with pytest.warns(PrivacyCalibrationWarning, match="epsilon >= 1"):
        sigma_std(1.0, 31.6, 1e-4, "classic")


def test_analytic_calibration_known_values():
    # Balle & Wang (2018): ε = 1, δ = 1e-5, Δ = 1 gives σ ≈ 3.7306 (vs 4.845 for the classic bound)
    s = sigma_std(1.0, 1.0, 1e-5)
    assert s == pytest.approx(3.7306, abs=2e-4)
    # it is exactly tight: δ(σ) of Thm 8 computed independently with scipy equals the target δ
    for eps, delta, sens in [(1.0, 1e-5, 1.0), (10.0, 1e-4, 3.0), (0.3, 1e-6, 0.5)]:
        s = sigma_std(sens, eps, delta)
        a, b = sens / (2 * s), eps * s / sens
        got = stats.norm.cdf(a - b) - math.exp(eps) * stats.norm.cdf(-a - b)
        assert got == pytest.approx(delta, rel=1e-6)
        if eps < 1:
            assert s < sigma_std(sens, eps, delta, "classic")
    with pytest.raises(UserError, match="calibration"):
        sigma_std(1.0, 1.0, 1e-5, "laplace")


def test_theorem_1_client_sigma_and_factor():
    assert client_sigma(3.0, 101, 0) == pytest.approx(3.0 / 10.0)
    assert noise_factor(100, 9) == pytest.approx(100 / 90)
    with pytest.raises(UserError):
        client_sigma(1.0, 5, 4)


# ------------------------------------------------------------------------------------------ sensitivity
def _query(x: np.ndarray, y: float) -> np.ndarray:
    return dlr.unique_terms(x[None], np.array([y]))[0]


@pytest.mark.parametrize("c", [np.array([1.0, 2.0]), np.array([0.5, 0.5, 1.5])])
def test_eq18_bounds_brute_force_and_is_tight_per_term(c):
    """Eq. (18) ≥ the brute-force maximum of ||f(x) − f(x')||₂ over a grid of records, and each term's bound is
    attained by some pair (so no term could be bounded tighter)."""
    cy = 1.25
    d = len(c)
    levels = [np.linspace(-cj, cj, 5) for cj in list(c) + [cy]]
    recs = np.array(list(itertools.product(*levels)))
    F = dlr.unique_terms(recs[:, :d], recs[:, d])
    best = 0.0
    for i in range(0, len(F), 64):
        diff = F[i:i + 64, None, :] - F[None, :, :]
        best = max(best, float(np.sqrt((diff**2).sum(-1)).max()))
    bound = dlr.ss_sensitivity(c, cy)
    assert best <= bound + 1e-12
    per_term = np.abs(F[:, None, :] - F[None, :, :]).max(axis=(0, 1))
    iu, ju = np.triu_indices(d)
    expect = np.concatenate([np.where(iu == ju, c[iu] ** 2, 2 * c[iu] * c[ju]), 2 * c * cy])
    np.testing.assert_allclose(per_term, expect, rtol=1e-12)
    np.testing.assert_allclose(bound, math.sqrt(np.sum(expect**2)), rtol=1e-12)


def test_eq18_common_bound_closed_form():
    for d in (1, 3, 11):
        for cx, cy in [(7.5, 7.5), (1.0, 7.5)]:
            closed = dlr.ss_sensitivity(cx, cy, d)
            assert closed == pytest.approx(math.sqrt(d * (2 * d - 1) * cx**4 + 4 * d * cx**2 * cy**2), rel=1e-12)
            assert closed == pytest.approx(dlr.ss_sensitivity(np.full(d, cx), cy), rel=1e-12)


def test_second_moment_sensitivity_brute_force():
    c, cy = np.array([1.0, 3.0]), 2.0
    recs = np.array(list(itertools.product(*[np.linspace(-v, v, 7) for v in [*c, cy]])))
    Q = recs**2
    best = np.sqrt(((Q[:, None] - Q[None]) ** 2).sum(-1)).max()
    assert best == pytest.approx(dlr.sq_sensitivity(c, cy), rel=1e-12)


def test_terms_roundtrip():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(30, 4)), rng.normal(size=30)
    XX, Xy = dlr.terms_to_stats(dlr.unique_terms(X, y).sum(0), 4)
    np.testing.assert_allclose(XX, X.T @ X, rtol=1e-12)
    np.testing.assert_allclose(Xy, X.T @ y, rtol=1e-12)
    assert dlr.n_terms(4) == 14


# ------------------------------------------------------------------------------------------ noise actually drawn
@pytest.mark.parametrize("setting,factor", [("ta", lambda N: 1.0), ("input", lambda N: N),
                                            ("ddp", lambda N: N / (N - 1))])
def test_release_noise_scale(setting, factor):
    """The noise the release draws has variance σ_std² × {1, N, N/(N−1)} (TA, input perturbation, DDP with T=0).

    Two-sided chi-square test at level 1e-6 (failure probability 1e-6 for a correct implementation)."""
    rng = np.random.default_rng(7)
    N, p = 20, 6
    Z = rng.uniform(-1, 1, (N, p))
    trials = 400 if setting != "ddp" else 150
    rel, s = dlr.release_sum(Z, 2.0, 1.0, 1e-5, setting, rng, trials, "analytic", n_compute=3)
    assert s == pytest.approx(sigma_std(2.0, 1.0, 1e-5))
    noise = rel - Z.sum(0)
    var = s**2 * factor(N)
    lo, hi = stats.chi2.ppf([0.5e-6, 1 - 0.5e-6], noise.size)
    assert lo < np.sum(noise**2) / var < hi


def test_choose_thresholds_on_grid_and_reproducible():
    a = dlr.choose_thresholds(300, 3, 1.0, 1e-4, np.random.default_rng(1), "analytic", repeats=3)
    b = dlr.choose_thresholds(300, 3, 1.0, 1e-4, np.random.default_rng(1), "analytic", repeats=3)
    assert a == b
    assert all(np.isclose(w, dlr.OMEGA_GRID).any() for w in a)
    # with (almost) no noise, heavy clipping is not optimal
    wx, wy = dlr.choose_thresholds(300, 3, 1e6, 0.5, np.random.default_rng(1), "analytic", repeats=3)
    assert wx > 1.0 and wy > 1.0


# ------------------------------------------------------------------------------------------ algorithms
def _split(n=400, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (n + 100, d))
    y = X @ rng.normal(0, 0.5, d) + rng.normal(size=n + 100)
    return Split(X[:n], y[:n], X[:0], y[:0], X[n:], y[n:], {"bound_x": 7.5, "bound_y": 7.5})


@pytest.mark.parametrize("name", ["np", "ta", "ta_proj", "ddp", "ddp_proj", "input_perturbation"])
def test_algorithms_contract(name):
    from dpexp import registry

    cls = registry.get("algorithm", name)
    s = _split()
    out = cls().run(s, 3.0, 1e-4, np.random.default_rng(1), trials=2)
    assert out.predictions.shape == (2, 100)
    assert np.isfinite(out.predictions).all()
    if cls.private:
        assert cls.neighbouring == "replace-one"
        assert out.extras["calibration_analytic"] == 1.0
        assert out.extras["sigma_std"] > 0
    again = cls().run(s, 3.0, 1e-4, np.random.default_rng(1), trials=2)
    np.testing.assert_array_equal(out.predictions, again.predictions)


@pytest.mark.parametrize("name", ["ddp", "ddp_proj"])
def test_secret_shares_change_no_bit_of_the_releases(name):
    """``secret_shares`` (ours, default false) only decides whether step 2's M shares are simulated: predictions,
    extras and guarantee are the same bit for bit, at the default M = 10 and at M = 3 with several client chunks.
    Exact on any CPU: the releases differ only in exact uint64 ring additions, and the rest is one code path on
    equal inputs."""
    from dpexp import registry

    cls = registry.get("algorithm", name)
    s = _split(n=300, d=3, seed=2)
    for M in (10, 3):
        runs = [cls(secret_shares=shares, n_compute=M).run(s, 2.0, 1e-4, np.random.default_rng(7), trials=4)
                for shares in (True, False)]
        np.testing.assert_array_equal(runs[0].predictions, runs[1].predictions)
        assert runs[0].extras == runs[1].extras and runs[0].guarantee == runs[1].guarantee
    assert cls.Params().secret_shares is False


def test_projection_helps_and_large_epsilon_approaches_np():
    s = _split(n=2000, d=3, seed=4)
    from dpexp.families.dca.algorithms.dlr import DistributedBLR, DistributedProjBLR, NonPrivateBLR

    mae = lambda o: np.abs(o.predictions - s.y_test).mean()  # noqa: E731
    np_ = mae(NonPrivateBLR().run(s, 1.0, 1e-4, np.random.default_rng(0)))
    big = mae(DistributedBLR().run(s, 1e5, 1e-4, np.random.default_rng(0)))
    assert big == pytest.approx(np_, rel=0.02)
    proj = mae(DistributedProjBLR().run(s, 2.0, 1e-4, np.random.default_rng(0), trials=3))
    plain = mae(DistributedBLR().run(s, 2.0, 1e-4, np.random.default_rng(0), trials=3))
    assert proj < plain


def test_classic_calibration_recorded_and_bounds_required():
    s = _split()
    with pytest.warns(UserWarning, match="classic"):
        out = dlr.TrustedAggregatorBLR(calibration="classic").run(s, 3.0, 1e-4, np.random.default_rng(0))
    assert out.extras["calibration_analytic"] == 0.0
    s.meta = {}
    with pytest.raises(UserError, match="bound_x"):
        dlr.TrustedAggregatorBLR().run(s, 3.0, 1e-4, np.random.default_rng(0))
    dlr.TrustedAggregatorBLR(bound_x=1.0, bound_y=2.0).run(s, 3.0, 1e-4, np.random.default_rng(0))


def test_std_floor_when_noisy_moment_negative(monkeypatch):
    """A negative noisy second moment gives σ̂ = 0.5 (supplement §10): bounds then = ω · 0.5."""
    s = _split()
    seen = {}
    real = dlr.ss_sensitivity

    def fake_release(Z, sens, eps, delta, setting, rng, trials, calibration, **kw):
        if Z.ndim == 2:                                     # the std round: return negative sums
            return -np.ones((trials, Z.shape[1])), 1.0
        seen["Z"] = Z[0]                                    # the statistics round: (trials, N, p)
        return Z.sum(1), np.ones(trials)

    monkeypatch.setattr(dlr, "release_sum", fake_release)
    dlr.TrustedAggregatorProjBLR(omega_x=2.0, omega_y=1.0).run(s, 1.0, 1e-4, np.random.default_rng(0))
    d = s.d
    iu, ju = np.triu_indices(d)
    diag = seen["Z"][:, : iu.size][:, iu == ju]
    assert diag.max() <= (2.0 * 0.5) ** 2 + 1e-12
    assert np.abs(seen["Z"][:, iu.size:]).max() <= (2.0 * 0.5) * (1.0 * 0.5) + 1e-12
    assert real is dlr.ss_sensitivity


# ------------------------------------------------------------------------------------------ posterior solve
def test_direct_solve_is_eq13_and_psd_floor_explodes_on_indefinite_noise():
    """``solver='direct'`` is eq. (13) with the perturbed statistics as released; flooring a negative eigenvalue of
    XX̂ at 0 leaves precision λ0 = 1 in that direction, so noise in Xŷ passes through unshrunk."""
    rng = np.random.default_rng(3)
    Q, _ = np.linalg.qr(rng.normal(size=(4, 4)))
    w = np.array([-900.0, 50.0, 400.0, 2000.0])              # noise made one eigenvalue strongly negative
    XX = (Q * w) @ Q.T
    Xy = 300.0 * Q[:, 0] + rng.normal(size=4)
    Xt = rng.normal(size=(7, 4))
    mu, pred = dlr.fit_predict(XX, Xy, Xt)
    np.testing.assert_allclose(mu, np.linalg.solve(np.eye(4) + XX, Xy), rtol=1e-10)
    np.testing.assert_allclose(pred, Xt @ mu, rtol=1e-10)
    mu_f, _ = dlr.fit_predict(XX, Xy, Xt, solver="psd_floor")
    assert abs(Q[:, 0] @ mu) < 1.0                           # 300 / (1 − 900): shrunk
    assert abs(Q[:, 0] @ mu_f) > 250.0                       # 300 / (1 + 0): passes through
    # batched, with one exactly singular system: that one is NaN, the others are solved
    XXb = np.stack([XX, -np.eye(4), XX])
    mub, _ = dlr.fit_predict(XXb, np.stack([Xy, Xy, Xy]), Xt)
    assert np.isnan(mub[1]).all() and np.allclose(mub[0], mu) and np.allclose(mub[2], mu)
    with pytest.raises(UserError, match="solver"):
        dlr.fit_predict(XX, Xy, Xt, solver="lstsq")


# ------------------------------------------------------------------------------------------ the privacy map recorded
def test_every_setting_records_what_it_released():
    """TA: Gaussian mechanism with the exact δ of σ_std; input: each client's local release; DDP: Thm 1 with
    N − T − 1 honest clients; the projected variants compose both rounds (shares p and 1 − p)."""
    from dpexp.privacy.ledger import as_ledger
    from dpexp.privacy.mechanisms import gaussian_delta

    s = _split()
    for cls in (dlr.TrustedAggregatorBLR, dlr.InputPerturbationBLR, dlr.DistributedBLR):
        g = cls().run(s, 1.0, 1e-5, np.random.default_rng(0), trials=2).guarantee
        assert g.kind == "approx" and g.epsilon == 1.0 and g.delta <= 1e-5 and g.delta > 0.99e-5, (cls.name, g)
    g = dlr.DistributedProjBLR(omega_x=1.0, omega_y=1.0).run(s, 1.0, 1e-5, np.random.default_rng(0), 3).guarantee
    assert g.kind == "approx" and g.epsilon == pytest.approx(1.0) and g.delta <= 1e-5 * (1 + 1e-9)
    # the recorded δ is the exact δ of the σ drawn (Balle & Wang 2018, Thm 8)
    Z = np.random.default_rng(1).uniform(-1, 1, (30, 4))
    ledger = as_ledger(np.random.default_rng(2))
    _, sig = dlr.release_sum(Z, 2.0, 1.0, 1e-5, "ta", ledger, 3, "analytic")
    assert ledger.spends[0].delta == pytest.approx(gaussian_delta(sig, 2.0, 1.0), rel=1e-12)
    # classic at ε >= 1: the warning stays and the row shows the true δ with a note
    with pytest.warns(UserWarning, match="classic"):
        g = dlr.TrustedAggregatorBLR(calibration="classic").run(s, 3.0, 1e-4, np.random.default_rng(0)).guarantee
    assert g.kind == "approx" and "classic Gaussian calibration" in g.note and "true delta" in g.note


def test_dropouts_and_colluders_count_together_against_T():
    """Thm 1 protects a record by the noise of the clients that neither dropped out nor collude: with T = 3 and 2
    dropouts at most 1 more client may collude, so N − T − 1 clients' noise remains whatever the split between
    them; more than T dropouts are refused; T colluders on top of the dropouts would leave too little noise."""
    from dpexp.families.dca.protocol.dca import DCA
    from dpexp.privacy.mechanisms import distributed_gaussian_spend

    Z = np.zeros((12, 2))
    res = DCA(n_compute=3, n_faulty=3).run(Z, 0.5, np.random.default_rng(0), dropped=[1, 5])
    assert (res.n_dropped, res.n_colluding) == (2, 1)
    together = distributed_gaussian_spend(1.0, 0.5, 12, res.n_dropped, res.n_colluding, 1.0, delta=1e-5)
    none_dropped = distributed_gaussian_spend(1.0, 0.5, 12, 0, 3, 1.0, delta=1e-5)
    assert together == none_dropped                                   # the same 8 honest clients
    separate = distributed_gaussian_spend(1.0, 0.5, 12, 2, 3, 1.0, delta=1e-5)   # T colluders *plus* dropouts
    assert separate.delta > together.delta
    with pytest.raises(UserError, match="T=3"):
        DCA(n_compute=3, n_faulty=3).run(Z, 0.5, np.random.default_rng(0), dropped=[1, 2, 3, 4])


def test_secure_ledger_runs_the_dca_in_secure_mode():
    from dpexp.privacy.ledger import PrivacyLedger
    from dpexp.privacy.noise import SecureNoise

    s = _split()
    a = dlr.DistributedBLR().run(s, 1.0, 1e-5, PrivacyLedger(SecureNoise()), trials=2)
    b = dlr.DistributedBLR().run(s, 1.0, 1e-5, PrivacyLedger(SecureNoise()), trials=2)
    assert not np.array_equal(a.predictions, b.predictions) and a.guarantee == b.guarantee


def test_calibration_warning_is_said_once_per_process(capfd):
    """A run calls the mechanism per cell: the warning is printed once, not per call (rows carry the details)."""
    import subprocess
    import sys

    code = ("from dpexp.families.dca.protocol.noise import sigma_std\nimport warnings\n"
            "for e in (1.5, 2.0, 31.6):\n    with warnings.catch_warnings():\n        pass\n"
            "    sigma_std(1.0, e, 1e-4, 'classic')\n")
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stderr
    assert err.count("PrivacyCalibrationWarning") == 1, err


# ------------------------------------------------------------------------------------------ per-trial statistics round
@pytest.mark.parametrize("setting", ["ta", "ddp", "input"])
def test_per_trial_release_equals_one_release_per_trial(setting):
    """The projected variants release every trial's statistics at once (each trial's data clipped to its own bounds):
    the same numbers, bit for bit, as one ``release_sum`` call per trial with the same generator, and the guarantee
    of the worst trial (the per-trial loop recorded each trial's spend with ``for_trial``)."""
    from dpexp.privacy.ledger import as_ledger

    rng = np.random.default_rng(4)
    T, N = 6, 12
    b = rng.uniform(0.2, 1.0, T)
    X, y = rng.uniform(-1, 1, (N, 2)), rng.uniform(-1, 1, N)
    Z = dlr.unique_terms(np.clip(X[None], -b[:, None, None], b[:, None, None]), np.clip(y[None], -b[:, None], b[:, None]))
    sens = np.array([dlr.ss_sensitivity(np.full(2, v), float(v)) for v in b])
    kw = dict(n_compute=3) if setting == "ddp" else {}
    new_ledger, old_ledger = as_ledger(np.random.default_rng(9)), as_ledger(np.random.default_rng(9))
    v, s = dlr.release_sum(Z, sens, 0.7, 7e-6, setting, new_ledger, T, "analytic", label="statistics round", **kw)
    old, old_s = [], []
    for t in range(T):
        with old_ledger.for_trial(t):
            vt, st_ = dlr.release_sum(Z[t], float(sens[t]), 0.7, 7e-6, setting, old_ledger, 1, "analytic",
                                      label="statistics round", **kw)
        old.append(vt[0])
        old_s.append(st_)
    np.testing.assert_array_equal(v, np.stack(old))
    np.testing.assert_array_equal(s, old_s)
    g_new, g_old = new_ledger.guarantee(), old_ledger.guarantee()
    assert repr(g_new.row()) == repr(g_old.row())        # kind, ε, δ, ρ (nan: no zCDP form here), note


def test_audit_design_realises_the_statistics_sensitivity_with_fixed_bounds():
    """The DCA audit design (families/dca/audit.py): the pair (c_x, −c_y) → (c_x, c_y) moves the released terms by
    99.9% of Δ₂ (c_x = 0.1 ≪ c_y = 1), and on the extreme base the projected variants' bounds b = min(c, ω σ̂) equal
    c in ≥ 99% of the trials at ω = 2.1 (design docstring: ≈ 0.4% of trials have b_x < c_x)."""
    from dpexp.audit.entries import entry_for
    from dpexp.audit.neighbours import candidate_pairs
    from dpexp.families.dca.audit import BOUND_X, BOUND_Y, REALISING_PAIR

    (x0, y0), (x1, y1) = REALISING_PAIR
    diff = dlr.unique_terms(np.array([[x1]]), np.array([y1])) - dlr.unique_terms(np.array([[x0]]), np.array([y0]))
    assert np.linalg.norm(diff) / dlr.ss_sensitivity(BOUND_X, BOUND_Y, 1) > 0.998
    e = entry_for("ta_proj")
    assert e.delta == 0.05 and e.params == {"omega_x": 2.1, "omega_y": 2.1}
    alg = dlr.TrustedAggregatorProjBLR(**e.params)
    pair = next(p for p in candidate_pairs(e.design(alg), "replace-one") if p.description.startswith("extreme"))
    out = e.view(alg).run(pair.D, 1.0, 0.05, np.random.default_rng(0), 4000)
    sq = out.coef[:, :2]                                         # the std round (Σx², Σy²)
    std = np.where(sq > 0, np.sqrt(np.maximum(sq, 0) / 20), dlr.STD_FLOOR)
    assert np.mean(np.minimum(BOUND_X, 2.1 * std[:, 0]) == BOUND_X) > 0.99
    assert np.mean(np.minimum(BOUND_Y, 2.1 * std[:, 1]) == BOUND_Y) > 0.999


def test_the_threshold_cache_follows_the_search_code(monkeypatch, isolated_cache):
    """The disk entry of a threshold search is keyed by the search code's digest (``THRESHOLD_CODE``): another
    version of that code searches again, while the search's own stream (hence its thresholds) is unchanged."""
    from dpexp import cache
    from dpexp.families.dca.algorithms import dlr

    args = (40, 3, 1.0, 1e-5, "classic", "ta", 0, 2, 1.0, 1.0)
    first = dlr.public_thresholds(*args)
    files = sorted((cache.cache_root() / "dca_thresholds").glob("*.json"))
    assert len(files) == 1
    monkeypatch.setattr(cache, "code_digest", lambda modules: "another version")
    cache.clear()
    assert dlr.public_thresholds(*args) == first
    assert len(list((cache.cache_root() / "dca_thresholds").glob("*.json"))) == 2
    assert "families/dca/algorithms/dlr.py" in dlr.THRESHOLD_CODE


def test_code_digest_ignores_comments_and_docstrings():
    from dpexp import cache

    a = b'"""Doc."""\n# note\ndef f(x):\n    """f."""\n    return x * 2\n'
    b = b'def f(x):  # same\n    return (x *\n            2)\n'
    assert cache.code_of(a) == cache.code_of(b) != cache.code_of(b.replace(b"2", b"3"))


@pytest.mark.parametrize("name", ["ta", "ddp", "input_perturbation"])
def test_split_terms_kept_on_a_read_only_split_change_no_release(name):
    """The unprojected settings keep a read-only split's clipped unique terms and their sum (``_split_terms``),
    one entry per (c_x, c_y, clip): a second ε, a second setting and a fresh copy of the split give the releases
    the computation from scratch gives; writable rows are never kept (they could change between calls)."""
    from dpexp import registry

    s = _split(n=200, d=3, seed=4)
    frozen = Split(*(a.copy() for a in (s.X_private, s.y_private, s.X_public, s.y_public, s.X_test, s.y_test)),
                   dict(s.meta))
    for a in (frozen.X_private, frozen.y_private):
        a.flags.writeable = False
    cls = registry.get("algorithm", name)
    for eps in (1.0, 5.0):
        for params in ({}, {"bound_x": 2.0}):
            kept = cls(**params).run(frozen, eps, 1e-4, np.random.default_rng(3), trials=2)
            fresh = cls(**params).run(s, eps, 1e-4, np.random.default_rng(3), trials=2)
            np.testing.assert_array_equal(kept.predictions, fresh.predictions)
            assert kept.extras == fresh.extras and kept.guarantee == fresh.guarantee
    assert sorted(frozen.__dict__["_dca_terms"]) == [(2.0, 7.5, True), (7.5, 7.5, True)]
    assert "_dca_terms" not in s.__dict__
    Z, total = frozen.__dict__["_dca_terms"][(7.5, 7.5, True)]
    np.testing.assert_array_equal(Z, dlr.unique_terms(np.clip(s.X_private, -7.5, 7.5), np.clip(s.y_private, -7.5, 7.5)))
    np.testing.assert_array_equal(total, Z.sum(axis=0))


def test_distinct_is_numpys_unique():
    for v in (np.array([3.0]), np.array([[1.0, 2.0]]), np.array([2.0, 1.0, 2.0]),
              np.array([[1.0, 2.0], [0.5, 1.0], [1.0, 2.0]])):
        a, inv = dlr._distinct(v)
        b, binv = np.unique(v, axis=0, return_inverse=True)
        assert a.tobytes() == b.tobytes() and np.array_equal(inv.reshape(-1), binv.reshape(-1))
