"""wpc: the probabilistic c-index and its exact null standard deviation (checked against all permutations)."""

import itertools

import numpy as np
import pytest
from scipy import special

from dpexp.families.gdsc.metrics import WPC, pc_index, pc_null_sd, standardised_pc
from dpexp.types import Output, Split


def brute_pc(p, y, sd):
    tot, cnt = 0.0, 0
    for i in range(len(y)):
        for j in range(i + 1, len(y)):
            q = 0.5 * (1 + special.erf((y[i] - y[j]) / (2 * sd)))
            tot += q if p[i] > p[j] else (1 - q if p[i] < p[j] else 0.5)
            cnt += 1
    return tot / cnt


def test_pc_index_matches_pairwise_definition_with_ties():
    rng = np.random.default_rng(0)
    y = rng.normal(size=9)
    p = np.round(rng.normal(size=9), 1)
    p[3] = p[5]                                        # a tie in the predictions scores 1/2
    assert pc_index(p, y, 0.8) == pytest.approx(brute_pc(p, y, 0.8), abs=1e-12)
    assert pc_index(y, y, 1e-9) == pytest.approx(1.0)  # perfect order, tiny noise
    assert pc_index(-y, y, 1e-9) == pytest.approx(0.0)


@pytest.mark.parametrize("n", [3, 5, 7])
def test_null_sd_exact_over_all_permutations(n):
    rng = np.random.default_rng(n)
    y = rng.normal(size=n) * 2
    vals = np.array([pc_index(np.array(p, float), y, 0.9) for p in itertools.permutations(range(n))])
    assert vals.mean() == pytest.approx(0.5, abs=1e-12)
    assert pc_null_sd(y, 0.9) == pytest.approx(vals.std(), rel=1e-10)


def test_wpc_metric_uses_meta_sd_and_trials():
    rng = np.random.default_rng(1)
    y = rng.normal(size=40)
    preds = np.vstack([y + rng.normal(size=40), rng.normal(size=40)])
    X = np.zeros((40, 2))
    split = Split(X[:0], y[:0], X[:0], y[:0], X, y, {"y_sd": 1.3})
    v = WPC()(Output(predictions=preds), split)
    z = standardised_pc(preds, y, 1.3)
    assert v == pytest.approx(z.mean())
    assert z[0] > 3                      # informative predictions are several null sds above 1/2
    # cached response terms give the same value on a second algorithm's output
    assert WPC()(Output(predictions=preds), split) == pytest.approx(v)
    assert WPC()(Output(predictions=np.ones((1, 40))), split) == 0.0   # all ties: pc = 1/2
