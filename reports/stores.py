"""The two databases a run history can live in, behind one small interface (reports/history.py speaks only to it).

- **SQLite**: a file path (the default; nothing to install or start).
- **PostgreSQL**: ``postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE`` (also ``postgres://``), through the
  pure-Python driver pg8000; ``?sslmode=disable|prefer|require|verify-ca|verify-full`` (``prefer`` unless given)
  and ``&sslrootcert=FILE`` ask for TLS as libpq reads them.  The password may be left out of the URL and given in
  ``PGPASSWORD`` instead, so that it never reaches a run's recorded command; a URL with one is only ever shown
  with it masked.  The store's tables live in the connecting role's current schema (its ``search_path``), beside
  whatever else the database holds.

What differs between them and is settled here: how a statement names its parameters (SQLite's ``?``, pg8000's
``%s``), the DDL types (an identity key, a double-precision float, text that sorts byte by byte), how a new row's id
comes back, what the tables of a store are, and how a writer takes the store for itself: SQLite's ``BEGIN
IMMEDIATE`` (the file's write lock), PostgreSQL's transaction-scoped advisory lock, each waited for up to the
history's busy timeout.
"""

from __future__ import annotations

import getpass
import os
import re
import sqlite3
import ssl
from pathlib import Path
from typing import Optional
from urllib.parse import parse_qs, unquote, urlsplit

URL_SCHEMES = ("postgresql", "postgres")
ADVISORY_LOCK = 0x626D7767          # "bmwg": the one lock every writer of a PostgreSQL store takes
CONNECT_TIMEOUT_S = 10
READ_SLACK_S = 60        # a read may take this long beyond the lock timeout before the connection is given up


class StoreError(Exception):
    """The database could not be reached or said no: the message says why, in the database's words."""


def is_url(spec: str) -> bool:
    return "://" in spec


# A URL's password: from the colon after its user name to the last "@" of the word (a password may hold "@", "/"
# or ":" that were not percent-encoded); any scheme, any case.  ARG_PASSWORD: the same in one command-line argument,
# where a quoted password may also hold spaces.
URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s:/@]*:)\S*@")
ARG_PASSWORD = re.compile(r"(?is)\b([a-z][a-z0-9+.-]*://[^\s:/@]*:).*@")


def masked(text: str) -> str:
    """``text`` (a spec, a message) as it may be shown or kept: every URL's password replaced by ``***``."""
    return URL_PASSWORD.sub(r"\1***@", str(text))


def masked_arg(arg: str) -> str:
    """One command-line argument as it may be kept: a URL's password in it replaced by ``***``."""
    return ARG_PASSWORD.sub(r"\1***@", str(arg))


class SqliteDatabase:
    """A SQLite file; ``timeout_ms`` is how long a writer waits for another's lock; ``readonly`` opens it so that
    nothing can be written (SQLite's ``mode=ro``), which a file the user may not write allows."""

    kind = "SQLite"
    types = {"ID": "INTEGER PRIMARY KEY", "KEY": "INTEGER", "REAL": "REAL", "SORTED": "TEXT"}

    def __init__(self, spec: str, create: bool, timeout_ms: int, readonly: bool = False):
        path = Path(spec)
        if (readonly or not create) and not path.is_file():
            raise StoreError("no such store")
        if path.is_dir():
            raise StoreError("is a folder, not a SQLite file")
        if not path.parent.is_dir():
            raise StoreError(f"its folder {path.parent} does not exist")
        try:
            target, uri = (path.resolve().as_uri() + "?mode=ro", True) if readonly else (str(path), False)
            self.db = sqlite3.connect(target, timeout=timeout_ms / 1000, isolation_level=None, uri=uri)
            self.db.execute(f"PRAGMA busy_timeout = {int(timeout_ms)}")
            self.db.execute("PRAGMA foreign_keys = ON")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot be opened ({exc})") from exc

    def _run(self, sql: str, args=(), many: bool = False):
        """The statement run (``many``: once per row of ``args``), its cursor; SQLite's error said as a StoreError."""
        try:
            return self.db.executemany(sql, args) if many else self.db.execute(sql, tuple(args))
        except sqlite3.Error as exc:
            raise StoreError(str(exc)) from exc

    def query(self, sql: str, args=()) -> tuple:
        """(column names, rows as tuples)."""
        cur = self._run(sql, args)
        try:
            return [d[0] for d in cur.description or ()], cur.fetchall()
        except sqlite3.Error as exc:
            raise StoreError(str(exc)) from exc

    def insert(self, sql: str, args) -> int:
        return self._run(sql, args).lastrowid

    def insert_many(self, sql: str, rows: list) -> None:
        self._run(sql, rows, many=True)

    def tables(self) -> set:
        return {name for (name,) in self.query("SELECT name FROM sqlite_master WHERE type = 'table'")[1]}

    def foreign(self, tables: set, ours: set) -> bool:
        """A file with tables but no history: somebody else's database."""
        return bool(tables)

    def begin(self, timeout_ms: int) -> None:
        self.query("BEGIN IMMEDIATE")

    def commit(self) -> None:
        self.query("COMMIT")

    def rollback(self) -> None:
        if self.db.in_transaction:       # SQLite may have rolled back already (a full disk, an I/O error)
            try:
                self.db.execute("ROLLBACK")
            except sqlite3.Error:
                pass

    def close(self) -> None:
        self.db.close()


def pg_message(exc: Exception) -> str:
    """A pg8000 error in the server's words: its message field, not the whole dict of fields."""
    fields = exc.args[0] if exc.args and isinstance(exc.args[0], dict) else None
    if fields:
        return fields.get("M", str(fields)) + (f" (SQLSTATE {fields['C']})" if fields.get("C") else "")
    return str(exc)


class PostgresDatabase:
    """A PostgreSQL database named by a URL (see the module's docstring)."""

    kind = "PostgreSQL"
    types = {"ID": "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY", "KEY": "BIGINT",
             "REAL": "DOUBLE PRECISION", "SORTED": 'TEXT COLLATE "C"'}

    def __init__(self, spec: str, create: bool, timeout_ms: int, readonly: bool = False):
        target = parse_url(spec)
        try:
            import pg8000.dbapi
        except ImportError as exc:
            raise StoreError(f"needs the PostgreSQL driver pg8000 (pip install pg8000): {exc}") from exc
        self.errors = pg8000.dbapi.Error
        try:
            self.db = pg8000.dbapi.connect(**target, timeout=CONNECT_TIMEOUT_S, application_name="bmwg-sdn history")
        except (self.errors, OSError) as exc:
            raise StoreError(f"cannot connect ({pg_message(exc)})") from exc
        self.db.autocommit = True           # transactions are begun and ended by the store, as with SQLite
        # pg8000 keeps the connect timeout on the socket for every later read: a writer waiting for another's lock
        # (lock_timeout, below) or a long read must not be cut off by it
        sock = getattr(self.db, "_usock", None)
        if sock is not None:
            sock.settimeout(timeout_ms / 1000 + READ_SLACK_S)
        self.cur = self.db.cursor()
        if readonly:            # every transaction of this session read-only: the server refuses any write
            try:
                self._run("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
            except StoreError:
                self.close()
                raise

    def _run(self, sql: str, args=(), many: bool = False):
        """The statement run (``many``: once per row of ``args``); the server's error said as a StoreError."""
        statement = sql.replace("?", "%s")          # pg8000's parameters; no statement here holds a ? of its own
        try:
            if many:
                self.cur.executemany(statement, args)
            else:
                self.cur.execute(statement, tuple(args))
        except (self.errors, OSError) as exc:
            raise StoreError(pg_message(exc)) from exc

    def query(self, sql: str, args=()) -> tuple:
        self._run(sql, args)
        if self.cur.description is None:
            return [], []
        return [d[0] for d in self.cur.description], [tuple(row) for row in self.cur.fetchall()]

    def insert(self, sql: str, args) -> int:
        return self.query(sql + " RETURNING id", args)[1][0][0]

    def insert_many(self, sql: str, rows: list) -> None:
        self._run(sql, rows, many=True)

    def tables(self) -> set:
        return {name for (name,) in self.query("SELECT table_name FROM information_schema.tables "
                                               "WHERE table_schema = current_schema()")[1]}

    def foreign(self, tables: set, ours: set) -> bool:
        """A database shared with others is expected; tables named as ours without the history's meta are not."""
        return bool(tables & ours)

    def begin(self, timeout_ms: int) -> None:
        self._run("BEGIN")
        self._run(f"SET LOCAL lock_timeout = {int(timeout_ms)}")
        self._run("SELECT pg_advisory_xact_lock(?)", (ADVISORY_LOCK,))

    def commit(self) -> None:
        self._run("COMMIT")

    def rollback(self) -> None:
        try:
            self.cur.execute("ROLLBACK")
        except (self.errors, OSError):
            pass

    def close(self) -> None:
        try:
            self.db.close()
        except (self.errors, OSError):
            pass


SSL_MODES = ("disable", "prefer", "require", "verify-ca", "verify-full")


def parse_url(spec: str) -> dict:
    """pg8000's connect arguments from a ``postgresql://`` URL; a URL it cannot be is said why (never with its
    password)."""
    try:
        parts = urlsplit(spec)
        port = parts.port or 5432
        query = parse_qs(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
    except ValueError as exc:
        raise StoreError("not a URL of the form postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=MODE] "
                         f"({'a bad port' if 'Port' in str(exc) else 'unreadable'})") from None
    if parts.scheme not in URL_SCHEMES:
        raise StoreError(f"a {parts.scheme}:// store is not supported; give a SQLite file's path or a "
                         "postgresql://USER@HOST[:PORT]/DATABASE URL")
    unknown = sorted(set(query) - {"sslmode", "sslrootcert"})
    if unknown or parts.fragment or any(len(v) != 1 for v in query.values()):
        raise StoreError(f"a postgresql:// URL here takes only ?sslmode= (one of {', '.join(SSL_MODES)}) and "
                         f"?sslrootcert=FILE, each once{'; not ' + ', '.join(unknown) if unknown else ''}")
    if not parts.hostname:
        raise StoreError("the URL names no host (postgresql://USER@HOST[:PORT]/DATABASE)")
    try:
        user = unquote(parts.username) if parts.username else getpass.getuser()
    except (KeyError, OSError) as exc:
        raise StoreError(f"the URL names no user and the login name cannot be found ({exc})") from None
    database = unquote(parts.path.lstrip("/")) or user
    password = unquote(parts.password) if parts.password is not None else os.environ.get("PGPASSWORD")
    target = {"user": user, "password": password, "host": parts.hostname, "port": port, "database": database}
    target["ssl_context"] = ssl_context(query.get("sslmode", ["prefer"])[0], query.get("sslrootcert", [None])[0])
    return target


def ssl_context(mode: str, root: Optional[str]):
    """pg8000's ``ssl_context`` for libpq's ``sslmode``: no TLS (disable, False); TLS if the server offers it,
    unchecked (prefer, the default, None); TLS or no connection, unchecked (require); the server's certificate
    checked against ``root`` or the system's CAs (verify-ca), and its name too (verify-full)."""
    if mode not in SSL_MODES:
        raise StoreError(f"sslmode={mode} is not one of {', '.join(SSL_MODES)}")
    if mode in ("disable", "prefer"):
        if root:
            raise StoreError("sslrootcert needs sslmode=verify-ca or verify-full")
        return False if mode == "disable" else None
    try:
        context = ssl.create_default_context(cafile=root)
    except (OSError, ssl.SSLError) as exc:
        raise StoreError(f"sslrootcert={root} cannot be read ({exc})") from None
    if mode in ("require", "verify-ca"):
        context.check_hostname = False
    if mode == "require":
        context.verify_mode = ssl.CERT_NONE
    return context


def connect(spec: str, create: bool, timeout_ms: int, readonly: bool = False):
    """The database ``spec`` names: a URL's, or a SQLite file; ``readonly``: opened so that nothing can be
    written."""
    if is_url(spec):
        return PostgresDatabase(spec, create, timeout_ms, readonly)
    return SqliteDatabase(spec, create, timeout_ms, readonly)
