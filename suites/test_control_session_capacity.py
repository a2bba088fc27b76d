"""RFC 8456 §5.2.1 Control Sessions Capacity (A.5.1; RFC 8455 term 2.3.2.1)."""

import pytest

from fixtures.families import capacity

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
                     measurement_point=MEASUREMENT_POINT, needs=capacity.NEEDS)
def test_control_session_capacity(benchmark_run, capacity_emulator, controller, bmwg):
    run = benchmark_run.parameters(**capacity.parameters(bmwg, controller))
    entry = run.trials(lambda index: capacity.capacity_trial(run, capacity_emulator, controller, index))
    run.note(capacity.cap_note(entry, bmwg.capacity.max_sessions))
    run.finish(lambda e: all(t["value"] <= t["details"]["attempted"] for t in e["trials"] if t.get("ok")))
