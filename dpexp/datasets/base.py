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
