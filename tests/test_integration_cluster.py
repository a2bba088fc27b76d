"""Integration: ryu-ha, the suite's reference active/standby Ryu cluster, against the emulator (RFC 8456 §5.4.1)."""

import os

import pytest

from emulator import codec
from emulator.params import RampParams
from fixtures.dataplane import TrialContext
from fixtures.devices.clusters import RyuHaCluster
from fixtures.fabric import TopologyEmulator
from fixtures.families.failover import FailoverParams, failover_choice, failover_trial
from fixtures.families.paths import PathParams

pytestmark = pytest.mark.system


def alive(pid: int) -> bool:
    """Running (a zombie left for a parent that does not reap it has ended)."""
    try:
        os.kill(pid, 0)
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except (ProcessLookupError, FileNotFoundError):
        return False
    return state != "Z"


@pytest.mark.parametrize("kill", ["sigkill", "sigstop"])
def test_ryu_ha_fails_over_when_its_master_goes_and_leaves_no_process_behind(tmp_path, shard_pool, kill):
    """One master per switch, then the master is killed (or frozen): the survivor takes the OVSDB lock and sends
    ROLE_REQUEST(MASTER) with a newer generation, frames reach TP2 again, and the killed member comes back as a
    slave for the next trial, which kills the other one."""
    cluster = RyuHaCluster(tmp_path, members=2, probe_ms=1000, openflow=codec.OFP13)
    why = cluster.unavailable()
    if why:
        pytest.skip(why)
    p = FailoverParams(rate=200.0, lead=0.5, td=10.0, keepalives=(1000,))
    topo, choice = failover_choice(p)
    em = TopologyEmulator(lambda: shard_pool, codec.OFP13, RampParams(), 1, p.fabric(1000))
    cluster.start()
    pids = [m.pid for m in cluster.members] + [m.proc.pid for m in cluster.coordination.members]
    try:
        first = failover_trial(TrialContext(em, topo, cluster, PathParams(), choice), p, kill, index=0)
        second = failover_trial(TrialContext(em, topo, cluster, PathParams(), choice), p, kill, index=1)
    finally:
        em.withdraw()
        cluster.stop()
    for r in (first, second):
        assert r["failover_ms"] > 0 and r["packet_loss"] >= 1 and not r["negligible"]
        assert r["loss_seen_ms"] is not None and r["role_request_ms"] is not None and r["lock_ms"] is not None
        assert r["lock_ms"] <= r["role_request_ms"] < r["failover_ms"]
        if kill == "sigkill":
            assert r["loss_seen_ms"] < r["lock_ms"]           # the closed session hands the lock on
        else:       # the lease (1-2 keep-alives) ends before the switches' echo timeout (3 keep-alives) finds it
            assert r["lock_ms"] < r["loss_seen_ms"] and 1000 <= r["lock_ms"] <= 2000 + 500
        # every frame sent arrived or is counted lost, but for the last few still on their way when TP1 stopped
        unaccounted = r["frames_sent"] - r["frames_received"] - r["packet_loss"] - (r.get("failback_loss") or 0)
        assert 0 <= unaccounted <= 3 and r["failback_ms"] is not None
    assert first["killed"] != second["killed"]            # the master rotates
    if kill == "sigstop":
        assert "echo timeout" in first["loss_seen_as"]    # a frozen controller is found by the switch's keep-alive
    assert not [pid for pid in pids if alive(pid)]


def test_an_external_cluster_is_killed_and_restored_by_the_users_commands(tmp_path, shard_pool):
    """The external adapter's contract, against a stub cluster of two ovs-testcontroller processes (both EQUAL,
    each a learning switch: active/active): the kill and restore templates are filled for the member that goes,
    the switches' roles count as converged when all are EQUAL, and the survivor carries the flows on."""
    import shutil
    import subprocess

    from fixtures.devices.clusters import ExternalCluster
    from fixtures.ports import free_port

    exe = shutil.which("ovs-testcontroller")
    if exe is None:
        pytest.skip("ovs-testcontroller is not installed (Debian openvswitch-testcontroller)")
    ports = [free_port("127.0.0.1"), free_port("127.0.0.1")]
    run = (f"{exe} ptcp:{{port}}:{{host}} -O OpenFlow13 --detach --no-chdir --pidfile={tmp_path}/{{index}}.pid "
           f"--unixctl={tmp_path}/{{index}}.ctl --log-file={tmp_path}/{{index}}.log -vconsole:off -vsyslog:off")
    stub = ExternalCluster((("127.0.0.1", ports[0]), ("127.0.0.1", ports[1])),
                           kill_command=f"kill -{{signal}} $(cat {tmp_path}/{{index}}.pid)",
                           restore_command=f"rm -f {tmp_path}/{{index}}.pid; {run}", openflow=codec.OFP13)
    for i in range(2):
        stub.restore(i)                                   # the restore template also starts the stub's members
    pids = []
    try:
        stub.prepare_trial()
        p = FailoverParams(cluster="external:127.0.0.1:%d,127.0.0.1:%d" % tuple(ports), kill_command="x",
                           rate=200.0, lead=0.5, td=5.0)
        topo, choice = failover_choice(p)
        em = TopologyEmulator(lambda: shard_pool, codec.OFP13, RampParams(), 1, p.fabric(1000))
        pids = [int((tmp_path / f"{i}.pid").read_text()) for i in (1, 2)]
        try:
            r = failover_trial(TrialContext(em, topo, stub, PathParams(), choice), p, "sigkill", index=0)
        finally:
            em.withdraw()
        assert r["negligible"] and r["failover_ms"] == 0.0 and r["packet_loss"] == 0
        assert r["killed"] == f"127.0.0.1:{ports[0]}" and r["master_before"] is None   # all EQUAL: trial 0, member 1
        assert r["loss_seen_ms"] is not None and r["flow_mods_duplicate"] > 0
        assert [c[0] for c in stub.commands[-2:]] == ["kill", "restore"] and all(c[3] == 0 for c in stub.commands)
        assert not alive(pids[0]) and alive(int((tmp_path / "1.pid").read_text()))      # member 1 came back
        stub.prepare_trial()
    finally:
        for i in (1, 2):
            pidfile = tmp_path / f"{i}.pid"
            if pidfile.exists():
                subprocess.run(["kill", "-KILL", pidfile.read_text().strip()], check=False)


def test_the_deployment_axis_runs_the_processing_rate_on_ryu_alone_and_on_ryu_ha(tmp_path):
    """--cluster-nodes 1,2 against Ryu: §5.1.3 on the controller alone, then on ryu-ha of 2, whose switches connect to
    both members and send on the session its master claimed; discovery's ryu-ha cell skips, saying why (its members
    have no topology northbound).  One series over the node count; every process gone at the end."""
    from helpers import pytest_run, said

    from reports.results import load_results
    why = RyuHaCluster(tmp_path, members=2).unavailable()
    if why:
        pytest.skip(why)
    out = tmp_path / "r"
    r = pytest_run("suites", "-k", "async_message_processing_rate or topology_discovery_time", "--controller", "ryu",
                   "--cluster-nodes", "1,2", "--repetitions", "1", "--warmup", "0", "--trial-duration", "0.3",
                   "--switches", "2", "--settle", "0.1", "--rest", "0.1", "--rate-step", "0.5",
                   "--rate-resolution", "0.2", "--max-confirm", "2", "--report-dir", str(out))
    entries = {(b["benchmark"], b["variant"]): b for b in load_results(out / "results.json")["benchmarks"]}
    # On ryu-ha, 0.3 s trials may find no level loss-free on a noisy host (CI twice: "no offered rate was answered
    # without loss"; a member's pause near a trial's end reads as backlog).  That entry then fails, and so does the
    # run, saying why; the search's own rules are the unit tests' (tests/test_async_logic.py).  Anything else fails.
    # The rate at the loss goal of the same searches may then have no level either.
    unproven = ("test_async_message_processing_rate_loss_free", "2sw-2n")
    at_goal = ("test_async_message_processing_rate_at_loss_goal", "2sw-2n")
    if r.returncode == 1 and entries.get(unproven, {}).get("outcome", {}).get("status") == "failed":
        assert "no offered rate was answered without loss" in entries[unproven]["outcome"]["reason"], said(r, out)
        failed = {k for k, b in entries.items() if b["outcome"]["status"] == "failed"}
        assert failed in ({unproven}, {unproven, at_goal}), said(r, out)
        if at_goal in failed:
            assert "no level of the search lost at most" in entries[at_goal]["outcome"]["reason"], said(r, out)
    else:
        assert r.returncode == 0, said(r, out)
    alone = entries[("test_async_message_processing_rate", "2sw-1n")]
    cluster = entries[("test_async_message_processing_rate", "2sw-2n")]
    assert alone["outcome"]["status"] == cluster["outcome"]["status"] == "passed"
    assert alone["parameters"]["deployment"].startswith("standalone") and alone["series_x"]["value"] == 1
    assert cluster["parameters"]["cluster"] == "ryu-ha" and cluster["parameters"]["cluster_nodes"] == 2
    assert cluster["series_x"] == {"name": "cluster nodes (2 switches)", "value": 2}
    pre = cluster["preflight"]
    assert pre["members"] == 2 and pre["switches_with_master"] == 2 and pre["switches_answered"] == 2
    assert cluster["summary"]["n"] == 1 and cluster["summary"]["mean"] > 0
    skipped = entries[("test_network_topology_discovery_time", "leaf-spine-2x2-2n")]
    assert skipped["outcome"]["status"] == "skipped"
    assert "cluster ryu-ha of 2 has no topology northbound" in skipped["outcome"]["reason"]
    assert entries[("test_network_topology_discovery_time", "leaf-spine-2x2-1n")]["outcome"]["status"] == "passed"
