"""Signal dispositions for the tests that start a dpexp process and interrupt it."""

from __future__ import annotations

import contextlib
import signal
from typing import Iterator


@contextlib.contextmanager
def sigint_not_ignored() -> Iterator[None]:
    """Start children with SIGINT's default disposition, as a terminal's foreground job has it.  A job started in the
    background of a non-interactive shell (``cmd &``, ``nohup``: how CI and a helper session may start the suite)
    inherits SIGINT *ignored*, and Python keeps an ignored SIGINT ignored (no KeyboardInterrupt): a process started
    from such a test run would sleep through the Ctrl-C under test and finish with exit 0.  A handler set here is
    reset to the default in the exec'd child; SIG_IGN would be kept."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
