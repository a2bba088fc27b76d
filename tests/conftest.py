"""Fixtures the self-tests share: a shard pool, and started controllers that are always stopped."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def shard_pool():
    """Two emulator shards on this host, for the in-process integration tests."""
    from emulator.pool import ShardPool
    pool = ShardPool([("popen", 2)])
    yield pool
    pool.close()


@pytest.fixture
def started():
    """``started(controller)``: start it now, stop it at the end of the test whatever happens."""
    ctls = []

    def start(ctl):
        ctls.append(ctl)
        ctl.start()
        return ctl

    yield start
    for ctl in ctls:
        ctl.stop()


REQUIRE_FASTPATH = "BMWG_REQUIRE_FASTPATH"


def compiled():
    """The compiled PACKET_IN module (emulator._fastpath); the test skips when it is not built, and fails instead
    with BMWG_REQUIRE_FASTPATH=1 (as .ci/run sets it: there the project's install must have built it)."""
    import importlib
    import os
    try:
        return importlib.import_module("emulator._fastpath")
    except ImportError as exc:
        if os.environ.get(REQUIRE_FASTPATH, "").strip() not in ("", "0"):
            pytest.fail(f"{REQUIRE_FASTPATH} is set and the compiled path is not built: {exc}")
        pytest.skip(f"the compiled PACKET_IN path is not built: {exc}")


@pytest.fixture(params=["compiled", "python"])
def packet_in_path(request, monkeypatch):
    """Run a test over each PACKET_IN path (emulator.fastpath): the compiled one (see :func:`compiled`) and pure
    Python.  Modules that exercise the path use it for every test
    (``pytestmark = pytest.mark.usefixtures("packet_in_path")``)."""
    from emulator import fastpath
    monkeypatch.setattr(fastpath, "native", compiled() if request.param == "compiled" else None)
    return request.param


POSTGRESQL_URL = "BMWG_POSTGRESQL_URL"
REQUIRE_POSTGRESQL = "BMWG_REQUIRE_POSTGRESQL"


@pytest.fixture(scope="session")
def postgresql_server():
    """The URL of a real PostgreSQL server the tests may create databases in: ``BMWG_POSTGRESQL_URL`` (a role that
    may CREATE DATABASE; its password in the URL or in ``PGPASSWORD``), as ``.ci/postgresql start`` prints it.
    Without it the test skips, and fails instead with BMWG_REQUIRE_POSTGRESQL=1 (as .ci/run sets it)."""
    import os
    url = os.environ.get(POSTGRESQL_URL, "").strip()
    if not url:
        why = f"no PostgreSQL server to test against: set {POSTGRESQL_URL} (.ci/postgresql start prints it)"
        if os.environ.get(REQUIRE_POSTGRESQL, "").strip() not in ("", "0"):
            pytest.fail(f"{REQUIRE_POSTGRESQL} is set and there is {why[3:]}")
        pytest.skip(why)
    return url


@pytest.fixture
def postgresql_database(postgresql_server):
    """``postgresql_database(name)``: the URL of a new, empty database of its own on the real PostgreSQL server
    (:func:`postgresql_server`), dropped after the test."""
    import uuid
    from urllib.parse import urlsplit

    from reports.stores import PostgresDatabase
    admin = PostgresDatabase(postgresql_server, True, 10_000)
    made = []

    def new(name="h"):
        database = f"bmwg_test_{name}_{uuid.uuid4().hex[:12]}"
        admin.query(f'CREATE DATABASE "{database}"')
        made.append(database)
        return urlsplit(postgresql_server)._replace(path=f"/{database}").geturl()

    try:
        yield new
    finally:
        try:
            for database in made:
                admin.query(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        finally:
            admin.close()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.external)])
def history_spec(request, tmp_path):
    """``history_spec(name)``: the spec of a new, empty history store: a SQLite file in the test's folder, or a
    database of its own on the real PostgreSQL server (:func:`postgresql_database`).  Tests that take it run
    against both (the PostgreSQL ones are in the external tier: they need the server)."""
    if request.param == "sqlite":
        return lambda name="h": str(tmp_path / f"{name}.db")
    return request.getfixturevalue("postgresql_database")


# --------------------------------------------------------------------------- the tiers (tests/tiers.py)

import tiers  # noqa: E402  (tests/ is on sys.path: the tests import their helpers so)


def pytest_addoption(parser, pluginmanager):
    tiers.addoption(parser)
    pluginmanager.import_plugin("pytester")      # the plugin's own tests run pytest in-process


def pytest_configure(config):
    tiers.configure(config)
