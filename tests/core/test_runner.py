"""Runner guarantees: identical CSV for any --jobs, common random numbers, resume after SIGKILL, failures
recorded, manifest provenance."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from dpexp.cli import main

REPO = Path(__file__).resolve().parents[2]

CFG = textwrap.dedent("""\
    name: repro
    seed: 7
    repeats: 3
    datasets:
      - name: honkela_synthetic
        params: {d: [2, 4], centre: law}   # the law's centres: no private row read, the guarantees stand
    sizes:
      n_private: [0, 30, 60]
      n_public: 5
      n_test: 20
    privacy:
      epsilon: [0.5, 2.0]
    algorithms:
      - name: lr
      - name: rplr
        params: {omega_x: [0.5, 1.5]}
      - name: plr
      - name: null_model
        label: null_a
        params: {noise: 0.0}
      - name: null_model
        label: null_b
        params: {noise: 0.0, sleep_ms: 0.0}
    metrics: [spearman, mae]
    chunk_work: 20
    """)



@pytest.fixture
def cfg(write_config):
    return write_config(CFG, "repro")


def test_jobs1_equals_jobs2_bytes(cli, cfg, tmp_path):
    r1 = cli(["run", str(cfg), "--out", str(tmp_path / "a"), "--jobs", "1", "-q"])
    r2 = cli(["run", str(cfg), "--out", str(tmp_path / "b"), "--jobs", "2", "-q"])
    assert r1.exit_code == 0 and r2.exit_code == 0, r1.output + r2.output
    a = (tmp_path / "a" / "results.csv").read_bytes()
    assert a == (tmp_path / "b" / "results.csv").read_bytes()
    df = pd.read_csv(tmp_path / "a" / "results.csv", keep_default_na=False)
    # one row per (cell, metric) plus rplr's B_x/B_y extras
    n_cells = 2 * 3 * 3 * 6 * 2
    assert len(df[df.metric.isin(["spearman", "mae"])]) == n_cells * 2
    for col in ["experiment", "dataset", "subset", "algorithm", "params", "epsilon", "delta", "n_private",
                "n_public", "n_test", "d", "repeat", "metric", "value", "seed_key"]:
        assert col in df.columns
    assert set(df.d) == {2, 4}


def test_common_random_numbers_and_repeats_differ(cli, cfg, tmp_path):
    cli(["run", str(cfg), "--out", str(tmp_path / "a"), "--jobs", "1", "-q"])
    df = pd.read_csv(tmp_path / "a" / "results.csv", keep_default_na=False)
    mae = df[df.metric == "mae"]
    a = mae[mae.label == "null_a"].set_index(["dataset_params", "repeat", "n_private", "epsilon"])["value"]
    b = mae[mae.label == "null_b"].set_index(["dataset_params", "repeat", "n_private", "epsilon"])["value"]
    pd.testing.assert_series_equal(a.sort_index(), b.sort_index(), check_names=False)  # same split, any algorithm
    per_rep = a.groupby(level="repeat").first()
    assert per_rep.nunique() == len(per_rep)  # different repeats see different data
    # changing the root seed changes the data
    cli(["run", str(cfg), "--out", str(tmp_path / "c"), "--jobs", "1", "-q", "--seed", "8"])
    c = pd.read_csv(tmp_path / "c" / "results.csv", keep_default_na=False)
    assert not c["value"].equals(df["value"])


def test_adding_an_algorithm_changes_no_other_row(cli, cfg, tmp_path):
    cli(["run", str(cfg), "--out", str(tmp_path / "a"), "--jobs", "1", "-q"])
    more = cfg.read_text().replace("metrics:", "  - name: null_model\n    label: extra\n    params: {noise: 1.0}\nmetrics:")
    cfg2 = tmp_path / "more.yaml"
    cfg2.write_text(more.replace("name: repro", "name: repro"))
    cli(["run", str(cfg2), "--out", str(tmp_path / "b"), "--jobs", "1", "-q"])
    a = pd.read_csv(tmp_path / "a" / "results.csv", keep_default_na=False)
    b = pd.read_csv(tmp_path / "b" / "results.csv", keep_default_na=False)
    b = b[b.label != "extra"]
    key = ["dataset_params", "repeat", "n_private", "epsilon", "label", "metric"]
    pd.testing.assert_frame_equal(a.sort_values(key).reset_index(drop=True), b.sort_values(key).reset_index(drop=True))


def test_failing_cell_recorded_and_run_continues(cli, tmp_path):
    cfg = tmp_path / "f.yaml"
    cfg.write_text(CFG.replace("params: {noise: 0.0, sleep_ms: 0.0}", "params: {fail: true}"))
    res = cli(["run", str(cfg), "--out", str(tmp_path / "o"), "--jobs", "1", "-q"])
    assert res.exit_code == 1
    df = pd.read_csv(tmp_path / "o" / "results.csv", keep_default_na=False)
    bad = df[df.label == "null_b"]
    assert (bad.error.str.contains("asked to fail")).all() and (bad.value == "").all()
    assert (df[df.label != "null_b"].error == "").all()
    man = json.loads((tmp_path / "o" / "manifest.json").read_text())
    assert man["failures"]["count"] == 2 * 3 * 3 * 2 and man["status"] == "complete_with_failures"
    assert (tmp_path / "o" / "failures.csv").exists()


def test_manifest_provenance_and_overrides(cli, cfg, tmp_path):
    cli(["run", str(cfg), "--out", str(tmp_path / "a"), "--jobs", "1", "-q", "--repeats", "1",
          "--set", "privacy.epsilon=[3.0]"])
    man = json.loads((tmp_path / "a" / "manifest.json").read_text())
    for key in ["config", "overrides", "root_seed", "versions", "git", "started", "finished", "cells", "failures"]:
        assert key in man
    assert man["overrides"] == ["privacy.epsilon=[3.0]"] and man["repeats_override"] == 1
    assert man["config"]["privacy"]["epsilon"] == [3.0] and man["root_seed"] == 7
    assert {"dpexp", "python", "numpy", "scipy"} <= set(man["versions"])
    assert "commit" in man["git"] and "dirty" in man["git"]
    rplr = [a for a in man["algorithms"] if a["name"] == "rplr"][0]
    assert rplr["neighbouring"] == "replace-one" and rplr["guarantee_text"].startswith("pure ε-DP")
    assert "privacy_spent" not in rplr   # what a run spent comes from the rows, never from the config
    # the privacy summary is derived from the rows: rplr (default sigma: dp) spent exactly the ε asked for
    summary = man["privacy_summary"]
    spent = {(g["algorithm"], g["guarantee"], g["epsilon_spent"]) for g in summary["guarantees"]}
    assert ("rplr", "pure", 3.0) in spent and all(g["epsilon"] == 3.0 for g in summary["guarantees"])
    assert summary["noise"] == "seeded" and "regenerate" in summary["noise_statement"]
    assert man["results_schema"] == 2 and summary["datasets"][0]["release_point"]


def test_dry_run_writes_nothing(cli, cfg, tmp_path):
    res = cli(["run", str(cfg), "--out", str(tmp_path / "a"), "--dry-run"])
    assert res.exit_code == 0
    assert "216 cells" in res.output and '"algorithm": "lr"' in res.output
    assert not (tmp_path / "a").exists()


def test_resume_refuses_other_config(cli, cfg, tmp_path):
    cli(["run", str(cfg), "--out", str(tmp_path / "a"), "--jobs", "1", "-q", "--repeats", "1"])
    res = CliRunner().invoke(main, ["run", str(cfg), "--out", str(tmp_path / "a"), "--jobs", "1", "-q"])
    assert res.exit_code == 2 and "different config" in res.output
    res = CliRunner().invoke(main, ["run", str(cfg), "--out", str(tmp_path / "a"), "--jobs", "1", "-q", "--force"])
    assert res.exit_code == 0


def test_resume_after_sigkill_equals_uninterrupted(cli, slow_config, tmp_path):
    cfg = tmp_path / "slow.yaml"
    cfg.write_text(slow_config("rplr", "{sleep_ms: 60, noise: 0.5}"))
    ref = tmp_path / "ref"
    assert cli(["run", str(cfg), "--out", str(ref), "--jobs", "1", "-q"]).exit_code == 0
    out = tmp_path / "killed"
    env = dict(os.environ, TQDM_DISABLE="1")
    log = tmp_path / "stderr.txt"
    with open(log, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "dpexp.cli", "run", str(cfg), "--out", str(out), "--jobs", "2"],
                                cwd=REPO, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=err)
        parts = out / ".parts"
        deadline = time.time() + 180  # generous: the machine may be busy with other tests
        while time.time() < deadline and len(list(parts.glob("*.csv"))) < 3 and proc.poll() is None:
            time.sleep(0.05)
        exited = proc.poll()
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    done = len(list(parts.glob("*.csv")))
    assert exited is None, f"the run ended before it was killed: {log.read_text()[-2000:]}"
    assert 3 <= done < 24, f"the kill must land part-way through the run ({done} parts): {log.read_text()[-2000:]}"
    assert not (out / "results.csv").exists()
    res = cli(["run", str(cfg), "--out", str(out), "--jobs", "2", "-q"])
    assert res.exit_code == 0
    assert (out / "results.csv").read_bytes() == (ref / "results.csv").read_bytes()


def test_fast_section_applies_overrides_and_is_recorded(cli, tmp_path):
    cfg = tmp_path / "f.yaml"
    cfg.write_text(CFG + "fast:\n  repeats: 1\n  set: [\"sizes.n_private=[30]\", \"privacy.epsilon=1.0\"]\n")
    res = cli(["run", str(cfg), "--out", str(tmp_path / "o"), "--jobs", "1", "-q", "--fast"])
    assert res.exit_code == 0, res.output
    man = json.loads((tmp_path / "o" / "manifest.json").read_text())
    assert man["overrides"] == ["sizes.n_private=[30]", "privacy.epsilon=1.0"] and man["repeats_override"] == 1
    assert man["cells"] == 2 * 1 * 1 * 6 * 1
    bad = tmp_path / "b.yaml"
    bad.write_text(CFG + "fast:\n  repeat: 1\n")
    res = CliRunner().invoke(main, ["run", str(bad), "--out", str(tmp_path / "p"), "--fast"])
    assert res.exit_code == 2 and "fast.repeat is not a known key" in res.output


def test_summary_keeps_other_grid_axes_separate(cli, cfg, tmp_path):
    """With epsilon and n_private both varying, a curve over n_private never averages over epsilon."""
    from dpexp.results import aggregate, read_results

    cli(["run", str(cfg), "--out", str(tmp_path / "a"), "--jobs", "1", "-q"])
    df = read_results(tmp_path / "a")
    agg = aggregate(df[df.dataset_params == "centre=law,d=2"], "n_private_requested", "mae")
    rplr = agg[agg.label.str.startswith("rplr") & (agg.label.str.contains("omega_x=0.5"))]
    assert sorted(rplr.epsilon.unique()) == [0.5, 2.0] and len(rplr) == 2 * 3
    res = cli(["summarize", str(tmp_path / "a"), "--metric", "mae"])
    assert "| epsilon |" in res.output
    assert cli(["plot", str(tmp_path / "a"), "--out", str(tmp_path / "f"), "--format", "png"]).exit_code == 0


def test_failing_split_is_recorded_not_fatal(cli, tmp_path, monkeypatch):
    from dpexp.families.gdsc.datasets.synthetic import HonkelaSynthetic

    orig = HonkelaSynthetic.split

    def flaky(self, subset, sizes, rng):
        if sizes.n_private == 30:
            raise ValueError("broken split")
        return orig(self, subset, sizes, rng)

    monkeypatch.setattr(HonkelaSynthetic, "split", flaky)
    cfg = tmp_path / "s.yaml"
    cfg.write_text(CFG)
    res = cli(["run", str(cfg), "--out", str(tmp_path / "o"), "--jobs", "1", "-q"])
    assert res.exit_code == 1
    df = pd.read_csv(tmp_path / "o" / "results.csv", keep_default_na=False)
    bad = df[df.n_private_requested == 30]
    assert len(bad) and bad.error.str.contains("data split failed: ValueError: broken split").all()
    assert (df[df.n_private_requested != 30].error == "").all()


def test_stale_parts_without_manifest_are_refused(cli, cfg, tmp_path):
    out = tmp_path / "a"
    cli(["run", str(cfg), "--out", str(out), "--jobs", "1", "-q", "--repeats", "1"])
    (out / "manifest.json").unlink()
    (out / ".parts").mkdir()
    (out / ".parts" / "0000000.csv").write_text("orphaned part of an interrupted run\n")
    res = CliRunner().invoke(main, ["run", str(cfg), "--out", str(out), "--jobs", "1", "-q", "--repeats", "1"])
    assert res.exit_code == 2 and "no readable manifest.json" in res.output
    assert cli(["run", str(cfg), "--out", str(out), "--jobs", "1", "-q", "--repeats", "1", "--force"]).exit_code == 0


def test_complete_run_is_not_recomputed_and_parts_are_removed(cli, cfg, tmp_path):
    out = tmp_path / "a"
    assert cli(["run", str(cfg), "--out", str(out), "--jobs", "1", "-q", "--repeats", "1"]).exit_code == 0
    assert not (out / ".parts").exists()
    before = (out / "results.csv").read_bytes()
    res = CliRunner().invoke(main, ["run", str(cfg), "--out", str(out), "--jobs", "1", "-q", "--repeats", "1"])
    assert res.exit_code == 0 and "already complete" in res.output
    assert (out / "results.csv").read_bytes() == before


def test_merge_with_worker_summaries_equals_parsing_every_part(tmp_path):
    """The merge takes each part's privacy-summary counts from the ``.sum`` file the driver wrote beside it (made by
    the worker); a part without one (an older dpexp's) is parsed.  Both give the same results bytes, summary, row
    count and failures — here with failing cells among good ones."""
    import shutil

    from dpexp import runner, spec

    cfg = tmp_path / "f.yaml"
    cfg.write_text(CFG.replace("params: {noise: 0.0, sleep_ms: 0.0}", "params: {fail: true}"))
    exp = spec.load(cfg, [], 1)
    chunks = runner.plan_chunks(exp)
    merged = []
    for sidecars in ("all", "none", "some"):
        out = tmp_path / sidecars
        (out / runner.PARTS).mkdir(parents=True)
        for c in chunks:
            done = runner.compute_chunk(exp, c, 7)
            if sidecars == "all" or (sidecars == "some" and c.index % 2):
                (out / runner.PARTS / runner._summary_name(c.file_name)).write_text(json.dumps(done.summary))
            (out / runner.PARTS / c.file_name).write_bytes(done.data)
        path, n_rows, failures, spent = runner.merge_parts(out, chunks)
        merged.append((path.read_bytes(), n_rows, failures, list(spent.items())))
        shutil.rmtree(out)
    assert merged[0] == merged[1] == merged[2]
    assert merged[0][2] and merged[0][1] == merged[0][0].count(b"\n") - 1


def test_gzip_member_is_a_pure_function_of_its_text():
    """``gzip_member``: one gzip member (mtime 0, so the same text gives the same bytes in any run or process) that
    any gzip reader decompresses to the text, members concatenating into one file of the texts in turn; empty text
    included."""
    import gzip

    from dpexp import runner

    text = b"".join(b"exp,ds,%d,0.%d,key%d,\n" % (i, i * 7919 % 1000, i % 13) for i in range(20000))
    a, b = runner.gzip_member(text), runner.gzip_member(text)
    assert a == b and a[:2] == b"\x1f\x8b" and a[4:8] == b"\0\0\0\0"   # magic; mtime 0
    assert gzip.decompress(a) == text
    assert gzip.decompress(runner.gzip_member(b"")) == b""
    assert gzip.decompress(a + runner.gzip_member(b"x\n") + a) == text + b"x\n" + text
    assert int.from_bytes(a[-4:], "little") == len(text)   # ISIZE, read by the merge's row count


@pytest.mark.parametrize("big", [False, True])
def test_compressed_parts_merge_like_plain_ones(tmp_path, monkeypatch, big):
    """A large run's chunks come back gzip-compressed (``compress_parts``, forced here) and are kept so
    (``<chunk>.csv.gz``).  Whatever the mix of plain parts (an older dpexp's, or a run too small to compress) and
    compressed ones, with or without their summaries, the merge gives the same results text, row count, failures
    and privacy summary; a ``.gz`` result is the same bytes too (the header and each part one gzip member, made by
    the same function wherever it was compressed) and reads as the plain one does."""
    import gzip
    import shutil

    from dpexp import runner, spec
    from dpexp.results import read_results

    cfg = tmp_path / "f.yaml"
    cfg.write_text(CFG.replace("params: {noise: 0.0, sleep_ms: 0.0}", "params: {fail: true}"))
    exp = spec.load(cfg, [], 1)
    chunks = runner.plan_chunks(exp)
    assert not runner.compress_parts(exp)
    plain = [runner.compute_chunk(exp, c, 7) for c in chunks]
    monkeypatch.setattr(runner, "PART_GZIP_BYTES", 0)
    assert runner.compress_parts(exp)
    packed = [runner.compute_chunk(exp, c, 7) for c in chunks]
    assert all(d.gz for d in packed) and not any(d.gz for d in plain)
    assert [gzip.decompress(d.data) for d in packed] == [d.data for d in plain]
    monkeypatch.setattr(runner, "GZIP_BYTES", 0 if big else runner.GZIP_BYTES)
    merged = []
    for mix in ("plain", "packed", "mixed", "packed, no summaries"):
        out = tmp_path / mix.replace(", ", "_").replace(" ", "_")
        (out / runner.PARTS).mkdir(parents=True)
        for c, p, q in zip(chunks, plain, packed):
            done = q if mix.startswith("packed") or (mix == "mixed" and c.index % 2) else p
            if not mix.endswith("no summaries") and not (mix == "mixed" and c.index % 3 == 0):
                (out / runner.PARTS / runner._summary_name(c.file_name)).write_text(json.dumps(done.summary))
            (out / runner.PARTS / (c.file_name + (".gz" if done.gz else ""))).write_bytes(done.data)
        assert runner._part_names(out / runner.PARTS) == {c.file_name for c in chunks}
        assert [runner._text_size(*runner._part_file(out / runner.PARTS, c.file_name)) for c in chunks] == \
            [len(d.data) for d in plain]
        path, n_rows, failures, spent = runner.merge_parts(out, chunks)
        assert path.name == ("results.csv.gz" if big else "results.csv")
        raw = path.read_bytes()
        text = gzip.decompress(raw) if big else raw
        merged.append((raw, text, n_rows, failures, list(spent.items()), read_results(out)))
        shutil.rmtree(out)
    first = merged[0]
    for m in merged[1:]:
        assert m[:5] == first[:5]
        pd.testing.assert_frame_equal(m[5], first[5])
    assert first[3] and first[2] == first[1].count(b"\n") - 1
    assert first[1] == (",".join(runner.COLUMNS) + "\n").encode() + b"".join(d.data for d in plain)


def test_run_with_compressed_parts_equals_plain_run(tmp_path, monkeypatch, cfg):
    """A whole run whose chunks are compressed where they are made writes the same results as one whose are not
    (in process: the patched threshold reaches the chunks), also when resumed from plain parts of an older run."""
    from dpexp import runner, spec

    raw = __import__("yaml").safe_load(cfg.read_text())
    exp = spec.load(cfg, [], None)
    plain = runner.run_experiment(exp, raw, tmp_path / "plain", jobs=1, progress=False)
    monkeypatch.setattr(runner, "PART_GZIP_BYTES", 0)
    packed = runner.run_experiment(exp, raw, tmp_path / "packed", jobs=1, progress=False)
    assert packed.results_path.read_bytes() == plain.results_path.read_bytes()
    # resumed: the plain parts of an interrupted run (every other one lost), the rest computed compressed
    monkeypatch.setattr(runner, "PART_GZIP_BYTES", runner.GZIP_BYTES)

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(runner, "merge_parts", interrupted)
        with pytest.raises(KeyboardInterrupt):
            runner.run_experiment(exp, raw, tmp_path / "resumed", jobs=1, progress=False)
    parts = sorted((tmp_path / "resumed" / runner.PARTS).glob("*.csv"))
    assert len(parts) == len(runner.plan_chunks(exp)) > 2
    for p in parts[::2]:
        p.unlink()
    monkeypatch.setattr(runner, "PART_GZIP_BYTES", 0)
    resumed = runner.run_experiment(exp, raw, tmp_path / "resumed", jobs=1, progress=False)
    assert resumed.skipped_chunks == len(parts) // 2
    assert resumed.results_path.read_bytes() == plain.results_path.read_bytes()
    m1, m2, m3 = (json.loads((tmp_path / d / "manifest.json").read_text()) for d in ("plain", "packed", "resumed"))
    assert m1["privacy_summary"] == m2["privacy_summary"] == m3["privacy_summary"]
    assert m1["rows"] == m2["rows"] == m3["rows"] and m1["failures"] == m2["failures"] == m3["failures"]
