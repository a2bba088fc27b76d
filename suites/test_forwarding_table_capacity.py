"""RFC 8456 §5.2.3 Forwarding Table Capacity (A.5.3; RFC 8455 term 2.3.2.3)."""

import pytest

from fixtures.families import paths

MEASUREMENT_POINT = "the controller's northbound flow API (interface I2): its answers and its flow listing"


@pytest.mark.rfc8456(section="5.2.3", category="scalability", title="Forwarding Table Capacity", symbol="Nrp",
                     unit="flow entries", higher_is_better=True, definition=paths.FTC_DEFINITION["reactive"],
                     measurement_point=MEASUREMENT_POINT, needs=paths.NEEDS)
def test_forwarding_table_capacity(benchmark_run, path_emulator, path_controller, bmwg, deployed_topology, ftc_mode,
                                   result_store):
    benchmark_run.measure(paths.ForwardingTableCapacity(path_emulator, path_controller, deployed_topology, bmwg,
                                                        ftc_mode, result_store.data))
