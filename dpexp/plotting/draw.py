"""Draw every figure of one experiment from its results directory (results table + manifest only).

Used by ``dpexp plot`` and by ``dpexp report`` (which draws missing figures), so both name and style figures the
same way.
"""

from __future__ import annotations

from pathlib import Path

FORMATS = ("png", "pdf", "svg")


def figure_stem(manifest: dict, index: int, n_plots: int, name: str | None) -> str:
    """File stem of the ``index``-th plot: its ``name``, else the experiment's name (numbered when several)."""
    experiment = str(manifest.get("experiment", ""))
    return str(name or (experiment if n_plots == 1 else f"{experiment}_{index + 1}"))


def draw_experiment(results_dir: Path, fig_dir: Path, formats: list[str]) -> list[Path]:
    """Draw the plots the experiment's config lists (one default curve when it lists none) into ``fig_dir``."""
    from dpexp import registry, results
    from dpexp.spec import PlotSpec

    manifest = results.read_manifest(Path(results_dir))
    df = results.read_results(Path(results_dir))
    plots = [PlotSpec.model_validate(p) for p in manifest.get("config", {}).get("plots") or []] or [PlotSpec()]
    written: list[Path] = []
    for i, p in enumerate(plots):
        fn = registry.get("plot", p.kind)
        written += fn(df, p, manifest, Path(fig_dir) / figure_stem(manifest, i, len(plots), p.name), formats)
    return written
