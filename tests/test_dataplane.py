"""The fabric's data plane: FLOW_MODs fill the switches' tables and frames move hop by hop by them
(StringTransport and task.Clock, no sockets; FLOW_MODs encoded by Ryu)."""

import itertools

import pytest
from twisted.internet.task import Clock

from emulator import codec
from emulator import flowcodec as fc
from emulator import topology as tp
from emulator.codec import OFP10, OFP13
from emulator.fabric import MAX_HOPS, Fabric
from emulator.params import FabricParams

pytest.importorskip("ryu.ofproto.ofproto_parser", reason="Ryu is installed by tox (see tox.ini)")
from ryu.ofproto import ofproto_v1_0 as o10  # noqa: E402
from ryu.ofproto import ofproto_v1_0_parser as p10  # noqa: E402
from ryu.ofproto import ofproto_v1_3 as o13  # noqa: E402
from ryu.ofproto import ofproto_v1_3_parser as p13  # noqa: E402
from ryu.ofproto.ofproto_protocol import ProtocolDesc  # noqa: E402

LLDP = bytes.fromhex("0180c200000e" "020000000201" "88cc") + bytes(14)


def build(topo, version=OFP13, **kw):
    ticks = itertools.count(1_000_000, 1000)
    received = []
    clock = Clock()
    fabric = Fabric(topo, versions=(version,), now_ns=lambda: next(ticks), clock=clock,
                    params=FabricParams(host_refresh=0, host_delay=0, data_plane=True, **kw))
    fabric.host_receive = lambda host, frame, t: received.append((host.at.dpid, frame))
    return fabric, {dpid: fabric.open_in_memory(dpid, clock) for dpid in topo.switches}, received, clock


def send(sw, msg) -> None:
    msg.serialize()
    sw[0].dataReceived(bytes(msg.buf))


def replies(tr):
    frames, rest = codec.split_frames(tr.value())
    assert rest == b""
    tr.clear()
    return frames


def flow13(dpid_sw, priority=1, actions=(), **match):
    dp = ProtocolDesc(OFP13)
    send(dpid_sw, p13.OFPFlowMod(dp, priority=priority, match=p13.OFPMatch(**match),
                                 instructions=[p13.OFPInstructionActions(o13.OFPIT_APPLY_ACTIONS, list(actions))]))


def frame_between(src_host, dst_host, payload=b"\x00" * 46):
    return dst_host.mac + src_host.mac + b"\x08\x00" + payload


def test_frame_follows_installed_flows_across_three_switches_to_the_host():
    topo = tp.linear(3)
    fabric, sw, received, _ = build(topo)
    h1, h3 = topo.host_at(1, 2), topo.host_at(3, 2)
    dst = ":".join(f"{b:02x}" for b in h3.mac)
    flow13(sw[1], eth_dst=dst, actions=[p13.OFPActionOutput(1)])
    flow13(sw[2], eth_dst=dst, actions=[p13.OFPActionOutput(2)])
    flow13(sw[3], eth_dst=dst, actions=[p13.OFPActionOutput(2)])
    fabric.host_send(h1, frame_between(h1, h3))
    assert received == [(3, frame_between(h1, h3))]
    assert fabric.frames_forwarded == 2 and fabric.frames_to_hosts == 1 and fabric.flow_mods == 3
    assert all(replies(sw[d][1]) == [] for d in (1, 2, 3))      # no PACKET_IN, no error
    assert {d: len(t) for d, t in fabric.flow_mod_times.items()} == {1: 1, 2: 1, 3: 1}


@pytest.mark.parametrize("miss", ["controller", "drop", "table"])
def test_table_miss_policies(miss):
    topo = tp.linear(2)
    fabric, sw, received, _ = build(topo, table_miss=miss)
    h1, h2 = topo.host_at(1, 2), topo.host_at(2, 2)
    fabric.host_send(h1, frame_between(h1, h2))
    pins = [codec.packet_in_fields(f) for f in replies(sw[1][1]) if f[1] == codec.PACKET_IN]
    if miss == "controller":
        assert [(p["in_port"], p["reason"], p["data"][:6]) for p in pins] == [(2, 0, h2.mac)]
        assert fabric.packet_ins_data == 1
    else:
        assert pins == []
    assert received == []


def test_table_miss_entry_sends_up_with_no_match_and_controller_action_with_action_reason():
    topo = tp.linear(2)
    fabric, sw, _, _ = build(topo, table_miss="table")
    h1, h2 = topo.host_at(1, 2), topo.host_at(2, 2)
    flow13(sw[1], priority=0, actions=[p13.OFPActionOutput(o13.OFPP_CONTROLLER, o13.OFPCML_NO_BUFFER)])
    flow13(sw[1], priority=5, eth_type=0x0800, actions=[p13.OFPActionOutput(o13.OFPP_CONTROLLER, 128)])
    fabric.host_send(h1, frame_between(h1, h2))
    fabric.host_send(h1, h2.mac + h1.mac + b"\x08\x06" + bytes(28))
    pins = [codec.packet_in_fields(f) for f in replies(sw[1][1]) if f[1] == codec.PACKET_IN]
    assert [p["reason"] for p in pins] == [1, 0]


def test_packet_out_of_a_data_frame_crosses_the_link_and_lldp_goes_by_the_peer_table():
    topo = tp.linear(2)
    fabric, sw, received, _ = build(topo, table_miss="table")
    h1, h2 = topo.host_at(1, 2), topo.host_at(2, 2)
    flow13(sw[2], eth_dst=":".join(f"{b:02x}" for b in h2.mac), actions=[p13.OFPActionOutput(2)])
    flow13(sw[2], priority=65535, eth_type=0x88CC, actions=[p13.OFPActionOutput(o13.OFPP_CONTROLLER)])
    fr = frame_between(h1, h2)
    sw[1][0].dataReceived(codec.encode_packet_out(OFP13, 9, codec.NO_BUFFER, 0xFFFFFFFD, 1, fr))
    assert received == [(2, fr)]
    sw[1][0].dataReceived(codec.encode_packet_out(OFP13, 10, codec.NO_BUFFER, 0xFFFFFFFD, 1, LLDP))
    (pin,) = [codec.packet_in_fields(f) for f in replies(sw[2][1]) if f[1] == codec.PACKET_IN]
    assert pin["data"] == LLDP and pin["in_port"] == 1 and pin["reason"] == 1
    assert fabric.relayed == 1 and fabric.first_in == {tp.Endpoint(2, 1): fabric.t_last_relayed_in}


def test_packet_out_to_table_runs_the_switch_pipeline():
    topo = tp.linear(2)
    fabric, sw, received, _ = build(topo, table_miss="drop")
    h1, h2 = topo.host_at(1, 2), topo.host_at(2, 2)
    flow13(sw[1], in_port=2, actions=[p13.OFPActionOutput(1)])
    flow13(sw[2], in_port=1, actions=[p13.OFPActionOutput(2)])
    fr = frame_between(h1, h2)
    sw[1][0].dataReceived(codec.encode_packet_out(OFP13, 9, codec.NO_BUFFER, 2, 0xFFFFFFF9, fr))    # OFPP_TABLE
    assert received == [(2, fr)]


def test_flood_on_a_cyclic_topology_is_a_bounded_storm():
    topo = tp.leaf_spine(2, 2)
    fabric, sw, received, _ = build(topo, table_miss="drop")
    for dpid in topo.switches:
        flow13(sw[dpid], actions=[p13.OFPActionOutput(o13.OFPP_FLOOD)])
    h3, h4 = topo.hosts
    fabric.host_send(h3, b"\xff" * 6 + h3.mac + b"\x08\x06" + bytes(28))
    assert fabric.storm_drops > 0 and received          # it loops, is cut, and reached the other host
    assert fabric.frames_forwarded <= 4096


def test_flow_mod_errors_and_flow_stats_and_flow_removed_on_timeout():
    topo = tp.linear(2)
    fabric, sw, _, clock = build(topo, table_capacity=1)
    dp = ProtocolDesc(OFP13)
    flow13(sw[1], in_port=1, actions=[p13.OFPActionOutput(2)])
    flow13(sw[1], in_port=2, actions=[p13.OFPActionOutput(1)])                  # table full
    (err,) = replies(sw[1][1])
    assert err[1] == codec.ERROR and codec.decode(err).fields["err_type"] == 5
    assert codec.decode(err).fields["code"] == 1 and fabric.flow_mods_failed == 1
    send(sw[1], p13.OFPFlowStatsRequest(dp, table_id=o13.OFPTT_ALL, out_port=o13.OFPP_ANY, out_group=o13.OFPG_ANY))
    (reply,) = replies(sw[1][1])
    # head, flow_stats, match, instructions
    assert codec.decode(reply).name == "stats_reply" and len(reply) == 16 + 48 + 16 + 24
    send(sw[2], p13.OFPFlowMod(dp, priority=3, idle_timeout=2, flags=o13.OFPFF_SEND_FLOW_REM,
                               match=p13.OFPMatch(in_port=1), instructions=[]))
    clock.advance(1.0)
    assert replies(sw[2][1]) == []
    fabric.now_ns = lambda: 10_000_000_000
    clock.advance(1.0)
    (removed,) = replies(sw[2][1])
    assert removed[1] == codec.FLOW_REMOVED and fabric.flow_removed_sent == 1
    fabric.stop()
    assert not clock.getDelayedCalls()


def test_openflow_10_flows_forward_too():
    topo = tp.linear(2)
    fabric, sw, received, _ = build(topo, version=OFP10, table_miss="drop")
    dp = ProtocolDesc(OFP10)
    for dpid, out in ((1, 1), (2, 2)):
        send(sw[dpid], p10.OFPFlowMod(dp, match=p10.OFPMatch(dl_type=0x0800), command=o10.OFPFC_ADD,
                                      actions=[p10.OFPActionOutput(out)]))
    h1, h2 = topo.host_at(1, 2), topo.host_at(2, 2)
    fabric.host_send(h1, frame_between(h1, h2))
    assert received == [(2, frame_between(h1, h2))]


def test_a_bad_flow_mod_is_answered_with_an_error_naming_bad_len():
    topo = tp.linear(1)
    fabric, sw, _, _ = build(topo)
    bad = codec.header(OFP13, codec.FLOW_MOD, 24, 5) + bytes(16)
    sw[1][0].dataReceived(bad)
    (err,) = replies(sw[1][1])
    assert codec.decode(err).fields["err_type"] == codec.OFPET_BAD_REQUEST
    assert codec.decode(err).fields["code"] == codec.OFPBRC_BAD_LEN and fabric.flow_mods == 0


def test_a_fabric_without_a_data_plane_ignores_flow_mods():
    topo = tp.linear(2)
    fabric = Fabric(topo, versions=(OFP13,))
    s, tr = fabric.open_in_memory(1, Clock())
    flow13((s, tr), actions=[p13.OFPActionOutput(1)])
    assert tr.value() == b"" and s.pipeline is None and fabric.flow_mods == 0
    assert MAX_HOPS > 2 and fc.ADD == 0
    with pytest.raises(ValueError, match="fabric table miss must be one of controller, drop, table \\(got 'flood'\\)"):
        Fabric(topo, params=FabricParams(host_refresh=0, data_plane=True, table_miss="flood"))


def test_selfbench_dataplane_forwards_every_frame_through_the_path(tmp_path):
    import json

    from fixtures import selfbench
    out = tmp_path / "d.json"
    assert selfbench.main(["dataplane", "--hops", "3", "--flows", "5", "--frames", "50", "--out", str(out)]) == 0
    figures = json.loads(out.read_text())
    assert figures["delivered"] == 50 and figures["entries_per_switch"] == 5 and figures["frames_per_s"] > 0
    with pytest.raises(SystemExit):
        selfbench.main(["dataplane", "--hops", "0"])
