"""★ Routed RPC Latency by the member asked: a seed extra (seed 001), not an RFC 8456 benchmark.

openflowplugin registers each switch's flow RPCs at the member that owns the switch; asked of another member, the
cluster routes the RPC to the owner and its answer back.  This extra times sal-flow:add-flow through RESTCONF at the
owner and at another member (fixtures/families/datastore.py; the device is odl-cluster,
fixtures/devices/odl_cluster.py).
"""

import pytest

from fixtures.families import datastore

DEFINITION = (
    "Routed RPC latency: the time from sending a RESTCONF sal-flow:add-flow RPC to reading its whole answer, one "
    "request at a time on a kept-alive connection to one member of an odl-cluster. The RPC names one emulated switch "
    "connected to every member; the member asked is its owner (the member holding its MASTER session) or another "
    "member, which routes the RPC to the owner. A trial sends N RPCs, each a different flow; each must be answered "
    "and reach the switch as a FLOW_MOD. Its value is the mean latency, its details min, median, mean and max.")
MEASUREMENT_POINT = ("the client (northbound interface): perf_counter around each request, on 127.0.0.1; the "
                     "FLOW_MODs counted at the emulated switch")


@pytest.mark.rfc8456(section="★", category="extra", title="Routed RPC Latency", symbol="RRL", unit="ms",
                     higher_is_better=False, definition=DEFINITION, measurement_point=MEASUREMENT_POINT,
                     device="rpc_cluster", needs=datastore.NEEDS)
def test_datastore_routed_rpc_latency(benchmark_run, rpc_cluster, rpc_emulator, bmwg, datastore_rpc_cell):
    # the cluster: booted by the CRUD cells, or by the strategy's first cell
    benchmark_run.measure(datastore.RoutedRpcLatency(rpc_cluster, rpc_emulator, bmwg.datastore, datastore_rpc_cell[2]))
