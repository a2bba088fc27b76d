"""RFC 8456 §5.4.1 Controller Failover Time (A.7.1; RFC 8455 term 2.3.4.1)."""

import pytest

from fixtures.families import failover

DEFINITION = (
    "Controller Failover Time = T2 − T1, measured in the data plane (the RFC's procedure). The switches are connected "
    "to every controller of the cluster (RFC 8456 §3.2), which has elected its master; D1 is learned from a "
    "gratuitous ARP at TP2. TP1 sends unidirectional frames with incrementing sequence numbers, each from a new "
    "source address (every frame a new flow for the controller), at a rate TP2 receives without loss. Then the "
    "active controller is brought down. T1: the last frame TP2 received before the first jump in the sequence "
    "numbers after the failure; T2: the first frame after it. Packet loss: the frames missing since the failure. "
    "No frame lost: the failover time is negligible (reported 0 ms, with a note). A trial in which the cluster had "
    "not converged (one MASTER per switch, the others SLAVE) fails with that reason; one in which no frame reached "
    "TP2 within Td after the failure is unsuccessful. The killed controller is brought back after each trial, so "
    "the killed node rotates. Reported per trial in ms; the mean and variance over the trials.")
MEASUREMENT_POINT = (
    "data plane at test port TP2 (monotonic ns at each frame's arrival; the kill's instant on the same clock); the "
    "control-plane extras at interface I1 (the switches' timeline: session loss, ROLE_REQUEST, FLOW_MOD reads) and "
    "in the members' logs (the lock takeover)")


@pytest.mark.rfc8456(section="5.4.1", category="reliability", title="Controller Failover Time", symbol="CFT",
                     unit="ms", higher_is_better=False, definition=DEFINITION, measurement_point=MEASUREMENT_POINT,
                     device="controller_cluster", needs=failover.NEEDS)
def test_controller_failover_time(benchmark_run, controller_cluster, path_emulator, bmwg, failover_cell):
    benchmark_run.measure(failover.FailoverTime(path_emulator, controller_cluster, bmwg, failover_cell))
