"""RFC 8456 §5.2.1 Control Sessions Capacity (A.5.1; RFC 8455 term 2.3.2.1)."""

import pytest

from fixtures.families import capacity

DEFINITION = (
    "CCn, the number of control sessions successfully established when the controller starts dropping them. "
    "Emulated switches open sessions in groups until the controller refuses, ignores or closes a new one, "
    "closes or stops answering earlier ones, or exits, or the session cap is reached. A session is established "
    "once TCP is up, HELLO is exchanged, FEATURES_REQUEST is answered and the controller has answered an "
    "ECHO_REQUEST sent after that handshake; CCn counts those established when the first established session "
    "was lost (all of them when none was), so it does not depend on the ramp's group size (RFC 8456 A.5.1: "
    "switch n fails, n - 1 is the capacity). Each trial classifies how the controller failed (refuses new "
    "sessions, stops accepting, closes earlier sessions, stops answering echoes, the process exited); beside "
    "CCn, the sustained capacity is the largest count that all survive the hold time. A controller killed by "
    "a signal fails the trial.")
MEASUREMENT_POINT = (
    "forwarding-plane emulator at interface I1: sessions counted by the emulator from its own socket "
    "events; ECHO probes timestamped at socket write/read (monotonic ns)")


@pytest.mark.rfc8456(section="5.2.1", category="scalability", title="Control Sessions Capacity", symbol="CCn",
                     unit="sessions", higher_is_better=True, definition=DEFINITION,
                     measurement_point=MEASUREMENT_POINT, needs=capacity.NEEDS)
def test_control_session_capacity(benchmark_run, capacity_emulator, controller, bmwg):
    benchmark_run.measure(capacity.SessionCapacity(bmwg, capacity_emulator, controller))
