"""RFC 8456 §5.2.2 Network Discovery Size (A.5.2; RFC 8455 term 2.3.2.2)."""

import pytest

from emulator import topology as tp
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
    p, controller = bmwg.discovery, discovery_controller
    run = benchmark_run.parameters(
        **topology.run_parameters(controller), topology_family=p.size_family, start_nodes=p.size_start,
        max_nodes=p.size_max, query_interval_s=p.size_poll, timeout_s=p.timeout,
        compared=topology.compared(controller, p),
        identical_answers_end_trial=p.identical, search_method=f"{topology.SIZE_METHOD} (RFC 8456 A.5.2)")
    run.columns([("links", "Links at Ns"), ("hosts", "Hosts at Ns"), ("steps", "Sizes tried"),
                 ("first_failure", "Smallest failing size")])
    run.trials(lambda index: topology.size_search_trial(run, topology_emulator, controller, p, index))
    run.note(topology.hosts_note(controller, p))
    low = tp.SIZED_FAMILIES[p.size_family]
    run.finish(lambda e: all(low <= t["value"] <= p.size_max for t in e["trials"] if t.get("ok")))
