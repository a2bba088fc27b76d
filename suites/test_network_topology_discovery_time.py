"""RFC 8456 §5.1.1 Network Topology Discovery Time (A.4.1; RFC 8455 term 2.3.1.1)."""

import pytest

from fixtures.families.topology import discovery_trial, run_parameters, wait_forgotten
from fixtures.harness import TrialOutcome
from reports import stats

DEFINITION = (
    "DT = Tmn − Tm1. Tm1: the first discovery PACKET_OUT (LLDP or BDDP) the emulator reads from the controller. "
    "Tmn: the instant the last deployed link was first relayed, i.e. the latest of the first discovery PACKET_INs "
    "written at the far end of every directed link. The trial succeeds when the topology the controller reports "
    "northbound (queried every t seconds, or once after Td in the wait mode) matches the deployed one; it is "
    "unsuccessful, with no value, after three identical non-matching answers, or when a switch session drops. "
    "The whole topology connects anew for every trial, to a controller restarted for it or, when the suite cannot "
    "restart it, one that reports none of the previous trial's switches any more. Reported per trial in ms; "
    "TDm and TDv over the trials.")
MEASUREMENT_POINT = (
    "forwarding-plane emulator at interface I1: monotonic ns timestamps at the read of each discovery PACKET_OUT "
    "and the write of each relayed PACKET_IN; the northbound only decides success")


@pytest.mark.rfc8456(section="5.1.1", category="performance", title="Network Topology Discovery Time", symbol="DT",
                     unit="ms", higher_is_better=False, definition=DEFINITION, measurement_point=MEASUREMENT_POINT)
def test_network_topology_discovery_time(benchmark_run, topology_emulator, discovery_controller, bmwg,
                                         deployed_topology):
    topo, p, controller = deployed_topology, bmwg.discovery, discovery_controller
    run = benchmark_run.parameters(
        **run_parameters(controller, topo),
        query_mode=f"poll every {p.poll_interval:g} s" if p.mode == "poll"
        else f"wait Td = {p.wait:g} s, then one query",
        compared=list(p.parts), identical_answers_end_trial=p.identical, timeout_s=p.timeout,
        emulator_shards=topology_emulator.shards, host_refresh_s=p.host_refresh)
    run.series("number of nodes", len(topo.switches))
    run.columns([("nodes", "Nodes"), ("links", "Links"), ("hosts", "Hosts"), ("queries", "Queries"),
                 ("nb_match_after_tm1_ms", "NB match after Tm1 (ms, extra)"),
                 ("dt_last_before_match_ms", "Last LLDP before match (ms, extra)"),
                 ("relay_latency_median_us", "Relay median (µs)")])

    def trial(index):
        nb = controller.northbound()   # the embedded Ryu restarts per trial on a new REST port
        forgot = wait_forgotten(controller, nb, topo.switches, p.forget_timeout)
        r = discovery_trial(topology_emulator, nb, topo, controller.address, p)
        return TrialOutcome(value=r["dt_ms"], details={**r, **(forgot or {})}, note=r.get("note", ""))

    entry = run.trials(trial)
    ok = [t for t in entry["trials"] if t.get("ok")]
    lat = [t["details"]["relay_latency_median_us"] for t in ok if t["details"].get("relay_latency_median_us")]
    if lat and entry["summary"]["mean"]:
        med = stats.median(lat)
        run.note(f"relay latency inside the emulator (PACKET_OUT read to PACKET_IN write): median of trial medians "
                 f"{med:.1f} µs, {med / (entry['summary']['mean'] * 1e3):.2%} of the mean discovery time")
    run.finish(lambda e: all(t["value"] >= 0 and t["details"]["nodes"] == len(topo.switches)
                             for t in e["trials"] if t.get("ok")))
