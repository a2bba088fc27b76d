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
