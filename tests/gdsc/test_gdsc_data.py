"""GDSC loader, preprocessing (Methods 4.4), split protocol (Methods 4.5) and the release-file builder, on tiny
made-up fixtures under tests/gdsc/fixtures (no network, no real data)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpexp.errors import DataNotFoundError, UserError
from dpexp.families.gdsc.datasets.gdsc import Gdsc, build_tables, load_raw
from dpexp.types import Sizes

FIX = Path(__file__).parent / "fixtures"


@pytest.fixture
def ds():
    return Gdsc(data_dir=FIX, d=5, test_pool=6, public_pool=4, centre="all")   # the paper's centring (tested here)


def sizes(n_private, n_public=3, n_test=6):
    return Sizes(n_private, n_public, n_test, 18, 4, 6)


def test_join_subsets_and_rows(ds):
    assert ds.subsets() == ["Drug_1", "Drug_5", "Drug_1001"]
    assert ds.n_rows("Drug_1") == 28            # inner join of 30 expression and 32 IC50 lines
    ds.check()


def test_preprocessing_row_norms_centred_and_nan_dropped(ds):
    prep = ds._prep()
    assert prep.X.shape == (28, 5)
    np.testing.assert_allclose(np.linalg.norm(prep.X, axis=1), 1.0, atol=1e-12)
    # genes were centred *before* the row scaling: recompute from the raw table
    raw = load_raw(FIX / "gdsc" / "gdsc_v17_expression_64genes.csv.gz", FIX / "gdsc" / "IC50_v17.csv.gz")
    Xc = raw.X[:, :5] - raw.X[:, :5].mean(axis=0)
    np.testing.assert_allclose(prep.X, Xc / np.linalg.norm(Xc, axis=1, keepdims=True), atol=1e-12)
    for j in range(prep.Y.shape[1]):
        yj = prep.Y[prep.has[:, j], j]
        assert abs(yj.mean()) < 1e-12                                   # centred per drug over its lines
    # every split drops the lines without a response to that drug
    for drug in ds.subsets():
        sp = ds.split(drug, sizes(-1), np.random.default_rng(0))
        for y in (sp.y_private, sp.y_public, sp.y_test):
            assert np.all(np.isfinite(y))
        np.testing.assert_allclose(np.linalg.norm(sp.X_private, axis=1), 1.0, atol=1e-12)


def test_shared_split_nested_prefixes(ds):
    a = ds.split("Drug_5", sizes(10), np.random.default_rng(3))
    b = ds.split("Drug_5", sizes(18), np.random.default_rng(3))
    # the smaller private set is a prefix of the larger one (same repeat stream)
    assert np.array_equal(b.X_private[: a.X_private.shape[0]], a.X_private)
    assert np.array_equal(a.X_test, b.X_test)
    # the same rng state gives the same line split for another drug (shared_split): test rows of drug 1001 are the
    # pool lines that have a response to it
    c = ds.split("Drug_1001", sizes(10), np.random.default_rng(3))
    perm = np.random.default_rng(3).permutation(28)
    prep = ds._prep()
    exp = perm[:6][prep.has[perm[:6], 2]]
    np.testing.assert_array_equal(c.X_test, prep.X[exp])
    assert Gdsc.shared_split


def test_before_split_gives_exact_sizes():
    ds = Gdsc(data_dir=FIX, d=5, test_pool=6, public_pool=4, missing="before_split")
    sp = ds.split("Drug_1", sizes(12), np.random.default_rng(1))
    assert sp.X_private.shape[0] == 12 and sp.X_public.shape[0] == 3   # pools large enough: exact sizes
    assert sp.X_test.shape[0] <= 6 and np.all(np.isfinite(sp.y_test))


def test_evidence_filter_and_view():
    ds = Gdsc(data_dir=FIX, d=5, test_pool=3, public_pool=2, evidence="exact")
    assert ds.n_rows("Drug_1") == sum(1 for i in range(1003, 1031) if (i - 1001) % 3 == 0)
    sp = ds.split("Drug_1", Sizes(2, 2, 3, 2, 2, 3), np.random.default_rng(0))
    Xu, Xt = sp.meta["view"](6)
    assert Xu.shape == (sp.X_public.shape[0], 6) and Xt.shape == (sp.X_test.shape[0], 6)
    np.testing.assert_allclose(np.linalg.norm(Xt, axis=1), 1.0)
    assert sp.meta["x_bound"] == 1.0 and sp.meta["sigma_y"] > 0


def test_user_errors(ds, tmp_path):
    with pytest.raises(UserError, match="n_private must be <="):
        ds.split("Drug_1", sizes(100), np.random.default_rng(0))
    with pytest.raises(UserError, match="unknown subset"):
        ds.split("Drug_2", sizes(1), np.random.default_rng(0))
    with pytest.raises(DataNotFoundError, match="dpexp data download gdsc"):
        Gdsc(data_dir=tmp_path).subsets()
    with pytest.raises(Exception):
        Gdsc(d=3)  # d must be 5..64


def test_builder_on_fake_release_files(tmp_path):
    genes = ("JAK2", "BRAF", "KRAS", "TP53", "EGFR", "FLT3")   # the fake file has only the first 6 of GENES_64
    paths = build_tables(FIX / "raw" / "rma_fake.txt", FIX / "raw" / "dose_fake.csv", tmp_path / "gdsc", genes)
    expr = pd.read_csv(paths[0])
    ic = pd.read_csv(paths[1])
    assert list(ic.columns) == ["COSMIC_ID", "Drug_1_IC50", "Drug_5_IC50"]
    assert ic.set_index("COSMIC_ID").loc[2003, "Drug_5_IC50"] == pytest.approx(-2.0)   # repeated pair averaged
    # lines with a response, first occurrence of the duplicated id 2002, genes in mutation order (GAPDH dropped)
    assert expr["COSMIC_ID"].tolist() == [2001, 2002, 2003]
    assert list(expr.columns[3:]) == ["JAK2", "BRAF", "KRAS", "TP53", "EGFR", "FLT3"]
    rma = pd.read_csv(FIX / "raw" / "rma_fake.txt", sep="\t")
    np.testing.assert_allclose(expr.loc[1, "KRAS"], rma.loc[2, "DATA.2002"])
    # the built tables load through the dataset (genes 5 of the 6 kept)
    ds = Gdsc(data_dir=tmp_path, d=5, test_pool=1, public_pool=1)
    assert ds.subsets() == ["Drug_1", "Drug_5"] and ds.n_rows("Drug_1") == 3


def test_builder_rejects_missing_gene(tmp_path):
    from dpexp.families.gdsc.datasets.gdsc import build_expression_table

    rma = pd.DataFrame({"GENE_SYMBOLS": ["JAK2"], "DATA.1": [1.0]})
    with pytest.raises(UserError, match="lacks genes"):
        build_expression_table(rma, None)
