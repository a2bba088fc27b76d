"""RFC 8456 §5.4.2 Network Re-provisioning Time (A.7.2; RFC 8455 term 2.3.4.2)."""

import pytest

from fixtures.families import reprovisioning as rp

DEFINITION = (
    "Network Re-provisioning Time = (FDRT + RDRT) / 2, with FDRT = TP2-Tffr − TP2-Tlfr and RDRT = TP1-Tffr − "
    "TP1-Tlfr. TP1 sends S1 → D1 and TP2 sends D1 → S1, each frame with its own sequence number, at a steady rate; "
    "the controller provisions the pair's path reactively (table-miss: send to controller) and must not pre-provision "
    "an alternate. Once both directions flow, a link (or a switch) on the active path goes down. Tlfr is the last "
    "frame a receiver got before the silence around the failure and Tffr the first after it; the frames lost are the "
    "sequence numbers missing between them, counted at each direction's receiver. A direction that lost no frame is "
    "negligible (0 ms). A trial is invalid when a switch of the alternate path held an entry for the pair before the "
    "failure, or got its first one only after traffic resumed through it; it is unsuccessful when either direction "
    "has not resumed within Td. Reported per trial in ms; the mean and variance over the trials.")
MEASUREMENT_POINT = (
    "data plane, at test ports TP1 and TP2 (monotonic ns at each frame's arrival, the emulator's clock); the "
    "control-plane extra at interface I1 (the first PORT_STATUS or session close the emulator writes, and the read "
    "of each FLOW_MOD)")


@pytest.mark.rfc8456(section="5.4.2", category="reliability", title="Network Re-provisioning Time", symbol="NRT",
                     unit="ms", higher_is_better=False, definition=DEFINITION, measurement_point=MEASUREMENT_POINT,
                     needs=rp.NEEDS)
def test_network_reprovisioning_time(benchmark_run, path_emulator, path_controller, bmwg, deployed_topology,
                                     reprov_failure):
    benchmark_run.measure(rp.ReprovisioningTime(path_emulator, path_controller, deployed_topology, bmwg,
                                                reprov_failure))
