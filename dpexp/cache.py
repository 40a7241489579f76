"""Every memo and disk cache of dpexp, and the one setting for where disk caches live.

What is cached is always a pure function of its key (public facts, file versions, parameters), so a cache can
change how fast a run is, never what it computes; results never depend on it.

* **In-process memos** — ``memo(namespace, key, compute)`` and the decorator ``memoize(namespace)``: loaded data
  files, tuned thresholds, the resolved experiment of a worker process...  A memo may be bounded (``maxsize``:
  least recently used entries go first).  Keys are values, never an object's ``id()``: what the calls of one runner
  chunk share lives in its ``dpexp.chunk.ChunkRows``.
  ``memo_array(namespace, arr, key, compute)`` keys by an array's *content* (shape, dtype and a 128-bit digest of
  its bytes), so equal arrays of different splits share the entry (e.g. one drug's test responses, the same for
  every size of the grid); ``array_key(arr)`` is that content key, for callers that look several entries up by it.
* **Disk caches** — ``stored(namespace, name, compute)``: a JSON-able result kept in memory and in one file
  ``<cache_dir(namespace)>/<name>.json`` (atomic write, exclusive ``fcntl`` lock per entry, so when two processes
  need the same entry one computes it and the other waits and reads it).
* ``write_atomic(path, data)``: temporary file + ``fsync`` + ``os.replace``, used by the disk cache and the runner.

Where disk caches live: ``$DPEXP_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/dpexp``, else ``~/.cache/dpexp``, so
every working directory shares one cache.  Delete the folder (or one namespace below it) to recompute.  No other
module keeps a module-level mutable cache.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, Hashable, Iterator, TypeVar

T = TypeVar("T")

#: the one setting for where disk caches live
ENV_VAR = "DPEXP_CACHE_DIR"

_MEMOS: dict[str, OrderedDict[Hashable, Any]] = {}
_LOCK = threading.RLock()
_MISSING = object()   # memo's "no entry" (a memoised value may be None)


# ------------------------------------------------------------------------------------------------ code versions
def code_of(src: bytes) -> bytes:
    """What a module's source computes, as bytes: ``ast.dump`` of its syntax tree with every docstring removed
    (comments and layout are not in the tree).  A disk cache keyed by it survives a comment, a docstring or a
    rewrapped line, and not a change to what the code does."""
    import ast

    tree = ast.parse(src)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, annotate_fields=False).encode()


@functools.lru_cache(maxsize=None)
def code_digest(modules: tuple[str, ...]) -> str:
    """SHA-256 (16 hex digits) of what the ``dpexp`` modules ``modules`` (paths relative to the package) compute
    (``code_of``): the part of a disk cache's key that a change to the code it caches invalidates."""
    import hashlib

    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for rel in modules:
        h.update(hashlib.sha256(code_of((root / rel).read_bytes())).digest())
    return h.hexdigest()[:16]


# ------------------------------------------------------------------------------------------------ locations
def cache_root() -> Path:
    """``$DPEXP_CACHE_DIR``, else ``$XDG_CACHE_HOME/dpexp``, else ``~/.cache/dpexp``."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "dpexp"


def cache_dir(namespace: str) -> Path:
    """The folder of one disk cache (e.g. ``tuning``) below ``cache_root()``."""
    return cache_root() / namespace


def file_key(path: Path) -> tuple[str, int, int]:
    """Key of one version of a file: (resolved path, mtime in ns, size) — a changed file is a new key.

    Asked for every data split: the resolved path is memoised per (working directory, path) — resolving walks every
    component of the path — while the ``stat`` that notices a changed file is done every time."""
    st = os.stat(path)
    where = memo("cache.resolved_path", (os.getcwd(), str(path)), lambda: str(Path(path).resolve()), maxsize=1024)
    return (where, st.st_mtime_ns, st.st_size)


# ------------------------------------------------------------------------------------------ in-process memos
def memo(namespace: str, key: Hashable, compute: Callable[[], T], maxsize: int | None = None) -> T:
    """``compute()`` once per (namespace, key) in this process; ``maxsize`` bounds the namespace (LRU).

    Safe under threads (a Dask worker may run chunks in several): the table is locked, ``compute`` is not (two
    threads may both compute a missing entry; it is a pure function, so either result is the same)."""
    with _LOCK:
        table = _MEMOS.get(namespace)
        if table is None:
            table = _MEMOS[namespace] = OrderedDict()
        value = table.get(key, _MISSING)   # one look-up (a key is hashed once more by move_to_end only)
        if value is not _MISSING:
            if maxsize is not None:
                table.move_to_end(key)
            return value
    value = compute()
    with _LOCK:
        table[key] = value
        if maxsize is not None and len(table) > maxsize:
            table.popitem(last=False)
    return value


def contains(namespace: str, key: Hashable) -> bool:
    """Whether ``memo(namespace, key, ...)`` would find an entry now (its recency in a bounded memo untouched)."""
    with _LOCK:
        table = _MEMOS.get(namespace)
        return table is not None and key in table


def memoize(namespace: str, maxsize: int | None = None) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Decorator: memoise a function of hashable arguments under ``namespace`` (an ``lru_cache`` that lives here)."""

    def deco(fn: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> T:
            return memo(namespace, (args, tuple(sorted(kwargs.items()))), lambda: fn(*args, **kwargs), maxsize)

        return wrapper

    return deco


def memo_array(namespace: str, arr: Any, key: Hashable, compute: Callable[[], T], maxsize: int | None = None) -> T:
    """``memo`` keyed by the content of array ``arr`` (plus ``key``): its shape, dtype and BLAKE2b-128 digest of
    its bytes (a collision is as unlikely as for the SHA-256 stream keys), so a pure function of the values is
    computed once for every equal array, whichever object holds them."""
    import hashlib

    import numpy as np

    a = np.ascontiguousarray(arr)
    digest = hashlib.blake2b(a.view(np.uint8).reshape(-1) if a.size else b"", digest_size=16).digest()
    return memo(namespace, (a.shape, a.dtype.str, digest, key), compute, maxsize)


def array_key(arr: Any) -> tuple:
    """The content key ``memo_array`` uses for ``arr`` (shape, dtype, BLAKE2b-128 digest of its bytes): computed
    once, ``memo(namespace, (*array_key(arr), key), ...)`` is the entry ``memo_array(namespace, arr, key, ...)``
    would use."""
    import hashlib

    import numpy as np

    a = np.ascontiguousarray(arr)
    digest = hashlib.blake2b(a.view(np.uint8).reshape(-1) if a.size else b"", digest_size=16).digest()
    return (a.shape, a.dtype.str, digest)


def clear(namespace: str | None = None) -> None:
    """Forget the in-process memos of ``namespace`` (all when None); disk caches are kept."""
    if namespace is None:
        _MEMOS.clear()
    else:
        _MEMOS.pop(namespace, None)


# ----------------------------------------------------------------------------------------------- disk caches
def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: a temporary file in the same folder, ``fsync``, ``os.replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def stored(namespace: str, name: str, compute: Callable[[], dict[str, Any]], use_disk: bool = True,
           describe: str | None = None) -> tuple[dict[str, Any], bool]:
    """``(value, hit)``: ``compute()`` (a JSON-able dict) memoised as ``namespace/name`` in this process and, with
    ``use_disk``, in ``cache_dir(namespace)/<name>.json``.  ``hit`` is False when this call computed the value.
    ``describe`` is said on stderr when the value is computed for the disk cache (progress bars sit still
    meanwhile)."""
    table = _MEMOS.setdefault(f"stored:{namespace}", OrderedDict())
    if name in table:
        return table[name], True
    if not use_disk:
        table[name] = compute()
        return table[name], False
    path = cache_dir(namespace) / f"{name}.json"
    value = _read_json(path)
    computed = False
    if value is None:
        with _file_lock(path.with_suffix(".lock")):
            value = _read_json(path)  # another process may have finished while we waited
            if value is None:
                if describe:
                    print(f"dpexp: {describe}; cached in {path.parent}", file=sys.stderr, flush=True)
                value = compute()
                write_atomic(path, json.dumps(value).encode())
                computed = True
    table[name] = value
    return value, not computed
