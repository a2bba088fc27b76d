"""Integration: the data plane against the embedded Ryu (simple_switch_13) over loopback — TP2
announces its hosts, TP1 streams to them, Ryu's FLOW_MODs fill the emulated tables hop by hop and
every frame reaches TP2."""

import time

import pytest

from emulator import codec
from emulator import testports as tpt
from emulator import topology as tp
from fixtures.controllers import RyuController
from fixtures.discovery import TopologyEmulator

pytestmark = pytest.mark.integration


@pytest.fixture
def ryu(tmp_path):
    ctl = RyuController(tmp_path, openflow=codec.OFP13, ready_timeout=60)
    ctl.start()
    yield ctl
    ctl.stop()


def wait_for(check, seconds=20.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)   # waiting on other processes; not a measurement
    return check()


@pytest.mark.parametrize("shards", [1, 2])
def test_ryu_learning_switch_forwards_test_port_traffic_across_three_switches(ryu, shards):
    topo = tp.linear(3)
    tp1, tp2 = topo.host_at(1, 2).at, topo.host_at(3, 2).at
    em = TopologyEmulator(codec.OFP13, shards=shards, host_refresh=0, data_plane={"table_miss": "table"})
    try:
        em.deploy(topo, ryu.address)
        for at in (tp1, tp2):
            em.test_port(at, "attach")
        flows = tpt.synthetic_flows(8)
        em.test_port(tp2, "announce", hosts=[[f.dst_mac.hex(), f.dst_ip] for f in flows])
        # Ryu installs its table-miss entry at the handshake; the G-ARPs teach it where D1..D8 are.
        assert wait_for(lambda: em.status()["data_plane"]["flow_mods"] >= 3)
        em.test_port(tp1, "stream", stream=1, flows=8, rate=200.0, count=40)
        em.test_port(tp1, "start")
        rx = wait_for(lambda: em.test_port(tp2, "report")["rx"].get(1, {}).get("unique") == 40 and
                      em.test_port(tp2, "report")["rx"][1])
        assert rx and rx["unique"] == 40 and rx["duplicates"] == 0 and rx["flows_reached"] == 8
        tx = em.test_port(tp1, "report")["tx"][1]
        assert tx["sent"] == 40 and tx["first_ns"] < rx["first_ns"]
        st = em.status()["data_plane"]
        assert st["flow_mods"] > 3 and st["frames_to_hosts"] >= 40 and st["flow_mods_failed"] == 0
    finally:
        em.withdraw()
        em.close()


def test_a_test_port_must_sit_at_a_host_port(ryu):
    topo = tp.linear(2)
    em = TopologyEmulator(codec.OFP13, data_plane={"table_miss": "controller"})
    try:
        em.deploy(topo, ryu.address)
        with pytest.raises(Exception, match="switch 1 port 1 is not a host port"):
            em.test_port((1, 1), "attach")
        with pytest.raises(Exception, match="no test port attached at switch 2 port 2"):
            em.test_port((2, 2), "report")
    finally:
        em.withdraw()
        em.close()
