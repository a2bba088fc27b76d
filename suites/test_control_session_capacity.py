"""RFC 8456 §5.2.1 Control Sessions Capacity (A.5.1; RFC 8455 term 2.3.2.1)."""

import pytest

from emulator import codec
from fixtures.families.capacity import capacity_outcome

DEFINITION = (
    "CCn, the largest number of control sessions the controller holds at once. Emulated switches open "
    "sessions in groups until the controller starts dropping, refusing or closing them (or closes earlier "
    "ones), or the session cap is reached. A session counts when TCP is up, HELLO is exchanged, "
    "FEATURES_REQUEST is answered, and after the hold time it still answers an ECHO_REQUEST. A controller "
    "that exits by itself at its limit has no sessions left to hold: CCn is then the sessions established "
    "before the first failure (RFC 8456 A.5.1: switch n fails, n - 1 is the capacity), marked 'not held'. "
    "A controller killed by a signal fails the trial.")
MEASUREMENT_POINT = (
    "forwarding-plane emulator at interface I1: sessions counted by the emulator from its own socket "
    "events; ECHO probes timestamped at socket write/read (monotonic ns)")


@pytest.mark.rfc8456(section="5.2.1", category="scalability", title="Control Sessions Capacity", symbol="CCn",
                     unit="sessions", higher_is_better=True, definition=DEFINITION,
                     measurement_point=MEASUREMENT_POINT)
def test_control_session_capacity(benchmark_run, capacity_emulator, controller, bmwg):
    cap = bmwg.capacity.max_sessions
    run = benchmark_run.parameters(**bmwg.capacity.report(), **bmwg.ramp.report(),
                                   openflow=codec.VERSION_NAMES[controller.openflow],
                                   number_of_nodes="one emulated switch per session", number_of_links=0)

    def trial(index):
        r = capacity_emulator.trial(controller.address)
        for note in capacity_emulator.notes:
            run.note(note)
        if r["kept"] < r["established"]:
            controller.wait_exit(10.0)  # a controller failing at its limit can take seconds to die
        return capacity_outcome(r, cap, controller.exit_reason(), controller.exited_by_itself())

    entry = run.trials(trial)
    capped = [t for t in entry["trials"] if t.get("ok") and t["details"]["capped"]]
    if capped:
        run.note(f"{len(capped)} trial(s) reached the cap of {cap} sessions: there the capacity is at least the "
                 "cap (raise --max-sessions to find the controller's limit)")
    run.finish(lambda e: all(t["value"] <= t["details"]["attempted"] for t in e["trials"] if t.get("ok")))
