"""Integration: odl-cluster, three OpenDaylight members clustered on 127.0.0.1 (fixtures/devices/odl_cluster.py).

The device test boots the cluster, checks that every member's JVM listens on 127.0.0.1 only (its Akka port among
them) and that the members agree on every shard's leader, times one re-election of the default shard, a few
CRUD requests at the leader and at a follower and a few add-flow RPCs at a switch's owner and at another member,
and leaves no member behind.  The suite test runs §5.4.1 against
the cluster as a user does (``--controller odl``).  Without Maven or a Java 11 runtime they skip, saying which;
with ``BMWG_REQUIRE_ODL`` set (``.ci/run`` sets it) they fail instead."""

import os

import psutil
import pytest
from helpers import pytest_run
from results_check import check_results_files

from emulator import codec
from emulator.params import RampParams
from fixtures.devices.odl import missing
from fixtures.devices.odl_cluster import OdlCluster
from fixtures.fabric import TopologyEmulator
from fixtures.families.datastore import RPC_FABRIC, DatastoreParams, crud_trial, reelection_trial, rpc_trial
from reports.results import load_results

WHY = missing()
pytestmark = [pytest.mark.external,
              pytest.mark.skipif(WHY is not None and not os.environ.get("BMWG_REQUIRE_ODL"), reason=str(WHY))]


def jvm_listeners(pid: int) -> set:
    try:
        return {(c.laddr.ip, c.laddr.port) for c in psutil.Process(pid).net_connections(kind="inet")
                if c.status == psutil.CONN_LISTEN}
    except psutil.NoSuchProcess:
        return set()


def test_three_members_on_loopback_agree_re_elect_a_leader_and_answer_crud_and_rpcs_by_role(tmp_path, shard_pool):
    if WHY is not None:
        pytest.fail(f"BMWG_REQUIRE_ODL is set and {WHY}")
    cluster = OdlCluster(tmp_path / "logs", members=3, election_timeout_s=2.0)
    jvms = []
    try:
        cluster.start()
        assert cluster.boot_s > 0 and cluster.unsettled() is None
        for m in cluster.members:
            jvms.append(m.pid)
            socks = jvm_listeners(m.pid)
            assert {ip for ip, _ in socks} == {"127.0.0.1"}, (m.name, socks)
            assert {("127.0.0.1", m.ports.akka), ("127.0.0.1", m.ports.restconf), ("127.0.0.1", m.port)} <= socks
        p = DatastoreParams(crud_requests=20)
        r = reelection_trial(cluster, p, 2.0)
        assert 0 <= r["reelection_ms"] <= 2 * 2000 + 5000 and r["terms"] >= 1, r
        assert r["new_leader"] != r["old_leader"] and r["rejoined_s"] > 0
        assert cluster.unsettled() is None           # the killed member is back and the shards agree
        for role in ("leader", "follower"):
            c = crud_trial(cluster, p, role)
            assert c["role"] == role and c["requests"] == 20
            assert all(0 < c[f"{op}_ms"]["min"] <= c[f"{op}_ms"]["max"]
                       for op in ("create", "read", "update", "delete"))
        # the routed RPC: at the switch's owner, and at another member that routes it there
        em = TopologyEmulator(lambda: shard_pool, codec.OFP13, RampParams(), 1, RPC_FABRIC)
        for index, role in enumerate(("owner", "non-owner")):
            r = rpc_trial(cluster, em, DatastoreParams(rpc_requests=20), role, index)
            assert r["role"] == role and r["requests"] == 20 and r["flow_mods_at_switch"] >= 20, r
            assert (r["member"] == r["owner"]) == (role == "owner") and 0 < r["rpc_ms"]["min"] <= r["rpc_ms"]["max"]
    finally:
        cluster.stop()
    jvms += [m.proc.pid for m in cluster.members if m.proc is not None]
    assert not [pid for pid in jvms if pid and psutil.pid_exists(pid)
                and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]


def test_failover_against_odl_cluster_kills_the_owner_of_tp1s_switch(tmp_path):
    if WHY is not None:
        pytest.fail(f"BMWG_REQUIRE_ODL is set and {WHY}")
    out = tmp_path / "r"
    run = pytest_run("suites", "-k", "controller_failover_time", "--controller", "odl", "--repetitions", "2",
                     "--failover-lead", "0.5", "--report-dir", out, timeout=1800)
    assert run.returncode == 0, run.stdout[-5000:]
    got = {b["benchmark"]: b for b in load_results(out / "results.json")["benchmarks"]}
    cft = got["test_controller_failover_time"]
    assert cft["outcome"]["status"] == "passed" and cft["summary"]["n"] == 2, cft["outcome"]
    assert cft["parameters"]["cluster"] == "odl-cluster" and cft["parameters"]["cluster_nodes"] == 3
    assert any("no learning switch" in n for n in cft["notes"]), cft["notes"]
    for t in cft["trials"]:
        d = t["details"]
        assert d["killed"] == d["master_before"] and d["role_request_ms"] is not None, d
    check_results_files(out)
