"""The device kinds as declared (fixtures/devices/): the registry ``--controller`` and ``--failover-cluster`` resolve
through, each kind built from the run's settings, its option problems, its capabilities and the skip reasons they
give (no process, no socket)."""

from pathlib import Path

import pytest

from emulator import codec
from fixtures.devices import registry
from fixtures.devices.base import Can, ControllerSpec, Needs, lacking
from fixtures.devices.clusters import ExternalCluster, NoCluster, RyuHaCluster
from fixtures.devices.external import ExternalController
from fixtures.devices.faucet import FaucetController, FaucetPair
from fixtures.devices.null import NullController
from fixtures.devices.odl import OdlController
from fixtures.devices.odl_cluster import OdlCluster
from fixtures.devices.ovn_central import OvnCentral
from fixtures.devices.ovn_cluster import OvnCluster
from fixtures.devices.ovs import OvsTestController
from fixtures.devices.ryu import OsKenController, RyuController
from fixtures.families.failover import FailoverParams

C = Can
CAPABILITY_TABLE = {       # docs/architecture.md lists the same
    RyuController: {C.OPENFLOW, C.SERVE_ANY_SWITCH, C.MANY_SWITCHES, C.TOPOLOGY_NORTHBOUND, C.FLOW_API,
                    C.TABLE_MISS_PACKET_IN, C.REACTIVE_PATHS, C.RESTART, C.SET_LLDP_PERIOD},
    OsKenController: {C.OPENFLOW, C.SERVE_ANY_SWITCH, C.MANY_SWITCHES, C.TOPOLOGY_NORTHBOUND, C.FLOW_API,
                      C.TABLE_MISS_PACKET_IN, C.REACTIVE_PATHS, C.RESTART, C.SET_LLDP_PERIOD},
    FaucetController: {C.OPENFLOW, C.MANY_SWITCHES, C.TOPOLOGY_NORTHBOUND, C.RESTART, C.DROPS_SWITCHES},
    OvsTestController: {C.OPENFLOW, C.SERVE_ANY_SWITCH, C.TABLE_MISS_PACKET_IN, C.RESTART},
    OdlController: {C.OPENFLOW, C.SERVE_ANY_SWITCH, C.MANY_SWITCHES, C.TOPOLOGY_NORTHBOUND, C.FLOW_API, C.RESTART},
    NullController: {C.OPENFLOW, C.SERVE_ANY_SWITCH, C.MANY_SWITCHES, C.TABLE_MISS_PACKET_IN, C.RESTART},
    ExternalController: {C.OPENFLOW, C.SERVE_ANY_SWITCH, C.MANY_SWITCHES, C.TABLE_MISS_PACKET_IN, C.REACTIVE_PATHS},
    RyuHaCluster: {C.CLUSTER, C.OPENFLOW, C.SERVE_ANY_SWITCH, C.MANY_SWITCHES, C.TABLE_MISS_PACKET_IN},
    FaucetPair: {C.CLUSTER, C.OPENFLOW, C.MANY_SWITCHES, C.DROPS_SWITCHES},
    OdlCluster: {C.CLUSTER, C.OPENFLOW, C.SERVE_ANY_SWITCH, C.MANY_SWITCHES, C.FLOW_API, C.TOPOLOGY_NORTHBOUND},
    ExternalCluster: {C.CLUSTER, C.OPENFLOW, C.SERVE_ANY_SWITCH, C.MANY_SWITCHES},
    NoCluster: set(),
    OvnCluster: {C.RAFT_CLUSTER},
    OvnCentral: {C.OVN_NORTHBOUND},
}


def test_every_kind_declares_its_capabilities():
    for cls, caps in CAPABILITY_TABLE.items():
        assert cls.CAPABILITIES == frozenset(caps), cls.__name__
    assert set(registry.CONTROLLERS.values()) | set(registry.CLUSTERS.values()) <= set(CAPABILITY_TABLE)


def run(controller="ryu", **kw):
    """A stand-in for fixtures.config.RunParams with the fields the devices read."""
    from types import SimpleNamespace
    spec = registry.parse_controller_option(controller)
    fields = dict(controller=spec, controller_port=None, controller_name=None, controller_version=None,
                  controller_pid=None, start_command=None, stop_command=None, openflow="1.3", northbound=None,
                  northbound_auth=None, no_restart=False, ready_timeout=30.0)
    fields.update(kw)
    return SimpleNamespace(openflow_version=codec.VERSION_BY_NAME[fields["openflow"]], **fields)


@pytest.mark.parametrize("text,spec", [
    ("ryu", ControllerSpec("ryu")), (" embedded:osken ", ControllerSpec("osken")),
    ("external:10.0.0.1:6653", ControllerSpec("external", "10.0.0.1", 6653)),
    ("external:[::1]:6633", ControllerSpec("external", "[::1]", 6633)),
])
def test_controller_names_resolve_through_the_table(text, spec):
    got = registry.parse_controller_option(text)
    assert got == spec and registry.kind_class(got) is registry.CONTROLLERS[spec.kind]
    assert str(got) == text.strip().removeprefix("embedded:")


@pytest.mark.parametrize("text,says", [
    ("floodlight", "expected one of ryu, null, ovs, faucet, osken, odl or external:HOST:PORT"),
    ("embedded:external:h:1", "expected one of"),
    ("external:h", "expected external:HOST:PORT with a port 1..65535"),
    ("external:h:70000", "with a port 1..65535"),
    ("ryu:6653", "ryu takes no address"),
])
def test_a_bad_controller_name_says_what_is_expected(text, says):
    with pytest.raises(ValueError, match=says):
        registry.parse_controller_option(text)


def test_the_kinds_for_help_and_docs():
    assert registry.EMBEDDED_KINDS == ("ryu", "null", "ovs", "faucet", "osken", "odl")
    assert registry.controller_kinds() == ("ryu", "null", "ovs", "faucet", "osken", "odl", "external:HOST:PORT")


def test_each_kind_is_built_from_the_run(tmp_path):
    ryu = registry.controller_from(run(no_restart=True, controller_port=16653), log_dir=tmp_path, cpus=(1,))
    assert type(ryu) is RyuController and (ryu.fixed_port, ryu.cpus, ryu.openflow) == (16653, (1,), codec.OFP13)
    assert not ryu.restarted_between_trials and ryu.log_path == tmp_path / "ryu.log"
    faucet = registry.controller_from(run("faucet"), log_dir=tmp_path)
    assert faucet.on_demand and faucet.root_update_s == 2 and faucet.restarted_between_trials
    ext = registry.controller_from(run("external:127.0.0.1:6653", controller_name="onos", openflow="1.0"),
                                   log_dir=tmp_path)
    assert (ext.name, ext.address, ext.openflow, ext.mode) == ("onos", ("127.0.0.1", 6653), codec.OFP10, "external")
    for kind, cls in registry.CONTROLLERS.items():
        spec = "external:h:1" if kind == "external" else kind
        assert type(registry.controller_from(run(spec), log_dir=tmp_path)) is cls


def test_northbound_adapters_add_their_capabilities_to_the_instance(tmp_path):
    plain = registry.controller_from(run("external:127.0.0.1:6653"), log_dir=tmp_path)
    assert Can.TOPOLOGY_NORTHBOUND not in plain.capabilities() and plain.northbound() is None
    why, _ = lacking(plain, Needs.of(Can.TOPOLOGY_NORTHBOUND))
    assert why == ("controller external has no topology northbound the suite can read (use the embedded Ryu, or an "
                   "external controller with --northbound KIND=URL)")
    onos = registry.controller_from(run("external:127.0.0.1:6653", northbound=("onos", "http://lab:8181"),
                                        northbound_auth="a:b"), log_dir=tmp_path)
    assert {Can.TOPOLOGY_NORTHBOUND, Can.FLOW_API} <= onos.capabilities()
    assert onos.northbound().kind == "onos" and onos.flow_northbound().auth == "a:b"
    assert lacking(onos, Needs.of(Can.TOPOLOGY_NORTHBOUND, Can.FLOW_API)) == (None, [])


def test_option_problems_belong_to_the_kind():
    assert registry.option_problems(run()) == []
    got = registry.option_problems(run("ovs", controller_name="x", controller_pid=1), lldp_period=0.5)
    assert got == ["--controller-name, --controller-pid: for --controller external:HOST:PORT; the suite knows the "
                   "embedded ovs itself",
                   "--ryu-lldp-period sets the LLDP period of the embedded Ryu or os-ken; it does nothing for "
                   "--controller ovs"]
    assert registry.option_problems(run("osken"), lldp_period=0.5) == []
    assert registry.option_problems(run("external:h:1", controller_pid=4194999)) == [
        "--controller-pid 4194999: no such process on this host"]


def test_ovs_testcontroller_notes_its_sixteen_switch_limit_where_many_switches_are_noted(tmp_path):
    ovs = OvsTestController(tmp_path)
    why, notes = lacking(ovs, Needs.of(Can.OPENFLOW, noted=[Can.MANY_SWITCHES]))
    assert why is None and notes == [
        "controller ovs serves at most 16 switches (MAX_SWITCHES, compiled into ovs-testcontroller): a session "
        "capacity of 16 is its limit, not the suite's, and a 17th switch is not served"]


def test_every_controller_kind_names_the_cluster_the_suite_builds_of_it():
    assert {k: registry.cluster_kind_of(k) for k in registry.CONTROLLERS} == {
        "ryu": "ryu-ha", "null": None, "ovs": None, "faucet": "faucet-pair", "osken": None, "odl": "odl-cluster",
        "external": None}
    assert all(registry.cluster_kind_of(k) in registry.CLUSTERS for k in ("ryu", "faucet", "odl"))


def test_clusters_are_built_from_the_failover_options(tmp_path):
    def build(p, kind="ryu", nodes=2, keepalive=1000):
        return registry.cluster_from(p, kind, nodes, keepalive, log_dir=tmp_path, openflow=codec.OFP13,
                                     ready_timeout=30.0)
    ha = build(FailoverParams(), nodes=3, keepalive=2000)
    assert type(ha) is RyuHaCluster and (ha.n, ha.probe_ms, ha.standby) == (3, 2000, True)
    assert ha.log_dir == tmp_path / "ryu-ha-3-ka2000" and ha.coordination.size == 3 and ha.takeovers() == []
    pair = build(FailoverParams(), kind="faucet")
    assert type(pair) is FaucetPair and pair.standby is False and pair.topology is not None
    ext = build(FailoverParams(cluster="external:h:1,h:2", kill_command="kill {index}"), kind="osken")
    assert type(ext) is ExternalCluster and ext.addresses == (("h", 1), ("h", 2)) and ext.standby is None
    ext.wait_serving((1, 2), 1.0)          # it does not say when it serves: at once
    none = build(FailoverParams(), kind="osken")
    assert type(none) is NoCluster and none.capabilities() == frozenset()
    why, _ = lacking(none, Needs.of(Can.CLUSTER))
    assert why.startswith("controller osken (the suite builds no cluster of it) is no controller cluster")
    assert "--failover-cluster ryu-ha, faucet-pair or external:" in why and none.unavailable() == why


def test_a_device_that_is_not_an_openflow_controller_says_so(tmp_path):
    cluster = OvnCluster(Path(tmp_path))
    why, _ = lacking(cluster, Needs.of(Can.OPENFLOW))
    assert why.startswith("the OVN northbound RAFT cluster is not an OpenFlow controller")
    assert lacking(cluster, Needs.of(Can.RAFT_CLUSTER)) == (None, [])
    assert lacking(OvnCentral(tmp_path), Needs.of(Can.OVN_NORTHBOUND)) == (None, [])


def test_a_restartable_kind_restarts_by_stop_and_start(tmp_path):
    ctl = NullController(tmp_path)
    calls = []
    ctl.stop, ctl.start = (lambda: calls.append("stop")), (lambda: calls.append("start"))
    ctl.restart()
    assert calls == ["stop", "start"] and Can.RESTART in ctl.capabilities()
    assert Can.RESTART not in ExternalController("h", 1).capabilities()
