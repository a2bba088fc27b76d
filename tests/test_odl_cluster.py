"""odl-cluster's configuration and its reading of the shards' Raft state, from texts (no JVM)."""

import pytest

from fixtures.devices.base import ControllerError
from fixtures.devices.odl_cluster import (
    OdlCluster,
    agreement,
    akka_conf,
    datastore_cfg,
    election_settings,
    leader_member,
    mbean,
    module_shards,
    modules_conf,
    parse_change_time,
    shard_names,
)

STOCK_AKKA = """odl-cluster-data {
  akka {
    remote {
      netty.tcp {
        hostname = "127.0.0.1"
        port = 31001
      }
    }
    cluster {
      seed-nodes = ["akka.tcp://opendaylight-cluster-data@127.0.0.1:31001"]

      roles = [
        "member-1"
      ]
    }
  }
}
"""


def test_the_election_timeout_is_a_heartbeat_times_a_factor():
    assert election_settings(None) is None                      # stock: 500 ms × 20
    assert election_settings(10) == (500, 20)
    assert election_settings(5) == (500, 10)
    assert election_settings(1) == (500, 2)
    assert election_settings(0.5) == (50, 10)
    assert election_settings(0.1) == (10, 10)
    for t in (10, 5, 1, 0.5, 0.1, 2.5):
        hb, factor = election_settings(t)
        assert hb * factor == pytest.approx(t * 1000, rel=0.1)


def test_each_member_names_itself_and_every_member_as_a_seed_node():
    text = akka_conf(STOCK_AKKA, 2, [31001, 31002, 31003])
    assert 'roles = ["member-2"]' in text and "port = 31001" in text
    assert ('seed-nodes = ["akka.tcp://opendaylight-cluster-data@127.0.0.1:31001", '
            '"akka.tcp://opendaylight-cluster-data@127.0.0.1:31002", '
            '"akka.tcp://opendaylight-cluster-data@127.0.0.1:31003"]') in text
    with pytest.raises(ControllerError, match="no seed-nodes"):
        akka_conf("odl-cluster-data { }", 1, [1])


def test_the_shard_strategy_writes_the_module_shards_and_modules():
    per = module_shards(3, "per-module")
    assert per.count('replicas = ["member-1", "member-2", "member-3"]') == 3
    assert all(f'name = "{n}"' in per for n in ("default", "topology", "inventory"))
    single = module_shards(5, "single")
    assert single.count("replicas") == 1 and '"member-5"' in single and "inventory" not in single
    assert modules_conf("modules = [ stock ]", "per-module") == "modules = [ stock ]"
    assert "modules = []" in modules_conf("modules = [ stock ]", "single")
    assert shard_names("single") == [("default", "config"), ("default", "operational"),
                                     ("entity-ownership", "operational")]
    assert len(shard_names("per-module")) == 7


def test_the_datastore_cfg_carries_the_election_settings():
    stock = "shard-election-timeout-factor=20\n#shard-heartbeat-interval-in-millis=500\noperational.persistent=false\n"
    assert datastore_cfg(stock, None) == stock
    out = datastore_cfg(stock, (10, 10))
    assert "shard-election-timeout-factor = 10" in out and "shard-heartbeat-interval-in-millis = 10" in out
    assert "operational.persistent=false" in out


def test_the_shards_mbeans_and_leaders_are_read_by_member():
    assert mbean(2, "default", "config") == ("org.opendaylight.controller:Category=Shards,"
                                             "name=member-2-shard-default-config,type=DistributedConfigDatastore")
    assert mbean(1, "entity-ownership", "operational").endswith("type=DistributedOperationalDatastore")
    assert leader_member("member-3-shard-inventory-operational") == 3
    assert leader_member("") is None and leader_member(None) is None
    assert parse_change_time("2026-11-26 10:21:15.320") is not None
    assert parse_change_time("not a time") is None and parse_change_time(None) is None


def _view(role, leader=2, term=1):
    return {"RaftState": role, "Leader": f"member-{leader}-shard-default-config", "CurrentTerm": term}


def test_a_shard_is_settled_with_one_leader_the_others_following_it_in_one_term():
    assert agreement({1: _view("Follower"), 2: _view("Leader"), 3: _view("Follower")}) is None
    assert "did not answer" in agreement({1: _view("Follower"), 2: _view("Leader"), 3: None})
    assert agreement({1: _view("Candidate", 1), 2: _view("Candidate", 1)}).startswith("0 leaders")
    assert agreement({1: _view("Leader", 1), 2: _view("Leader")}).startswith("2 leaders")
    assert "different leaders" in agreement({1: _view("Follower", 3), 2: _view("Leader")})
    assert "different terms" in agreement({1: _view("Follower", term=1), 2: _view("Leader", term=2)})


def test_a_cluster_of_a_size_or_strategy_it_cannot_have_is_refused(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="1..7 members"):
        OdlCluster(tmp_path, members=8)
    assert OdlCluster(tmp_path, members=1).n == 1        # the single node: the datastore extras' baseline
    with pytest.raises(ValueError, match="per-module or single"):
        OdlCluster(tmp_path, strategy="sharded")
    c = OdlCluster(tmp_path, members=7)
    assert c.ready_timeout >= 600
    import fixtures.devices.odl_cluster as oc
    monkeypatch.setattr(oc, "missing", lambda: None)
    monkeypatch.setattr(oc.psutil, "virtual_memory", lambda: type("M", (), {"available": 4 * 2 ** 30})())
    assert "7 members may take 14 GiB of heap" in c.unavailable()


def test_a_member_that_does_not_rejoin_is_started_once_more_on_a_fresh_instance(tmp_path):
    class Member:
        name, ready_timeout = "odl-member-2", 600.0

        def __init__(self, failures):
            self.failures, self.starts, self.stops, self.timeouts = failures, 0, 0, []

        def start(self):
            self.starts += 1
            self.timeouts.append(self.ready_timeout)
            if self.starts <= self.failures:
                raise ControllerError("odl-member-2 did not complete an OpenFlow handshake within 240 s\nlog")

        def stop(self):
            self.stops += 1
    c = OdlCluster(tmp_path)
    once = Member(1)
    c._restart(once)
    # the first start within 240 s, the second (a fresh instance installing its features) the whole ready timeout
    assert (once.starts, once.stops, once.timeouts, once.ready_timeout) == (2, 1, [240.0, 600.0], 600.0)
    assert c.retried_starts == ["odl-member-2: odl-member-2 did not complete an OpenFlow handshake within 240 s"]
    assert c.info()["retried_starts"] == c.retried_starts
    never = Member(2)
    with pytest.raises(ControllerError, match="handshake"):
        c._restart(never)
    assert never.starts == 2 and never.ready_timeout == 600.0
    # on a host where the cluster's own boot took longer than 240 s, the first start may take as long
    c.boot_s = 380.0
    slow = Member(1)
    c._restart(slow)
    assert slow.timeouts == [380.0, 600.0] and c.restart_timeout(300.0) == 300.0


def test_a_member_is_ready_only_once_its_karaf_log_says_system_ready_since_its_start(tmp_path):
    from fixtures.devices.odl_cluster import system_ready_since
    log = tmp_path / "karaf.log"
    assert not system_ready_since(log, 0)                      # no log yet
    log.write_bytes(b"... | System ready; AKA: Aye captain ...\n")
    offset = log.stat().st_size                                 # the earlier start's line does not count
    with open(log, "ab") as f:
        f.write(b"... | Failed, some bundles did not start (SystemReadyListeners are not called)\n")
    assert not system_ready_since(log, offset)
    with open(log, "ab") as f:
        f.write(b"... | SimpleSystemReadyMonitor | System ready; AKA: Aye captain, all warp coils ...\n")
    assert system_ready_since(log, offset)
    log.write_bytes(b"System ready;\n")                         # rolled over: shorter than the offset, read whole
    assert system_ready_since(log, offset)


def test_a_member_started_again_keeps_its_instance_until_the_cluster_stops(tmp_path, monkeypatch):
    from fixtures.devices.odl_cluster import OdlMember
    c = OdlCluster(tmp_path)
    m = OdlMember(tmp_path, 1, c)
    made = []
    monkeypatch.setattr(m, "require_available", lambda: None)
    monkeypatch.setattr(m, "_launch", lambda: None)

    def prepare():
        made.append(tmp_path / f"inst{len(made)}")
        made[-1].mkdir()
        m.instance = made[-1]
    monkeypatch.setattr(m, "_prepare_instance", prepare)
    m.launch()                                  # the first start: a fresh instance
    m.keep_instance = True
    m._remove_instance()                        # stopped while the cluster runs: kept
    m.launch()
    assert made == [tmp_path / "inst0"] and m.instance.exists()
    c.members = [m]
    monkeypatch.setattr(type(m).__mro__[1], "stop", lambda self: self._remove_instance())
    c.stop()                                    # the cluster's end removes it
    assert not made[0].exists() and m.instance is None and m.keep_instance is False
