"""``results.json``: the source of truth every other report is rendered from.

The file is rewritten atomically (temporary file, then rename) after every
trial, so a crash or Ctrl-C loses nothing already measured.  Its format is
``results.schema.json`` (JSON Schema 2020-12) beside this module, explained in
docs/results-schema.md; ``SCHEMA_VERSION`` changes when it does.  Version 1
files still load.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)
SCHEMA_PATH = Path(__file__).with_name("results.schema.json")
BENCHMARK_KEYS = ("benchmark", "rfc_section", "unit", "parameters", "trials", "summary", "verdict", "outcome")
EXTRA_SECTION = "★"   # rfc_section of a seed extra: not one of RFC 8456's benchmarks, nor beside one of its sections


def is_extra(bench: dict) -> bool:
    """A ★ extra (the OVN RAFT leader re-election): measured like a benchmark, but not an RFC 8456 one."""
    return bench.get("rfc_section") == EXTRA_SECTION


class ResultsError(ValueError):
    """A results file that cannot be read as bmwg-sdn results."""


class ResultStore:
    """The run's results in memory, written to ``path`` after every change.  A write that fails (full
    disk, folder gone) never stops the run: the data stays in memory, a copy goes to the temporary folder
    when it can, and ``write_error`` / ``fallback`` say what happened and where the data is."""

    def __init__(self, path: str | os.PathLike, run: dict):
        self.path = Path(path)
        self.data = {"schema_version": SCHEMA_VERSION, "run": run, "benchmarks": []}
        self.write_error: str | None = None
        self.history = ""                   # what became of the run in --history's store, when given
        self.fallback: Path | None = None

    def add_benchmark(self, entry: dict) -> dict:
        missing = [k for k in ("benchmark", "rfc_section", "unit") if k not in entry]
        if missing:
            raise ValueError(f"benchmark entry lacks {', '.join(missing)}")
        entry.setdefault("parameters", {})
        entry.setdefault("trials", [])
        entry.setdefault("summary", None)
        entry.setdefault("verdict", None)
        entry.setdefault("outcome", {"status": "running"})
        self.data["benchmarks"].append(entry)
        return entry

    def save(self) -> None:
        try:
            write_json_atomic(self.path, self.data)
            return
        except OSError as exc:
            self.write_error = f"cannot write {self.path}: {exc.strerror or exc}"
        fallback = Path(tempfile.gettempdir()) / f"bmwg-sdn-results-{os.getpid()}.json"
        try:
            write_json_atomic(fallback, self.data)
            self.fallback = fallback
        except OSError:
            self.fallback = None

    def where(self) -> str:
        """Where the results are now, in words (for the terminal)."""
        if self.write_error is None:
            return str(self.path)
        return f"{self.write_error}; " + (f"a copy is in {self.fallback}" if self.fallback else
                                         "no copy could be written: the results are only in this terminal")


def write_json_atomic(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".results-", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=2, default=str)
            f.write("\n")
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; the results are for every reader of the folder
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def load_results(path: str | os.PathLike) -> dict:
    """Read and check a results.json; errors name the file and what is wrong."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ResultsError(f"cannot read results file {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path} is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        raise ResultsError(f"{path} has no 'benchmarks' list: not a bmwg-sdn results file")
    version = data.get("schema_version", 1)
    if version not in READABLE_VERSIONS:
        raise ResultsError(f"{path} has schema_version {version!r}; this bmwg-sdn reads versions "
                           f"{', '.join(map(str, READABLE_VERSIONS))}")
    for i, bench in enumerate(data["benchmarks"]):
        if not isinstance(bench, dict):
            raise ResultsError(f"{path}: benchmarks[{i}] is not an object")
        missing = [k for k in ("benchmark", "unit", "trials") if k not in bench]
        if missing:
            raise ResultsError(f"{path}: benchmarks[{i}] lacks {', '.join(missing)}")
        if not isinstance(bench["trials"], list):
            raise ResultsError(f"{path}: benchmarks[{i}].trials is not a list")
    return data


def validate(data, source: str = "results") -> None:
    """Check ``data`` against results.schema.json; ResultsError names the JSON path of the first problem.

    Needs the ``jsonschema`` package (imported here only)."""
    try:
        import jsonschema
    except ImportError:
        raise ImportError("validating results needs the jsonschema package: pip install jsonschema") from None
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        raise ResultsError(f"{source}: {error.json_path}: {error.message}")


def ok_values(bench: dict) -> list:
    """The values of a benchmark's successful trials."""
    return [t["value"] for t in bench.get("trials", []) if t.get("ok") and t.get("value") is not None]


def lower_bound_trials(bench: dict) -> list:
    """The successful measured trials whose value is a lower bound (a cap was reached)."""
    return [t for t in bench.get("trials", []) if t.get("ok") and t.get("value") is not None and t.get("lower_bound")]


def lower_bound_note(n: int) -> str:
    return f"lower bound: {n} trial(s) reached a cap"


def find_benchmark(data: dict, name: str, variant: str | None = None) -> dict | None:
    """The benchmark ``name``; with ``variant`` (a series point, a change event), that entry, else
    the only entry of that name when there is just one."""
    same = [b for b in data.get("benchmarks", []) if b.get("benchmark") == name]
    if variant is not None:
        exact = [b for b in same if b.get("variant") == variant]
        if exact:
            return exact[0]
        return same[0] if len(same) == 1 and not same[0].get("variant") else None
    return same[0] if same else None
