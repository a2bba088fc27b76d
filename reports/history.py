"""The run history: every run appended to one store, keyed so that readings of the same thing line up.

A store is a SQLite file or a PostgreSQL database named by a ``postgresql://`` URL (``--history STORE`` on a run,
``python -m reports history add --history STORE results.json ...`` for runs already made); reports/stores.py holds
what differs between the two, this module what a store is.  What it keeps of a run:

- the run: when it started and ended, its status (reports/outcome.py), the controller's kind, version and mode,
  the suite's version and commit, the command, and the file it was read from;
- its **testbed**: a fingerprint of what decides how noisy a reading is (core count and model, memory, kernel,
  Python, the emulator's shards and the CPUs each side was pinned to), never a figure read at run time such as a
  clock speed or the load average; runs on one testbed compare, runs on two are kept apart;
- every benchmark entry: the benchmark, its variant and its **cell** (the parameters that decide the figure:
  everything the entry records but the repetition counts, with loopback ports left out), the unit and direction,
  the outcome, the summary, the verdict, and every trial's value.

A run is written in one transaction, so a store never holds half a run; a second writer waits for the first
(SQLite's write lock, PostgreSQL's advisory lock; up to ``BUSY_TIMEOUT_MS``).  A run is known by its start time,
the harness's pid, its command and its controller: adding it again is a no-op, and adding a later copy of its file
(a run that was still going when it was first added: it has finished since, or holds more trials) replaces it; an
earlier copy changes nothing.  The schema carries its version (``meta``); an older store is migrated when opened,
in one transaction, and a newer one is refused.  Opened read-only (a run's ``--history-readonly``), a store is only
read, through a connection that cannot write: it must exist at this schema version.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import math
import re
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Optional

from .outcome import judge, run_status
from .stores import StoreError, connect, masked

SCHEMA_VERSION = 2
RUN_SIZE_KEYS = ("repetitions", "warmup")        # how many trials, not what a trial measures
LOOPBACK_PORT = re.compile(r"(127(?:\.\d{1,3}){3}):\d{1,5}")
BUSY_TIMEOUT_MS = 30_000

MIGRATIONS = {
    # {ID}, {KEY}, {REAL}, {SORTED}: each database's own type (reports/stores.py)
    # version reached: statements that take a store from the version before it
    1: [
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "CREATE TABLE testbeds (id TEXT PRIMARY KEY, description TEXT NOT NULL)",
        "CREATE TABLE runs (id {ID}, run_key TEXT NOT NULL UNIQUE, content_hash TEXT NOT NULL, "
        "started {SORTED}, finished TEXT, interrupted TEXT, status TEXT NOT NULL, controller TEXT, "
        "controller_version TEXT, controller_mode TEXT, suite_version TEXT, suite_commit TEXT, "
        "suite_modified INTEGER, testbed TEXT NOT NULL REFERENCES testbeds(id), command TEXT, source TEXT, "
        "added TEXT NOT NULL, run_json TEXT NOT NULL)",
        "CREATE TABLE entries (id {ID}, run_id {KEY} NOT NULL REFERENCES runs(id) "
        "ON DELETE CASCADE, position INTEGER NOT NULL, benchmark TEXT NOT NULL, variant TEXT, title TEXT, "
        "rfc_section TEXT, unit TEXT, higher_is_better INTEGER, cell_key TEXT NOT NULL, cell TEXT NOT NULL, "
        "status TEXT NOT NULL, n INTEGER, mean {REAL}, median {REAL}, stdev {REAL}, ci95_low {REAL}, ci95_high {REAL}, "
        "summary_json TEXT, verdict_json TEXT)",
        "CREATE TABLE trials (entry_id {KEY} NOT NULL REFERENCES entries(id) ON DELETE CASCADE, "
        "idx INTEGER NOT NULL, value {REAL}, ok INTEGER NOT NULL, reason TEXT, duration_s {REAL}, started TEXT, "
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
HISTORY_TABLES = {"meta", "testbeds", "runs", "entries", "trials"}


class HistoryError(Exception):
    """A store that cannot be opened, read or written: the message names it and why."""


def oldest_first(table: str = "") -> str:
    """Runs in the order they started, one without a start first: SQLite sorts NULL first and PostgreSQL last, so
    it is said."""
    return f"{table}started IS NOT NULL, {table}started, {table}id"


def newest_first(table: str = "") -> str:
    return f"{table}started IS NULL, {table}started DESC, {table}id DESC"


def reading(method):
    """A reading method whose database error is said as the store's, with why."""
    @functools.wraps(method)
    def read(self, *args, **kw):
        try:
            return method(self, *args, **kw)
        except StoreError as exc:
            raise HistoryError(f"history {self.spec}: cannot be read ({exc})") from exc
    return read


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


def kept(data: dict) -> dict:
    """A run as the store keeps it: without ``run.history_error`` (a run its store did not take when it ended, added
    later, is the run it was), every non-finite number None (SQLite would store NaN as NULL, PostgreSQL as NaN)."""
    run = {k: v for k, v in (data.get("run") or {}).items() if k != "history_error"}
    return finite({**data, "run": run})


def finite(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


def run_key(data: dict) -> str:
    run = data.get("run") or {}
    controller = run.get("controller") or {}
    return digest({"started": run.get("started"), "pid": run.get("pid"), "command": run.get("command"),
                   "controller": controller.get("name")}, 24)


@dataclass
class Added:
    run_id: int
    state: str          # "added", "present" (the same file again) or "replaced" (a later copy of the run)
    entries: int


class HistoryStore:
    """One history store, a SQLite file or a PostgreSQL database (reports/stores.py); see the module's docstring."""

    def __init__(self, spec: str, create: bool = True, readonly: bool = False):
        """``create``: a store that does not exist is made; ``readonly``: the store is only read (it must exist and
        be at this suite's schema version), through a connection that cannot write."""
        self.spec = masked(str(spec))
        self.readonly = readonly
        try:
            self.db = connect(str(spec), create and not readonly, BUSY_TIMEOUT_MS, readonly)
        except StoreError as exc:
            raise HistoryError(f"history {self.spec}: {exc}") from exc
        try:
            found = self.checked_version()
            if (readonly or not create) and found == 0:
                raise HistoryError(f"history {self.spec}: no such store (no history tables in that database)")
            if readonly and found < SCHEMA_VERSION:
                raise HistoryError(f"history {self.spec}: schema version {found} is older than this suite's "
                                   f"({SCHEMA_VERSION}) and a read-only store is not migrated: open it once with "
                                   "write access (python -m reports history list --history STORE migrates it)")
            self.migrate(found)
        except BaseException as exc:
            self.db.close()
            if isinstance(exc, StoreError):
                raise HistoryError(f"history {self.spec}: not a usable {self.db.kind} store ({exc})") from exc
            raise

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "HistoryStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def one(self, sql: str, args=()) -> Optional[tuple]:
        rows = self.db.query(sql, args)[1]
        return rows[0] if rows else None

    def all(self, sql: str, args=()) -> list:
        return self.db.query(sql, args)[1]

    # ----------------------------------------------------------------- schema

    def version(self) -> int:
        tables = self.db.tables()
        if "meta" not in tables:
            if self.db.foreign(tables, HISTORY_TABLES):
                raise HistoryError(f"history {self.spec}: a {self.db.kind} database that is not a bmwg-sdn history "
                                   "store")
            return 0
        row = self.one("SELECT value FROM meta WHERE key = 'schema_version'")
        return int(row[0]) if row else 0

    def migrate(self, found: int) -> None:
        """Bring the store from version ``found`` (as read when it was opened) to :data:`SCHEMA_VERSION` in one
        transaction.  A store already at it is only read, so a read-only store can be listed, checked and drawn."""
        if found == SCHEMA_VERSION:
            return
        with self.transaction("the schema was not migrated"):
            found = self.checked_version()          # again, under the write lock: another writer may have been first
            for version in range(found + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[version]:
                    self.db.query(statement.format(**self.db.types))
                self.db.query("INSERT INTO meta (key, value) VALUES ('schema_version', ?) "
                              "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (str(version),))

    def checked_version(self) -> int:
        found = self.version()
        if found > SCHEMA_VERSION:
            raise HistoryError(f"history {self.spec}: schema version {found} is newer than this suite's "
                               f"({SCHEMA_VERSION}); use a newer bmwg-sdn")
        return found

    @contextmanager
    def transaction(self, failed: str):
        """One write transaction, the store taken at once (a second writer waits up to the busy timeout); rolled
        back on any error, a database's error said as ``failed`` with why."""
        try:
            self.db.begin(BUSY_TIMEOUT_MS)
        except StoreError as exc:
            self.db.rollback()
            raise HistoryError(f"history {self.spec}: {failed} ({exc})") from exc
        try:
            yield
            self.db.commit()
        except BaseException as exc:
            self.db.rollback()
            if isinstance(exc, StoreError):
                raise HistoryError(f"history {self.spec}: {failed} ({exc})") from exc
            raise

    # ----------------------------------------------------------------- writing

    def add(self, data: dict, source: Optional[str] = None, tag: Optional[str] = None) -> Added:
        """Append one run (a loaded results.json), named ``tag`` if given, in one transaction; see the module's
        docstring."""
        if self.readonly:
            raise HistoryError(f"history {self.spec}: opened read-only, the run was not written")
        data = kept(data)
        key, content = run_key(data), digest(data, 32)
        with self.transaction("the run was not written"):
            old = self.one("SELECT id, content_hash, run_json, tag FROM runs WHERE run_key = ?", (key,))
            if old is not None and (old[1] == content or not self._more_complete(data, old[0], old[2])):
                if tag is not None:
                    self.db.query("UPDATE runs SET tag = ? WHERE id = ?", (tag, old[0]))
                n = self.one("SELECT count(*) FROM entries WHERE run_id = ?", (old[0],))[0]
                return Added(old[0], "present", n)
            if old is not None:
                self.db.query("DELETE FROM runs WHERE id = ?", (old[0],))
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
        stored = self.one("SELECT count(*) FROM trials t JOIN entries e ON e.id = t.entry_id WHERE e.run_id = ?",
                          (run_id,))[0]
        return sum(len(e.get("trials") or []) for e in data.get("benchmarks") or []) > stored

    def _insert_run(self, data: dict, key: str, content: str, source: Optional[str], run_id: Optional[int],
                    tag: Optional[str]) -> int:
        run = data.get("run") or {}
        controller = run.get("controller") or {}
        code = run.get("code") or {}
        bed = fingerprint(run)
        self.db.query("INSERT INTO testbeds (id, description) VALUES (?, ?) ON CONFLICT (id) DO NOTHING",
                      (digest(bed, 12), canonical(bed)))
        modified = code.get("modified")
        row = {"run_key": key, "content_hash": content, "started": run.get("started"),
               "finished": run.get("finished"), "interrupted": run.get("interrupted"), "status": run_status(data),
               "controller": controller.get("name"), "controller_version": controller.get("version"),
               "controller_mode": controller.get("mode"), "suite_version": code.get("version"),
               "suite_commit": code.get("commit"), "suite_modified": None if modified is None else int(bool(modified)),
               "testbed": digest(bed, 12), "command": run.get("command"), "source": source,
               "added": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "run_json": canonical(run),
               "tag": tag}
        if run_id is not None:              # a replaced run keeps its number
            row["id"] = run_id
        return self.db.insert(f"INSERT INTO runs ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                              list(row.values()))

    def _insert_entry(self, run_id: int, position: int, entry: dict) -> int:
        summary = entry.get("summary") or {}
        verdict = entry.get("verdict")
        hib = entry.get("higher_is_better")
        entry_id = self.db.insert(
            "INSERT INTO entries (run_id, position, benchmark, variant, title, rfc_section, unit, higher_is_better, "
            "cell_key, cell, status, n, mean, median, stdev, ci95_low, ci95_high, summary_json, verdict_json) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (run_id, position, entry.get("benchmark"), entry.get("variant"), entry.get("title"),
             entry.get("rfc_section"), entry.get("unit"), None if hib is None else int(bool(hib)), cell_key(entry),
             canonical(cell(entry)), judge(entry)[0], summary.get("n"), summary.get("mean"),
             summary.get("median"), summary.get("stdev"), summary.get("ci95_low"), summary.get("ci95_high"),
             canonical(summary) if summary else None, canonical(verdict) if verdict else None))
        rows = []
        for number, trial in enumerate(entry.get("trials") or [], 1):
            value = trial.get("value")
            rows.append((entry_id, trial.get("index", number),
                         float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None,
                         int(bool(trial.get("ok"))), trial.get("reason"), trial.get("duration_s"),
                         trial.get("started")))
        self.db.insert_many("INSERT INTO trials (entry_id, idx, value, ok, reason, duration_s, started) "
                            "VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
        return entry_id

    # ----------------------------------------------------------------- reading

    @reading
    def runs(self) -> list:
        """Every run, oldest first: (id, started, status, controller, version, commit, testbed, entries, tag)."""
        return self.all(
            "SELECT r.id, r.started, r.status, r.controller, r.controller_version, r.suite_commit, r.testbed, "
            f"(SELECT count(*) FROM entries e WHERE e.run_id = r.id), r.tag FROM runs r ORDER BY {oldest_first('r.')}")

    @reading
    def find(self, against: str, controller: Optional[str] = None) -> int:
        """The run ``against`` names (:data:`AGAINST_FORMS`): the latest run that was not an error (stopped, or a
        benchmark that could not run), among all runs, those with that tag, or those of that controller
        version.  ``latest`` and ``controller-version:`` look only at the runs of ``controller`` (a controller's
        name, as runs record it) when it is given; a tag names its run whatever the controller."""
        where, args = "status != 'error'", []
        if against.startswith("tag:") and against[4:]:
            where, args, controller = where + " AND tag = ?", [against[4:]], None
        elif against.startswith("controller-version:") and against[19:]:
            where, args = where + " AND controller_version = ?", [against[19:]]
        elif against != "latest":
            raise HistoryError(f"{against!r} is not one of {AGAINST_FORMS}")
        if controller is not None:
            where, args = where + " AND controller = ?", args + [controller]
        row = self.one(f"SELECT id FROM runs WHERE {where} ORDER BY {newest_first()} LIMIT 1", args)
        if row is None:
            of = f" of controller {controller}" if controller is not None else ""
            raise HistoryError(f"history {self.spec}: no run{of} matches --against {against} (a stopped run or one "
                               "with an error is never a baseline)")
        return row[0]

    @reading
    def describe(self, run_id: int) -> str:
        """``run N (controller version, started ..., testbed ...)``: which run a baseline is, in one phrase."""
        controller, version, started, bed = self.one(
            "SELECT controller, controller_version, started, testbed FROM runs WHERE id = ?", (run_id,))
        return f"run {run_id} ({controller or '?'} {version or 'version unknown'}, started {started}, testbed {bed})"

    @reading
    def results(self, run_id: int) -> dict:
        """A stored run as a results.json holds it, as far as a baseline needs: the run, and each entry's name,
        variant, unit, direction, summary and trials."""
        (run_json,) = self.one("SELECT run_json FROM runs WHERE id = ?", (run_id,))
        benchmarks = []
        for entry_id, benchmark, variant, unit, hib, summary in self.all(
                "SELECT id, benchmark, variant, unit, higher_is_better, summary_json FROM entries WHERE run_id = ? "
                "ORDER BY position", (run_id,)):
            trials = [{"index": i, "value": v, "ok": bool(ok), **({"reason": r} if r else {})}
                      for i, v, ok, r in self.all("SELECT idx, value, ok, reason FROM trials WHERE entry_id = ? "
                                                  "ORDER BY idx", (entry_id,))]
            benchmarks.append({"benchmark": benchmark, "variant": variant, "unit": unit,
                               "higher_is_better": None if hib is None else bool(hib),
                               "summary": json.loads(summary) if summary else None, "trials": trials})
        return {"schema_version": 2, "run": json.loads(run_json), "benchmarks": benchmarks}

    @reading
    def points(self) -> list:
        """Every measured entry (passed or failed, with a median) as a dict, in the order the runs started: the
        points of the series (reports/changes.py)."""
        names, found = self.db.query(
            "SELECT e.benchmark, e.variant, e.cell_key, e.title, e.unit, e.higher_is_better, e.median, e.mean, e.n, "
            "e.ci95_low, e.ci95_high, e.status, r.id, r.started, r.controller, r.controller_version, r.suite_commit, "
            "r.testbed, r.tag, r.source "
            "FROM entries e JOIN runs r ON r.id = e.run_id "
            "WHERE e.median IS NOT NULL AND e.status IN ('passed', 'failed') "
            f"ORDER BY {oldest_first('r.')}, e.position")
        rows = [dict(zip(names, row)) for row in found]
        for row in rows:
            row["run"] = row.pop("id")
            if row["higher_is_better"] is not None:
                row["higher_is_better"] = bool(row["higher_is_better"])
        return rows

    @reading
    def counts(self) -> dict:
        return {table: self.one(f"SELECT count(*) FROM {table}")[0]
                for table in ("runs", "entries", "trials", "testbeds")}


def open_store(spec: str, create: bool = True, readonly: bool = False) -> HistoryStore:
    return HistoryStore(spec, create, readonly)


def check_spec(spec: str, readonly: bool = False) -> Optional[str]:
    """Why ``--history spec`` cannot be used (it is opened, and created or migrated, to find out; only read when
    ``readonly``), or None."""
    try:
        open_store(spec, readonly=readonly).close()
    except HistoryError as exc:
        return str(exc)
    except OSError as exc:
        return f"history {masked(spec)}: {exc.strerror or exc}"
    return None
