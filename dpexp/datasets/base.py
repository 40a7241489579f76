"""Where data lives, and downloads with checksums.

One setting decides the data directory: the environment variable ``DPEXP_DATA_DIR`` (set by ``--data-dir``).
When it is unset, files are looked up in ``./data`` and then ``../shared/data`` (the staged offline copies).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from dpexp.errors import DataNotFoundError, UserError

ENV_VAR = "DPEXP_DATA_DIR"


def search_dirs() -> list[Path]:
    """Directories searched for data files, in order."""
    env = os.environ.get(ENV_VAR)
    if env:
        return [Path(env)]
    return [Path("data"), Path("..") / "shared" / "data"]


def data_path(relative: str, download_hint: str | None = None, data_dir: Path | None = None) -> Path:
    """The first existing ``dir/relative`` over ``search_dirs()`` — or in ``data_dir`` only, for a dataset given a
    folder of its own; ``DataNotFoundError`` otherwise."""
    dirs = search_dirs() if data_dir is None else [Path(data_dir)]
    for d in dirs:
        p = d / relative
        if p.exists():
            return p
    where = " or ".join(str((d / relative)) for d in dirs)
    hint = f"; fetch it with `{download_hint}`" if download_hint else ""
    how = f" (set {ENV_VAR} or --data-dir)" if data_dir is None else ""
    raise DataNotFoundError(f"data file not found: expected {where}{how}{hint}")


def download_dir() -> Path:
    """Where downloads go: ``$DPEXP_DATA_DIR`` or ``./data``."""
    return Path(os.environ.get(ENV_VAR) or "data")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def download(url: str, dest: Path, sha256: str | None = None, timeout: float = 60.0) -> Path:
    """Fetch ``url`` to ``dest`` atomically and verify its SHA-256 (when given).

    A checksum mismatch removes the download and raises ``UserError``.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=".download-")
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310
            shutil.copyfileobj(resp, out)
        if sha256 is not None:
            got = sha256_file(Path(tmp))
            if got != sha256:
                raise UserError(f"checksum mismatch for {url}: expected sha256 {sha256}, got {got}")
        os.replace(tmp, dest)
    except OSError as exc:
        raise UserError(f"download of {url} failed: {exc}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return dest


@dataclass
class Presence:
    """The result of looking for a dataset's files in one data directory (``present``)."""

    folder: Path                                          # the data directory holding every file
    verified: list[str] = field(default_factory=list)     # files whose SHA-256 matches the pinned one
    unpinned: list[str] = field(default_factory=list)     # files without a pinned checksum
    mismatched: dict[str, str] = field(default_factory=dict)  # file -> the SHA-256 found instead

    def describe(self, name: str) -> str:
        """One line: 'gdsc: present in DIR, checksums OK (2 files)' and what could not be verified."""
        if self.mismatched:
            bad = ", ".join(f"{f} (sha256 {h[:12]}…)" for f, h in self.mismatched.items())
            return (f"{name}: present in {self.folder}, but the checksum of {bad} differs from the pinned one; "
                    "nothing downloaded (use --force to download again)")
        parts = []
        if self.verified:
            parts.append(f"checksums OK ({len(self.verified)} file{'s' * (len(self.verified) != 1)})")
        if self.unpinned:
            parts.append(f"no pinned checksum for {', '.join(self.unpinned)}")
        return f"{name}: present in {self.folder}, {'; '.join(parts)}; nothing downloaded (--force downloads again)"


def present(files: dict[str, str | None], dirs: list[Path]) -> Presence | None:
    """The first of ``dirs`` that holds every file of ``files`` (relative path -> pinned SHA-256 or None), with the
    checksums checked; None when no directory holds them all (or ``files`` is empty)."""
    if not files:
        return None
    for d in dirs:
        paths = {rel: Path(d) / rel for rel in files}
        if not all(p.is_file() for p in paths.values()):
            continue
        out = Presence(Path(d))
        for rel, pinned in files.items():
            if pinned is None:
                out.unpinned.append(rel)
                continue
            got = sha256_file(paths[rel])
            if got == pinned:
                out.verified.append(rel)
            else:
                out.mismatched[rel] = got
        return out
    return None


def directories(root: Path) -> set[Path]:
    """Every directory at or below ``root`` now (``remove_new_empty_dirs`` compares against it)."""
    root = Path(root)
    if not root.exists():
        return set()
    return {root, *(p for p in root.rglob("*") if p.is_dir())}


def remove_new_empty_dirs(root: Path, before: set[Path]) -> None:
    """After a failed download: remove the directories below (and including) ``root`` that did not exist ``before``
    and are empty, deepest first, so a failure leaves no empty ``raw/`` folder behind."""
    root = Path(root)
    if not root.exists():
        return
    created = sorted((p for p in directories(root) if p not in before), key=lambda p: len(p.parts),
                     reverse=True)
    for p in created:
        try:
            p.rmdir()  # only succeeds when empty
        except OSError:
            pass
