"""Noise sources: seeded mode draws exactly what today's direct ``rng.<method>`` calls draw (so converting an
algorithm to the mechanisms keeps its results byte-identical); secure mode draws the right distributions.

Seeded-equality tests compare bytes (``tobytes``).  Secure-mode distribution tests drive ``SecureNoise`` with a
fixed byte stream (``entropy=Generator(seed).bytes``) so they are deterministic; each KS / chi-square test uses
threshold p > 1e-4 (a correct sampler fails a given seed with probability 1e-4) and n large enough that a factor-2
error in a scale gives p < 1e-30.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
from scipy import stats

from dpexp.errors import UserError
from dpexp.privacy import mechanisms as mech
from dpexp.privacy.ledger import PrivacyLedger, as_ledger
from dpexp.privacy.noise import SecureNoise, SeededNoise, as_noise, is_secure, make_noise

P_MIN = 1e-4


def same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def fixed_secure(seed: int) -> SecureNoise:
    return SecureNoise(entropy=np.random.default_rng(seed).bytes)


# ------------------------------------------------------------------------------------------ seeded = raw Generator
CALLS = [
    ("laplace", (0.0, 2.5, (3, 4))), ("normal", (0.0, 1.7, 7)), ("standard_normal", ((2, 5),)),
    ("gumbel", (0.0, 1.0, (4, 6))), ("exponential", (2.0, 9)), ("gamma", (3.0, 1.0, 8)),
    ("standard_gamma", (0.4, 5)), ("standard_t", (3.0, 6)), ("random", (11,)), ("uniform", (-1.0, 2.0, 4)),
    ("laplace", (0.0, np.array([1.0, 3.0]), (5, 2))), ("normal", (1.0, 2.0, None)), ("random", (None,)),
]


def test_seeded_noise_is_the_generator_call_for_call():
    raw, wrapped = np.random.default_rng(11), SeededNoise(np.random.default_rng(11))
    for name, args in CALLS:
        assert same(getattr(wrapped, name)(*args), getattr(raw, name)(*args)), name
    assert same(wrapped.integers(0, 2**63, size=4), raw.integers(0, 2**63, size=4))
    # and the generator it exposes for non-privacy randomness continues the same stream
    assert same(wrapped.generator.permuted(np.arange(10)), raw.permuted(np.arange(10)))


def test_as_ledger_of_a_generator_draws_like_the_generator():
    raw, led = np.random.default_rng(5), as_ledger(np.random.default_rng(5))
    assert isinstance(led, PrivacyLedger) and not led.secure and as_ledger(led) is led
    assert same(mech.laplace(np.zeros(3), 1.0, 0.5, led, size=4), raw.laplace(0.0, 2.0, (4, 3)))


# ------------------------------------------------------------------------------------------ today's expressions
def test_rplr_statistics_release_is_byte_identical():
    """robust_private_lr.perturbed_stats: X'X upper triangle, X'y, y'y (and _dp_sigmas' scalar releases)."""
    d, trials = 4, 6
    m = d * (d + 1) // 2
    Xy, yy = np.arange(d, dtype=float), 3.25
    s_xx, s_xy, s_yy, e_xx, e_xy, e_yy = 20.0 * 0.3, 2.0 * d * 0.7, 0.49, 0.35, 0.6, 0.05
    rng = np.random.default_rng(1)
    old = (rng.laplace(0.0, mech.laplace_scale(s_xx, e_xx), size=(trials, m)),
           Xy[None] + rng.laplace(0.0, mech.laplace_scale(s_xy, e_xy), size=(trials, d)),
           yy + rng.laplace(0.0, mech.laplace_scale(s_yy, e_yy), size=trials),
           float(7.5) + rng.laplace(0.0, mech.laplace_scale(d * 0.09, 0.05)))
    L = PrivacyLedger(np.random.default_rng(1))
    new = (mech.laplace(np.zeros(m), s_xx, e_xx, L, size=trials, label="X'X"),
           mech.laplace(Xy, s_xy, e_xy, L, size=trials, label="X'y"),
           mech.laplace(yy, s_yy, e_yy, L, size=trials, label="y'y"),
           float(mech.laplace(7.5, d * 0.09, 0.05, L, label="S_x")))
    for a, b in zip(old, new):
        assert same(a, b)
    assert L.guarantee().epsilon == pytest.approx(1.05)


def test_functional_mechanism_release_is_byte_identical():
    D, trials, eps = 3, 5, 0.8
    b = (2.0 * D * D + 4.0 * D) / eps
    M0, a0 = np.eye(D), np.ones(D)
    rng = np.random.default_rng(2)
    M = np.broadcast_to(M0, (trials, D, D)).copy()
    a = np.broadcast_to(a0, (trials, D)).copy()
    M += rng.laplace(0.0, b, size=(trials, D, D))
    a += rng.laplace(0.0, b, size=(trials, D))
    L = PrivacyLedger(np.random.default_rng(2))
    dM, da = mech.laplace((np.zeros((D, D)), np.zeros(D)), 2.0 * D * D + 4.0 * D, eps, L, size=trials)
    assert same(M, M0 + dM) and same(a, a0 + da)
    assert len(L.spends) == 1 and L.guarantee().epsilon == eps     # one release, one budget


def _old_gamma_norm_noise(d, scale, rng, size):  # output_perturbation.gamma_norm_noise as of today
    g = rng.normal(size=(size, d))
    g /= np.linalg.norm(g, axis=1, keepdims=True)
    r = rng.gamma(shape=d, scale=1.0, size=size) * scale
    return g * r[:, None]


def test_output_perturbation_release_is_byte_identical():
    d, trials, R, lam, n, eps = 5, 7, 1.0, 0.3, 40, 0.9
    w = np.linspace(-0.2, 0.2, d)
    scale = (12.0 * R + 8.0) / (lam * n * eps)
    old = np.broadcast_to(w, (trials, d)).copy() + _old_gamma_norm_noise(d, scale, np.random.default_rng(3), trials)
    L = PrivacyLedger(np.random.default_rng(3))
    new = mech.gamma_norm(w, (12.0 * R + 8.0) / (lam * n), eps, L, size=trials, scale=scale)
    assert same(old, new) and L.guarantee().epsilon == eps


def test_noisy_stats_and_intercept_are_byte_identical():
    n, eps, trials = 30, 1.3, 9
    x, y = np.linspace(0, 1, n), np.linspace(0.2, 0.9, n) ** 2
    xm, ym = x.mean(), y.mean()
    nvar, ncov = float(np.sum((x - xm) ** 2)), float(np.sum((x - xm) * (y - ym)))
    dlt = 1.0 - 1.0 / n
    b1 = b2 = 3.0 * dlt / eps
    rng = np.random.default_rng(4)   # noisy_stats_predict as of today
    L1, L2, L3 = (rng.laplace(0.0, 1.0, trials) * b1, rng.laplace(0.0, 1.0, trials) * b2,
                  rng.laplace(0.0, 1.0, trials))
    alpha = (ncov + L1) / (nvar + L2)
    beta_old = (ym - alpha * xm) + L3 * (3.0 * ((1.0 + np.abs(alpha)) / n) / eps)
    yt_old = ym + rng.laplace(0.0, 1.0, trials) * (1.0 / (eps * n))
    L = PrivacyLedger(np.random.default_rng(4))
    c = mech.laplace(ncov, dlt, eps / 3, L, size=trials, scale=b1)
    v = mech.laplace(nvar, dlt, eps / 3, L, size=trials, scale=b2)
    alpha_new = c / v
    d3 = (1.0 + np.abs(alpha_new)) / n
    beta_new = (ym - alpha_new * xm) + mech.laplace(0.0, d3, eps / 3, L, size=trials, scale=3.0 * d3 / eps)
    assert same(alpha, alpha_new) and same(beta_old, beta_new)
    assert same(yt_old, mech.laplace(ym, 1.0 / n, eps, L, size=trials, scale=1.0 / (eps * n)))
    assert L.guarantee().epsilon == pytest.approx(2 * eps)   # NoisyStats eps + NoisyIntercept eps (one ledger here)


def test_dp_gradient_descent_steps_are_byte_identical():
    tau, T, eps, trials = 1.0, 80, 0.7, 6
    b = 4.0 * tau / (eps / T)
    rho = 0.5 * eps * eps
    s = 2.0 * tau / math.sqrt(rho / T)
    rng = np.random.default_rng(5)
    old = [rng.laplace(0.0, 1.0, (trials, 2)) * b for _ in range(3)] + [rng.normal(0.0, 1.0, (trials, 2)) * s
                                                                        for _ in range(3)]
    L = PrivacyLedger(np.random.default_rng(5))
    new = [mech.laplace(np.zeros(2), 4.0 * tau, eps / T, L, size=trials) for _ in range(3)]
    new += [mech.gaussian_zcdp(np.zeros(2), 2.0 * math.sqrt(2.0) * tau, rho / T, L, size=trials, sigma=s)
            for _ in range(3)]
    for a, c in zip(old, new):
        assert same(a, c)


def _old_gumbel_argmax(lw, rng):  # dp_median._gumbel_argmax as of today
    g = rng.gumbel(size=lw.shape)
    g += lw
    return np.argmax(g, axis=-1)


def test_median_samplers_are_byte_identical():
    lw = np.log(np.linspace(0.1, 1.0, 50)) - 0.3 * np.abs(np.arange(50) - 25)
    rng = np.random.default_rng(6)
    old = (_old_gumbel_argmax(np.broadcast_to(lw, (8, 50)), rng), rng.random(8),
           0.4 + (0.05 / 1.2) * rng.standard_t(3.0, size=8))
    L = PrivacyLedger(np.random.default_rng(6))
    new = (mech.gumbel_argmax(np.broadcast_to(lw, (8, 50)), L), L.noise.random(8),
           mech.smooth_sensitivity_t(0.4, 0.05, 0.125, 1.2, 3.0, L, size=8))
    for a, b in zip(old, new):
        assert same(a, b)


def test_oi_mos_dlr_and_null_model_draws_are_byte_identical():
    trials, N, s = 5, 50, 0.8
    p_hat, scale = np.array([0.3, 0.6]), np.array([0.02, np.nan])
    total = np.arange(4.0)
    rng = np.random.default_rng(7)
    old = (p_hat[None, :] + rng.laplace(0.0, 1.0, (trials, 2)) * scale[None, :],
           total + s * rng.standard_normal((trials, 4)),
           total + s * math.sqrt(N) * rng.standard_normal((trials, 4)),
           np.full((trials, 3), 0.5) + rng.normal(0.0, 0.1, size=(trials, 3)))
    L = PrivacyLedger(np.random.default_rng(7))
    new = (mech.heuristic_laplace(p_hat, scale, L, size=trials, reason="noise scale from private tracts"),
           mech.gaussian(total, s, L, size=trials, sensitivity=1.0, epsilon=1.0, delta=1e-5),
           mech.gaussian(total, s * math.sqrt(N), L.noise, size=trials),
           np.full((trials, 3), 0.5) + L.noise.normal(0.0, 0.1, size=(trials, 3)))
    for a, b in zip(old, new):
        assert np.array_equal(a, b, equal_nan=True) and a.shape == b.shape
    assert L.guarantee().kind == "none"


# ------------------------------------------------------------------------------------------ secure mode
def test_secure_noise_reads_the_os_and_is_not_reproducible():
    s = make_noise("secure")
    assert isinstance(s, SecureNoise) and s.secure and is_secure(s)
    a, b = s.random(8), SecureNoise().random(8)
    assert not np.array_equal(a, b)                          # P(equal) = 2^-424
    assert not is_secure(np.random.default_rng(0)) and not is_secure(make_noise("seeded", np.random.default_rng(0)))
    assert is_secure(PrivacyLedger(SecureNoise()))


def test_noise_mode_errors():
    with pytest.raises(UserError):
        make_noise("urandom")
    with pytest.raises(UserError):
        make_noise("seeded")
    with pytest.raises(TypeError):
        as_noise(42)


def test_secure_shapes_follow_numpy():
    s, g = fixed_secure(1), np.random.default_rng(1)
    for name, args in CALLS:
        assert np.shape(getattr(s, name)(*args)) == np.shape(getattr(g, name)(*args)), name
        assert isinstance(getattr(s, name)(*args), float) == isinstance(getattr(g, name)(*args), float), name
    assert s.integers(0, 10, size=(2, 3)).shape == (2, 3)


def test_secure_uniforms_from_known_bytes():
    zeros = SecureNoise(entropy=lambda n: bytes(n))
    assert zeros.random() == 0.0                             # k = 0
    assert zeros.exponential() == -math.log(2.0**-53)         # U = 2^-53 at the (0, 1] end
    ones = SecureNoise(entropy=lambda n: b"\xff" * n)
    assert ones.random() == 1.0 - 2.0**-53                    # the largest double below 1
    assert ones.exponential() == 0.0                          # U = 1
    assert ones.laplace(0.0, 1.0) == 0.0
    assert 0.0 < zeros.gumbel() + 10 and math.isfinite(ones.gumbel())


N = 40_000
DISTS = [
    ("random", lambda s: s.random(N), stats.uniform().cdf),
    ("uniform", lambda s: s.uniform(-2.0, 3.0, N), stats.uniform(-2.0, 5.0).cdf),
    ("laplace", lambda s: s.laplace(1.0, 2.5, N), stats.laplace(1.0, 2.5).cdf),
    ("exponential", lambda s: s.exponential(0.7, N), stats.expon(scale=0.7).cdf),
    ("normal", lambda s: s.normal(-1.0, 3.0, N), stats.norm(-1.0, 3.0).cdf),
    ("standard_normal", lambda s: s.standard_normal(N), stats.norm().cdf),
    ("gumbel", lambda s: s.gumbel(0.5, 2.0, N), stats.gumbel_r(0.5, 2.0).cdf),
    ("gamma 0.3", lambda s: s.gamma(0.3, 2.0, N), stats.gamma(0.3, scale=2.0).cdf),
    ("gamma 1", lambda s: s.gamma(1.0, 1.0, N), stats.gamma(1.0).cdf),
    ("gamma 2.5", lambda s: s.standard_gamma(2.5, N), stats.gamma(2.5).cdf),
    ("gamma 40", lambda s: s.gamma(40.0, 0.5, N), stats.gamma(40.0, scale=0.5).cdf),
    ("t 3", lambda s: s.standard_t(3.0, N), stats.t(3.0).cdf),
    ("t 1.5", lambda s: s.standard_t(1.5, N), stats.t(1.5).cdf),
]


@pytest.mark.parametrize("name,draw,cdf", DISTS, ids=[d[0] for d in DISTS])
def test_secure_distributions_ks(name, draw, cdf):
    x = draw(fixed_secure(zlib.crc32(name.encode())))
    assert stats.kstest(x, cdf).pvalue > P_MIN


@pytest.mark.parametrize("name,draw,cdf", DISTS[2:8], ids=[d[0] for d in DISTS[2:8]])
def test_secure_ks_detects_a_factor_two_scale(name, draw, cdf):
    """The same test rejects a sampler whose scale is off by a factor 2: it has the power it claims."""
    x = draw(fixed_secure(zlib.crc32(name.encode())))
    loc = {"laplace": 1.0, "normal": -1.0, "gumbel": 0.5}.get(name, 0.0)
    half = (x - loc) * 2.0 + loc                           # what a sampler with twice the scale would give
    assert stats.kstest(half, cdf).pvalue < 1e-30


def test_secure_moments_match_scales():
    s = fixed_secure(3)
    b, sigma = 2.0, 3.0
    lap = s.laplace(0.0, b, 200_000)
    assert abs(np.mean(np.abs(lap)) - b) < 5 * b / math.sqrt(lap.size)    # E|X| = b, sd(|X|) = b
    nor = s.normal(0.0, sigma, 200_000)
    assert abs(nor.var() - sigma**2) < 5 * sigma**2 * math.sqrt(2 / nor.size)


def test_secure_direction_is_uniform_on_the_sphere():
    """gamma_norm in secure mode: the direction of the noise is uniform; in d = 3 each coordinate of a uniform
    direction is Uniform(-1, 1) (Archimedes), and the norm is Gamma(3, scale)."""
    L = PrivacyLedger(fixed_secure(4))
    b = mech.gamma_norm(np.zeros(3), 1.0, 2.0, L, size=30_000)
    r = np.linalg.norm(b, axis=1)
    assert stats.kstest(b[:, 0] / r, stats.uniform(-1, 2).cdf).pvalue > P_MIN
    assert stats.kstest(r, stats.gamma(3.0, scale=0.5).cdf).pvalue > P_MIN


def test_secure_integers_and_bits_are_uniform():
    s = fixed_secure(5)
    k = s.integers(0, 7, size=7_000)
    assert k.min() >= 0 and k.max() <= 6
    assert stats.chisquare(np.bincount(k, minlength=7)).pvalue > P_MIN
    w = s.bits64(20_000)
    ones = np.array([np.count_nonzero((w >> np.uint64(i)) & np.uint64(1)) for i in range(64)])
    assert np.all(np.abs(ones - 10_000) < 5 * math.sqrt(5_000))           # every bit fair (5 sd)
    assert isinstance(s.generator, np.random.Generator) and s.generator is s.generator
