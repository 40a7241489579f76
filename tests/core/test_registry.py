"""Discovery without central lists: a new file in a family folder is found by being there; every algorithm
declares its family; the worked example of docs/extending.md is the real file."""

from __future__ import annotations

import importlib
import re
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import dpexp.families
from dpexp import registry
from dpexp.audit.entries import entry_for
from dpexp.types import Sizes

REPO = Path(__file__).resolve().parents[2]

NEW_FAMILY = {
    "__init__.py": '"""A family written by the test: one file per kind, nothing else edited."""\n',
    "algorithms/__init__.py": "",
    "datasets/__init__.py": "",
    "audit.py": '''
        from dpexp.audit.neighbours import Design


        def unit_interval(alg):
            return Design(x_lo=(0.0,), x_hi=(1.0,), y_lo=0.0, y_hi=1.0, n=10, X_test=((0.5,),))
        ''',
    "algorithms/noisy_mean.py": '''
        """Laplace-noised mean of y in [0, 1]: sensitivity 1/n under replace-one, so Lap(1/(n eps)) is eps-DP."""

        import numpy as np

        from dpexp.audit.plan import AuditPlan
        from dpexp.components import Algorithm
        from dpexp.families.testfamily.audit import unit_interval
        from dpexp.registry import register_algorithm
        from dpexp.types import Output


        @register_algorithm
        class NoisyMean(Algorithm):
            """Mean of y + Lap(1/(n eps)); eps-DP under replace-one for y in [0, 1]."""

            name = "test_noisy_mean"
            description = "test-only: Laplace-noised mean"
            family = "testfamily"
            audit = AuditPlan(design=unit_interval)
            neighbouring = "replace-one"

            def run(self, split, epsilon, delta, rng, trials=1):
                y = np.clip(split.y_private, 0.0, 1.0)
                m = y.mean() + rng.laplace(0.0, 1.0 / (len(y) * epsilon), size=trials)
                return Output(predictions=np.repeat(m[:, None], split.X_test.shape[0], axis=1))
        ''',
    "datasets/line.py": '''
        import numpy as np

        from dpexp.components import Dataset
        from dpexp.registry import register_dataset
        from dpexp.types import Split


        @register_dataset
        class Line(Dataset):
            name = "test_line"
            description = "test-only: y = x on [0, 1]"

            def split(self, subset, sizes, rng):
                x = rng.random((sizes.n_private + sizes.n_test, 1))
                p, t = x[:sizes.n_private], x[sizes.n_private:]
                return Split(p, p[:, 0], np.empty((0, 1)), np.empty(0), t, t[:, 0])
        ''',
    "metrics.py": '''
        import numpy as np

        from dpexp.components import Metric
        from dpexp.registry import register_metric


        @register_metric
        class MaxError(Metric):
            name = "test_max_error"
            description = "test-only: largest absolute error"

            def __call__(self, output, split):
                return float(np.max(np.abs(output.predictions - split.y_test)))
        ''',
    "plots.py": '''
        from dpexp.plotting.base import PlotOptions
        from dpexp.registry import register_plot


        class DotOptions(PlotOptions):
            size: float = 3.0


        @register_plot(options=DotOptions)
        def test_dots(df, spec, manifest, out_stem, formats):
            return []
        ''',
}


@pytest.fixture
def new_family(tmp_path, monkeypatch):
    """A family package 'testfamily' written into tmp_path and made a part of dpexp.families; the registry is
    restored afterwards."""
    registry.load_all()  # the real components first, so the copies below hold them
    root = tmp_path / "testfamily"
    for rel, text in NEW_FAMILY.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text).lstrip())
    importlib.invalidate_caches()
    monkeypatch.setattr(dpexp.families, "__path__", list(dpexp.families.__path__) + [str(tmp_path)])
    monkeypatch.setattr(registry, "_REGISTRIES", {k: dict(v) for k, v in registry._REGISTRIES.items()})
    monkeypatch.setattr(registry, "_PLOT_OPTIONS", dict(registry._PLOT_OPTIONS))
    monkeypatch.setattr(registry, "_loaded", False)
    try:
        yield root
    finally:
        for mod in [m for m in sys.modules if m.startswith("dpexp.families.testfamily")]:
            del sys.modules[mod]
        if hasattr(dpexp.families, "testfamily"):
            delattr(dpexp.families, "testfamily")


def test_new_files_in_a_family_folder_are_discovered(new_family):
    """Each kind is one new file: load_all() finds the algorithm, dataset, metric and plot kind without any list."""
    assert "test_noisy_mean" not in registry._REGISTRIES["algorithm"]
    registry.load_all()
    alg = registry.get("algorithm", "test_noisy_mean")
    assert alg.family == "testfamily"
    assert registry.get("dataset", "test_line").name == "test_line"
    assert registry.get("metric", "test_max_error").name == "test_max_error"
    assert registry.plot_options("test_dots").model_validate({}).size == 3.0
    # the audit reads the plan declared on the class, wherever the file is
    entry = entry_for("test_noisy_mean")
    assert entry.audited and entry.design.__name__ == "unit_interval" and entry.relation == "replace-one"
    # and it runs: a split of the new dataset through the new algorithm and metric
    split = registry.get("dataset", "test_line")().split("all", Sizes(20, 0, 5, 20, 0, 5), np.random.default_rng(0))
    out = alg().run(split, 1.0, 0.0, np.random.default_rng(1), trials=4)
    assert out.predictions.shape == (4, 5)
    assert registry.get("metric", "test_max_error")()(out, split) >= 0


def test_a_broken_module_is_an_error_not_a_silent_skip(new_family):
    (new_family / "algorithms" / "broken.py").write_text("import no_such_module_anywhere\n")
    importlib.invalidate_caches()
    with pytest.raises(ModuleNotFoundError):
        registry.load_all()


@pytest.mark.parametrize("name", registry.builtin_names("algorithm"))
def test_every_algorithm_declares_the_family_it_lives_in(name):
    cls = registry.get("algorithm", name)
    parts = cls.__module__.split(".")
    assert parts[:2] == ["dpexp", "families"], cls.__module__
    assert cls.family == parts[2], f"{name}: family = {cls.family!r} but it lives in dpexp/families/{parts[2]}/"


def test_worked_example_in_docs_is_the_real_file():
    """docs/extending.md shows dpexp/families/gdsc/algorithms/plr.py in full; the copy must not drift."""
    doc = (REPO / "docs" / "extending.md").read_text()
    m = re.search(r"<!-- example: (\S+) -->\n```python\n(.*?)```", doc, re.S)
    assert m, "the worked example block is missing from docs/extending.md"
    assert (REPO / m.group(1)).read_text() == m.group(2)
    assert registry.get("algorithm", "plr").__module__ == "dpexp.families.gdsc.algorithms.plr"
