"""RFC 8456 §5.3.1 Exception Handling (A.6.1; RFC 8455 term 2.3.4.1): the path provisioning rate and time and the
network topology change detection time, again, with 1 % and 2 % of the asynchronous messages invalid."""

import pytest

from fixtures.families import exceptions

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
                     higher_is_better=True, definition=DEFINITION, needs=exceptions.NEEDS,
                     measurement_point="as the underlying test's (test ports, or the emulator at I1)")
def test_exception_handling(benchmark_run, bmwg, deployed_topology, exception_cell, request):
    benchmark_run.measure(exceptions.ExceptionCell(request, bmwg, deployed_topology, exception_cell))
