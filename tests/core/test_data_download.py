"""`dpexp data download`: present and verified data is not fetched again; a failed download leaves no empty folders;
typos in component names suggest the closest name."""

from __future__ import annotations

import hashlib
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from dpexp import registry
from dpexp.cli import main


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.fixture
def no_network(monkeypatch):
    calls = []

    def refuse(url, *a, **k):
        calls.append(url)
        raise OSError("network disabled in this test")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    return calls


@pytest.fixture
def gdsc_like(tmp_path, monkeypatch):
    """A data directory holding the two files the gdsc dataset reads, pinned to their real SHA-256."""
    gdsc = registry.get("dataset", "gdsc")
    data = tmp_path / "data"
    pins = {}
    for i, rel in enumerate(gdsc.data_files):
        p = data / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(f"table {i}\n".encode())
        pins[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    monkeypatch.setattr(gdsc, "data_files", pins)
    return data


def test_present_and_verified_data_is_not_downloaded(gdsc_like, no_network):
    before = _tree(gdsc_like)
    r = CliRunner().invoke(main, ["data", "download", "gdsc", "--dest", str(gdsc_like)])
    assert r.exit_code == 0, r.output
    assert "gdsc: present in" in r.output and "checksums OK (2 files)" in r.output
    assert len(r.output.strip().splitlines()) == 1
    assert _tree(gdsc_like) == before and no_network == []      # nothing written (no raw/), no network


def test_data_found_through_the_search_directories(gdsc_like, no_network, monkeypatch):
    monkeypatch.setenv("DPEXP_DATA_DIR", str(gdsc_like))
    r = CliRunner().invoke(main, ["data", "download", "gdsc"])
    assert r.exit_code == 0 and "checksums OK" in r.output and no_network == []


def test_a_changed_file_is_reported_not_silently_replaced(gdsc_like, no_network):
    rel = next(iter(registry.get("dataset", "gdsc").data_files))
    (gdsc_like / rel).write_bytes(b"edited\n")
    before = _tree(gdsc_like)
    r = CliRunner().invoke(main, ["data", "download", "gdsc", "--dest", str(gdsc_like)])
    assert r.exit_code == 0 and "differs from the pinned one" in r.output and rel in r.output
    assert _tree(gdsc_like) == before and no_network == []


def test_force_downloads_and_a_failure_leaves_no_empty_folders(gdsc_like, no_network, tmp_path):
    r = CliRunner().invoke(main, ["data", "download", "gdsc", "--dest", str(gdsc_like), "--force"])
    assert r.exit_code == 2 and "download of" in r.output and len(no_network) == 1
    assert not (gdsc_like / "gdsc" / "raw").exists()             # the raw/ folder it created is gone again
    fresh = tmp_path / "fresh"
    r = CliRunner().invoke(main, ["data", "download", "gdsc", "--dest", str(fresh)])
    assert r.exit_code == 2 and not fresh.exists()               # absent data: it tries, and cleans up


def test_unpinned_files_are_said_to_be_unverified(tmp_path, no_network):
    rel = next(iter(registry.get("dataset", "carbon_nanotubes").data_files))
    (tmp_path / rel).parent.mkdir(parents=True)
    (tmp_path / rel).write_text("u;u'\n")
    r = CliRunner().invoke(main, ["data", "download", "carbon_nanotubes", "--dest", str(tmp_path)])
    assert r.exit_code == 0 and f"no pinned checksum for {rel}" in r.output and no_network == []


@pytest.mark.parametrize("typo, meant", [("gdscc", "gdsc"), ("GDSC", "gdsc"), ("bikeshar", "bikeshare")])
def test_a_typo_in_a_dataset_name_suggests_the_closest(typo, meant):
    r = CliRunner().invoke(main, ["data", "download", typo])
    assert r.exit_code == 2
    line = r.output.strip()
    assert f"did you mean {meant!r}?" in line and line.index("did you mean") < line.index("valid:")


def test_suggestions_for_every_kind_of_component(tmp_path):
    assert registry.closest("rplrr", registry.names("algorithm")) == "rplr"
    assert registry.closest("DP_exp_theilsen", registry.names("algorithm")) == "dp_exp_theil_sen"
    assert registry.closest("spearmann", registry.names("metric")) == "spearman"
    assert registry.closest("zzzzzz", registry.names("algorithm")) is None
    assert registry.suggestion("algorithm", "zzzzzz") == ""
    r = CliRunner().invoke(main, ["list", "plots", "gdsc_curv"])
    assert r.exit_code == 2 and "did you mean 'gdsc_curve'?" in r.output
    cfg = tmp_path / "c.yaml"
    cfg.write_text("datasets: [{name: honkela_synthetic}]\nsizes: {n_private: 10, n_public: 5, n_test: 5}\n"
                   "privacy: {epsilon: 1.0}\nalgorithms: [{name: rplrr}]\nmetrics: [spearman]\n")
    r = CliRunner().invoke(main, ["validate", str(cfg)])
    assert r.exit_code == 2 and "got 'rplrr'; did you mean 'rplr'? valid:" in r.output
