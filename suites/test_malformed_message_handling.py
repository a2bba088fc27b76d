"""Malformed-message robustness screen: an extension beside RFC 8456 §5.3.1 (security).

The RFC's §5.3.1 measures how invalid messages change three benchmarks; it does not say what a controller
does with each invalid message.  This screen does: every catalogue kind (emulator/malformed.py) is sent on
a probe session while a sentinel session and a fresh handshake watch the controller from outside.
"""

import pytest

from fixtures.families import screen as rs

DEFINITION = (
    "RS, the robustness score: the percentage of malformed or abnormal switch-to-controller message kinds whose "
    "outcome passes (each kind states which of CONFORMANT, TOLERANT, CLOSED pass; SIDE-EFFECT, COLLATERAL, HANG "
    "and CRASH never do), one value per pass over the kinds; beside it the strict score, the percentage "
    "CONFORMANT (the spec's ERROR with its xid echoed, or the ideal reaction). Each kind is sent on a probe "
    "session after a sentinel session's baseline; its outcome comes from what the emulator sees: the probe's "
    "replies and close, answers naming the kind's marked buffer or MAC, the sentinel's ECHO and PACKET_IN round "
    "trips, a fresh handshake, and whether the controller process lives. A kind's outcome over the passes is its "
    "worst. Kinds that fail, unless listed with --known-findings, fail the benchmark.")
MEASUREMENT_POINT = (
    "forwarding-plane emulator at interface I1: probe replies and sentinel round trips timestamped at socket "
    "read/write (monotonic ns); the controller's process state read by the harness")


@pytest.mark.rfc8456(section="5.3.1", extension=True, category="security", title="Malformed Message Handling",
                     symbol="RS", unit="%", higher_is_better=True, definition=DEFINITION,
                     measurement_point=MEASUREMENT_POINT, repetitions="screen.runs", needs=rs.NEEDS)
def test_malformed_message_handling(benchmark_run, emulator_pool, controller, bmwg):
    benchmark_run.measure(rs.Robustness(emulator_pool, bmwg, controller))
