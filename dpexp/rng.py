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

import numpy as np

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
