"""Mironov's snapping mechanism (secure-mode Laplace release): calibration, U*, the output grid and bound, the
output distribution (chi-square against the discretised Laplace law, fixed byte stream), and what it records."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpexp.errors import UserError
from dpexp.privacy import mechanisms as mech
from dpexp.privacy import snapping as snap
from dpexp.privacy.ledger import PrivacyLedger
from dpexp.privacy.noise import SecureNoise


def fixed_secure(seed: int) -> SecureNoise:
    return SecureNoise(entropy=np.random.default_rng(seed).bytes)


def words(*ws: int) -> SecureNoise:
    """A source that returns the given 64-bit words, in order."""
    buf = b"".join(int(w).to_bytes(8, "little") for w in ws)
    pos = [0]

    def entropy(n: int) -> bytes:
        out = buf[pos[0]:pos[0] + n]
        pos[0] += n
        assert len(out) == n, "test byte stream exhausted"
        return out

    return SecureNoise(entropy=entropy)


def test_pow2_ceil():
    assert [snap.pow2_ceil(x) for x in (0.3, 0.5, 1.0, 3.0, 4.0, 1000.0)] == [0.5, 0.5, 1.0, 4.0, 4.0, 1024.0]


def test_params_follow_mironov_theorem_1():
    p = snap.snapping_params(3.0, 0.5, 100.0)
    assert (p.unit, p.lam, p.grid, p.bound) == (4.0, 2.0, 2.0, 25.0)
    assert p.epsilon_prime == (1 + 2.0**-49 * 25.0) / 2.0
    with pytest.raises(UserError):
        snap.snapping_params(1.0, 1.0, 0.5)                  # B <= λ
    with pytest.raises(UserError):
        snap.snapping_params(1.0, 1.0, 2.0**47)              # B >= 2^46 λ
    with pytest.raises(UserError):
        snap.snapping_params(0.0, 1.0, 10.0)


def test_uniform_star_from_known_words():
    """Exponent words first (one per draw, plus a continuation word for a draw whose word was all zeros), then one
    mantissa word per draw (its top 52 bits)."""
    top = 1 << 63
    u = snap.uniform_star(3, words(top, 1, 0, top, 0, 0, top))
    # exponent words 2^63 (0 leading zeros), 1 (63), 0 then 2^63 (64 + 0); mantissas 0, 0, 2^51
    assert u[0] == 0.5 and u[1] == 2.0**-64 and u[2] == 1.5 * 2.0**-65


def test_uniform_star_law():
    u = snap.uniform_star(200_000, fixed_secure(1))
    assert np.all((u > 0) & (u < 1))
    for k in range(1, 12):                                  # P(U* < 2^-k) = 2^-k
        p = np.mean(u < 2.0**-k)
        assert abs(p - 2.0**-k) < 5 * math.sqrt(2.0**-k / u.size)
    assert stats.kstest(u, stats.uniform().cdf).pvalue > 1e-4


def test_round_to_grid_ties_up():
    y = np.array([0.5, -0.5, 1.5, -1.5, 0.49, -2.51, 7.0])
    assert np.array_equal(snap._round_to_grid(y, 1.0), [1.0, 0.0, 2.0, -1.0, 0.0, -3.0, 7.0])
    assert np.array_equal(snap._round_to_grid(np.array([3.0, 5.0]), 4.0), [4.0, 4.0])


def test_release_lies_on_the_grid_inside_the_bound():
    out, p = snap.snapping(2.0, 1.0, 0.5, 6.0, fixed_secure(2), size=50_000)
    assert np.all(np.abs(out) <= 6.0)
    assert np.all(np.mod(out, p.grid * p.unit) == 0)
    assert np.mean(out == 6.0) > 0.1                       # mass piles at the clamp


def test_release_clamps_the_true_value():
    out, _ = snap.snapping(1e9, 1.0, 1.0, 50.0, fixed_secure(3), size=2_000)
    assert np.all(out <= 50.0) and np.median(out) == 50.0


def test_release_distribution_is_discretised_laplace():
    """P(out = kΛ) = P(x + Lap(λ) ∈ [kΛ − Λ/2, kΛ + Λ/2)) away from the bound."""
    x, eps, B = 0.3, 1.0, 1000.0
    out, p = snap.snapping(x, 1.0, eps, B, fixed_secure(4), size=200_000)
    k = np.round(out / p.grid).astype(int)
    ks = np.arange(-12, 13)
    lap = stats.laplace(x, p.lam)
    probs = lap.cdf((ks + 0.5) * p.grid) - lap.cdf((ks - 0.5) * p.grid)
    counts = np.array([np.count_nonzero(k == v) for v in ks])
    expected = probs * out.size
    keep = expected > 20
    assert stats.chisquare(counts[keep], expected[keep] * counts[keep].sum() / expected[keep].sum()).pvalue > 1e-4
    # and it would see a factor-2 error in λ
    wrong = stats.laplace(x, 2 * p.lam)
    probs2 = wrong.cdf((ks + 0.5) * p.grid) - wrong.cdf((ks - 0.5) * p.grid)
    e2 = probs2[keep] * counts[keep].sum() / probs2[keep].sum()
    assert stats.chisquare(counts[keep], e2).pvalue < 1e-30


def test_laplace_uses_snapping_only_in_secure_mode_and_records_epsilon_prime():
    L = PrivacyLedger(fixed_secure(5))
    out = mech.laplace(3.0, 1.0, 0.5, L, size=100, bound=64.0, label="y'y")
    s = L.spends[0]
    assert s.mechanism == "laplace (snapping)" and s.epsilon == (1 + 2.0**-49 * 64.0) / 2.0 and s.epsilon > 0.5
    assert np.all(np.mod(out, 2.0) == 0)
    # seeded: bound is ignored, the textbook draw is kept byte-identical
    a = mech.laplace(3.0, 1.0, 0.5, PrivacyLedger(np.random.default_rng(1)), size=5, bound=64.0)
    assert np.array_equal(a, 3.0 + np.random.default_rng(1).laplace(0.0, 2.0, 5))
    with pytest.raises(ValueError):
        mech.laplace(np.zeros(3), 1.0, 0.5, PrivacyLedger(fixed_secure(6)), bound=10.0)
