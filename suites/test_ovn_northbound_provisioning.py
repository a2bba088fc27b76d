"""★ OVN Northbound Provisioning: a seed extra, not an RFC 8456 benchmark.

The OpenStack study among the suite's seeds compared OVN with ML2/OVS through Rally at concurrency 8, 16 and 32.
This extra measures OVN's row of it below Neutron: logical switches and ports written to an OVN central's
northbound database by concurrent ovsdbapp clients, each timed until ovn-northd has carried it into the
southbound database (fixtures/families/ovn_nb.py).  The device under test is the OVN central, not an OpenFlow
controller.
"""

import pytest

from fixtures.families import ovn_nb

DEFINITION = (
    "Provisioning time = T1 − T0 per iteration. C clients (the concurrency), each with its own ovsdbapp "
    "connection, share the run's iterations as Rally's constant runner does. T0: a client submits one northbound "
    "transaction that creates a logical switch with its ports and increments NB_Global.nb_cfg. T1: the client's "
    "IDL sees NB_Global.sb_cfg reach the new nb_cfg, i.e. ovn-northd has written the change into the southbound "
    "database (ovn-nbctl --wait=sb). Each run starts on a fresh OVN central; its value is its median iteration; "
    "Rally's columns (min, median, 90 %, 95 %, max, avg, success, count, plus p99) pool the iterations of all runs.")
MEASUREMENT_POINT = (
    "the client's thread: time.perf_counter_ns before the transaction is queued and when its IDL's NB_Global "
    "update is delivered (ovsdbapp's connection thread notifies it); clients and central share this host's cores")


@pytest.mark.rfc8456(section="★", category="extra", title="OVN Northbound Provisioning Time", symbol="OPT",
                     unit="ms", higher_is_better=False, definition=DEFINITION, measurement_point=MEASUREMENT_POINT,
                     device="ovn_central", repetitions="ovn.runs", needs=ovn_nb.NEEDS)
def test_ovn_northbound_provisioning(benchmark_run, ovn_central, bmwg, ovn_concurrency):
    ovn_nb.provisioning_trials(benchmark_run, ovn_central, bmwg.ovn, ovn_concurrency)
    benchmark_run.finish()
