"""★ Datastore Leader Re-election: a seed extra (seed 001), not an RFC 8456 benchmark.

OpenDaylight's cluster keeps its datastore in shards replicated through Raft; while a shard has no leader, nothing
is written to it.  This extra times the shard's re-election after its leader dies, against the election timeout
the cluster was given (fixtures/families/datastore.py; the device is odl-cluster, fixtures/devices/odl_cluster.py).
"""

import pytest

from fixtures.families import datastore

DEFINITION = (
    "Re-election time = Te − Tk. An odl-cluster (OpenDaylight members on 127.0.0.1, shards replicated on every "
    "member) runs with Raft election timeout T (heartbeat interval × timeout factor). Tk: the member leading the "
    "default config shard is sent SIGKILL (the suite's wall clock, read just before). Te: a survivor leads the "
    "shard in a newer term, from its LastLeadershipChangeTime read through Jolokia (its wall clock, ms); the poll "
    "that saw it when that instant is not after Tk. Each trial must lie within [0, 2T + slack]. Elections: the "
    "terms the shard went through. The killed member starts again and the shards must settle before the next "
    "trial.")
MEASUREMENT_POINT = (
    "the survivors' shard MBeans through Jolokia on their RESTCONF ports (LastLeadershipChangeTime, wall clock, "
    "ms), polled every --shard-poll ms, against the harness's wall clock at the kill")


@pytest.mark.rfc8456(section="★", category="extra", title="Datastore Leader Re-election Time", symbol="DLR",
                     unit="ms", higher_is_better=False, definition=DEFINITION, measurement_point=MEASUREMENT_POINT,
                     device="reelection_cluster", needs=datastore.NEEDS)
def test_datastore_leader_reelection(benchmark_run, reelection_cluster, bmwg, datastore_reelection_cell):
    benchmark_run.measure(datastore.LeaderReelection(reelection_cluster, bmwg.datastore, datastore_reelection_cell[2]))
