"""RFC 8456 §5.1.7 Proactive Path Provisioning Rate (A.4.7; RFC 8455 term 2.3.1.7)."""

import pytest

from fixtures.harness import TrialOutcome
from fixtures.paths import choose_path, extra_note, guarded, proactive_rate_trial, run_parameters

DEFINITION = (
    "PPR = Ndf / Td, from data-plane observation of path activation (as the RFC asks). The table-miss action is "
    "'drop'. TP1 cycles continuously through n unique address pairs (Si, Di); the paths — one entry per path switch "
    "matching the pair's MACs — are requested through the controller's northbound as fast as it answers (several "
    "requests in flight), for Td from the first request. Ndf: the pairs whose first frame reached TP2 within Td of "
    "the first request. Reported per trial in paths/s with the offered load (pairs, frames/s); PPPm and PPPv over the "
    "trials. A trial in which every requested path was active within Td gives a lower bound.")
MEASUREMENT_POINT = ("northbound client at I2 (Td starts at the first request) and test port TP2 (first frame of "
                     "each pair), one monotonic clock on one host")


@pytest.mark.rfc("5.1.7")
@pytest.mark.performance
def test_proactive_path_provisioning_rate(benchmark_run, path_emulator, path_controller, bmwg, deployed_topology):
    topo, p = deployed_topology, bmwg.paths
    controller = path_controller("proactive")
    try:
        choice = choose_path(topo, p.path_length)
    except ValueError as exc:
        pytest.skip(str(exc))
    run = benchmark_run(
        benchmark="test_proactive_path_provisioning_rate", title="Proactive Path Provisioning Rate",
        rfc_section="5.1.7", unit="paths/s", symbol="PPR", definition=DEFINITION,
        measurement_point=MEASUREMENT_POINT, higher_is_better=True,
        parameters={**run_parameters(controller, topo, choice, "proactive"), "paths_requested": p.path_flows,
                    "offered_rate_fps": p.probe_rate, "td_s": p.rate_td, "nb_workers": p.nb_workers,
                    "frame_size": p.frame_size})
    run.entry["series_x"] = {"name": "network devices in the path", "value": len(choice.hops)}
    run.entry["trial_columns"] = [("ndf", "Ndf"), ("paths_requested", "Paths requested in Td"),
                                  ("sb_rate", "Paths/s at I1 (control plane)"), ("nb_request_rate", "NB requests/s"), ("nb_errors", "NB errors"),
                                  ("path_switches", "Devices in path")]
    run.store.save()
    path_emulator.data_plane = {"table_miss": "drop"}

    def trial(index):
        fnb = controller.flow_northbound()
        r = guarded(lambda: proactive_rate_trial(path_emulator, topo, controller, fnb, choice, p, index))
        return TrialOutcome(value=r["ppr"], details=r, note=r.get("note", ""), lower_bound=bool(r.get("kept_up")))

    entry = run.run(trial)
    extra_note(run, entry, "sb_rate", "paths completed at I1 within Td (every path switch's FLOW_MOD read), per s")
    extra_note(run, entry, "nb_request_rate", "northbound flow requests answered per second")
    run.store.save()
    assert entry["summary"]["n"] > 0, entry["outcome"].get("reason")
    assert all(t["value"] > 0 for t in entry["trials"] if t.get("ok"))
    assert entry["outcome"]["status"] == "passed", entry["outcome"].get("reason")
