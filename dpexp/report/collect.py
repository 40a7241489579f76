"""Which experiments a report covers, and their figures.

An input is a results directory (``manifest.json`` + ``results.csv[.gz]``) or a folder whose direct sub-folders are
results directories (``results/``, ``results/fast/``; ``dpexp.results.find_results_dirs``).  Figures are looked up
where ``dpexp plot`` puts them by default (``dpexp.plotting.draw.figure_dir``: ``results/X`` -> ``figures/X``,
``results/fast/X`` -> ``figures/fast/X``, ``runs/X`` -> ``runs/figures/X``) or, with ``--figures DIR``, in
``DIR/X``; an experiment whose figures are missing, older than its results or drawn from other results is drawn
again with the same entry ``dpexp plot`` uses.  The images shown are copied into the report folder,
so the page keeps working when the folder is moved.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from dpexp.errors import UserError
from dpexp.results_table import ResultsTable

IMAGE_SUFFIXES = (".png", ".svg")          # shown in the page (PNG preferred)
LINK_SUFFIXES = (".pdf", ".svg", ".csv", ".md")  # linked beside the image when a file of the same stem exists
DRAW_FORMATS = "png,pdf"


@dataclass
class Figure:
    stem: str
    image: str                              # path relative to the report folder
    links: dict[str, str] = field(default_factory=dict)  # suffix -> path relative to the report folder
    #: a panelled figure's panels drawn alone (``options.panels``): panel name -> image, relative to the report
    panels: dict[str, str] = field(default_factory=dict)
    paper_panel: str | None = None          # the name of the panel to set beside the published figure
    metric: str | None = None               # the plot's metric (as in the config), to match the paper's values


@dataclass
class Experiment:
    slug: str                               # unique within the report; used for anchors and the figure folder
    results_dir: Path
    manifest: dict[str, Any]
    #: the results table while the page renders this experiment's section (``tables``), else None: the report
    #: holds one experiment's table at a time, held per metric (``ResultsTable``), so its memory is that of the
    #: largest table at about 40 bytes a row, and of one metric's rows at their full width
    table: ResultsTable | None
    has_results: bool = False               # False when the run has no results table yet
    problems: list[str] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    figure_source: str = ""                 # where the figures came from, in words
    #: the figures still to draw, from the table once it is read (``tables``): drawing and the page share one read
    pending: "DrawPlan | None" = None
    draw_error: str = ""                    # why its figures could not be drawn (none drawn)

    @property
    def name(self) -> str:
        return str(self.manifest.get("experiment") or self.results_dir.name)


def load_experiments(dirs: list[Path], report_dir: Path, figures_root: Path | None,
                     warn: Callable[[str], None], shown_as: Path | None = None, redraw: bool = False,
                     note: Callable[[str], None] | None = None) -> list[Experiment]:
    """Read every manifest, find the figures (or plan to draw them) and copy them into ``report_dir`` (a temporary
    folder that becomes ``shown_as``, the name used in messages).  The results tables are read later, one at a time
    (``tables``), and missing figures are drawn from them then.  ``redraw``: draw every experiment's figures
    (into ``figures_root``), as ``make figures`` does, saying so through ``note``, instead of looking for them."""
    from dpexp import results

    exps = []
    for d, slug in zip(dirs, _slugs(dirs)):
        try:
            manifest = json.loads((d / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise UserError(f"{d / 'manifest.json'}: not readable as JSON ({exc})") from None
        if not isinstance(manifest, dict):
            raise UserError(f"{d / 'manifest.json'}: not a dpexp manifest (expected a JSON object)")
        exp = Experiment(slug, d, manifest, None)
        try:
            results.results_file(d)
            exp.has_results = True
        except UserError:
            exp.problems.append(f"no results table yet (run status: {manifest.get('status', 'unknown')})")
        exps.append(exp)
    for exp in exps:
        if exp.has_results:
            _figures(exp, report_dir, figures_root, warn, shown_as or report_dir, redraw, note or warn)
    return exps


def tables(experiments: list[Experiment]) -> Iterator[Experiment]:
    """Each experiment with its results table in ``table`` (None without one), one at a time: the table is dropped
    before the next is read.  Figures still to draw are drawn from it first (``DrawPlan``)."""
    for exp in experiments:
        exp.table = ResultsTable.read(exp.results_dir) if exp.has_results else None
        try:
            if exp.pending is not None and exp.table is not None:
                plan, exp.pending = exp.pending, None
                plan.draw(exp, exp.table)
            yield exp
        finally:
            exp.table = None


@dataclass(frozen=True)
class DrawPlan:
    """Where an experiment's figures are drawn once its table is read, and where the report takes them from: plain
    data, so that the experiment can be rendered in another process (``page.render``'s ``jobs``)."""
    draw_dir: Path
    target: Path                            # the experiment's folder in the report
    report_dir: Path
    stems: tuple[str, ...]

    def draw(self, exp: Experiment, table: ResultsTable) -> None:
        """Draw the figures and take them; a drawing error is recorded in the experiment (``draw_error``, shown in
        its section and said by ``build_report``) so that one experiment's figure does not hide the others."""
        try:
            draw_figures(exp.results_dir, self.draw_dir, table)
        except Exception as exc:  # one experiment's figure must not hide the others; shown in its section
            msg = f"figures could not be drawn: {type(exc).__name__}: {exc}"
            exp.problems.append(msg)
            exp.draw_error = msg
            return
        exp.figure_source = f"drawn by `dpexp report` into {self.draw_dir}" if self.draw_dir != self.target else \
            "drawn by `dpexp report` (no up-to-date figures were found)"
        _take(exp, _images(self.draw_dir), list(self.stems), self.target, self.report_dir)


def _slugs(dirs: list[Path]) -> list[str]:
    """Folder names made safe and unique (``demo``, ``fast-demo`` when two inputs hold a ``demo``)."""
    safe = [re.sub(r"[^A-Za-z0-9_.-]+", "_", d.name).strip(".") or "experiment" for d in dirs]
    out = []
    for d, s in zip(dirs, safe):
        if safe.count(s) > 1:
            s = re.sub(r"[^A-Za-z0-9_.-]+", "_", d.parent.name).strip(".") + "-" + s
        while s in out:
            s += "_"
        out.append(s)
    return out


def expected_stems(manifest: dict[str, Any]) -> list[str]:
    """File stems ``dpexp plot`` gives the experiment's figures (``dpexp.plotting.draw.figure_stem``)."""
    from dpexp.plotting.draw import figure_stem

    plots = (manifest.get("config") or {}).get("plots") or [{}]
    return [figure_stem(manifest, i, len(plots), p.get("name")) for i, p in enumerate(plots)]


def figure_candidates(results_dir: Path, name: str, figures_root: Path | None) -> list[Path]:
    """The folder that may hold the figures of ``results_dir``: ``DIR/X`` with ``--figures DIR``, else the default
    of ``dpexp plot`` (``dpexp.plotting.draw.figure_dir``), so ``results/fast/X`` never borrows the figures of the
    full run ``results/X``."""
    from dpexp.plotting.draw import figure_dir

    if figures_root is not None:
        return [figures_root / results_dir.name]
    return [figure_dir(results_dir)]


def _images(folder: Path) -> dict[str, Path]:
    """stem -> image file (PNG preferred over SVG) in ``folder``."""
    out: dict[str, Path] = {}
    if folder.is_dir():
        for suffix in reversed(IMAGE_SUFFIXES):
            for p in sorted(folder.glob(f"*{suffix}")):
                if p.is_file():
                    out[p.stem] = p
    return out


def _figures(exp: Experiment, report_dir: Path, figures_root: Path | None, warn: Callable[[str], None],
             shown_as: Path, redraw: bool, note: Callable[[str], None]) -> None:
    """Find the experiment's up-to-date figures and take them (``_take``), or plan to draw them (``exp.pending``)."""
    from dpexp.plotting.draw import other_run
    from dpexp.results import results_file

    stems = expected_stems(exp.manifest)
    newest_result = results_file(exp.results_dir).stat().st_mtime
    folder, images, why = None, {}, ""
    for cand in [] if redraw else figure_candidates(exp.results_dir, exp.name, figures_root):
        imgs = _images(cand)
        if not imgs:
            continue
        missing = [s for s in stems if s not in imgs]
        if missing:
            why = why or f"{cand} lacks {', '.join(missing)}"  # the most specific folder's reason
            continue
        if min(imgs[s].stat().st_mtime for s in stems) < newest_result:
            why = why or f"the figures in {cand} are older than the results"
            continue
        source = other_run(cand, exp.manifest, exp.results_dir)
        if source is not None:
            why = why or f"the figures in {cand} were drawn from another run ({source})"
            continue
        folder, images = cand, imgs
        break
    target = report_dir / "figures" / exp.slug
    if folder is None:
        draw_dir = (figures_root / exp.results_dir.name) if figures_root is not None else target
        shown = draw_dir if draw_dir != target else shown_as / target.relative_to(report_dir)
        if redraw:
            note(f"{exp.name}: drawing its figures into {shown}")
        else:
            warn(f"{exp.name}: {why or 'no figures found'}; drawing them into {shown}")

        exp.pending = DrawPlan(draw_dir, target, report_dir, tuple(stems))
        return
    exp.figure_source = f"from {folder}"
    _take(exp, images, stems, target, report_dir)


def _take(exp: Experiment, images: dict[str, Path], stems: list[str], target: Path, report_dir: Path) -> None:
    """Copy the experiment's figures (``images``: stem -> image) into the report folder and list them."""
    # the experiment's figures only: a stale image of a plot since renamed or removed is not shown; the panels of
    # a panelled figure drawn alone go with it (linked, and the paper's panel beside the paper's values)
    plots = dict(zip(stems, (exp.manifest.get("config") or {}).get("plots") or [{}]))
    panel_of = {f"{stem}_{name}": (stem, name) for stem, plot in plots.items() for name in _panel_names(plot)}
    order = [s for s in stems if s in images] + sorted(s for s in images if s not in stems and s not in panel_of
                                                       and any(s.startswith(f"{e}_") for e in stems))
    target.mkdir(parents=True, exist_ok=True)
    for stem in order:
        src = images[stem]
        plot = plots.get(stem) or {}
        fig = Figure(stem, _copy(src, target, report_dir), metric=plot.get("metric"))
        for suffix in LINK_SUFFIXES:
            other = src.with_suffix(suffix)
            if other.is_file() and other != src:
                fig.links[suffix.lstrip(".")] = _copy(other, target, report_dir)
        for pstem, (owner, name) in panel_of.items():
            if owner == stem and pstem in images:
                fig.panels[name] = _copy(images[pstem], target, report_dir)
        fig.paper_panel = next((str(p.get("name")) for p in _panel_list(plot) if p.get("paper")
                                and str(p.get("name")) in fig.panels), None)
        exp.figures.append(fig)
    if not exp.figures:
        exp.problems.append("the plot command wrote no image")


def _panel_list(plot: dict[str, Any]) -> list[dict[str, Any]]:
    panels = (plot.get("options") or {}).get("panels") if isinstance(plot, dict) else None
    return [p for p in panels or [] if isinstance(p, dict) and p.get("name")]


def _panel_names(plot: dict[str, Any]) -> list[str]:
    """The panels a plot's config lists (``options.panels[].name``): each is also drawn alone as
    ``<stem>_<name>`` (dpexp/plotting/facets.py)."""
    return [str(p["name"]) for p in _panel_list(plot)]


def _copy(src: Path, target: Path, report_dir: Path) -> str:
    dst = target / src.name
    if src.resolve() != dst.resolve():
        shutil.copyfile(src, dst)
    return dst.relative_to(report_dir).as_posix()


def draw_figures(results_dir: Path, fig_dir: Path, table: ResultsTable | None = None) -> None:
    """Draw an experiment's figures with the function ``dpexp plot`` uses, so names and styles are the same
    (``table``: the experiment's table, already read)."""
    from dpexp.plotting.draw import draw_experiment

    draw_experiment(results_dir, fig_dir, list(DRAW_FORMATS.split(",")), table)
