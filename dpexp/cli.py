"""Command-line interface (thin click group; heavy imports happen inside commands so ``--help`` is fast).

User errors (bad config, missing data, bad arguments) exit with code 2 and one line on stderr, no traceback.
``dpexp run`` exits 1 when some cells failed (they are recorded), 130 when interrupted (Ctrl-C, SIGINT), 143 when
terminated (SIGTERM: a batch scheduler's cancel or time limit), 3 when a write finds no space (disk full, a quota
or a file-size limit), 0 otherwise; the interruptions and a full disk print one line and keep the finished chunks,
so the same command resumes.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
import warnings
from pathlib import Path

import click

from dpexp.version import __version__

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, the shell convention
EXIT_TERMINATED = 143   # 128 + SIGTERM: a scheduler (SLURM, PBS, kill) can tell its own cancel from a Ctrl-C
EXIT_DISK_FULL = 3      # no space left on the device, a disk quota or a file-size limit (ENOSPC, EDQUOT, EFBIG)
_NO_SPACE = {errno.ENOSPC, errno.EFBIG} | ({errno.EDQUOT} if hasattr(errno, "EDQUOT") else set())


class Terminated(KeyboardInterrupt):
    """Raised in the main thread on SIGTERM, so a terminated run unwinds exactly like a Ctrl-C (executors stopped,
    finished chunks kept, no half-written file) instead of dying mid-write."""


def _on_sigterm(_signum: int, _frame: object) -> None:
    raise Terminated()


def _fail(msg: str) -> None:
    click.echo(f"error: {msg}", err=True)
    sys.exit(EXIT_USER_ERROR)


def _one_line_warning(message, category, filename, lineno, line=None) -> str:  # noqa: ANN001
    """dpexp's own warnings (``UserWarning`` and below) as one line ``warning: ...`` on stderr; others as Python
    prints them."""
    if issubclass(category, UserWarning):
        return f"warning: {message}\n"
    return _FORMATWARNING(message, category, filename, lineno, line)


_FORMATWARNING = warnings.formatwarning


class _Group(click.Group):
    """Turns ``UserError`` into exit code 2 with one line; prints warnings as one line each."""

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        from dpexp.errors import UserError

        try:
            previous = signal.signal(signal.SIGTERM, _on_sigterm)
        except ValueError:  # not the main thread (e.g. embedded): leave signals alone
            previous = None
        formatwarning, warnings.formatwarning = warnings.formatwarning, _one_line_warning
        try:
            return super().invoke(ctx)
        except UserError as exc:
            _fail(str(exc))
        except OSError as exc:
            if exc.errno in _NO_SPACE:   # disk full, quota or file-size limit: its own code, one line
                where = f" writing {exc.filename}" if exc.filename else ""
                click.echo(f"error: no space left{where}: {exc.strerror or exc}; free space (or raise the limit) "
                           "and rerun the same command: finished chunks are kept and resumed", err=True)
                sys.exit(EXIT_DISK_FULL)
            # an output path that cannot be created or written (a file in the way, no permission, disk full) is the
            # user's to fix: one line, not a traceback; OS errors without a path are not ours to judge
            if exc.filename is None:
                raise
            _fail(f"{exc.filename}: {exc.strerror or exc}")
        except KeyboardInterrupt as exc:
            # click would print 'Aborted!' and exit 1, which README reserves for 'some cells failed'
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not break the clean exit
            hint = "; finished chunks are kept, rerun the same command to resume" if ctx.invoked_subcommand == "run" else ""
            what = "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"
            click.echo(f"\n{what}{hint}", err=True)
            sys.exit(EXIT_TERMINATED if isinstance(exc, Terminated) else EXIT_INTERRUPTED)
        finally:
            warnings.formatwarning = formatwarning
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)


def _set_data_dir(ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value:
        os.environ["DPEXP_DATA_DIR"] = str(Path(value).resolve())
    return value


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dpexp")
@click.option("--data-dir", type=click.Path(file_okay=False), callback=_set_data_dir, expose_value=False,
              is_eager=True, help="Data directory (overrides $DPEXP_DATA_DIR; default ./data then ../shared/data).")
def main() -> None:
    """dpexp: reproduce and extend experiments on differentially private linear regression.

    \b
    Typical use:
      dpexp validate configs/demo.yaml
      dpexp run configs/demo.yaml --out results/demo --jobs 2
      dpexp plot results/demo                 (figures/demo; `dpexp plot results/` plots every experiment)
      dpexp summarize results/demo --markdown results/demo/summary.md
    """


@main.command()
@click.argument("configs", metavar="CONFIG...", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--out", "out", type=click.Path(file_okay=False), default=None,
              help="Output directory of one config (default results/<experiment name>).")
@click.option("--into", "into", type=click.Path(file_okay=False), default=None, metavar="ROOT",
              help="Run every CONFIG into ROOT/<config file stem>, each in its own one-process run, --jobs of them "
                   "side by side, the longest first (what `make figures` does; several configs: default results).")
@click.option("--jobs", "-j", type=int, default=-1, show_default=True, help="Parallel processes (-1 = all cores).")
@click.option("--cluster", default=None, metavar="ADDRESS",
              help="Compute on a Dask cluster: its scheduler address (tcp://HOST:8786) or local:N to start N local "
                   "worker processes; default $DPEXP_CLUSTER unless --jobs is given. Results are the same bytes.")
@click.option("--repeats", type=click.IntRange(min=1), default=None, help="Override the number of repeats.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a config value, e.g. --set privacy.epsilon=[1,2] --set algorithms[2].params.B_y=[3,5]")
@click.option("--seed", type=click.IntRange(min=0, max=2**63 - 1), default=None, help="Override the root seed.")
@click.option("--resume/--force", default=True, show_default=True,
              help="Resume an interrupted run in OUT (default) or discard OUT's results and start again.")
@click.option("--dry-run", is_flag=True, help="Validate, print the number of cells and a sample; run nothing.")
@click.option("--fast", is_flag=True,
              help="Quick look: apply the config's `fast:` section (few repeats, smaller grids); recorded as overrides.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar (--into: only the runs that failed are printed).")
@click.option("--noise", type=click.Choice(["seeded", "secure"]), default=None,
              help="Privacy noise: seeded (reproducible from the manifest; experiments only) or secure (OS CSPRNG, "
                   "never recorded). Default: the config's `noise:` (seeded). Recorded as the override noise=MODE.")
@click.pass_context
def run(ctx: click.Context, configs: tuple[str, ...], out: str | None, into: str | None, jobs: int,
        cluster: str | None, repeats: int | None, overrides: tuple[str, ...], seed: int | None, resume: bool,
        dry_run: bool, fast: bool, quiet: bool, noise: str | None) -> None:
    """Run the experiment described by CONFIG and write OUT/results.csv and OUT/manifest.json.

    With --into ROOT (or several configs), each config runs into ROOT/<config file stem> as its own one-process
    run, --jobs of them at a time, the longest first (what `make figures` does); ROOT/runs.json then records each
    run's exit code, wall and CPU seconds and peak memory, and -q prints only the runs that failed.  Exit code 1
    if any of them failed."""
    import json

    from dpexp import api, executors, runner

    if jobs == 0 or jobs < -1:
        _fail(f"--jobs must be >= 1 or -1 (all cores), got {jobs}")
    jobs_given = ctx.get_parameter_source("jobs") == click.core.ParameterSource.COMMANDLINE
    if cluster is not None and jobs_given:
        _fail("give either --jobs (processes on this machine) or --cluster (a Dask cluster), not both")
    if into is not None or len(configs) > 1:
        if out is not None:
            _fail("--out names the results folder of one config; for several, give --into ROOT "
                  "(each into ROOT/<config file stem>)")
        _run_several(configs, into, jobs, cluster, repeats, overrides, seed, resume, dry_run, fast, quiet, noise)
        return
    config = configs[0]
    cluster = executors.cluster_from(cluster, jobs_given)
    exp, raw, repeats = api.prepare(config, list(overrides), repeats, fast, noise)   # the same path as dpexp.run
    if dry_run:
        chunks = runner.plan_chunks(exp)
        click.echo(f"{exp.spec.name}: {exp.n_cells} cells in {len(chunks)} chunks "
                   f"({sum(len(d.subsets) for d in exp.datasets)} dataset subsets x {exp.spec.repeats} repeats x "
                   f"{len(exp.size_grid)} sizes x {len(exp.algorithms)} algorithms x {len(exp.epsilons)} epsilons "
                   f"x {len(exp.deltas)} deltas), {exp.spec.trials} trial(s) per cell, metrics: "
                   f"{', '.join(label for label, _ in exp.metrics)}")
        for c in runner.sample_cells(exp):
            click.echo("  " + json.dumps(c))
        return
    out_dir = Path(out) if out else Path("results") / exp.spec.name
    report = runner.run_experiment(exp, raw, out_dir, jobs=jobs, seed=seed, resume=resume,
                                   repeats_override=repeats, progress=not quiet, cluster=cluster)
    msg = (f"{exp.spec.name}: {report.cells} cells -> {report.results_path} "
           f"({report.seconds:.1f} s, {report.skipped_chunks} chunks resumed)")
    if report.already_complete:
        msg = (f"{exp.spec.name}: already complete in {out_dir} ({report.results_path.name}); nothing to do "
               "(use --force to recompute)")
    if report.failed_cells:
        click.echo(f"{msg}; {report.failed_cells} cells FAILED (see {out_dir / 'failures.csv'})", err=True)
        sys.exit(1)
    click.echo(msg, err=True)


def _run_several(configs: tuple[str, ...], into: str | None, jobs: int, cluster: str | None, repeats: int | None,
                 overrides: tuple[str, ...], seed: int | None, resume: bool, dry_run: bool, fast: bool,
                 quiet: bool, noise: str | None) -> None:
    """``dpexp run --into ROOT`` (or of several configs): every config read and checked first (a bad one stops the call before any
    runs, exit 2), then ``run_queue`` runs them side by side."""
    from dpexp import api, run_queue

    if cluster is not None:
        _fail("--cluster runs one config at a time: give one config per call")
    root = Path(into) if into else Path("results")
    child: list[str] = []
    for o in overrides:
        child += ["--set", o]
    if repeats is not None:
        child += ["--repeats", str(repeats)]
    if seed is not None:
        child += ["--seed", str(seed)]
    child += [*(["--fast"] if fast else []), *(["--noise", noise] if noise else []),
              "--resume" if resume else "--force"]
    queue = []
    for config in configs:
        exp, _, _ = api.prepare(config, list(overrides), repeats, fast, noise)
        queue.append(run_queue.Job(Path(config), root / Path(config).stem, run_queue.cost_key(Path(config), child)))
        if dry_run:
            click.echo(f"{exp.spec.name}: {exp.n_cells} cells -> {root / Path(config).stem}")
    run_queue.check_outputs(queue)
    if dry_run:
        return
    slots = (os.cpu_count() or 1) if jobs == -1 else jobs
    done = run_queue.run_queue(queue, min(slots, len(queue)), child, root, echo=lambda m: click.echo(m, err=True),
                               quiet=quiet)
    failed = [Path(d.config).stem for d in done if d.returncode != 0]
    if failed:
        click.echo(f"failed: {' '.join(failed)}", err=True)
        sys.exit(1)


@main.command()
@click.argument("config", type=click.Path(dir_okay=False))
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a config value.")
def validate(config: str, overrides: tuple[str, ...]) -> None:
    """Check CONFIG completely (keys, values, names, data availability, sizes) without running it."""
    from dpexp import spec

    exp = spec.load(config, list(overrides))
    click.echo(f"{config}: OK ({exp.n_cells} cells)")


@main.command(name="list")
@click.argument("kind", type=click.Choice(["algorithms", "datasets", "metrics", "plots"]), required=False)
@click.argument("name", required=False)
def list_(kind: str | None, name: str | None) -> None:
    """List registered algorithms, datasets, metrics and plot kinds; with KIND NAME, describe one of them and its
    parameters (type, default, constraints)."""
    from dpexp import registry

    if name is not None:
        if kind is None:
            _fail("give the kind before the name, e.g. `dpexp list algorithms rplr`")
        _describe(kind, name, registry.get(kind[:-1], name))
        return
    kinds = [kind] if kind else ["algorithms", "datasets", "metrics", "plots"]
    for k in kinds:
        click.echo(f"{k}:")
        for nm, obj in registry.items(k[:-1]):
            desc = getattr(obj, "description", "") or _first_paragraph(obj.__doc__)
            tags = []
            if k == "algorithms":
                from dpexp.privacy.guarantee_text import parse

                text = getattr(obj, "guarantee_text", "")
                tags.append(parse(text)[0].text if text else "guarantee not stated")
            click.echo(f"  {nm:24s} {desc}" + (f" [{'; '.join(tags)}]" if tags else ""))


def _describe_dataset_privacy(cls: type) -> None:
    """The dataset's preprocessing statement for each of its ``preprocessing_options`` (default parameters when it
    declares none), whether each is public, and what one row's ε covers."""
    import textwrap

    def show(head: str, text: str) -> None:
        click.echo(textwrap.fill(text, 116, initial_indent=f"  {head}: ", subsequent_indent="    "))

    from pydantic import ValidationError

    options = getattr(cls, "preprocessing_options", {}) or {"default parameters": {}}
    for label, params in options.items():
        try:
            pre = cls(**params).preprocessing()
        except ValidationError as exc:  # required parameters (the csv dataset's columns): stated per config
            need = ", ".join(str(e["loc"][0]) for e in exc.errors() if e["type"] == "missing")
            click.echo(f"  preprocessing: (stated for the parameters given; required: {need})")
        except Exception as exc:  # noqa: BLE001 — a dataset that cannot be built without data still lists its docs
            click.echo(f"  preprocessing: (not available: {type(exc).__name__}: {exc})")
        else:
            d = pre.to_dict()
            click.echo(f"  preprocessing, {label} [{d['treated_as']}]:")
            click.echo(textwrap.fill(d["detail"], 116, initial_indent="    ", subsequent_indent="    "))
    rule = getattr(cls, "release_point", "")
    if rule:
        show("one row's epsilon covers", rule.replace("{n}", "N"))


def _first_paragraph(doc: str | None) -> str:
    return " ".join((doc or "").strip().split("\n\n")[0].split())


def _describe(kind: str, name: str, obj: object) -> None:
    """Print one component's documentation and its parameter table."""
    import textwrap

    click.echo(f"{kind[:-1]} {name}")
    for attr in ("family", "private", "neighbouring", "requires_delta", "shared_split"):
        if hasattr(obj, attr):
            click.echo(f"  {attr}: {getattr(obj, attr)}")
    if kind == "algorithms":
        click.echo(textwrap.fill(getattr(obj, "guarantee_text", "") or "not stated", 116,
                                 initial_indent="  guarantee: ", subsequent_indent="    "))
    if kind == "datasets":
        _describe_dataset_privacy(obj)
    doc = textwrap.dedent((obj.__doc__ or "").strip("\n"))
    if doc:
        click.echo("")
        click.echo(textwrap.indent(doc.strip(), "  "))
    from dpexp import registry

    model = registry.plot_options(name) if kind == "plots" else getattr(obj, "Params", None)
    fields = getattr(model, "model_fields", {}) if model is not None else {}
    click.echo("")
    if not fields:
        click.echo("  parameters: none")
        return
    click.echo("  parameters:")
    from dpexp.spec import _interval

    for fname, info in fields.items():
        a = info.annotation
        ann = (str(a) if getattr(a, "__args__", None) else getattr(a, "__name__", str(a))).replace("typing.", "")
        default = "required" if info.is_required() else f"default {info.default!r}"
        constraint = _interval(info)
        extra = f", {constraint}" if constraint else ""
        click.echo(f"    {fname} ({ann}; {default}{extra})")
        if info.description:
            click.echo(f"        {info.description}")


@main.command()
@click.argument("results_dir", type=click.Path(file_okay=False))
@click.option("--out", "out", type=click.Path(file_okay=False), default=None,
              help="Figure directory (default: beside the results, results/X -> figures/X, results/fast/X -> "
                   "figures/fast/X, other/X -> other/figures/X); for a folder of experiments, OUT/<each>.")
@click.option("--format", "formats", default="png,pdf", show_default=True, help="Comma-separated formats.")
def plot(results_dir: str, out: str | None, formats: str) -> None:
    """Draw the figures of RESULTS_DIR (results table + manifest only): one experiment, or every experiment in a
    folder of them (results/, results/fast/), each into its own folder with a one-line summary."""
    from dpexp import results
    from dpexp.errors import UserError
    from dpexp.plotting.draw import FORMATS, draw_experiment, figure_dir, other_run

    fmts = [f.strip().lower() for f in formats.split(",") if f.strip()]
    bad = [f for f in fmts if f not in FORMATS]
    if bad or not fmts:
        _fail(f"--format must be a comma-separated subset of png, pdf, svg, got {formats!r}")
    root = Path(results_dir)
    dirs = results.find_results_dirs([root])
    single = (root / "manifest.json").is_file()
    failed = 0
    for d in dirs:
        fig_dir = (Path(out) if single else Path(out) / d.name) if out else figure_dir(d)
        before = other_run(fig_dir, results.read_manifest(d), d)
        if before is not None:
            click.echo(f"warning: {fig_dir} held the figures of {before}; replacing them with those of {d}",
                       err=True)
        if single:
            for w in draw_experiment(d, fig_dir, fmts):
                click.echo(str(w))
            return
        try:
            written = draw_experiment(d, fig_dir, fmts)
        except Exception as exc:  # one experiment's problem must not stop the others: said, counted, exit 1
            failed += 1
            click.echo(f"{d.name}: FAILED: {exc if isinstance(exc, UserError) else f'{type(exc).__name__}: {exc}'}")
            continue
        stems = list(dict.fromkeys(w.stem for w in written if w.suffix.lstrip(".") in fmts))
        click.echo(f"{d.name}: {len(stems)} figure{'s' * (len(stems) != 1)} ({', '.join(stems)}) as "
                   f"{', '.join(fmts)} -> {fig_dir}")
    if failed:
        click.echo(f"{failed} of {len(dirs)} experiments could not be plotted", err=True)
        sys.exit(1)


@main.command()
@click.argument("results_dir", type=click.Path(file_okay=False))
@click.option("--x", "x", default=None, help="Column on the x axis (default: the varying one).")
@click.option("--metric", default=None, help="Only this metric (default: all).")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False), default=None, help="Also write CSV here.")
@click.option("--markdown", "md_path", type=click.Path(dir_okay=False), default=None, help="Also write Markdown.")
@click.option("--brief", is_flag=True,
              help="One experiment: print its one-line summary (and where --csv/--markdown wrote the full table) "
                   "instead of the table (`make demo`).")
def summarize(results_dir: str, x: str | None, metric: str | None, csv_path: str | None, md_path: str | None,
              brief: bool) -> None:
    """Print mean/std/median/IQR per algorithm x value (over repeats, subsets averaged within a repeat); curves that
    are not DP are marked with a dagger.

    For a folder of experiments (results/, results/fast/): one line per experiment (status, repeats, curves, failed
    cells, the range of the first plotted metric at the largest x); --csv/--markdown then hold every experiment's
    table (CSV with an `experiment` column, Markdown with one section per experiment).
    """
    from dpexp import results, summary
    from dpexp.errors import UserError

    root = Path(results_dir)
    dirs = results.find_results_dirs([root])
    single = (root / "manifest.json").is_file()
    tables, blocks = [], []
    for d in dirs:
        manifest = results.read_manifest(d)
        if single:
            tab, note = summary.table(results.read_results(d, compact=True), manifest, x, metric)
            tables.append(tab)
            blocks.append(summary.markdown(tab, note))
            continue
        try:
            df = results.read_results(d, compact=True)
        except UserError:
            df = None
        click.echo(summary.one_line(d, manifest, df))
        if df is None or not (csv_path or md_path):
            continue
        name = str(manifest.get("experiment") or d.name)
        try:
            tab, note = summary.table(df, manifest, x, metric)
        except UserError as exc:
            blocks.append(f"## {name}\n\n{exc}\n")
            continue
        tables.append(tab.assign(experiment=name)[["experiment", *tab.columns]])
        blocks.append(f"## {name}\n\n" + summary.markdown(tab, note))
    if csv_path and tables:
        Path(csv_path).parent.mkdir(parents=True, exist_ok=True)
        summary.combine(tables).to_csv(csv_path, index=False)
    if md_path:
        Path(md_path).parent.mkdir(parents=True, exist_ok=True)
        Path(md_path).write_text("\n".join(blocks))
    if single and brief:
        click.echo(summary.one_line(root, results.read_manifest(root), results.read_results(root, compact=True)))
        written = [p for p in (md_path, csv_path) if p]
        click.echo(f"full table: {', '.join(written)}" if written else "full table: dpexp summarize " + str(root))
    elif single:
        click.echo(blocks[0], nl=False)


@main.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(file_okay=False))
@click.option("--out", "out", type=click.Path(file_okay=False), default="report", show_default=True,
              help="Report folder (index.html + figures/); a previous report there is replaced.")
@click.option("--figures", "figures", type=click.Path(file_okay=False), default=None,
              help="Figure folder with one sub-folder per results directory (e.g. figures/fast); missing figures "
                   "are drawn there. Default: figures/<X> beside results/<X>, missing ones drawn into OUT.")
@click.option("--paper-values", "paper_values", type=click.Path(dir_okay=False), default=None,
              help="Reference values quoted from the papers (default docs/paper_values.yaml).")
@click.option("--title", default=None, help="Page title (default 'dpexp report').")
@click.option("--redraw", is_flag=True, default=False,
              help="Draw every experiment's figures (into --figures) from the table the report reads, instead of "
                   "looking for up-to-date ones: `dpexp plot` and the report in one read of each table.")
@click.option("--jobs", "-j", type=click.IntRange(min=-1), default=1, show_default=True,
              help="Worker processes that read, draw and render the experiments, one table at a time each "
                   "(-1: all cores); the same page and figures for any number.")
def report(results: tuple[str, ...], out: str, figures: str | None, paper_values: str | None,
           title: str | None, redraw: bool, jobs: int) -> None:
    """Write one static HTML page (OUT/index.html) for RESULTS: results directories or folders of them.

    Shows every figure, the privacy guarantee of every curve, the papers' values next to ours, the summary tables
    and the provenance of each run; opens from disk, no server or JavaScript needed.
    """
    from dpexp.report import build_report

    failed: list[str] = []
    index = build_report([Path(r) for r in results], Path(out), Path(figures) if figures else None,
                         Path(paper_values) if paper_values else None, title,
                         warn=lambda msg: click.echo(f"warning: {msg}", err=True), redraw=redraw,
                         note=lambda msg: click.echo(msg, err=True), failed=failed,
                         jobs=(os.cpu_count() or 1) if jobs in (-1, 0) else jobs)
    click.echo(str(index))
    if failed and redraw:   # the page shows why; as `dpexp plot` of a folder: exit 1
        click.echo(f"the figures of {len(failed)} experiment(s) could not be drawn: {', '.join(failed)}", err=True)
        sys.exit(1)


@main.group()
def data() -> None:
    """Locate and download datasets."""


@data.command("download")
@click.argument("name")
@click.option("--dest", type=click.Path(file_okay=False), default=None,
              help="Target directory (default $DPEXP_DATA_DIR or ./data).")
@click.option("--force", is_flag=True, help="Download even when the files are present.")
def data_download(name: str, dest: str | None, force: bool) -> None:
    """Download the public originals of dataset NAME (verifying checksums).

    When NAME's files are already present (in --dest, else in the directories `dpexp data where` lists), their
    checksums are checked and nothing is downloaded or written; --force downloads them again.
    """
    from dpexp import registry
    from dpexp.datasets.base import directories, download_dir, present, remove_new_empty_dirs, search_dirs

    cls = registry.get("dataset", name)
    target = Path(dest) if dest else download_dir()
    if not force:
        found = present(cls.expected_files(), [target] if dest else search_dirs())
        if found is not None:
            click.echo(found.describe(name))
            return
    before = directories(target)
    try:
        paths = cls.download(target)
    except BaseException:
        remove_new_empty_dirs(target, before)  # a failed download leaves no empty folders behind
        raise
    for p in paths:
        click.echo(str(p))


@data.command("where")
def data_where() -> None:
    """Print the directories searched for data files, in order."""
    from dpexp.datasets.base import search_dirs

    for d in search_dirs():
        click.echo(f"{d}{'' if d.exists() else '  (missing)'}")


@main.command()
@click.argument("algorithms", nargs=-1)
@click.option("--epsilon", type=float, default=None, help="Claimed epsilon to audit (default: each entry's).")
@click.option("--delta", type=float, default=None, help="Claimed delta (default: each entry's).")
@click.option("--trials", type=click.IntRange(min=100), default=None, help="Runs per side (default 100000).")
@click.option("--confidence", type=click.FloatRange(0.5, 1.0, max_open=True), default=0.95, show_default=True)
@click.option("--out", "out", type=click.Path(file_okay=False), default=None, help="Write CSV + Markdown here.")
@click.option("--seed", type=click.IntRange(min=0), default=20_240_505, show_default=True)
@click.option("--jobs", "-j", type=int, default=1, show_default=True)
@click.option("--mutants", is_flag=True, default=False,
              help="Audit the shipped mutants (real algorithms with one injected privacy bug each; ARGS name mutants, "
                   "default all) and print mutant x detected, ending with 'mutants detected: K/N'.")
def audit(algorithms: tuple[str, ...], epsilon: float | None, delta: float | None, trials: int | None,
          confidence: float, out: str | None, seed: int, jobs: int, mutants: bool) -> None:
    """Black-box statistical test of each algorithm's (epsilon, delta) claim (a lower bound, not a proof)."""
    from dpexp.audit import run_audit

    if mutants:
        from dpexp.audit.mutants import run_mutants
        from dpexp.errors import UserError

        if epsilon is not None or delta is not None or out:
            raise UserError("--mutants audits each mutant at its algorithm's plan: --epsilon, --delta and --out "
                            "do not apply")
        if jobs < 1:
            raise UserError(f"--jobs must be >= 1, got {jobs}")
        sys.exit(run_mutants(list(algorithms) or None, trials, confidence, seed, jobs))

    code = run_audit(list(algorithms) or None, epsilon, delta, trials, confidence, Path(out) if out else None,
                     seed, jobs)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
