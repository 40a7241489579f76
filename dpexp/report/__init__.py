"""``dpexp report``: one static HTML page for a reproduction (a set of results directories).

The page (``OUT/index.html``, images copied to ``OUT/figures/<experiment>/``) shows, for every experiment: its
figures, the privacy guarantee of every curve, the paper's reference values next to ours (``docs/paper_values.yaml``),
the summary tables of ``dpexp summarize`` and the provenance recorded in the manifest.  It needs no server and no
JavaScript, and the same inputs give the same bytes.

Concepts, one module each: :mod:`.collect` (which experiments, which figures), :mod:`.privacy` (the guarantee of each
curve), :mod:`.paper` (the papers' reference values and how to compute ours), :mod:`.page` (the HTML).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from dpexp.errors import UserError

MARKER = ".dpexp-report"  # identifies a folder this command wrote, so a rerun may replace it


def build_report(inputs: list[Path], out: Path, figures: Path | None = None, paper_values: Path | None = None,
                 title: str | None = None, warn=None, redraw: bool = False, note=None,
                 failed: list[str] | None = None, jobs: int = 1) -> Path:
    """Write the report for the results directories (or folders of them) in ``inputs`` to ``out``; return the
    index page.  ``figures``: where the figures are (and where missing ones are drawn); default: next to each
    results directory (``results/X`` -> ``figures/X``), drawing missing ones into the report folder.
    ``redraw``: draw every experiment's figures (into ``figures``) from the table the page reads, saying so through
    ``note``: ``dpexp plot`` and ``dpexp report`` in one read of each table (``make figures``).  ``failed``
    receives the names of the experiments whose figures could not be drawn (the page says why).  ``jobs``: the
    worker processes that read, draw and render the experiments (one table at a time in each); the page and the
    figures are the same bytes for any number.

    Every check that can fail on user input runs before anything is written; the report is built in a temporary
    sibling folder and moved into place at the end, so ``out`` is never half-written.
    """
    from dpexp.report import collect, page, paper
    from dpexp.results import find_results_dirs

    warn = warn or (lambda msg: print(f"warning: {msg}", file=sys.stderr))
    dirs = find_results_dirs(inputs)
    refs = paper.load(paper_values)
    _check_out(out)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        experiments = collect.load_experiments(dirs, tmp, figures, warn, shown_as=out, redraw=redraw, note=note)
        html = page.render(experiments, refs, title=title or "dpexp report", inputs=inputs, jobs=jobs)
        for e in experiments:
            if e.draw_error:
                warn(f"{e.name}: {e.draw_error}")
        (tmp / "index.html").write_text(html, encoding="utf-8")
        (tmp / MARKER).write_text("written by `dpexp report`; the whole folder is replaced on the next run\n")
        _swap(tmp, out)
        if failed is not None:
            failed += [e.name for e in experiments if e.draw_error]
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out / "index.html"


def _check_out(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise UserError(f"{out}: exists and is not a directory; choose another --out")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).exists():
        raise UserError(f"{out}: exists, is not empty and was not written by `dpexp report`; "
                        "choose another --out or remove it")


def _swap(tmp: Path, out: Path) -> None:
    """Replace ``out`` by ``tmp`` (two renames; the old report is removed only once the new one is in place)."""
    old = out.parent / f".{out.name}.old-{os.getpid()}"
    if out.exists():
        os.replace(out, old)
    os.replace(tmp, out)
    shutil.rmtree(old, ignore_errors=True)
