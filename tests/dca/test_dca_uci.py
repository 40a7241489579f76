"""UCI loaders of Heikkilä et al. (2017) Fig. 2 on tiny made-up fixtures (never the real files)."""

from __future__ import annotations

import numpy as np
import pytest

from dpexp.errors import DataNotFoundError, UserError
from dpexp.families.dca.datasets.uci import Abalone, RedWine, WhiteWine, scale_range
from dpexp.types import Sizes

HEADER = ('"fixed acidity";"volatile acidity";"citric acid";"residual sugar";"chlorides";"free sulfur dioxide";'
          '"total sulfur dioxide";"density";"pH";"sulphates";"alcohol";"quality"')


def write_wine(folder, name, n=40, seed=0):
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    rows = [HEADER] + [";".join(f"{v:.4f}" for v in rng.uniform(0, 20, 11)) + f";{rng.integers(3, 9)}"
                       for _ in range(n)]
    (folder / name).write_text("\n".join(rows) + "\n")


def write_abalone(folder, n=40, seed=0):
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    sexes = rng.choice(["M", "F", "I"], n)
    rows = [f"{s}," + ",".join(f"{v:.4f}" for v in rng.uniform(0, 1, 7)) + f",{rng.integers(1, 29)}"
            for s in sexes]
    (folder / "abalone.data").write_text("\n".join(rows) + "\n")
    return sexes


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    write_wine(tmp_path / "wine_quality", "winequality-red.csv", 40, 1)
    write_wine(tmp_path / "wine_quality", "winequality-white.csv", 50, 2)
    sexes = write_abalone(tmp_path / "abalone", 45, 3)
    monkeypatch.setenv("DPEXP_DATA_DIR", str(tmp_path))
    return tmp_path, sexes


def test_scale_range_centres_and_sets_range():
    A = np.array([[0.0, 5.0], [2.0, 5.0], [10.0, 5.0]])
    S = scale_range(A, 10.0)
    np.testing.assert_allclose(S.mean(0), 0.0, atol=1e-12)
    np.testing.assert_allclose(S[:, 0].max() - S[:, 0].min(), 10.0)
    np.testing.assert_array_equal(S[:, 1], 0.0)            # constant column → 0, no division by zero


@pytest.mark.parametrize("cls,n,d", [(RedWine, 40, 11), (WhiteWine, 50, 11), (Abalone, 45, 8)])
def test_loaders_preprocess_and_split(data_dir, cls, n, d):
    ds = cls()
    ds.check()
    X, y = ds.table()
    assert X.shape == (n, d) and y.shape == (n,)
    assert ds.n_rows("all") == n
    np.testing.assert_allclose(X.max(0) - X.min(0), 10.0, rtol=1e-12)
    np.testing.assert_allclose(y.max() - y.min(), 10.0, rtol=1e-12)
    np.testing.assert_allclose(X.mean(0), 0.0, atol=1e-12)
    s = ds.split("all", Sizes(20, 0, 10, 20, 0, 10), np.random.default_rng(0))
    assert s.X_private.shape == (20, d) and s.X_test.shape == (10, d) and s.X_public.shape == (0, d)
    assert s.meta["bound_x"] == 7.5 and s.meta["bound_y"] == 7.5
    rows = {tuple(r) for r in s.X_private.round(9)}
    assert not rows & {tuple(r) for r in s.X_test.round(9)}
    s_all = ds.split("all", Sizes(-1, 0, 10, -1, 0, 10), np.random.default_rng(0))
    assert s_all.X_private.shape[0] == n - 10
    np.testing.assert_array_equal(s_all.X_private[:20], s.X_private)      # prefixes nest within a repeat
    with pytest.raises(UserError, match="too many"):
        ds.split("all", Sizes(n, 0, 10, n, 0, 10), np.random.default_rng(0))


def test_abalone_sex_coding(data_dir):
    _, sexes = data_dir
    X, _ = Abalone().table()
    male = sexes == "M"
    assert len(np.unique(X[male, 0])) == 1 and len(np.unique(X[~male, 0])) == 1
    assert X[male, 0][0] < X[~male, 0][0]                 # 0 = male, 1 = otherwise (before centring/scaling)


def test_missing_file_names_path_and_hint(tmp_path, monkeypatch):
    monkeypatch.setenv("DPEXP_DATA_DIR", str(tmp_path))
    with pytest.raises(DataNotFoundError, match="dpexp data download redwine"):
        RedWine().check()


def test_download_helpers_declare_url_and_sha256():
    for cls in (RedWine, WhiteWine, Abalone):
        for fname, (url, sha) in cls.files.items():
            assert url.startswith("https://archive.ics.uci.edu/") and url.endswith(fname)
            assert len(sha) == 64 and int(sha, 16) >= 0
