"""Named random streams derived from one root seed (ARCHITECTURE.md, "Seeds").

Every stream is ``Generator(PCG64(SeedSequence(root_seed, spawn_key=key)))`` where ``key`` is derived from a
stable SHA-256 of the *names* the stream is for (never Python's salted ``hash()``).  Hence:

* the data split of (dataset, subset, repeat) is the same for every algorithm and epsilon (common random numbers);
* the privacy noise of a cell is keyed by (dataset, subset, repeat, algorithm, params, epsilon), so adding an
  algorithm or changing ``--jobs`` changes no other row.

numpy's global random state is never used anywhere in dpexp.
"""

from __future__ import annotations

import hashlib
import secrets
import struct
from typing import Any, Sequence

import numpy as np
from numpy.random.bit_generator import ISeedSequence

_SEP = "\x1f"
#: the first four little-endian 32-bit words of a digest (the stream key)
_WORDS = struct.Struct("<4I")


def stable_key(*names: object) -> tuple[int, ...]:
    """Four 32-bit words from the SHA-256 of the names joined by a unit separator."""
    digest = hashlib.sha256(_SEP.join(str(n) for n in names).encode("utf-8")).digest()
    return _WORDS.unpack_from(digest)


def key_hex(*names: object) -> str:
    """Short printable identifier of a stream key (recorded as ``seed_key`` in results)."""
    return hashlib.sha256(_SEP.join(str(n) for n in names).encode("utf-8")).hexdigest()[:16]


def stream_key(*names: object) -> tuple[tuple[int, ...], str]:
    """(``stable_key(*names)``, ``key_hex(*names)``) from one SHA-256 (the runner needs both for every cell)."""
    digest = hashlib.sha256(_SEP.join(str(n) for n in names).encode("utf-8")).digest()
    return _WORDS.unpack_from(digest), digest[:8].hex()


def stream(root_seed: int, *names: object) -> np.random.Generator:
    """The generator for the named purpose under ``root_seed``."""
    return stream_from_key(root_seed, stable_key(*names))


def stream_from_key(root_seed: int, key: tuple[int, ...]) -> np.random.Generator:
    """The generator of a stream given its ``stable_key``."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(int(root_seed), spawn_key=key)))


# ------------------------------------------------------------------------------- many streams' seeds at once
# numpy's SeedSequence (numpy/random/bit_generator.pyx, O'Neill's seed_seq design), restated on arrays so that the
# PCG64 seeds of thousands of cells cost one vectorised pass instead of one SeedSequence object each (~10 µs, plus
# ~6 µs for PCG64 to ask it): the constants and steps below are numpy's, and the test suite checks the states and
# draws against numpy's own SeedSequence for many keys and root seeds.
_INIT_A, _MULT_A, _INIT_B, _MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R, _POOL, _M32 = 0xCA01F9DD, 0x4973F715, 4, 0xFFFFFFFF


def _words32(n: int) -> list[int]:
    """A non-negative int as numpy's SeedSequence reads it: little-endian 32-bit words ([0] for 0)."""
    if n < 0:
        raise ValueError(f"seed must be >= 0, got {n}")
    words = [n & _M32] if n == 0 else []
    while n > 0:
        words.append(n & _M32)
        n >>= 32
    return words


class _HashConst:
    """The running multiplier of SeedSequence's ``hashmix`` (it evolves the same way whatever the data)."""

    def __init__(self) -> None:
        self.value = _INIT_A

    def hashmix(self, v: Any) -> Any:
        """numpy's ``hashmix`` on a uint32 array (or Python int masked to 32 bits)."""
        v = v ^ np.uint32(self.value)
        self.value = (self.value * _MULT_A) & _M32
        v = v * np.uint32(self.value)
        return v ^ (v >> np.uint32(16))


def _mix(x: Any, y: Any) -> Any:
    r = np.uint32(_MIX_L) * x - np.uint32(_MIX_R) * y
    return r ^ (r >> np.uint32(16))


def seed_states(root_seed: int, keys: Sequence[tuple[int, ...]]) -> np.ndarray:
    """(K, 4) uint64: ``SeedSequence(root_seed, spawn_key=key).generate_state(4, np.uint64)`` for every key (4 words
    each, as ``stable_key`` makes them) — the seed PCG64 draws from that SeedSequence — in one vectorised pass."""
    K = np.asarray(keys, dtype=np.uint32).reshape(len(keys), -1)          # (K, words)
    root = _words32(int(root_seed))
    root += [0] * max(0, _POOL - len(root))                               # numpy pads the run entropy to the pool
    hc = _HashConst()
    with np.errstate(over="ignore"):
        pool = [hc.hashmix(np.uint32(root[i])) for i in range(_POOL)]     # the root's part: the same for all keys
        for i_src in range(_POOL):
            for i_dst in range(_POOL):
                if i_src != i_dst:
                    pool[i_dst] = _mix(pool[i_dst], hc.hashmix(pool[i_src]))
        extra = [np.uint32(w) for w in root[_POOL:]] + [K[:, j] for j in range(K.shape[1])]
        for word in extra:                                                # then the rest, word by word
            for i_dst in range(_POOL):
                pool[i_dst] = _mix(pool[i_dst], hc.hashmix(word))
        pool = [np.broadcast_to(p, (K.shape[0],)) for p in pool]
        out = np.empty((K.shape[0], 8), dtype=np.uint32)                  # generate_state(4, uint64): 8 words
        h = _INIT_B
        for i in range(8):
            v = pool[i % _POOL] ^ np.uint32(h)
            h = (h * _MULT_B) & _M32
            v = v * np.uint32(h)
            out[:, i] = v ^ (v >> np.uint32(16))
    return out.astype("<u4").view("<u8").astype(np.uint64)


class _StateSeed(ISeedSequence):
    """A seed sequence that hands PCG64 a precomputed state (``seed_states``): the generator is the one the
    SeedSequence would have seeded."""

    __slots__ = ("state",)

    def __init__(self, state: np.ndarray) -> None:
        self.state = state

    def generate_state(self, n_words: int, dtype: Any = np.uint32) -> np.ndarray:
        # only PCG64's request was precomputed (it asks with np.uint64 itself: no dtype made per stream)
        if n_words != 4 or (dtype is not np.uint64 and np.dtype(dtype) != np.uint64):
            raise ValueError("a precomputed stream seed serves PCG64's 4 uint64 words only")
        return self.state


def stream_from_state(state: np.ndarray) -> np.random.Generator:
    """The generator of a stream from its row of ``seed_states`` (equal to ``stream_from_key`` of the same key)."""
    return np.random.Generator(np.random.PCG64(_StateSeed(state)))


def data_stream(root_seed: int, dataset: str, subset: str, repeat: int) -> np.random.Generator:
    """Stream for data generation/splitting: shared by all algorithms and epsilons of a repeat."""
    return stream(root_seed, "data", dataset, subset, repeat)


def noise_names(dataset: str, subset: str, repeat: int, algorithm: str, params: str, epsilon: float | None,
                delta: float | None) -> tuple[object, ...]:
    """Names keying a cell's noise stream; ``None`` privacy parameters mark a non-private algorithm."""
    e = "nonprivate" if epsilon is None else repr(float(epsilon))
    d = "nonprivate" if delta is None else repr(float(delta))
    return ("noise", dataset, subset, repeat, algorithm, params, e, d)


def noise_stream(root_seed: int, dataset: str, subset: str, repeat: int, algorithm: str, params: str,
                 epsilon: float | None, delta: float | None) -> np.random.Generator:
    """Stream for an algorithm's randomness (privacy noise) in one cell."""
    return stream(root_seed, *noise_names(dataset, subset, repeat, algorithm, params, epsilon, delta))


def new_root_seed() -> int:
    """A fresh root seed from the OS (recorded in the manifest so the run can be repeated)."""
    return secrets.randbits(63)
