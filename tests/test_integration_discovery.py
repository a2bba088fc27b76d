"""Integration: topologies against the embedded Ryu with its topology discovery, over loopback —
the fabric relays Ryu's LLDP (in one shard and across two), Ryu's REST view matches, a link
going down reaches it, and the three topology suites end to end."""

import json
import subprocess
import sys
import time
from array import array

import pytest
from helpers import PROJECT_ROOT, pytest_run
from results_check import check_results_files

from emulator import codec
from emulator import topology as tp
from emulator.params import FabricParams, RampParams
from fixtures.devices.northbound import compare, deployed_view
from fixtures.devices.ryu import OsKenController, RyuController
from fixtures.fabric import TopologyEmulator
from fixtures.families.topology import DiscoveryParams, change_trial, discovery_trial
from reports.results import load_results

pytestmark = pytest.mark.system


@pytest.fixture
def family():
    return RyuController


@pytest.fixture
def ryu(tmp_path, family):
    ctl = family(tmp_path, openflow=codec.OFP13, ready_timeout=60)
    ctl.use_role("discovery")
    ctl.start()
    yield ctl
    ctl.stop()


def wait_match(nb, want, seconds=20.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        view = nb.topology()
        if compare(want, view).matches:
            return view
        time.sleep(0.2)   # polling another process's view; not a measurement
    raise AssertionError(f"no match: {compare(want, view).summary()}")


@pytest.mark.parametrize("family", [RyuController, OsKenController], ids=["ryu", "osken"])
@pytest.mark.parametrize("shards", [1, 2])
def test_ryu_discovers_the_emulated_leaf_spine(ryu, shards, shard_pool):
    topo = tp.leaf_spine(2, 3)
    em = TopologyEmulator(lambda: shard_pool, codec.OFP13, RampParams(), shards, FabricParams(host_refresh=1.0))
    try:
        em.deploy(topo, ryu.address)
        view = wait_match(ryu.northbound(), deployed_view(topo))
        assert view.counts() == {"nodes": 5, "links": 6, "directed_links": 12, "hosts": 3}
        st = em.state()
        assert st.t_first_discovery_out is not None and st.counters["relayed"] >= 12
        if shards == 2:
            assert st.counters["sent_remote"] > 0          # spines and leaves sit in different shards
        assert set(st.first_in_map()) >= {dst for _, dst in topo.directed_links()}
        lat = array("q", st.relay_latency_ns)
        assert lat and max(lat) < 50_000_000 and st.sessions_lost == 0
    finally:
        em.withdraw()


def test_discovery_and_change_trials_against_ryu(ryu, shard_pool):
    topo = tp.linear(3)
    em = TopologyEmulator(lambda: shard_pool, codec.OFP13, RampParams())
    p = DiscoveryParams(poll_interval=0.5, change_td=3.0)
    try:
        r = discovery_trial(em, ryu, topo, p)
        assert 0 <= r["dt_ms"] < r["nb_match_after_tm1_ms"] and r["nodes"] == 3 and r["links"] == 2
        ryu.stop()
        ryu.start()
        c = change_trial(em, ryu, topo, p, "link")
        assert c["notices"] == 2 and 0 <= c["tdt_ms"] <= 3000
        assert c["northbound_reflects_ms"] is not None      # Ryu drops the link on PORT_STATUS
        ryu.stop()
        ryu.start()
        c = change_trial(em, ryu, topo, p, "switch")   # the taken-down switch is
        assert c["event"] == "switch down" and 0 <= c["tdt_ms"] <= 3000          # not a session lost
    finally:
        em.withdraw()


def test_topology_suites_end_to_end_on_ryu(tmp_path):
    out = tmp_path / "r"
    r = pytest_run("suites", "-k", "network_topology or network_discovery", "--repetitions", "2",
                   "--topology", "linear:2", "--topology", "leaf-spine:1x2", "--poll-interval", "0.5",
                   "--change-event", "switch", "--change-td", "3", "--size-family", "linear", "--size-start", "2",
                   "--size-max", "3", "--size-poll", "0.5", "--report-dir", str(out), "-rs")
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    data = load_results(out / "results.json")
    got = {(b["benchmark"], (b.get("series_x") or {}).get("value")) for b in data["benchmarks"]}
    assert ("test_network_topology_discovery_time", 2) in got and ("test_network_topology_discovery_time", 3) in got
    assert ("test_network_discovery_size", None) in got
    for b in data["benchmarks"]:
        assert b["outcome"]["status"] == "passed" and b["summary"]["n"] == 2, b["benchmark"]
    size = next(b for b in data["benchmarks"] if b["benchmark"] == "test_network_discovery_size")
    assert size["summary"]["mean"] == 3 and all(t.get("lower_bound") for t in size["trials"])
    change = [b for b in data["benchmarks"] if b["benchmark"] == "test_network_topology_change_detection_time"]
    # a switch's failure here; a link's is tox -e ci's (short-run.args, the default --change-event)
    assert {b["parameters"]["change"] for b in change} == {"a switch fails"}
    report = (out / "report.md").read_text()
    assert "Network Topology Discovery Time" in report and "Network Discovery Size" in report
    check_results_files(out)


@pytest.mark.component
def test_topology_suites_skip_a_controller_without_a_northbound(tmp_path):
    # Issue 15 §2, issue 12 §1.3: a benchmark skipped before it starts still appears everywhere, as skipped.
    out = tmp_path / "r"
    r = pytest_run("suites", "-k", "network_topology_discovery", "--controller", "null", "--repetitions", "2",
                   "--report-dir", out, "-rs", timeout=120)
    assert r.returncode == 0, r.stdout[-3000:]
    assert "has no topology northbound the suite can read" in r.stdout
    bench = load_results(out / "results.json")["benchmarks"][0]
    assert bench["outcome"]["status"] == "skipped" and "no topology northbound" in bench["outcome"]["reason"]
    assert "<skipped" in (out / "junit.xml").read_text() and "SKIPPED" in (out / "report.md").read_text()


@pytest.mark.component
def test_selfbench_topology_relays_every_link_against_the_lldp_prober(tmp_path):
    out = tmp_path / "topo.json"
    r = subprocess.run([sys.executable, "-m", "fixtures.selfbench", "topology", "--topology", "leaf-spine:2x3",
                        "--shards", "2", "--duration", "1", "--lldp-period", "0.2", "--out", str(out)],
                       cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    (row,) = json.loads(out.read_text())
    assert row["link_ends_relayed"] == row["link_ends"] == 12 and row["not_delivered"] == 0
    assert "not_delivered_while_connecting" in row
    assert row["relay_rate_per_s"] > 0 and row["relay_latency_median_us"] < 50_000
