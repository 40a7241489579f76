"""benchmarks/paper_scale.py's floors count the fits every config performs (docs/performance.md, "The floor of every
config"): no config whose algorithms fit models gets a zero or near-zero floor because ``fit_kind`` / ``count_fits``
map none (or few) of its cells — a PyMC engine, an algorithm that is an rplr in disguise (split_search), a data set
the mapping did not foresee.  Counting only: no timing is asserted (per-fit seconds are stubbed)."""

import importlib.util
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "paper_scale.py"
CONFIGS = sorted((_PATH.parents[1] / "configs").glob("*.yaml"))


@pytest.fixture(scope="module")
def paper_scale():
    spec = importlib.util.spec_from_file_location("paper_scale_floors_under_test", _PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _fast(ps, cfg):
    from dpexp.errors import UserError

    try:
        return ps.load_fast(cfg)
    except UserError as exc:      # e.g. its data set is not on this machine
        pytest.skip(f"{cfg.stem}: {exc}")


@pytest.mark.parametrize("cfg", CONFIGS, ids=[c.stem for c in CONFIGS])
def test_every_fitting_config_counts_its_fits(paper_scale, cfg, monkeypatch):
    exp = _fast(paper_scale, cfg)
    if paper_scale.config_family(exp) != "gdsc":
        pytest.skip("not a config of batched model fits (its floor is measured, not counted)")
    fits, other = paper_scale.count_fits(exp)
    assert not other, f"cells of no fit kind, left out of the floor: {other}"
    for av in exp.algorithms:       # every variant maps to a fit kind the floor can time
        for dv in exp.datasets:
            assert paper_scale.fit_kind(av, dv) is not None, av.label
    # a fit is shared by at most the budgets of a non-private curve or the sizes of a memoised baseline: a floor
    # of far fewer fits than cells means cells went uncounted
    assert sum(fits.values()) >= exp.n_cells / 4, (sum(fits.values()), exp.n_cells, fits)
    monkeypatch.setattr(paper_scale, "_per_fit_once", lambda kind, d, batch: 1e-5)
    floor, terms, _ = paper_scale.fit_floor(exp, once=True)
    assert floor >= 1e-5 * exp.n_cells / 4


def test_pymc_fits_and_their_cross_checks_are_counted(paper_scale):
    exp = _fast(paper_scale, _PATH.parents[1] / "configs" / "gdsc_pymc_check.yaml")
    fits, other = paper_scale.count_fits(exp)
    assert not other
    d = int(exp.datasets[0].instance.params.d)
    pymc_entries = [a for a in exp.algorithms if getattr(a.instance.params, "engine", "vb") == "pymc"]
    per_entry = fits[("pymc", d)] // len(pymc_entries)
    assert fits[("pymc", d)] == len(pymc_entries) * per_entry > 0
    # the vb entry's own fits plus two vb fits (without and with the ridge) per cross-checked PyMC fit
    assert fits[("vb", d)] == per_entry + 2 * fits[("pymc", d)]


def test_lr_public_fits_once_per_public_set_and_once_without_public_rows(paper_scale):
    # gdsc_tradeoff_public --fast: 20 drugs, 2 repeats, n_public 0, 10, 30 at every n_private.  lr_public's weights
    # are memoised by its public rows (``baselines._public_key``): one fit per drug, repeat and n_public > 0, and
    # one for the run at n_public = 0, where every drug's problem is the same empty one
    exp = _fast(paper_scale, _PATH.parents[1] / "configs" / "gdsc_tradeoff_public.yaml")
    fits, _ = paper_scale.count_fits(exp)
    (dv,) = exp.datasets
    per_set = len(dv.subsets) * exp.spec.repeats * exp.spec.trials
    assert sorted(exp.n_public) == [0, 10, 30]
    assert fits[("solve", 40)] == 2 * per_set + 1


def test_small_floors_print_their_digits(paper_scale):
    T = paper_scale.ConfigTiming
    lines = paper_scale.format_table([T("synthetic_eps", "gdsc", 3.0, 2.9, 0.000231, "batched fits", [])],
                                     3.0, paper_scale.Step())
    floor = lines[1].split()[4]
    assert float(floor) == pytest.approx(0.000231, rel=0.01), lines[1]


class _Unit(dict):
    """Every DCA unit of work at 1 ns (no timing in a test)."""

    def get(self, key, default=None):
        return 1e-9

    def __getitem__(self, key):
        return 1e-9


def test_dca_floor_sees_the_splits(paper_scale, monkeypatch):
    """dca_floor records the splits by standing in for ``runner._outputs``: when that function's signature changed,
    every call failed inside a swallowed exception and the floor of every DCA config was 0."""
    exp = _fast(paper_scale, _PATH.parents[1] / "configs" / "dca_scaling.yaml")
    monkeypatch.setattr(paper_scale, "dca_unit_costs", lambda d: _Unit())
    assert paper_scale.dca_floor(exp, k=1) > 0


@pytest.mark.parametrize("name", ["dca_uci_redwine", "dca_gdsc"])
def test_dca_floor_counts_every_algorithm(paper_scale, monkeypatch, name):
    """Every group of cells of the chunks seen is counted, not only the first: the recorder's outputs must let the
    chunk go on (outputs of None stopped it after its first group, the non-private ``np``, so that the floor of
    dca_gdsc was its ``np`` cells’ work × all cells — a quarter of the arithmetic its releases do)."""
    exp = _fast(paper_scale, _PATH.parents[1] / "configs" / f"{name}.yaml")
    monkeypatch.setattr(paper_scale, "dca_unit_costs", lambda d: _Unit())
    counted: dict[str, int] = {}
    work = paper_scale.dca_cell_work

    def counting(name, *a, **kw):
        counted[name] = counted.get(name, 0) + 1
        return work(name, *a, **kw)
    monkeypatch.setattr(paper_scale, "dca_cell_work", counting)
    paper_scale.dca_floor(exp, k=1)
    assert set(counted) == {av.name for av in exp.algorithms}, counted
    per_split = {n: c for n, c in counted.items() if n != "np"}      # the private variants: once per budget
    assert len(set(per_split.values())) == 1, counted


def test_dca_cell_work_counts_the_shares_only_where_they_are_simulated(paper_scale):
    """A ddp cell's floor counts the M − 1 mask words and M ring words of every client word only with
    ``secret_shares: true``; without them, one ring word each (what ``DCA.run_trials(shares=False)`` computes)."""
    from dpexp import registry
    from dpexp.families.dca.algorithms.dlr import n_terms

    cls = registry.get("algorithm", "ddp")
    N, d, T, M = 50, 3, 4, 10
    p = n_terms(d)
    with_ = paper_scale.dca_cell_work("ddp", cls(secret_shares=True).params, N, d, T)
    without = paper_scale.dca_cell_work("ddp", cls().params, N, d, T)
    assert with_["mask"] == T * (M - 1) * N * p and with_["ring"] == T * M * N * p
    assert "mask" not in without and without["ring"] == T * N * p
    assert with_["normal"] == without["normal"] == T * N * p
