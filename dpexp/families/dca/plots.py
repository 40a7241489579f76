"""Plot kinds of the distributed DP learning experiments (Heikkilä et al. 2017); they read only the results table.

* ``dca_accuracy``: Fig. 2 / Fig. 3 — a metric against ε on a log axis, one line per method; defaults to the
  paper's Fig. 2 form (median with interquartile bars); Fig. 3 sets ``center: mean, error: std``.
* ``dca_table``: Table 1 — protocol wall time per (N, d) as a Markdown/CSV table (``<stem>.md``, ``<stem>.csv``)
  and a log–log figure of seconds vs N per d, with the paper's Spark times dashed for comparison.
* ``dca_noise_factor``: Fig. 1b — the extra noise variance factor N / (N − T − 1) of Theorem 1 against N for several
  T.  It is a closed form of N and T, so it is drawn from the formula for N up to the larger of ``options.n_max``
  and the largest ``n_private`` of the results (a ``--fast`` run with a smaller grid draws the same figure).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import Field

from dpexp.plotting import style
from dpexp.plotting.base import PlotOptions, finish_plot, new_figure, title_of
from dpexp.plotting.curve import CurveOptions, curve, reads_metric
from dpexp.plotting.looks import Looks
from dpexp.registry import register_plot
from dpexp.results import to_markdown

#: Table 1 of the paper: seconds of the Spark implementation, M = 10, rows d, columns N = 1e2 .. 1e5.
PAPER_TABLE1: dict[int, dict[int, float]] = {
    10: {100: 1.72, 1000: 1.89, 10_000: 2.99, 100_000: 8.58},
    100: {100: 2.03, 1000: 2.86, 10_000: 12.36, 100_000: 65.64},
    1000: {100: 3.43, 1000: 10.56, 10_000: 101.2, 100_000: 610.55},
    10_000: {100: 15.30, 1000: 84.95, 10_000: 994.96, 100_000: 1592.29},
}


class AccuracyOptions(CurveOptions):
    center: str = Field("median", pattern="^(mean|median)$")
    error: str = Field("iqr", pattern="^(std|sem|iqr|none)$")
    logx: bool = True


@register_plot(options=AccuracyOptions, reads=reads_metric)
def dca_accuracy(df: pd.DataFrame, spec: Any, manifest: dict[str, Any], out_stem: Path,
                 formats: list[str]) -> list[Path]:
    """Fig. 2/3: metric vs ε (log axis), median ± IQR by default (see module docstring)."""
    opts = AccuracyOptions.model_validate(spec.options)
    upd = {"options": opts.model_dump(), "x": spec.x or "epsilon"}
    return curve(df, spec.model_copy(update=upd), manifest, out_stem, formats)


class TableOptions(PlotOptions):
    paper: bool = Field(True, description="draw the paper's Spark times (Table 1) for comparison")


def table1_frame(df: pd.DataFrame, metric: str = "seconds") -> pd.DataFrame:
    """Mean of ``metric`` over repeats per (label, N = n_private, d): long frame with columns label, N, d, value."""
    d = df[df["metric"] == metric]
    g = d.groupby(["label", "n_private", "d"], sort=True, observed=True)["value"].mean().reset_index()
    return g.rename(columns={"n_private": "N"})


@register_plot(options=TableOptions)
def dca_table(df: pd.DataFrame, spec: Any, manifest: dict[str, Any], out_stem: Path,
              formats: list[str]) -> list[Path]:
    """Table 1 as a table (Markdown + CSV) and a figure (see module docstring)."""
    opts = TableOptions.model_validate(spec.options)
    metric = spec.metric or "seconds"
    t = table1_frame(df, metric)
    out_stem.parent.mkdir(parents=True, exist_ok=True)
    blocks = []
    for label, g in t.groupby("label", sort=False, observed=True):
        wide = g.pivot(index="d", columns="N", values="value").sort_index()
        wide.columns = [f"N={int(c)}" for c in wide.columns]
        wide = wide.reset_index()
        if opts.paper:
            for col in list(wide.columns[1:]):
                n = int(col[2:])
                paper = [PAPER_TABLE1.get(int(dd), {}).get(n, np.nan) for dd in wide["d"]]
                wide[f"speed-up {col}"] = np.asarray(paper) / wide[col].to_numpy(float)
        blocks.append(f"### {label}: {metric} (mean over repeats)\n\n" + to_markdown(wide))
    md = out_stem.with_suffix(".md")
    md.write_text(f"# {title_of(spec, manifest)}\n\n" + "\n".join(blocks))
    csv = out_stem.with_suffix(".csv")
    t.to_csv(csv, index=False)
    fig, ax = new_figure(opts.size or "column")
    looks = Looks(df, manifest)
    ds = sorted(int(v) for v in t["d"].unique())
    col = {dd: style.PALETTE[i % len(style.PALETTE)] for i, dd in enumerate(ds)}
    styles = [("-", "o"), (":", "s"), ("-.", "^"), ("--", "v")]
    labels = list(dict.fromkeys(t["label"]))
    for (label, dd), g in t.groupby(["label", "d"], sort=False, observed=True):
        g = g.sort_values("N")
        ls, mk = styles[labels.index(label) % len(styles)]
        ax.plot(g["N"], g["value"], linestyle=ls, marker=mk, color=col[int(dd)])
    if opts.paper:
        for dd, row in PAPER_TABLE1.items():
            if dd in col:
                ns = sorted(row)
                ax.plot(ns, [row[n] for n in ns], linestyle="--", color=col[dd], linewidth=0.9, alpha=0.6)
    # legend: colour = d, line style = method (and dashed = the paper's cluster)
    for dd in ds:
        ax.plot([], [], color=col[dd], linewidth=4, label=f"d = {dd}")
    for i, label in enumerate(labels):
        ls, mk = styles[i % len(styles)]
        ax.plot([], [], linestyle=ls, marker=mk, color="black", label=f"{looks.name(label)} (this machine)")
    if opts.paper:
        ax.plot([], [], linestyle="--", color="grey", label="paper, Spark cluster (no encryption)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("clients N (count)")
    ax.set_ylabel("wall time of one DCA round (s)" if metric == "seconds" else metric)
    ax.grid(alpha=0.3, which="both")
    return [md, csv] + finish_plot(fig, spec, manifest, out_stem, formats, looks=looks,
                                   subtitle="in-process back-end on one machine vs the paper's Spark cluster")


class NoiseFactorOptions(PlotOptions):
    T: list[int] = Field(default_factory=lambda: [0, 1, 5, 10, 50], description="colluding/dropping clients")
    n_max: int = Field(10_000, ge=10, description="largest N when the results do not span several N")


@register_plot(options=NoiseFactorOptions)
def dca_noise_factor(df: pd.DataFrame, spec: Any, manifest: dict[str, Any], out_stem: Path,
                     formats: list[str]) -> list[Path]:
    """Fig. 1b: N/(N − T − 1) vs N (closed form, Theorem 1)."""
    opts = NoiseFactorOptions.model_validate(spec.options)
    n_max = opts.n_max
    if "n_private" in df.columns and len(df):
        seen = pd.to_numeric(df["n_private"], errors="coerce").max()
        if np.isfinite(seen):
            n_max = max(n_max, int(seen))
    fig, ax = new_figure(opts.size or "column")
    for i, T in enumerate(opts.T):
        n = np.unique(np.geomspace(T + 2, n_max, 200).astype(int))
        n = n[n - T - 1 >= 1]
        ax.plot(n, n / (n - T - 1), label=f"T = {T}", color=style.PALETTE[i % len(style.PALETTE)],
                linestyle=style.LINESTYLES[i % len(style.LINESTYLES)])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("clients N (count)")
    ax.set_ylabel("noise variance vs trusted aggregator, N/(N − T − 1)")
    ax.grid(alpha=0.3, which="both")
    return finish_plot(fig, spec, manifest, out_stem, formats,
                       title=spec.title or "Extra noise factor of the distributed Gaussian mechanism (Fig. 1b)",
                       subtitle="closed form of Theorem 1; T: colluding or dropped-out clients")


