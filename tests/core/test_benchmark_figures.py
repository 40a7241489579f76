"""benchmarks/paper_scale.py's ``--configs`` printout: the ratio of a config to its floor, the ranking (slowest
relative to its floor first), the per-process peak RSS and the totals line; and the DCA floor's work model."""

import importlib.util
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "paper_scale.py"
MiB = 2**20


@pytest.fixture(scope="module")
def paper_scale():
    spec = importlib.util.spec_from_file_location("paper_scale_figures_under_test", _PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _timings(ps):
    T = ps.ConfigTiming
    return [T("slr_oi", "slr", 100.0, 190.0, 95.0, "inside run_many", [("driver", 300 * MiB)]),
            T("gdsc_eps2", "gdsc", 150.0, 290.0, 29.0, "batched fits",
              [("driver", 400 * MiB), ("loky worker", 900 * MiB)], sys=29.0),
            T("dca_scaling", "dca", 60.0, 60.0, 0.0, "release + solve arithmetic", [("driver", 100 * MiB)]),
            T("dca_gdsc", "dca", 80.0, 150.0, 50.0, "release + solve arithmetic", [("driver", 200 * MiB)])]


def test_ratio_is_cpu_over_floor(paper_scale):
    slr, gdsc, no_floor, dca = _timings(paper_scale)
    assert slr.ratio == pytest.approx(2.0)
    assert gdsc.ratio == pytest.approx(10.0)
    assert dca.ratio == pytest.approx(3.0)
    assert no_floor.ratio == float("inf")


def test_ranked_slowest_relative_to_floor_first(paper_scale):
    order = [t.name for t in paper_scale.ranked(_timings(paper_scale))]
    assert order == ["dca_scaling", "gdsc_eps2", "dca_gdsc", "slr_oi"]
    T = paper_scale.ConfigTiming
    ties = [T("b", "slr", 1, 2.0, 1.0, "", []), T("a", "slr", 1, 4.0, 2.0, "", [])]
    assert [t.name for t in paper_scale.ranked(ties)] == ["a", "b"]       # equal ratios: by name


def test_table_lines(paper_scale):
    Step = paper_scale.Step
    lines = paper_scale.format_table(_timings(paper_scale), total_wall=420.0, figures=Step(11.0, 12.7, 1500 * MiB))
    assert lines[0].split()[:2] == ["config", "family"]
    body = lines[1:-2]
    assert [line.split()[0] for line in body] == ["dca_scaling", "gdsc_eps2", "dca_gdsc", "slr_oi"]
    gdsc = body[1].split()
    assert gdsc[1:6] == ["gdsc", "150.0", "290.0", "29.00", "10.0"]
    assert "loky worker 900, driver 400" in body[1]           # every process, largest first
    assert body[0].split()[5] == "-"                           # no floor: no ratio
    assert gdsc[6] == "10%" and body[0].split()[6] == "-"     # system time's share of the CPU; not measured
    assert lines[-2] == ("figures and report (`dpexp report --redraw --jobs`, as the runs): 11.0 s wall, 12.7 CPU-s, "
                         "peak RSS 1500 MiB")
    total = lines[-1]
    assert "total: 420.0 s wall = runs 390.0 s + figures and report 11.0 s" in total
    assert "+ 19.0 s of floors and set-up" in total
    assert "CPU of the runs 690.0 s" in total and "largest process 1500 MiB" in total   # the figures', here
    assert total.endswith("`make figures` itself (runs + figures and report): 401.0 s = 6.7 min")


def test_stopped_config_is_flagged(paper_scale):
    t = paper_scale.ConfigTiming("slow", "gdsc", float("inf"), 10.0, 5.0, "", [], error="stopped after 60 s")
    (line,) = paper_scale.format_table([t], 70.0, paper_scale.Step())[1:-2]
    assert line.endswith("(stopped after 60 s)")


def test_dca_cell_work(paper_scale):
    w = paper_scale.dca_cell_work
    d, p, N = 10, 65, 800
    assert w("ta", None, N, d, 1) == {"terms": N * p, "normal": p, "solve/10": 1}
    assert w("np", None, N, d, 3) == {"terms": N * p, "solve/10": 1}
    ddp = w("ddp", None, N, d, 2)                              # M = 10 by default
    assert ddp == {"terms": N * p, "normal": 2 * N * p, "mask": 2 * 9 * N * p, "ring": 2 * 10 * N * p,
                   "solve/10": 2}
    proj = w("ddp_proj", None, N, d, 2)                        # std round (d + 1 terms), then the statistics
    assert proj["mask"] == 2 * 9 * N * (d + 1 + p) and proj["terms"] == N * (d + 1) + 2 * N * p
    timing = w("dca_timing", type("P", (), {"n_compute": 4, "encrypt": True})(), 100, 1000, 1)
    assert timing == {"normal": 1e5, "mask": 3e5, "ring": 4e5, "aes": 8 * 4e5}


def test_keep_refuses_a_folder_that_is_not_empty(paper_scale, tmp_path, monkeypatch, capsys):
    (tmp_path / "old.csv").write_text("x\n")
    monkeypatch.setattr("sys.argv", ["paper_scale.py", "--skip-gdsc", "--keep", str(tmp_path)])
    with pytest.raises(SystemExit) as exc:
        paper_scale.main()
    assert exc.value.code == 2
    assert "not empty" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["old.csv"]      # nothing removed, nothing written
