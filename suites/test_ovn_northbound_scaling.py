"""★ OVN Northbound Scaling Point: the northbound scaling point (SCP-CLUB) against an OVN central.

The method of test_northbound_scaling_point, with OVN's northbound for the controller's flow API: each request
creates one logical switch port through the OVN northbound database (OVSDB JSON-RPC, as Neutron's OVN driver
writes it), and is served when ovn-northd has bound it in the southbound database.  The central is standalone or
clustered (--cluster-nodes: each database a RAFT cluster of N ovsdb-servers, every member loaded); it is built
fresh for every repetition (fixtures/families/ovn_load.py, fixtures/families/nbload.py).
"""

import pytest

from fixtures.families import ovn_load

DEFINITION = (
    "Scaling point = the largest offered rate SR (requests/s) with η = T_SR / SR ≥ η0 (0.8, --nb-eta). A request is "
    "one OVSDB transact on OVN_Northbound inserting a logical switch port and adding it to logical switch i mod S "
    "(S from --nb-topology SxH, each switch created with H ports before the load), sent to northbound member i mod "
    "N; the generator offers SR requests/s for Td, open loop (async) or with C in flight (sync). A request is served "
    "when the port's Port_Binding row, written by ovn-northd, reaches a monitor on the southbound database. T_SR = "
    "requests served within Td / Td. The search, δ and the acceptance test are the northbound scaling point's.")
MEASUREMENT_POINT = (
    "the generator's workers (due, sent and answer instants of each transact, monotonic ns) and a southbound "
    "monitor's thread (the instant each Port_Binding update was read), one monotonic clock on one host")


@pytest.mark.rfc8456(section="★", category="extra", title="OVN Northbound Scaling Point", symbol="OSCP",
                     unit="requests/s", higher_is_better=True, definition=DEFINITION,
                     measurement_point=MEASUREMENT_POINT, needs=ovn_load.NEEDS, device="ovn_scaling_central")
def test_ovn_northbound_scaling(benchmark_run, ovn_scaling_central, bmwg, nb_cell, generator_ceiling, nb_alone):
    benchmark_run.measure(ovn_load.OvnScalingPoint(ovn_scaling_central, bmwg, nb_cell, generator_ceiling, nb_alone))
