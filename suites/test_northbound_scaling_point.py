"""★ Northbound Scaling Point: a seed extra beside RFC 8456 (the SCP-CLUB method of the ONOS cluster study).

How far a controller scales under sustained northbound load: requests offered at a rate SR through its flow API,
the throughput T_SR of those served where the RFC observes provisioning (the FLOW_MOD at the emulated switch), and
the largest SR the controller serves at η = T_SR / SR ≥ 0.8 (fixtures/families/nbload.py).
"""

import pytest

from fixtures.families import nbload

DEFINITION = (
    "Scaling point = the largest offered rate SR (requests/s) with η = T_SR / SR ≥ η0 (0.8, --nb-eta). A request "
    "installs one flow entry (a unique source and destination MAC pair, output to port 1) on one of S emulated "
    "switches in turn, through the controller's northbound flow API; the generator offers SR requests/s for Td, open "
    "loop (async: due at i/SR whatever has been answered, pipelined over kept-alive connections) or with C requests in "
    "flight (sync). A request is served when its FLOW_MOD reaches its switch. T_SR = requests served within Td / Td. "
    "One repetition is one search: SR doubles from the start rate until η < η0 (halves until η ≥ η0), then the bracket "
    "is bisected geometrically to the resolution. δ = scaling point / the controller's CPUs. A search that reaches "
    "--nb-max-rate, or whose generator limited a step (CLIENT-BOUND), gives a lower bound.")
MEASUREMENT_POINT = (
    "the generator's workers (due, sent and answer instants of each HTTP request, monotonic ns) and the emulated "
    "switches' provisioning trace (the instant each FLOW_MOD was read), one monotonic clock on one host")


@pytest.mark.rfc8456(section="★", category="extra", title="Northbound Scaling Point", symbol="SCP",
                     unit="requests/s", higher_is_better=True, definition=DEFINITION,
                     measurement_point=MEASUREMENT_POINT, needs=nbload.NEEDS, device="nb_device")
def test_northbound_scaling_point(request, benchmark_run, nb_device, path_emulator, bmwg, nb_cell, generator_ceiling,
                                  nb_alone):
    benchmark_run.measure(nbload.ScalingPoint(request, path_emulator, nb_device, bmwg, nb_cell, generator_ceiling,
                                              nb_alone))
