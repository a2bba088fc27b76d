"""★ Cluster Leader Re-election: a seed extra, not an RFC 8456 benchmark.

RFC 8456 §5.4.1 times a controller cluster's failover as the data plane sees it.  This extra asks a narrower
question of the consensus underneath such clusters: how long an OVN northbound RAFT cluster is without a leader
when its leader dies, against the election timer it was given.  The device under test is the cluster itself
(fixtures/devices/ovn_cluster.py), not an OpenFlow controller.
"""

import pytest

from fixtures.families import reelection

DEFINITION = (
    "Re-election time = Te − Tk. A RAFT cluster of OVN northbound ovsdb-server members runs on 127.0.0.1 with "
    "election timer T; a writer commits a small NB transaction through the followers every few ms. Tk: the leader "
    "is sent SIGKILL. Te: a survivor becomes leader of a newer term, from its own log line 'term N: elected leader' "
    "(millisecond resolution; when OVS rate-limited the line, from cluster/status 'Last Election won: X ms ago'). "
    "Each trial must lie within [0, 2T + slack]. Extra: the client-visible write gap, the longest silence between "
    "the writer's successful commits from the last one before Tk to the first one after Te. The killed member "
    "restarts on its database and the cluster must converge again before the next trial.")
MEASUREMENT_POINT = (
    "the survivors' own logs (wall clock, ms) against the harness's clock at the kill; the writer's commits "
    "timestamped at the read of each reply (monotonic ns); cluster/status polled over the unixctl sockets")


@pytest.mark.rfc8456(section="★", category="extra", title="Cluster Leader Re-election Time", symbol="LRT",
                     unit="ms", higher_is_better=False, definition=DEFINITION, measurement_point=MEASUREMENT_POINT,
                     device="ovn_cluster", needs=reelection.NEEDS, settings=("slack",))
def test_cluster_leader_reelection(benchmark_run, ovn_cluster, bmwg, election_timer):
    benchmark_run.measure(reelection.LeaderReelection(ovn_cluster, bmwg.cluster, bmwg.profile, election_timer))
