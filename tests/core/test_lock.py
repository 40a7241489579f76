"""The lock file (issue 27): requirements.lock pins one exact version of every dependency of pyproject.toml
and of the extras ``make`` installs, each inside pyproject's range; ``make demo``/``make test`` install from it; the manifest of
every run records its hash."""

from __future__ import annotations

import hashlib
import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from dpexp import manifest

REPO = Path(__file__).resolve().parents[2]
LOCK = REPO / "requirements.lock"


def pins() -> dict[str, Version]:
    out = {}
    for line in LOCK.read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.\-]+)==([^\s;]+)", line)
        if m:
            out[canonicalize_name(m.group(1))] = Version(m.group(2))
    return out


def installed_extras() -> list[str]:
    """The extras ``make`` installs (the Makefile's EXTRAS): what the lock covers."""
    m = re.search(r"^EXTRAS\s*\?=\s*(\S+)$", (REPO / "Makefile").read_text(), re.M)
    return m.group(1).split(",")


def declared() -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra in installed_extras():
        reqs += [Requirement(r) for r in project["optional-dependencies"][extra]]
    return reqs


def test_every_declared_dependency_is_pinned_inside_its_range():
    locked = pins()
    assert locked, "requirements.lock pins nothing"
    for r in declared():
        name = canonicalize_name(r.name)
        assert name in locked, f"{r.name} is declared in pyproject.toml but not pinned in requirements.lock (make lock)"
        assert r.specifier.contains(locked[name], prereleases=True), \
            f"{r.name}=={locked[name]} in requirements.lock is outside pyproject's range {r.specifier} (make lock)"


def test_make_installs_from_the_lock():
    mk = (REPO / "Makefile").read_text()
    assert "pip install --quiet -r requirements.lock" in mk
    assert re.search(r"^\$\(STAMP\): pyproject.toml requirements.lock$", mk, re.M)


def test_manifest_records_the_lock_hash(tmp_path):
    v = manifest.versions()
    assert v["lock_sha256"] == hashlib.sha256(LOCK.read_bytes()).hexdigest()
    other = tmp_path / "requirements.lock"
    other.write_text("numpy==1.0\n")
    assert manifest.lock_hash(other) != v["lock_sha256"]
    assert manifest.lock_hash(tmp_path / "absent.lock") is None
