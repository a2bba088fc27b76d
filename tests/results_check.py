"""``check_results_files(directory)``: every results.json under a folder loads, matches the schema and is 0644.

The integration tests call it after each run (``from results_check import check_results_files``).
Needs the ``jsonschema`` package.
"""

from __future__ import annotations

import stat
from pathlib import Path

from reports.results import ResultsError, load_results, validate


def check_results_files(directory) -> list:
    """Check every results.json under ``directory``; return their paths.  AssertionError lists every problem
    (a file that is unreadable, breaks the schema, or is not mode 0644), and says so when there is no file."""
    paths = sorted(Path(directory).rglob("results.json"))
    assert paths, f"no results.json under {directory}"
    problems = []
    for path in paths:
        try:
            validate(load_results(path), source=str(path))
        except ResultsError as exc:
            problems.append(str(exc))
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode != 0o644:
            problems.append(f"{path}: mode {mode:04o}, not 0644")
    assert not problems, "results files do not match reports/results.schema.json:\n" + "\n".join(problems)
    return paths
