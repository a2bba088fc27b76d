"""RFC 8456 §5.2.2 Network Discovery Size (A.5.2; RFC 8455 term 2.3.2.2)."""

import pytest

from fixtures.families import topology

DEFINITION = (
    "Ns, the number of nodes of the largest topology the controller discovers completely (switches, links and "
    "hosts as compared). Topologies of one family grow one node at a time. Each size is deployed on a freshly "
    "started controller (one the suite cannot restart must first stop reporting the previous size's switches) and "
    "queried every t seconds until the reported topology matches the deployed one or stays "
    "the same over three answers. The search doubles N while discovery succeeds, bisects between the last success "
    "and the first failure, then confirms with the RFC's ±1-node steps: Ns succeeds when run again and Ns + 1 "
    "fails. One search is one repetition. A search that succeeds at --size-max reports a lower bound.")
MEASUREMENT_POINT = ("the controller's northbound view compared with the deployed topology; sizes counted by the "
                     "emulator")


@pytest.mark.rfc8456(section="5.2.2", category="scalability", title="Network Discovery Size", symbol="Ns",
                     unit="nodes", higher_is_better=True, definition=DEFINITION, measurement_point=MEASUREMENT_POINT,
                     needs=topology.NEEDS)
def test_network_discovery_size(benchmark_run, topology_emulator, discovery_controller, bmwg):
    benchmark_run.measure(topology.DiscoverySize(topology_emulator, discovery_controller, bmwg.discovery))
