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
