"""RFC 8456 §5.2.2 Network Discovery Size (A.5.2; RFC 8455 term 2.3.2.2)."""

import pytest

from emulator import topology as tp
from fixtures.families.topology import run_parameters, size_search, size_trial, wait_forgotten
from fixtures.harness import TrialFailed, TrialOutcome

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
                     unit="nodes", higher_is_better=True, definition=DEFINITION, measurement_point=MEASUREMENT_POINT)
def test_network_discovery_size(benchmark_run, topology_emulator, discovery_controller, bmwg):
    p, controller = bmwg.discovery, discovery_controller
    run = benchmark_run.parameters(
        **run_parameters(controller), topology_family=p.size_family, start_nodes=p.size_start, max_nodes=p.size_max,
        query_interval_s=p.size_poll, timeout_s=p.timeout, compared=list(p.parts),
        identical_answers_end_trial=p.identical,
        search_method="coarse doubling, bisection, ±1-node confirmation (RFC 8456 A.5.2)")
    run.columns([("links", "Links at Ns"), ("hosts", "Hosts at Ns"), ("steps", "Sizes tried"),
                 ("first_failure", "Smallest failing size")])
    low = tp.SIZED_FAMILIES[p.size_family]
    searches: dict = {}

    def trial(index):
        rows = searches[str(index)] = []

        def one(n):
            controller.prepare_trial()     # a fresh controller for every size (clean state between trials)
            topo = tp.sized(p.size_family, n)
            nb = controller.northbound()
            forgot = wait_forgotten(controller, nb, topo.switches, p.forget_timeout)
            r = {**size_trial(topology_emulator, nb, topo, controller.address, p), **(forgot or {})}
            rows.append(r)
            run.context("search_in_progress", searches)   # on disk as the search goes, in case it is stopped
            found = "discovered" if r["matched"] else f"NOT discovered ({r.get('difference') or r.get('why', '')})"
            run.progress(f"test_network_discovery_size: search {index}: {n} nodes {found} in {r['seconds']:.1f} s")
            return r

        out = size_search(one, p.size_start, p.size_max, low=low)
        if out["ns"] is None:
            raise TrialFailed(f"no {p.size_family} topology of {low}..{p.size_start} nodes was discovered completely "
                              f"(last: {out['rows'][-1].get('difference') or out['rows'][-1].get('why')})")
        at = tp.sized(p.size_family, out["ns"]).summary()
        fails = [r["nodes"] for r in out["rows"] if not r["matched"]]
        searches.pop(str(index), None)    # a finished search is in its trial's details
        run.context("search_in_progress", searches)
        details = {"ns": out["ns"], "links": at["links"], "hosts": at["hosts"], "steps": len(out["rows"]),
                   "first_failure": min(fails) if fails else None, "capped": out["capped"],
                   "method": out["method"], "search": out["rows"]}
        return TrialOutcome(value=out["ns"], details=details, lower_bound=out["capped"],
                            note=f"reached --size-max {p.size_max}: Ns is at least that" if out["capped"] else "")

    run.trials(trial)
    run.finish(lambda e: all(low <= t["value"] <= p.size_max for t in e["trials"] if t.get("ok")))
