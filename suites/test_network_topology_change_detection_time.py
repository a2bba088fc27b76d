"""RFC 8456 §5.1.8 Network Topology Change Detection Time (A.4.8; RFC 8455 term 2.3.1.8)."""

import pytest

from fixtures.families import topology

DEFINITION = (
    "TDT = Tcd − Tcn. After the controller has discovered the deployed topology, a link goes down (A.4.8: both "
    "ends send PORT_STATUS, reason MODIFY, state LINK_DOWN) or a switch fails (its session closes and its "
    "neighbours send PORT_STATUS). Tcn: the first of these notifications written by the emulator. Tcd: the first "
    "discovery PACKET_OUT (LLDP/BDDP) the emulator reads from the controller afterwards. A trial with no such "
    "message within Td, or in which another switch session drops, is unsuccessful. Also recorded, as labelled "
    "extras: the first discovery PACKET_OUT out of a switch the change touched, the controller's first message of "
    "any kind, and when its northbound view first reflects the change. Reported per trial in ms; NTDm and NTDv "
    "over the trials.")
MEASUREMENT_POINT = (
    "forwarding-plane emulator at interface I1: monotonic ns timestamps at the write of each PORT_STATUS (or the "
    "session close) and at the read of each message from the controller; northbound queries timestamped at their "
    "answer")


@pytest.mark.rfc8456(section="5.1.8", category="performance", title="Network Topology Change Detection Time",
                     symbol="TDT", unit="ms", higher_is_better=False, definition=DEFINITION,
                     measurement_point=MEASUREMENT_POINT, needs=topology.NEEDS)
def test_network_topology_change_detection_time(benchmark_run, topology_emulator, discovery_controller, bmwg,
                                                deployed_topology, change_event):
    benchmark_run.measure(topology.ChangeDetectionTime(topology_emulator, discovery_controller, deployed_topology,
                                                       bmwg.discovery, change_event))
