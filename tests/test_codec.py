"""The codec against independent encoders (Scapy's contrib.openflow/openflow3) and
decoders (Ryu's ofproto parsers), plus framing fed at every chunk size."""

import struct
import warnings

import pytest

from emulator import codec
from emulator.codec import OFP10, OFP13, PortSpec

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from scapy.contrib import openflow as sc10
    from scapy.contrib import openflow3 as sc13

ryu_parser = pytest.importorskip("ryu.ofproto.ofproto_parser", reason="Ryu is installed by tox (see tox.ini)")
from ryu.ofproto import ofproto_v1_0 as o10  # noqa: E402
from ryu.ofproto import ofproto_v1_0_parser as p10  # noqa: E402
from ryu.ofproto import ofproto_v1_3 as o13  # noqa: E402
from ryu.ofproto import ofproto_v1_3_parser as p13  # noqa: E402
from ryu.ofproto.ofproto_protocol import ProtocolDesc  # noqa: E402

PORTS = (PortSpec(1, bytes.fromhex("020000000101"), "s1-eth1"), PortSpec(2, bytes.fromhex("020000000102"), "s1-eth2"))


def ryu_parse(data: bytes):
    version, type_, length, xid = codec.HEADER.unpack_from(data)
    return ryu_parser.msg(ProtocolDesc(version), version, type_, length, xid, data)


def ryu_bytes(msg) -> bytes:
    msg.serialize()
    return bytes(msg.buf)


# --------------------------------------------------------------------------- byte vectors from Scapy

def test_features_reply_13_matches_scapy():
    ours = codec.encode_features_reply(OFP13, 7, datapath_id=5, n_buffers=256, n_tables=254)
    theirs = bytes(sc13.OFPTFeaturesReply(xid=7, datapath_id=5, n_buffers=256, n_tables=254,
                                          capabilities=codec.FEATURES_CAPABILITIES))
    assert ours == theirs


def test_features_reply_10_with_ports_matches_scapy():
    ours = codec.encode_features_reply(OFP10, 9, datapath_id=0x1234, ports=PORTS)
    curr = 0x40 | 0x80 | 0x200
    ports = [sc10.OFPPhyPort(port_no=p.port_no, hw_addr=":".join(f"{b:02x}" for b in p.hw_addr),
                             port_name=p.name, curr=curr, advertised=curr, supported=curr) for p in PORTS]
    theirs = bytes(sc10.OFPTFeaturesReply(xid=9, datapath_id=0x1234, n_buffers=256, n_tables=254,
                                          capabilities=codec.FEATURES_CAPABILITIES, actions=codec.ACTIONS_10,
                                          ports=ports))
    assert ours == theirs


def test_hello_with_version_bitmap_matches_scapy():
    ours = codec.encode_hello(OFP13, 1, (OFP10, OFP13))
    bitmap = (1 << OFP10) | (1 << OFP13)
    theirs = bytes(sc13.OFPTHello(xid=1, elements=[sc13.OFPHETVersionBitmap(bitmap=bitmap)]))
    assert ours == theirs


def test_port_desc_reply_matches_scapy():
    ours = codec.encode_port_desc_reply(3, PORTS)
    ports = [sc13.OFPPort(port_no=p.port_no, hw_addr=":".join(f"{b:02x}" for b in p.hw_addr), port_name=p.name,
                          curr=p.curr, advertised=p.curr, supported=p.curr, curr_speed=p.curr_speed_kbps,
                          max_speed=p.curr_speed_kbps) for p in PORTS]
    assert ours == bytes(sc13.OFPMPReplyPortDesc(xid=3, ports=ports))


def test_small_replies_match_scapy():
    assert codec.encode_echo_reply(OFP13, 4) == bytes(sc13.OFPTEchoReply(xid=4))
    assert codec.encode_barrier_reply(OFP13, 4) == bytes(sc13.OFPTBarrierReply(xid=4))
    assert codec.encode_get_config_reply(OFP13, 4, 0, 128) == bytes(sc13.OFPTGetConfigReply(xid=4, miss_send_len=128))
    assert codec.encode_role_reply(4, codec.OFPCR_ROLE_MASTER, 9) == bytes(
        sc13.OFPTRoleReply(xid=4, role=codec.OFPCR_ROLE_MASTER, generation_id=9))


# --------------------------------------------------------------------------- Ryu decodes what we send

def test_ryu_parses_features_reply_13():
    msg = ryu_parse(codec.encode_features_reply(OFP13, 7, datapath_id=0xABCDEF, n_buffers=128, n_tables=10))
    assert isinstance(msg, p13.OFPSwitchFeatures)
    assert (msg.datapath_id, msg.n_buffers, msg.n_tables, msg.xid) == (0xABCDEF, 128, 10, 7)


def test_ryu_parses_features_reply_10_ports():
    msg = ryu_parse(codec.encode_features_reply(OFP10, 1, datapath_id=42, ports=PORTS))
    assert isinstance(msg, p10.OFPSwitchFeatures)
    assert msg.datapath_id == 42
    assert sorted(msg.ports) == [1, 2]
    assert msg.ports[2].name == b"s1-eth2"
    assert msg.ports[1].hw_addr == "02:00:00:00:01:01"


def test_ryu_parses_port_desc_and_desc_replies():
    msg = ryu_parse(codec.encode_port_desc_reply(3, PORTS))
    assert isinstance(msg, p13.OFPPortDescStatsReply)
    assert [(p.port_no, p.name, p.curr_speed) for p in msg.body] == [(1, b"s1-eth1", 10_000_000),
                                                                     (2, b"s1-eth2", 10_000_000)]
    desc = ryu_parse(codec.encode_desc_reply(OFP13, 4, "mfr", "hw", "sw", "serial", "dp"))
    assert isinstance(desc, p13.OFPDescStatsReply)
    assert (desc.body.mfr_desc, desc.body.dp_desc) == (b"mfr", b"dp")


def test_ryu_parses_role_echo_error():
    role = ryu_parse(codec.encode_role_reply(5, codec.OFPCR_ROLE_SLAVE, 77))
    assert (role.role, role.generation_id) == (o13.OFPCR_ROLE_SLAVE, 77)
    echo = ryu_parse(codec.encode_echo_reply(OFP13, 6, b"abc"))
    assert isinstance(echo, p13.OFPEchoReply) and echo.data == b"abc"
    err = ryu_parse(codec.encode_error(OFP13, 8, codec.OFPET_BAD_REQUEST, codec.OFPBRC_BAD_TYPE, b"x" * 100))
    assert (err.type, err.code, len(err.data)) == (o13.OFPET_BAD_REQUEST, o13.OFPBRC_BAD_TYPE, 64)


# --------------------------------------------------------------------------- we decode what Ryu sends

def test_decodes_ryu_controller_messages_13():
    dp = ProtocolDesc(o13.OFP_VERSION)
    cases = [
        (p13.OFPFeaturesRequest(dp), "features_request", {}),
        (p13.OFPSetConfig(dp, 0, 0xFFE5), "set_config", {"flags": 0, "miss_send_len": 0xFFE5}),
        (p13.OFPRoleRequest(dp, o13.OFPCR_ROLE_MASTER, 7), "role_request", {"role": 2, "generation_id": 7}),
        (p13.OFPPortDescStatsRequest(dp, 0), "stats_request", {"stats_type": codec.MP_PORT_DESC, "flags": 0}),
        (p13.OFPDescStatsRequest(dp, 0), "stats_request", {"stats_type": codec.MP_DESC, "flags": 0}),
        (p13.OFPBarrierRequest(dp), "barrier_request", {}),
        (p13.OFPGetConfigRequest(dp), "get_config_request", {}),
        (p13.OFPEchoRequest(dp, b"ping"), "echo_request", {}),
        (p13.OFPFlowMod(dp, match=p13.OFPMatch(), instructions=[]), "flow_mod", {}),
    ]
    for i, (msg, name, fields) in enumerate(cases):
        msg.xid = 100 + i
        decoded = codec.decode(ryu_bytes(msg))
        assert isinstance(decoded, codec.Message), name
        assert (decoded.name, decoded.xid, decoded.version) == (name, 100 + i, OFP13)
        for key, value in fields.items():
            assert decoded.fields[key] == value, (name, key)


def test_decodes_ryu_controller_messages_10():
    dp = ProtocolDesc(o10.OFP_VERSION)
    for msg, name in [(p10.OFPFeaturesRequest(dp), "features_request"), (p10.OFPBarrierRequest(dp), "barrier_request"),
                      (p10.OFPDescStatsRequest(dp, 0), "stats_request"), (p10.OFPSetConfig(dp, 0, 128), "set_config")]:
        msg.xid = 3
        decoded = codec.decode(ryu_bytes(msg))
        assert (decoded.name, decoded.version) == (name, OFP10)


def test_ryu_reads_our_hello_bitmap_and_we_read_it_back():
    data = codec.encode_hello(OFP13, 1, (OFP10, OFP13))
    hello = ryu_parse(data)  # Ryu's OFPHello serializes no elements, so Ryu is the decoder here
    assert [e.versions for e in hello.elements] == [[o10.OFP_VERSION, o13.OFP_VERSION]]
    assert codec.hello_versions(codec.decode(data)) == {OFP10, OFP13}
    assert codec.hello_versions(codec.decode(codec.encode_hello(OFP13, 1))) is None


# --------------------------------------------------------------------------- pure behaviour

def test_unknown_type_and_version_decode_to_unknown():
    assert isinstance(codec.decode(codec.header(OFP13, 99, 8, 1)), codec.Unknown)
    unknown = codec.decode(codec.header(0x06, codec.FEATURES_REQUEST, 8, 2))
    assert isinstance(unknown, codec.Unknown) and unknown.version == 6
    malformed = codec.decode(codec.header(OFP13, codec.SET_CONFIG, 9, 3) + b"\x00")
    assert isinstance(malformed, codec.Unknown) and malformed.name == "malformed_set_config"


@pytest.mark.parametrize("ours,peer,bitmap,expected", [
    ((OFP13,), OFP13, frozenset({OFP10, OFP13}), OFP13),
    ((OFP10, OFP13), OFP13, frozenset({OFP10}), OFP10),
    ((OFP13,), OFP10, None, None),          # peer offers 1.0 only, we speak 1.3 only
    ((OFP10, OFP13), 0x05, None, OFP13),     # peer newer, no bitmap: the lower of the two
    ((OFP10,), OFP13, None, OFP10),
    ((OFP13,), OFP13, frozenset({0x05}), None),
])
def test_negotiate(ours, peer, bitmap, expected):
    assert codec.negotiate(ours, peer, bitmap) == expected


def test_split_frames_every_chunk_size():
    stream = b"".join([codec.encode_hello(OFP13, 1, (OFP13,)), codec.header(OFP13, codec.FEATURES_REQUEST, 8, 2),
                       codec.encode_echo_request(OFP13, 3, b"x" * 300), codec.header(OFP13, 20, 8, 4)])
    expected, tail = codec.split_frames(stream)
    assert len(expected) == 4 and tail == b""
    for size in range(1, len(stream) + 1):
        frames, buffer = [], b""
        for off in range(0, len(stream), size):
            got, buffer = codec.split_frames(buffer + stream[off:off + size])
            frames += got
        assert frames == expected and buffer == b"", size


@pytest.mark.parametrize("length", [0, 7])
def test_split_frames_rejects_short_length(length):
    with pytest.raises(codec.FramingError, match="below the 8-byte header"):
        codec.split_frames(struct.pack("!BBHI", OFP13, 0, length, 1))


def test_split_frames_rejects_oversize():
    with pytest.raises(codec.FramingError, match="exceeds the limit of 1000"):
        codec.split_frames(struct.pack("!BBHI", OFP13, 0, 5000, 1), max_len=1000)


def test_msg_type_names_differ_by_version():
    assert codec.msg_type(OFP10, "barrier_request") == 18
    assert codec.msg_type(OFP13, "barrier_request") == 20
    with pytest.raises(ValueError, match="has no message 'role_request'"):
        codec.msg_type(OFP10, "role_request")


# --------------------------------------------------------------------------- PACKET_OUT decoding (LLDP relay)

@pytest.mark.parametrize("ofp, parser", [(o10, p10), (o13, p13)])
def test_packet_out_fields_read_what_ryu_serializes(ofp, parser):
    dp = ProtocolDesc(ofp.OFP_VERSION)
    lldp = bytes.fromhex("0180c200000e" "020000000103" "88cc") + b"\x02\x07\x04" + bytes(6)
    actions = [parser.OFPActionOutput(3), parser.OFPActionOutput(ofp.OFPP_FLOOD),
               parser.OFPActionOutput(ofp.OFPP_IN_PORT)]
    if ofp is o10:
        actions.insert(1, parser.OFPActionSetDlSrc(b"\x02" * 6))   # a non-output action in between
    else:
        actions.insert(1, parser.OFPActionSetField(eth_src="02:02:02:02:02:02"))
    msg = parser.OFPPacketOut(dp, buffer_id=ofp.OFP_NO_BUFFER, in_port=ofp.OFPP_CONTROLLER, actions=actions,
                              data=lldp)
    f = codec.packet_out_fields(ryu_bytes(msg))
    assert f["buffer_id"] == ofp.OFP_NO_BUFFER and f["in_port"] == codec.PORT_CONTROLLER
    assert f["out_ports"] == [3, codec.PORT_FLOOD, codec.PORT_IN_PORT] and f["data"] == lldp


def test_packet_out_with_a_broken_action_length_is_an_error():
    bad = bytearray(codec.encode_packet_out(OFP13, 1, codec.NO_BUFFER, 1, 2))
    bad[codec.PACKET_OUT_HEAD[OFP13] + 2:codec.PACKET_OUT_HEAD[OFP13] + 4] = (4).to_bytes(2, "big")
    with pytest.raises(ValueError, match="has length 4"):
        codec.packet_out_fields(bytes(bad))


@pytest.mark.parametrize("version", [OFP10, OFP13])
def test_ryu_parses_port_status_link_down(version):
    port = codec.PortSpec(port_no=3, hw_addr=codec.port_mac(9, 3), name="s9-eth3",
                          state=codec.OFPPS_LINK_DOWN)
    msg = ryu_parse(codec.encode_port_status(version, 11, codec.OFPPR_MODIFY, port))
    assert msg.reason == codec.OFPPR_MODIFY
    assert msg.desc.port_no == 3 and msg.desc.state == codec.OFPPS_LINK_DOWN
    assert msg.desc.hw_addr == "02:00:00:09:00:03"


def test_port_desc_reply_splits_past_one_message_and_ryu_reads_every_part():
    ports = [codec.port_spec(7, n) for n in range(1, 2501)]
    data = codec.encode_port_desc_reply(9, ports)
    frames, rest = codec.split_frames(data)
    assert rest == b"" and len(frames) == 3
    parsed = [ryu_parse(f) for f in frames]
    assert [m.flags for m in parsed] == [1, 1, 0]                    # OFPMPF_REPLY_MORE on all but the last
    assert [p.port_no for m in parsed for p in m.body] == list(range(1, 2501))


def test_features_reply_10_refuses_more_ports_than_it_holds():
    with pytest.raises(ValueError, match="holds at most 1364"):
        codec.encode_features_reply(OFP10, 1, 5, ports=[codec.port_spec(5, n) for n in range(1, 1366)])
