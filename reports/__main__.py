"""``python -m reports render RESULTS.json [--out DIR]``: re-render every report without rerunning.

``python -m reports summary RESULTS.json`` prints the headline figures; its exit status is 0 when the run
passed (reports/outcome.py), 1 when it did not, 2 when the file cannot be read.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .junit import render_junit
from .outcome import PASSED, run_status
from .results import ResultsError, load_results
from .rfc_report import render_markdown
from .summary import headline_lines


def render_all(data: dict, out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in (("junit.xml", render_junit(data)), ("report.md", render_markdown(data))):
        path = out_dir / name
        path.write_text(text)
        written.append(path)
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    render = sub.add_parser("render", help="write junit.xml and report.md from a results.json")
    render.add_argument("results", type=Path)
    render.add_argument("--out", type=Path, default=None, help="folder (default: beside the results file)")
    summary = sub.add_parser("summary", help="print the headline figures of a results.json; exit 1 unless "
                                             "the run passed")
    summary.add_argument("results", type=Path)
    args = parser.parse_args(argv)
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
