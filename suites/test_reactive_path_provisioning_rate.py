"""RFC 8456 §5.1.6 Reactive Path Provisioning Rate (A.4.6; RFC 8455 term 2.3.1.6)."""

import pytest

from fixtures.families import paths

DEFINITION = (
    "RPR = Ndf / Td. TP2 first announces the destinations D1..Dn (gratuitous ARPs) and the controller learns them; "
    "then TP1 sends one frame for each new address pair (Si, Di) at the offered rate for Td, so every frame needs a "
    "new path and unique frames are paths. Ndf: the pairs whose frame reached TP2 within Td of TP1's first frame. "
    "The table-miss action is 'send to controller'; the topology is deployed anew and discovered for every trial. "
    "Reported per trial in paths/s with the offered rate; RPPm and RPPv over the trials. A trial in which the "
    "controller kept up with the offered rate (≥ 95 % of the pairs within Td) gives a lower bound of its maximum.")
MEASUREMENT_POINT = "test ports TP1 (send) and TP2 (receive) on the emulator's monotonic clock (data plane)"


@pytest.mark.rfc8456(section="5.1.6", category="performance", title="Reactive Path Provisioning Rate", symbol="RPR",
                     unit="paths/s", higher_is_better=True, definition=DEFINITION, measurement_point=MEASUREMENT_POINT,
                     needs=paths.REACTIVE)
def test_reactive_path_provisioning_rate(benchmark_run, path_emulator, path_controller, bmwg, deployed_topology):
    benchmark_run.measure(paths.ReactiveRate(path_emulator, path_controller, deployed_topology, bmwg))
