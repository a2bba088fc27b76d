"""RFC 8456 §5.1.7 Proactive Path Provisioning Rate (A.4.7; RFC 8455 term 2.3.1.7)."""

import pytest

from fixtures.families import paths

DEFINITION = (
    "PPR = Ndf / Td, from data-plane observation of path activation (as the RFC asks). The table-miss action is "
    "'drop'. TP1 cycles continuously through n unique address pairs (Si, Di); the paths — one entry per path switch "
    "matching the pair's MACs — are requested through the controller's northbound as fast as it answers (several "
    "requests in flight), for Td from the first request. Ndf: the pairs whose first frame reached TP2 within Td of "
    "the first request. Reported per trial in paths/s with the offered load (pairs, frames/s); PPPm and PPPv over the "
    "trials. A trial in which every requested path was active within Td gives a lower bound.")
MEASUREMENT_POINT = ("northbound client at I2 (Td starts at the first request) and test port TP2 (first frame of "
                     "each pair), one monotonic clock on one host")


@pytest.mark.rfc8456(section="5.1.7", category="performance", title="Proactive Path Provisioning Rate", symbol="PPR",
                     unit="paths/s", higher_is_better=True, definition=DEFINITION, measurement_point=MEASUREMENT_POINT,
                     needs=paths.PROACTIVE, device="deployment")
def test_proactive_path_provisioning_rate(benchmark_run, path_emulator, path_controller, bmwg, deployed_topology,
                                          deployment_nodes):
    benchmark_run.measure(paths.ProactiveRate(path_emulator, path_controller, deployed_topology, bmwg,
                                              deployment_nodes))
