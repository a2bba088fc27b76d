"""★ OVN Northbound Provisioning: a seed extra, not an RFC 8456 benchmark.

The OpenStack study among the suite's seeds compared OVN with ML2/OVS through Rally at concurrency 8, 16 and 32.
This extra measures OVN's row of it below Neutron: logical switches and ports written to an OVN central's
northbound database by concurrent clients (the request generator's connections, speaking OVSDB JSON-RPC), each
timed until ovn-northd has carried it into the
southbound database (fixtures/families/ovn_nb.py).  The device under test is the OVN central, not an OpenFlow
controller.
"""

import pytest

from fixtures.families import ovn_nb

DEFINITION = (
    "Provisioning time = T1 − T0 per iteration. C clients (the concurrency), each a connection of the request "
    "generator with one iteration in flight, share the run's iterations as Rally's constant runner does. T0: a "
    "client sends one northbound transaction that creates a logical switch with its ports, increments "
    "NB_Global.nb_cfg and reads it back. T1: the client's monitor of NB_Global shows sb_cfg reach that nb_cfg, i.e. "
    "ovn-northd has written the change into the southbound database (ovn-nbctl --wait=sb). "
    "Each run starts on a fresh OVN central; its value is its median iteration; "
    "Rally's columns (min, median, 90 %, 95 %, max, avg, success, count, plus p99) pool the iterations of all runs.")
MEASUREMENT_POINT = (
    "the generator's worker process: time.monotonic_ns when the transaction is written and when the NB_Global "
    "update reaching its nb_cfg is read on the same connection; clients and central share this host's cores")


@pytest.mark.rfc8456(section="★", category="extra", title="OVN Northbound Provisioning Time", symbol="OPT",
                     unit="ms", higher_is_better=False, definition=DEFINITION, measurement_point=MEASUREMENT_POINT,
                     device="ovn_central", repetitions="ovn.runs", needs=ovn_nb.NEEDS)
def test_ovn_northbound_provisioning(benchmark_run, ovn_central, bmwg, ovn_concurrency):
    benchmark_run.measure(ovn_nb.Provisioning(ovn_central, bmwg.ovn, ovn_concurrency))
