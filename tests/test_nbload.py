"""The northbound load family: the generator's framing and figures, the scaling point's search (against a model
whose η is known), a step's figures and what a repetition reports.  Pure: no sockets, no sleeps."""

from array import array
from types import SimpleNamespace

import pytest

from emulator import nbload as nl
from fixtures.families import nbload as fam

P = fam.NorthboundLoadParams(td=1.0)


# --------------------------------------------------------------------------- requests and answers

def test_a_request_is_one_kept_alive_http_1_1_message_with_its_json_body_and_credentials():
    raw = nl.http_request("POST", "/stats/flowentry/add", {"dpid": 1}, "127.0.0.1:8080", "admin:admin")
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /stats/flowentry/add HTTP/1.1"
    assert "Host: 127.0.0.1:8080" in lines and "Authorization: Basic YWRtaW46YWRtaW4=" in lines
    assert f"Content-Length: {len(body)}" in lines and body == b'{"dpid":1}'
    assert b"Content-Length: 0" in nl.http_request("GET", "/x")


def test_answers_are_framed_by_length_chunks_or_status_whatever_the_reads_cut():
    stream = (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
              b"HTTP/1.1 204 No Content\r\n\r\n"
              b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3;x=1\r\nabc\r\n0\r\nX-T: 1\r\n\r\n"
              b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\ncontent-length: 2\r\n\r\nno")
    for cut in (1, 3, 7, len(stream)):
        r = nl.ResponseReader()
        got = []
        for i in range(0, len(stream), cut):
            got += r.feed(stream[i:i + cut])
        assert got == [200, 204, 201, 404], cut
        assert not r.buf


def test_an_answer_without_length_ends_with_the_connection_and_garbage_is_named():
    r = nl.ResponseReader()
    assert r.feed(b"HTTP/1.0 200 OK\r\n\r\nbody until close") == []
    assert r.feed(b" more") == []
    assert r.close() == [200]
    with pytest.raises(nl.LoadError, match="not an HTTP response"):
        nl.ResponseReader().feed(b"SSH-2.0-OpenSSH\r\n\r\n")


def test_the_null_northbound_frames_pipelined_requests_by_content_length():
    buf = bytearray(nl.http_request("POST", "/a", {"k": "v"}) + nl.http_request("GET", "/b") + b"POST /c HTTP/1.1")
    first = nl._request_end(buf, 0)
    second = nl._request_end(buf, first)
    assert buf[first:second].startswith(b"GET /b") and nl._request_end(buf, second) == -1


def test_a_load_spec_names_what_is_wrong():
    assert nl.LoadSpec("127.0.0.1", 1, 100, 1).problems() == []
    bad = nl.LoadSpec("127.0.0.1", 1, 0, 1, mode="push", connections=1, processes=2).problems()
    assert len(bad) == 3 and any("mode" in b for b in bad) and any("connection per process" in b for b in bad)
    assert nl.LoadSpec("127.0.0.1", 1, 250.4, 2).count() == 501


def answers(rate=1000.0, n=1000, lag_ns=0, answer_ns=2_000_000, status=200, start=10**9):
    due = array("q", (start + int(i * 1e9 / rate) for i in range(n)))
    queued = array("q", (d + lag_ns for d in due))
    answered = array("q", (q + answer_ns if answer_ns is not None else 0 for q in queued))
    return nl.Answers(start, rate, due, queued, answered, array("h", [status if answer_ns is not None else 0] * n))


def test_a_generator_that_queued_late_or_too_little_is_client_bound_but_a_sync_client_is_not_blamed():
    assert nl.client_bound(answers(), "async") == ""
    assert "late" in nl.client_bound(answers(lag_ns=80_000_000), "async")
    assert nl.client_bound(answers(lag_ns=80_000_000), "sync") == ""
    a = answers()
    a.queued[-100:] = array("q", [0] * 100)          # 10 % never queued
    assert "90% of SR·Td" in nl.client_bound(a, "async")
    assert "ceiling" in nl.client_bound(answers(rate=9000.0, n=900), "sync", ceiling=10000.0)
    assert nl.client_bound(answers(rate=7000.0, n=700), "async", ceiling=10000.0) == ""


def test_the_generators_lateness_reads_its_p99_by_the_projects_one_percentile():
    # 100 requests queued 1..100 ms late: the p99 of 1..100 is 99.01 (linear interpolation), not 99 (nearest rank).
    due = [i * 1_000_000 for i in range(100)]
    a = nl.Answers(0, 1000.0, due, [d + (i + 1) * 1_000_000 for i, d in enumerate(due)], [], [])
    assert nl.lateness(a)["lag_p99_s"] == pytest.approx(0.09901)


# --------------------------------------------------------------------------- the search

def model(r: float, jitter: float = 0.0):
    """A northbound whose service rate is capped at ``r``: η = min(1, r / SR)."""
    seen = []

    def measure(rate):
        seen.append(rate)
        return {"offered_rate": rate, "eta": min(1.0, r / rate) * (1 - jitter), "client_bound": ""}
    return measure, seen


@pytest.mark.parametrize("r", [300.0, 2000.0, 7777.0, 15000.0])
def test_a_model_capped_at_r_has_its_scaling_point_at_1_25_r(r):
    measure, seen = model(r)
    s = fam.scaling_search(measure, 250.0, 100000.0, 0.8, 0.02)
    assert 1.25 * r * 0.98 <= s["scaling_point"] <= 1.25 * r
    assert s["above"] / s["scaling_point"] - 1 <= 0.02 and s["stop"] == "" and not s["lower_bound"]
    assert len(seen) <= fam.MAX_STEPS


def test_a_start_rate_already_too_high_is_halved_until_eta_holds():
    measure, seen = model(100.0)
    s = fam.scaling_search(measure, 1000.0, 100000.0, 0.8, 0.03)
    assert seen[:4] == [1000.0, 500.0, 250.0, 125.0] and 121 <= s["scaling_point"] <= 125


def test_reaching_the_top_rate_or_a_client_bound_step_gives_a_lower_bound():
    measure, _ = model(1e9)
    s = fam.scaling_search(measure, 250.0, 3000.0, 0.8, 0.03)
    assert s["scaling_point"] == 3000.0 and s["lower_bound"] and "--nb-max-rate" in s["stop"]

    def bound(rate):
        return {"offered_rate": rate, "eta": 1.0, "client_bound": "requests queued late" if rate > 1000 else ""}
    s = fam.scaling_search(bound, 250.0, 100000.0, 0.8, 0.03)
    assert s["scaling_point"] == 1000.0 and s["lower_bound"] and s["stop"].startswith("CLIENT-BOUND at 2000")


def test_a_northbound_that_never_holds_eta_has_no_scaling_point():
    s = fam.scaling_search(lambda rate: {"offered_rate": rate, "eta": 0.1, "client_bound": ""}, 1000.0, 1e5, 0.8,
                           0.03)
    assert s["scaling_point"] is None and "even at" in s["stop"]
    with pytest.raises(fam.TrialFailed, match="no offered rate held"):
        fam.outcome(s, None, P, 2, None)


# --------------------------------------------------------------------------- a step and a repetition

def test_a_step_counts_what_was_served_within_td_and_its_latencies_from_the_due_instant():
    a = answers(rate=1000.0, n=1000, lag_ns=1_000_000, answer_ns=2_000_000)
    served = [q + 5_000_000 for q in a.queued]
    served[-10:] = [0] * 10                      # never reached the switch
    r = fam.step_figures(a, served, "async", P)
    assert r["served"] == 990 and r["served_in_td"] == 990         # the last served, due at 989 ms, came at 995 ms
    slow = fam.step_figures(a, [q + 20_000_000 if s else 0 for q, s in zip(a.queued, served)], "async", P)
    assert slow["served_in_td"] == 980 and slow["t_sr"] == 980.0      # served 21 ms after due: 980..989 fall after Td
    assert r["eta"] == pytest.approx(r["t_sr"] / 1000.0) and r["http_ok"] == 1000 and r["unanswered"] == 0
    assert r["latency_served_ms"]["p50"] == pytest.approx(6.0) and r["latency_http_ms"]["max"] == pytest.approx(3.0)
    assert r["within_bound_share"] == pytest.approx(0.99) and r["accepted"]           # 99 % within 1000 ms
    assert not fam.step_figures(a, served, "async", fam.NorthboundLoadParams(td=1.0, latency_bound=5.0))["accepted"]
    sync = fam.step_figures(a, served, "sync", P)          # sync: from the instant it was sent
    assert sync["latency_served_ms"]["p50"] == pytest.approx(5.0)


def test_refused_and_unanswered_requests_are_counted_apart():
    a = answers(n=10, status=500)
    r = fam.step_figures(a, [0] * 10, "async", P)
    assert (r["http_ok"], r["http_refused"], r["unanswered"], r["t_sr"]) == (0, 10, 0, 0.0)
    r = fam.step_figures(answers(n=10, answer_ns=None), [0] * 10, "async", P)
    assert r["unanswered"] == 10 and r["latency_http_ms"] is None


def test_served_instants_come_from_the_first_exact_flow_mod_on_the_requests_switch():
    full = (1 << 48) - 1
    trace = SimpleNamespace(flow_mods=(
        (5, 1, [["eth_src", 0xA, full], ["eth_dst", 0xB, full]], True),
        (6, 2, [["eth_src", 0xA, full], ["eth_dst", 0xB, full]], True),     # the right pair, another switch
        (7, 1, [["eth_src", 0xA, full], ["eth_dst", 0xB, full]], True),     # a repeat: the first counts
        (8, 2, [["eth_src", 0xC, full], ["eth_dst", 0xD, 0xFF]], True),     # masked: not this request's entry
        (9, 2, [["eth_dst", 0xD, full]], True)))
    assert fam.served_times(trace, [(1, 0xA, 0xB), (2, 0xC, 0xD), (3, 0xA, 0xB)]) == [5, 0, 0]


def test_memory_growth_is_a_least_squares_slope_per_minute():
    assert fam.slope_per_minute([0, 1, 2, 3], [10, 12, 14, 16]) == pytest.approx(120.0)
    assert fam.slope_per_minute([0, 1, 2], [1, 2, 3]) is None
    assert fam.slope_per_minute([1, 1, 1, 1], [1, 2, 3, 4]) is None


def row(rate, eta, accepted=True, bound=""):
    return {"offered_rate": rate, "offered_in_td_rate": rate, "t_sr": rate * eta, "eta": eta, "http_rate": rate,
            "served": 1, "requests": 1, "http_refused": 0, "unanswered": 0, "accepted": accepted,
            "within_bound_share": 1.0 if accepted else 0.5, "generator_lag_p99_ms": 1.0, "client_bound": bound,
            "latency_served_ms": None, "latency_http_ms": None}


def test_a_repetition_reports_its_curve_delta_acceptance_and_growing_memory():
    s = {"scaling_point": 2000.0, "above": 2050.0, "rows": [row(1000.0, 1.0), row(2000.0, 0.9, accepted=False),
                                                            row(2050.0, 0.7)], "stop": "", "lower_bound": False}
    res = {"t_s": [1, 2, 3, 4], "cpu_percent": [1] * 4, "rss_bytes": [1] * 4, "rss_growth_percent_per_min": 9.0,
           "rss_growing": True}
    out = fam.outcome(s, None, P, 4, res)
    d = out.details
    assert out.value == 2000.0 and d["delta_per_cpu"] == 500.0 and [c["offered_rate"] for c in d["curve"]] == \
        [1000.0, 2000.0, 2050.0]
    assert d["accepted"] is False and d["acceptance_rate"] == 2000.0 and "grew 9.0 %/min" in out.note
    assert fam.outcome(s, row(1000.0, 1.0), P, 4, None).details["acceptance_rate"] == 1000.0
    entry = {"trials": [{"ok": True, "index": i, "details": {"accepted": i < 19, "delta_per_cpu": 500.0,
                                                             "client_bound": False}} for i in range(20)]}
    assert fam.acceptance_verdict(entry, P)[0] is True                # 19 of 20 = 95 %
    entry["trials"][18]["details"]["accepted"] = False
    passed, text = fam.acceptance_verdict(entry, P)
    assert not passed and "18 of 20" in text and "FAILED" in text


def test_the_options_name_what_is_wrong():
    assert fam.NorthboundLoadParams().problems() == []
    bad = fam.NorthboundLoadParams(start_rate=5e4, latency_percentile=120.0, connections=1, processes=2).problems()
    assert len(bad) == 3 and any("--nb-start-rate" in b for b in bad) and any("--nb-connections" in b for b in bad)


def test_the_switches_have_no_links_and_their_hosts_on_ports_one_up():
    topo = fam.switches_only(3)
    assert sorted(topo.switches) == [1, 2, 3] and not list(topo.directed_links())
    assert sorted((h.at.dpid, h.at.port) for h in topo.hosts) == [(1, 1), (2, 1), (3, 1)]
    assert sorted((h.at.dpid, h.at.port) for h in fam.switches_only(2, 3).hosts) == \
        [(1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (2, 3)]


def test_the_topology_axis_is_switches_by_hosts():
    assert fam.topology_list("10x100, 30x300,10x100") == ((10, 100), (30, 300))
    for bad in ("10", "0x5", "4x0", "4x1001", "ax2"):
        with pytest.raises(fam.argparse.ArgumentTypeError, match="SWITCHESxHOSTS"):
            fam.topology_list(bad)
    assert fam.cell_id("sync", (30, 300)) == "sync-30x300"


def test_a_jstat_line_gives_the_heap_in_use_and_the_live_set_after_gc():
    header = "S0C S1C S0U S1U EC EU OC OU MC MU CCSC CCSU YGC YGCT FGC FGCT CGC CGCT GCT"
    line = "0.0 2048.0 0.0 2048.0 30720.0 10240.0 65536.0 20480.0 0 0 0 0 7 0.1 1 0.2 2 0.0 0.3"
    assert fam.parse_jstat(header, line) == {"heap_used_bytes": (2048 + 20480 + 10240) * 1024,
                                             "heap_after_gc_bytes": (2048 + 20480) * 1024, "collections": 8}
    assert fam.parse_jstat(header, "1 2 3") is None and fam.parse_jstat("A B", "x y") is None
    # recorded from OpenDaylight pinned to one CPU (the serial collector)
    serial = ("12224.0 12224.0 8578.9 0.0 98048.0 44718.0 244488.0 160311.4 161044.0 142722.2 24152.0 18934.4 96 "
              "1.618 6 0.894 - - 2.512")
    assert fam.parse_jstat(header, serial)["collections"] == 102


def test_only_a_jvm_gets_a_jstat():
    import os
    assert fam.jstat_for(None) is None and fam.jstat_for(os.getpid()) is None     # this is python, not java


def test_a_jvm_heap_that_keeps_growing_after_gc_is_flagged():
    heap = fam.JvmHeap(None)
    assert heap.jstat is None and heap.series() is None
    heap.samples = [{"t_s": t, "heap_used_bytes": 0, "heap_after_gc_bytes": 100_000_000 + t * 500_000,
                     "collections": t} for t in range(0, 60, 2)]
    s = heap.series()
    assert s["heap_growing"] and 25 < s["heap_after_gc_growth_percent_per_min"] < 30 and s["collections"] == 58


def test_the_answer_rate_runs_from_the_schedules_start_to_the_last_answer():
    a = answers(rate=1000.0, n=1000, answer_ns=0)          # answered as due: the last at 0.999 s
    rate, n, span = nl.answered_rate(a)
    assert n == 1000 and span == pytest.approx(0.999) and rate == pytest.approx(1000 / 0.999)
    assert nl.answered_rate(answers(n=5, answer_ns=None)) == (0.0, 0, 0.0)


# --------------------------------------------------------------------------- deployments: a cluster's every member

def test_several_northbounds_take_request_i_at_target_i_mod_n_and_whole_workers_each():
    spec = nl.LoadSpec("127.0.0.1", 1, 100, 1, processes=2, targets=(("127.0.0.1", 1), ("127.0.0.1", 2),
                                                                      ("127.0.0.1", 3)))
    assert spec.workers() == 3 and spec.endpoints()[2] == ("127.0.0.1", 3) and spec.problems() == []
    assert nl.LoadSpec("h", 1, 100, 1, processes=4, targets=(("h", 1), ("h", 2), ("h", 3))).workers() == 6
    assert nl.LoadSpec("h", 9, 100, 1, processes=2).endpoints() == (("h", 9),)
    few = nl.LoadSpec("h", 1, 100, 1, connections=2, processes=1, targets=(("h", 1), ("h", 2), ("h", 3)))
    assert "3 northbounds take 3 workers (got 2 connections)" in few.problems()[0]


def test_a_cluster_load_builds_each_request_for_the_member_it_goes_to():
    from fixtures.devices.flow_nb import make_flows
    em = SimpleNamespace(topology=fam.switches_only(2), state=lambda: SimpleNamespace(data_plane=None))
    fnbs = [make_flows("ryu", f"http://127.0.0.1:{port}") for port in (8081, 8082, 8083)]
    load = fam.FlowLoad(em, fnbs, P, "async", None, progress=lambda _: None)
    reqs, keys = load.requests(6)
    hosts = [r.split(b"\r\nHost: ", 1)[1].split(b"\r\n", 1)[0].decode() for r in reqs]
    assert hosts == [f"127.0.0.1:{p}" for p in (8081, 8082, 8083)] * 2
    assert [k[0] for k in keys] == [1, 2, 1, 2, 1, 2]                 # the switches in turn, whoever takes it
    assert len({k[1:] for k in keys}) == 6


class Tables:
    """The emulated switches' tables as a step leaves them, and a flow northbound that empties them."""

    def __init__(self, entries: int, refuse: bool = False):
        self.entries, self.refuse, self.deleted = entries, refuse, []
        self.topology = fam.switches_only(2)
        self.base_url, self.auth = "http://127.0.0.1:8080", None

    def state(self):
        return SimpleNamespace(data_plane={"flow_entries": self.entries, "flow_mods": 0})

    def describe(self):
        return "ryu flow northbound"

    def delete_flows(self, dpids):
        from fixtures.devices.northbound import NorthboundError
        if self.refuse:
            raise NorthboundError("DELETE /stats/flowentry/clear/1 answered HTTP 500")
        self.deleted.append(list(dpids))
        self.entries = 2 + (1 if len(self.deleted) > 1 else 0)      # the second reset leaves one behind


def test_each_step_deletes_its_flows_so_the_next_starts_on_the_tables_the_first_found():
    t = Tables(2)                       # the controller's own entries before the first step
    load = fam.FlowLoad(t, [t], P, "async", None, progress=lambda _: None, sleep=lambda s: None)
    assert load.baseline == 2
    t.entries = 40
    assert load.reset()["entries_left"] == 0 and t.deleted == [[1, 2]]
    t.entries = 40
    assert load.reset()["entries_left"] == 1          # recorded in the step's row of the curve
    t = Tables(2, refuse=True)
    load = fam.FlowLoad(t, [t], P, "async", None, progress=lambda _: None, sleep=lambda s: None)
    with pytest.raises(fam.TrialFailed, match="the step's flows could not be deleted: DELETE /stats"):
        load.reset()


def test_the_deployment_sweep_puts_the_controller_alone_first_and_names_cluster_cells():
    cfg = SimpleNamespace(failover=SimpleNamespace(sizes=(5, 1, 3)))
    assert fam.node_counts(cfg) == (1, 3, 5)
    assert fam.node_counts(SimpleNamespace(failover=SimpleNamespace(sizes=()))) == (1,)
    assert fam.cell_id("async", (4, 1), 1) == "async-4x1" and fam.cell_id("sync", (10, 100), 3) == "sync-10x100-3n"
    cfg.nbload = P
    assert fam.series_name(cfg, ("async", (4, 1), 3)) == "cluster nodes"
    cfg.nbload = fam.NorthboundLoadParams(modes=("async", "sync"))
    assert fam.series_name(cfg, ("sync", (4, 1), 3)) == "cluster nodes (sync, 4x1)"


class Run:
    def __init__(self):
        self.ctx, self.notes = {}, []

    def context(self, key, value):
        self.ctx[key] = value

    def note(self, text):
        self.notes.append(text)


def entry_of(points, cpus=2):
    return {"trials": [{"ok": True, "index": i + 1, "value": v,
                        "details": {"delta_per_cpu": v / cpus, "accepted": True, "client_bound": False}}
                       for i, v in enumerate(points)]
            + [{"ok": False, "index": 9, "value": None}]}


def test_the_cluster_overhead_is_one_minus_delta_n_over_delta_1_of_the_same_mode_and_topology():
    alone: dict = {}
    one, three, other = Run(), Run(), Run()
    fam.deployment_context(one, entry_of([400.0, 500.0, 600.0]), ("async", (4, 1), 1), P, alone)
    assert alone == {("", "async", (4, 1)): 250.0} and one.ctx["deployment"]["overhead_text"] == "— (the reference)"
    fam.deployment_context(three, entry_of([200.0, 150.0, 100.0]), ("async", (4, 1), 3), P, alone)
    d = three.ctx["deployment"]
    assert d["overhead"] == pytest.approx(0.7) and d["overhead_text"] == "70.0%" and d["delta"] == 75.0
    assert d["scaling_point"] == {"n": 3, "min": 100.0, "median": 150.0, "max": 200.0}
    assert d["acceptance"] == "passed" and "1 − δ3/δ1 = 70.0%" in three.notes[0]
    fam.deployment_context(other, entry_of([100.0]), ("sync", (4, 1), 3), P, alone)   # no sync reference
    assert other.ctx["deployment"]["overhead"] is None and "add 1 to --cluster-nodes" in \
        other.ctx["deployment"]["overhead_text"]
    assert fam.overhead(None, 250.0) is None and fam.overhead(100.0, 0.0) is None
    assert d["order"] < other.ctx["deployment"]["order"] and one.ctx["deployment"]["order"] < d["order"]


def test_a_clusters_members_are_sampled_each_and_a_growing_one_is_named():
    r = {"rss_growing": True, "rss_growth_percent_per_min": 7.5,
         "jvm_heap": {"heap_growing": True, "heap_after_gc_growth_percent_per_min": 12.0}}
    assert len(fam.growing(r)) == 2 and fam.growing(None) == []
    both = fam.growing({"members": {"odl-member-1": {"rss_growing": False}, "odl-member-2": r}})
    assert both[0].startswith("odl-member-2: resident memory grew 7.5 %/min") and len(both) == 2
    s = {"scaling_point": 100.0, "above": 110.0, "rows": [row(100.0, 0.9)], "stop": "", "lower_bound": False}
    out = fam.outcome(s, None, P, 2, {"members": {"odl-member-2": r}}, nodes=3)
    assert out.details["nodes"] == 3 and "odl-member-2: the JVM heap after GC grew 12.0 %/min" in out.note


def test_a_controller_the_suite_builds_no_flow_taking_cluster_of_skips_its_cluster_cells_saying_why():
    from fixtures.families.failover import FailoverParams
    bmwg = SimpleNamespace(run=SimpleNamespace(controller=SimpleNamespace(kind="ryu")), failover=FailoverParams())
    why = fam.cluster_for(bmwg, 3).unavailable()
    assert "--cluster-nodes 3" in why and "ryu-ha" in why and "odl-cluster" in why
    bmwg.run.controller.kind = "osken"
    assert "no cluster of it" in fam.cluster_for(bmwg, 3).unavailable()


# --------------------------------------------------------------------------- the ovsdb protocol (OVN's northbound)

def test_json_rpc_answers_are_framed_across_reads_and_matched_by_id_skipping_the_servers_requests():
    r = nl.JsonRpcReader()
    whole = (b'{"id":3,"result":[{"uuid":["uuid","x"]}],"error":null} {"id":"echo","method":"echo","params":[]}'
             b'{"id":1,"result":[{},{"error":"constraint violation","details":"d"}],"error":null}\n'
             b'{"id":2,"result":null,"error":"unknown database"}{"id":7,"result":[{"count":1}],"error":null}')
    got = []
    for k in range(0, len(whole), 7):          # cut anywhere, even inside a string or a multi-byte character
        got += r.feed(whole[k:k + 7])
    assert got == [(3, 200), (1, 409), (2, 500), (7, 200)]
    s = nl.JsonStream()
    assert s.feed('{"a":"é'.encode()[:-1]) == [] and s.feed('é"}'.encode()[1:]) == [{"a": "é"}]
    with pytest.raises(nl.LoadError, match="not JSON-RPC"):
        nl.JsonRpcReader().feed(b"HTTP/1.1 200 OK\r\n")
    assert nl.ovsdb_request("transact", ["OVN_Northbound"], 5) == \
        b'{"method":"transact","params":["OVN_Northbound"],"id":5}'
    assert "protocol must be" in nl.LoadSpec("h", 1, 1, 1, protocol="grpc").problems()[0]


def test_a_worker_matches_ovsdb_answers_by_id_whatever_their_order():
    spec = nl.LoadSpec("h", 1, 1000.0, 1.0, protocol="ovsdb")
    w = nl._Worker.__new__(nl._Worker)
    w.by_id, w.first, w.step, w.sync, w.wait_sb = True, 1, 2, False, False     # this worker has requests 1, 3, 5
    w.pending, w.waiting, w.done, w.clock = [{0: None, 1: None, 2: None}], [{}], 0, lambda: 42
    w.answered, w.status = array("q", [0] * 3), array("h", [0] * 3)
    w.readers = [nl.JsonRpcReader()]

    class Sock:
        def __init__(self, data):
            self.data = data

        def recv(self, _n):
            data, self.data = self.data, b""
            return data
    w.socks = [Sock(b'{"id":5,"result":[{}],"error":null}{"id":4,"result":[],"error":null}'
                    b'{"id":1,"result":[{}],"error":null}')]
    w.read(0)
    assert list(w.status) == [200, 0, 200] and list(w.answered) == [42, 0, 42] and w.done == 2
    assert list(w.pending[0]) == [1] and spec.problems() == []


def worker_waiting_for_sb_cfg(replies: list):
    w = nl._Worker.__new__(nl._Worker)
    w.by_id, w.first, w.step, w.sync, w.wait_sb = True, 0, 1, True, True
    w.pending, w.waiting, w.done, w.sb_cfg, w.free = [{0: None}, {1: None}], [{}, {}], 0, [0, 0], nl.deque()
    w.answered, w.status, w.served = array("q", [0] * 2), array("h", [0] * 2), array("q", [0] * 2)
    w.out, w.clock = [bytearray(), bytearray()], iter(range(10, 100, 10)).__next__
    w.flush = lambda k: None
    for k, msgs in replies:
        w.replies(k, msgs)
    return w


def test_with_wait_sb_cfg_a_committed_request_is_served_when_northd_reports_its_nb_cfg_and_frees_its_connection():
    reply = {"id": 0, "error": None, "result": [{"uuid": ["uuid", "a"]}, {"count": 1}, {"rows": [{"nb_cfg": 7}]}]}
    update = {"method": "update", "params": ["bmwg-wait", {"NB_Global": {"g": {"new": {"sb_cfg": 7}, "old": {}}}}]}
    w = worker_waiting_for_sb_cfg([(0, [{"id": "bmwg-wait", "result": {"NB_Global": {"g": {"new": {"sb_cfg": 5}}}},
                                         "error": None}, reply])])
    assert w.answered[0] == 10 and w.status[0] == 200 and w.waiting[0] == {0: 7} and not w.free and w.done == 0
    w.replies(0, [{"id": "echo", "method": "echo", "params": []}])
    assert b'"result": []' in bytes(w.out[0]) or b'"result":[]' in bytes(w.out[0])
    w.replies(0, [update])
    assert w.served[0] == 30 and w.done == 1 and list(w.free) == [0] and w.waiting[0] == {}
    # a transaction that failed, or set no nb_cfg, is done at its answer and never served
    w = worker_waiting_for_sb_cfg([(1, [{"id": 1, "result": [{}, {"error": "constraint violation"}], "error": None}])])
    assert w.status[1] == 409 and w.served[1] == 0 and w.done == 1 and list(w.free) == [1]
    w = worker_waiting_for_sb_cfg([(1, [{"id": 1, "result": [{}], "error": None}])])
    assert w.status[1] == 500 and w.done == 1
    assert nl.sb_cfg_of({"NB_Global": {"g": {"new": {"sb_cfg": 3}}, "h": {"old": {}}}}) == 3
    assert nl.sb_cfg_of(None) is None and nl.nb_cfg_of([{"rows": [{"nb_cfg": 4}]}]) == 4 and nl.nb_cfg_of([]) is None
    assert "wait is" in nl.LoadSpec("h", 1, 1, 1, wait="sb_cfg").problems()[0]


def test_quiesce_waits_for_two_polls_that_see_the_same_count_or_gives_up_at_its_limit():
    counts, naps = iter([1, 5, 9, 9, 9, 12]), []
    fam.quiesce(lambda: next(counts), sleep=naps.append, step=0.25, limit=60)
    assert naps == [0.25] * 4 and next(counts) == 12      # 1, 5, 9, 9 (calm 1), 9 (calm 2): done
    naps.clear()
    ticks = iter(range(1000))
    fam.quiesce(lambda: next(ticks), sleep=naps.append, step=0.25, limit=0)
    assert naps == []                                       # a limit of 0: one look, no wait
