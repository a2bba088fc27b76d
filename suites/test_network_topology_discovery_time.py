"""RFC 8456 §5.1.1 Network Topology Discovery Time (A.4.1; RFC 8455 term 2.3.1.1)."""

import pytest

from fixtures.families import topology

DEFINITION = (
    "DT = Tmn − Tm1. Tm1: the first discovery PACKET_OUT (LLDP or BDDP) the emulator reads from the controller. "
    "Tmn: the instant the last deployed link was first relayed, i.e. the latest of the first discovery PACKET_INs "
    "written at the far end of every directed link. The trial succeeds when the topology the controller reports "
    "northbound (queried every t seconds, or once after Td in the wait mode) matches the deployed one; it is "
    "unsuccessful, with no value, after three identical non-matching answers, or when a switch session drops. "
    "The whole topology connects anew for every trial, to a controller restarted for it or, when the suite cannot "
    "restart it, one that reports none of the previous trial's switches any more. Reported per trial in ms; "
    "TDm and TDv over the trials.")
MEASUREMENT_POINT = (
    "forwarding-plane emulator at interface I1: monotonic ns timestamps at the read of each discovery PACKET_OUT "
    "and the write of each relayed PACKET_IN; the northbound only decides success")


@pytest.mark.rfc8456(section="5.1.1", category="performance", title="Network Topology Discovery Time", symbol="DT",
                     unit="ms", higher_is_better=False, definition=DEFINITION, measurement_point=MEASUREMENT_POINT,
                     needs=topology.NEEDS, device="deployment")
def test_network_topology_discovery_time(benchmark_run, topology_emulator, discovery_controller, bmwg,
                                         deployed_topology, deployment_nodes):
    # over the node count, or over the deployments' node counts when the run sweeps them
    benchmark_run.measure(topology.DiscoveryTime(topology_emulator, discovery_controller, deployed_topology, bmwg,
                                                 deployment_nodes))
