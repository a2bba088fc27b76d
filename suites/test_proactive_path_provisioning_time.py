"""RFC 8456 §5.1.5 Proactive Path Provisioning Time (A.4.5; RFC 8455 term 2.3.1.5)."""

import pytest

from fixtures.families import paths

DEFINITION = (
    "PPT = Tdf1 − Tsf1 (the RFC body's definition). Tsf1: the first northbound request that installs the path, sent "
    "at I2. Tdf1: the instant the whole path was provisioned at I1 — each path switch's first FLOW_MOD serving the "
    "test flow after Tsf1, the latest of these. The table-miss action is 'drop'; TP1's single stream (S1, D1) runs "
    "before and during the installation; one entry per path switch (match source and destination MAC, output "
    "toward TP2) is requested, TP2's switch first. Beside it, the data-plane time: Tsf1 to TP2's first frame. "
    "Reported per trial in ms; TPPm and TPPv over the trials.")
MEASUREMENT_POINT = (
    "northbound client at interface I2 (request sent) and forwarding-plane emulator at I1 (FLOW_MOD read), one "
    "monotonic clock on one host; the data-plane variant at test port TP2")


@pytest.mark.rfc8456(section="5.1.5", category="performance", title="Proactive Path Provisioning Time", symbol="PPT",
                     unit="ms", higher_is_better=False, definition=DEFINITION, measurement_point=MEASUREMENT_POINT,
                     needs=paths.PROACTIVE, device="deployment")
def test_proactive_path_provisioning_time(benchmark_run, path_emulator, path_controller, bmwg, deployed_topology,
                                          deployment_nodes):
    benchmark_run.measure(paths.ProactiveTime(path_emulator, path_controller, deployed_topology, bmwg,
                                              deployment_nodes))
