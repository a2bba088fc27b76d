"""The reports of bmwg-sdn runs, made again from results.json without rerunning, and the run history.

``python -m reports render RESULTS.json [--out DIR]``: re-render every report without rerunning.

``python -m reports summary RESULTS.json`` prints the headline figures; its exit status is 0 when the run
passed (reports/outcome.py), 1 when it did not, 2 when the file cannot be read.

``python -m reports compare A.json B.json [...] [--alpha 0.05] [--json OUT] [--plots DIR]`` puts several runs
(controllers, releases) side by side, benchmark by benchmark: pairwise tests, Holm's correction, a ranking with ties
(reports/compare.py).  Exit status 0, 1 when the runs share no benchmark, 2 when a file cannot be read.

``python -m reports series RESULTS.json [--alpha 0.05]`` analyses each series of a run (e.g. ``--switches
1,2,4,...``) point by point: neighbour tests, the saturation point and the best scenario (reports/series.py).

``python -m reports matrix A.json B.json [...] [--out FILE]`` writes the compatibility matrix, controller ×
benchmark, from runs against several controllers (reports/matrix.py); ``tox -e matrix`` makes the runs first.

``python -m reports history add --history STORE RESULTS.json [...]`` appends runs already made to a history store
(a SQLite file or a ``postgresql://`` URL; ``--history STORE`` on a run appends it as it ends); ``python -m reports
history list --history STORE`` lists what the store holds (reports/history.py).  Exit status 0, 2 when a store or
a file cannot be read.

``python -m reports history check --history STORE [--junit FILE] [--acknowledgements FILE]`` finds the change points
of every series in the store (reports/changes.py, reports/regressions.py): exit status 0 no unacknowledged
regression, 1 a regression, 3 not enough data (0 with ``--allow-not-enough-data``), 2 a store or file that cannot be
read.  ``python -m reports history
site DIR --history STORE`` writes DIR/index.html, the history's plots as one page that needs no network
(reports/site.py).

``python -m reports current RUN.json [...] [--out FILE]`` writes the current figures, the latest figure of each
benchmark, controller and variant among kept runs (reports/current.py; the project keeps its own in docs/runs/).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional

from .changes import ALPHA, MIN_RUNS
from .junit import render_junit
from .outcome import PASSED, run_status
from .results import ResultsError, load_results
from .rfc_report import render_markdown
from .stores import masked
from .summary import headline_lines


def render_all(data: dict, out_dir: Path) -> list[Path]:
    """junit.xml, report.md (its plots in plots/*.svg) and report.html (the plots inline) in ``out_dir``."""
    from .html import to_html
    from .plots import figures, unavailable

    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    path = out_dir / "junit.xml"          # first: CI reads it, whatever happens to the pictures
    path.write_text(render_junit(data))
    written.append(path)
    try:
        drawn = figures(data)
        note = unavailable()
    except Exception as exc:              # a picture never costs the report
        drawn, note = {"entries": {}, "series": {}}, f"not drawn ({type(exc).__name__}: {exc})"
    svgs, pictures = {}, {"entries": {}, "series": {}, "note": note}
    if drawn["entries"] or drawn["series"]:
        (out_dir / "plots").mkdir(exist_ok=True)
    for part in ("entries", "series"):
        for key, pics in drawn[part].items():
            refs = []
            for name, caption, svg in pics:
                rel = f"plots/{name}"
                (out_dir / rel).write_text(svg)
                svgs[rel] = svg
                refs.append((rel, caption))
            pictures[part][key] = refs
    markdown = render_markdown(data, pictures)
    for name, text in (("report.md", markdown), ("report.html", to_html(markdown, svgs))):
        path = out_dir / name
        path.write_text(text)
        written.append(path)
    return written


def load_all(paths) -> Optional[list]:
    """[(results data, path)] for every file, or None after naming on stderr the first that cannot be read."""
    loaded = []
    for path in paths:
        try:
            loaded.append((load_results(path), path))
        except ResultsError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return None
    return loaded


def compare_main(args) -> int:
    import json

    from .compare import compare_runs, render_text, run_labels, to_dict
    if len(args.results) < 2:
        print("error: compare needs two or more results.json files", file=sys.stderr)
        return 2
    if not 0 < args.alpha < 1:
        print(f"error: --alpha must be between 0 and 1 (got {args.alpha:g})", file=sys.stderr)
        return 2
    loaded = load_all(args.results)
    if loaded is None:
        return 2
    runs = [(label, data) for label, (data, _path) in zip(run_labels(loaded), loaded)]
    comparisons = compare_runs(runs, args.alpha)
    if not comparisons:
        print("no benchmark has enough successful trials (2 or more) in two or more of these runs", file=sys.stderr)
        return 1
    print(render_text(comparisons, args.alpha), end="")
    if args.plots is not None:
        from .plots import compare_figure, slug, unavailable
        why = unavailable()
        if why:
            print(f"plots: {why}", file=sys.stderr)
        else:
            args.plots.mkdir(parents=True, exist_ok=True)
            for c in comparisons:
                svg = compare_figure([(r.label, r.values) for r in c.runs], f"{c.title}"
                                     + (f" ({c.variant})" if c.variant else ""), f"{c.unit}")
                if svg:
                    path = args.plots / f"compare-{slug(c.key)}.svg"
                    path.write_text(svg)
                    print(f"plot: {path}")
    if args.json is not None:
        args.json.write_text(json.dumps(to_dict(comparisons, args.alpha), indent=2) + "\n")
        print(f"written: {args.json}")
    return 0


def series_main(args) -> int:
    from .series import analyse_all, render_text
    if not 0 < args.alpha < 1:
        print(f"error: --alpha must be between 0 and 1 (got {args.alpha:g})", file=sys.stderr)
        return 2
    try:
        data = load_results(args.results)
    except ResultsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    analyses = analyse_all(data, args.alpha)
    if not analyses:
        print(f"{args.results} holds no series of two or more points (run a benchmark over a list, e.g. "
              "--switches 1,2,4,8)", file=sys.stderr)
        return 1
    print(render_text(analyses, args.alpha), end="")
    return 0


def matrix_main(args) -> int:
    from .matrix import render
    loaded = load_all(args.results)
    if loaded is None:
        return 2
    text = render(loaded, command="python -m reports matrix " + " ".join(str(p) for p in args.results),
                  root=Path.cwd())
    return _written(text, args.out)


def current_main(args) -> int:
    from .current import render
    loaded = load_all(args.results)
    if loaded is None:
        return 2
    return _written(render(loaded, root=(args.out.parent if args.out is not None else Path.cwd())) + "\n", args.out)


def history_main(args) -> int:
    from .history import HistoryError, open_store
    if args.action in ("check", "site"):
        problem = check_problem(args)
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return 2
    try:
        store = open_store(args.history, create=args.action == "add")
    except HistoryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    import sqlite3
    try:
        with store:
            return history_action(store, args)
    except (HistoryError, sqlite3.Error, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def history_action(store, args) -> int:
    if args.action == "check":
        return history_check(store, args)
    if args.action == "site":
        return history_site(store, args)
    if args.action == "list":
        rows = store.runs()
        print(f"{masked(args.history)}: {len(rows)} run(s)")
        for run_id, started, status, controller, version, commit, bed, entries, tag in rows:
            print(f"  run {run_id}  {started}  {status:7}  {controller or '?'} {version or ''}  "
                  f"commit {(commit or 'unknown')[:12]}  testbed {bed}  {entries} entries"
                  + (f"  tag {tag}" if tag else ""))
        return 0
    loaded = load_all(args.results)
    if loaded is None:
        return 2
    for data, path in loaded:
        added = store.add(data, source=str(Path(path).resolve()), tag=args.tag)
        print(f"{path}: run {added.run_id} {added.state} ({added.entries} entries)")
    return 0


def check_problem(args) -> Optional[str]:
    if not 0 < args.alpha < 1:
        return f"--alpha must be between 0 and 1 (got {args.alpha:g})"
    if args.min_runs < 2:
        return f"--min-runs must be 2 or more (got {args.min_runs})"
    if args.min_change < 0:
        return f"--min-change must not be negative (got {args.min_change:g})"
    return None


def checked_series(store, args) -> Optional[list]:
    """Every series of the store weighed (reports/regressions.py), or None after naming on stderr an
    acknowledgements file that cannot be used."""
    from .regressions import AckError, check, load_acks
    try:
        acks = load_acks(args.acknowledgements) if args.acknowledgements else []
    except AckError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None
    return check(store.points(), acks, args.min_runs, args.alpha, args.min_change)


def history_check(store, args) -> int:
    from .regressions import exit_status, render_junit, render_text
    every = checked_series(store, args)
    if every is None:
        return 2
    print(render_text(every, args.min_runs, args.alpha), end="")
    if args.junit is not None:
        args.junit.parent.mkdir(parents=True, exist_ok=True)
        args.junit.write_text(render_junit(every, args.min_runs))
        print(f"written: {args.junit}")
    return exit_status(every, args.allow_not_enough_data)


def history_site(store, args) -> int:
    from .plots import unavailable
    from .site import render_site
    why = unavailable()
    if why:
        print(f"error: {why}", file=sys.stderr)
        return 2
    every = checked_series(store, args)
    if every is None:
        return 2
    print(f"written: {render_site(every, args.out, masked(args.history))}")
    return 0


def _written(text: str, out: Optional[Path]) -> int:
    """``text`` printed, or written to ``out``."""
    if out is None:
        print(text, end="")
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        print(f"written: {out}")
    return 0


HISTORY_HELP = ("the run history store: add runs already made, list what it holds, check every series for "
                "regressions (change points), draw the site of its plots")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m reports", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    render = sub.add_parser("render", help="write junit.xml and report.md from a results.json")
    render.add_argument("results", type=Path)
    render.add_argument("--out", type=Path, default=None, help="folder (default: beside the results file)")
    summary = sub.add_parser("summary", help="print the headline figures of a results.json; exit 1 unless "
                                             "the run passed")
    summary.add_argument("results", type=Path)
    comp = sub.add_parser("compare", help="several results.json side by side: pairwise tests, Holm's correction "
                                          "and a ranking per benchmark")
    comp.add_argument("results", type=Path, nargs="+")
    comp.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    comp.add_argument("--json", type=Path, default=None, help="also write the comparison here as JSON")
    comp.add_argument("--plots", type=Path, default=None, help="also draw each benchmark's runs side by side (box "
                                                             "plots and CDFs overlaid), as SVG files in this folder")
    series = sub.add_parser("series", help="a results.json's series point by point: neighbour tests, the "
                                           "saturation point and the best scenario")
    series.add_argument("results", type=Path)
    series.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    matrix = sub.add_parser("matrix", help="the compatibility matrix (controller × benchmark) of several runs, as "
                                           "Markdown")
    matrix.add_argument("results", type=Path, nargs="+")
    matrix.add_argument("--out", type=Path, default=None, help="write it here (default: print it)")
    current = sub.add_parser("current", help="the current figures (the latest of each benchmark, controller and "
                                             "variant) of kept runs, as Markdown")
    current.add_argument("results", type=Path, nargs="+")
    current.add_argument("--out", type=Path, default=None, help="write it here (default: print it)")
    history = sub.add_parser("history", help=HISTORY_HELP, description=HISTORY_HELP)
    actions = history.add_subparsers(dest="action", required=True)
    add = actions.add_parser("add", help="append runs already made (a run already held is not added twice)")
    add.add_argument("results", type=Path, nargs="+")
    add.add_argument("--tag", default=None, help="name the runs (a release) for a later run's --against tag:NAME")
    listing = actions.add_parser("list", help="the runs the store holds, oldest first")
    checking = actions.add_parser("check", help="change points along every series; exit 0 no regression, 1 a "
                                                "regression, 3 not enough data")
    checking.add_argument("--junit", type=Path, default=None, help="also write one testcase per series here")
    checking.add_argument("--allow-not-enough-data", action="store_true",
                          help="exit 0, not 3, while no series has the runs a change needs (a CI gate on a store "
                               "that is still filling); the output and the JUnit file still say so")
    site = actions.add_parser("site", help="a static page that needs no network: one plot per series, change points "
                                           "marked, releases annotated, points linking to their run's report")
    site.add_argument("out", type=Path, help="the folder to write index.html to")
    for action in (checking, site):     # the site draws the change points check finds, chosen by the same options
        action.add_argument("--acknowledgements", type=Path, default=None,
                            help="YAML file of known changes, each with a reason (reports/regressions.py)")
        action.add_argument("--min-runs", type=int, default=MIN_RUNS,
                            help=f"runs on each side before a change is called (default {MIN_RUNS})")
        action.add_argument("--alpha", type=float, default=ALPHA,
                            help=f"significance level of a change point (default {ALPHA:g})")
        action.add_argument("--min-change", type=float, default=0.0,
                            help="smallest relative change called, e.g. 0.05 for 5%% (default 0: any significant one)")
    for action in (add, listing, checking, site):
        action.add_argument("--history", required=True, help="the store: a SQLite file (add creates it) or a "
                            "postgresql://USER@HOST[:PORT]/DATABASE URL (password in PGPASSWORD)")
    return parser


def subcommand_options(parser: argparse.ArgumentParser, path=()) -> dict:
    """Every subcommand's options, by its path (("history", "check"): [...]): for the docs' check."""
    out = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out.update(subcommand_options(sub, (*path, name)))
    out[path] = [flag for a in parser._actions for flag in a.option_strings if flag.startswith("--")]
    return out


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "history":
        return history_main(args)
    if args.command == "matrix":
        return matrix_main(args)
    if args.command == "current":
        return current_main(args)
    if args.command == "compare":
        return compare_main(args)
    if args.command == "series":
        return series_main(args)
    try:
        data = load_results(args.results)
    except ResultsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.command == "render":
        for path in render_all(data, args.out or args.results.parent):
            print(path)
        return 0
    print("\n".join(headline_lines(data)))
    return 0 if run_status(data) == PASSED else 1


if __name__ == "__main__":
    sys.exit(main())
