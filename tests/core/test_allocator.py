"""dpexp.allocator: glibc's thresholds set once per process, the environment's own settings respected."""

from __future__ import annotations

import subprocess
import sys

CODE = ("import dpexp.allocator as a; first = a.keep_freed_blocks(); print(first, a.keep_freed_blocks())")


def _run(env_extra):
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env.update(env_extra)
    r = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_thresholds_set_once_on_linux_glibc():
    first, second = _run({})
    if sys.platform.startswith("linux"):
        assert first == "True"
    assert second == "False"   # once per process


def test_the_environments_malloc_settings_win():
    assert _run({"MALLOC_TRIM_THRESHOLD_": "131072"}) == ["False", "False"]
