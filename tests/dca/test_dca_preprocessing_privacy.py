"""The preprocessing rule on the DCA UCI data (docs/privacy.md "Preprocessing"): the paper's centring and range
scaling over the whole file reads the private rows unpaid — every row says guarantee ``none`` with the reason;
declared public ranges map each value row by row and the algorithm's guarantee stands."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from dpexp.errors import UserError
from dpexp.families.dca.datasets.uci import FILE_SCALING_NOTE, Abalone, RedWine, scale_declared
from dpexp.results import read_results

HEADER = ('"fixed acidity";"volatile acidity";"citric acid";"residual sugar";"chlorides";"free sulfur dioxide";'
          '"total sulfur dioxide";"density";"pH";"sulphates";"alcohol";"quality"')
WINE_RANGES = {c: (0.0, 20.0) for c in RedWine.columns[:-1]} | {"quality": (0.0, 10.0)}


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    rng = np.random.default_rng(1)
    (tmp_path / "wine_quality").mkdir()
    rows = [HEADER] + [";".join(f"{v:.4f}" for v in rng.uniform(0, 20, 11)) + f";{rng.integers(3, 9)}"
                       for _ in range(60)]
    (tmp_path / "wine_quality" / "winequality-red.csv").write_text("\n".join(rows) + "\n")
    monkeypatch.setenv("DPEXP_DATA_DIR", str(tmp_path))
    return tmp_path


def _ranges_yaml(ranges: dict) -> str:
    return "{" + ", ".join(f'"{c}": [{lo}, {hi}]' for c, (lo, hi) in ranges.items()) + "}"


def test_file_scaling_is_none_with_the_note_and_declared_ranges_keep_the_guarantee(cli, data_dir, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(textwrap.dedent(f"""\
        name: dca_pre
        seed: 5
        repeats: 2
        datasets:
          - name: redwine
          - name: redwine
            params: {{ranges: {_ranges_yaml(WINE_RANGES)}}}
        sizes: {{n_private: 30, n_public: 0, n_test: 10}}
        privacy:
          epsilon: 1.0
          delta: 1.0e-4
        algorithms:
          - {{name: ta, label: TA}}
        metrics: [mae]
        """))
    r = cli(["run", cfg, "--out", tmp_path / "o", "--jobs", "1", "-q"])
    assert r.exit_code == 0, r.output
    df = read_results(tmp_path / "o")
    declared_rows = df.dataset_params.fillna("").str.contains("ranges")
    paper, declared = df[~declared_rows], df[declared_rows]
    assert len(paper) == len(declared) > 0
    assert (paper.guarantee == "none").all() and paper.privacy_note.str.startswith(f"not DP: {FILE_SCALING_NOTE}").all()
    assert (declared.guarantee == "approx").all() and (declared.epsilon_spent == 1.0).all()
    assert not declared.privacy_note.str.contains("whole file").any()


def test_declared_ranges_are_row_local_centred_and_clipped(data_dir):
    ds = RedWine(ranges=WINE_RANGES)
    assert not ds.preprocessing().leaks and RedWine().preprocessing().leaks
    X, y = ds.table()
    raw = np.loadtxt(data_dir / "wine_quality" / "winequality-red.csv", delimiter=";", skiprows=1)
    np.testing.assert_allclose(X, np.clip((raw[:, :11] - 10.0) * 0.5, -5, 5), rtol=1e-12)
    np.testing.assert_allclose(y, np.clip(raw[:, 11] - 5.0, -5, 5), rtol=1e-12)
    # row-local: one row made extreme changes no other row (the paper's scaling moves them all)
    A = raw[:, :11].copy()
    B = A.copy()
    B[0] = 1e6
    lo_hi = [WINE_RANGES[c] for c in RedWine.columns[:-1]]
    np.testing.assert_array_equal(scale_declared(A, lo_hi, 10.0)[1:], scale_declared(B, lo_hi, 10.0)[1:])
    from dpexp.families.dca.datasets.uci import scale_range
    assert not np.array_equal(scale_range(A, 10.0)[1:], scale_range(B, 10.0)[1:])


def test_ranges_must_name_every_column(data_dir, cli, tmp_path):
    with pytest.raises(UserError, match=r"every column .*missing \['quality'\]"):
        RedWine(ranges={c: (0.0, 20.0) for c in RedWine.columns[:-1]}).table()
    with pytest.raises(UserError, match=r"unknown \['Rings'\]"):
        Abalone(ranges={c: (0.0, 1.0) for c in Abalone.columns} | {"Rings": (0.0, 30.0)}).declared_ranges()
    with pytest.raises(ValueError, match="finite lo < hi"):
        RedWine(ranges={"pH": (4.0, 3.0)})
