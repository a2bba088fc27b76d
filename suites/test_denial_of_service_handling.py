"""RFC 8456 §5.3.2 Denial-of-Service Handling (A.6.2; RFC 8455 term 2.3.3.2): the path provisioning rate and time,
the network topology change detection time and the network discovery size, again, while an attack runs."""

import pytest

from fixtures.families import dos

DEFINITION = (
    "One cell of the RFC's table: a test (reactive path provisioning rate or time, network topology change "
    "detection time, network discovery size) measured as its own benchmark defines it, without any attack, while an "
    "attack runs, or while that attack's sham runs. The attack is a process of its own, bounded by count and time, "
    "started --dos-lead seconds before each measurement and stopped after it (a size search attacks every size it "
    "tries). The sham, run after its attack, sends the same packets at the rate the attack reached, but where no "
    "controller is (a closed port, a discard or stub sink): it carries the attacker's CPU cost on a shared machine, "
    "so 'attack against sham' is the controller's own degradation. Path traffic is offered at 1 % above the path "
    "programming rate (A.6.2 as A.6.1): the rate test offers 1.01 × the mean rate of its cell without any attacks in "
    "the other cells; the time and change tests run with TP1 offering new pairs at that rate in every cell. Each "
    "cell is compared with the cell without any attacks (or --baseline), and the attack with its sham, by the "
    "suite's two-sample test; no comparison when the attacker reached less than 80 % of its target rate (a "
    "closed-loop attack held back by the controller excepted).")


@pytest.mark.rfc8456(section="5.3.2", category="security", title="Denial-of-Service Handling", symbol="—", unit="—",
                     higher_is_better=True, definition=DEFINITION, needs=dos.NEEDS,
                     measurement_point="as the underlying test's (test ports, the emulator at I1, or the northbound)")
def test_denial_of_service_handling(benchmark_run, bmwg, deployed_topology, dos_cell, request):
    benchmark_run.measure(dos.DosCell(request, bmwg, deployed_topology, dos_cell))
