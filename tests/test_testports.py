"""Test ports: tagged frames at a set rate, gratuitous ARPs, and the receive-side counts
(task.Clock and a fake monotonic clock; no sockets, no sleeps)."""

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import ARP, Ether
from twisted.internet.task import Clock

from emulator import testports as tpt
from emulator.params import FabricParams


class FakeTime:
    def __init__(self, clock):
        self.clock = clock

    def __call__(self) -> int:
        return int(self.clock.seconds() * 1e9)


def port():
    clock = Clock()
    sent = []
    tp = tpt.TestPort(sent.append, clock, FakeTime(clock))
    return tp, sent, clock


def test_frames_are_valid_ipv4_udp_with_the_tag_scapy_reads():
    flows = tpt.synthetic_flows(3)
    tp, sent, _ = port()
    s = tp.add_stream(7, flows, size=128, rate=10, count=3)
    fr = tp.frame(s, 4, 123456789)
    assert len(fr) == 128
    pkt = Ether(fr)
    assert pkt[Ether].src == "0a:65:00:00:00:02" and pkt[Ether].dst == "0a:66:00:00:00:02"
    assert pkt[IP].src == "10.101.0.2" and pkt[IP].dst == "10.102.0.2" and pkt[IP].len == 114
    chk = pkt[IP].chksum
    del pkt[IP].chksum
    assert Ether(bytes(pkt))[IP].chksum == chk                  # Scapy recomputes the same checksum
    assert pkt[UDP].dport == tpt.UDP_DPORT and pkt[UDP].len == 94
    assert tpt.read_tag(fr) == (7, 1, 4, 123456789)
    assert tpt.read_tag(fr[:60]) is None and tpt.read_tag(b"\x00" * 128) is None


def test_garp_announces_each_host_as_scapy_reads_it():
    tp, sent, _ = port()
    assert tp.announce([(bytes.fromhex("0a6600000001"), tpt.ip_value("10.102.0.1"))]) == 1
    arp = Ether(sent[0])[ARP]
    assert (arp.op, arp.hwsrc, arp.psrc, arp.pdst) == (2, "0a:66:00:00:00:01", "10.102.0.1", "10.102.0.1")
    assert len(sent[0]) == 60 and sent[0][:6] == b"\xff" * 6


def test_stream_is_paced_at_its_rate_and_stops_by_itself():
    tp, sent, clock = port()
    tp.add_stream(1, tpt.synthetic_flows(2), rate=1000, duration=0.05)
    done = []
    tp.start(lambda: done.append(clock.seconds()))
    assert len(sent) == 1
    clock.advance(0.010)
    assert len(sent) == 11                        # 1000/s: one more each millisecond
    for _ in range(60):
        clock.advance(0.001)
    assert len(sent) == 50 and done and not clock.getDelayedCalls()
    seqs = [tpt.read_tag(f)[2] for f in sent]
    assert seqs == list(range(50)) and [tpt.read_tag(f)[1] for f in sent[:4]] == [0, 1, 0, 1]
    rep = tp.report()["tx"][1]
    assert rep["sent"] == 50 and rep["first_ns"] == 0 and rep["last_ns"] == pytest.approx(49e6, abs=2e6)


def test_stop_cancels_the_pacing():
    tp, sent, clock = port()
    tp.add_stream(1, tpt.synthetic_flows(1), rate=100, count=1000)
    tp.start()
    tp.stop()
    assert not clock.getDelayedCalls() and len(sent) == 1


def test_receive_counts_unique_duplicates_reordering_gaps_and_flows():
    tp, _, _ = port()
    src, _, _ = port()
    s = src.add_stream(3, tpt.synthetic_flows(2), rate=1, count=10)
    frames = {seq: src.frame(s, seq, 1000 + seq) for seq in range(10)}
    arrivals = [(0, 2000), (1, 2100), (1, 2150), (3, 2200), (2, 2300), (4, 9300), (5, 9400)]
    for seq, t in arrivals:
        tp.receive(frames[seq], t)
    tp.receive(b"\x01" * 80, 9500)
    r = tp.report()["rx"][3]
    assert (r["frames"], r["unique"], r["duplicates"], r["reordered"]) == (7, 6, 1, 1)
    assert (r["first_ns"], r["last_ns"], r["flows_reached"]) == (2000, 9400, 2)
    assert (r["longest_gap_ns"], r["gap_from_ns"], r["gap_to_ns"]) == (7000, 2300, 9300)
    assert list(tp.rx[3].latency_ns)[:2] == [1000, 1099] and tp.other_rx == 1


def test_bad_stream_arguments_are_named():
    tp, _, _ = port()
    flows = tpt.synthetic_flows(1)
    with pytest.raises(ValueError, match="frame size must be 68..9000"):
        tp.add_stream(1, flows, size=64, count=1)
    with pytest.raises(ValueError, match="rate must be above 0"):
        tp.add_stream(1, flows, rate=0, count=1)
    with pytest.raises(ValueError, match="a frame count or a duration"):
        tp.add_stream(1, flows)
    with pytest.raises(ValueError, match="at least one flow"):
        tp.add_stream(1, [], count=1)
    tp.add_stream(1, flows, count=1)
    with pytest.raises(ValueError, match="already used"):
        tp.add_stream(1, flows, count=1)
    with pytest.raises(ValueError, match="flows must be numbered within"):
        tpt.synthetic_flows(0)
    with pytest.raises(ValueError, match=r"got 2 from 16776960"):
        tpt.synthetic_flows(2, first=0xFFFF00)
    # Unique MACs past 65535; the IPv4 addresses keep their network byte and wrap in the low 16 bits.
    late = tpt.synthetic_flows(2, first=0xFFFF)
    assert late[1].src_mac == bytes([0x0A, 101, 0, 0x01, 0x00, 0x00]) and late[1].src_ip == (10 << 24) | (101 << 16)
    with pytest.raises(ValueError, match="'10.1' is not an IPv4 address"):
        tpt.ip_value("10.1")


def test_test_ports_through_the_fabric_reach_each_other_by_installed_flows():
    """TP1 at switch 1, TP2 at switch 3 of a linear:3, flows for the test destination on every
    switch: every frame arrives, tagged, at TP2."""
    from emulator import codec
    from emulator import topology as tp_
    from emulator.fabric import Fabric
    pytest.importorskip("ryu.ofproto.ofproto_parser")
    from ryu.ofproto import ofproto_v1_3 as o13
    from ryu.ofproto import ofproto_v1_3_parser as p13
    from ryu.ofproto.ofproto_protocol import ProtocolDesc

    topo = tp_.linear(3)
    clock = Clock()
    ports = {}
    fabric = Fabric(topo, versions=(codec.OFP13,), now_ns=FakeTime(clock), clock=clock,
                    params=FabricParams(host_refresh=0, host_delay=0, data_plane=True, table_miss="drop"))
    fabric.host_receive = lambda host, frame, t: ports[host.at].receive(frame, t)
    for dpid in topo.switches:
        s, _ = fabric.open_in_memory(dpid, clock)
        out = {1: 1, 2: 2, 3: 2}[dpid]
        match = p13.OFPMatch(eth_type=0x0800, ipv4_dst=("10.102.0.0", "255.255.0.0"))
        actions = [p13.OFPInstructionActions(o13.OFPIT_APPLY_ACTIONS, [p13.OFPActionOutput(out)])]
        fm = p13.OFPFlowMod(ProtocolDesc(codec.OFP13), priority=1, match=match, instructions=actions)
        fm.serialize()
        s.dataReceived(bytes(fm.buf))
    at1, at3 = topo.host_at(1, 2).at, topo.host_at(3, 2).at
    for at in (at1, at3):
        ports[at] = tpt.TestPort(lambda frame, at=at: fabric.ingress(at, frame, fabric.now_ns()), clock,
                                 fabric.now_ns)
    ports[at1].add_stream(1, tpt.synthetic_flows(4), rate=1000, count=20)
    ports[at1].start()
    for _ in range(30):
        clock.advance(0.001)
    rx = ports[at3].report()["rx"][1]
    assert rx["unique"] == 20 and rx["flows_reached"] == 4 and rx["duplicates"] == 0
    assert fabric.frames_forwarded == 40 and fabric.frames_to_hosts == 20


def test_a_delayed_stream_starts_after_its_delay_beside_a_running_one():
    tp, sent, clock = port()
    tp.add_stream(2, tpt.synthetic_flows(5), rate=100, count=300)        # background from the start
    tp.add_stream(1, tpt.synthetic_flows(1), rate=1000, count=5, delay=0.5)
    tp.start()
    for _ in range(499):
        clock.advance(0.001)
    assert {tpt.read_tag(f)[0] for f in sent} == {2}                     # nothing of stream 1 before 0.5 s
    for _ in range(20):
        clock.advance(0.001)
    rep = tp.report()["tx"]
    assert rep[1]["sent"] == 5 and rep[1]["first_ns"] == pytest.approx(0.5e9, abs=2e6)
    assert rep[2]["sent"] == pytest.approx(52, abs=2)                    # the background kept its pace
    with pytest.raises(ValueError, match="delay"):
        tp.add_stream(3, tpt.synthetic_flows(1), count=1, delay=-1)
