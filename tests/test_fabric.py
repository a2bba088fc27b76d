"""The in-process fabric: discovery frames a controller sends out of one switch arrive at the
linked switch as PACKET_INs (StringTransport and task.Clock, no sockets)."""

import itertools

import pytest
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport

from emulator import codec
from emulator import topology as tp
from emulator.codec import OFP10, OFP13
from emulator.fabric import Fabric
from emulator.params import FabricParams
from emulator.protocol import SessionRules

LLDP = bytes.fromhex("0180c200000e" "020000000201" "88cc") + bytes.fromhex("020704") + bytes(6) + bytes(4)
IPV4 = bytes.fromhex("ffffffffffff" "020000000201" "0800") + bytes(20)


def wired(version, topo):
    ticks = itertools.count(1000, 10)
    fabric = Fabric(topo, versions=(version,), now_ns=lambda: next(ticks))
    clock = Clock()
    return fabric, {dpid: fabric.open_in_memory(dpid, clock) for dpid in topo.switches}


def packet_ins(tr):
    frames, rest = codec.split_frames(tr.value())
    assert rest == b""
    return [codec.packet_in_fields(f) for f in frames if f[1] == codec.PACKET_IN]


@pytest.mark.parametrize("version", [OFP10, OFP13])
def test_lldp_sent_out_of_a_linked_port_arrives_at_the_peer_port(version):
    topo = tp.leaf_spine(1, 2)                       # spine 1; leaves 2, 3 (port 1 up, port 2 host)
    fabric, sw = wired(version, topo)
    assert set(fabric.sessions) == {1, 2, 3}
    controller = codec.PORT_CONTROLLER | (0xFFFF0000 if version == OFP13 else 0)
    sw[2][0].dataReceived(codec.encode_packet_out(version, 9, codec.NO_BUFFER, controller, 1, LLDP))
    (pin,) = packet_ins(sw[1][1])
    assert pin["in_port"] == 1 and pin["data"] == LLDP and pin["buffer_id"] == codec.NO_BUFFER
    assert packet_ins(sw[3][1]) == []
    # The controller has shown it handles switch 2: its host (port 2) announces itself, nothing else.
    (garp,) = packet_ins(sw[2][1])
    assert garp["in_port"] == 2 and garp["data"][6:12] == topo.host_at(2, 2).mac and garp["data"][12:14] == b"\x08\x06"
    assert fabric.relayed == 1 and fabric.t_first_discovery_out is not None
    assert list(fabric.relay_latency_ns) == [fabric.t_last_relayed_in - fabric.t_first_discovery_out]
    assert fabric.first_in == {tp.Endpoint(1, 1): fabric.t_last_relayed_in}
    assert fabric.links_seen == {(tp.Endpoint(2, 1), tp.Endpoint(1, 1))}


def test_flood_from_the_spine_reaches_every_leaf_and_other_frames_stay():
    topo = tp.leaf_spine(1, 3)
    fabric, sw = wired(OFP13, topo)
    sw[1][0].dataReceived(codec.encode_packet_out(OFP13, 9, codec.NO_BUFFER, 0xFFFFFFFD, 0xFFFFFFFB, LLDP))
    assert [len(packet_ins(sw[d][1])) for d in (2, 3, 4)] == [1, 1, 1]
    sw[1][0].dataReceived(codec.encode_packet_out(OFP13, 10, codec.NO_BUFFER, 0xFFFFFFFD, 0xFFFFFFFB, IPV4))
    assert fabric.relayed == 3 and fabric.other_outs == 1 and fabric.discovery_outs == 1


def test_a_peer_without_a_session_is_counted_not_delivered():
    topo = tp.linear(2)
    fabric, sw = wired(OFP13, topo)
    sw[2][0].connectionLost(None)
    sw[1][0].dataReceived(codec.encode_packet_out(OFP13, 9, codec.NO_BUFFER, 0xFFFFFFFD, 1, LLDP))
    assert fabric.relayed == 0 and fabric.not_delivered == 1 and 2 not in fabric.sessions


def test_features_reply_carries_the_topology_ports():
    topo = tp.leaf_spine(2, 2)                     # leaf 3: two uplinks and a host port
    fabric = Fabric(topo, versions=(OFP10,))
    sw, tr = fabric.make_protocol(3, Clock(), rules=SessionRules(handshake_timeout=0)), StringTransport()
    sw.makeConnection(tr)
    tr.clear()
    sw.dataReceived(codec.encode_hello(OFP10, 1) + codec.header(OFP10, codec.FEATURES_REQUEST, 8, 2))
    (reply,) = codec.split_frames(tr.value())[0]
    assert len(reply) == 32 + 3 * 48                        # OpenFlow 1.0: header + 48 bytes per port
    assert [int.from_bytes(reply[32 + 48 * i:34 + 48 * i], "big") for i in range(3)] == [1, 2, 3]
    assert reply[34:40] == codec.port_mac(3, 1)


def lldp_out(version, port):
    controller = codec.PORT_CONTROLLER | (0xFFFF0000 if version == OFP13 else 0)
    return codec.encode_packet_out(version, 9, codec.NO_BUFFER, controller, port, LLDP)


def port_status(tr):
    frames, _ = codec.split_frames(tr.value())
    out = []
    for f in frames:
        if f[1] == codec.PORT_STATUS:
            reason = f[8]
            port_no = int.from_bytes(f[16:20], "big") if f[0] == OFP13 else int.from_bytes(f[16:18], "big")
            at = 16 + (36 if f[0] == OFP13 else 28)       # ofp_port: state after no, hw_addr, name, config
            state = int.from_bytes(f[at:at + 4], "big")
            out.append((reason, port_no, state))
    return out


@pytest.mark.parametrize("version", [OFP10, OFP13])
def test_link_down_stops_the_relay_and_both_ends_report_it(version):
    topo = tp.linear(3)                 # 1:p1–2:p1, 2:p2–3:p1; hosts at 1:p2, 2:p3, 3:p2
    fabric, sw = wired(version, topo)
    for _, tr in sw.values():
        tr.clear()
    ch = fabric.set_link(tp.Endpoint(2, 2), up=False)
    assert port_status(sw[2][1]) == [(codec.OFPPR_MODIFY, 2, codec.OFPPS_LINK_DOWN)]
    assert port_status(sw[3][1]) == [(codec.OFPPR_MODIFY, 1, codec.OFPPS_LINK_DOWN)]
    assert port_status(sw[1][1]) == []
    assert ch["notices"] == 2 and ch["t_first_notice"] >= ch["t_change"]
    sw[2][0].dataReceived(lldp_out(version, 2))
    assert fabric.relayed == 0 and fabric.not_delivered == 1
    # The controller's first reaction and its first LLDP out of a port the change touched.
    assert ch["t_first_discovery_out"] is not None and ch["t_first_discovery_out_affected"] is not None
    assert ch["first_message"] == "packet_out to switch 2"
    sw[1][0].dataReceived(lldp_out(version, 1))         # the other link still relays
    assert fabric.relayed == 1
    fabric.set_link(tp.Endpoint(3, 1), up=True)
    assert port_status(sw[3][1])[-1] == (codec.OFPPR_MODIFY, 1, 0)
    sw[2][0].dataReceived(lldp_out(version, 2))
    assert fabric.relayed == 2


def test_lldp_elsewhere_after_a_change_is_told_apart_from_lldp_on_the_changed_link():
    topo = tp.linear(3)
    fabric, sw = wired(OFP13, topo)
    ch = fabric.set_link(tp.Endpoint(2, 2), up=False)
    sw[1][0].dataReceived(lldp_out(OFP13, 1))             # periodic LLDP on the 1–2 link
    assert ch["t_first_discovery_out"] is not None and ch["t_first_discovery_out_affected"] is None
    sw[3][0].dataReceived(lldp_out(OFP13, 1))
    assert ch["t_first_discovery_out_affected"] > ch["t_first_discovery_out"]


def test_echo_is_not_a_reaction_to_a_change():
    fabric, sw = wired(OFP13, tp.linear(2))
    ch = fabric.set_link(tp.Endpoint(1, 1), up=False)
    sw[1][0].dataReceived(codec.encode_echo_request(OFP13, 5))
    assert ch["t_first_message"] is None
    sw[1][0].dataReceived(codec.header(OFP13, codec.msg_type(OFP13, "barrier_request"), 8, 6))
    assert ch["first_message"] == "barrier_request to switch 1"


def test_switch_down_closes_its_session_and_neighbours_report_their_ports():
    topo = tp.leaf_spine(2, 2)          # spines 1, 2; leaves 3, 4 (ports 1, 2 up to the spines)
    fabric, sw = wired(OFP13, topo)
    for _, tr in sw.values():
        tr.clear()
    ch = fabric.switch_down(1)
    assert sw[1][1].disconnecting
    assert port_status(sw[3][1]) == [(codec.OFPPR_MODIFY, 1, codec.OFPPS_LINK_DOWN)]
    assert port_status(sw[4][1]) == [(codec.OFPPR_MODIFY, 1, codec.OFPPS_LINK_DOWN)]
    assert port_status(sw[2][1]) == []
    assert ch["notices"] == 3 and ch["t_first_notice"] == ch["t_session_closed"]
    assert {tuple(a) for a in fabric.status()["change"]["affected"]} == {(3, 1), (4, 1)}
    sw[3][0].dataReceived(lldp_out(OFP13, 1))
    assert fabric.relayed == 0


def test_frames_for_another_shard_go_out_and_come_back_in():
    topo = tp.linear(2)
    ticks = itertools.count(1000, 10)
    sent = []
    left = Fabric(topo, owned={1}, now_ns=lambda: next(ticks), remote_send=lambda ep, data, t: sent.append(
        fabric_datagram(ep, data, t)))
    right = Fabric(topo, owned={2}, now_ns=lambda: next(ticks))
    a, ta = left.open_in_memory(1, Clock())
    b, tb = right.open_in_memory(2, Clock())
    a.dataReceived(lldp_out(OFP13, 1))
    assert left.sent_remote == 1 and left.relayed == 0 and len(sent) == 1
    assert right.deliver_remote(sent[0])
    (pin,) = packet_ins(tb)
    assert pin["in_port"] == 1 and pin["data"] == LLDP
    assert right.relay_latency_ns[0] == right.t_last_relayed_in - left.t_first_discovery_out


def fabric_datagram(ep, data, t):
    from emulator.fabric import REMOTE_HEAD
    return REMOTE_HEAD.pack(ep.dpid, ep.port, t) + data


def test_hosts_announce_after_the_delay_and_refresh():
    topo = tp.linear(2)
    clock = Clock()
    fabric = Fabric(topo, clock=clock, params=FabricParams(host_delay=1.0, host_refresh=5.0))
    trs = {dpid: fabric.open_in_memory(dpid, clock)[1] for dpid in topo.switches}
    assert fabric.hosts_announced == 0
    clock.advance(1.0)
    assert fabric.hosts_announced == 2 and [len(packet_ins(trs[d])) for d in (1, 2)] == [1, 1]
    clock.advance(4.0)
    assert fabric.hosts_announced == 4
    fabric.stop()
    clock.advance(10.0)
    assert fabric.hosts_announced == 4


@pytest.mark.parametrize("miss, host_ingress, announced", [
    ("drop", False, 1),           # a PACKET_IN at the host port, whatever the tables hold
    ("drop", True, 0),            # through the tables: the table miss drops it
    ("controller", True, 1),      # through the tables: the table miss sends it up
])
def test_hosts_announce_through_the_flow_tables_with_host_ingress(miss, host_ingress, announced):
    topo = tp.linear(2)
    clock = Clock()
    fabric = Fabric(topo, clock=clock, params=FabricParams(host_refresh=0, host_delay=1.0, data_plane=True,
                                                           table_miss=miss, host_ingress=host_ingress))
    trs = {dpid: fabric.open_in_memory(dpid, clock)[1] for dpid in topo.switches}
    clock.advance(1.0)
    pins = packet_ins(trs[1])
    assert fabric.hosts_announced == 2 and len(pins) == announced
    if pins:
        assert pins[0]["in_port"] == topo.hosts[0].at.port and pins[0]["data"][6:12] == topo.hosts[0].mac
    fabric.stop()


def test_isolated_switches_have_a_host_at_each_port_asked_and_no_link():
    topo = tp.isolated("capacity:3", range(5, 8), (1, 2))
    assert topo.switches == [5, 6, 7] and not topo.links and len(topo.hosts) == 6
    assert topo.ports(6) == [1, 2]


def test_last_relay_before_an_instant():
    fabric, sw = wired(OFP13, tp.linear(2))
    sw[1][0].dataReceived(lldp_out(OFP13, 1))
    sw[2][0].dataReceived(lldp_out(OFP13, 1))
    first, second = fabric.relay_times
    assert fabric.last_relay_before(first - 1) is None
    assert fabric.last_relay_before(second - 1) == first and fabric.last_relay_before(second + 100) == second


def test_topology_round_trips_through_plain_data():
    topo = tp.leaf_spine(2, 3)
    again = tp.from_dict(topo.to_dict())
    assert again.to_dict() == topo.to_dict() and again.hosts == topo.hosts
    assert len(topo.directed_links()) == 2 * len(topo.links)


def test_null_controller_lldp_probe_crosses_every_link_once_per_direction():
    from emulator.nullctl import Behaviour, NullControllerFactory

    topo = tp.linear(3)
    fabric = Fabric(topo, versions=(OFP13,))
    factory = NullControllerFactory(versions=(OFP13,), behaviour=Behaviour(answer="lldp"))
    pairs = []
    for dpid in topo.switches:
        sw = fabric.make_protocol(dpid, Clock(), rules=SessionRules(handshake_timeout=0))
        ctl = factory.buildProtocol(None)
        to_ctl, to_sw = StringTransport(), StringTransport()
        sw.makeConnection(to_ctl)
        ctl.makeConnection(to_sw)
        pairs.append((sw, ctl, to_ctl, to_sw))
    for _ in range(10):                         # pump both ways until nothing moves
        moved = False
        for sw, ctl, to_ctl, to_sw in pairs:
            for src, dst in ((to_ctl, ctl), (to_sw, sw)):
                data = src.value()
                if data:
                    src.clear()
                    dst.dataReceived(data)
                    moved = True
        if not moved:
            break
    assert fabric.discovery_outs == 3 and fabric.relayed == 4 and fabric.not_delivered == 0
    assert set(fabric.first_in) == {tp.Endpoint(*dst) for _, dst in topo.directed_links()}
    assert sum(ctl.packet_ins for _, ctl, _, _ in pairs) == 4 + 3      # LLDP back, and each host's ARP


# --------------------------------------------------------------------------- switches connected to two controllers

def test_a_switch_with_two_controllers_keeps_a_live_session_and_counts_a_relay_once():
    topo = tp.linear(2)
    fabric, sw = wired(OFP13, topo)
    second = fabric.open_in_memory(2, Clock(), controller="second")
    assert fabric.sessions[2] is sw[2][0] and fabric.status()["connections"] == 3
    sw[1][0].dataReceived(lldp_out(OFP13, 1))
    assert len(packet_ins(sw[2][1])) == len(packet_ins(second[1])) == 1      # each controller sees the LLDP
    assert fabric.relayed == 1 and list(fabric.first_in) == [tp.Endpoint(2, 1)]
    sw[2][0].connectionLost(None)
    assert fabric.sessions[2] is second[0] and fabric.status()["ready"] == 2
    ch = fabric.switch_down(2)                                   # every connection of the switch closes
    assert second[1].disconnecting and ch["t_session_closed"] is not None
    events = [e["event"] for e in fabric.timeline_report((2,))[2]["events"]]
    assert events == ["ready", "ready", "lost"]
