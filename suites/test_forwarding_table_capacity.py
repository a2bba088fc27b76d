"""RFC 8456 §5.2.3 Forwarding Table Capacity (A.5.3; RFC 8455 term 2.3.2.3)."""

import pytest

from emulator.params import FabricParams
from fixtures.families.paths import (
    async_rate_from,
    choose_path,
    ftc_proactive_trial,
    ftc_reactive_trial,
    run_parameters,
)
from fixtures.harness import TrialOutcome

DEFINITION = {
    "reactive": (
        "Nrp, the flow entries the controller manages, as its northbound reports them (entries that name an address; "
        "the table-miss and discovery entries it keeps for itself are left out), once three consecutive readings t "
        "seconds apart are equal. Both test ports announce their hosts, then send bidirectional traffic over unique "
        "address pairs at the controller's asynchronous message processing rate (this run's §5.1.3 result, or "
        "--ftc-rate). The table-miss action is 'send to controller'. A trial in which every offered pair got its path "
        "gives a lower bound."),
    "proactive": (
        "Nrp, the number of unique flow entries the controller accepted through its northbound (one entry per "
        "request, matching a source and destination MAC, spread over the switches, no timeouts) before it returned "
        "a failure. The count it reports afterwards is recorded beside it. A controller that accepts --ftc-max flows "
        "gives a lower bound."),
}
MEASUREMENT_POINT = "the controller's northbound flow API (interface I2): its answers and its flow listing"


@pytest.mark.rfc8456(section="5.2.3", category="scalability", title="Forwarding Table Capacity", symbol="Nrp",
                     unit="flow entries", higher_is_better=True, definition=DEFINITION["reactive"],
                     measurement_point=MEASUREMENT_POINT)
def test_forwarding_table_capacity(benchmark_run, path_emulator, path_controller, bmwg, deployed_topology, ftc_mode,
                                   result_store):
    topo, p = deployed_topology, bmwg.paths
    controller = path_controller(ftc_mode, need_flows=True)
    run = benchmark_run.describe(title=f"Forwarding Table Capacity ({ftc_mode})", definition=DEFINITION[ftc_mode])
    choice = None
    if ftc_mode == "reactive":
        try:
            choice = choose_path(topo, p.path_length)
        except ValueError as exc:
            run.skip(str(exc))
        measured = async_rate_from(result_store.data)
        rate = p.ftc_rate or measured or 1000.0
        run.parameters(traffic_rate_fps=rate, pairs_each_direction=p.ftc_flows, query_interval_s=p.ftc_poll,
                       traffic_rate_source="--ftc-rate" if p.ftc_rate else "this run's §5.1.3 maximum rate"
                       if measured else "1000 frames/s (no §5.1.3 result in this run; set --ftc-rate)")
    else:
        run.parameters(max_flows=p.ftc_max, nb_workers=p.nb_workers)
    run.parameters(**run_parameters(controller, topo, choice, ftc_mode, flows_api=True),
                   flow_idle_timeout="none (0: permanent)")
    run.context("provisioning_type", ftc_mode)
    run.columns([("pairs_offered", "Pairs offered"), ("pairs_reached", "Pairs with a path"), ("readings", "Readings")]
                if ftc_mode == "reactive" else
                [("requests", "Requests"), ("nb_count_after", "Count reported after"), ("install_rate", "Installs/s"),
                 ("refused", "Refusal")])
    path_emulator.fabric = FabricParams(host_refresh=0, data_plane=True,
                                        table_miss="controller" if ftc_mode == "reactive" else "drop")

    def trial(index):
        fnb = controller.flow_northbound()
        if ftc_mode == "reactive":
            r = ftc_reactive_trial(path_emulator, topo, controller, fnb, choice, p, rate, index, progress=run.progress)
        else:
            r = ftc_proactive_trial(path_emulator, topo, controller, fnb, p, index, progress=run.progress)
        return TrialOutcome(value=r["nrp"], details=r, note=r.get("note", ""), lower_bound=bool(r.get("lower_bound")))

    run.trials(trial)
    run.finish(lambda e: all(t["value"] > 0 for t in e["trials"] if t.get("ok")))
