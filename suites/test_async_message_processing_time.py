"""RFC 8456 §5.1.2 Asynchronous Message Processing Time (A.4.2; RFC 8455 term 2.3.1.2)."""

import pytest

from fixtures.families import async_msgs as am

DEFINITION = (
    "APTn = (ΣRi − ΣTi) / Nrx over the successful PACKET_IN → PACKET_OUT/FLOW_MOD exchanges of a trial of "
    "duration Td, sent from every emulated switch one at a time (mode 'serial': one request outstanding in the "
    "whole emulator; 'per-switch': one per switch). Ti: the request's write; Ri: the read of the first response "
    "matched to it (by buffer_id, the frame it carries, or the eth_src its FLOW_MOD matches). A request with no "
    "response within the response timeout is unsuccessful. Reported per trial in ms, with Nrx and the percentage "
    "of unsuccessful exchanges (1 − Nrx/Ntx) × 100; TAMm and TAMv over the trials. A trial in which a control "
    "session dropped has no value.")
MEASUREMENT_POINT = (
    "forwarding-plane emulator at interface I1: monotonic ns timestamps at the socket write of each PACKET_IN and "
    "at the read of each response (the emulator sleeps in epoll between them unless --busy-poll)")


@pytest.mark.rfc8456(section="5.1.2", category="performance", title="Asynchronous Message Processing Time",
                     symbol="APTn", unit="ms", higher_is_better=False, definition=DEFINITION,
                     measurement_point=MEASUREMENT_POINT, needs=am.NEEDS)
def test_async_message_processing_time(benchmark_run, async_emulator, emulator_ceiling, controller,
                                       async_switches):
    benchmark_run.measure(am.ProcessingTime(async_emulator(async_switches), controller, emulator_ceiling,
                                            async_switches))
