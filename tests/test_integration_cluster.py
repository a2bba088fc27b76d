"""Integration: ryu-ha, the suite's reference active/standby Ryu cluster, against the emulator (RFC 8456 §5.4.1)."""

import os

import pytest

from emulator import codec
from emulator.params import RampParams
from fixtures.cluster import RyuHaCluster
from fixtures.discovery import TopologyEmulator
from fixtures.failover import FailoverParams, failover_choice, failover_trial
from fixtures.paths import PathParams

pytestmark = pytest.mark.integration


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("kill", ["sigkill", "sigstop"])
def test_ryu_ha_fails_over_when_its_master_goes_and_leaves_no_process_behind(tmp_path, shard_pool, kill):
    """One master per switch, then the master is killed (or frozen): the survivor takes the OVSDB lock and sends
    ROLE_REQUEST(MASTER) with a newer generation, frames reach TP2 again, and the killed member comes back as a
    slave for the next trial, which kills the other one."""
    cluster = RyuHaCluster(tmp_path, members=2, probe_ms=500, openflow=codec.OFP13)
    why = cluster.missing()
    if why:
        pytest.skip(why)
    p = FailoverParams(rate=200.0, lead=0.5, td=10.0, keepalive_ms=500)
    topo, choice = failover_choice(p)
    em = TopologyEmulator(lambda: shard_pool, codec.OFP13, RampParams(), 1, p.fabric())
    cluster.start()
    pids = [m.pid for m in cluster.members] + [m.proc.pid for m in cluster.coordination.members]
    try:
        first = failover_trial(em, cluster, topo, choice, PathParams(), p, kill, index=0)
        second = failover_trial(em, cluster, topo, choice, PathParams(), p, kill, index=1)
    finally:
        em.withdraw()
        cluster.stop()
    for r in (first, second):
        assert r["failover_ms"] > 0 and r["packet_loss"] >= 1 and not r["negligible"]
        assert r["loss_seen_ms"] is not None and r["role_request_ms"] is not None and r["lock_ms"] is not None
        assert r["loss_seen_ms"] < r["failover_ms"] and r["role_request_ms"] < r["failover_ms"]
        assert r["frames_received"] + r["packet_loss"] == r["frames_sent"]
    assert first["killed"] != second["killed"]            # the master rotates
    if kill == "sigstop":
        assert "echo timeout" in first["loss_seen_as"]    # a frozen controller is found by the switch's keep-alive
    assert not [pid for pid in pids if alive(pid)]
