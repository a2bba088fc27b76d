"""RFC 8456 §5.1.3 Asynchronous Message Processing Rate, maximum and loss-free (A.4.3; RFC 8455 2.3.1.3)."""

import pytest

from fixtures.families import async_msgs as am
from fixtures.families.async_msgs import CALIBRATED_METHOD, LOSS_FREE_RULE, SEARCH_METHOD

DEFINITION = (
    "APRn = Nrxn / Td, the PACKET_INs answered (first PACKET_OUT or FLOW_MOD matched to each) and received within "
    "Td, per second; Lrn = 1 − Nrxn'/Ntxn with Nrxn' the requests answered within the response timeout. One "
    "repetition is one search, by --rate-search. calibrated (the default): " + CALIBRATED_METHOD + " top-down (the "
    "RFC's literal procedure): " + SEARCH_METHOD + " " + LOSS_FREE_RULE)
MEASUREMENT_POINT = (
    "forwarding-plane emulator at interface I1: PACKET_INs counted at the socket write, responses at the socket "
    "read (monotonic ns); offered rate = Ntx/Td as achieved, not as targeted")
LOSS_FREE_DEFINITION = (
    "Loss-Free Asynchronous Message Processing Rate: MAX(APRn) over the trials of the highest offered rate at which "
    "every trial was loss-free (" + LOSS_FREE_RULE + "), from the same searches as the maximum rate.")
LOSS_FREE = {"title": "Loss-Free Asynchronous Message Processing Rate", "symbol": "Loss-Free APR",
             "definition": LOSS_FREE_DEFINITION}


@pytest.mark.rfc8456(section="5.1.3", category="performance", title="Maximum Asynchronous Message Processing Rate",
                     symbol="Maximum APR", unit="responses/s", higher_is_better=True, definition=DEFINITION,
                     measurement_point=MEASUREMENT_POINT, needs=am.NEEDS,
                     derived={"test_async_message_processing_rate_loss_free": LOSS_FREE,
                              "test_async_message_processing_rate_at_loss_goal": am.AT_LOSS_GOAL}, device="deployment")
def test_async_message_processing_rate(benchmark_run, async_emulator, emulator_ceiling, bmwg, async_switches,
                                       deployment, deployment_nodes):
    # the controller alone, or a cluster of it (--cluster-nodes)
    benchmark_run.measure(am.ProcessingRate(async_emulator(async_switches), deployment, emulator_ceiling,
                                            async_switches, bmwg, deployment_nodes))
