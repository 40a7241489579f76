"""The report's HTML: one self-contained page, no JavaScript, every text escaped, the same bytes for the same input.

Only :class:`Html` strings are inserted unescaped; everything else (config titles, labels, parameters, paths, error
messages) goes through :func:`html.escape`.
"""

from __future__ import annotations

import datetime as _dt
import html
import json
from pathlib import Path
from typing import Any, Iterable, Iterator
from urllib.parse import quote

import pandas as pd

from dpexp.version import __version__
from dpexp.formatting import fmt, signed
from dpexp.plotting.privacy import DAGGER, CurvePrivacy, curve_privacy
from dpexp.plotting.titles import fill
from dpexp.report.collect import Experiment, tables
from dpexp.report.paper import Entry, PaperValues, check_holds, compute, params_match

EVALUATION_NOTE = ("Evaluation metrics read the private rows (e.g. the error against the non-private OLS of the "
                   "private rows): their rows say guarantee none, “evaluation against private data”; they measure "
                   "a release, they are not one, and the guarantee shown is the release's.")
DAGGER_NOTE = ("† not differentially private: a non-private baseline, a heuristic without a formal guarantee, or a "
               "computation that touches private rows without paying (the reason is in the privacy table).")

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1500px;
padding:0 1.2em 3em;color:#1b1b1b;line-height:1.45}
h1{margin:.8em 0 .2em}h2{margin-top:2.2em;padding-top:.6em;border-top:2px solid #ccc}h3{margin:1.4em 0 .4em}
table{border-collapse:collapse;margin:.4em 0 1em;font-size:.88em}
th,td{border:1px solid #ccc;padding:.2em .5em;text-align:left;vertical-align:top}
th{background:#f0f0f0}td.num{text-align:right;font-variant-numeric:tabular-nums}
.figs{display:flex;flex-wrap:wrap;gap:1em}
figure{margin:0;flex:1 1 560px;max-width:760px;border:1px solid #ddd;padding:.5em;background:#fff}
figure img{max-width:100%;height:auto;display:block}
figcaption{font-size:.85em;color:#333;margin-top:.3em}
figure.wide{flex:1 1 100%;max-width:1200px}
.beside{display:flex;flex-wrap:wrap;gap:1em;align-items:flex-start}.beside figure{flex:0 1 420px}
.beside>div{flex:1 1 480px;overflow-x:auto}
.problem{background:#fff3cd;border:1px solid #e0c36a;padding:.4em .6em}
.muted{color:#555;font-size:.9em}.notdp{color:#a00000;font-weight:600}
.holds{color:#075e07}.fails{color:#a00000}
pre{background:#f6f6f6;padding:.6em;overflow-x:auto;font-size:.82em;max-height:40em}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:.15em 1em;font-size:.9em}
dl.kv dt{font-weight:600}dl.kv dd{margin:0;overflow-wrap:anywhere}
details{margin:.3em 0}summary{cursor:pointer}
nav table td:first-child{white-space:nowrap}
"""


class Html(str):
    """Markup that is already safe (built by this module)."""


def esc(x: Any) -> Html:
    return x if isinstance(x, Html) else Html(html.escape(str(x), quote=True))


def tag(name: str, body: Any = "", **attrs: Any) -> Html:
    a = "".join(f' {k.rstrip("_").replace("_", "-")}="{esc(v)}"' for k, v in attrs.items() if v is not None)
    return Html(f"<{name}{a}>{esc(body)}</{name}>")


def join(parts: Iterable[Any], sep: str = "") -> Html:
    return Html(sep.join(esc(p) for p in parts))


def table(headers: list[str], rows: list[list[Any]], numeric: set[int] | None = None) -> Html:
    """An HTML table: the header row, then one row per entry of ``rows``, the cells of the ``numeric`` columns of
    class "num"; every cell escaped as ``tag`` escapes it.  Each row is one join of pre-made cell openings (the
    summary tables of a GDSC experiment have ~10⁵ cells: one ``tag`` per cell was most of their rendering)."""
    numeric = numeric or set()
    head = tag("tr", join(tag("th", h) for h in headers))
    width = max([len(headers), *map(len, rows)]) if rows else len(headers)
    opens = ['<td class="num">' if i in numeric else "<td>" for i in range(width)]
    escape = html.escape
    body = ["<tr>" + "".join([o + (c if isinstance(c, Html) else escape(str(c), quote=True)) + "</td>"
                              for o, c in zip(opens, r)]) + "</tr>" for r in rows]
    return Html(f"<table>\n<thead>{head}</thead>\n<tbody>\n" + "\n".join(body) + "\n</tbody>\n</table>\n")


def kv(pairs: list[tuple[str, Any]]) -> Html:
    return Html('<dl class="kv">' + "".join(f"{tag('dt', k)}{tag('dd', v)}" for k, v in pairs) + "</dl>\n")


def url(path: str) -> str:
    return quote(path, safe="/")


# ------------------------------------------------------------------------------------------------------------------


def render(experiments: list[Experiment], refs: PaperValues | None, title: str, inputs: list[Path],
           jobs: int = 1) -> str:
    """The page.  Each experiment's table is read, its pending figures drawn and its section rendered by
    ``_rendered``: in this process, one table at a time, or with ``jobs`` > 1 in that many worker processes (one
    table at a time in each), the largest tables first.  The experiments come back updated (figures, problems)
    and the page is the same bytes for any ``jobs``."""
    entries = {e.slug: (refs.experiments.get(e.name) if refs else None) for e in experiments}
    privacy: dict[str, list[CurvePrivacy]] = {}
    sections: dict[str, Html] = {}
    for e, done, curves, section in _each_rendered(experiments, entries, refs, jobs):
        vars(e).update(vars(done))  # the figures taken and problems found where it was rendered
        privacy[e.slug], sections[e.slug] = curves, section
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta name="generator" content="dpexp {esc(__version__)} report">',
        tag("title", title),
        f"<style>{CSS}</style>",
        "</head>",
        "<body>",
        tag("h1", title),
        tag("p", join([f"{len(experiments)} experiment(s) from ", join((tag("code", p.as_posix()) for p in inputs),
                                                                         ", "),
                       f"; written by dpexp {__version__}. Every figure, the privacy guarantee of every curve, the "
                       "papers' values next to ours where the papers' text states them, the summary tables and the "
                       "provenance of each run."]), class_="muted"),
        _index(experiments, privacy, entries),
    ]
    parts += [sections[e.slug] for e in experiments]
    parts += [tag("footer", tag("p", DAGGER_NOTE, class_="muted")), "</body>", "</html>", ""]
    return "\n".join(parts)


def _rendered(e: Experiment, entry: Any, refs: PaperValues | None) -> tuple[Experiment, list[CurvePrivacy], Html]:
    """One experiment read, drawn (``collect.tables``) and rendered: the experiment (its table dropped again), the
    privacy of its curves and its section."""
    for e in tables([e]):
        curves = curve_privacy(e.table.frame([]) if e.table is not None else None, e.manifest)
        section = _section(e, curves, entry, refs)
    return e, curves, section


def _each_rendered(experiments: list[Experiment], entries: dict[str, Any], refs: PaperValues | None,
                   jobs: int) -> Iterator[tuple[Experiment, Experiment, list[CurvePrivacy], Html]]:
    """``(experiment, rendered copy, curves, section)`` for every experiment: in their order in this process, else
    in the order handed out to the workers (largest table first; ``render`` puts the sections back in order).  An
    error in a worker (a table that cannot be read) is raised here as it would be in this process."""
    if jobs <= 1 or len(experiments) <= 1:
        for e in experiments:
            yield e, *_rendered(e, entries[e.slug], refs)
        return
    from joblib import Parallel, delayed

    # the largest tables first (longest-first keeps the workers busy to the end)
    order = sorted(range(len(experiments)), key=lambda i: -_table_bytes(experiments[i]))
    tasks = (delayed(_rendered)(experiments[i], entries[experiments[i].slug], refs) for i in order)
    done = Parallel(n_jobs=min(jobs, len(experiments)), backend="loky", return_as="generator")(tasks)
    for i, result in zip(order, done):
        yield experiments[i], *result


def _table_bytes(e: Experiment) -> int:
    from dpexp.results_table import results_file

    return results_file(e.results_dir).stat().st_size if e.has_results else 0


def _index(experiments: list[Experiment], privacy: dict[str, list[CurvePrivacy]],
           entries: dict[str, Any]) -> Html:
    rows = []
    for i, e in enumerate(experiments, 1):
        refs = entries[e.slug]
        n_cmp = len(refs.entries) if refs else 0
        not_dp = sum(c.not_dp for c in privacy[e.slug])
        rows.append([str(i), tag("a", e.name, href=f"#exp-{e.slug}"), _title(e.manifest),
                     refs.figure if refs else "", _status(e), str(len(e.figures)),
                     f"{not_dp} of {len(privacy[e.slug])}", str(n_cmp) if n_cmp else "",
                     "yes" if fast_mode(e.manifest) else "no"])
    return tag("nav", Html(tag("h2", "Experiments")
                          + table(["#", "experiment", "title", "reproduces", "status", "figures", "curves not DP†",
                                   "paper values", "fast"], rows, numeric={0, 5, 7})))


def _status(e: Experiment) -> str:
    s = str(e.manifest.get("status", "unknown"))
    n_fail = int((e.manifest.get("failures") or {}).get("count", 0) or 0)
    return f"{s} ({n_fail} failed cells)" if n_fail else s


def _section(e: Experiment, privacy: list[CurvePrivacy], refs: Any, all_refs: PaperValues | None) -> Html:
    m = e.manifest
    raw = m.get("raw_config") or {}
    not_dp = {c.label for c in privacy if c.not_dp}
    out = [f'<section id="exp-{esc(e.slug)}">',
           tag("h2", join([e.name, Html(" — ") if m.get("title") else "", _title(m)]))]
    if raw.get("description"):
        out.append(tag("p", raw["description"]))
    for p in e.problems:
        out.append(tag("p", p, class_="problem"))
    out.append(kv([("results", e.results_dir.as_posix()), ("status", _status(e)), ("cells", m.get("cells", "")),
                   ("fast mode", fast_mode(e.manifest) or "no"), ("figures", e.figure_source or "none")]))
    out.append(_figures(e, not_dp))
    out.append(_privacy_table(privacy))
    out.append(_repeated_table(m))
    if refs is not None:
        out.append(_paper_table(e, refs, all_refs))
    if e.table is not None:
        out.append(_summaries(e, not_dp))
    out.append(_provenance(e))
    out.append("</section>")
    return Html("\n".join(out))


def _figures(e: Experiment, not_dp: set[str]) -> Html:
    if not e.figures:
        return Html(tag("h3", "Figures") + tag("p", "No figures.", class_="muted"))
    marks = (f" {DAGGER} Curves of this experiment that are not DP: " + ", ".join(sorted(not_dp)) + ".") if not_dp \
        else ""
    figs = []
    for f in e.figures:
        links = join((tag("a", k.upper(), href=url(v)) for k, v in sorted(f.links.items())), " · ")
        alone = join((tag("a", name, href=url(img)) for name, img in f.panels.items()), " · ")
        cap = join([tag("strong", f.stem), " · ", tag("a", "image", href=url(f.image)),
                    Html(" · ") if f.links else "", links,
                    join([" · each panel alone (column width): ", alone]) if f.panels else "", marks])
        figs.append(tag("figure", join([Html(f'<img src="{esc(url(f.image))}" alt="{esc(f.stem)}">'),
                                        tag("figcaption", cap)]), class_="wide" if f.panels else None))
    return Html(tag("h3", f"Figures ({len(e.figures)})") + '<div class="figs">\n' + "\n".join(figs) + "\n</div>\n")


def _collapse(privacy: list[CurvePrivacy]) -> list[tuple[str, CurvePrivacy]]:
    """One row per curve, except that the curves of one parameter grid (labels ``name[k=v,...]``) with the same
    guarantee share a row: a 171-point budget-split search is one line, not 171."""
    groups: dict[tuple[Any, ...], list[CurvePrivacy]] = {}
    for c in privacy:
        base = c.label.split("[", 1)[0] if c.label.endswith("]") and "[" in c.label else c.label
        key = (base, c.algorithms, c.guarantee, c.epsilon, c.delta, c.rho, c.neighbouring, c.note, c.source,
               c.evaluation)
        groups.setdefault(key, []).append(c)
    return [(cs[0].label if len(cs) == 1 else f"{key[0]}[…] ({len(cs)} parameter settings)", cs[0])
            for key, cs in groups.items()]


def _privacy_table(privacy: list[CurvePrivacy]) -> Html:
    rows = []
    for shown, c in _collapse(privacy):
        label = join([shown, tag("span", " " + DAGGER, class_="notdp")]) if c.not_dp else shown
        words = tag("span", c.words, class_="notdp") if c.not_dp else c.words
        rows.append([label, c.algorithms, words, c.epsilon, c.delta, c.rho, c.neighbouring, c.note,
                     c.evaluation])
    sources = sorted({c.source for c in privacy})
    if sources == ["results.csv"]:
        src = "From the per-row guarantee columns of results.csv (what each row spent)."
    else:
        src = ("From the manifest: what each algorithm declares (results.csv has no per-row guarantee columns; "
               "run again with a newer dpexp to record them).")
    return Html(tag("h3", "Privacy of each curve")
                + table(["curve", "algorithm", "guarantee", "ε spent", "δ spent", "ρ spent", "neighbouring",
                         "note", "evaluation metrics"], rows)
                + tag("p", join([src, " ", DAGGER_NOTE if any(c.not_dp for c in privacy) else "",
                                 " " + EVALUATION_NOTE if any(c.evaluation for c in privacy) else ""]),
                      class_="muted"))


def _repeated_table(manifest: dict[str, Any]) -> Html:
    """The manifest's totals over releases about the same people (``manifest.repeated_releases``: GDSC's drugs of
    one cell line), basic composition beside the tighter one; '' when the run has none."""
    reps = ((manifest.get("privacy_summary") or {}).get("repeated_releases")) or []
    if not reps:
        return Html("")

    def pair(t: dict[str, Any]) -> str:
        if "epsilon" not in t:
            return f"ρ = {fmt(t['rho'])}"
        return f"ε = {fmt(t['epsilon'])}, δ = {fmt(t.get('delta', 0.0))}"

    rows, limit = [], 40
    for r in reps[:limit]:
        per = ("ε = " + fmt(r["epsilon_spent"])) if r.get("epsilon_spent") is not None else f"ρ = {fmt(r['rho_spent'])}"
        rows.append([r["label"], r["algorithm"], fmt(r["epsilon"]) if r.get("epsilon") is not None else "", per,
                     str(r["releases"]), pair(r["basic"]), pair(r["tighter"]), r["tighter"].get("method", "")])
    note = ("One person (a row of the private data, e.g. a cell line) is in every subset's release here (GDSC: one "
            "model per drug on the same cell lines), so their loss composes over the subsets: an upper bound (a "
            "person missing from a subset is in fewer releases), from dpexp's own accounting."
            + (f" The first {limit} of {len(reps)} guarantees; all are in manifest.json." if len(reps) > limit
               else ""))
    return Html(tag("h3", "Total over releases about the same people")
                + table(["curve", "algorithm", "ε asked", "per release", "releases", "basic composition",
                         "tighter composition", "method"], rows)
                + tag("p", note, class_="muted"))


def _paper_table(e: Experiment, refs: Any, all_refs: PaperValues | None) -> Html:
    out = [tag("h3", "The paper's values next to ours")]
    intro = [f"Reproduces: {refs.figure}."]
    if not refs.numbers_in_text:
        intro.append(" The paper gives this figure's values only in the plot image (not in text); the rows below "
                     "are what its text states." if refs.entries else
                     " The paper gives this figure's values only in the plot image (not in text): nothing to "
                     "compare numerically.")
    out.append(tag("p", "".join(intro)))
    body = Html("")
    if refs.entries:
        frames: dict[tuple[str, ...], pd.DataFrame] = {}   # entries of one metric share its rows (built once)
        rows = [_paper_row(e, entry, all_refs, frames) for entry in refs.entries]
        body = table(["quantity", "paper (as written)", "source", "ours", "difference", "check (our reading)",
                      "note"], rows, numeric={3, 4})
    panel = _paper_panel(e, refs)
    if panel is not None:   # the panel to set beside the published figure, with the paper's values beside it
        fig, name = panel
        img = Html(f'<img src="{esc(url(fig.panels[name]))}" alt="{esc(fig.stem)}_{esc(name)}">')
        cap = tag("figcaption", join([tag("strong", f"{fig.stem}_{name}"), f": the panel “{name}” of {fig.stem} "
                                      f"alone, to set beside {refs.figure}"]))
        out.append(Html('<div class="beside">' + tag("figure", join([img, cap])) + f"<div>{body}</div></div>\n"))
    else:
        out.append(body)
    return Html("".join(out))


def _paper_panel(e: Experiment, refs: Any) -> tuple[Any, str] | None:
    """(figure, panel name) of the ``paper: true`` panel to show beside the paper's values: that of the figure
    whose metric the values use (the first entry's), else of the first figure that has one."""
    with_panel = [f for f in e.figures if f.paper_panel]
    if not with_panel:
        return None
    metrics = [entry.ours.metric for entry in refs.entries if entry.ours is not None]
    fig = next((f for f in with_panel if metrics and f.metric == metrics[0]), with_panel[0])
    return fig, str(fig.paper_panel)


def _paper_row(e: Experiment, entry: Entry, all_refs: PaperValues | None,
               frames: dict[tuple[str, ...], pd.DataFrame]) -> list[Any]:
    paper = all_refs.papers[entry.paper].citation if all_refs else entry.paper
    source = f"{paper}, {entry.source}"
    quote_ = f"“{entry.as_written}”"
    if entry.ours is None or e.table is None:
        why = "not computed from our results" if entry.ours is None else "no results"
        return [entry.quantity, quote_, source, tag("span", why, class_="muted"), "", "", entry.note]
    metrics = tuple(entry.ours.metrics)
    if metrics not in frames:
        frames[metrics] = e.table.frame(metrics)
    r = compute(frames[metrics], entry.ours)
    if r.problem:
        return [entry.quantity, quote_, source, tag("span", f"not in this run: {r.problem}", class_="muted"), "",
                "", entry.note]
    if isinstance(r.value, str):  # argmax_params
        verdict = ""
        if isinstance(entry.value, dict):
            ok = params_match(entry.value, r.value)
            verdict = tag("span", "same" if ok else "differs", class_="holds" if ok else "fails")
        return [entry.quantity, quote_, source, r.value, verdict, "", entry.note]
    assert r.value is not None
    ours = fmt(r.value)
    if r.parts is not None:
        ours = f"{ours} ({fmt(r.parts[0])} − {fmt(r.parts[1])})"
    diff = ""
    if isinstance(entry.value, float) and entry.compare in ("difference", "ratio"):
        diff = signed(r.value - entry.value)
        if entry.compare == "ratio" and r.value != 0:
            diff += f" (paper ÷ ours = {fmt(entry.value / r.value)}×)"
    check = ""
    if entry.check is not None:
        ok = check_holds(entry.check, float(r.value))
        op = {"<=": "≤", ">=": "≥", "==": "="}.get(entry.check.op, entry.check.op)
        check = tag("span", f"ours {op} {fmt(entry.check.value)}: {'holds' if ok else 'does not hold'}",
                    class_="holds" if ok else "fails")
    return [entry.quantity, quote_, source, ours, diff, check, entry.note]


# ------------------------------------------------------------------------------------------------------------------


def _plot_x(e: Experiment, metric: str, rows: pd.DataFrame) -> str:
    from dpexp.results import X_CHOICES, default_x

    for p in (e.manifest.get("config") or {}).get("plots") or []:
        if p.get("metric") == metric and p.get("x") in X_CHOICES:
            return str(p["x"])
    return default_x(rows[rows["metric"] == metric])


def _summaries(e: Experiment, not_dp: set[str]) -> Html:
    """Per metric, the table of ``dpexp summarize`` (dpexp.results.aggregate); the plotted metrics open."""
    from dpexp.results import GRID_COLUMNS, aggregate

    assert e.table is not None
    plotted = {p.get("metric") for p in (e.manifest.get("config") or {}).get("plots") or []}
    metrics = e.table.metrics
    if not plotted & set(metrics):  # plots that pick their metric themselves: open the first
        plotted = {metrics[0]}
    blocks = []
    for metric in metrics:
        rows = e.table.frame([metric])   # one metric's rows at a time
        x = _plot_x(e, metric, rows)
        try:
            agg = aggregate(rows, x, metric)
        except Exception as exc:  # a metric that cannot be summarised must not hide the others
            blocks.append(tag("p", f"{metric}: {exc}", class_="problem"))
            continue
        extra = [c for c in GRID_COLUMNS if c in agg.columns and c != x]
        cols = ["label", *extra, x, "mean", "std", "median", "q25", "q75", "iqr", "repeats", "failed_rows"]
        if agg["dataset_params"].nunique() > 1 or agg["dataset"].nunique() > 1:
            cols = ["dataset", "dataset_params"] + cols
        numeric = {i for i, c in enumerate(cols) if c in ("mean", "std", "median", "q25", "q75", "iqr", "repeats",
                                                          "failed_rows") or c == x or c in extra}
        rows = []
        for rec in agg[cols].itertuples(index=False):
            row = []
            for c, v in zip(cols, rec):
                if c == "label" and v in not_dp:
                    row.append(join([v, tag("span", " " + DAGGER, class_="notdp")]))
                elif isinstance(v, float):
                    row.append(fmt(v))
                else:
                    row.append(str(v))
            rows.append(row)
        summary = tag("summary", f"{metric} against {x} ({len(rows)} rows)")
        blocks.append(Html(f"<details{' open' if metric in plotted else ''}>{summary}\n"
                           + table(cols, rows, numeric) + "</details>"))
    return Html(tag("h3", "Summary tables")
                + tag("p", "Mean, std, median and IQR over Monte Carlo repeats of the value averaged over subsets "
                           "within a repeat (as dpexp summarize).", class_="muted")
                + "\n".join(blocks))


# ------------------------------------------------------------------------------------------------------------------

KNOWN_MANIFEST_KEYS = {"experiment", "title", "config_file", "config", "raw_config", "overrides", "repeats_override",
                       "fingerprint", "root_seed", "versions", "git", "started", "finished", "status", "cells",
                       "chunks", "jobs", "algorithms", "failures", "skipped_grid_points", "rows", "results_file",
                       "seconds_this_invocation"}


def _title(manifest: dict[str, Any]) -> str:
    """The experiment's title with its ``{placeholders}`` filled from the resolved config (as in its figures)."""
    return fill(str(manifest.get("title") or ""), manifest)


def fast_mode(manifest: dict[str, Any]) -> str:
    """'' unless the run applied the config's ``fast:`` section: the manifest's ``fast`` flag, or, for runs recorded
    before it existed, a guess from the overrides (``dpexp run --fast`` applies the section's first)."""
    if "fast" in manifest:
        return "yes (dpexp run --fast)" if manifest["fast"] else ""
    fast = (manifest.get("raw_config") or {}).get("fast")
    if not isinstance(fast, dict):
        return ""
    fast_set = [str(s) for s in fast.get("set") or []]
    overrides = [str(s) for s in manifest.get("overrides") or []]
    if fast_set and overrides[:len(fast_set)] == fast_set:
        return "yes (the config's fast: section)"
    if not fast_set and manifest.get("repeats_override") == fast.get("repeats", 2):
        return "probably (repeats equal the fast: section's)"
    return ""


def _duration(m: dict[str, Any]) -> str:
    try:
        a = _dt.datetime.fromisoformat(str(m["started"]))
        b = _dt.datetime.fromisoformat(str(m["finished"]))
    except (KeyError, TypeError, ValueError):
        return ""
    return f"{(b - a).total_seconds():,.0f} s"


def _provenance(e: Experiment) -> Html:
    import yaml

    m = e.manifest
    git = m.get("git") or {}
    commit = git.get("commit") or "unknown (not a git checkout)"
    dirty = {True: "yes (uncommitted changes)", False: "no", None: "unknown"}.get(git.get("dirty"),
                                                                                 str(git.get("dirty")))
    versions = m.get("versions") or {}
    failures = m.get("failures") or {}
    pairs: list[tuple[str, Any]] = [
        ("config file", m.get("config_file", "")),
        ("root seed", m.get("root_seed", "")),
        ("git commit", commit), ("uncommitted changes", dirty),
        ("versions", ", ".join(f"{k} {v}" for k, v in versions.items())),
        ("started", m.get("started", "")), ("finished", m.get("finished") or "not finished"),
        ("duration", _duration(m)),
        ("overrides (--set, --fast)", "; ".join(str(o) for o in m.get("overrides") or []) or "none"),
        ("repeats override", m.get("repeats_override") if m.get("repeats_override") is not None else "none"),
        ("fast mode", fast_mode(m) or "no"),
        ("cells / rows / chunks", f"{m.get('cells', '')} / {m.get('rows', '')} / {m.get('chunks', '')}"),
        ("failed cells", failures.get("count", 0) if failures else 0),
        ("jobs", m.get("jobs", "")), ("config fingerprint", m.get("fingerprint", "")),
    ]
    skipped = m.get("skipped_grid_points") or {}
    if skipped:
        pairs.append(("skipped grid points", json.dumps(skipped, sort_keys=True)))
    out = [tag("h3", "Provenance"), kv(pairs)]
    for f in (failures.get("first") or [])[:5]:
        out.append(tag("p", f"failed: {json.dumps(f, sort_keys=True)}", class_="problem"))
    raw = m.get("raw_config")
    if raw is not None:
        text = yaml.safe_dump(raw, sort_keys=False, allow_unicode=True, width=110)
        out.append(Html(f"<details>{tag('summary', 'config as written')}{tag('pre', text)}</details>"))
    if m.get("config") is not None:
        text = json.dumps(m["config"], indent=1, sort_keys=True, ensure_ascii=False, default=str)
        out.append(Html(f"<details>{tag('summary', 'resolved config (after overrides)')}{tag('pre', text)}</details>"))
    other = {k: v for k, v in m.items() if k not in KNOWN_MANIFEST_KEYS}
    if other:
        text = json.dumps(other, indent=1, sort_keys=True, ensure_ascii=False, default=str)
        out.append(Html(f"<details>{tag('summary', 'other manifest fields')}{tag('pre', text)}</details>"))
    return Html("\n".join(out))
