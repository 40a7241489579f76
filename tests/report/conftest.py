"""Tiny real runs shared by the report tests (built once per test process)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from click.testing import CliRunner

from dpexp.cli import main

REPO = Path(__file__).resolve().parents[2]
#: a label and a title that would run script if they reached the page unescaped
EVIL_TITLE = "Injected <script>alert('title')</script> & co"
EVIL_LABEL = "LR <img src=x onerror=alert(1)> \"quoted\""


def _config(tmp: Path, name: str, title: str, labels: dict[str, str]) -> Path:
    """configs/demo.yaml without the (slow to tune) rplr: lr (non-private), plr (DP), lr_public (public only)."""
    raw = yaml.safe_load((REPO / "configs" / "demo.yaml").read_text(encoding="utf-8"))
    raw.update(name=name, title=title, repeats=2)
    raw["sizes"]["n_private"] = [0, 100, 200]
    raw["algorithms"] = [{"name": "lr", "label": labels["lr"]},
                         {"name": "plr", "label": "plr (private LR, no projection)", "params": {"B_y": 5.0}},
                         {"name": "lr_public", "label": "LR, 10 public rows only"}]
    raw["plots"][0]["options"]["baselines"] = ["LR, 10 public rows only"]
    raw["plots"][0]["name"] = f"{name}_spearman"
    raw["plots"].append({"kind": "curve", "name": f"{name}_mae", "x": "n_private", "metric": "mae"})
    p = tmp / f"{name}.yaml"
    p.write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return p


def run(args: list[str]) -> None:
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output


@pytest.fixture(scope="session")
def runs(tmp_path_factory) -> SimpleNamespace:
    """``root/results/{demo,inject}`` (two complete runs) and ``root/figures/demo`` (demo's figures, drawn by
    ``dpexp plot``; inject has none, so the report must draw them); ``evil_title``/``evil_label``: inject's."""
    root = tmp_path_factory.mktemp("report_runs")
    cfg = {"demo": _config(root, "demo", "Demo without rplr", {"lr": "LR (non-private, all data)"}),
           "inject": _config(root, "inject", EVIL_TITLE, {"lr": EVIL_LABEL})}
    for name, path in cfg.items():
        run(["run", str(path), "--out", str(root / "results" / name), "--jobs", "1", "-q"])
    run(["plot", str(root / "results" / "demo"), "--out", str(root / "figures" / "demo"), "--format", "png,pdf"])
    return SimpleNamespace(root=root, evil_title=EVIL_TITLE, evil_label=EVIL_LABEL)
