"""RFC 8456 §5.3.1 Exception Handling (A.6.1; RFC 8455 term 2.3.4.1): the path provisioning rate and time and the
network topology change detection time, again, with 1 % and 2 % of the asynchronous messages invalid."""

import pytest

from emulator import malformed as mf
from fixtures.families.exceptions import TABLE
from fixtures.families.paths import reactive_rate_trial, reactive_time_trial, start_run
from fixtures.families.tables import TESTS, TITLES, background, comparison
from fixtures.families.topology import change_trial
from fixtures.harness import TrialFailed, TrialOutcome

DEFINITION = (
    "One cell of the RFC's table: a test (reactive path provisioning rate or time, network topology change "
    "detection time) measured as its own benchmark defines it while the emulator replaces p % of the PACKET_INs it "
    "sends, at seeded positions (k = round(p·N): round(p) of every 100 consecutive messages), by an invalid "
    "message (--exception-kind; the RFC's example, a PACKET_IN of the supported but not negotiated version, by "
    "default). Traffic is offered at 1 % above the path programming rate (A.6.1): the rate test offers 1.01 × the "
    "0 % cell's mean rate at 1 % and 2 %; the time test runs its test flow, and the change test times its link "
    "going down, while TP1 offers new pairs at that rate, in every cell (so the cells differ in the invalid "
    "messages only). Each cell at p > 0 is compared with the 0 % cell (or --baseline) by the suite's two-sample "
    "test. A cell in which the controller closes switch sessions is not benchmarkable with that kind.")


@pytest.mark.rfc8456(section="5.3.1", category="security", title="Exception Handling", symbol="—", unit="—",
                     higher_is_better=True, definition=DEFINITION,
                     measurement_point="as the underlying test's (test ports, or the emulator at I1)")
def test_exception_handling(benchmark_run, path_emulator, path_controller, bmwg, deployed_topology, exception_cell,
                            result_store):
    test, pct = exception_cell
    ep, p, topo = bmwg.exceptions, bmwg.paths, deployed_topology
    underlying, unit, higher, key = TESTS[test]
    title, symbol = TITLES[test]
    run = benchmark_run.describe(title=f"Exception Handling: {title} with {pct} % exceptions", symbol=symbol,
                                 unit=unit, higher_is_better=higher)
    controller = path_controller("reactive")
    choice = start_run(run, controller, topo, p, "reactive", path_emulator,
                       parameters={"test": test, "underlying_benchmark": underlying, "exceptions_percent": pct,
                                   "exception_kind": ep.kind, "exception_kind_title": mf.BY_ID[ep.kind].title,
                                   "exception_seed": ep.seed},
                       columns=[("exceptions_sent", "Invalid messages"), ("async_messages", "Asynchronous messages")])
    rate = TABLE.offered_rate(run, test, pct == 0, result_store.data, bmwg.baseline, p.offered_rate)

    def trial(index):
        path_emulator.exceptions = (pct, ep.kind, ep.seed + index) if pct else None
        try:
            if test == "reactive_path_provisioning_rate":
                r = reactive_rate_trial(path_emulator, topo, controller, choice, p, index, offered_rate=rate)
            elif test == "reactive_path_provisioning_time":
                r = reactive_time_trial(path_emulator, topo, controller, choice, p, index, background_rate=rate)
            else:
                d = bmwg.discovery
                r = change_trial(path_emulator, controller.northbound(), topo, controller.address, d, "link",
                                 before_change=background(path_emulator, choice, p, rate, d.settle + d.change_td,
                                                          index))
        except TrialFailed as exc:
            if pct and "switch sessions closed" in str(exc):
                run.skip(f"not benchmarkable at {pct} % with kind {ep.kind}: the controller closes sessions that "
                         f"send it ({exc})")
            raise
        finally:
            path_emulator.exceptions = None
        return TrialOutcome(value=r[key], details=r, note=r.get("note", ""),
                            lower_bound=bool(r.get("kept_up")))

    entry = run.trials(trial)
    if pct and entry["summary"] and entry["summary"]["n"]:
        base, source = TABLE.baseline_for(test, result_store.data, bmwg.baseline)
        if base:
            values = [t["value"] for t in entry["trials"] if t.get("ok")]
            run.context("against_without_exceptions", comparison(values, base, higher, bmwg.alpha, source))
        else:
            run.note(f"not compared with a baseline: {source}")
    ok = [t["details"] for t in entry["trials"] if t.get("ok")]
    if pct and ok and not any(d.get("exceptions_sent") for d in ok):
        n = max(d.get("async_messages", 0) for d in ok)
        run.fail(f"no invalid message was sent in any trial: at most {n} asynchronous messages per trial, "
                 f"too few for {pct} % (k = round(p·N) = 0)")
    run.finish()
