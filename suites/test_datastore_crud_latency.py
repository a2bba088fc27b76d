"""★ Datastore CRUD Latency by shard role: a seed extra (seed 001), not an RFC 8456 benchmark.

A write to OpenDaylight's clustered datastore is committed by the shard's leader: asked of a follower, it travels
to the leader and back.  This extra times create, read, update and delete through RESTCONF at the shard's leader
and at a follower (fixtures/families/datastore.py; the device is odl-cluster, fixtures/devices/odl_cluster.py).
"""

import pytest

from fixtures.families import datastore

DEFINITION = (
    "CRUD latency: the time from sending a RESTCONF request to reading its whole answer, one request at a time on a "
    "kept-alive connection to one member of an odl-cluster, whose role for the shard holding the data (the "
    "topology shard with per-module shards, the default shard with a single one) is leader or follower. A trial "
    "creates N nodes of a network-topology topology in the config datastore (PUT), reads (GET), updates (PUT) and "
    "deletes (DELETE) each; its value is the mean create latency, its details every operation's min, median, mean "
    "and max. A request answered with an error fails the trial.")
MEASUREMENT_POINT = "the client (northbound interface): perf_counter around each request, on 127.0.0.1"


@pytest.mark.rfc8456(section="★", category="extra", title="Datastore CRUD Latency", symbol="DCL", unit="ms",
                     higher_is_better=False, definition=DEFINITION, measurement_point=MEASUREMENT_POINT,
                     device="crud_cluster", needs=datastore.NEEDS)
def test_datastore_crud_latency(benchmark_run, crud_cluster, bmwg, datastore_crud_cell):
    # the cluster: booted by the strategy's first cell
    benchmark_run.measure(datastore.CrudLatency(crud_cluster, bmwg.datastore, datastore_crud_cell[2]))
