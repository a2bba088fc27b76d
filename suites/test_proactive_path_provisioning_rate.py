"""RFC 8456 §5.1.7 Proactive Path Provisioning Rate (A.4.7; RFC 8455 term 2.3.1.7)."""

import pytest

from fixtures.families import deployments, paths

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
    topo, p = deployed_topology, bmwg.paths
    controller = path_controller("proactive")
    trial = paths.start_run(
        benchmark_run, controller, topo, p, "proactive", path_emulator,
        parameters={"paths_requested": p.path_flows, "offered_rate_fps": p.probe_rate, "td_s": p.rate_td,
                    "nb_workers": p.nb_workers},
        columns=[("ndf", "Ndf"), ("paths_requested", "Paths requested in Td"),
                 ("sb_rate", "Paths/s at I1 (control plane)"), ("nb_request_rate", "NB requests/s"),
                 ("nb_errors", "NB errors"), ("path_switches", "Devices in path")])
    deployments.on_axis(benchmark_run, bmwg, controller, deployment_nodes, topo.kind)
    entry = benchmark_run.trials(lambda index: paths.time_outcome(
        paths.proactive_rate_trial(paths.with_northbound(trial), index), "ppr"))
    paths.finish_run(benchmark_run, entry,
                     [("nb_request_rate", "northbound flow requests answered per second"),
                      ("sb_rate", "paths completed at I1 within Td (every path switch's FLOW_MOD read), per s")],
                     lambda v: v > 0)
