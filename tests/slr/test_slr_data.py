"""Loaders of the DP simple-LR datasets (Alabi et al. 2020) on tiny made-up fixtures (tests/slr/fixtures)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dpexp.errors import DataNotFoundError, UserError
from dpexp.families.slr.datasets.opportunity import Opportunity, release_rule
from dpexp.families.slr.datasets.synthetic import SLRSynthetic
from dpexp.families.slr.datasets.uci import BikeShare, CarbonNanotubes, StockExchange, read_carbon
from dpexp.types import Sizes

FIX = Path(__file__).parent / "fixtures"
ALL = Sizes(-1, 0, 2, -1, 0, 2)


@pytest.fixture(autouse=True)
def _data_dir(monkeypatch):
    monkeypatch.setenv("DPEXP_DATA_DIR", str(FIX))


def _contract(split, n):
    assert split.X_private.shape == (n, 1) and split.y_private.shape == (n,)
    assert split.X_public.shape == (0, 1) and split.y_public.shape == (0,)
    np.testing.assert_array_equal(split.X_test, [[0.25], [0.75]])
    assert split.X_private.min() >= 0 and split.X_private.max() <= 1
    assert split.y_private.min() >= 0 and split.y_private.max() <= 1


def test_bikeshare_subsets_rescaling():
    ds = BikeShare()
    assert ds.subsets() == ["m01_h00", "m01_h01", "m02_h00", "m02_h01"]
    assert all(ds.n_rows(s) == 6 for s in ds.subsets())
    sp = ds.split("m01_h00", ALL, np.random.default_rng(0))
    _contract(sp, 6)
    assert np.all(np.isnan(sp.y_test))
    # min-max over the whole file: the global min and max of temp appear in some subset
    xs = np.concatenate([ds.split(s, ALL, np.random.default_rng(0)).X_private[:, 0] for s in ds.subsets()])
    assert xs.min() == 0.0 and xs.max() == 1.0
    with pytest.raises(UserError, match="unknown subset"):
        ds.split("m13_h00", ALL, np.random.default_rng(0))


def test_carbon_drops_outside_and_both_decimal_styles(tmp_path):
    ds = CarbonNanotubes()
    assert ds.n_rows("all") == 10  # 12 rows, 2 outside [0,1]^2
    sp = ds.split("all", ALL, np.random.default_rng(0))
    _contract(sp, 10)
    a = read_carbon(FIX / "carbon_nanotubes" / "carbon_nanotubes.csv")
    b = read_carbon(FIX / "carbon_nanotubes" / "carbon_nanotubes_dotdecimal.csv")
    np.testing.assert_allclose(a.to_numpy(), b.to_numpy())


def test_stock_columns_and_subsample():
    ds = StockExchange()
    assert ds.n_rows("all") == 20
    sp = ds.split("all", Sizes(8, 0, 2, 12, 0, 2), np.random.default_rng(3))
    _contract(sp, 8)
    sp12 = ds.split("all", Sizes(12, 0, 2, 12, 0, 2), np.random.default_rng(3))
    assert sp.meta["x_column"] == "ISE_TL" and sp.meta["y_column"] == "ISE_USD"
    # same seed: a subsample is a subset of the larger one (nested prefixes of one permutation)
    assert set(sp.X_private[:, 0]) <= set(sp12.X_private[:, 0])
    with pytest.raises(UserError, match="n_private"):
        ds.split("all", Sizes(25, 0, 2, 25, 0, 2), np.random.default_rng(0))
    with pytest.raises(UserError, match="x_column"):
        StockExchange(x_column="NOPE").check()


def test_missing_file_names_path(monkeypatch, tmp_path):
    monkeypatch.setenv("DPEXP_DATA_DIR", str(tmp_path))
    with pytest.raises(DataNotFoundError, match="hour.csv"):
        BikeShare().check()


def test_opportunity_microdata_groups():
    ds = Opportunity()
    assert ds.subsets() == ["cell001", "cell002", "cell003"]
    assert [ds.n_rows(s) for s in ds.subsets()] == [12, 15, 10]
    s1 = ds.split("cell001", ALL, np.random.default_rng(0))
    s2 = ds.split("cell002", ALL, np.random.default_rng(1))
    _contract(s1, 12)
    assert s1.meta["group_id"] == s2.meta["group_id"] == "oi_microdata"
    assert s1.meta["group_data"] is s2.meta["group_data"] and len(s1.meta["group_data"]) == 3
    assert s1.meta["group_key"] == s2.meta["group_key"]   # names the group's data (oi_mos memoises its MOS by it)
    np.testing.assert_array_equal(s2.meta["group_data"][1][0], s2.X_private[:, 0])


def test_opportunity_simulated_state():
    ds = Opportunity(source="simulated", n_tracts=200, state_seed=5)
    names = ds.subsets()
    assert 0 < len(names) <= 200
    sp = ds.split(names[0], ALL, np.random.default_rng(0))
    _contract(sp, ds.n_rows(names[0]))
    gd = sp.meta["group_data"]
    assert len(gd) == len(names) and sp.meta["group_id"] == "state_IL"
    sizes = np.array([len(x) for x, _ in gd])
    assert sizes.min() >= 20  # floor(Exp(52) + 20) and the release rule
    allx = np.concatenate([x for x, _ in gd])
    assert np.allclose(np.round(allx * 100), allx * 100)  # percentile ranks rounded to 2 decimals
    # no degenerate tract: child ranks spread within every tract (the uncentred α_t, β_t draw once gave tracts with
    # every child at rank 0.01, σ̂(p̂) = 0 and Ĉ/σ̂ ~ 1e18); the tract-level spread of ln child income is moderate
    assert min(np.ptp(y) for _, y in gd) >= 0.3
    slopes = [np.polyfit(x, y, 1)[0] for x, y in gd]
    assert 0.2 < np.median(slopes) < 1.5
    # deterministic given the parameters
    assert Opportunity(source="simulated", n_tracts=200, state_seed=5).subsets() == names
    assert Opportunity(source="simulated", n_tracts=200, state_seed=6).n_rows(names[0]) is not None


def test_opportunity_tract_table(tmp_path):
    tab = tmp_path / "tracts.csv"
    tab.write_text("tract,n,alpha,beta,mu\n17001,60,7.0,0.3,50000\n17002,80,6.5,0.4,90000\n17003,5,7,0.3,60000\n")
    ds = Opportunity(source="simulated", tract_table=str(tab))
    names = ds.subsets()
    assert "17003" not in names  # 5 people < 20: withheld by the release rule
    assert all(ds.n_rows(t) == {"17001": 60, "17002": 80}[t] for t in names)
    bad = tmp_path / "bad.csv"
    bad.write_text("tract,alpha\n1,2\n")
    with pytest.raises(UserError, match="columns alpha, beta, mu"):
        Opportunity(source="simulated", tract_table=str(bad)).subsets()


def test_release_rule():
    med = 0.5
    assert release_rule(np.r_[np.full(10, 0.2), np.full(10, 0.8)], med, 20, 0.1)
    assert not release_rule(np.r_[np.full(19, 0.8), [0.2]], med, 20, 0.1)  # 5% below
    assert not release_rule(np.full(10, 0.2), med, 20, 0.1)


def test_synthetic_model_and_truth():
    ds = SLRSynthetic(sigma_x2=0.02, sigma_e2=1e-4)
    sp = ds.split("all", Sizes(4000, 0, 2, 4000, 0, 2), np.random.default_rng(11))
    _contract(sp, 4000)
    np.testing.assert_allclose(sp.y_test, [0.325, 0.575])
    x, y = sp.X_private[:, 0], sp.y_private
    # sample mean/var of 4000 normals: |mean-0.5| < 5 sd/sqrt(n) (failure prob < 1e-6), var within 10%
    assert abs(x.mean() - 0.5) < 5 * np.sqrt(0.02 / 4000)
    assert abs(x.var() / 0.02 - 1) < 0.1
    slope = np.polyfit(x, y, 1)[0]
    assert abs(slope - 0.5) < 0.01
    # nested prefixes for a size grid
    small = ds.split("all", Sizes(100, 0, 2, 4000, 0, 2), np.random.default_rng(11))
    np.testing.assert_array_equal(small.X_private[:, 0], x[:100])
    one = SLRSynthetic(x_new=0.9).split("all", Sizes(10, 0, 1, 10, 0, 1), np.random.default_rng(0))
    assert one.X_test.shape == (1, 1) and one.y_test[0] == pytest.approx(0.65)
    u = SLRSynthetic(x_dist="uniform", sigma_x2=0.01).split("all", Sizes(5000, 0, 2, 5000, 0, 2),
                                                           np.random.default_rng(2))
    assert u.X_private.max() <= 0.5 + np.sqrt(0.03) + 1e-12


def test_synthetic_param_errors():
    with pytest.raises(Exception, match="x_new"):
        SLRSynthetic(x_new=[1.5])
    with pytest.raises(UserError, match="n_private"):
        SLRSynthetic().split("all", Sizes(-1, 0, 2, -1, 0, 2), np.random.default_rng(0))


def test_declared_ranges_are_row_local_and_clipped():
    """x_range/y_range: each value rescaled with the declared range and clipped to [0, 1] — it depends on its own row
    only (the default min-max moves every row with one extreme row); the statement then reads no row."""
    import pandas as pd

    raw = pd.read_csv(FIX / "bike_sharing" / "hour.csv")
    ds = BikeShare(x_range=(0.0, 0.5), y_range=(0.0, 100.0))
    sp = ds.split("m01_h00", ALL, np.random.default_rng(0))
    _contract(sp, 6)
    rows = raw[(raw["mnth"] == 1) & (raw["hr"] == 0)]
    np.testing.assert_allclose(sp.X_private[:, 0], np.clip(rows["temp"].to_numpy() / 0.5, 0, 1))
    np.testing.assert_allclose(sp.y_private, np.clip(rows["cnt"].to_numpy() / 100.0, 0, 1))
    assert ds.preprocessing().note == "" and "declared ranges" in ds.preprocessing().detail
    assert BikeShare().preprocessing().leaks                                     # the paper's min-max: not DP
    assert "cnt" in BikeShare(x_range=(0.0, 1.0)).preprocessing().detail          # y still min-max
    assert "ISE_USD" in StockExchange(x_range=(-0.1, 0.1)).preprocessing().detail
    with pytest.raises(ValueError, match="finite lo < hi"):
        BikeShare(y_range=(5.0, 5.0))
