"""Plugins: an installed package registers components through the ``dpexp.plugins`` entry point and they run, plot
and report without any file in ``dpexp/`` changing (docs/extending.md, "A plugin package")."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from dpexp import registry
from dpexp.cli import main
from dpexp.errors import UserError

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "dpexp_plugin_demo"
PLUGIN_MODULES = {"dpexp_plugin_demo", "bad_plugin", "hook_plugin", "broken_plugin"}


def _install(site: Path, module_text: str, dist: str = "dpexp_plugin_demo", value: str = "dpexp_plugin_demo"
             ) -> None:
    """What `pip install tests/fixtures/dpexp_plugin_demo` leaves in site-packages: the module and a dist-info with
    the pyproject's entry point (importlib.metadata reads it from any sys.path entry)."""
    site.mkdir(parents=True, exist_ok=True)
    (site / f"{value.split(':')[0]}.py").write_text(module_text)
    info = site / f"{dist}-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist.replace('_', '-')}\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(f"[dpexp.plugins]\ndemo = {value}\n")


@pytest.fixture
def fresh_registry(monkeypatch):
    """The registry as now, restored after the test (plugin components and modules removed)."""
    registry.load_all()
    monkeypatch.delenv(registry._SAID, raising=False)   # the missing-audit-plan warning is said once per run
    saved = {k: dict(v) for k, v in registry._REGISTRIES.items()}
    saved_plugins = {k: dict(v) for k, v in registry._PLUGIN_OF.items()}
    saved_loaded = set(registry._LOADED_PLUGINS)
    modules = set(sys.modules)
    yield
    for k in saved:
        registry._REGISTRIES[k].clear()
        registry._REGISTRIES[k].update(saved[k])
        registry._PLUGIN_OF[k].clear()
        registry._PLUGIN_OF[k].update(saved_plugins[k])
    registry._LOADED_PLUGINS.clear()
    registry._LOADED_PLUGINS.update(saved_loaded)
    for m in set(sys.modules) - modules:
        if m.split(".")[0] in PLUGIN_MODULES:   # only the test's plugins: dpexp's own modules stay imported
            del sys.modules[m]


@pytest.fixture
def demo_plugin(tmp_path, monkeypatch, fresh_registry):
    site = tmp_path / "site"
    _install(site, (FIXTURE / "dpexp_plugin_demo.py").read_text())
    monkeypatch.syspath_prepend(str(site))
    with pytest.warns(UserWarning, match=r"algorithm 'clipped_mean' of plugin dpexp-plugin-demo:demo declares no "
                                         r"audit plan") as caught:
        loaded = registry.load_plugins()
    assert loaded == ["dpexp-plugin-demo:demo"]
    assert len([w for w in caught if "audit plan" in str(w.message)]) == 1   # once
    return site


def test_the_fixture_declares_the_entry_point():
    text = (FIXTURE / "pyproject.toml").read_text()
    assert '[project.entry-points."dpexp.plugins"]\ndemo = "dpexp_plugin_demo"' in text


def test_plugin_algorithm_runs_plots_and_reports(tmp_path, demo_plugin):
    assert not registry.builtin("algorithm", "clipped_mean") and registry.builtin("algorithm", "rplr")
    assert registry.plugin_of("metric", "max_abs_error") == "dpexp-plugin-demo:demo"
    assert "clipped_mean" not in registry.builtin_names("algorithm")
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # loading again loads nothing and warns nothing
        assert registry.load_plugins() == []
    r = CliRunner().invoke(main, ["list", "algorithms"])
    assert "clipped_mean" in r.output and "DP mean of the clipped response" in r.output
    cfg = tmp_path / "plugin.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "plugin_demo", "seed": 3, "repeats": 2,
        "datasets": [{"name": "honkela_synthetic", "params": {"d": 2, "centre": "law"}}],   # reads no private row
        "sizes": {"n_private": [50, 100], "n_public": 0, "n_test": 30}, "privacy": {"epsilon": 1.0},
        "algorithms": [{"name": "clipped_mean", "params": {"B": 1.0}}, {"name": "lr"}],
        "metrics": ["mae", "max_abs_error"], "plots": [{"kind": "curve", "metric": "mae", "x": "n_private"}]}))
    out = tmp_path / "res"
    r = CliRunner().invoke(main, ["run", str(cfg), "--out", str(out), "-q", "--jobs", "1"])
    assert r.exit_code == 0, r.output
    import dpexp

    res = dpexp.load(out)
    rows = res.frame[res.frame["algorithm"] == "clipped_mean"]
    assert set(rows["metric"]) == {"mae", "max_abs_error"} and rows["value"].notna().all()
    assert set(rows["guarantee"]) == {"pure"} and (rows["epsilon_spent"] == 1.0).all()
    from dpexp.plotting import style

    style._WARNED.discard("clipped_mean")
    with pytest.warns(UserWarning, match=r"'clipped_mean' has no look in dpexp.plotting.style.METHODS: drawn in #"):
        r = CliRunner().invoke(main, ["plot", str(out), "--out", str(tmp_path / "figs"), "--format", "png"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "figs" / "plugin_demo.png").stat().st_size > 5_000
    assert style.method_colour("clipped_mean")[0] in style.PALETTE
    r = CliRunner().invoke(main, ["report", str(out), "--figures", str(tmp_path / "figs_all"),
                                  "--out", str(tmp_path / "report")])
    assert r.exit_code == 0, r.output
    page = (tmp_path / "report" / "index.html").read_text()
    assert "clipped_mean" in page


def test_plugin_audit_is_reported_as_error_not_skipped(demo_plugin):
    from dpexp.audit import ERROR, audit_entry
    from dpexp.audit.entries import entry_for

    assert entry_for("clipped_mean") is None
    res = audit_entry("clipped_mean")
    assert res.verdict == ERROR and "no audit plan for 'clipped_mean'" in res.note   # never silently passed


def test_plugin_look_warns_once_per_process(demo_plugin):
    from dpexp.plotting import style

    style._WARNED.discard("clipped_mean")
    with pytest.warns(UserWarning, match="no look in dpexp.plotting.style.METHODS"):
        first = style.method_colour("clipped_mean")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert style.method_colour("clipped_mean") == first    # stable, and said once
    assert first[0] in style.PALETTE and first[1] in style.MARKERS


def test_plugin_runs_in_worker_processes(tmp_path, demo_plugin, monkeypatch, request):
    """--jobs 2: the loky workers load the installed plugin themselves (here: the test's site folder on their
    PYTHONPATH, as site-packages would be) and write the same bytes as one process."""
    import os

    from dpexp.executors import Loky

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(demo_plugin), os.environ.get("PYTHONPATH", "")]))
    Loky._stop_workers()   # loky reuses its workers across runs of one process: start fresh ones, as a new run does
    request.addfinalizer(Loky._stop_workers)   # and leave none behind with the test's PYTHONPATH
    cfg = tmp_path / "p.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "p", "seed": 3, "repeats": 4, "chunk_work": 1,
        "datasets": [{"name": "honkela_synthetic", "params": {"d": 2}}],
        "sizes": {"n_private": [50], "n_public": 0, "n_test": 10}, "privacy": {"epsilon": 1.0},
        "algorithms": [{"name": "clipped_mean"}], "metrics": ["max_abs_error"]}))
    for jobs in ("1", "2"):
        r = CliRunner().invoke(main, ["run", str(cfg), "--out", str(tmp_path / jobs), "-q", "--jobs", jobs])
        assert r.exit_code == 0, r.output
    assert (tmp_path / "1" / "results.csv").read_bytes() == (tmp_path / "2" / "results.csv").read_bytes()


def test_a_plugin_that_cannot_import_is_named(tmp_path, monkeypatch, fresh_registry):
    site = tmp_path / "site"
    _install(site, "import no_such_module_anywhere\n", dist="broken_plugin", value="broken_plugin")
    monkeypatch.syspath_prepend(str(site))
    with pytest.raises(UserError, match=r"plugin broken-plugin:demo \(dpexp.plugins entry point 'broken_plugin'\) "
                                        r"failed to load: ModuleNotFoundError"):
        registry.load_plugins()
    monkeypatch.setattr(registry, "_loaded", False)       # a fresh process: load_all meets the broken plugin
    r = CliRunner().invoke(main, ["list", "algorithms"])   # the CLI: one line, exit code 2
    assert r.exit_code == 2 and r.output.splitlines()[-1].startswith("error: plugin broken-plugin:demo")


def test_in_tree_components_are_builtin_and_held_to_the_coverage_tests():
    """The in-tree route: every component below dpexp/ is built-in, so the registry-wide tests (which take
    ``builtin_names``) hold it to an audit plan and a look."""
    for kind in ("algorithm", "dataset", "metric", "plot"):
        for name, obj in registry.items(kind):
            module = getattr(obj, "__module__", "")
            assert registry.builtin(kind, name) == module.startswith("dpexp."), (kind, name, module)
    src = {p: (REPO / p).read_text() for p in ("tests/audit/test_audit_registry.py", "tests/core/test_figures.py")}
    assert 'parametrize("name", registry.builtin_names("algorithm"))' in src["tests/audit/test_audit_registry.py"]
    assert 'for name in registry.builtin_names("algorithm"):' in src["tests/core/test_figures.py"]


def test_plugin_may_not_replace_a_builtin(tmp_path, monkeypatch, fresh_registry):
    site = tmp_path / "site"
    text = (FIXTURE / "dpexp_plugin_demo.py").read_text().replace('name = "clipped_mean"', 'name = "rplr"')
    _install(site, text.replace("dpexp_plugin_demo", "bad_plugin"), dist="bad_plugin", value="bad_plugin")
    monkeypatch.syspath_prepend(str(site))
    with pytest.raises(UserError, match=r"plugin bad-plugin:demo .* failed to load: TypeError: algorithm name "
                                        r"'rplr' registered twice"):
        registry.load_plugins()


def test_plugin_callable_entry_point_is_called(tmp_path, monkeypatch, fresh_registry):
    site = tmp_path / "site"
    text = ("from dpexp.registry import register_metric\nfrom dpexp.components import Metric\n\n"
            "def register():\n    @register_metric\n    class Zero(Metric):\n        name = 'zero_metric'\n"
            "        def __call__(self, output, split):\n            return 0.0\n")
    _install(site, text, dist="hook_plugin", value="hook_plugin:register")
    monkeypatch.syspath_prepend(str(site))
    assert registry.load_plugins() == ["hook-plugin:demo"]
    assert registry.plugin_of("metric", "zero_metric") == "hook-plugin:demo"


def test_a_plugin_may_ask_the_registry_while_it_loads(tmp_path, monkeypatch, fresh_registry):
    """A plugin module that reads the registry at import (e.g. to check a name is free) still registers as itself."""
    site = tmp_path / "site"
    text = ("from dpexp import registry\nfrom dpexp.components import Metric\n\n"
            "assert 'mae' in registry.names('metric')\n\n"
            "@registry.register_metric\nclass Half(Metric):\n    name = 'half_metric'\n"
            "    def __call__(self, output, split):\n        return 0.5\n")
    _install(site, text, dist="hook_plugin", value="hook_plugin")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(registry, "_loaded", False)
    registry.load_all()
    assert registry.plugin_of("metric", "half_metric") == "hook-plugin:demo"
