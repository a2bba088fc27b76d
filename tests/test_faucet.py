"""Faucet as a controller (fixtures/faucet.py): the faucet.yaml written from a topology, the command and
environment it starts with, its exporter's metrics, and the pair's kill and restore (no process, no socket)."""

import os
import signal
import sys
from pathlib import Path

import pytest
import yaml

from emulator import topology as tp
from fixtures.devices import faucet as fx
from fixtures.devices.base import Can, ControllerError, Needs, lacking


def loaded(topo, mode=None):
    return yaml.safe_load(fx.render(fx.faucet_config(topo, mode)))


def test_one_switch_every_port_a_member_of_one_vlan():
    topo = tp.linear(1, hosts_per_switch=3)
    cfg = loaded(topo)
    # no learned-host limit: Faucet's 255 per port would ban learning after the RFC traffic's 255th source
    assert cfg["vlans"] == {"bmwg": {"vid": 100, "description": "bmwg-sdn test network", "max_hosts": 0}}
    assert list(cfg["dps"]) == ["sw1"]
    dp = cfg["dps"]["sw1"]
    assert dp["dp_id"] == 1 and dp["hardware"] == "Open vSwitch" and dp["ignore_learn_ins"] == 0
    assert {p: (i["native_vlan"], i["max_hosts"]) for p, i in dp["interfaces"].items()} == {
        1: ("bmwg", 0), 2: ("bmwg", 0), 3: ("bmwg", 0)}
    assert "stack" not in dp


def test_links_become_stack_ports_naming_the_other_end_and_the_centre_is_the_root():
    topo = tp.linear(3)
    cfg = loaded(topo)
    dps = cfg["dps"]
    assert [dps[n]["dp_id"] for n in ("sw1", "sw2", "sw3")] == [1, 2, 3]
    # linear:3 -- switch 2 is the centre: the shallowest flooding tree
    assert dps["sw2"]["stack"] == {"priority": 1} and "stack" not in dps["sw1"] and "stack" not in dps["sw3"]
    for link in topo.links:
        for a, b in ((link.a, link.b), (link.b, link.a)):
            iface = dps[fx.dp_name(a.dpid)]["interfaces"][a.port]
            assert iface["stack"] == {"dp": fx.dp_name(b.dpid), "port": b.port} and "native_vlan" not in iface
    for host in topo.hosts:
        assert dps[fx.dp_name(host.at.dpid)]["interfaces"][host.at.port]["native_vlan"] == "bmwg"


def test_a_stack_takes_cycles_and_independent_switches_refuse_them():
    topo = tp.leaf_spine(2, 3)
    cfg = loaded(topo)
    stack_ports = sum(1 for dp in cfg["dps"].values() for i in dp["interfaces"].values() if "stack" in i)
    assert stack_ports == 2 * len(topo.links)
    assert sum(1 for dp in cfg["dps"].values() if "stack" in dp) == 1
    with pytest.raises(fx.FaucetConfigError, match="has cycles"):
        fx.faucet_config(topo, "independent")
    ring = tp.ring(4)
    with pytest.raises(fx.FaucetConfigError, match="has cycles"):
        fx.faucet_config(ring, "independent")


def test_independent_switches_make_link_ports_plain_vlan_members():
    topo = tp.linear(2)
    dps = loaded(topo, "independent")["dps"]
    assert all(i == {"description": i["description"], "native_vlan": "bmwg", "max_hosts": 0}
               for dp in dps.values() for i in dp["interfaces"].values())
    assert all("stack" not in dp for dp in dps.values())


def test_what_faucet_cannot_run_is_refused_with_the_reason():
    with pytest.raises(fx.FaucetConfigError, match="mode 'ring'"):
        fx.faucet_config(tp.linear(2), "ring")
    with pytest.raises(fx.FaucetConfigError, match="VLAN id 4095"):
        fx.faucet_config(tp.linear(2), vid=4095)
    parted = tp.build("parted", [1, 2, 3, 4], [(1, 2), (3, 4)], [1, 4], connected=False)
    with pytest.raises(fx.FaucetConfigError, match="not all connected"):
        fx.faucet_config(parted)


def test_stack_root_is_the_lowest_centre():
    assert fx.stack_root(tp.linear(5)) == 3
    assert fx.stack_root(tp.linear(4)) == 2
    assert fx.stack_root(tp.linear(1)) == 1


def test_prometheus_text_is_parsed_with_its_labels():
    text = "\n".join([
        "# HELP dp_status status of datapaths",
        "# TYPE dp_status gauge",
        'dp_status{dp_id="0x1",dp_name="sw1"} 1.0',
        'dp_status{dp_id="0x2",dp_name="sw2"} 0.0',
        "faucet_config_load_error 0.0",
        'port_stack_state{dp_id="0x1",dp_name="sw1",port="1"} 3.0',
        "garbage line",
        "bad_value NaNx",
    ])
    got = fx.parse_metrics(text)
    assert got[0] == ("dp_status", {"dp_id": "0x1", "dp_name": "sw1"}, 1.0)
    assert ("faucet_config_load_error", {}, 0.0) in got and len(got) == 4


@pytest.fixture
def faucet(tmp_path):
    return fx.FaucetController(tmp_path, topology=tp.linear(2))


def fake_metrics(ctl, lines):
    ctl.prometheus_port = 1
    ctl.metrics = lambda timeout=2.0: fx.parse_metrics("\n".join(lines))


def test_running_dps_and_stack_state_come_from_the_exporter(faucet):
    fake_metrics(faucet, ['dp_status{dp_id="0x1",dp_name="sw1"} 1.0', 'dp_status{dp_id="0x2",dp_name="sw2"} 0.0',
                          'port_stack_state{dp_id="0x1",dp_name="sw1",port="1"} 3.0',
                          'port_stack_state{dp_id="0x2",dp_name="sw2",port="1"} 1.0'])
    assert faucet.dps_running() == {1}
    assert faucet.stack_ports_up() is False
    assert faucet.metric("dp_status", dp_name="sw2") == [0.0]
    fake_metrics(faucet, ['port_stack_state{dp_id="0x1",dp_name="sw1",port="1"} 3.0'])
    assert faucet.stack_ports_up() is True
    fake_metrics(faucet, ["faucet_config_load_error 0.0"])
    assert faucet.stack_ports_up() is None


def test_faucet_listens_on_loopback_only_with_its_files_in_the_log_dir(faucet, tmp_path):
    faucet.port, faucet.prometheus_port = 16653, 19302
    cmd = faucet.command()
    assert cmd[:3] == [sys.executable, "-m", "os_ken.cmd.manager"] and cmd[-1] == "faucet.faucet"
    assert cmd[cmd.index("--ofp-listen-host") + 1] == "127.0.0.1"
    assert cmd[cmd.index("--ofp-tcp-listen-port") + 1] == "16653"
    env = faucet.extra_env()
    assert env["FAUCET_PROMETHEUS_ADDR"] == "127.0.0.1" and env["FAUCET_PROMETHEUS_PORT"] == "19302"
    for key in ("FAUCET_CONFIG", "FAUCET_LOG", "FAUCET_EXCEPTION_LOG"):
        assert env[key].startswith(str(tmp_path))
    assert env["FAUCET_EVENT_SOCK"] == "0"
    assert yaml.safe_load((tmp_path / "faucet.yaml").read_text())["dps"]["sw1"]["dp_id"] == 1
    assert faucet.info()["faucet_mode"] == "stack" and faucet.info()["name"] == "faucet"
    assert "FAUCET_STACK_ROOT_STATE_UPDATE_TIME" not in env          # Faucet's own 10 s unless asked
    faucet.root_update_s = 2
    assert faucet.extra_env()["FAUCET_STACK_ROOT_STATE_UPDATE_TIME"] == "2"


def test_serve_topology_rewrites_the_yaml_and_restarts_only_on_a_change(faucet, tmp_path):
    starts = []
    faucet.start = lambda: starts.append("start")
    faucet.stop = lambda: starts.append("stop")
    faucet.proc = object()                    # "running"
    faucet.serve_topology(tp.linear(2))       # the same network: nothing to do
    assert starts == []
    faucet.serve_topology(tp.linear(3))
    assert starts == ["stop", "start"] and "sw3" in (tmp_path / "faucet.yaml").read_text()


def test_a_faucet_without_its_yaml_or_its_package_does_not_start(tmp_path, monkeypatch):
    ctl = fx.FaucetController(tmp_path)
    monkeypatch.setattr(fx, "faucet_missing", lambda: None)
    with pytest.raises(ControllerError, match="has no faucet.yaml"):
        ctl.start()
    monkeypatch.setattr(fx, "faucet_missing", lambda: "Faucet is not installed; install it with pip")
    with pytest.raises(ControllerError, match="Faucet is not installed"):
        fx.FaucetController(tmp_path, topology=tp.linear(2)).start()


def test_faucet_missing_names_what_is_missing(monkeypatch):
    monkeypatch.setattr(fx.util, "find_spec", lambda name: None)
    why = fx.faucet_missing()
    if sys.version_info < (3, 10):
        assert "Python 3.10" in why
    else:
        assert why.startswith("Faucet is not installed") and "pip install '.[faucet]'" in why


class FakePopen:
    def __init__(self, pid, code=None):
        self.pid, self.returncode = pid, code

    def poll(self):
        return self.returncode

    def wait(self, timeout=None):
        return self.returncode


def FakeProc(pid, code=None):
    """A member's process without a process: its Popen is a stand-in."""
    from emulator.process import ChildProcess
    child = ChildProcess(["faucet"])
    child.popen = FakePopen(pid, code)
    return child


def test_pair_shares_one_yaml_and_kills_and_restores_a_member(tmp_path, monkeypatch):
    pair = fx.FaucetPair(tmp_path, topology=tp.linear(2))
    texts = {(tmp_path / f"faucet-{i}.yaml").read_text() for i in (1, 2)}
    assert texts == {(tmp_path / "faucet-pair.yaml").read_text()}
    sent = []
    monkeypatch.setattr(os, "killpg", lambda pid, sig: sent.append((pid, sig)))
    for i, m in enumerate(pair.members):
        m.proc, m.port = FakeProc(100 + i), 16653 + i
    assert pair.addresses == (("127.0.0.1", 16653), ("127.0.0.1", 16654))
    assert pair.index_of(("127.0.0.1", 16654)) == 1 and pair.index_of(("127.0.0.1", 1)) is None
    assert pair.takeovers() == [] and "EQUAL" in pair.info()["redundancy"]

    pair.kill(1, "sigstop")
    assert sent == [(101, signal.SIGSTOP)] and pair.members[1].frozen
    pair.restore(1)
    assert sent[-1] == (101, signal.SIGCONT) and not pair.members[1].frozen

    restarted = []
    member = pair.members[0]
    member.start = lambda: restarted.append(member.fixed_port)
    member.stop = lambda: setattr(member, "proc", None)
    pair.kill(0, "sigkill")
    assert sent[-1] == (100, signal.SIGKILL)
    member.proc.popen.returncode = -9
    assert pair.dead() == [("faucet-1", "signal 9 (SIGKILL)")]
    pair.restore(0)
    assert restarted == [16653] and member.fixed_port is None     # back on the address the switches know
    with pytest.raises(ValueError, match="at least 2"):
        fx.FaucetPair(tmp_path, members=1)


def test_serving_needs_every_switch_running_and_every_stack_port_up(faucet):
    fake_metrics(faucet, ['dp_status{dp_id="0x1",dp_name="sw1"} 1.0', 'dp_status{dp_id="0x2",dp_name="sw2"} 1.0',
                          'port_stack_state{dp_id="0x1",dp_name="sw1",port="1"} 1.0'])
    assert faucet.serving([1]) is False                # its stack port is still initialising
    up = ['dp_status{dp_id="0x1",dp_name="sw1"} 1.0', 'dp_status{dp_id="0x2",dp_name="sw2"} 1.0',
          'port_stack_state{dp_id="0x1",dp_name="sw1",port="1"} 3.0']
    fake_metrics(faucet, up + ["faucet_stack_root_dpid 0.0"])
    assert faucet.stack_root() is None and faucet.serving([1, 2]) is False    # no root yet: no flooding across
    fake_metrics(faucet, up + ["faucet_stack_root_dpid 1.0"])
    assert faucet.stack_root() == 1
    assert faucet.serving([1, 2]) is False                # switch 2 has no way to the root yet
    fake_metrics(faucet, up + ["faucet_stack_root_dpid 1.0", 'dp_root_hop_port{dp_id="0x2",dp_name="sw2"} 1.0'])
    assert faucet.serving([1, 2]) is True and faucet.serving([1, 2, 3]) is False
    fake_metrics(faucet, ['dp_status{dp_id="0x1",dp_name="sw1"} 1.0'])      # no stack at all (one switch)
    assert faucet.serving([1]) is True

    def down(timeout=2.0):
        raise ControllerError("faucet's Prometheus exporter does not answer")
    faucet.metrics = down
    assert faucet.serving([1]) is False
    with pytest.raises(ControllerError, match=r"does not serve switches \[1\].*does not answer"):
        faucet.wait_serving([1], timeout=0)


def test_its_exporter_is_a_northbound_view_of_switches_stack_links_and_hosts(faucet):
    """linear:2 -- the link 1:1 <-> 2:1; a stack port counts as a link only once UP, to the end faucet.yaml
    names; hosts only as learned on host ports."""
    fake_metrics(faucet, ['dp_status{dp_id="0x1",dp_name="sw1"} 1.0', 'dp_status{dp_id="0x2",dp_name="sw2"} 1.0',
                          'port_stack_state{dp_id="0x1",dp_name="sw1",port="1"} 3.0',
                          'port_stack_state{dp_id="0x2",dp_name="sw2",port="1"} 1.0',
                          'learned_l2_port{dp_id="0x1",dp_name="sw1",vid="100",eth_src="0A:65:00:00:00:01"} 2.0',
                          'learned_l2_port{dp_id="0x2",dp_name="sw2",vid="100",eth_src="0a:65:00:00:00:01"} 1.0'])
    nb = faucet.northbound()
    assert nb.kind == "faucet" and nb.link_counting == "directed"
    view = nb.topology()
    assert view.switches == {1, 2} and view.links == {((1, 1), (2, 1))}
    assert view.hosts == {("0a:65:00:00:00:01", 1, 2)}          # the one learned over the stack port is no host
    faucet.metrics = lambda timeout=2.0: (_ for _ in ()).throw(ControllerError("exporter down"))
    from fixtures.devices.northbound import NorthboundError
    with pytest.raises(NorthboundError, match="exporter down"):
        nb.topology()


def test_the_embedded_faucet_starts_with_the_first_topology_and_runs_only_what_deploys_one(tmp_path, monkeypatch):
    from emulator import codec
    ctl = fx.FaucetController(tmp_path, on_demand=True, openflow=codec.OFP13)
    monkeypatch.setattr(fx, "faucet_missing", lambda: None)
    ctl.start()                                  # nothing deployed yet: nothing to serve, nothing started
    assert ctl.proc is None and ctl.exit_reason() is None
    starts = []
    ctl.start = lambda: starts.append("start")
    ctl.serve_topology(tp.leaf_spine(2, 2))
    assert starts == ["start"] and "sw4" in (tmp_path / "faucet.yaml").read_text()
    # what it runs is declared: the benchmarks that describe their topology to it first (§5.4.2) need no more than
    # it has; the reactive paths and those that connect any switch skip, saying why
    assert lacking(ctl, Needs.of(Can.OPENFLOW, Can.TOPOLOGY_NORTHBOUND))[0] is None
    assert lacking(ctl, Needs.of(Can.REACTIVE_PATHS))[0].startswith("controller faucet does not provision a path")
    why = lacking(ctl, Needs.of(Can.OPENFLOW, Can.SERVE_ANY_SWITCH))[0]
    assert why.startswith("controller faucet serves only the switches its faucet.yaml names")
    why = lacking(ctl, Needs.of(Can.OPENFLOW, Can.TABLE_MISS_PACKET_IN))[0]
    assert why.startswith("controller faucet does not answer a PACKET_IN a switch sends on a table miss")
    assert "reason ACTION, its cookie" in why
    assert Can.DROPS_SWITCHES in fx.FaucetController.CAPABILITIES
    with pytest.raises(ControllerError, match="OpenFlow 1.3 only"):
        fx.FaucetController(tmp_path, on_demand=True, openflow=codec.OFP10).start()


def test_every_benchmark_family_describes_its_switches_so_faucet_needs_no_serve_any_switch():
    """The families that deploy switches describe them to the controller first (Faucet's faucet.yaml), so none needs
    a controller that serves any switch; what Faucet lacks for the others is what the controller does."""
    from fixtures.families import async_msgs, capacity, screen, topology
    for family in (async_msgs, capacity, screen, topology):
        assert Can.SERVE_ANY_SWITCH not in family.NEEDS.required, family.__name__
    ctl = fx.FaucetController(Path("/nonexistent"), on_demand=True)
    assert lacking(ctl, topology.NEEDS)[0] is None and lacking(ctl, capacity.NEEDS)[0] is None
    assert lacking(ctl, async_msgs.NEEDS)[0]
    # the screen runs, its sentinel sampling by ECHO alone (emulator.screen); the report notes what Faucet lacks
    reason, notes = lacking(ctl, screen.NEEDS)
    assert reason is None and any("does not answer a PACKET_IN" in n for n in notes)


def test_the_capacity_trial_names_every_datapath_id_it_may_open_in_faucets_yaml(tmp_path):
    from emulator.params import CapacityParams, RampParams
    from fixtures.families.capacity import CapacityEmulator
    em = CapacityEmulator(lambda: None, 4, RampParams(), CapacityParams(max_sessions=300))
    assert em.datapath_ids() == range(1, 301)
    config = fx.faucet_config(tp.isolated("capacity:300", em.datapath_ids(), (1, 2)))
    assert [dp["dp_id"] for dp in config["dps"].values()] == list(range(1, 301))
    assert all("stack" not in i for dp in config["dps"].values() for i in dp["interfaces"].values())


def test_topology_emulator_gives_faucet_switches_with_flow_tables_that_come_back(tmp_path):
    from emulator import codec
    from emulator.params import FabricParams, RampParams
    from fixtures.fabric import TopologyEmulator
    served = []

    class Ryu:
        def serve_topology(self, topo):
            served.append(topo)

        def capabilities(self):
            return frozenset({Can.OPENFLOW, Can.TABLE_MISS_PACKET_IN})

    em = TopologyEmulator(lambda: None, codec.OFP13, RampParams(), 1, FabricParams(host_refresh=5.0))
    topo = tp.linear(2)
    em.serve(Ryu(), topo)
    assert served == [topo] and not em.fabric.data_plane and not em.fabric.reconnect
    faucet = fx.FaucetController(tmp_path, on_demand=True)
    faucet.serve_topology = served.append
    em.serve(faucet, topo)
    f = em.fabric
    assert (f.data_plane, f.host_ingress, f.reconnect, f.host_refresh) == (True, True, True, 5.0)


def test_faucets_northbound_answers_what_the_topology_families_ask_of_any_northbound():
    # The matrix run of 2026-11-26: --controller faucet errored in §5.1.1 and §5.2.2 before any trial, as
    # FaucetNorthbound (then a class of its own) lacked reports_hosts, which OpenDaylight's adapter had added.
    from fixtures.devices.northbound import Northbound, compared_parts
    from fixtures.families.topology import DiscoveryParams, compared
    ctl = fx.FaucetController(Path("/nonexistent"), on_demand=True)
    nb = ctl.northbound()
    assert isinstance(nb, Northbound) and nb.reports_hosts
    assert compared_parts(("switches", "links", "hosts"), nb) == ("switches", "links", "hosts")
    assert compared(ctl, DiscoveryParams()) == ["switches", "links", "hosts"]
    nb.close()


def test_every_topology_northbound_is_a_northbound():
    import inspect

    from fixtures.devices import faucet, northbound, odl
    from fixtures.devices.northbound import Northbound
    for module in (northbound, faucet, odl):
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if name.endswith("Northbound") and cls.__module__ == module.__name__:
                assert issubclass(cls, Northbound), name


def test_before_a_trial_a_pair_waits_for_its_members_to_let_go_of_the_last_trials_switches(tmp_path):
    """A Faucet behind on the last trial's traffic still reports its old switches running: prepare_trial waits
    until it does not (on a clock it is given), and starts afresh a member that has not let go within RELEASE_S."""
    pair = fx.FaucetPair(tmp_path, topology=tp.linear(2))
    clock = [0.0]
    pair.clock, pair.sleep = (lambda: clock[0]), (lambda s: clock.__setitem__(0, clock[0] + s))
    restarted = []
    for i, m in enumerate(pair.members):
        m.proc, m.port = FakeProc(100 + i), 16653 + i
        m.stop = (lambda m=m: setattr(m, "proc", None))
        m.start = (lambda m=m: (restarted.append(m.instance), setattr(m, "proc", FakeProc(200))))
    first, second = pair.members
    first.dps_running = lambda: {1, 2} if clock[0] < 3.0 else set()      # works off its backlog in 3 s
    second.dps_running = lambda: set()
    pair.prepare_trial()
    assert restarted == [] and pair.prepared["started_afresh"] == []
    assert 3.0 <= pair.prepared["release_s"]["faucet-1"] <= 3.2 and pair.prepared["release_s"]["faucet-2"] == 0

    def stuck():
        raise ControllerError("faucet-2's Prometheus exporter does not answer: timed out")
    second.dps_running = stuck                                            # never lets go
    pair.prepare_trial()
    assert restarted == ["faucet-2"] and second.fixed_port is None and second.port == 16654
    assert pair.prepared["release_s"]["faucet-1"] == 0
    assert pair.prepared["release_s"]["faucet-2"] >= fx.RELEASE_S
    [why] = pair.prepared["started_afresh"]
    assert why.startswith("faucet-2: faucet-2 letting go of the switches not within 30 s") and "timed out" in why

    second.dps_running = lambda: set()
    pair.not_rejoined(0)          # the last trial's failback left faucet-1 out: started afresh, whatever it says
    pair.prepare_trial()
    assert restarted == ["faucet-2", "faucet-1"]
    assert pair.prepared["started_afresh"] == ["faucet-1: not taken back after its return in the last trial"]
    pair.prepare_trial()
    assert restarted == ["faucet-2", "faucet-1"] and pair.prepared["started_afresh"] == []   # once
