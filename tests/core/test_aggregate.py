"""``results.group_nanquantiles`` against ``np.nanquantile`` group by group, and ``aggregate``'s quartiles against
the per-group call it replaced: two code paths, so compared at a stated tolerance (rtol 1e-14, atol 1e-15 for values of order 1: the same few
floating-point steps; a different method or neighbour would be off by far more), never by bits."""
import numpy as np
import pandas as pd
import pytest

from dpexp.results import aggregate, group_nanquantiles


def _groups(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, int]:
    sizes = [0, 1, 2, 3, 4, 5, 7, 8, 50, 1, 2]           # every small size, and groups with no finite value
    codes, values = [], []
    for g, k in enumerate(sizes):
        v = rng.normal(size=k).round(rng.integers(0, 3))  # rounding makes ties
        if k >= 3:
            v[rng.integers(0, k)] = np.nan
        if k >= 4:
            v[rng.integers(0, k)] = -0.0
        codes += [g] * k
        values += list(v)
    codes.append(len(sizes))                              # a group whose only value is NaN
    values.append(np.nan)
    perm = rng.permutation(len(codes))                    # groups interleaved, as rows come
    return np.array(codes)[perm], np.array(values, dtype=float)[perm], len(sizes) + 1


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_group_nanquantiles_is_numpys_linear_method(seed):
    codes, values, n_groups = _groups(np.random.default_rng(seed))
    qs = (0.0, 0.25, 0.5, 0.75, 1.0, 0.1)
    got = group_nanquantiles(codes, values, n_groups, qs)
    for qi, q in enumerate(qs):
        for g in range(n_groups):
            v = values[codes == g]
            want = np.nanquantile(v, q) if np.isfinite(v).any() else np.nan
            np.testing.assert_allclose(got[qi][g], want, rtol=1e-14, atol=1e-15, equal_nan=True, err_msg=f"{q} {g} {v}")


def test_group_nanquantiles_with_no_finite_value_at_all():
    out = group_nanquantiles(np.array([0, 1, 1]), np.array([np.nan] * 3), 2, (0.25,))
    assert np.isnan(out[0]).all() and out[0].shape == (2,)


def test_aggregate_quartiles_are_the_per_group_nanquantile():
    rng = np.random.default_rng(5)
    rows = []
    for label in ["a", "b"]:
        for n in [100, 200, 300]:
            for rep in range(7):
                for subset in ["s1", "s2"]:
                    value = np.nan if (label == "b" and n == 300) else rng.normal()
                    if label == "a" and n == 200 and rep == 3:
                        value = np.nan
                    rows.append(dict(experiment="e", dataset="d", dataset_params="", algorithm=label,
                                     label=label, metric="m", subset=subset, n_private=n, epsilon=1.0, repeat=rep,
                                     value=value))
    df = pd.DataFrame(rows)
    for col in ["n_public", "n_test", "delta", "d"]:
        df[col] = 0
    from dpexp.results import GRID_COLUMNS, GROUP_COLUMNS
    for col in GRID_COLUMNS + GROUP_COLUMNS:
        if col not in df:
            df[col] = 0
    out = aggregate(df, "n_private", "m")
    per_repeat = df.groupby(["label", "n_private", "repeat"])["value"].mean()
    for rec in out.itertuples():
        v = per_repeat.loc[(rec.label, rec.n_private)].to_numpy()
        for q, got in ((0.25, rec.q25), (0.75, rec.q75)):
            want = np.nanquantile(v, q) if np.isfinite(v).any() else np.nan
            np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-15, equal_nan=True)
    assert list(out.columns).index("q25") == list(out.columns).index("median") + 1
    assert list(out.columns)[list(out.columns).index("q75") + 1] == "repeats"
