"""RFC 8456 §5.1.4 Reactive Path Provisioning Time (A.4.4; RFC 8455 term 2.3.1.4)."""

import pytest

from fixtures.families import paths

DEFINITION = (
    "RPT = Tdf1 − Tsf1 (the RFC body's control-plane definition). Tsf1: the first PACKET_IN carrying the test "
    "flow (S1, D1) that a switch writes to the controller. Tdf1: the instant the whole path was provisioned — for "
    "each switch that received a FLOW_MOD serving the flow (its match fits the flow's addresses and it forwards), "
    "that switch's first such FLOW_MOD; the latest of these. The destination D1 is announced first by a gratuitous "
    "ARP from TP2; the table-miss action is 'send to controller'; the topology is deployed anew and discovered by "
    "the controller for every trial. Beside it, the Appendix's data-plane time: TP1's first frame sent to TP2's first "
    "frame received. Reported per trial in ms; TRPm and TRPv over the trials.")
MEASUREMENT_POINT = (
    "forwarding-plane emulator at interface I1 (monotonic ns at the PACKET_IN write and the FLOW_MOD read); the "
    "data-plane variant at test ports TP1 (send) and TP2 (receive), on the same clock")


@pytest.mark.rfc8456(section="5.1.4", category="performance", title="Reactive Path Provisioning Time", symbol="RPT",
                     unit="ms", higher_is_better=False, definition=DEFINITION, measurement_point=MEASUREMENT_POINT,
                     needs=paths.REACTIVE)
def test_reactive_path_provisioning_time(benchmark_run, path_emulator, path_controller, bmwg, deployed_topology):
    benchmark_run.measure(paths.ReactiveTime(path_emulator, path_controller, deployed_topology, bmwg))
