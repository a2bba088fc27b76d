"""The run history: every run appended to one store, keyed so that readings of the same thing line up.

A store is a SQLite file (``--history PATH`` on a run, ``python -m reports history add --history PATH
results.json ...`` for runs already made).  What it keeps of a run:

- the run: when it started and ended, its status (reports/outcome.py), the controller's kind, version and mode,
  the suite's version and commit, the command, and the file it was read from;
- its **testbed**: a fingerprint of what decides how noisy a reading is (core count and model, memory, kernel,
  Python, the emulator's shards and the CPUs each side was pinned to), never a figure read at run time such as a
  clock speed or the load average; runs on one testbed compare, runs on two are kept apart;
- every benchmark entry: the benchmark, its variant and its **cell** (the parameters that decide the figure:
  everything the entry records but the repetition counts, with loopback ports left out), the unit and direction,
  the outcome, the summary, the verdict, and every trial's value.

A run is written in one transaction, so a store never holds half a run; a second writer waits for the first
(SQLite's write lock, ``busy_timeout``).  A run is known by its start time, the harness's pid, its command and its
controller: adding it again is a no-op, and adding a later copy of its file (a run that was still going when it
was first added: it has finished since, or holds more trials) replaces it; an earlier copy changes nothing.
The schema carries its version (``meta``); an older store is migrated when opened,
in one transaction, and a newer one is refused.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import sqlite3
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .outcome import judge, run_status

SCHEMA_VERSION = 2
RUN_SIZE_KEYS = ("repetitions", "warmup")        # how many trials, not what a trial measures
LOOPBACK_PORT = re.compile(r"(127(?:\.\d{1,3}){3}):\d{1,5}")
BUSY_TIMEOUT_MS = 30_000

MIGRATIONS = {
    # version reached: statements that take a store from the version before it
    1: [
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "CREATE TABLE testbeds (id TEXT PRIMARY KEY, description TEXT NOT NULL)",
        "CREATE TABLE runs (id INTEGER PRIMARY KEY, run_key TEXT NOT NULL UNIQUE, content_hash TEXT NOT NULL, "
        "started TEXT, finished TEXT, interrupted TEXT, status TEXT NOT NULL, controller TEXT, "
        "controller_version TEXT, controller_mode TEXT, suite_version TEXT, suite_commit TEXT, "
        "suite_modified INTEGER, testbed TEXT NOT NULL REFERENCES testbeds(id), command TEXT, source TEXT, "
        "added TEXT NOT NULL, run_json TEXT NOT NULL)",
        "CREATE TABLE entries (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id) "
        "ON DELETE CASCADE, position INTEGER NOT NULL, benchmark TEXT NOT NULL, variant TEXT, title TEXT, "
        "rfc_section TEXT, unit TEXT, higher_is_better INTEGER, cell_key TEXT NOT NULL, cell TEXT NOT NULL, "
        "status TEXT NOT NULL, n INTEGER, mean REAL, median REAL, stdev REAL, ci95_low REAL, ci95_high REAL, "
        "summary_json TEXT, verdict_json TEXT)",
        "CREATE TABLE trials (entry_id INTEGER NOT NULL REFERENCES entries(id) ON DELETE CASCADE, "
        "idx INTEGER NOT NULL, value REAL, ok INTEGER NOT NULL, reason TEXT, duration_s REAL, started TEXT, "
        "PRIMARY KEY (entry_id, idx))",
        "CREATE INDEX entries_series ON entries (benchmark, cell_key)",
        "CREATE INDEX runs_started ON runs (started)",
    ],
    2: [    # a run's tag (a release name), for --against tag:NAME
        "ALTER TABLE runs ADD COLUMN tag TEXT",
        "CREATE INDEX runs_tag ON runs (tag)",
    ],
}
AGAINST_FORMS = "latest, tag:NAME or controller-version:X"


class HistoryError(Exception):
    """A store that cannot be opened, read or written: the message names it and why."""


def canonical(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def digest(value, length: int = 16) -> str:
    return hashlib.sha256(canonical(value).encode()).hexdigest()[:length]


def fingerprint(run: dict) -> dict:
    """What decides how noisy a run's readings are (see the module's docstring)."""
    host = run.get("host") or {}
    emulator = run.get("emulator") or {}
    memory = host.get("memory_gib")
    return {"cpus": host.get("cpus"), "cpu_model": host.get("cpu_model"),
            "memory_gib": round(memory) if isinstance(memory, (int, float)) else memory,
            "os": host.get("os"), "python": host.get("python"),
            "emulator_shards": emulator.get("shards"), "busy_poll": emulator.get("busy_poll"),
            "cpu_affinity": run.get("cpu_affinity")}


def fingerprint_id(run: dict) -> str:
    return digest(fingerprint(run), 12)


def cell(entry: dict) -> dict:
    """The parameters that decide an entry's figure: all but the repetition counts, loopback ports left out."""
    params = {k: v for k, v in (entry.get("parameters") or {}).items() if k not in RUN_SIZE_KEYS}
    return json.loads(LOOPBACK_PORT.sub(r"\1:PORT", canonical(params)))


def cell_key(entry: dict) -> str:
    return digest({"benchmark": entry.get("benchmark"), "variant": entry.get("variant"), "cell": cell(entry)})


def run_key(data: dict) -> str:
    run = data.get("run") or {}
    controller = run.get("controller") or {}
    return digest({"started": run.get("started"), "pid": run.get("pid"), "command": run.get("command"),
                   "controller": controller.get("name")}, 24)


def is_url(spec: str) -> bool:
    return "://" in spec


@dataclass
class Added:
    run_id: int
    state: str          # "added", "present" (the same file again) or "replaced" (a later copy of the run)
    entries: int


class HistoryStore:
    """One history store (a SQLite file); see the module's docstring."""

    def __init__(self, spec: str, create: bool = True):
        self.spec = str(spec)
        if is_url(self.spec):
            scheme = self.spec.split("://", 1)[0]
            raise HistoryError(f"history {self.spec}: a {scheme}:// store is not supported by this version; give "
                               "the path of a SQLite file")
        path = Path(self.spec)
        if not create and not path.is_file():
            raise HistoryError(f"history {self.spec}: no such store")
        if path.is_dir():
            raise HistoryError(f"history {self.spec}: is a folder, not a SQLite file")
        if not path.parent.is_dir():
            raise HistoryError(f"history {self.spec}: its folder {path.parent} does not exist")
        try:
            self.db = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        except sqlite3.Error as exc:
            raise HistoryError(f"history {self.spec}: cannot be opened ({exc})") from exc
        try:
            self.db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self.db.execute("PRAGMA foreign_keys = ON")
            self.migrate()
        except BaseException as exc:
            self.db.close()
            if isinstance(exc, sqlite3.Error):
                raise HistoryError(f"history {self.spec}: not a usable SQLite store ({exc})") from exc
            raise

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "HistoryStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ----------------------------------------------------------------- schema

    def version(self) -> int:
        has_meta = self.db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
        if not has_meta:
            tables = self.db.execute("SELECT count(*) FROM sqlite_master WHERE type='table'").fetchone()[0]
            if tables:
                raise HistoryError(f"history {self.spec}: a SQLite file that is not a bmwg-sdn history store")
            return 0
        row = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        return int(row[0]) if row else 0

    def migrate(self) -> None:
        """Bring the store to :data:`SCHEMA_VERSION` in one transaction (a newer store is refused).  A store already
        at it is only read, so a read-only store can be listed, checked and drawn."""
        if self.checked_version() == SCHEMA_VERSION:
            return
        with self.transaction("the schema was not migrated"):
            found = self.checked_version()          # again, under the write lock: another writer may have been first
            for version in range(found + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[version]:
                    self.db.execute(statement)
                self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)",
                                (str(version),))

    def checked_version(self) -> int:
        found = self.version()
        if found > SCHEMA_VERSION:
            raise HistoryError(f"history {self.spec}: schema version {found} is newer than this suite's "
                               f"({SCHEMA_VERSION}); use a newer bmwg-sdn")
        return found

    @contextmanager
    def transaction(self, failed: str):
        """One write transaction, taken at once (a second writer waits up to the busy timeout); rolled back on any
        error, a SQLite error said as ``failed`` with why."""
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise HistoryError(f"history {self.spec}: {failed} ({exc})") from exc
        try:
            yield
            self.db.execute("COMMIT")
        except BaseException as exc:
            if self.db.in_transaction:       # SQLite may have rolled back already (a full disk, an I/O error)
                try:
                    self.db.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
            if isinstance(exc, sqlite3.Error):
                raise HistoryError(f"history {self.spec}: {failed} ({exc})") from exc
            raise

    # ----------------------------------------------------------------- writing

    def add(self, data: dict, source: Optional[str] = None, tag: Optional[str] = None) -> Added:
        """Append one run (a loaded results.json), named ``tag`` if given, in one transaction; see the module's
        docstring."""
        key, content = run_key(data), digest(data, 32)
        with self.transaction("the run was not written"):
            old = self.db.execute("SELECT id, content_hash, run_json, tag FROM runs WHERE run_key = ?",
                                  (key,)).fetchone()
            if old is not None and (old[1] == content or not self._more_complete(data, old[0], old[2])):
                if tag is not None:
                    self.db.execute("UPDATE runs SET tag = ? WHERE id = ?", (tag, old[0]))
                n = self.db.execute("SELECT count(*) FROM entries WHERE run_id = ?", (old[0],)).fetchone()[0]
                return Added(old[0], "present", n)
            if old is not None:
                self.db.execute("DELETE FROM runs WHERE id = ?", (old[0],))
                tag = tag if tag is not None else old[3]
            run_id = self._insert_run(data, key, content, source, old[0] if old else None, tag)
            entries = [self._insert_entry(run_id, position, entry)
                       for position, entry in enumerate(data.get("benchmarks") or [])]
        return Added(run_id, "replaced" if old else "added", len(entries))

    def _more_complete(self, data: dict, run_id: int, run_json: str) -> bool:
        """Whether ``data`` is a later copy of the stored run: it has finished and the stored one had not, or it
        holds more trials."""
        finished_before = bool(json.loads(run_json).get("finished"))
        if bool((data.get("run") or {}).get("finished")) != finished_before:
            return not finished_before
        stored = self.db.execute("SELECT count(*) FROM trials t JOIN entries e ON e.id = t.entry_id "
                                 "WHERE e.run_id = ?", (run_id,)).fetchone()[0]
        return sum(len(e.get("trials") or []) for e in data.get("benchmarks") or []) > stored

    def _insert_run(self, data: dict, key: str, content: str, source: Optional[str], run_id: Optional[int],
                    tag: Optional[str]) -> int:
        run = data.get("run") or {}
        controller = run.get("controller") or {}
        code = run.get("code") or {}
        bed = fingerprint(run)
        self.db.execute("INSERT OR IGNORE INTO testbeds (id, description) VALUES (?, ?)",
                        (digest(bed, 12), canonical(bed)))
        modified = code.get("modified")
        cur = self.db.execute(
            "INSERT INTO runs (id, run_key, content_hash, started, finished, interrupted, status, controller, "
            "controller_version, controller_mode, suite_version, suite_commit, suite_modified, testbed, command, "
            "source, added, run_json, tag) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (run_id, key, content, run.get("started"), run.get("finished"), run.get("interrupted"),
             run_status(data), controller.get("name"), controller.get("version"), controller.get("mode"),
             code.get("version"), code.get("commit"), None if modified is None else int(bool(modified)),
             digest(bed, 12), run.get("command"), source,
             dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), canonical(run), tag))
        return cur.lastrowid

    def _insert_entry(self, run_id: int, position: int, entry: dict) -> int:
        summary = entry.get("summary") or {}
        verdict = entry.get("verdict")
        hib = entry.get("higher_is_better")
        cur = self.db.execute(
            "INSERT INTO entries (run_id, position, benchmark, variant, title, rfc_section, unit, higher_is_better, "
            "cell_key, cell, status, n, mean, median, stdev, ci95_low, ci95_high, summary_json, verdict_json) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (run_id, position, entry.get("benchmark"), entry.get("variant"), entry.get("title"),
             entry.get("rfc_section"), entry.get("unit"), None if hib is None else int(bool(hib)), cell_key(entry),
             canonical(cell(entry)), judge(entry)[0], summary.get("n"), summary.get("mean"),
             summary.get("median"), summary.get("stdev"), summary.get("ci95_low"), summary.get("ci95_high"),
             canonical(summary) if summary else None, canonical(verdict) if verdict else None))
        entry_id = cur.lastrowid
        rows = []
        for number, trial in enumerate(entry.get("trials") or [], 1):
            value = trial.get("value")
            rows.append((entry_id, trial.get("index", number),
                         float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None,
                         int(bool(trial.get("ok"))), trial.get("reason"), trial.get("duration_s"),
                         trial.get("started")))
        self.db.executemany("INSERT INTO trials (entry_id, idx, value, ok, reason, duration_s, started) "
                            "VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
        return entry_id

    # ----------------------------------------------------------------- reading

    def runs(self) -> list:
        """Every run, oldest first: (id, started, status, controller, version, commit, testbed, entries, tag)."""
        return self.db.execute(
            "SELECT r.id, r.started, r.status, r.controller, r.controller_version, r.suite_commit, r.testbed, "
            "(SELECT count(*) FROM entries e WHERE e.run_id = r.id), r.tag FROM runs r ORDER BY r.started, r.id"
        ).fetchall()

    def find(self, against: str) -> int:
        """The run ``against`` names (:data:`AGAINST_FORMS`): the latest run that was not an error (stopped, or a
        benchmark that could not run), among all runs, those with that tag, or those of that controller
        version."""
        where, args = "status != 'error'", []
        if against.startswith("tag:") and against[4:]:
            where, args = where + " AND tag = ?", [against[4:]]
        elif against.startswith("controller-version:") and against[19:]:
            where, args = where + " AND controller_version = ?", [against[19:]]
        elif against != "latest":
            raise HistoryError(f"{against!r} is not one of {AGAINST_FORMS}")
        row = self.db.execute(f"SELECT id FROM runs WHERE {where} ORDER BY started DESC, id DESC LIMIT 1",
                              args).fetchone()
        if row is None:
            raise HistoryError(f"history {self.spec}: no run matches --against {against} (a stopped run or one "
                               "with an error is never a baseline)")
        return row[0]

    def describe(self, run_id: int) -> str:
        """``run N (controller version, started ..., testbed ...)``: which run a baseline is, in one phrase."""
        controller, version, started, bed = self.db.execute(
            "SELECT controller, controller_version, started, testbed FROM runs WHERE id = ?", (run_id,)).fetchone()
        return f"run {run_id} ({controller or '?'} {version or 'version unknown'}, started {started}, testbed {bed})"

    def results(self, run_id: int) -> dict:
        """A stored run as a results.json holds it, as far as a baseline needs: the run, and each entry's name,
        variant, unit, direction, summary and trials."""
        (run_json,) = self.db.execute("SELECT run_json FROM runs WHERE id = ?", (run_id,)).fetchone()
        benchmarks = []
        for entry_id, benchmark, variant, unit, hib, summary in self.db.execute(
                "SELECT id, benchmark, variant, unit, higher_is_better, summary_json FROM entries WHERE run_id = ? "
                "ORDER BY position", (run_id,)).fetchall():
            trials = [{"index": i, "value": v, "ok": bool(ok), **({"reason": r} if r else {})}
                      for i, v, ok, r in self.db.execute("SELECT idx, value, ok, reason FROM trials WHERE entry_id = ? "
                                                         "ORDER BY idx", (entry_id,))]
            benchmarks.append({"benchmark": benchmark, "variant": variant, "unit": unit,
                               "higher_is_better": None if hib is None else bool(hib),
                               "summary": json.loads(summary) if summary else None, "trials": trials})
        return {"schema_version": 2, "run": json.loads(run_json), "benchmarks": benchmarks}

    def points(self) -> list:
        """Every measured entry (passed or failed, with a median) as a dict, in the order the runs started: the
        points of the series (reports/changes.py)."""
        cur = self.db.execute(
            "SELECT e.benchmark, e.variant, e.cell_key, e.title, e.unit, e.higher_is_better, e.median, e.mean, e.n, "
            "e.ci95_low, e.ci95_high, e.status, r.id, r.started, r.controller, r.controller_version, r.suite_commit, "
            "r.testbed, r.tag, r.source "
            "FROM entries e JOIN runs r ON r.id = e.run_id "
            "WHERE e.median IS NOT NULL AND e.status IN ('passed', 'failed') ORDER BY r.started, r.id, e.position")
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, row)) for row in cur.fetchall()]
        for row in rows:
            row["run"] = row.pop("id")
            if row["higher_is_better"] is not None:
                row["higher_is_better"] = bool(row["higher_is_better"])
        return rows

    def counts(self) -> dict:
        with closing(self.db.cursor()) as cur:
            return {table: cur.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                    for table in ("runs", "entries", "trials", "testbeds")}


def open_store(spec: str, create: bool = True) -> HistoryStore:
    return HistoryStore(spec, create)


def check_spec(spec: str) -> Optional[str]:
    """Why ``--history spec`` cannot be used (it is opened, and created or migrated, to find out), or None."""
    try:
        open_store(spec).close()
    except HistoryError as exc:
        return str(exc)
    except OSError as exc:
        return f"history {spec}: {exc.strerror or exc}"
    return None
