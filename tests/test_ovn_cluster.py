"""The ★ cluster re-election extra (the device fixtures/devices/ovn_cluster.py, the family
fixtures/families/reelection.py, the OVSDB clients fixtures/devices/ovsdb.py): cluster/status and log parsing,
convergence, the write gap, the election-timer steps, the options and the profile's slack, the report's rendering;
no sockets, no sleeps.  One integration test builds a real 3-member OVN northbound cluster, kills its leader once and
restores it."""

import argparse
import json
import os

import pytest

from emulator.nbload import JsonStream
from fixtures.devices.ovn_cluster import (
    MemberStatus,
    OvnCluster,
    convergence_problem,
    missing_tools,
    parse_cluster_status,
    timer_steps,
)
from fixtures.devices.ovsdb import JsonRpcConnection, OvsdbError, UnixctlError, transaction_outcome, update_request
from fixtures.families.reelection import (
    DEFAULT_SLACK_MS,
    ClusterParams,
    LogEvent,
    effective_slack,
    first_event,
    member_count,
    parse_log,
    parse_log_line,
    timer_list,
    window_ms,
    write_gap,
)
from fixtures.harness import BenchmarkRun
from fixtures.profiles import ProfileError, load_profile
from reports.junit import render_junit
from reports.results import ResultStore
from reports.rfc_report import render_markdown
from reports.stats import summarize
from reports.summary import headline, section_label

LEADER = """f1d5
Name: OVN_Northbound
Cluster ID: 47b1 (47b1b5a7-3caa-4d0c-8887-25861bb2d3b3)
Server ID: f1d5 (f1d5114d-a8e9-46c6-8fde-1e2f32729309)
Address: tcp:127.0.0.1:16641
Status: cluster member
Role: leader
Term: 3
Leader: self
Vote: self

Last Election started 2999 ms ago, reason: timeout
Last Election won: 2997 ms ago
Election timer: 1000 (changing to 2000)
Log: [2, 5]
Entries not yet committed: 0
Entries not yet applied: 1
Connections: <-4df7 ->4df7 <-9e51 ->9e51
Disconnections: 0
Servers:
    f1d5 (f1d5 at tcp:127.0.0.1:16641) (self) next_index=2 match_index=4
    4df7 (4df7 at tcp:127.0.0.1:16642) next_index=5 match_index=4 last msg 329 ms ago
    9e51 (9e51 at tcp:127.0.0.1:16643) next_index=5 match_index=4 last msg 329 ms ago
"""

FOLLOWER = """4df7
Name: OVN_Northbound
Cluster ID: 47b1 (47b1b5a7-3caa-4d0c-8887-25861bb2d3b3)
Server ID: 4df7 (4df7fa0d-78ad-43a9-af86-da4fdfd3e551)
Address: tcp:127.0.0.1:16642
Status: cluster member
Role: follower
Term: 3
Leader: f1d5
Vote: unknown

Election timer: 1000
Log: [2, 5]
Entries not yet committed: 0
Entries not yet applied: 0
Connections: ->0000 <-f1d5 <-9e51 ->9e51
Disconnections: 0
Servers:
    f1d5 (f1d5 at tcp:127.0.0.1:16641) last msg 332 ms ago
    4df7 (4df7 at tcp:127.0.0.1:16642) (self)
    9e51 (9e51 at tcp:127.0.0.1:16643)
"""

CANDIDATE = """9e51
Name: OVN_Northbound
Server ID: 9e51 (9e513507-3888-490a-ba82-7092bcbeaa5c)
Status: disconnected from the cluster (election timeout)
Role: candidate
Term: 5
Leader: unknown
Vote: self

Election timer: 4000
Servers:
    f1d5 (f1d5 at tcp:127.0.0.1:16641) (voted for 9e51)
"""


def status(sid, role="follower", term=3, leader="aaaa", servers=("aaaa", "bbbb", "cccc"), state="cluster member",
           pending=None):
    return MemberStatus(sid=sid, status=state, role=role, term=term, leader=leader, election_timer=1000,
                        timer_pending=pending, servers=servers)


def healthy():
    return {"nb1": status("aaaa", "leader"), "nb2": status("bbbb"), "nb3": status("cccc")}


# --------------------------------------------------------------------------- cluster/status

def test_a_leaders_status_is_read_whole():
    s = parse_cluster_status(LEADER)
    assert (s.sid, s.role, s.term, s.leader, s.status) == ("f1d5", "leader", 3, "f1d5", "cluster member")
    assert s.is_leader and s.election_timer == 1000 and s.timer_pending == 2000
    assert s.servers == ("f1d5", "4df7", "9e51") and s.won_ms_ago == 2997 and s.started_ms_ago == 2999
    assert (s.uncommitted, s.unapplied) == (0, 1)


def test_a_follower_names_its_leader_and_has_no_election_of_its_own():
    s = parse_cluster_status(FOLLOWER)
    assert (s.sid, s.role, s.leader, s.election_timer, s.timer_pending) == ("4df7", "follower", "f1d5", 1000, None)
    assert not s.is_leader and s.won_ms_ago is None and s.servers == ("f1d5", "4df7", "9e51")


def test_a_candidate_knows_no_leader():
    s = parse_cluster_status(CANDIDATE)
    assert (s.role, s.term, s.leader, s.election_timer) == ("candidate", 5, None, 4000)
    assert s.status.startswith("disconnected") and s.servers == ("f1d5",)


@pytest.mark.parametrize("text", ["", "unknown cluster", "Server ID: x\nRole: leader\nTerm: many\n"])
def test_what_is_not_a_status_is_refused(text):
    with pytest.raises(ValueError, match="not cluster/status output"):
        parse_cluster_status(text)


# --------------------------------------------------------------------------- convergence

def test_one_leader_followed_by_all_in_one_term_is_converged():
    assert convergence_problem(healthy(), 3) is None


@pytest.mark.parametrize("change,expected", [
    ({"nb1": status("aaaa")}, "no leader"),
    ({"nb2": status("bbbb", "leader", leader="bbbb")}, "2 leaders (nb1, nb2)"),
    ({"nb3": status("cccc", term=4)}, "members disagree on the term (nb1: 3, nb2: 3, nb3: 4)"),
    ({"nb3": status("cccc", leader=None)}, "leader is nb1 (aaaa) but nb3 follows no leader"),
    ({"nb2": "not running"}, "nb2: not running"),
    ({"nb3": status("cccc", servers=("aaaa", "cccc"))}, "nb3 knows 2 servers (expected 3)"),
    ({"nb3": status("cccc", state="joining cluster")}, "nb3 is 'joining cluster'"),
    ({"nb1": status("aaaa", "leader", pending=2000)}, "an election timer change to 2000 ms is pending"),
])
def test_what_keeps_a_cluster_from_converging_is_said(change, expected):
    assert convergence_problem({**healthy(), **change}, 3) == expected


def test_a_missing_member_is_not_convergence():
    statuses = healthy()
    del statuses["nb3"]
    assert convergence_problem(statuses, 3) == "2 of 3 members known"


# --------------------------------------------------------------------------- log lines

def test_the_new_leaders_line_gives_its_term_and_instant_to_the_millisecond():
    e = parse_log_line("2026-11-24T05:28:53.642Z|00028|raft|INFO|term 2: elected leader by 2+ of 3 servers")
    assert e == LogEvent(wall_ns=1795498133_642_000_000, kind="elected", term=2, detail="2+ of 3")


def test_election_starts_are_read_with_and_without_the_timeout():
    timed = parse_log_line("2026-11-24T05:28:53.641Z|00027|raft|INFO|term 2: 1172 ms timeout expired, "
                           "starting election")
    plain = parse_log_line("2026-11-24T05:28:53.641Z|00027|raft|INFO|term 7: starting election")
    assert (timed.kind, timed.term, timed.detail) == ("election-started", 2, "1172")
    assert (plain.kind, plain.term, plain.detail) == ("election-started", 7, "")


def test_other_lines_are_not_election_events():
    assert parse_log_line("2026-11-24T05:28:33.797Z|00006|raft|INFO|tcp:127.0.0.1:50108: learned server ID 4df7") \
        is None
    assert parse_log_line("2026-11-24T05:28:33Z|00005|ovsdb_server|INFO|ovsdb-server (Open vSwitch) 3.1.0") is None
    assert parse_log_line("===== bmwg-sdn: cluster generation 1 =====") is None
    follower = parse_log_line("2026-11-24T05:28:53.642Z|00030|raft|INFO|server 4df7 is leader for term 2")
    assert (follower.kind, follower.term, follower.detail) == ("leader-is", 2, "4df7")


def test_the_first_event_is_of_a_newer_term_and_not_before_the_kill():
    events = parse_log("\n".join([
        "2026-11-24T05:28:50.000Z|00001|raft|INFO|term 2: elected leader by 2+ of 3 servers",   # before the kill
        "2026-11-24T05:28:53.100Z|00002|raft|INFO|term 2: elected leader by 2+ of 3 servers",   # the old term
        "2026-11-24T05:28:53.700Z|00003|raft|INFO|term 4: elected leader by 2+ of 3 servers",
        "2026-11-24T05:28:53.642Z|00004|raft|INFO|term 3: elected leader by 2+ of 3 servers",
    ]))
    kill = 1795498133_000_000_000          # 05:28:53.000Z
    assert first_event(events, "elected", 2, kill).term == 3
    assert first_event(events, "elected", 4, kill) is None
    assert first_event(events, "election-started", 2, kill) is None
    # a line stamped within the millisecond before the kill (the log truncates) still counts
    assert first_event(events, "elected", 1, 1795498133_100_500_000).wall_ns == 1795498133_100_000_000


def test_the_write_gap_spans_the_kill_and_the_election():
    assert write_gap([10, 20, 30, 95, 100], 50, 90) == (30, 95)
    # a commit of the old leader answered just after the kill comes before the gap, not after it
    assert write_gap([10, 20, 30, 52, 95, 100], 50, 90) == (52, 95)
    assert write_gap([10, 20], 50, 90) is None and write_gap([60, 95], 50, 90) is None
    assert write_gap([10, 60], 50, 90) is None and write_gap([], 50, 90) is None


# --------------------------------------------------------------------------- timers, options, slack

@pytest.mark.parametrize("current,target,steps", [
    (1000, 1000, []), (1000, 2000, [2000]), (1000, 4000, [2000, 4000]), (1000, 3000, [2000, 3000]),
    (4000, 1000, [1000]), (100, 600000, [200, 400, 800, 1600, 3200, 6400, 12800, 25600, 51200, 102400, 204800,
                                          409600, 600000]),
])
def test_an_increase_doubles_at_most_per_step_and_a_decrease_is_one_step(current, target, steps):
    assert timer_steps(current, target) == steps


def test_the_window_is_twice_the_timer_plus_the_slack():
    assert window_ms(1000, 500) == 2500 and window_ms(4000, 0) == 8000


@pytest.mark.parametrize("text,value", [("1000,2000,4000", (1000, 2000, 4000)), ("500", (500,)),
                                        ("2000, 1000,2000", (2000, 1000)), ("100,600000", (100, 600000))])
def test_election_timers_parse(text, value):
    assert timer_list(text) == value


@pytest.mark.parametrize("text", ["", "fast", "99", "600001", "1000,0", "1000;2000"])
def test_bad_election_timers_are_refused(text):
    with pytest.raises(argparse.ArgumentTypeError, match="election timers in ms, 100..600000"):
        timer_list(text)


@pytest.mark.parametrize("text", ["2", "8", "three", ""])
def test_a_cluster_must_survive_its_leaders_death(text):
    with pytest.raises(argparse.ArgumentTypeError, match="a majority must survive"):
        member_count(text)
    assert member_count("5") == 5


def parse(*args):
    parser = argparse.ArgumentParser()
    ClusterParams.add_options(parser)
    return ClusterParams.from_options(parser.parse_args(list(args)))


def test_the_options_build_the_family_with_their_defaults():
    p = parse()
    assert p.election_timers == (1000, 2000, 4000) and p.members == 3 and p.slack_ms is None
    assert p.writer_period_ms == 10 and p.schema == "/usr/share/ovn/ovn-nb.ovsschema" and p.problems() == []
    p = parse("--election-timers", "500,1000", "--cluster-members", "5", "--reelection-slack", "0",
              "--writer-period", "0.5", "--status-poll", "0.2")
    assert p.election_timers == (500, 1000) and p.members == 5 and p.slack_ms == 0
    assert p.problems() == ["--writer-period must be at least 1 ms (got 0.5)",
                            "--status-poll must be at least 1 ms (got 0.2)"]
    assert "election_timers" not in p.report() and p.report()["members"] == 5


def test_a_bad_option_value_names_the_option():
    parser = argparse.ArgumentParser(exit_on_error=False)
    ClusterParams.add_options(parser)
    with pytest.raises(argparse.ArgumentError, match="--reelection-slack: must be a non-negative number"):
        parser.parse_args(["--reelection-slack", "-1"])


def test_the_slack_comes_from_the_option_then_the_profile_then_the_default():
    profile = {"path": "p.yaml", "settings": {"cluster_leader_reelection": {"slack": 250.0}}}
    assert effective_slack(ClusterParams(slack_ms=100.0), profile) == (100.0, "--reelection-slack")
    assert effective_slack(ClusterParams(), profile) == (250.0, "profile p.yaml")
    assert effective_slack(ClusterParams(), {"path": "q.yaml", "settings": {}}) == (DEFAULT_SLACK_MS, "default")
    assert effective_slack(ClusterParams(), None) == (DEFAULT_SLACK_MS, "default")


def test_the_profile_takes_a_slack_for_the_extra(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("cluster_leader_reelection: {slack: 750}\ncontrol_session_capacity: {min: 10}\n")
    prof = load_profile(path)
    assert prof["settings"] == {"cluster_leader_reelection": {"slack": 750.0}}
    assert prof["thresholds"] == {"control_session_capacity": ("min", 10.0)}
    assert load_profile(os.path.join(os.path.dirname(__file__), "..", "fixtures", "profiles", "default.yaml")
                        )["settings"]["cluster_leader_reelection"] == {"slack": 500.0}


@pytest.mark.parametrize("text,match", [
    ("cluster_leader_reelection: {max: 2000}\n", r"key 'cluster_leader_reelection' takes slack"),
    ("cluster_leader_reelection: {slack: -1}\n", r"key 'cluster_leader_reelection.slack' must be a number >= 0"),
    ("cluster_leader_reelection: {slack: soon}\n", r"must be a number >= 0"),
    ("cluster_leader_reelection: 500\n", r"takes slack"),
])
def test_a_bad_slack_names_the_file_and_key(tmp_path, text, match):
    path = tmp_path / "p.yaml"
    path.write_text(text)
    with pytest.raises(ProfileError, match=match):
        load_profile(path)


def test_missing_tools_and_schema_are_a_skip_reason():
    assert missing_tools("/x.ovsschema", which=lambda t: f"/usr/bin/{t}", exists=lambda p: True) is None
    reason = missing_tools("/x.ovsschema", which=lambda t: None if t == "ovsdb-tool" else t, exists=lambda p: False)
    assert reason.startswith("ovsdb-tool not found on PATH") and "ovn-central" in reason and "/x.ovsschema" in reason


# --------------------------------------------------------------------------- JSON-RPC framing and replies

def test_json_texts_are_cut_from_the_stream_wherever_the_bytes_split():
    s = JsonStream(OvsdbError)
    data = '{"id": 1, "result": [{"count": 1}], "error": null} {"id":"echo","method":"echo","params":["é"]}'.encode()
    assert s.feed(data[:10]) == []
    got = s.feed(data[10:-3])
    assert got == [{"id": 1, "result": [{"count": 1}], "error": None}]
    assert s.feed(data[-3:]) == [{"id": "echo", "method": "echo", "params": ["é"]}]
    text = '["é"]'.encode()       # a character whose UTF-8 bytes arrive in two reads
    assert s.feed(text[:3]) == [] and s.feed(text[3:] + b"{}") == [["é"], {}]
    with pytest.raises(OvsdbError, match="not JSON-RPC"):     # a server that is not OVSDB: said at once
        s.feed(b"HTTP/1.1 400 Bad Request\r\n")


@pytest.mark.parametrize("reply,outcome", [
    ({"id": 1, "result": [{"count": 1}], "error": None}, (True, "")),
    ({"id": 1, "result": [{"count": 0}], "error": None}, (False, "NB_Global: 0 rows updated")),
    ({"id": 1, "result": [{"error": "not leader", "details": "x"}], "error": None}, (False, "not leader: x")),
    ({"id": 1, "result": [{"count": 1}, {"error": "timed out"}], "error": None}, (False, "timed out")),
    ({"id": 1, "result": None, "error": "unknown database"}, (False, "unknown database")),
    ({"id": 1, "result": {}, "error": None}, (False, "unexpected result {}")),
])
def test_a_transaction_succeeds_only_when_it_changed_the_row(reply, outcome):
    assert transaction_outcome(reply) == outcome


class ScriptedSocket:
    """A connected socket's stand-in: recv() returns the chunks given, then b"" (closed); sendall() keeps what
    was sent."""

    def __init__(self, *chunks: bytes):
        self.chunks, self.sent = list(chunks), []

    def recv(self, _size):
        return self.chunks.pop(0) if self.chunks else b""

    def sendall(self, data):
        self.sent.append(json.loads(data))

    def settimeout(self, _seconds):
        pass

    def close(self):
        pass


def test_a_call_answers_the_servers_echo_probes_and_returns_its_own_reply_cut_from_split_reads():
    sock = ScriptedSocket(b'{"method":"echo","params":[],"id":"e1"}{"id":0,"result":"not', b' this"}{"id":5,"res',
                          b'ult":[{"count":1}],"error":null}')
    reply = JsonRpcConnection(sock).call({"method": "transact", "id": 5, "params": []}, deadline=float("inf"))
    assert reply == {"id": 5, "result": [{"count": 1}], "error": None}
    assert sock.sent == [{"method": "transact", "id": 5, "params": []}, {"id": "e1", "result": [], "error": None}]


def test_an_echo_that_cannot_be_answered_loses_none_of_the_replies_read_with_it():
    class Broken(ScriptedSocket):
        def sendall(self, data):
            raise BrokenPipeError("gone")
    conn = JsonRpcConnection(Broken(b'{"id":3,"result":[],"error":null}{"method":"echo","params":[],"id":"e"}'))
    assert conn.receive() == [{"id": 3, "result": [], "error": None}] and conn.read_ns > 0


def test_a_connection_the_server_closes_or_fills_with_what_is_not_json_raises_the_callers_error():
    with pytest.raises(UnixctlError, match="gone away"):
        JsonRpcConnection(ScriptedSocket(), UnixctlError, "gone away").call({"method": "x", "id": 1}, float("inf"))
    with pytest.raises(OvsdbError):
        JsonRpcConnection(ScriptedSocket(b"HTTP/1.1 400 Bad Request\r\n")).receive()


def test_the_writers_transaction_sets_one_key_of_nb_global():
    req = update_request(7)
    assert req["id"] == 7 and req["method"] == "transact" and req["params"][0] == "OVN_Northbound"
    assert req["params"][1] == {"op": "update", "table": "NB_Global", "where": [],
                                "row": {"external_ids": ["map", [["bmwg-sdn-writer", "7"]]]}}


# --------------------------------------------------------------------------- the ★ entry in the reports

def extra_entry(tmp_path, values=(1200.0, 1500.0, 2600.0)):
    store = ResultStore(tmp_path / "results.json", {"started": "2026-11-24T00:00:00+00:00"})
    device = OvnCluster(tmp_path / "logs")       # the device as the trial loop sees it: no process
    from fixtures.benchmark import Benchmark
    from fixtures.families.reelection import TABLE
    from fixtures.harness import Trials
    from reports import tables
    bench = Benchmark(name="test_cluster_leader_reelection", title="Cluster Leader Re-election Time", section="★",
                      category="extra", unit="ms", symbol="LRT", definition="d", measurement_point="m",
                      higher_is_better=False)
    run = BenchmarkRun(store, device, bench, Trials(3), variant="1000ms", progress=lambda line: None)
    run.threshold(2500.0, "max")
    run.table(tables.rows(**TABLE))
    run.context("reelection", {"election_timer_ms": 1000, "window_ms": 2500.0, "slack_ms": 500.0,
                               "write_gap_ms": summarize([1210.0, 1490.0, 2610.0]), "outside_window": 1})
    values = iter(values)

    from fixtures.harness import TrialOutcome

    def trial(index):
        v = next(values)
        return TrialOutcome(value=v, details={"within_window": v <= 2500.0, "source": "log"})

    run.trials(trial)
    return store, run


def test_an_extra_says_it_is_not_an_rfc_benchmark_everywhere(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")  # noqa: F841  (reports.results.validate needs it)
    from reports.results import validate
    store, run = extra_entry(tmp_path)
    entry = run.result
    assert not any("repetitions is below" in n for n in entry["notes"])     # the RFC's minimum is not its own
    assert entry["verdict"]["threshold"] == 2500.0 and entry["verdict"]["bound"] == "max"
    assert section_label(entry) == "★ extra, not an RFC 8456 benchmark"
    assert "(★ extra, not an RFC 8456 benchmark)" in headline(entry)
    validate(store.data)
    assert 'classname="bmwg_sdn.extra"' in render_junit(store.data)
    report = render_markdown(store.data)
    assert "## Cluster Leader Re-election Time (1000ms) — ★ extra, not an RFC 8456 benchmark" in report
    assert "| Average | 1766.67 |" in report and "RFC: sum of values" not in report
    assert "| 1000 | 2500 | 3 of 3 | 1200 / 1500 / 2600 | 1 | 1210 / 1490 / 2610 |" in report


def test_a_section_outside_the_rfc_must_be_the_star(tmp_path):
    pytest.importorskip("jsonschema")
    from reports.results import ResultsError, validate
    store, _run = extra_entry(tmp_path)
    store.data["benchmarks"][0]["rfc_section"] = "extra"
    with pytest.raises(ResultsError, match="rfc_section: 'extra' does not match"):
        validate(store.data)


def test_a_threshold_bound_is_min_or_max(tmp_path):
    _store, run = extra_entry(tmp_path)
    with pytest.raises(ValueError, match="bound must be min or max"):
        run.threshold(1.0, "within")


# --------------------------------------------------------------------------- integration: a real cluster

@pytest.mark.system
def test_a_real_cluster_elects_a_new_leader_after_its_leader_is_killed(tmp_path):
    psutil = pytest.importorskip("psutil")
    from fixtures.families.reelection import reelection_trial
    params = ClusterParams()
    cluster = params.cluster(tmp_path / "logs")
    if cluster.unavailable():
        pytest.skip(cluster.unavailable())
    pids: list = []
    try:
        statuses = cluster.ensure_ready(1000)
        pids = cluster.pids()
        assert len(pids) == 3 and convergence_problem(statuses, 3) is None
        for pid in pids:       # loopback only: every listening socket of every member
            listening = [c.laddr for c in psutil.Process(pid).net_connections("tcp") if c.status == "LISTEN"]
            assert listening and all(addr.ip == "127.0.0.1" for addr in listening), listening
        old = cluster.leader_of(statuses)
        r = reelection_trial(cluster, 1000, window_ms(1000, 500), params=params)
        assert r["old_leader"].startswith(old.name) and r["new_term"] > r["old_term"]
        assert r["new_leader"] != r["old_leader"] and 0 < r["reelection_ms"] < 10_000
        assert r["source"] in ("log", "cluster/status") and r["reelection_status_ms"] is not None
        assert r["write_gap_ms"] is not None and r["write_gap_ms"] > 0 and r["writes_ok"] > 0
        after = cluster.wait_converged()          # restored: the killed member is back, one leader
        assert convergence_problem(after, 3) is None and old.alive
        pids += cluster.pids()
        workdir = cluster.workdir
    finally:
        cluster.stop()
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
                   for pid in set(pids)), "a cluster member outlived stop()"
    left = [p.pid for p in psutil.process_iter(["cmdline"]) if str(workdir) in " ".join(p.info["cmdline"] or ())]
    assert not left and not workdir.exists()


def test_each_member_binds_the_probed_remote_in_its_own_rundir(tmp_path):
    """The Connection row's relative punix: target lands in each member's OVS_RUNDIR: one socket per member, the
    clients' inactivity probe set by the row (ryu-ha's keep-alive)."""
    from fixtures.devices.ovn_cluster import PROBED_SOCKET, Member
    from fixtures.devices.ovsdb import NB_DB
    m = Member(2, tmp_path, tmp_path / "logs", 7001, 7002)
    cmd = m.command()
    assert f"--remote=db:{NB_DB},NB_Global,connections" in cmd and "--remote=ptcp:7001:127.0.0.1" in cmd
    assert m.lock_socket == tmp_path / "nb2" / PROBED_SOCKET
