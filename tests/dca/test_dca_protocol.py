"""DCA (Heikkilä et al. 2017, Alg. 1): exact share cancellation, overflow refusal, Thm 1 noise, dropouts, back-ends."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpexp.errors import UserError
from dpexp.families.dca.protocol.dca import DCA, ArrayClients, SecureRandomness, SyntheticClients
from dpexp.families.dca.protocol.fixed_point import FixedPoint, RingOverflowError, ring_sum
from dpexp.families.dca.protocol.noise import client_sigma, sigma_std

MASK64 = (1 << 64) - 1


def _exact_ring_sum(enc: np.ndarray) -> list[int]:
    """Column sums of uint64 ring elements with Python integers (no wrap), then mod 2^64."""
    return [sum(int(v) for v in enc[:, j]) & MASK64 for j in range(enc.shape[1])]


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 120), m=st.integers(2, 12), d=st.integers(1, 6), f=st.integers(0, 40),
       chunk=st.integers(1, 50), seed=st.integers(0, 2**32 - 1))
def test_shares_cancel_exactly(n, m, d, f, chunk, seed):
    """Σ_k q_k equals, bit for bit, the ring sum of the clients' fixed-point encodings (σ = 0: values are z_i)."""
    rng = np.random.default_rng(seed)
    fp = FixedPoint(f)
    cap = fp.capacity(n)
    Z = rng.uniform(-1, 1, (n, d)) * min(cap, 1e6)
    res = DCA(n_compute=m, frac_bits=f, chunk_clients=chunk).run(Z, 0.0, rng)
    enc = fp.encode(Z)
    assert [int(v) for v in res.ring_total] == _exact_ring_sum(enc)
    assert [int(v) for v in ring_sum(res.partials)] == [int(v) for v in res.ring_total]
    exact = np.array([sum(int(v) for v in enc.view(np.int64)[:, j]) for j in range(d)], dtype=float) / 2.0**f
    np.testing.assert_array_equal(res.total, exact)
    # every single Compute's broadcast is masked: with n*d*m >= 8 values, not all equal to the plain partial sums
    if m >= 2 and n * d >= 4:
        assert not np.array_equal(res.partials[0], ring_sum(enc))


def test_noisy_sum_is_bit_exact_sum_of_encoded_noisy_values():
    """With noise, the aggregate equals the ring sum of enc(z_i + η_i) reconstructed from each client's shares."""
    rng = np.random.default_rng(3)
    Z = rng.normal(size=(300, 4))
    proto = DCA(n_compute=5, frac_bits=30, chunk_clients=64)
    job = proto.make_job(Z, 0.7, np.random.default_rng(11))
    per_client = []
    for j in range(job.n_chunks):
        msgs = np.stack(job.client_messages(j))              # (M, n_j, d)
        per_client.append(ring_sum(msgs, axis=0))            # enc(z_i + η_i) of each client
    enc = np.concatenate(per_client)
    res = proto.run(Z, 0.7, np.random.default_rng(11))
    assert [int(v) for v in res.ring_total] == _exact_ring_sum(enc)
    assert np.abs(FixedPoint(30).decode(enc) - Z).max() > 0.1       # noise really was added per client


def test_overflow_refused():
    fp = FixedPoint(60)
    with pytest.raises(RingOverflowError, match="frac_bits"):
        fp.check_capacity(100, 10.0)
    with pytest.raises(RingOverflowError):
        fp.encode(np.array([5.0]), n_terms=2)        # capacity (2^63 - 1)/2 / 2^60 ≈ 4
    fp.encode(np.array([1.0]), n_terms=2)               # 2 * 2^60 < 2^63: fine
    with pytest.raises(RingOverflowError, match="overflow"):
        DCA(n_compute=3, frac_bits=50).run(np.ones((10, 2)), 0.0, np.random.default_rng(0), value_bound=2000.0)
    with pytest.raises(RingOverflowError):               # per-value refusal even without a declared bound
        DCA(n_compute=3, frac_bits=56).run(np.full((1000, 2), 100.0), 0.0, np.random.default_rng(0))
    with pytest.raises(UserError, match="frac_bits"):
        FixedPoint(63)


def test_noise_variance_per_client_and_total_matches_theorem_1():
    """Per-client variance σ_std²/(N − T − 1) and total N σ_std²/(N − T − 1) (Thm 1).

    Two-sided chi-square tests at level 1e-6 each (failure probability ≤ 2e-6 for a correct implementation)."""
    N, d, T, M = 40, 25, 3, 4
    s_std = sigma_std(5.0, 1.0, 1e-5)
    s = client_sigma(s_std, N, T)
    assert s**2 == pytest.approx(s_std**2 / (N - T - 1), rel=1e-12)
    proto = DCA(n_compute=M, frac_bits=32, n_faulty=T)
    # per client: decode each client's reconstructed enc(0 + η_i)
    job = proto.make_job(np.zeros((N, d)), s, np.random.default_rng(5))
    eta = np.concatenate([FixedPoint(32).decode(ring_sum(np.stack(job.client_messages(j)), axis=0))
                          for j in range(job.n_chunks)])
    n = eta.size
    lo, hi = stats.chi2.ppf([0.5e-6, 1 - 0.5e-6], n)
    assert lo < np.sum(eta**2) / s**2 < hi
    # total over 200 independent rounds
    rng = np.random.default_rng(6)
    totals = np.stack([proto.run(np.zeros((N, d)), s, rng).total for _ in range(200)])
    n2 = totals.size
    lo, hi = stats.chi2.ppf([0.5e-6, 1 - 0.5e-6], n2)
    assert lo < np.sum(totals**2) / (N * s**2) < hi
    assert N * s**2 >= s_std**2


def test_dropouts_complete_and_stay_within_T():
    Z = np.random.default_rng(0).uniform(-1, 1, (50, 3))
    proto = DCA(n_compute=4, frac_bits=32, n_faulty=2, chunk_clients=7)
    res = proto.run(Z, 0.0, np.random.default_rng(1), dropped=[4, 31])
    keep = np.ones(50, bool)
    keep[[4, 31]] = False
    fp = FixedPoint(32)
    assert [int(v) for v in res.ring_total] == _exact_ring_sum(fp.encode(Z[keep]))
    assert res.n_included == 48
    with pytest.raises(UserError, match="T=2"):
        proto.run(Z, 0.0, np.random.default_rng(1), dropped=[1, 2, 3])
    with pytest.raises(UserError, match="N - T - 1"):
        DCA(n_compute=3, n_faulty=5).run(np.zeros((6, 1)), 1.0, np.random.default_rng(0))


def test_seeded_reproducible_and_secure_mode_random():
    Z = np.zeros((20, 3))
    a = DCA(n_compute=3).run(Z, 1.0, np.random.default_rng(9))
    b = DCA(n_compute=3).run(Z, 1.0, np.random.default_rng(9))
    np.testing.assert_array_equal(a.partials, b.partials)
    c = DCA(n_compute=3, mode="secure").run(Z, 1.0)
    d = DCA(n_compute=3, mode="secure").run(Z, 1.0)
    assert not np.array_equal(c.partials, d.partials)
    with pytest.raises(UserError, match="mode='seeded' needs"):
        DCA(mode="seeded").run(Z, 1.0, None)
    # secure Gaussian draws: mean 0, variance 1 (|z| tests at ~5 sd, failure probability < 1e-5)
    z = SecureRandomness().normal(0, (20000,))
    assert abs(z.mean()) < 5 / np.sqrt(20000)
    assert abs(z.var() - 1) < 5 * np.sqrt(2 / 20000)


def test_encryption_gives_identical_sums():
    pytest.importorskip("cryptography")
    Z = np.random.default_rng(2).normal(size=(60, 5))
    a = DCA(n_compute=3, chunk_clients=16, encrypt=True, n_faulty=1).run(Z, 0.3, np.random.default_rng(4), dropped=[7])
    b = DCA(n_compute=3, chunk_clients=16, n_faulty=1).run(Z, 0.3, np.random.default_rng(4), dropped=[7])
    np.testing.assert_array_equal(a.ring_total, b.ring_total)


def test_thread_count_and_synthetic_clients_do_not_change_results():
    from dpexp.families.dca.protocol.backends import InProcessBackend

    data = SyntheticClients(500, 7, seed=3)
    a = DCA(n_compute=4, chunk_clients=50).run(data, 0.2, np.random.default_rng(1), backend=InProcessBackend(1))
    b = DCA(n_compute=4, chunk_clients=50).run(data, 0.2, np.random.default_rng(1), backend=InProcessBackend(3))
    np.testing.assert_array_equal(a.partials, b.partials)
    full = np.concatenate([data.rows(s, min(500, s + 50)) for s in range(0, 500, 50)])
    c = DCA(n_compute=4, chunk_clients=50).run(ArrayClients(full), 0.2, np.random.default_rng(1))
    np.testing.assert_array_equal(a.ring_total, c.ring_total)


def test_dask_backend_equals_in_process():
    pytest.importorskip("distributed")
    from distributed import Client, LocalCluster

    from dpexp.families.dca.protocol.backends import DaskBackend

    Z = np.random.default_rng(1).uniform(-1, 1, (300, 4))
    proto = DCA(n_compute=3, chunk_clients=64, n_faulty=1)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as cl, \
            Client(cl) as client:
        a = proto.run(Z, 0.1, np.random.default_rng(5), backend=DaskBackend(client), dropped=[10])
    b = proto.run(Z, 0.1, np.random.default_rng(5), dropped=[10])
    np.testing.assert_array_equal(a.partials, b.partials)
    np.testing.assert_array_equal(a.total, b.total)


def test_parameter_errors():
    with pytest.raises(UserError, match="n_compute"):
        DCA(n_compute=1)
    with pytest.raises(UserError, match="mode"):
        DCA(mode="fast")
    with pytest.raises(UserError, match="dropped"):
        DCA(n_faulty=1).run(np.zeros((5, 1)), 0.0, np.random.default_rng(0), dropped=[9])


@pytest.mark.parametrize("n,d,chunk", [(20, 2, None), (37, 3, 8)])
def test_run_trials_is_bit_identical_to_one_run_per_trial(n, d, chunk):
    """``run_trials`` draws each trial's randomness exactly as one ``run`` call (4 words of the generator, then the
    per-chunk streams): shared values, per-trial values and per-trial σ give the same totals bit for bit, and leave
    the generator in the same state.  Block sizes (trials per vectorised block) do not change anything."""
    proto = DCA(n_compute=4, frac_bits=30, chunk_clients=chunk)
    rng = np.random.default_rng(5)
    T = 7
    Z = rng.uniform(-1, 1, (n, d))
    Zt = rng.uniform(-1, 1, (T, n, d))
    sig = rng.uniform(0.1, 2.0, T)
    for values, s in ((Z, 0.7), (Zt, sig), (Z, 0.0)):
        g1, g2, g3 = (np.random.default_rng(11) for _ in range(3))
        old = np.stack([proto.run(values if values.ndim == 2 else values[t], float(np.broadcast_to(s, T)[t]), g1).total
                        for t in range(T)])
        np.testing.assert_array_equal(proto.run_trials(values, s, g2, T), old)
        np.testing.assert_array_equal(proto.run_trials(values, s, g3, T, block_bytes=1), old)   # one trial a block
        assert g1.integers(1 << 62) == g2.integers(1 << 62) == g3.integers(1 << 62)


@pytest.mark.parametrize("mode", ["seeded", "secure"])
def test_run_trials_without_secret_shares_gives_the_same_totals(mode, monkeypatch):
    """``shares=False`` sums the clients' encoded words directly: the M shares cancel exactly in Z/2^64 and their
    masks have streams of their own, so the totals (and the generator's state after the call) are bit-identical
    to those with the shares, for shared and per-trial values, several client chunks and one trial a block.  In
    secure mode (os.urandom masks) each chunk's noise is made a seeded stream read in order, so that the two calls
    differ only in their masks.  Exact equality is the claim and holds on any CPU: the two calls share every
    floating-point step (noise, encoding, decoding) and differ only in uint64 additions modulo 2^64, which are exact."""
    rng = np.random.default_rng(3)
    T, n, d = 5, 53, 3
    Z, Zt = rng.uniform(-1, 1, (n, d)), rng.uniform(-1, 1, (T, n, d))
    sig = rng.uniform(0.1, 2.0, T)
    calls: dict = {}           # secure mode, per run_trials call: the k-th stream asked for chunk j
    if mode == "secure":
        from dpexp.families.dca.protocol.dca import SecureRandomness

        def seeded_stream(self, chunk):
            k = calls[chunk] = calls.get(chunk, -1) + 1
            return np.random.default_rng([chunk, k]).standard_normal
        monkeypatch.setattr(SecureRandomness, "normal_stream", seeded_stream)
    for M, chunk in ((2, None), (10, 8)):
        proto = DCA(n_compute=M, frac_bits=30, chunk_clients=chunk, mode=mode)
        for values, s, kw in ((Z, 0.7, {}), (Zt, sig, {}), (Zt, sig, {"block_bytes": 1})):
            g_with, g_without = np.random.default_rng(11), np.random.default_rng(11)
            calls.clear()
            with_shares = proto.run_trials(values, s, g_with if mode == "seeded" else None, T, **kw)
            calls.clear()
            without = proto.run_trials(values, s, g_without if mode == "seeded" else None, T, shares=False, **kw)
            np.testing.assert_array_equal(without, with_shares)
            assert np.all(np.isfinite(without)) and np.any(without != values.sum(axis=-2))   # noise was added
            assert g_with.integers(1 << 62) == g_without.integers(1 << 62)


def test_run_trials_secure_mode_shapes_and_refusals():
    proto = DCA(n_compute=3, mode="secure")
    out = proto.run_trials(np.zeros((10, 2)), 1.0, None, 5)
    assert out.shape == (5, 2) and np.all(out != 0) and len(np.unique(out)) == 10
    with pytest.raises(UserError, match="shape"):
        proto.run_trials(np.zeros((4, 10, 2)), 1.0, None, 5)
    with pytest.raises(UserError, match="sigma"):
        proto.run_trials(np.zeros((10, 2)), [1.0, -1.0, 1.0, 1.0, 1.0], None, 5)
    with pytest.raises(RingOverflowError):          # one trial's bound over the ring capacity refuses the whole call
        DCA(n_compute=3, frac_bits=60).run_trials(np.zeros((10, 2)), 0.1, np.random.default_rng(0), 3,
                                                  value_bound=np.array([0.1, 0.1, 10.0]))
