"""The C allocator's policy for array work: freed large blocks are kept for reuse instead of being returned to the
kernel at every ``free`` (glibc only; a no-op elsewhere).

numpy takes every array of more than a few KiB from ``malloc``.  glibc serves a large request with a fresh
``mmap`` (above its mmap threshold, which adapts upwards only to sizes already freed) and gives heap memory back
with ``brk`` as soon as the free top exceeds its trim threshold; an estimator that makes a few MiB-sized temporaries
per call (the SLR medians, matchings and gradient passes over trials × n) then page-faults every one of them afresh:
measured, ``slr_synthetic_eps`` at 2 repeats spent 1.6 s of system time against 6.2 s of user time (533,762 minor
page faults), 0.18 s with the two thresholds fixed at 256 MiB (33,407), the same peak RSS and the same bytes.  The
thresholds bound what a process holds beyond its live arrays (at most 256 MiB of freed memory kept, reused by the next
arrays); the peak RSS is that of the live arrays either way.  ``MALLOC_MMAP_THRESHOLD_`` / ``MALLOC_TRIM_THRESHOLD_``
in the environment (glibc's own settings) win: then nothing is changed."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

#: glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: the threshold for both: blocks up to this size are served from and kept in the heap
THRESHOLD = 256 << 20

_done = False


def keep_freed_blocks() -> bool:
    """Set glibc's trim and mmap thresholds to ``THRESHOLD`` once per process; True when they were set."""
    global _done
    if _done:
        return False
    _done = True
    if not sys.platform.startswith("linux") or any(k in os.environ for k in ("MALLOC_MMAP_THRESHOLD_",
                                                                              "MALLOC_TRIM_THRESHOLD_")):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):   # not glibc (e.g. musl has no mallopt): the allocator's own policy
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, THRESHOLD)) & bool(mallopt(_M_TRIM_THRESHOLD, THRESHOLD))
