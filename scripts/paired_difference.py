"""Paired per-repeat differences between curves of one results folder (docs/noise_aware.md §10.2).

    python scripts/paired_difference.py RESULTS_DIR [--metric spearman] [--pair "A|B" ...] [--markdown FILE]

For every (ε, requested n_private): the metric is averaged over subsets (drugs) within each repeat, then the
difference A − B is taken per repeat (every curve of a repeat sees the same split, so the difference removes the
split's variation) and reported as mean ± standard error over repeats, with how many repeats had A ≥ B.
Without ``--pair`` every label is compared with every other label that reads the same dataset variant.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dpexp.results import read_results  # noqa: E402


def repeat_means(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Mean of ``metric`` over subsets per (epsilon, requested n_private, repeat) × label."""
    d = df[df["metric"] == metric]
    keys = ["epsilon", "n_private_requested", "repeat"]
    return d.groupby([*keys, "label"])["value"].mean().unstack("label")


def paired(means: pd.DataFrame, a: str, b: str) -> pd.DataFrame:
    """Mean ± s.e. over repeats of A − B, and the count of repeats with A ≥ B, per (epsilon, n_private)."""
    diff = (means[a] - means[b]).dropna()
    g = diff.groupby(level=["epsilon", "n_private_requested"])
    return pd.DataFrame({"mean": g.mean(), "se": g.std(ddof=1) / np.sqrt(g.count()),
                         "a_ge_b": g.apply(lambda s: int((s >= 0).sum())), "repeats": g.count()})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results_dir", type=Path)
    ap.add_argument("--metric", default="spearman")
    ap.add_argument("--pair", action="append", default=[], help='"LABEL A|LABEL B" (repeatable)')
    ap.add_argument("--markdown", type=Path)
    args = ap.parse_args(argv)
    df = read_results(args.results_dir)
    means = repeat_means(df, args.metric)
    if args.pair:
        pairs = [tuple(p.split("|", 1)) for p in args.pair]
    else:
        ds = df.groupby("label")["dataset_params"].first()
        pairs = [(a, b) for a, b in itertools.combinations(means.columns, 2) if ds[a] == ds[b]]
    missing = sorted({x for p in pairs for x in p} - set(means.columns))
    if missing or any(len(p) != 2 for p in pairs):
        print(f"error: unknown labels {missing} (known: {list(means.columns)})", file=sys.stderr)
        return 2
    out = [f"{args.metric}: mean over subsets, then over repeats ({df['subset'].nunique()} subsets)", "",
           "| ε | n | " + " | ".join(means.columns) + " |", "|---|---|" + "---|" * len(means.columns)]
    for (eps, n), g in means.groupby(level=["epsilon", "n_private_requested"]):
        out.append(f"| {eps:g} | {n} | " + " | ".join(f"{g[c].mean():.4f}" for c in means.columns) + " |")
    for a, b in pairs:
        out += ["", f"{a} − {b} (paired per repeat):", "", "| ε | n | mean ± s.e. | repeats with A ≥ B |",
                "|---|---|---|---|"]
        for (eps, n), r in paired(means, a, b).iterrows():
            out.append(f"| {eps:g} | {n} | {r['mean']:+.4f} ± {r['se']:.4f} | {int(r['a_ge_b'])}/{int(r['repeats'])} |")
    text = "\n".join(out) + "\n"
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
