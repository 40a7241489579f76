"""The guarantee of each curve: per-row columns first (the privacy issue's `guarantee`, `*_spent`, `privacy_note`),
the manifest's declaration otherwise; non-DP curves are marked."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpexp.formatting import fmt, signed
from dpexp.plotting.privacy import curve_privacy

MANIFEST = {"algorithms": [
    {"name": "lr", "label": "LR", "private": False, "formally_dp": True, "neighbouring": None,
     "privacy_spent": [{"epsilon": 0.0, "delta": 0.0}]},
    {"name": "noisy_stats", "label": "NS", "private": True, "formally_dp": True, "neighbouring": "replace-one",
     "privacy_spent": [{"epsilon": 1.0, "delta": 0.0}, {"epsilon": 8.0, "delta": 0.0}]},
    {"name": "dpgd_approx", "label": "GD", "private": True, "formally_dp": True, "neighbouring": "replace-one",
     "privacy_spent": [{"epsilon": 1.0, "delta": 2.0 ** -30, "rho": 0.0115}]},
    {"name": "ta", "label": "TA", "private": True, "formally_dp": True, "neighbouring": "replace-one",
     "privacy_spent": [{"epsilon": 1.0, "delta": 1e-4}]},
    {"name": "oi_mos", "label": "OI", "private": True, "formally_dp": False, "neighbouring": "replace-one",
     "privacy_spent": [{"epsilon": 16.0, "delta": 0.0}]},
    {"name": "split_search", "label": "split", "private": True, "formally_dp": True, "neighbouring": "replace-one",
     "params": {"p1": 0.1}, "privacy_spent": [{"epsilon": 2.0, "delta": 0.0}]},
    {"name": "split_search", "label": "split", "private": True, "formally_dp": True, "neighbouring": "replace-one",
     "params": {"p1": 0.2}, "privacy_spent": [{"epsilon": 2.0, "delta": 0.0}]},
]}


def test_manifest_fallback():
    c = {p.label: p for p in curve_privacy(None, MANIFEST)}
    assert list(c) == ["LR", "NS", "GD", "TA", "OI", "split"]  # config order, one entry per label
    assert c["LR"].not_dp and "non-private" in c["LR"].note and c["LR"].epsilon == ""
    assert (c["NS"].guarantee, c["NS"].epsilon, c["NS"].delta, c["NS"].neighbouring) == ("pure", "1, 8", "0",
                                                                                         "replace-one")
    assert c["GD"].guarantee == "zcdp" and c["GD"].rho == "0.0115" and c["GD"].delta == fmt(2.0 ** -30)
    assert c["TA"].guarantee == "approx" and c["TA"].words == "(ε, δ)-DP" and not c["TA"].not_dp
    assert c["OI"].not_dp and "not formally DP" in c["OI"].note
    assert c["split"].guarantee == "pure" and c["split"].algorithms == "split_search"
    assert {p.source for p in c.values()} == {"manifest"}


def test_row_columns_win_over_the_manifest():
    rows = []
    for label, algo, g, eps, note in (("NS", "noisy_stats", "pure", 1.0, ""), ("NS", "noisy_stats", "pure", 8.0, ""),
                                      ("TA", "ta", "none", np.nan, "clipping σ from private rows")):
        rows.append(dict(label=label, algorithm=algo, guarantee=g, epsilon_spent=eps,
                         delta_spent=0.0 if g == "pure" else np.nan, rho_spent=np.nan, privacy_note=note, error=""))
    df = pd.DataFrame(rows)
    c = {p.label: p for p in curve_privacy(df, MANIFEST)}
    assert c["TA"].not_dp and c["TA"].note == "clipping σ from private rows" and c["TA"].source == "results.csv"
    assert c["NS"].epsilon == "1, 8" and c["NS"].rho == "" and c["NS"].source == "results.csv"
    assert c["LR"].source == "manifest"  # a label without rows (none in this table) falls back


def test_formatting():
    assert [fmt(v) for v in (0.123456, 10721.0, 1592.29, -2.5, float("inf"), float("nan"))] == \
        ["0.1235", "10,721", "1592", "−2.5", "∞", ""]
    assert [signed(v) for v in (0.1, -0.1, 0.0)] == ["+0.1", "−0.1", "0"]


def test_titles_are_filled_from_the_resolved_config():
    """Config titles name values through placeholders (tests/core/test_figures.py); the page shows the values."""
    from dpexp.report.page import _title

    m = {"title": "GDSC, d = {d}, ε = {epsilon}", "config": {"privacy": {"epsilon": [1.0, 2.0]},
                                                            "datasets": [{"params": {"d": 10}}]}}
    assert _title(m) == "GDSC, d = 10, ε = 1, 2"
