"""The in-process fabric: discovery frames a controller sends out of one switch arrive at the
linked switch as PACKET_INs (StringTransport and task.Clock, no sockets)."""

import itertools

import pytest
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport

from emulator import codec, topology as tp
from emulator.codec import OFP10, OFP13
from emulator.fabric import Fabric

LLDP = bytes.fromhex("0180c200000e" "020000000201" "88cc") + bytes.fromhex("020704") + bytes(6) + bytes(4)
IPV4 = bytes.fromhex("ffffffffffff" "020000000201" "0800") + bytes(20)


def wired(version, topo):
    ticks = itertools.count(1000, 10)
    fabric = Fabric(topo, versions=(version,), now_ns=lambda: next(ticks))
    clock = Clock()
    links = {}
    for dpid in topo.switches:
        sw = fabric.make_protocol(dpid, clock, handshake_timeout=0)
        tr = StringTransport()
        sw.makeConnection(tr)
        sw.dataReceived(codec.encode_hello(version, 1) + codec.header(version, codec.FEATURES_REQUEST, 8, 2))
        tr.clear()
        links[dpid] = (sw, tr)
    return fabric, links


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
    assert packet_ins(sw[3][1]) == [] and sw[2][1].value() == b""
    assert fabric.relayed == 1 and fabric.t_first_discovery_out is not None
    assert fabric.relay_latency_ns == [fabric.t_last_relayed_in - fabric.t_first_discovery_out]
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
    sw, tr = fabric.make_protocol(3, Clock(), handshake_timeout=0), StringTransport()
    sw.makeConnection(tr)
    tr.clear()
    sw.dataReceived(codec.encode_hello(OFP10, 1) + codec.header(OFP10, codec.FEATURES_REQUEST, 8, 2))
    (reply,) = codec.split_frames(tr.value())[0]
    assert len(reply) == 32 + 3 * 48                        # OpenFlow 1.0: header + 48 bytes per port
    assert [int.from_bytes(reply[32 + 48 * i:34 + 48 * i], "big") for i in range(3)] == [1, 2, 3]
    assert reply[34:40] == codec.port_mac(3, 1)
