"""RFC 8456 §5.3.2's attacks and cells: the SYN and PACKET_IN bytes (Scapy and our codec as oracles), the pacing
and the bounds on a MemoryReactorClock, the shams' targets, the cells, the comparisons and the RFC's table."""

import json
import socket

import pytest
from scapy.layers.inet import IP, TCP, UDP
from twisted.internet.testing import MemoryReactorClock

from emulator import attack as atk
from emulator import codec
from fixtures.devices import northbound as nb
from fixtures.families import dos
from reports.tables import render_tables


def test_syn_packets_decode_as_syns_with_valid_checksums_from_ports_no_session_uses():
    pkts = atk.syn_packets("127.0.0.1", "127.0.0.1", 6653, n=64)
    ports = set()
    for raw in pkts:
        ip = IP(raw)
        tcp = ip[TCP]
        assert ip.src == "127.0.0.1" and ip.dst == "127.0.0.1" and tcp.dport == 6653 and tcp.flags == "S"
        # Scapy recomputes both checksums when they are deleted: ours must equal its.
        fresh = IP(raw)
        del fresh.chksum
        del fresh[TCP].chksum
        again = IP(bytes(fresh))
        assert (ip.chksum, tcp.chksum) == (again.chksum, again[TCP].chksum)
        assert atk.SYN_SOURCE_PORTS[0] <= tcp.sport < atk.SYN_SOURCE_PORTS[1] < 32768
        ports.add(tcp.sport)
    assert len(ports) == 64


def test_flood_packet_ins_decode_with_a_new_source_mac_each():
    macs = set()
    for i in range(50):
        frame = atk.flood_packet_in(codec.OFP13, i)
        msg = codec.decode(frame)
        assert msg.name == "packet_in"
        data = codec.packet_in_fields(frame)["data"]
        assert len(data) == 60 and data[12:14] == b"\x08\x00" and IP(data[14:])[UDP].dport == 9
        macs.add(data[6:12])
    assert len(macs) == 50


def test_attacker_datapaths_are_reserved_and_left_out_of_the_comparison():
    assert atk.is_attacker_dpid(atk.ATTACKER_DPID) and atk.is_attacker_dpid(atk.CHURN_DPID_BASE + 7)
    assert not atk.is_attacker_dpid(1) and not atk.is_attacker_dpid(2 ** 20)
    deployed = nb.View(frozenset({1, 2}), frozenset({((1, 1), (2, 1)), ((2, 1), (1, 1))}), frozenset())
    seen = nb.View(deployed.switches | {atk.ATTACKER_DPID},
                   deployed.links | {((atk.ATTACKER_DPID, 1), (1, 3))},
                   frozenset({("02:a7:00:00:00:01", atk.ATTACKER_DPID, 1)}))
    c = nb.compare(deployed, seen)
    assert c.matches and c.attackers == 1
    assert not nb.compare(deployed, nb.View(frozenset({1, 3}), deployed.links, frozenset())).matches


@pytest.mark.parametrize("rate,elapsed,count,due", [(1000, 0.0, 10 ** 6, 1), (1000, 0.5, 10 ** 6, 501),
                                                     (1000, 5.0, 2000, 2000), (1000, -1, 100, 0)])
def test_pacer(rate, elapsed, count, due):
    assert atk.Pacer(rate, count).due(elapsed) == due


def test_spec_problems_keep_attacks_on_loopback():
    ok = atk.AttackSpec("syn", ("127.0.0.1", 6653), 100.0, 1.0)
    assert ok.problems() == [] and ok.max_count() == 100
    bad = atk.AttackSpec("syn", ("10.0.0.1", 6653), 0.0, 1.0, source="192.168.1.2",
                         url="http://10.0.0.1:8080/stats/flow/1")
    text = " ".join(bad.problems())
    assert "10.0.0.1 is not a loopback" in text and "192.168.1.2" in text and "positive rate" in text
    assert "URL" in text
    assert atk.AttackSpec("nope", ("127.0.0.1", 1), 1.0, 1.0).problems()[0].startswith("attack 'nope'")


@pytest.mark.component
def test_a_sham_of_a_connect_attack_goes_to_a_closed_port():
    spec = atk.AttackSpec("half-open", ("127.0.0.1", 6653), 10.0, 1.0, sham=True).effective()
    assert spec.target[1] != 6653
    probe = socket.socket()
    try:
        assert probe.connect_ex(spec.target) != 0      # nothing listens there
    finally:
        probe.close()
    packet_in = atk.AttackSpec("packet-in", ("127.0.0.1", 6653), 10.0, 1.0, sham=True)
    assert packet_in.effective() is packet_in         # its sham sink is made when it starts


def test_raw_socket_problem_names_the_privilege(monkeypatch):
    def refuse(*a, **k):
        raise PermissionError(1, "Operation not permitted")
    monkeypatch.setattr(atk.socket, "socket", refuse)
    assert "root or CAP_NET_RAW" in atk.raw_socket_problem()


def run_attack(spec, advance_s, step=0.001, stop_at=None):
    reactor = MemoryReactorClock()
    events = []
    stop = atk.run(spec, reactor, events.append, now=reactor.seconds)
    t = 0.0
    while t < advance_s:
        if stop_at is not None and t >= stop_at:
            stop()
            stop_at = None
        reactor.advance(step)
        t += step
    return reactor, events


def test_half_open_connects_at_its_rate_holds_at_its_count_and_stops_at_its_time():
    spec = atk.AttackSpec("half-open", ("127.0.0.1", 6653), 200.0, 2.0, count=150)
    reactor, events = run_attack(spec, 2.5)
    assert events[0]["event"] == "started" and events[0]["max_count"] == 150
    assert len(reactor.tcpClients) == 150                        # the count, then held (no more connects)
    assert all(c[0:2] == ("127.0.0.1", 6653) and c[4] == ("127.0.0.1", 0) for c in reactor.tcpClients)
    result = events[-1]
    assert result["event"] == "result" and result["sent"] == 150 and result["stopped_by"] == "time"
    assert result["seconds"] == pytest.approx(2.0, abs=0.01)
    # Its rate is over the time it took to open them, not the time it held them.
    assert result["sending_seconds"] == pytest.approx(0.75, abs=0.01) and result["achieved_share"] > 0.95


def test_an_attack_stopped_early_reports_what_it_reached():
    spec = atk.AttackSpec("dpid-churn", ("127.0.0.1", 6653), 100.0, 10.0)
    reactor, events = run_attack(spec, 1.0, stop_at=0.5)
    result = events[-1]
    assert result["stopped_by"] == "signal" and 45 <= result["sent"] <= 55
    assert result["achieved_rate"] == pytest.approx(100.0, rel=0.1) and result["achieved_share"] > 0.9
    assert len([e for e in events if e["event"] == "result"]) == 1


def test_an_attack_that_cannot_start_says_why(monkeypatch):
    monkeypatch.setattr(atk, "raw_socket_problem", lambda: "a raw IP socket needs root or CAP_NET_RAW (test)")
    _, events = run_attack(atk.AttackSpec("syn", ("127.0.0.1", 6653), 100.0, 1.0), 0.01)
    assert events == [{"event": "error", "kind": "syn", "sham": False,
                       "error": "a raw IP socket needs root or CAP_NET_RAW (test)"}]


def test_the_command_line_refuses_a_remote_target(capsys):
    assert atk.main(["syn", "--target", "10.1.2.3:6653", "--seconds", "1"]) == 2
    out = json.loads(capsys.readouterr().out)
    assert out["event"] == "error" and "not a loopback address" in out["error"]


def test_cells_run_each_test_without_attacks_first_then_attack_and_sham():
    p = dos.DosParams(attacks=("syn", "northbound"), tests=("rate", "size"))
    cells = p.cells()
    assert cells[:5] == [("reactive_path_provisioning_rate", "none", None),
                         ("reactive_path_provisioning_rate", "attack", "syn"),
                         ("reactive_path_provisioning_rate", "sham", "syn"),
                         ("reactive_path_provisioning_rate", "attack", "northbound"),
                         ("reactive_path_provisioning_rate", "sham", "northbound")]
    assert [dos.cell_id(*c) for c in cells[5:8]] == ["dos-size-none", "dos-size-syn", "dos-size-syn-sham"]


def test_a_sham_runs_at_the_rate_its_attack_reached():
    attack = cell(RPR, "attack", "packet-in", [900, 910])
    attack["attack_reached"] = {"mean_rate": 6100.0, "unit": "PACKET_IN/s", "min_share": 0.3}
    rate, source = dos.sham_rate({"benchmarks": [attack]}, RPR, "packet-in")
    assert rate == 6100.0 and "packet-in attack reached" in source
    assert dos.sham_rate({"benchmarks": [attack]}, RPR, "syn")[0] is None
    spec = dos.spec_for(dos.DosParams(), "packet-in", True, ("127.0.0.1", 6653), codec.OFP13, rate=rate)
    assert spec.rate == 6100.0 and spec.sham


def test_rates_option_and_its_problems():
    assert dos.parse_rates("syn=50000, packet-in=4000") == (("syn", 50000.0), ("packet-in", 4000.0))
    for bad in ("syn", "syn=-1", "smurf=10", "syn=fast"):
        with pytest.raises(Exception, match="KIND=RATE"):
            dos.parse_rates(bad)
    p = dos.DosParams(attacks=("syn",), rates=(("packet-in", 5.0),))
    assert "--dos-rate names packet-in" in p.problems()[0]
    assert dos.DosParams(rates=(("syn", 5.0),)).rate_of("syn") == 5.0
    assert dos.DosParams().rate_of("syn") == atk.KINDS["syn"].rate


def trial(value, share):
    return {"ok": True, "value": value, "details": {"attack_share": share}}


def cell(test, condition, attack, values, unit="paths/s"):
    return {"benchmark": dos.BENCHMARK, "unit": unit, "outcome": {"status": "passed", "reason": ""},
            "parameters": {"test": test, "condition": condition, "attack": attack},
            "trials": [{"ok": True, "value": v, "index": i} for i, v in enumerate(values, 1)],
            "summary": {"n": len(values), "mean": sum(values) / len(values)}, "notes": []}


RPR = "reactive_path_provisioning_rate"


def test_comparisons_against_no_attack_and_sham_and_when_they_are_withheld():
    data = {"benchmarks": [cell(RPR, "none", None, [300, 301, 299, 300, 302]),
                           cell(RPR, "attack", "syn", [200, 210, 190, 205, 195])]}
    values = [200, 210, 190, 205, 195]
    out = dos.attack_comparisons(values, [trial(v, 0.99) for v in values], RPR, "attack", "syn", data, None, 0.05)
    assert out["against_without_attacks"]["deviation_percent"] == pytest.approx(-33.4, abs=0.1)
    assert "attack_against_sham" not in out          # the sham runs after the attack and compares the two
    sham = [298, 300, 299, 301, 300]
    out = dos.attack_comparisons(sham, [trial(v, 0.99) for v in sham], RPR, "sham", "syn", data, None, 0.05)
    vs = out["attack_against_sham"]
    assert vs["baseline"] == "the syn sham cell of this run" and vs["mean"] == 200 and vs["baseline_mean"] == 299.6
    low = dos.attack_comparisons(values, [trial(v, 0.5) for v in values], RPR, "attack", "syn", data, None, 0.05)
    assert set(low) == {"withheld"} and "50 %" in low["withheld"]
    # A closed-loop attack the controller holds down keeps its comparison; a sham below 80 % does not.
    held = dos.attack_comparisons(values, [trial(v, 0.5) for v in values], RPR, "attack", "northbound", data,
                                  None, 0.05)
    assert "against_without_attacks" in held and "withheld" not in held
    short = dos.attack_comparisons(sham, [trial(v, 0.5) for v in sham], RPR, "sham", "northbound", data, None, 0.05)
    assert set(short) == {"withheld"}


def test_the_baseline_comes_from_this_run_or_the_baseline_file():
    base_file = {"benchmarks": [{"benchmark": "test_reactive_path_provisioning_rate", "outcome": "passed",
                                 "trials": [{"ok": True, "value": 500}, {"ok": True, "value": 510}]}]}
    values, source = dos.TABLE.baseline_for(RPR, {"benchmarks": []}, base_file)
    assert values == [500, 510] and "--baseline" in source
    assert dos.TABLE.path_programming_rate({"benchmarks": []}, base_file)[0] == 505
    none, why = dos.TABLE.baseline_for(RPR, {"benchmarks": []}, None)
    assert none is None and why.startswith("no baseline: this run's cell without any attacks has no successful")


def test_merge_summaries_of_a_size_search():
    parts = [{"attack_sent": 100, "attack_seconds": 1.0, "attack_errors": {"x": 1}, "attack_share": 0.9,
              "attack_answered": 3},
             {"attack_sent": 300, "attack_seconds": 3.0, "attack_errors": {"x": 2, "y": 1}, "attack_share": 0.95,
              "attack_answered": 0}, {}]
    m = dos.merge_summaries(parts)
    assert m["attack_sent"] == 400 and m["attack_rate"] == 100.0 and m["attack_share"] == 0.9
    assert m["attack_errors"] == {"x": 3, "y": 1} and m["attack_runs"] == 2
    assert dos.merge_summaries([{}]) == {}


def test_the_rfc_table_has_the_columns_the_rfc_names_and_the_nature_and_interface():
    none = cell(RPR, "none", None, [300, 302])
    sham = cell(RPR, "sham", "syn", [301, 299])
    attack = cell(RPR, "attack", "syn", [200, 210])
    for b in (sham, attack):
        b["parameters"].update(attack_interface="southbound", attack_nature=atk.KINDS["syn"].nature,
                               attack_target_rate=20000.0, attack_rate_unit="SYN/s", sham=atk.KINDS["syn"].sham,
                               management_interface=dos.MANAGEMENT_NOTE)
        b["attack_reached"] = {"mean_rate": 19990.0, "unit": "SYN/s", "min_share": 0.999}
    attack["against_without_attacks"] = {"deviation_percent": -32.1, "p_value": 0.01}
    sham["attack_against_sham"] = {"deviation_percent": -31.7, "p_value": 0.02}
    sham["parameters"]["condition"] = "sham"
    for b, (condition, kind) in ((none, ("none", None)), (sham, ("sham", "syn")), (attack, ("attack", "syn"))):
        b["table"] = dos.table_entry(RPR, condition, kind, 0, dos.cell_notes(b), attack=b["parameters"])
    text = "\n".join(render_tables([none, sham, attack]))
    assert "| Test | Without any attacks | Sham (syn) | With attacks (syn) |" in text
    assert "vs none: Δ -32.1 %, p = 0.01; vs sham: Δ -31.7 %, p = 0.02" in text
    assert "attack reached 19990 SYN/s" in text and "| syn | southbound | TCP SYN flood" in text
    assert "not applicable on one host" in text
    assert render_tables([]) == []


def test_a_packet_in_flood_follows_tcp_flow_control():
    from twisted.internet.testing import StringTransport
    spec = atk.AttackSpec("packet-in", ("127.0.0.1", 6653), 1000.0, 1.0)
    stats = atk.Stats("packet-in", False, "127.0.0.1:6653", 1000.0, "PACKET_IN/s", 1000, 1.0)
    flood = atk.PacketInFlood(spec, stats, MemoryReactorClock())
    flood.version, flood.transport = codec.OFP13, StringTransport()
    flood.send(3)
    flood.pauseProducing()          # the controller's socket is full
    flood.send(5)
    flood.resumeProducing()
    flood.send(2)
    frames, rest = codec.split_frames(flood.transport.value())
    assert rest == b"" and len(frames) == 5 and stats.sent == 5 and stats.skipped == 5
    assert [codec.decode(f).xid for f in frames] == [1, 2, 3, 4, 5]


def test_a_time_not_within_td_is_a_failed_trial_that_carries_its_td():
    from fixtures.harness import NotWithinTd, TrialFailed
    exc = NotWithinTd("the controller sent no FLOW_MOD serving the test flow within Td = 5 s", 5.0)
    assert isinstance(exc, TrialFailed) and exc.td_s == 5.0 and exc.figures == {}


def test_a_rate_beyond_reach_sends_in_bounded_batches():
    # 10 M SYN/s asked for, 5 ticks: never more than MAX_BATCH per tick (the time bound holds however slow
    # each send is).
    sent = []

    class Recorder(atk.Attack):
        def send(self, n):
            sent.append(n)
            self.stats.sent += n

    spec = atk.AttackSpec("dpid-churn", ("127.0.0.1", 6653), 10_000_000.0, 0.005)
    reactor = MemoryReactorClock()
    events = []
    saved = atk.ATTACKS["dpid-churn"]
    atk.ATTACKS["dpid-churn"] = Recorder
    try:
        atk.run(spec, reactor, events.append, now=reactor.seconds)
        for _ in range(10):
            reactor.advance(0.001)
    finally:
        atk.ATTACKS["dpid-churn"] = saved
    assert sent and max(sent) == atk.MAX_BATCH and events[-1]["stopped_by"] == "time"
    assert events[-1]["sent"] <= 6 * atk.MAX_BATCH
