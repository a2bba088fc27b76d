"""FLOW_MOD decoding against Ryu's encoders, FLOW_REMOVED and flow stats against Ryu's parsers,
and the flow tables' OpenFlow semantics on hand-built frames."""

import pytest

from emulator import codec
from emulator import flowcodec as fc
from emulator import flowtable as ft
from emulator.codec import OFP10, OFP13

ryu_parser = pytest.importorskip("ryu.ofproto.ofproto_parser", reason="Ryu is installed by tox (see tox.ini)")
from ryu.ofproto import ofproto_v1_0 as o10  # noqa: E402
from ryu.ofproto import ofproto_v1_0_parser as p10  # noqa: E402
from ryu.ofproto import ofproto_v1_3 as o13  # noqa: E402
from ryu.ofproto import ofproto_v1_3_parser as p13  # noqa: E402
from ryu.ofproto.ofproto_protocol import ProtocolDesc  # noqa: E402

DP13, DP10 = ProtocolDesc(OFP13), ProtocolDesc(OFP10)
MAC1, MAC2 = "00:00:00:00:00:01", "00:00:00:00:00:02"


def ryu_bytes(msg) -> bytes:
    msg.serialize()
    return bytes(msg.buf)


def ryu_parse(data: bytes):
    version, type_, length, xid = codec.HEADER.unpack_from(data)
    return ryu_parser.msg(ProtocolDesc(version), version, type_, length, xid, data)


def mac(text: str) -> int:
    return int(text.replace(":", ""), 16)


def ip(text: str) -> int:
    a, b, c, d = (int(x) for x in text.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


def fm13(command=o13.OFPFC_ADD, priority=10, actions=None, inst=None, **kw):
    match = kw.pop("match", p13.OFPMatch())
    if inst is None:
        inst = [p13.OFPInstructionActions(o13.OFPIT_APPLY_ACTIONS, actions if actions is not None
                                          else [p13.OFPActionOutput(2)])]
    return fc.decode_flow_mod(ryu_bytes(p13.OFPFlowMod(DP13, command=command, priority=priority, match=match,
                                                       instructions=inst, **kw)))


def frame(src=MAC1, dst=MAC2, ethertype=0x0800, payload=b""):
    return bytes.fromhex(dst.replace(":", "")) + bytes.fromhex(src.replace(":", "")) + \
        ethertype.to_bytes(2, "big") + payload


def ipv4_udp(src_ip="10.0.0.1", dst_ip="10.0.0.2", sport=1000, dport=2000, tos=0):
    head = bytes([0x45, tos]) + (28).to_bytes(2, "big") + b"\x00\x00\x00\x00" + bytes([64, 17]) + b"\x00\x00"
    return head + ip(src_ip).to_bytes(4, "big") + ip(dst_ip).to_bytes(4, "big") + \
        sport.to_bytes(2, "big") + dport.to_bytes(2, "big") + b"\x00\x08\x00\x00"


# --------------------------------------------------------------------------- decoding (1.3)

def test_flow_mod_13_match_instructions_and_header_fields():
    m = p13.OFPMatch(in_port=3, eth_dst=MAC2, eth_src=(MAC1, "ff:ff:ff:00:00:00"), eth_type=0x0800,
                     ipv4_dst=("10.0.0.0", "255.255.255.0"), ip_proto=17, udp_dst=53, vlan_vid=0x1000 | 7)
    inst = [p13.OFPInstructionActions(o13.OFPIT_APPLY_ACTIONS, [p13.OFPActionSetField(eth_dst=MAC1),
                                                                  p13.OFPActionOutput(o13.OFPP_CONTROLLER, 128)]),
            p13.OFPInstructionActions(o13.OFPIT_WRITE_ACTIONS, [p13.OFPActionOutput(4), p13.OFPActionGroup(9)]),
            p13.OFPInstructionGotoTable(2)]
    d = fm13(match=m, inst=inst, cookie=0xC0FFEE, cookie_mask=0xFF, table_id=1, idle_timeout=5,
             hard_timeout=30, priority=100, buffer_id=0xFFFFFFFF, flags=o13.OFPFF_SEND_FLOW_REM,
             out_port=o13.OFPP_ANY, out_group=o13.OFPG_ANY)
    assert (d["cookie"], d["cookie_mask"], d["table_id"], d["command"]) == (0xC0FFEE, 0xFF, 1, fc.ADD)
    assert (d["idle_timeout"], d["hard_timeout"], d["priority"], d["flags"]) == (5, 30, 100, fc.FF_SEND_FLOW_REM)
    assert d["out_port"] == fc.PORT_ANY and d["out_group"] == fc.OFPG_ANY
    assert d["match"] == {
        "in_port": (3, 0xFFFFFFFF), "eth_dst": (mac(MAC2), 0xFFFFFFFFFFFF),
        "eth_src": (mac(MAC1) & 0xFFFFFF000000, 0xFFFFFF000000), "eth_type": (0x0800, 0xFFFF),
        "ipv4_dst": (ip("10.0.0.0"), 0xFFFFFF00), "ip_proto": (17, 0xFF), "udp_dst": (53, 0xFFFF),
        "vlan_vid": (0x1007, 0x1FFF)}
    assert d["instructions"] == [
        ("apply", [("set_field", "eth_dst", mac(MAC1)), ("output", codec.PORT_CONTROLLER, 128)]),
        ("write", [("output", 4, 0xFFE5), ("group", 9)]), ("goto", 2)]


def test_flow_mod_13_delete_filters_and_other_instructions():
    d = fm13(command=o13.OFPFC_DELETE_STRICT, table_id=o13.OFPTT_ALL, out_port=7, out_group=3,
             inst=[p13.OFPInstructionActions(o13.OFPIT_CLEAR_ACTIONS, []), p13.OFPInstructionMeter(4),
                   p13.OFPInstructionWriteMetadata(0x10, 0xFF)])
    assert (d["command"], d["table_id"], d["out_port"], d["out_group"]) == (fc.DELETE_STRICT, 0xFF, 7, 3)
    assert d["match"] == {}
    assert d["instructions"] == [("clear",), ("meter", 4), ("write_metadata", 0x10, 0xFF)]


def test_flow_mod_13_vlan_actions_and_unknown_action_are_named():
    d = fm13(actions=[p13.OFPActionPushVlan(0x8100), p13.OFPActionSetField(vlan_vid=0x1000 | 5),
                      p13.OFPActionPopVlan(), p13.OFPActionDecNwTtl(), p13.OFPActionSetQueue(2),
                      p13.OFPActionCopyTtlOut()])
    assert d["instructions"] == [("apply", [("push_vlan", 0x8100), ("set_field", "vlan_vid", 0x1005), ("pop_vlan",),
                                            ("dec_nw_ttl",), ("set_queue", 2), ("other", 11)])]


def test_flow_mod_errors_name_the_fault():
    good = ryu_bytes(p13.OFPFlowMod(DP13, match=p13.OFPMatch(in_port=1),
                                    instructions=[p13.OFPInstructionActions(o13.OFPIT_APPLY_ACTIONS,
                                                                            [p13.OFPActionOutput(2)])]))
    with pytest.raises(fc.FlowModError, match="shorter than 56"):
        fc.decode_flow_mod(good[:40])
    bad = bytearray(good)
    bad[50:52] = (200).to_bytes(2, "big")      # match length beyond the message
    with pytest.raises(fc.FlowModError, match="match at byte 48 has length 200"):
        fc.decode_flow_mod(bytes(bad))
    bad = bytearray(good)
    bad[-14:-12] = (4).to_bytes(2, "big")      # the output action says 4 bytes
    with pytest.raises(fc.FlowModError, match="action at byte .* has length 4"):
        fc.decode_flow_mod(bytes(bad))
    with pytest.raises(fc.FlowModError, match="not FLOW_MOD"):
        fc.decode_flow_mod(codec.encode_echo_request(OFP13, 1))


# --------------------------------------------------------------------------- decoding (1.0)

def test_flow_mod_10_match_wildcards_and_actions():
    m = p10.OFPMatch(in_port=1, dl_src=bytes.fromhex("000000000001"), dl_type=0x0800, nw_proto=6,
                     nw_dst=ip("10.0.0.0"), nw_dst_mask=24, tp_dst=80, nw_tos=0x20)
    actions = [p10.OFPActionSetDlDst(bytes.fromhex("000000000002")), p10.OFPActionVlanVid(5),
               p10.OFPActionStripVlan(), p10.OFPActionEnqueue(3, 7), p10.OFPActionOutput(o10.OFPP_FLOOD)]
    d = fc.decode_flow_mod(ryu_bytes(p10.OFPFlowMod(DP10, match=m, cookie=7, command=o10.OFPFC_MODIFY,
                                                    idle_timeout=10, priority=300, flags=o10.OFPFF_SEND_FLOW_REM,
                                                    actions=actions)))
    assert (d["cookie"], d["command"], d["idle_timeout"], d["priority"], d["table_id"]) == (7, fc.MODIFY, 10, 300, 0)
    assert d["match"] == {"in_port": (1, 0xFFFFFFFF), "eth_src": (1, 0xFFFFFFFFFFFF), "eth_type": (0x0800, 0xFFFF),
                          "ip_proto": (6, 0xFF), "ipv4_dst": (ip("10.0.0.0"), 0xFFFFFF00), "tcp_dst": (80, 0xFFFF),
                          "ip_dscp": (8, 0x3F)}
    assert d["instructions"] == [("apply", [("set_field", "eth_dst", 2), ("set_field", "vlan_vid", 0x1005),
                                            ("pop_vlan",), ("set_queue", 7), ("output", 3, 0),
                                            ("output", codec.PORT_FLOOD, 0xFFE5)])]


def test_flow_mod_10_arp_fields_and_untagged_vlan():
    m = p10.OFPMatch(dl_type=0x0806, nw_proto=1, nw_src=ip("10.0.0.1"), dl_vlan=0xFFFF)
    d = fc.decode_flow_mod(ryu_bytes(p10.OFPFlowMod(DP10, match=m, actions=[p10.OFPActionOutput(2)])))
    assert d["match"] == {"eth_type": (0x0806, 0xFFFF), "arp_op": (1, 0xFFFF), "arp_spa": (ip("10.0.0.1"), 0xFFFFFFFF),
                          "vlan_vid": (0, 0x1FFF)}


# --------------------------------------------------------------------------- frames

def test_packet_fields_of_udp_tagged_and_arp_frames():
    f = ft.packet_fields(frame(payload=ipv4_udp(tos=0x21)), 3)
    assert f == {"in_port": 3, "eth_dst": 2, "eth_src": 1, "vlan_vid": 0, "eth_type": 0x0800, "ip_dscp": 8,
                 "ip_ecn": 1, "ip_proto": 17, "ipv4_src": ip("10.0.0.1"), "ipv4_dst": ip("10.0.0.2"),
                 "udp_src": 1000, "udp_dst": 2000, "tp_src": 1000, "tp_dst": 2000}
    tagged = frame(ethertype=0x8100, payload=bytes([0x60, 0x07]) + b"\x08\x06" + bytes(28))
    f = ft.packet_fields(tagged, 1)
    assert (f["vlan_vid"], f["vlan_pcp"], f["eth_type"], f["arp_op"]) == (0x1007, 3, 0x0806, 0)
    assert ft.packet_fields(b"\x00" * 10, 4) == {"in_port": 4}


# --------------------------------------------------------------------------- table semantics

def pipeline(version=OFP13, **kw):
    return ft.Pipeline(version, **kw)


def test_highest_priority_match_wins_and_counters_count():
    p = pipeline()
    p.flow_mod(fm13(priority=0, actions=[p13.OFPActionOutput(o13.OFPP_CONTROLLER, 0xFFFF)]), 0)
    p.flow_mod(fm13(priority=1, match=p13.OFPMatch(eth_dst=MAC2), actions=[p13.OFPActionOutput(2)]), 0)
    p.flow_mod(fm13(priority=5, match=p13.OFPMatch(in_port=1, eth_dst=MAC2), actions=[p13.OFPActionOutput(3)]), 0)
    fr = frame(payload=ipv4_udp())
    assert [o[:2] for o in p.process(fr, 1, 10)] == [(3, 0xFFE5)]
    assert [o[:2] for o in p.process(fr, 4, 10)] == [(2, 0xFFE5)]
    out = p.process(frame(dst=MAC1), 4, 10)
    assert [(o[0], o[3]) for o in out] == [(codec.PORT_CONTROLLER, 0)]     # table-miss entry: NO_MATCH
    counts = sorted((e.priority, e.packet_count, e.byte_count) for e in p.entries())
    assert counts == [(0, 1, 14), (1, 1, len(fr)), (5, 1, len(fr))]


def test_miss_policies():
    fr = frame()
    assert [(o[0], o[3]) for o in pipeline(miss="controller").process(fr, 1, 0)] == [(codec.PORT_CONTROLLER, 0)]
    assert pipeline(miss="drop").process(fr, 1, 0) == []
    assert pipeline(miss="table").process(fr, 1, 0) == []
    with pytest.raises(ValueError, match="table-miss policy 'flood'"):
        pipeline(miss="flood")


def test_add_replaces_same_match_and_priority_and_resets_counters():
    p = pipeline()
    p.flow_mod(fm13(match=p13.OFPMatch(eth_dst=MAC2), actions=[p13.OFPActionOutput(2)]), 0)
    p.process(frame(), 1, 5)
    p.flow_mod(fm13(match=p13.OFPMatch(eth_dst=MAC2), actions=[p13.OFPActionOutput(7)]), 6)
    (e,) = list(p.entries())
    assert e.packet_count == 0 and e.instructions == [("apply", [("output", 7, 0xFFE5)])] and p.count == 1


def test_check_overlap_and_table_full_and_bad_table():
    p = pipeline(capacity=2)
    p.flow_mod(fm13(match=p13.OFPMatch(eth_dst=MAC2)), 0)
    with pytest.raises(ft.FlowModFailed, match="OVERLAP"):
        p.flow_mod(fm13(match=p13.OFPMatch(in_port=1), flags=o13.OFPFF_CHECK_OVERLAP), 0)
    p.flow_mod(fm13(match=p13.OFPMatch(eth_dst=MAC1), flags=o13.OFPFF_CHECK_OVERLAP), 0)   # disjoint: fine
    with pytest.raises(ft.FlowModFailed, match="TABLE_FULL: table 0 holds 2 entries"):
        p.flow_mod(fm13(match=p13.OFPMatch(in_port=9)), 0)
    assert p.count == 2
    with pytest.raises(ft.FlowModFailed, match="BAD_TABLE_ID"):
        pipeline(OFP10).flow_mod({**fm13(), "table_id": 3}, 0)


def test_modify_strict_and_non_strict_and_the_versions_on_no_match():
    p = pipeline()
    p.flow_mod(fm13(priority=5, match=p13.OFPMatch(in_port=1, eth_dst=MAC2)), 0)
    p.flow_mod(fm13(priority=6, match=p13.OFPMatch(in_port=2, eth_dst=MAC2)), 0)
    res = p.flow_mod(fm13(command=o13.OFPFC_MODIFY, match=p13.OFPMatch(eth_dst=MAC2),
                          actions=[p13.OFPActionOutput(9)]), 0)
    assert len(res["modified"]) == 2
    res = p.flow_mod(fm13(command=o13.OFPFC_MODIFY_STRICT, priority=6, match=p13.OFPMatch(in_port=2, eth_dst=MAC2),
                          actions=[p13.OFPActionOutput(4)]), 0)
    assert [e.priority for e in res["modified"]] == [6]
    assert p.flow_mod(fm13(command=o13.OFPFC_MODIFY, match=p13.OFPMatch(in_port=3)), 0) == {"modified": []}
    assert p.count == 2                          # 1.3: a MODIFY that matches nothing adds nothing
    p10_ = pipeline(OFP10)
    d = fc.decode_flow_mod(ryu_bytes(p10.OFPFlowMod(DP10, match=p10.OFPMatch(in_port=1), command=o10.OFPFC_MODIFY,
                                                    actions=[p10.OFPActionOutput(2)])))
    assert "added" in p10_.flow_mod(d, 0) and p10_.count == 1      # 1.0: it adds


def test_delete_filters_by_match_out_port_and_cookie_and_reports_flow_removed():
    p = pipeline()
    p.flow_mod(fm13(match=p13.OFPMatch(in_port=1, eth_dst=MAC2), actions=[p13.OFPActionOutput(2)], cookie=0x11,
                    flags=o13.OFPFF_SEND_FLOW_REM), 0)
    p.flow_mod(fm13(match=p13.OFPMatch(in_port=2, eth_dst=MAC2), actions=[p13.OFPActionOutput(3)], cookie=0x21), 0)
    p.flow_mod(fm13(match=p13.OFPMatch(in_port=3), actions=[p13.OFPActionOutput(2)], cookie=0x12), 0)
    delete = dict(command=o13.OFPFC_DELETE, table_id=o13.OFPTT_ALL, out_group=o13.OFPG_ANY)
    assert p.flow_mod(fm13(match=p13.OFPMatch(eth_dst=MAC2), out_port=3, **delete), 0)["removed"][0].cookie == 0x21
    masked = fm13(out_port=o13.OFPP_ANY, cookie=0x02, cookie_mask=0x0F, **delete)
    assert p.flow_mod(masked, 0)["removed"][0].cookie == 0x12
    assert p.removed_pending == []
    (gone,) = p.flow_mod(fm13(out_port=o13.OFPP_ANY, **delete), 0)["removed"]
    assert p.count == 0 and p.removed_pending == [(gone, fc.RR_DELETE)]


def test_timeouts_expire_entries_idle_from_the_last_hit():
    p = pipeline()
    s = 1_000_000_000
    p.flow_mod(fm13(match=p13.OFPMatch(eth_dst=MAC2), idle_timeout=2, flags=o13.OFPFF_SEND_FLOW_REM), 0)
    p.flow_mod(fm13(match=p13.OFPMatch(eth_dst=MAC1), hard_timeout=3), 0)
    p.process(frame(), 1, 1 * s)                 # hits the idle entry at 1 s
    assert p.expire(2 * s) == []
    assert [(e.match["eth_dst"][0], r) for e, r in p.expire(3 * s)] == [(2, fc.RR_IDLE_TIMEOUT),
                                                                        (1, fc.RR_HARD_TIMEOUT)]
    assert p.count == 0 and len(p.removed_pending) == 1


def test_goto_table_write_actions_and_rewrites():
    p = pipeline()
    p.flow_mod(fm13(table_id=0, inst=[p13.OFPInstructionActions(o13.OFPIT_WRITE_ACTIONS, [p13.OFPActionOutput(5)]),
                                      p13.OFPInstructionGotoTable(1)]), 0)
    p.flow_mod(fm13(table_id=1, inst=[p13.OFPInstructionActions(o13.OFPIT_APPLY_ACTIONS,
                                                                [p13.OFPActionSetField(eth_src="00:00:00:00:00:09"),
                                                                 p13.OFPActionOutput(6)]),
                                      p13.OFPInstructionActions(o13.OFPIT_WRITE_ACTIONS,
                                                                [p13.OFPActionOutput(7)])]), 0)
    out = p.process(frame(), 1, 0)
    assert [o[0] for o in out] == [6, 7]          # apply now; the action set's output (7 replaced 5) at the end
    assert out[0][2][6:12] == bytes.fromhex("000000000009") and out[1][2][6:12] == bytes.fromhex("000000000009")


def test_lookup_probes_groups_not_entries():
    p = pipeline()
    for i in range(5000):
        p.flow_mod(fm13(priority=1, match=p13.OFPMatch(eth_dst=f"00:00:00:00:{i >> 8:02x}:{i & 0xFF:02x}"),
                        actions=[p13.OFPActionOutput(2)]), 0)
    t = p.tables[0]
    assert p.count == 5000 and len(t.groups) == 1
    assert p.process(frame(dst="00:00:00:00:13:87"), 1, 0)[0][0] == 2


# --------------------------------------------------------------------------- replies, read back by Ryu

def test_flow_removed_and_flow_stats_parse_in_ryu():
    for version, make in ((OFP13, lambda: fm13(match=p13.OFPMatch(in_port=1, eth_dst=MAC2), cookie=5, priority=9,
                                                   idle_timeout=4, hard_timeout=8)),
                          (OFP10, lambda: fc.decode_flow_mod(ryu_bytes(p10.OFPFlowMod(
                              DP10, match=p10.OFPMatch(in_port=1, dl_dst=bytes.fromhex("000000000002")), cookie=5,
                              priority=9, idle_timeout=4, hard_timeout=8, actions=[p10.OFPActionOutput(2)]))))):
        p = pipeline(version)
        (e,) = p.flow_mod(make(), 0)["added"]
        e.packet_count, e.byte_count = 3, 300
        msg = ryu_parse(fc.encode_flow_removed(version, 77, e, fc.RR_IDLE_TIMEOUT, 2_500_000_000))
        assert (msg.cookie, msg.priority, msg.reason, msg.duration_sec, msg.duration_nsec) == (5, 9, 0, 2, 500_000_000)
        assert (msg.packet_count, msg.byte_count, msg.idle_timeout) == (3, 300, 4)
        (reply,) = fc.encode_flow_stats_replies(version, 78, fc.encode_flow_stats(version, [e], 1_000_000_000))
        stats = ryu_parse(reply).body
        assert len(stats) == 1 and (stats[0].priority, stats[0].cookie, stats[0].packet_count) == (9, 5, 3)
        assert (stats[0].duration_sec, stats[0].hard_timeout) == (1, 8)


def test_flow_stats_replies_split_past_64k():
    p = pipeline()
    for i in range(1000):
        p.flow_mod(fm13(match=p13.OFPMatch(in_port=1, eth_dst=f"00:00:00:00:{i >> 8:02x}:{i & 0xFF:02x}")), 0)
    parts = fc.encode_flow_stats_replies(OFP13, 1, fc.encode_flow_stats(OFP13, p.entries(), 0))
    assert len(parts) == 2 and all(len(x) <= codec.MAX_MESSAGE_LEN for x in parts)
    got = [ryu_parse(x) for x in parts]
    assert got[0].flags & 1 and not got[1].flags & 1
    assert sum(len(m.body) for m in got) == 1000


def test_flow_stats_request_filter_decodes():
    req = ryu_bytes(p13.OFPFlowStatsRequest(DP13, table_id=0, out_port=3, match=p13.OFPMatch(eth_dst=MAC2)))
    f = fc.decode_flow_stats_request(req)
    assert (f["table_id"], f["out_port"], f["match"]) == (0, 3, {"eth_dst": (2, 0xFFFFFFFFFFFF)})
    req = ryu_bytes(p10.OFPFlowStatsRequest(DP10, 0, p10.OFPMatch(in_port=2), 0xFF, o10.OFPP_NONE))
    f = fc.decode_flow_stats_request(req)
    assert (f["table_id"], f["out_port"], f["match"]) == (0xFF, fc.PORT_ANY, {"in_port": (2, 0xFFFFFFFF)})


def test_selfbench_flowtable_measures_both_decoders_and_each_table_size(capsys, tmp_path):
    import json

    from fixtures import selfbench
    out = tmp_path / "f.json"
    assert selfbench.main(["flowtable", "--entries", "0,10", "--frames", "50", "--decode-count", "20",
                           "--out", str(out)]) == 0
    figures = json.loads(out.read_text())
    assert figures["decode_per_s"]["emulator"] > 0 and figures["decode_per_s"]["ryu_parser"] > 0
    assert [(r["entries"], r["installed"]) for r in figures["tables"]] == [(0, 0), (10, 10)]
    assert figures["tables"][0]["frames_matched_per_s"] is None and figures["tables"][1]["frames_matched_per_s"] > 0
    with pytest.raises(SystemExit):
        selfbench.main(["flowtable", "--entries", "ten"])
    assert "'ten' is not a comma list of whole numbers" in capsys.readouterr().err


def test_our_flow_mod_encoder_round_trips_and_ryu_reads_it():
    raw = fc.encode_flow_mod_13(5, {"in_port": 1, "eth_dst": mac(MAC2), "ipv4_dst": (ip("10.0.0.0"), 0xFFFFFF00),
                                    "eth_type": 0x0800, "vlan_vid": 0x1003},
                                out_ports=(3, codec.PORT_CONTROLLER), priority=7, idle_timeout=9)
    d = fc.decode_flow_mod(raw)
    assert d["match"] == {"in_port": (1, 0xFFFFFFFF), "eth_dst": (2, 0xFFFFFFFFFFFF), "eth_type": (0x0800, 0xFFFF),
                          "ipv4_dst": (ip("10.0.0.0"), 0xFFFFFF00), "vlan_vid": (0x1003, 0x1FFF)}
    assert d["instructions"] == [("apply", [("output", 3, 0xFFFF), ("output", codec.PORT_CONTROLLER, 0xFFFF)])]
    assert (d["priority"], d["idle_timeout"]) == (7, 9)
    msg = ryu_parse(raw)
    assert dict(msg.match.items())["ipv4_dst"] == ("10.0.0.0", "255.255.255.0")
    assert [a.port for a in msg.instructions[0].actions] == [3, o13.OFPP_CONTROLLER] and msg.priority == 7
    with pytest.raises(ValueError, match="unknown match field 'dl_dst'"):
        fc.encode_oxm_match({"dl_dst": 1})
