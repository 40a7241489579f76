"""Distributed Compute Algorithm (DCA): secure, differentially private summation (Heikkilä et al. 2017, Alg. 1).

Roles (all simulated explicitly; the execution back-ends in ``backends.py`` decide where they run):

* **Clients** i = 1..N each hold a vector z_i ∈ R^d.  Client i draws η_i ~ N(0, σ² I) (σ from Theorem 1, see
  ``noise.client_sigma``), encodes z_i + η_i in fixed point in the ring Z/2^64 (``fixed_point.FixedPoint``), draws
  M − 1 uniformly random ring vectors r_{i,1..M−1}, sets r_{i,M} = −Σ_{l<M} r_{i,l} (so Σ_k r_{i,k} = 0), and sends
  the message m_{i,1} = enc(z_i + η_i) + r_{i,1}, m_{i,k} = r_{i,k} (k ≥ 2) to Compute k (Alg. 1, steps 1–2).
  Any M − 1 of the messages of a client are jointly uniform: a Compute learns nothing unless all M collude.
* **Compute** nodes k = 1..M sum the messages they received (optionally after AES-GCM decryption) and broadcast
  q_k = Σ_i m_{i,k} (step 3).
* **Aggregator**: Σ_k q_k = Σ_i enc(z_i + η_i) exactly in Z/2^64 (the masks cancel bit for bit); decoding gives the
  DP sum Σ_i (z_i + η_i).

Privacy: with at most T clients that collude or drop out — counted together: D dropouts leave room for at most
T − D colluders — and σ² = σ_std²/(N − T − 1), the released sum is (ε, δ)-DP for the neighbouring relation under
which σ_std was calibrated (Theorem 1; callers here use replace-one).  The protocol draws the clients' noise; the
caller records the spend (``dpexp.privacy.mechanisms.distributed_gaussian_spend`` with the result's
``n_dropped``).

Dropouts (§4.1.3): clients listed in ``dropped`` never deliver; the Compute nodes agree on the set of clients whose
messages they aggregate (all M shares of a client or none), so the protocol still completes and the sum of the
N − |dropped| remaining clients has noise variance ≥ (N − T)σ² > σ_std².  More than T dropouts are refused
(the DP guarantee of Theorem 1 would no longer hold).

Randomness: ``mode="seeded"`` draws masks and noise from PCG64 streams derived from the caller's Generator (or the
generator of the ledger / noise source passed in), one pair per client chunk, so experiments are reproducible and
both back-ends give identical results.  **Seeded mode is for simulation only: its masks are predictable from the
seed and give no security.**  ``mode="secure"`` draws masks from the operating system CSPRNG (``os.urandom``) and
noise from ``dpexp.privacy.noise.SecureNoise``; results are then not reproducible by design.

Encryption: ``encrypt=True`` protects every client → Compute message with AES-256-GCM (``cryptography`` package,
the ``crypto`` extra) so that its cost can be measured (§4.1.4).  The simulation uses one symmetric key per Compute
node with a unique nonce per client; a deployment would agree one key per (client, Compute) pair with public-key
cryptography — the per-byte cost is the same.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from dpexp.errors import UserError
from dpexp.families.dca.protocol.fixed_point import FixedPoint, ring_sum
from dpexp.families.dca.protocol.noise import check_clients
from dpexp.privacy.noise import SecureNoise, SeededNoise, as_noise, is_secure

MODES = ("seeded", "secure")
#: number of standard deviations of noise allowed for in the configuration-time overflow check (P ≈ 3.6e-33).
NOISE_TAIL_SIGMAS = 12.0
#: bytes of client messages ``DCA.run_trials`` builds at a time (a few clients' M shares: stays in cache)
MESSAGE_BYTES = 256 << 10


# --------------------------------------------------------------------------------------------------- client data
class ClientData(Protocol):
    """The clients' vectors, readable in row ranges (one row per client)."""

    n: int
    d: int

    def rows(self, start: int, stop: int) -> np.ndarray: ...


class ArrayClients:
    """Client vectors held in one (N, d) array (experiments, tests)."""

    def __init__(self, Z: np.ndarray) -> None:
        Z = np.asarray(Z, dtype=np.float64)
        if Z.ndim == 1:
            Z = Z[:, None]
        if Z.ndim != 2:
            raise UserError(f"client values must be a 2-D array (clients x d), got shape {Z.shape}")
        self.Z = Z
        self.n, self.d = Z.shape

    def rows(self, start: int, stop: int) -> np.ndarray:
        return self.Z[start:stop]


class SyntheticClients:
    """N clients with vectors uniform in [−bound, bound]^d generated on demand per row block (Table 1 timings, where
    N·d = 10^9 values would not fit in memory).  Row block ``start`` is keyed by ``(seed, start)``."""

    def __init__(self, n: int, d: int, seed: int = 0, bound: float = 1.0) -> None:
        self.n, self.d, self.seed, self.bound = int(n), int(d), int(seed), float(bound)

    def rows(self, start: int, stop: int) -> np.ndarray:
        g = np.random.Generator(np.random.PCG64(np.random.SeedSequence(self.seed, spawn_key=(start,))))
        out = g.random((stop - start, self.d))
        out *= 2.0 * self.bound
        out -= self.bound
        return out


# --------------------------------------------------------------------------------------------------- randomness
class SeededRandomness:
    """Reproducible per-chunk streams (simulation only — predictable masks are not secure)."""

    secure = False

    def __init__(self, rng: np.random.Generator | None, entropy: list[int] | None = None) -> None:
        self.entropy = list(entropy) if entropy is not None else [int(v) for v in rng.integers(0, 2**63, size=4)]

    @classmethod
    def block(cls, rng: np.random.Generator, n: int) -> list["SeededRandomness"]:
        """``n`` randomnesses, exactly those of ``n`` successive ``SeededRandomness(rng)`` (one draw of 4n words)."""
        return [cls(None, [int(v) for v in row]) for row in rng.integers(0, 2**63, size=(n, 4))]

    def _gen(self, chunk: int, purpose: int) -> np.random.Generator:
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence(self.entropy, spawn_key=(chunk, purpose))))

    def masks_into(self, chunk: int, out: np.ndarray) -> None:
        """Fill the uint64 array ``out`` with uniform ring elements."""
        out.reshape(-1)[:] = self.mask_stream(chunk)((out.size,))

    def mask_stream(self, chunk: int):
        """A function ``shape -> uint64 array`` giving the successive words of chunk ``chunk``'s mask stream (the
        first call's words are those of ``masks_into``), each call's words in a new array (no copy)."""
        raw = self._gen(chunk, 1).bit_generator.random_raw

        def draw(shape: tuple[int, ...]) -> np.ndarray:
            return raw(math.prod(shape)).reshape(shape)
        return draw

    def normal(self, chunk: int, shape: tuple[int, ...]) -> np.ndarray:
        """The clients' share of the distributed Gaussian noise (Alg. 1, step 1) for chunk ``chunk``."""
        return self.normal_stream(chunk)(shape)

    def normal_stream(self, chunk: int):
        """A function ``shape -> draws`` giving the successive standard normals of chunk ``chunk``'s noise stream:
        calls of (a, d) then (b, d) give the rows of one ``normal(chunk, (a + b, d))``."""
        return SeededNoise(self._gen(chunk, 0)).standard_normal

    def key(self, k: int) -> bytes:
        return self._gen(k, 2).bytes(32)


class SecureRandomness:
    """Masks, noise and keys from the OS CSPRNG (``os.urandom``); not reproducible.

    ``noise``: the secure source the clients' noise shares come from — the cell's (its ledger's ``SecureNoise``),
    so that the ledger knows they were drawn by a textbook sampler (``SecureNoise.textbook_used``; a secure run's
    guarantee is then ``none``: a sum of per-client continuous Gaussians has no floating-point-safe form here)."""

    secure = True

    def __init__(self, noise: Any = None) -> None:
        self.noise = noise if noise is not None else SecureNoise()

    def masks_into(self, chunk: int, out: np.ndarray) -> None:
        flat = out.reshape(-1)
        flat[:] = np.frombuffer(os.urandom(8 * flat.size), dtype=np.uint64)

    def mask_stream(self, chunk: int):
        return lambda shape: np.frombuffer(os.urandom(8 * math.prod(shape)), dtype=np.uint64).reshape(shape)

    def normal(self, chunk: int, shape: tuple[int, ...]) -> np.ndarray:
        """The clients' noise from the OS CSPRNG (``SecureNoise``: inverse CDF of 52-bit uniforms)."""
        return np.asarray(self.noise.standard_normal(shape), dtype=float).reshape(shape)

    def normal_stream(self, chunk: int):
        return lambda shape: self.normal(chunk, shape)

    def key(self, k: int) -> bytes:
        return os.urandom(32)


def _secure_source(rng: Any) -> Any:
    """The cell's secure noise source when ``rng`` is (or holds) one, else None (a fresh ``SecureNoise``)."""
    if rng is None or isinstance(rng, np.random.Generator):
        return None
    noise = as_noise(rng)
    return noise if is_secure(noise) else None


# --------------------------------------------------------------------------------------------------- result
@dataclass
class DCAResult:
    """Output of one DCA round."""

    total: np.ndarray            # decoded Σ_i (z_i + η_i) over the clients that delivered, shape (d,)
    ring_total: np.ndarray       # the same in Z/2^64 (uint64), = Σ_k partials[k]
    partials: np.ndarray         # (M, d) uint64: what each Compute broadcast
    n_clients: int
    n_included: int
    client_sigma: float
    frac_bits: int
    timings: dict[str, float] = field(default_factory=dict)
    n_faulty: int = 0

    @property
    def n_dropped(self) -> int:
        return self.n_clients - self.n_included

    @property
    def n_colluding(self) -> int:
        """Colluders the guarantee still allows: T less the dropouts (they count together against T, Thm 1)."""
        return max(self.n_faulty - self.n_dropped, 0)


# --------------------------------------------------------------------------------------------------- one job
@dataclass
class DCAJob:
    """Everything the roles need for one round; picklable so that Dask can ship it to workers."""

    data: Any
    sigma: float
    n_compute: int
    frac_bits: int
    chunk_clients: int
    randomness: Any
    keep: np.ndarray | None = None
    keys: list[bytes] | None = None

    @property
    def n_chunks(self) -> int:
        return math.ceil(self.data.n / self.chunk_clients)

    def bounds(self, j: int) -> tuple[int, int]:
        return j * self.chunk_clients, min(self.data.n, (j + 1) * self.chunk_clients)

    # ---- client role (Alg. 1 steps 1–2), vectorised over the clients of chunk j
    def client_messages(self, j: int) -> list[Any]:
        """The M messages of every client of chunk j: a list over Compute nodes of (n_j, d) uint64 arrays, or of
        lists of AES-GCM ciphertexts when encrypting.  Clients that drop out send nothing."""
        start, stop = self.bounds(j)
        fp = FixedPoint(self.frac_bits)
        values = np.array(self.data.rows(start, stop), dtype=np.float64, copy=True)
        if self.sigma > 0:
            values += self.sigma * self.randomness.normal(j, values.shape)
        enc = fp.encode(values, n_terms=self.data.n)
        del values
        M = self.n_compute
        msgs = np.empty((M,) + enc.shape, dtype=np.uint64)
        if M > 1:
            self.randomness.masks_into(j, msgs[: M - 1])
            np.negative(ring_sum(msgs[: M - 1], axis=0), out=msgs[M - 1])
        else:
            msgs[0] = 0
        msgs[0] += enc            # m_{i,1} = enc(z_i + η_i) + r_{i,1}
        if self.keep is not None:
            sel = self.keep[start:stop]
            if not sel.all():
                msgs = msgs[:, sel]
                start_ids = np.arange(start, stop)[sel]
            else:
                start_ids = np.arange(start, stop)
        else:
            start_ids = np.arange(start, stop)
        if self.keys is None:
            return [msgs[k] for k in range(M)]
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        out: list[Any] = []
        for k in range(M):
            aes = AESGCM(self.keys[k])
            out.append([(int(i), aes.encrypt(int(i).to_bytes(12, "little"), msgs[k, r].tobytes(), None))
                        for r, i in enumerate(start_ids)])
        return out

    # ---- compute role (Alg. 1 step 3)
    def compute_receive(self, k: int, share: Any) -> np.ndarray:
        """Compute k's sum of the messages it received (decrypting first when encrypted)."""
        if self.keys is not None:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM

            aes = AESGCM(self.keys[k])
            d = self.data.d
            arr = np.empty((len(share), d), dtype=np.uint64)
            for r, (i, ct) in enumerate(share):
                arr[r] = np.frombuffer(aes.decrypt(i.to_bytes(12, "little"), ct, None), dtype=np.uint64)
            share = arr
        return ring_sum(share, axis=0)

    def chunk_partials(self, j: int) -> np.ndarray:
        """(M, d) partial sums of chunk j at every Compute (in-process path: no message transfer)."""
        msgs = self.client_messages(j)
        return np.stack([self.compute_receive(k, msgs[k]) for k in range(self.n_compute)])


# --------------------------------------------------------------------------------------------------- protocol
class DCA:
    """Algorithm 1 with explicit client / Compute / aggregator roles (see module docstring).

    Parameters: ``n_compute`` M ≥ 2; ``frac_bits`` fixed-point precision; ``n_faulty`` T, the number of clients
    that may collude or drop out; ``mode`` "seeded" (simulation) or "secure" (OS CSPRNG); ``encrypt`` AES-GCM on
    client → Compute messages; ``chunk_clients`` clients per work unit (default: ~4 MiB of messages per chunk).
    """

    def __init__(self, n_compute: int = 10, frac_bits: int = 32, n_faulty: int = 0, mode: str = "seeded",
                 encrypt: bool = False, chunk_clients: int | None = None) -> None:
        if not (isinstance(n_compute, (int, np.integer)) and n_compute >= 2):
            raise UserError(f"n_compute (M) must be an integer >= 2 (a single Compute sees every value), "
                            f"got {n_compute!r}")
        if mode not in MODES:
            raise UserError(f"mode must be one of {MODES}, got {mode!r}")
        if chunk_clients is not None and chunk_clients < 1:
            raise UserError(f"chunk_clients must be >= 1, got {chunk_clients}")
        if n_faulty < 0:
            raise UserError(f"n_faulty (T) must be >= 0, got {n_faulty}")
        self.n_compute = int(n_compute)
        self.fp = FixedPoint(frac_bits)
        self.n_faulty = int(n_faulty)
        self.mode = mode
        self.encrypt = bool(encrypt)
        self.chunk_clients = chunk_clients
        if self.encrypt:
            try:
                # imported and initialised here, not on first use, so that a timed round excludes the one-off
                # OpenSSL set-up
                from cryptography.hazmat.primitives.ciphers.aead import AESGCM

                AESGCM(bytes(32)).encrypt(bytes(12), b"", None)
            except ImportError:
                raise UserError("encrypt=True needs the 'cryptography' package: pip install 'dpexp[crypto]'") from None

    def default_chunk(self, d: int) -> int:
        return max(1, (4 << 20) // (8 * self.n_compute * max(d, 1)))

    def check_configuration(self, n_clients: int, value_bound: float, sigma: float) -> None:
        """Refuse (``RingOverflowError``) a configuration whose values could overflow the ring: N values of
        magnitude up to ``value_bound + 12σ`` must sum below 2^63 at this precision."""
        self.fp.check_capacity(n_clients, float(value_bound) + NOISE_TAIL_SIGMAS * float(sigma),
                               what=f"client values (bound {value_bound:g} + {NOISE_TAIL_SIGMAS:g} noise std)")

    def make_job(self, data: Any, sigma: float, rng: np.random.Generator | None = None,
                 dropped: np.ndarray | list[int] | None = None) -> DCAJob:
        if not hasattr(data, "rows"):
            data = ArrayClients(data)
        if sigma < 0 or not np.isfinite(sigma):
            raise UserError(f"client noise sigma must be finite and >= 0, got {sigma}")
        keep = None
        if dropped is not None and len(dropped) > 0:
            idx = np.unique(np.asarray(dropped, dtype=np.int64))
            if idx.min() < 0 or idx.max() >= data.n:
                raise UserError(f"dropped client indices must be in [0, {data.n}), got {idx.min()}..{idx.max()}")
            if idx.size > self.n_faulty:
                raise UserError(f"{idx.size} clients dropped out but the noise was calibrated for at most "
                                f"T={self.n_faulty} (Thm 1); the sum would not be DP, refusing")
            keep = np.ones(data.n, dtype=bool)
            keep[idx] = False
        if sigma > 0:
            check_clients(data.n, self.n_faulty)
        if self.mode == "seeded":
            if rng is None:
                raise UserError("mode='seeded' needs a numpy Generator (rng); use mode='secure' for OS randomness")
            gen = rng if isinstance(rng, np.random.Generator) else as_noise(rng).generator
            randomness: Any = SeededRandomness(gen)
        else:
            randomness = SecureRandomness(_secure_source(rng))
        keys = [randomness.key(k) for k in range(self.n_compute)] if self.encrypt else None
        return DCAJob(data=data, sigma=float(sigma), n_compute=self.n_compute, frac_bits=self.fp.frac_bits,
                      chunk_clients=int(self.chunk_clients or self.default_chunk(data.d)), randomness=randomness,
                      keep=keep, keys=keys)

    def run_trials(self, values: np.ndarray, sigma: float | np.ndarray, rng: Any = None, trials: int = 1,
                   value_bound: float | np.ndarray | None = None, block_bytes: int = 32 << 20,
                   shares: bool = True) -> np.ndarray:
        """``trials`` independent rounds (no dropouts, no encryption, in process), vectorised over a trials axis:
        the decoded totals, shape (trials, d).

        ``values`` is one (N, d) array shared by every trial or a (trials, N, d) array (e.g. data clipped to per-trial
        bounds); ``sigma`` (and ``value_bound``) common or one per trial.  Every role runs as array operations over
        a block of trials: each client of each trial draws its noise share, encodes z_i + η_i in the ring and splits
        it into M additive shares (M − 1 uniform masks); each Compute sums its shares; the aggregator adds the M
        partial sums and decodes.  Each trial draws its randomness exactly as one ``run`` call does (seeded mode: 4
        words of ``rng`` per trial, then per-chunk PCG64 streams), so in seeded mode the totals are bit-identical to
        ``[self.run(values_t, sigma_t, rng).total for t in range(trials)]`` — at a fraction of the cost (no per-trial
        job, thread pool or result object).  Blocks hold at most ``block_bytes`` of messages.

        ``shares=False`` leaves out step 2's secret sharing: the aggregator's total is Σ_i enc(z_i + η_i) computed
        directly in the ring.  The M shares of a client sum to enc(z_i + η_i) exactly in Z/2^64, and the masks come
        from streams of their own (no noise word is drawn from them), so the totals are the same bit for bit — the
        shares only matter to what a Compute node sees, which a simulation in one process does not model.  It saves
        the M − 1 mask words and M ring additions of every client word (≈ 3/4 of the arithmetic at M = 10).
        """
        Z = np.asarray(values, dtype=np.float64)
        if Z.ndim not in (2, 3) or (Z.ndim == 3 and Z.shape[0] != trials):
            raise UserError(f"client values must be (N, d) or (trials={trials}, N, d), got shape {Z.shape}")
        N, d = Z.shape[-2:]
        sig = np.broadcast_to(np.asarray(sigma, dtype=np.float64), (trials,))
        if np.any(sig < 0) or not np.all(np.isfinite(sig)):
            raise UserError(f"client noise sigma must be finite and >= 0, got {sigma}")
        if np.any(sig > 0):
            check_clients(N, self.n_faulty)
        if value_bound is not None:          # per trial or common: check the trial with the largest magnitude
            vb = np.broadcast_to(np.asarray(value_bound, dtype=np.float64), (trials,))
            w = int(np.argmax(vb + NOISE_TAIL_SIGMAS * sig))
            self.check_configuration(N, float(vb[w]), float(sig[w]))
        if self.mode == "seeded":
            if rng is None:
                raise UserError("mode='seeded' needs a numpy Generator (rng); use mode='secure' for OS randomness")
            gen = rng if isinstance(rng, np.random.Generator) else as_noise(rng).generator
        chunk = int(self.chunk_clients or self.default_chunk(d))
        M = self.n_compute
        block = max(1, int(block_bytes) // (8 * M * min(chunk, N) * max(d, 1)))
        out = np.empty((trials, d))
        for t0 in range(0, trials, block):
            t1 = min(trials, t0 + block)
            B = t1 - t0
            # one randomness per trial, drawn in trial order (seeded: 4 words of `gen` each, as `make_job` does)
            rand = (SeededRandomness.block(gen, B) if self.mode == "seeded" else [SecureRandomness(_secure_source(rng))] * B)
            Zb = Z if Z.ndim == 2 else Z[t0:t1]
            # each Compute's running sum, per trial (without the shares: the aggregator's sum alone)
            acc = np.zeros((M if shares else 1, B, d), dtype=np.uint64)
            # clients in sub-blocks of at most MESSAGE_BYTES of messages (cache-sized: nothing large is allocated
            # and freed per chunk); every stream is read in order, so the draws are those of whole chunks
            sub = max(1, MESSAGE_BYTES // (8 * (M if shares else 1) * B * max(d, 1)))
            for j0 in range(0, N, chunk):
                j1 = min(N, j0 + chunk)
                j = j0 // chunk
                normals = [r.normal_stream(j) for r in rand]                          # one per trial
                # the masks cancel exactly in the ring, so one stream per block (the block's first trial's mask
                # stream) serves all its trials without changing any total
                masks = rand[0].mask_stream(j) if shares else None
                for i0 in range(j0, j1, sub):
                    i1 = min(j1, i0 + sub)
                    shape = (i1 - i0, d)
                    noise = normals[0](shape)[None] if B == 1 else np.stack([f(shape) for f in normals])
                    noise *= sig[t0:t1, None, None]
                    noise += Zb[..., i0:i1, :]                                        # z_i + η_i (Alg. 1 step 1)
                    enc = self.fp.encode(noise, n_terms=N)
                    if not shares:                                                    # Σ_k m_{i,k} = enc exactly
                        acc[0] += ring_sum(enc, axis=1)
                        continue
                    # m_{i,k} (step 2): M − 1 uniform masks r_{i,1..M−1} per client and trial (the stream's words,
                    # not copied), m_{i,1} = enc + r_{i,1}, m_{i,k} = r_{i,k}, and m_{i,M} = −Σ_{k<M} r_{i,k}
                    r = masks((M - 1, B, i1 - i0, d))
                    first = np.add(r[0], enc, out=enc)
                    last = np.negative(ring_sum(r, axis=0))
                    acc[0] += ring_sum(first, axis=1)                                 # Compute sums (step 3)
                    acc[1:M - 1] += ring_sum(r[1:], axis=2)
                    acc[M - 1] += ring_sum(last, axis=1)
            out[t0:t1] = self.fp.decode(ring_sum(acc, axis=0))                        # aggregator
        return out

    def run(self, data: Any, sigma: float, rng: Any = None,
            dropped: np.ndarray | list[int] | None = None, backend: Any = None,
            value_bound: float | None = None) -> DCAResult:
        """One DCA round over ``data`` ((N, d) array or a ``ClientData``) with per-client noise std ``sigma``.

        ``value_bound`` (public bound on |z_ij|) enables the configuration-time overflow refusal; every encoded
        value is checked against the ring capacity in any case.
        """
        from dpexp.families.dca.protocol.backends import InProcessBackend

        t0 = time.perf_counter()
        job = self.make_job(data, sigma, rng, dropped)
        if value_bound is not None:
            self.check_configuration(job.data.n, value_bound, sigma)
        partials = (backend or InProcessBackend()).compute_partials(job)
        ring_total = ring_sum(partials, axis=0)     # aggregator
        total = self.fp.decode(ring_total)
        n_inc = job.data.n if job.keep is None else int(job.keep.sum())
        return DCAResult(total=total, ring_total=ring_total, partials=partials, n_clients=job.data.n,
                         n_included=n_inc, client_sigma=float(sigma), frac_bits=self.fp.frac_bits,
                         n_faulty=self.n_faulty, timings={"seconds": time.perf_counter() - t0})
