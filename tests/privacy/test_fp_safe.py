"""Floating-point-safe secure noise (issue 29): with a secure source, every Laplace and Gaussian release of
``dpexp.privacy.mechanisms`` draws through OpenDP's samplers (``dpexp.privacy.fp_safe``), records the privacy map of
the measurement that drew it under a mechanism name that says so, and has the right distribution; seeded releases
are untouched.  Statistical tests: KS at p > 1e-6 (false-failure probability 1e-6 each: the noise is OpenDP's own
CSPRNG and cannot be seeded)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpexp.errors import UserError
from dpexp.privacy import fp_safe, mechanisms as mech
from dpexp.privacy.ledger import PrivacyLedger
from dpexp.privacy.noise import SecureNoise

pytestmark = pytest.mark.skipif(not fp_safe.available(), reason="the [secure] extra (OpenDP) is not installed")


def secure() -> PrivacyLedger:
    return PrivacyLedger(SecureNoise())


def test_laplace_draws_through_opendp_and_records_its_map():
    lg = secure()
    out = mech.laplace(np.full(20_000, 3.0), 0.6, 0.3, lg, label="stat")
    (sp,) = lg.spends
    assert sp.mechanism == fp_safe.LAPLACE and sp.notion == "pure"
    assert sp.epsilon == pytest.approx(0.3, rel=1e-15) and sp.epsilon >= 0.3
    assert sp.epsilon == fp_safe.laplace_epsilon(0.6, 2.0)
    assert stats.kstest(out - 3.0, stats.laplace(scale=2.0).cdf).pvalue > 1e-6
    assert stats.kstest(out - 3.0, stats.laplace(scale=4.0).cdf).pvalue < 1e-6   # the test sees a factor 2


def test_secure_laplace_ignores_the_byte_source():
    """Two ledgers fed the same bytes release different numbers: the textbook sampler over the source is not used."""
    a = mech.laplace(np.zeros(8), 1.0, 1.0, PrivacyLedger(SecureNoise(entropy=np.random.default_rng(1).bytes)))
    b = mech.laplace(np.zeros(8), 1.0, 1.0, PrivacyLedger(SecureNoise(entropy=np.random.default_rng(1).bytes)))
    assert not np.array_equal(a, b)


def test_laplace_per_trial_scales_and_tuples():
    lg = secure()
    sens = np.array([1.0, 4.0])            # per trial
    xx, xy = mech.laplace((np.zeros((3,)), np.zeros((2,))), sens, 1.0, lg, size=2, label="pair")
    assert xx.shape == (2, 3) and xy.shape == (2, 2)
    (sp,) = lg.spends
    assert sp.mechanism == fp_safe.LAPLACE and sp.sensitivity == 4.0 and sp.scale == 1.0
    assert sp.epsilon == pytest.approx(1.0, rel=1e-15)


def test_laplace_rows_secure_cells_from_opendp_seeded_cells_as_before():
    S, T, k = 3, 2, 4
    v = np.ones((S, T, k))
    standard = np.zeros((S, T, k))              # seeded: value + b·0 = value; secure: real noise
    seeded = PrivacyLedger(np.random.default_rng(0))
    ledgers = [secure(), seeded, secure()]
    out = mech.laplace_rows(v, standard, np.array([1.0, 1.0, 2.0]), 0.5, ledgers, label="rows")
    assert np.array_equal(out[1], v[1])
    assert not np.array_equal(out[0], v[0]) and not np.array_equal(out[2], v[2])
    assert [lg.spends[0].mechanism for lg in ledgers] == [fp_safe.LAPLACE, "laplace", fp_safe.LAPLACE]
    assert ledgers[2].spends[0].epsilon == pytest.approx(0.5, rel=1e-15) and ledgers[2].spends[0].scale == 4.0


def test_gaussian_draws_through_opendp_and_records_its_map():
    lg = secure()
    out = mech.gaussian(np.zeros(20_000), 1.5, lg, sensitivity=0.7, epsilon=1.0, label="g")
    (sp,) = lg.spends
    assert sp.mechanism == fp_safe.GAUSSIAN and sp.notion == "approx"
    ref = mech.gaussian_spend(0.7, 1.5, 1.0)
    assert sp.sensitivity >= 0.7 and sp.sensitivity == pytest.approx(0.7, rel=1e-15)
    assert sp.delta == pytest.approx(ref.delta, rel=1e-12) and sp.rho == pytest.approx(ref.rho, rel=1e-14)
    assert stats.kstest(out, stats.norm(scale=1.5).cdf).pvalue > 1e-6
    assert stats.kstest(out, stats.norm(scale=3.0).cdf).pvalue < 1e-6


def test_gaussian_zcdp_secure_records_at_least_the_declared_rho():
    lg = secure()
    mech.gaussian_zcdp(np.zeros(5), 1.0, 0.125, lg)
    (sp,) = lg.spends
    assert sp.mechanism == fp_safe.GAUSSIAN and sp.rho >= 0.125 and sp.rho == pytest.approx(0.125, rel=1e-15)


def test_opendp_maps_agree_with_the_textbook_maps_to_an_ulp():
    rng = np.random.default_rng(5)
    for d, b in rng.uniform(1e-3, 1e3, size=(50, 2)):
        assert fp_safe.laplace_epsilon(d, b) == pytest.approx(d / b, rel=4e-16)
        assert float(fp_safe.gaussian_equivalent_sensitivity(d, b)) == pytest.approx(d, rel=4e-16)
    assert fp_safe.laplace_epsilon(0.0, 1.0) == 0.0 and fp_safe.laplace_epsilon(1.0, 0.0) == float("inf")


def test_scalar_with_a_bound_keeps_snapping():
    lg = secure()
    mech.laplace(0.5, 1.0, 1.0, lg, bound=4.0)
    assert lg.spends[0].mechanism == "laplace (snapping)"


def test_seeded_releases_are_untouched():
    a = mech.laplace(np.zeros(4), 1.0, 1.0, PrivacyLedger(np.random.default_rng(3)))
    b = np.random.default_rng(3).laplace(0.0, 1.0, 4)
    assert np.array_equal(a, b)


def test_without_opendp_a_secure_release_names_the_extra(monkeypatch):
    def missing():
        raise UserError("--noise secure draws Laplace and Gaussian noise with OpenDP's floating-point-safe samplers: "
                        "install the extra, pip install 'dpexp[secure]' (or opendp>=0.16)")

    monkeypatch.setattr(fp_safe, "_dp", missing)
    fp_safe._laplace.cache_clear()
    try:
        with pytest.raises(UserError, match=r"dpexp\[secure\]"):
            mech.laplace(np.zeros(3), 1.0, 1.0, secure())
    finally:
        fp_safe._laplace.cache_clear()


def test_secure_values_must_be_finite():
    with pytest.raises(UserError, match="finite"):
        fp_safe.add_laplace(np.array([1.0, np.nan]), 1.0)


def test_a_nan_scale_releases_nothing_and_spends_nothing():
    """A ⊥ trial (e.g. NoisyStats' with nvar ≤ 0: its intercept's scale is NaN) gets NaN, as the textbook sampler
    gives, and no ε; OpenDP would refuse the NaN scale and fail the whole cell."""
    out = fp_safe.add_laplace(np.zeros((3, 2)), np.array([[1.0], [np.nan], [2.0]]))
    assert np.all(np.isnan(out[1])) and np.all(np.isfinite(out[[0, 2]])) and np.all(out[[0, 2]] != 0.0)
    assert np.all(np.isnan(fp_safe.add_gaussian(np.zeros(2), np.nan)))
    assert fp_safe.laplace_epsilon(np.array([1.0, np.nan]), np.array([2.0, np.nan])) == fp_safe.laplace_epsilon(1.0, 2.0)
    lg = secure()
    d3 = np.array([0.5, np.nan])         # per trial, as NoisyStats' intercept
    got = mech.laplace(0.0, d3, 1.0, lg, size=2, scale=3.0 * d3)
    assert np.isfinite(got[0]) and np.isnan(got[1]) and lg.spends[0].epsilon == pytest.approx(1.0, rel=1e-12)


def test_standard_laplace_rows_of_a_secure_cell_are_nan_and_draw_nothing():
    """``standard_laplace_rows`` draws no textbook noise for a secure cell (its releases come from OpenDP): its row
    is NaN, so a path that used it as noise would give a non-finite release, never a noiseless one."""
    src = SecureNoise()
    seeded = np.random.default_rng(3)
    rows = mech.standard_laplace_rows([PrivacyLedger(src), seeded], 5)
    assert np.all(np.isnan(rows[0])) and np.array_equal(rows[1], np.random.default_rng(3).laplace(0.0, 1.0, 5))
    assert src.textbook_used == set()
