"""What a multi-table OpenFlow 1.3 controller (Faucet) needs of the data plane: PACKET_INs that name the flow
entry that sent them (cookie, table id, reason ACTION), VLAN push / set-field / pop across goto-table, the
metadata register, and the connect-time conversation (SET_CONFIG, SET_ASYNC, DESC, DELETE of every table,
PORT_DESC) answered without an error.  FLOW_MODs are encoded by Ryu, whose OpenFlow 1.3 encoder os-ken (Faucet's)
shares; StringTransport and task.Clock, no sockets."""

import itertools

import pytest
from twisted.internet.task import Clock

from emulator import codec
from emulator import flowcodec as fc
from emulator import flowtable as ft
from emulator import topology as tp
from emulator.codec import OFP13
from emulator.fabric import Fabric
from emulator.params import FabricParams

pytest.importorskip("ryu.ofproto.ofproto_parser", reason="Ryu is installed by tox (see tox.ini)")
from ryu.ofproto import ofproto_v1_3 as o13  # noqa: E402
from ryu.ofproto import ofproto_v1_3_parser as p13  # noqa: E402
from ryu.ofproto.ofproto_protocol import ProtocolDesc  # noqa: E402

DP = ProtocolDesc(OFP13)
COOKIE = 1524372928                 # Faucet's default dp cookie (faucet/dp.py)
VID = 100
TAGGED = o13.OFPVID_PRESENT | VID
H1, H2, H3 = "0e:00:00:00:00:01", "0e:00:00:00:00:02", "0e:00:00:00:00:03"


def raw(msg) -> bytes:
    msg.serialize()
    return bytes(msg.buf)


def mac(text: str) -> bytes:
    return bytes.fromhex(text.replace(":", ""))


def frame(src: str, dst: str, payload: bytes = bytes(46)) -> bytes:
    return mac(dst) + mac(src) + b"\x08\x00" + payload


def apply(*actions):
    return p13.OFPInstructionActions(o13.OFPIT_APPLY_ACTIONS, list(actions))


def goto(table):
    return p13.OFPInstructionGotoTable(table)


def flow_mod(table_id=0, priority=1, inst=(), cookie=COOKIE, **match):
    return p13.OFPFlowMod(DP, cookie=cookie, table_id=table_id, priority=priority, match=p13.OFPMatch(**match),
                          instructions=list(inst))


def faucet_like_pipeline(ports=(1, 2, 3)) -> list:
    """Faucet's four tables for one VLAN of untagged ports, as it installs them on an "Open vSwitch" dp: vlan
    (push the tag), eth_src (learn: copy to the controller, go on), eth_dst (known hosts), flood; table-miss
    entries drop or go to the next table."""
    out = [flow_mod(t, 0, () if t in (0, 3) else (goto(t + 1),)) for t in range(4)]
    for p in ports:
        out.append(flow_mod(0, 9000, (apply(p13.OFPActionPushVlan(0x8100), p13.OFPActionSetField(vlan_vid=TAGGED)),
                                      goto(1)), in_port=p, vlan_vid=o13.OFPVID_NONE))
        out.append(flow_mod(3, 9000, (apply(p13.OFPActionPopVlan(),
                                            *[p13.OFPActionOutput(q) for q in ports if q != p]),),
                            in_port=p, vlan_vid=TAGGED))
    out.append(flow_mod(1, 9000, (apply(p13.OFPActionOutput(o13.OFPP_CONTROLLER, 96)), goto(2)), vlan_vid=TAGGED))
    return out


def learned(port: int, host: str) -> list:
    """What Faucet installs for a host it learned at ``port``."""
    return [flow_mod(1, 9099, (goto(2),), in_port=port, vlan_vid=TAGGED, eth_src=host),
            flow_mod(2, 9099, (apply(p13.OFPActionPopVlan(), p13.OFPActionOutput(port)),), vlan_vid=TAGGED,
                     eth_dst=host)]


# --------------------------------------------------------------------------- the tables alone

def pipeline_with(msgs) -> ft.Pipeline:
    p = ft.Pipeline(OFP13, miss="table")
    for m in msgs:
        p.flow_mod(fc.decode_flow_mod(raw(m)), 0)
    return p


def test_a_packet_in_names_the_entry_and_table_whose_apply_actions_sent_it():
    p = pipeline_with(faucet_like_pipeline())
    out = p.process(frame(H1, H2), 1, 0)
    up = [o for o in out if o[0] == codec.PORT_CONTROLLER]
    assert len(up) == 1
    port, max_len, data, reason, table_id, cookie = up[0]
    assert (max_len, reason, table_id, cookie) == (96, 1, 1, COOKIE)       # reason ACTION, eth_src table
    assert data[12:16] == bytes.fromhex("8100") + VID.to_bytes(2, "big")           # tagged by the vlan table
    # ... and the frame went on through eth_dst's miss to the flood table, untagged, to the other ports
    assert [(o[0], o[2]) for o in out if o[0] != codec.PORT_CONTROLLER] == [(2, frame(H1, H2)), (3, frame(H1, H2))]


def test_a_learned_host_is_forwarded_untagged_without_a_packet_in():
    p = pipeline_with(faucet_like_pipeline() + learned(1, H1) + learned(2, H2))
    assert p.process(frame(H1, H2), 1, 0) == [(2, 0xFFE5, frame(H1, H2), 1, 2, COOKIE)]


def test_a_table_miss_entry_sends_no_match_with_its_own_cookie_and_table():
    p = pipeline_with([flow_mod(0, 0, (goto(4),), cookie=7),
                       flow_mod(4, 0, (apply(p13.OFPActionOutput(o13.OFPP_CONTROLLER, 0xFFFF)),), cookie=9)])
    assert [o[3:] for o in p.process(frame(H1, H2), 1, 0)] == [(0, 4, 9)]


def test_what_no_single_entry_sent_carries_no_cookie():
    p = ft.Pipeline(OFP13, miss="controller")
    p.flow_mod(fc.decode_flow_mod(raw(flow_mod(0, 5, (goto(2),), in_port=1))), 0)
    assert [o[3:] for o in p.process(frame(H1, H2), 1, 0)] == [(0, 2, ft.NO_COOKIE)]   # missed in table 2
    p = pipeline_with([flow_mod(0, 5, (p13.OFPInstructionActions(o13.OFPIT_WRITE_ACTIONS,
                                                                 [p13.OFPActionOutput(o13.OFPP_CONTROLLER)]),
                                       goto(1))),
                       flow_mod(1, 5, ())])
    assert [o[3:] for o in p.process(frame(H1, H2), 1, 0)] == [(1, 1, ft.NO_COOKIE)]    # the action set's


def test_write_metadata_sets_the_register_that_later_tables_match():
    p = pipeline_with([
        flow_mod(0, 5, (p13.OFPInstructionWriteMetadata(0x0A00, 0xFF00), goto(1)), in_port=1),
        flow_mod(0, 5, (p13.OFPInstructionWriteMetadata(0x0B00, 0xFF00), goto(1)), in_port=2),
        flow_mod(0, 1, (goto(1),)),
        flow_mod(1, 5, (apply(p13.OFPActionOutput(7)),), metadata=(0x0A00, 0xFF00)),
        flow_mod(1, 4, (apply(p13.OFPActionOutput(8)),), metadata=0),
        flow_mod(1, 3, (apply(p13.OFPActionOutput(9)),)),
    ])
    assert [o[0] for o in p.process(frame(H1, H2), 1, 0)] == [7]
    assert [o[0] for o in p.process(frame(H1, H2), 2, 0)] == [9]
    assert [o[0] for o in p.process(frame(H1, H2), 3, 0)] == [8]          # the register starts at 0


def test_push_vlan_copies_the_tag_it_covers_and_pop_vlan_uncovers_it():
    inner = frame(H1, H2)[:12] + bytes.fromhex("8100") + (0x2000 | 42).to_bytes(2, "big") + b"\x08\x00" + bytes(46)
    p = pipeline_with([
        flow_mod(0, 5, (apply(p13.OFPActionPushVlan(0x8100)), goto(1)), in_port=1),
        flow_mod(1, 5, (apply(p13.OFPActionOutput(3)),), vlan_vid=o13.OFPVID_PRESENT | 42),
        flow_mod(0, 5, (apply(p13.OFPActionPopVlan()), goto(2)), in_port=2),
        flow_mod(2, 5, (apply(p13.OFPActionOutput(4)),), vlan_vid=o13.OFPVID_PRESENT | 42),
    ])
    ((port, _, out, *_),) = p.process(inner, 1, 0)
    assert port == 3 and out[12:20] == bytes.fromhex("8100") + (0x2000 | 42).to_bytes(2, "big") + inner[12:16]
    ((port, _, out, *_),) = p.process(out, 2, 0)
    assert port == 4 and out == inner


# --------------------------------------------------------------------------- through a switch session

def one_switch(ports=3):
    topo = tp.linear(1, hosts_per_switch=ports)
    ticks = itertools.count(1_000_000, 1000)
    received = []
    clock = Clock()
    fabric = Fabric(topo, now_ns=lambda: next(ticks), clock=clock,
                    params=FabricParams(host_refresh=0, host_delay=0, data_plane=True, table_miss="table"))
    fabric.host_receive = lambda host, data, t: received.append((host.at.port, data))
    session, transport = fabric.open_in_memory(1, clock)
    return topo, fabric, session, transport, received


def messages(transport):
    frames, rest = codec.split_frames(transport.value())
    assert rest == b""
    transport.clear()
    return frames


def faucet_connects(session):
    """What Faucet sends when a switch connects (valve.switch_features, then os-ken's PORT_DESC request), with its
    SET_ASYNC that wants PACKET_IN for ACTION and INVALID_TTL only."""
    off = p13.OFPSetAsync(DP, [0, 0], [0, 0], [0, 0])
    for m in (p13.OFPSetConfig(DP, o13.OFPC_FRAG_NORMAL, 0), off, p13.OFPDescStatsRequest(DP, 0),
              p13.OFPFlowMod(DP, command=o13.OFPFC_DELETE, table_id=o13.OFPTT_ALL, out_port=o13.OFPP_ANY,
                             out_group=o13.OFPG_ANY, match=p13.OFPMatch()),
              p13.OFPPortDescStatsRequest(DP, 0)):
        session.dataReceived(raw(m))
    wanted = 1 << o13.OFPR_ACTION | 1 << o13.OFPR_INVALID_TTL
    ports = 1 << o13.OFPPR_ADD | 1 << o13.OFPPR_DELETE | 1 << o13.OFPPR_MODIFY
    session.dataReceived(raw(p13.OFPSetAsync(DP, [wanted, wanted], [ports, ports], [0, 0])))


def test_faucets_connect_conversation_is_answered_without_an_error():
    topo, fabric, session, transport, _ = one_switch()
    faucet_connects(session)
    replies = [codec.decode(f) for f in messages(transport)]
    assert [(m.name, m.fields.get("stats_type")) for m in replies] == [("stats_reply", codec.MP_DESC),
                                                                     ("stats_reply", codec.MP_PORT_DESC)]
    assert session.counters.errors_sent == 0


def test_the_packet_in_faucet_keeps_carries_its_cookie_and_the_learned_frame_is_forwarded():
    topo, fabric, session, transport, received = one_switch()
    faucet_connects(session)
    messages(transport)
    for m in faucet_like_pipeline():
        session.dataReceived(raw(m))
    assert fabric.flow_mods == 1 + len(faucet_like_pipeline())       # the DELETE of every table, then the tables
    fabric.send_at(tp.Endpoint(1, 1), frame(H1, H2))
    (pin,) = [codec.packet_in_fields(f) for f in messages(transport)]
    assert (pin["reason"], pin["table_id"], pin["cookie"], pin["in_port"]) == (1, 1, COOKIE, 1)
    assert pin["data"][12:16] == bytes.fromhex("8100") + VID.to_bytes(2, "big")     # tagged, as Faucet reads VLANs
    assert received == [(2, frame(H1, H2)), (3, frame(H1, H2))]                         # flooded, untagged
    for m in learned(1, H1) + learned(2, H2):
        session.dataReceived(raw(m))
    received.clear()
    fabric.send_at(tp.Endpoint(1, 2), frame(H2, H1))
    assert received == [(1, frame(H2, H1))] and messages(transport) == []
    assert session.counters.errors_sent == 0


def test_a_no_match_packet_in_is_not_sent_to_a_controller_that_asked_for_action_only():
    topo, fabric, session, transport, _ = one_switch()
    faucet_connects(session)
    messages(transport)
    session.dataReceived(raw(flow_mod(0, 0, (apply(p13.OFPActionOutput(o13.OFPP_CONTROLLER, 0xFFFF)),), cookie=3)))
    fabric.send_at(tp.Endpoint(1, 1), frame(H1, H2))
    assert messages(transport) == [] and fabric.packet_ins_unwanted == 1


def test_a_ryu_style_table_miss_entry_still_gives_no_match_with_cookie_and_table_zero():
    topo, fabric, session, transport, _ = one_switch()
    session.dataReceived(raw(flow_mod(0, 0, (apply(p13.OFPActionOutput(o13.OFPP_CONTROLLER, 0xFFFF)),), cookie=0)))
    fabric.send_at(tp.Endpoint(1, 1), frame(H1, H2))
    (pin,) = [codec.packet_in_fields(f) for f in messages(transport)]
    assert (pin["reason"], pin["table_id"], pin["cookie"], pin["data"]) == (0, 0, 0, frame(H1, H2))
