"""The datastore extras (OpenDaylight's shards) against a model cluster: a re-election found from the new leader's
own instant or from the poll, elections that repeat, a cluster that elects no one, a member that does not
rejoin; the CRUD timing and the options.  No JVM, no sockets, no sleeps: a clock the trial's waits advance."""

import argparse
import datetime as dt

import pytest

from fixtures.devices.base import ControllerError
from fixtures.families.datastore import (
    DatastoreParams,
    crud_shard,
    make_cluster,
    member_by_role,
    reelection_trial,
    timed,
    timeout_list,
)
from fixtures.harness import TrialFailed
from fixtures.http import Answer, Unreachable


class Clock:
    def __init__(self, wall=1_800_000_000.0):
        self.wall, self.mono = wall, 1000.0

    def sleep(self, s):
        self.wall += s
        self.mono += s


class Member:
    def __init__(self, k, cluster):
        self.member, self.name, self.cluster = k, f"odl-member-{k}", cluster

    def shard(self, shard, store):
        return self.cluster.view(self.member)


class ModelCluster:
    """Three members; the default shard's leader is member 2 in term 5.  Killed, a survivor leads after
    ``elect_after_s`` having gone through ``terms`` terms; its LastLeadershipChangeTime is the instant it won
    (``stale_change`` keeps the old one), or it never wins (``elect_after_s`` None)."""

    def __init__(self, clock, elect_after_s=1.2, terms=1, stale_change=False, rejoin=True, leader=2):
        self.clock, self.elect_after_s, self.terms = clock, elect_after_s, terms
        self.stale_change, self.rejoin = stale_change, rejoin
        self.members = [Member(k, self) for k in (1, 2, 3)]
        self.log_dir = "logs/odl-cluster-3"
        self.leader_k, self.term, self.killed, self.restored = leader, 5, None, 0
        self.changed = clock.wall - 100

    def stamp(self, t):
        return dt.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]

    def view(self, k):
        if self.killed is not None and k == self.killed:
            return None
        if self.killed is not None and self.leader_k == self.killed:
            if self.elect_after_s is None or self.clock.wall < self.t_kill + self.elect_after_s:
                return {"RaftState": "Candidate", "Leader": None, "CurrentTerm": self.term + 1}
            self.leader_k = min(m.member for m in self.members if m.member != self.killed)
            self.term += self.terms
            if not self.stale_change:
                self.changed = self.t_kill + self.elect_after_s
        role = "Leader" if k == self.leader_k else "Follower"
        return {"RaftState": role, "Leader": f"member-{self.leader_k}-shard-default-config", "CurrentTerm": self.term,
                "LastLeadershipChangeTime": self.stamp(self.changed)}

    def wait_converged(self, timeout):
        if self.killed is None and not self.rejoin and self.restored:
            raise ControllerError("shard default-config: member(s) 2 did not answer; last log lines:\nbig tail")

    def shard_views(self, shard, store):
        return {m.member: self.view(m.member) for m in self.members if m.member != self.killed}

    def leader(self, shard, store):
        return self.leader_k

    def running(self):
        return [m for m in self.members if m.member != self.killed]

    def kill(self, index, mode):
        self.killed, self.t_kill = index + 1, self.clock.wall

    def restore(self, index):
        assert self.killed == index + 1
        self.killed, self.restored = None, self.restored + 1


def trial(cluster, clock, timeout_s=1.0, **params):
    return reelection_trial(cluster, DatastoreParams(**params), timeout_s, wall=lambda: clock.wall,
                            sleep=clock.sleep, now=lambda: clock.mono)


def test_a_re_election_is_timed_by_the_new_leaders_own_instant_and_the_member_comes_back():
    clock = Clock()
    c = ModelCluster(clock, elect_after_s=1.2)
    r = trial(c, clock)
    assert r["reelection_ms"] == pytest.approx(1200, abs=1.5)       # the MBean's millisecond
    assert r["source"] == "LastLeadershipChangeTime" and r["seen_ms"] >= r["reelection_ms"]
    assert (r["old_leader"], r["new_leader"], r["terms"], r["old_term"], r["new_term"]) == \
        ("member-2", "member-1", 1, 5, 6)
    assert c.restored == 1 and c.killed is None


def test_an_instant_not_after_the_kill_gives_way_to_the_poll_that_saw_the_new_leader():
    clock = Clock()
    c = ModelCluster(clock, elect_after_s=0.5, stale_change=True)
    r = trial(c, clock, poll_ms=50)
    assert r["source"] == "poll" and r["reelection_ms"] == r["seen_ms"]
    assert 500 <= r["reelection_ms"] <= 550


def test_elections_that_repeat_are_counted_in_terms():
    clock = Clock()
    r = trial(ModelCluster(clock, elect_after_s=3.8, terms=4), clock, timeout_s=0.1)
    assert r["terms"] == 4 and r["reelection_ms"] == pytest.approx(3800, abs=1.5)


def test_a_cluster_that_elects_no_one_fails_the_trial_and_the_member_is_still_brought_back():
    clock = Clock()
    c = ModelCluster(clock, elect_after_s=None)
    with pytest.raises(TrialFailed, match="no survivor became leader of shard default-config within 3 s"):
        trial(c, clock, timeout_s=1.0, reelection_bound=1.0)
    assert c.restored == 1


def test_a_member_that_does_not_rejoin_fails_the_trial_saying_so():
    clock = Clock()
    with pytest.raises(TrialFailed, match="did not rejoin: shard default-config") as failed:
        trial(ModelCluster(clock, rejoin=False), clock)
    assert "big tail" not in str(failed.value) and "(its log: logs/odl-cluster-3)" in str(failed.value)


def test_a_cluster_with_no_leader_before_the_kill_is_not_killed():
    clock = Clock()
    c = ModelCluster(clock, leader=9)
    with pytest.raises(TrialFailed, match="no member leads shard default-config"):
        trial(c, clock)
    assert c.killed is None and c.restored == 0


class Client:
    def __init__(self, answer=None, error=None):
        self.answer, self.error, self.calls = answer, error, []

    def request(self, method, path, body=None):
        self.calls.append((method, path, body))
        if self.error:
            raise self.error
        return self.answer


def test_a_crud_request_is_timed_and_an_error_or_silence_fails_the_trial():
    ticks = iter([0, 2_500_000])
    assert timed(Client(Answer(201, "Created", b"")), "PUT", "/x", {}, (201,), clock=lambda: next(ticks)) == 2.5
    with pytest.raises(TrialFailed, match=r"PUT /x: HTTP 409"):
        timed(Client(Answer(409, "Conflict", b"data-exists")), "PUT", "/x", {}, (201,), clock=lambda: 0)
    with pytest.raises(TrialFailed, match="no answer"):
        timed(Client(error=Unreachable("timed out")), "GET", "/x", None, (200,), clock=lambda: 0)


def test_the_member_asked_is_the_shards_leader_or_a_follower_and_the_data_sit_in_the_strategys_shard():
    c = ModelCluster(Clock())
    assert member_by_role(c, "leader", "topology").member == 2
    assert member_by_role(c, "follower", "topology").member in (1, 3)
    c.leader_k = None
    with pytest.raises(TrialFailed, match="do not agree on the leader of shard topology-config"):
        member_by_role(c, "leader", "topology")
    assert crud_shard("per-module") == "topology" and crud_shard("single") == "default"


def test_the_options_and_the_device_for_another_controller():
    assert timeout_list("10,5,1,0.1") == (10.0, 5.0, 1.0, 0.1) and timeout_list("5,5") == (5.0,)
    for bad in ("0", "0.01", "fast", "", "200"):
        with pytest.raises(argparse.ArgumentTypeError):
            timeout_list(bad)
    assert DatastoreParams().problems() == []
    assert "--shard-poll must be at least 5 ms" in DatastoreParams(poll_ms=1).problems()[0]
    from types import SimpleNamespace as NS
    why = make_cluster(NS(run=NS(controller=NS(kind="ryu"))), 3, "per-module", None).unavailable()
    assert "not controller ryu" in why and "--controller odl" in why


def test_a_single_node_is_crud_and_rpc_baseline_but_no_reelection_cluster(tmp_path):
    from types import SimpleNamespace as NS

    from fixtures.families.datastore import alone_without
    bmwg = NS(run=NS(controller=NS(kind="odl"), ready_timeout=60.0), report_dir=tmp_path, openflow=4)
    why = make_cluster(bmwg, 1, "per-module", None).unavailable()
    assert "--cluster-nodes 1" in why and "needs a survivor" in why
    single = make_cluster(bmwg, 1, "per-module", None, least=1)
    assert single.n == 1 and single.strategy == "per-module"

    class Run:
        def skip(self, reason):
            raise pytest.skip.Exception(reason)
    for role in ("follower", "non-owner"):
        with pytest.raises(pytest.skip.Exception, match=f"a single node has no {role} member"):
            alone_without(Run(), single, role)
    alone_without(Run(), single, "leader")
    alone_without(Run(), NS(n=3), "follower")


# --------------------------------------------------------------------------- routed RPC

def test_the_add_flow_rpc_names_the_switch_and_a_flow_of_its_own():
    from emulator import testports as tpt
    from fixtures.families.datastore import add_flow_rpc
    f = tpt.synthetic_flows(1, first=7)[0]
    path, body = add_flow_rpc(1, f)
    assert path == "/rests/operations/sal-flow:add-flow"
    i = body["input"]
    assert i["node"].endswith("node[opendaylight-inventory:id='openflow:1']") and i["table_id"] == 0
    eth = i["match"]["ethernet-match"]
    assert eth["ethernet-source"]["address"] == ":".join(f"{b:02x}" for b in f.src_mac)
    assert eth["ethernet-destination"]["address"] == ":".join(f"{b:02x}" for b in f.dst_mac)
    other = add_flow_rpc(1, tpt.synthetic_flows(1, first=8)[0])[1]["input"]["match"]
    assert other != i["match"]


def test_the_owner_is_the_member_holding_the_switchs_master_session():
    from types import SimpleNamespace as NS

    from fixtures.families.datastore import owner_of, quiesce_flow_mods
    members = [NS(name=f"odl-member-{k}", port=6650 + k) for k in (1, 2, 3)]
    cluster = NS(running=lambda: members)
    masters = iter([None, None, "127.0.0.1:6652"])
    em = NS(timeline=lambda: NS(master_of=lambda dpid: next(masters)))
    slept = []
    assert owner_of(em, cluster, 1, sleep=slept.append).name == "odl-member-2" and len(slept) == 2
    em = NS(timeline=lambda: NS(master_of=lambda dpid: None))
    with pytest.raises(TrialFailed, match="switch 1 had no MASTER session 0 s after connecting"):
        owner_of(em, cluster, 1, timeout=0, sleep=slept.append)
    counts = iter([3, 9, 12, 12])
    em = NS(state=lambda: NS(data_plane={"flow_mods": next(counts)}))
    assert quiesce_flow_mods(em, sleep=lambda s: None) == 12
    with pytest.raises(TrialFailed, match="keeps no flow table"):
        quiesce_flow_mods(NS(state=lambda: NS(data_plane=None)), sleep=lambda s: None)


def test_the_crud_and_rpc_cells_of_one_cluster_run_together_so_it_boots_once():
    from types import SimpleNamespace as NS

    from fixtures.families.datastore import pytest_collection_modifyitems

    def item(name, key=None, cell=None):
        return NS(name=name, callspec=NS(params={key: cell} if key else {}))
    items = [item("crud-1-l", "datastore_crud_cell", (1, "per-module", "leader")),
             item("crud-3-l", "datastore_crud_cell", (3, "per-module", "leader")),
             item("other"),
             item("rpc-1-o", "datastore_rpc_cell", (1, "per-module", "owner")),
             item("rpc-3-o", "datastore_rpc_cell", (3, "per-module", "owner"))]
    pytest_collection_modifyitems(None, None, items)
    assert [i.name for i in items] == ["crud-1-l", "rpc-1-o", "other", "crud-3-l", "rpc-3-o"]


def test_an_rpc_is_sent_until_the_member_asked_can_route_it_and_other_errors_fail_at_once():
    from types import SimpleNamespace as NS

    from fixtures.families.datastore import until_routable

    class Client:
        def __init__(self, answers):
            self.answers = list(answers)

        def request(self, method, path, body):
            return self.answers.pop(0)
    missing = NS(status=500, body=b'{"errors":"No implementation of RPC AbsoluteSchemaPath{...add-flow} available"}')
    ok = NS(status=200, body=b"")
    clock = [0.0]

    def sleep(s):
        clock[0] += s
    assert until_routable(Client([missing, missing, ok]), "/p", {}, sleep=sleep, clock=lambda: clock[0]) == 0.5
    with pytest.raises(TrialFailed, match="HTTP 400"):
        until_routable(Client([NS(status=400, body=b"bad input")]), "/p", {}, sleep=lambda s: None)
    clock[0] = 0.0
    client = Client([missing] * 200)
    with pytest.raises(TrialFailed, match="HTTP 500 .* for 30 s"):
        until_routable(client, "/p", {}, sleep=sleep, clock=lambda: clock[0])
    assert clock[0] == 30.0 and len(client.answers) == 200 - 121      # every 0.25 s, one at 0 and one at 30 s
