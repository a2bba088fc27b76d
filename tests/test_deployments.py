"""The deployment axis (--cluster-nodes on discovery, the processing rate and proactive provisioning): its cells,
its device, its order."""

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace as NS

import pytest

from fixtures.devices.base import Can, ControllerError, Device
from fixtures.devices.clusters import ClusterUnderTest, NotBuilt, RyuHaCluster
from fixtures.devices.odl_cluster import OdlCluster
from fixtures.families import deployments as dep
from fixtures.families.failover import FailoverParams

ROOT = Path(__file__).resolve().parent.parent


def bmwg(kind: str, sizes=(), tmp_path=Path("/tmp"), **failover):
    return NS(run=NS(controller=NS(kind=kind), ready_timeout=60.0), failover=FailoverParams(sizes=sizes, **failover),
              report_dir=tmp_path, openflow=4, emulator=NS(placement=lambda: ((0,), (1,))))


class Recorder:
    """What a cell's run was told."""

    def __init__(self):
        self.params, self.series_x = {}, None

    def parameters(self, **values):
        self.params.update(values)
        return self

    def series(self, name, value):
        self.series_x = (name, value)
        return self


class FakeCluster(Device):
    KIND = "fake-ha"
    CAPABILITIES = frozenset({Can.CLUSTER, Can.OPENFLOW, Can.TOPOLOGY_NORTHBOUND})
    name = "fake-ha"
    openflow = 4

    def __init__(self, fail: bool = False):
        self.started, self.fail, self.up = 0, fail, []

    @property
    def addresses(self):
        return (("127.0.0.1", 6001), ("127.0.0.1", 6002), ("127.0.0.1", 6003))

    def running(self):
        return self.up

    def start(self):
        self.started += 1
        if self.fail:
            raise ControllerError("member 2 did not answer")
        self.up = ["m1", "m2", "m3"]

    def northbound(self):
        return "topology at m1"

    def info(self):
        return {"name": self.name, "members": ["m1", "m2", "m3"], "redundancy": "active/standby", "boot_s": 12.5}


def test_without_the_option_there_is_one_deployment_and_no_axis_in_the_cells():
    cfg = bmwg("ryu")
    assert dep.node_counts(cfg) == (1,) and not dep.swept(cfg) and dep.series_name(cfg, "linear:4") is None
    run = Recorder()
    assert dep.on_axis(run, cfg, None, 1, "linear:4") is False and run.params == {} and run.series_x is None


def test_a_swept_cell_names_its_deployment_and_is_a_point_of_the_node_count_series():
    cfg = bmwg("odl", sizes=(3, 1))
    assert dep.node_counts(cfg) == (1, 3) and dep.cell_id(3) == "3n"
    alone, cluster = Recorder(), Recorder()
    assert dep.on_axis(alone, cfg, None, 1, "leaf-spine:2x2")
    assert alone.params == {"deployment": "standalone (RFC 8456 §3.1)", "cluster_nodes": 1}
    assert alone.series_x == ("cluster nodes (leaf-spine:2x2)", 1)
    device = ClusterUnderTest(FakeCluster(), 3)
    assert dep.on_axis(cluster, cfg, device, 3, "leaf-spine:2x2")
    assert cluster.params["deployment"] == "cluster of 3 (RFC 8456 §3.2)" and cluster.params["cluster"] == "fake-ha"
    assert cluster.params["members"] == ["m1", "m2", "m3"] and cluster.params["cluster_boot_s"] == 12.5
    assert cluster.series_x == ("cluster nodes (leaf-spine:2x2)", 3)
    one = Recorder()     # a single size given: its parameters, but no series of one point
    assert not dep.on_axis(one, bmwg("odl", sizes=(3,)), device, 3) and one.series_x is None
    assert one.params["cluster_nodes"] == 3


def test_a_cluster_under_test_is_every_member_for_the_switches_and_a_member_for_the_northbound():
    cluster = FakeCluster()
    d = ClusterUnderTest(cluster, 3)
    assert d.address == cluster.addresses and d.openflow == 4 and d.label() == "cluster fake-ha of 3"
    assert d.capabilities() == FakeCluster.CAPABILITIES and d.northbound() == "topology at m1"
    assert d.info()["cluster_nodes"] == 3 and d.unavailable() is None and not d.restarted_between_trials
    d.use_role("discovery", 1.0)        # its members run the apps their kind gives them: nothing to switch
    d.bring_up()
    d.bring_up()                        # the next benchmark of the same size finds it running
    assert cluster.started == 1


def test_a_cluster_that_does_not_start_is_an_error_of_the_benchmark_and_is_tried_again_by_the_next():
    cluster = FakeCluster(fail=True)
    d = ClusterUnderTest(cluster, 3)
    with pytest.raises(ControllerError, match="member 2"):
        d.bring_up()
    with pytest.raises(ControllerError):
        d.bring_up()
    assert cluster.started == 2


def test_a_kind_with_no_cluster_or_a_size_it_cannot_have_skips_its_cells_saying_why(tmp_path):
    for kind in ("null", "ovs"):
        d = ClusterUnderTest(dep.cluster_of(bmwg(kind, tmp_path=tmp_path), 3), 3)
        assert "--cluster-nodes 3: the suite builds no cluster of" in d.unavailable()
        assert "--failover-cluster external:" in d.unavailable()
    odl = dep.cluster_of(bmwg("odl", tmp_path=tmp_path), 3)
    assert isinstance(odl, OdlCluster) and odl.n == 3 and odl.cpus == (0,)   # pinned where the controller is
    ryu = dep.cluster_of(bmwg("ryu", tmp_path=tmp_path), 2)
    assert isinstance(ryu, RyuHaCluster) and ryu.n == 2
    # ryu-ha's members run the learning switch and the role app: no topology or flow northbound to read
    assert Can.TOPOLOGY_NORTHBOUND not in ClusterUnderTest(ryu, 2).capabilities()
    assert Can.TOPOLOGY_NORTHBOUND in ClusterUnderTest(odl, 3).capabilities()


def test_a_constructor_refusing_a_size_becomes_the_skip_reason(tmp_path, monkeypatch):
    from fixtures.devices import registry

    def refuse(*args, **kwargs):
        raise ValueError("odl-cluster has 2..7 members (got 9)")
    monkeypatch.setattr(registry, "cluster_from", refuse)
    got = dep.cluster_of(bmwg("odl", tmp_path=tmp_path), 9)
    assert isinstance(got, NotBuilt) and got.unavailable() == "--cluster-nodes 9: odl-cluster has 2..7 members (got 9)"


def item(name: str, nodes=None):
    return NS(name=name, callspec=NS(params={} if nodes is None else {"deployment_nodes": nodes}))


def test_the_cells_run_by_size_in_the_places_they_held_so_a_cluster_boots_once_per_size():
    items = [item("discovery-1n", 1), item("discovery-3n", 3), item("discovery-5n", 5), item("capacity"),
             item("ppt-1n", 1), item("ppt-3n", 3), item("ppt-5n", 5), NS(name="plain")]
    dep.pytest_collection_modifyitems(None, None, items)
    assert [i.name for i in items] == ["discovery-1n", "ppt-1n", "discovery-3n", "capacity", "ppt-3n",
                                       "discovery-5n", "ppt-5n", "plain"]


@pytest.mark.component
def test_the_option_gives_the_axis_benchmarks_one_cell_per_deployment_and_no_other():
    out = subprocess.run([sys.executable, "-m", "pytest", "suites", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "--cluster-nodes", "1,3"], cwd=ROOT, capture_output=True, text=True, timeout=120).stdout
    for test_id in ("test_network_topology_discovery_time[leaf-spine-2x2-1n]",
                    "test_network_topology_discovery_time[leaf-spine-2x2-3n]",
                    "test_proactive_path_provisioning_time[leaf-spine-2x2-3n]",
                    "test_proactive_path_provisioning_rate[leaf-spine-2x2-1n]",
                    "test_async_message_processing_rate[16sw-3n]",
                    "test_network_topology_change_detection_time[leaf-spine-2x2-link]",
                    "test_reactive_path_provisioning_time[leaf-spine-2x2]"):
        assert test_id in out, f"{test_id} not collected:\n{out[-2000:]}"
    assert "test_reactive_path_provisioning_time[leaf-spine-2x2-3n]" not in out
    plain = subprocess.run([sys.executable, "-m", "pytest", "suites", "--collect-only", "-q", "-p", "no:cacheprovider",
                            "-k", "discovery_time"], cwd=ROOT, capture_output=True, text=True, timeout=120).stdout
    assert "test_network_topology_discovery_time[leaf-spine-2x2]" in plain and "-1n]" not in plain
