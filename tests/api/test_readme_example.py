"""The README's Python example runs as written (in a copy of the repository's configs, from a temporary folder)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_readme_api_example_runs(tmp_path, monkeypatch):
    text = (REPO / "README.md").read_text()
    m = re.search(r"<!-- api-example -->\n```python\n(.*?)```", text, re.S)
    assert m, "README lost its Python API example"
    (tmp_path / "configs").mkdir()
    shutil.copy(REPO / "configs" / "demo.yaml", tmp_path / "configs" / "demo.yaml")
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(m.group(1), "README.md", "exec"), scope)  # noqa: S102 — the documented example itself
    r = scope["r"]
    assert len(r.frame) > 0 and set(r.frame["repeat"]) == {0, 1}
    assert (tmp_path / "figures" / "demo" / "demo_spearman.png").is_file()
