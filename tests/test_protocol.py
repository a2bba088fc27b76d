"""One emulated switch driven byte by byte: StringTransport and task.Clock, no sleeps."""

import struct

import pytest
from twisted.internet import error as terror
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.python.failure import Failure

from emulator import codec
from emulator.codec import OFP10, OFP13
from emulator.protocol import (
    CLOSE_BY_PEER,
    CLOSE_HANDSHAKE_TIMEOUT,
    CLOSE_PROTOCOL,
    CLOSE_RESET,
    CLOSE_VERSION,
    SessionListener,
    SessionRules,
    SwitchProtocol,
    SwitchSpec,
)


class Recorder(SessionListener):
    def __init__(self):
        self.ready, self.closed, self.echoes = [], [], []

    def session_ready(self, s):
        self.ready.append(s)

    def session_closed(self, s, kind, detail):
        self.closed.append((kind, detail))

    def echo_answered(self, s, rtt_ns):
        self.echoes.append(rtt_ns)


class Harness:
    """A switch on a StringTransport whose clock and ns time source move only when told."""

    def __init__(self, versions=(OFP13,), handshake_timeout=10.0, trace=None):
        self.clock = Clock()
        self.listener = Recorder()
        self.spec = SwitchSpec.simple(0x42, versions, n_ports=3)
        self.proto = SwitchProtocol(self.spec, self.clock, self.listener, SessionRules(handshake_timeout),
                                    now_ns=lambda: int(self.clock.seconds() * 1e9), trace=trace)
        self.transport = StringTransport()
        self.proto.makeConnection(self.transport)

    def sent(self):
        frames, tail = codec.split_frames(self.transport.value())
        assert tail == b""
        self.transport.clear()
        return [codec.decode(f) for f in frames]

    def feed(self, *chunks):
        for chunk in chunks:
            self.proto.dataReceived(chunk)

    def handshake(self, version=OFP13):
        self.sent()
        bitmap = (OFP10, OFP13) if version == OFP13 else ()
        self.feed(codec.encode_hello(version, 1, bitmap), codec.header(version, codec.FEATURES_REQUEST, 8, 2))
        return self.sent()


def test_hello_offers_bitmap_and_features_complete_handshake():
    h = Harness()
    hello = h.sent()
    assert [m.name for m in hello] == ["hello"]
    assert codec.hello_versions(hello[0]) == {OFP13}
    h.clock.advance(0.25)
    h.feed(codec.encode_hello(OFP13, 1, (OFP10, OFP13)))
    assert h.proto.version == OFP13 and not h.proto.ready
    h.feed(codec.header(OFP13, codec.FEATURES_REQUEST, 8, 99))
    reply = h.sent()
    assert [(m.name, m.xid) for m in reply] == [("features_reply", 99)]
    assert reply[0].fields["datapath_id"] == 0x42
    assert h.listener.ready == [h.proto]
    assert h.proto.t_ready == 250_000_000 and h.proto.t_connected == 0


def test_openflow10_switch_lists_ports_in_features_reply():
    h = Harness(versions=(OFP10,))
    assert codec.hello_versions(h.sent()[0]) is None  # a 1.0 switch sends a plain HELLO
    h.feed(codec.encode_hello(OFP13, 1, (OFP10, OFP13)), codec.header(OFP10, codec.FEATURES_REQUEST, 8, 5))
    (reply,) = h.sent()
    assert reply.version == OFP10 and len(reply.body) == 24 + 3 * 48


def test_handshake_fed_one_byte_at_a_time():
    h = Harness()
    h.sent()
    stream = codec.encode_hello(OFP13, 1, (OFP13,)) + codec.header(OFP13, codec.FEATURES_REQUEST, 8, 2)
    h.feed(*[stream[i:i + 1] for i in range(len(stream))])
    assert [m.name for m in h.sent()] == ["features_reply"]
    assert h.listener.ready


def test_no_common_version_sends_hello_failed_and_closes():
    h = Harness(versions=(OFP13,))
    h.sent()
    h.feed(codec.encode_hello(OFP10, 1))
    (err,) = h.sent()
    assert err.name == "error" and err.fields["err_type"] == codec.OFPET_HELLO_FAILED
    assert h.transport.disconnecting
    h.proto.connectionLost(Failure(terror.ConnectionDone()))
    assert h.listener.closed[0][0] == CLOSE_VERSION
    assert h.listener.closed[0][1] == ("the controller speaks OpenFlow 1.0 only; run with --openflow 1.0 "
                                       "(controller offered version 0x01, switch speaks 1.3)")


@pytest.mark.parametrize("header,bitmap,said", [
    (OFP10, None, "the controller speaks OpenFlow 1.0 only; run with --openflow 1.0"),
    (OFP13, (OFP13,), "the controller speaks OpenFlow 1.3 only; run with --openflow 1.3"),
    (3, None, "the controller speaks OpenFlow 1.2 at most; run with --openflow 1.0"),
    (6, (5, 6), "the controller speaks OpenFlow 1.4 and 1.5 only, which the suite does not (it speaks OpenFlow 1.0 "
                "and 1.3)"),
])
def test_a_version_mismatch_is_said_in_words(header, bitmap, said):
    assert codec.version_advice(header, frozenset(bitmap) if bitmap else None) == said


def test_echo_request_answered_with_same_xid_and_data():
    h = Harness()
    h.handshake()
    h.feed(codec.encode_echo_request(OFP13, 77, b"payload"))
    (reply,) = h.sent()
    assert (reply.name, reply.xid, reply.body) == ("echo_reply", 77, b"payload")


def test_probe_echo_measures_rtt_on_the_injected_clock():
    h = Harness()
    h.handshake()
    xid = h.proto.probe_echo()
    (req,) = h.sent()
    assert (req.name, req.xid) == ("echo_request", xid)
    h.clock.advance(0.003)
    h.feed(codec.encode_echo_reply(OFP13, xid))
    assert h.listener.echoes == [3_000_000]
    h.feed(codec.encode_echo_reply(OFP13, xid))  # a duplicate reply is not counted twice
    assert h.listener.echoes == [3_000_000]


def test_handshake_timeout_closes_with_reason():
    h = Harness(handshake_timeout=2.0)
    h.clock.advance(1.9)
    assert not h.transport.disconnecting
    h.clock.advance(0.2)
    assert h.transport.disconnecting
    h.proto.connectionLost(Failure(terror.ConnectionDone()))
    kind, detail = h.listener.closed[0]
    assert kind == CLOSE_HANDSHAKE_TIMEOUT and "no HELLO" in detail


def test_handshake_timer_cancelled_once_ready():
    h = Harness(handshake_timeout=2.0)
    h.handshake()
    h.clock.advance(10)
    assert not h.transport.disconnecting and h.clock.getDelayedCalls() == []


@pytest.mark.parametrize("stats_type,expected", [(codec.MP_DESC, "stats_reply"), (codec.MP_PORT_DESC, "stats_reply"),
                                                 (codec.MP_FLOW, "stats_reply"), (99, "error")])
def test_multipart_requests(stats_type, expected):
    h = Harness()
    h.handshake()
    h.feed(codec.header(OFP13, 18, 16, 8) + struct.pack("!HH4x", stats_type, 0))
    (reply,) = h.sent()
    assert (reply.name, reply.xid) == (expected, 8)
    if stats_type == codec.MP_PORT_DESC:
        assert len(reply.body) == 8 + 3 * 64
    if expected == "error":
        assert reply.fields["code"] == codec.OFPBRC_BAD_STAT


def test_barrier_role_get_config_replies():
    h = Harness()
    h.handshake()
    h.feed(codec.header(OFP13, codec.SET_CONFIG, 12, 1) + struct.pack("!HH", 0, 0xFFFF),
           codec.header(OFP13, codec.GET_CONFIG_REQUEST, 8, 2),
           codec.header(OFP13, 20, 8, 3),
           codec.header(OFP13, 24, 24, 4) + struct.pack("!I4xQ", codec.OFPCR_ROLE_MASTER, 12))
    replies = h.sent()
    assert [(m.name, m.xid) for m in replies] == [("get_config_reply", 2), ("barrier_reply", 3), ("role_reply", 4)]
    assert struct.unpack("!HH", replies[0].body) == (0, 0xFFFF)
    assert struct.unpack("!I4xQ", replies[2].body) == (codec.OFPCR_ROLE_MASTER, 12)


def test_flow_mod_accepted_unknown_type_answered_with_error():
    h = Harness()
    h.handshake()
    h.feed(codec.header(OFP13, codec.FLOW_MOD, 8, 1), codec.header(OFP13, 77, 8, 2))
    (err,) = h.sent()
    assert (err.name, err.xid, err.fields["code"]) == ("error", 2, codec.OFPBRC_BAD_TYPE)
    assert h.proto.counters.by_name["flow_mod"] == 1


def test_wrong_version_after_negotiation_is_bad_version():
    h = Harness()
    h.handshake()
    h.feed(codec.header(OFP10, codec.FEATURES_REQUEST, 8, 5))
    (err,) = h.sent()
    assert err.fields["code"] == codec.OFPBRC_BAD_VERSION


def test_framing_error_closes_session():
    h = Harness()
    h.handshake()
    h.feed(struct.pack("!BBHI", OFP13, 0, 4, 1))
    assert h.transport.disconnecting
    h.proto.connectionLost(Failure(terror.ConnectionDone()))
    kind, detail = h.listener.closed[0]
    assert kind == CLOSE_PROTOCOL and "below the 8-byte header" in detail


@pytest.mark.parametrize("exc,kind", [(terror.ConnectionDone(), CLOSE_BY_PEER), (terror.ConnectionLost(), CLOSE_RESET)])
def test_controller_close_is_classified(exc, kind):
    h = Harness()
    h.handshake()
    h.proto.connectionLost(Failure(exc))
    assert h.listener.closed[0][0] == kind


def test_every_message_is_timestamped_and_traced():
    seen = []
    h = Harness(trace=lambda direction, version, name, xid, t: seen.append((direction, name, t)))
    h.clock.advance(1.0)
    h.handshake()
    assert [(d, n) for d, n, _ in seen] == [("tx", "hello"), ("rx", "hello"), ("rx", "features_request"),
                                            ("tx", "features_reply")]
    assert [t for _, _, t in seen] == [0, 1_000_000_000, 1_000_000_000, 1_000_000_000]


# --------------------------------------------------------------------------- OpenFlow 1.3 roles on sessions

class RoleRecorder(Recorder):
    def __init__(self):
        super().__init__()
        self.roles = []

    def role_requested(self, s, role, generation_id, answer, t):
        self.roles.append((role, generation_id, answer.outcome, t))


def test_sessions_of_one_switch_share_its_roles():
    from emulator.roles import RoleTable

    table, clock = RoleTable(), Clock()
    listener = RoleRecorder()
    sessions = []
    for _ in range(2):
        proto = SwitchProtocol(SwitchSpec.simple(0x42), clock, listener, SessionRules(0), now_ns=lambda: 7, roles=table)
        tr = StringTransport()
        proto.makeConnection(tr)
        proto.dataReceived(codec.encode_hello(OFP13, 1, (OFP13,)) + codec.header(OFP13, codec.FEATURES_REQUEST, 8, 2))
        tr.clear()
        sessions.append((proto, tr))
    (a, ta), (b, tb) = sessions
    a.dataReceived(codec.encode_role_request(3, codec.OFPCR_ROLE_MASTER, 5))
    b.dataReceived(codec.encode_role_request(4, codec.OFPCR_ROLE_MASTER, 6))      # takes over: a is demoted
    assert (a.controller_role, b.controller_role) == (codec.OFPCR_ROLE_SLAVE, codec.OFPCR_ROLE_MASTER)
    a.dataReceived(codec.encode_role_request(5, codec.OFPCR_ROLE_MASTER, 5))      # a's generation is stale now
    assert listener.roles == [(2, 5, "master", 7), (2, 6, "master", 7), (2, 5, "stale", 7)]
    ta.clear()
    a.dataReceived(codec.header(OFP13, codec.FLOW_MOD, 8, 9))
    (err,) = codec.split_frames(ta.value())[0]
    assert codec.decode(err).fields["code"] == codec.OFPBRC_IS_SLAVE and a.counters.errors_sent == 2
    b.connectionLost(Failure(terror.ConnectionDone()))                            # a lost master holds no role
    assert table.master() is None and table.connections() == [a]


def test_openflow10_sessions_know_no_roles():
    h = Harness(versions=(OFP10,))
    h.sent()
    h.feed(codec.encode_hello(OFP10, 1), codec.header(OFP10, codec.FEATURES_REQUEST, 8, 2))
    h.sent()
    h.feed(codec.header(OFP10, 24, 24, 4) + struct.pack("!I4xQ", codec.OFPCR_ROLE_SLAVE, 1),
           codec.header(OFP10, codec.FLOW_MOD, 8, 5))
    (err,) = h.sent()                                       # ROLE_REQUEST is not a 1.0 message; FLOW_MOD is fine
    assert (err.xid, err.fields["code"]) == (4, codec.OFPBRC_BAD_TYPE)
    assert h.proto.wants_async(0, 0) and h.proto.controller_role == codec.OFPCR_ROLE_EQUAL


def test_a_switch_session_turns_nagle_off_so_each_message_leaves_when_it_is_written():
    class TcpTransport(StringTransport):
        nodelay = False

        def setTcpNoDelay(self, enabled):
            self.nodelay = enabled
    transport = TcpTransport()
    SwitchProtocol(SwitchSpec.simple(1), Clock()).makeConnection(transport)
    assert transport.nodelay is True
