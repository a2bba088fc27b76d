"""The null controller's known answers: --delay-ms, --rate-cap and --malformed, over a
StringTransport and a task.Clock (no sockets, no sleeping)."""

import pytest
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport

from emulator import codec, frames
from emulator.codec import OFP10, OFP13
from emulator.nullctl import Behaviour, NullControllerFactory, main, malform, parse_malformed

# every test here runs over both PACKET_IN paths, compiled and pure Python (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("packet_in_path")


def session(factory, version=OFP13):
    """A handshaken session: the switch's HELLO read, everything the controller wrote so far cleared."""
    proto = factory.buildProtocol(None)
    transport = StringTransport()
    proto.makeConnection(transport)
    proto.dataReceived(codec.encode_hello(version, 1, (OFP10, OFP13) if version == OFP13 else ()))
    transport.clear()
    return proto, transport


def packet_ins(first, count, version=OFP13, switch=1):
    return frames.PacketInBlock(version, switch, frames.build_template("ipv4", 128), 5, nonce=7,
                                buffered=True).take(first, count)


def answers(transport):
    """The buffer ids of the PACKET_OUTs written (the PACKET_IN's sequence number), and clear."""
    outs, tail = codec.split_frames(transport.value())
    transport.clear()
    assert tail == b"" and all(f[1] == codec.PACKET_OUT for f in outs)
    return [int.from_bytes(f[8:12], "big") for f in outs]


# --------------------------------------------------------------------------- --delay-ms

def test_without_delay_or_cap_answers_at_once_and_needs_no_clock():
    factory = NullControllerFactory()
    proto, transport = session(factory)
    proto.dataReceived(packet_ins(0, 3))
    assert answers(transport) == [0, 1, 2]
    assert factory.queue is None and factory._clock is None     # the fast path; the reactor never looked up


def test_delay_holds_each_answer_until_d_ms_after_its_packet_in_was_read():
    clock = Clock()
    factory = NullControllerFactory(clock=clock, behaviour=Behaviour(delay_ms=2))
    proto, transport = session(factory)
    proto.dataReceived(packet_ins(0, 3))
    assert transport.value() == b""
    clock.advance(0.0015)
    proto.dataReceived(packet_ins(3, 2))                    # read at 1.5 ms: due at 3.5 ms
    clock.advance(0.0004)
    assert transport.value() == b""                         # 1.9 ms
    clock.advance(0.0001)
    assert answers(transport) == [0, 1, 2]                  # 2.0 ms: the first read's answers, in order
    clock.advance(0.0014)
    assert transport.value() == b""                         # 3.4 ms
    clock.advance(0.0001)
    assert answers(transport) == [3, 4]
    assert proto.packet_ins == 5 and factory.queue.sent == 5 and factory.queue.pending == 0
    assert not clock.getDelayedCalls()


def test_the_queue_reports_how_long_its_answers_were_held_late_timers_included():
    clock = Clock()
    factory = NullControllerFactory(clock=clock, behaviour=Behaviour(delay_ms=2))
    proto, transport = session(factory)
    assert factory.queue.summary()["held_ms_mean"] is None              # nothing taken yet
    proto.dataReceived(packet_ins(0, 3))
    clock.advance(0.0025)                                                # the timer fired 0.5 ms late
    proto.dataReceived(packet_ins(3, 1))
    clock.advance(0.002)                                                 # this one on time
    assert answers(transport) == [0, 1, 2, 3]
    got = factory.queue.summary()
    assert got["answers"] == 4 and got["dropped"] == 0
    assert got["held_ms_mean"] == pytest.approx((3 * 2.5 + 2.0) / 4) and got["held_ms_max"] == pytest.approx(2.5)


def test_a_paced_queue_reports_each_answers_hold():
    clock = Clock()
    factory = NullControllerFactory(clock=clock, behaviour=Behaviour(rate_cap=1000))         # one answer a millisecond
    proto, transport = session(factory)
    proto.dataReceived(packet_ins(0, 3))                                 # sent at 0, 1 and 2 ms
    clock.advance(0.001)
    clock.advance(0.001)
    assert answers(transport) == [0, 1, 2]
    assert factory.queue.summary()["held_ms_mean"] == pytest.approx(1.0)


def test_delay_applies_to_packet_in_answers_only():
    clock = Clock()
    factory = NullControllerFactory(clock=clock, behaviour=Behaviour(delay_ms=2))
    proto = factory.buildProtocol(None)
    transport = StringTransport()
    proto.makeConnection(transport)
    assert codec.decode(transport.value()).name == "hello"              # HELLO at once
    transport.clear()
    proto.dataReceived(codec.encode_hello(OFP13, 1, (OFP13,)))
    assert codec.decode(transport.value()).name == "features_request"   # FEATURES_REQUEST at once
    transport.clear()
    proto.dataReceived(packet_ins(0, 1) + codec.encode_echo_request(OFP13, 9, b"x"))
    assert codec.decode(transport.value()).name == "echo_reply"         # the echo is not held back
    transport.clear()
    clock.advance(0.002)
    assert answers(transport) == [0]


def test_delay_keeps_order_across_sessions_and_drops_answers_of_closed_ones():
    clock = Clock()
    factory = NullControllerFactory(clock=clock, behaviour=Behaviour(delay_ms=1))
    (a, ta), (b, tb) = session(factory), session(factory)
    a.dataReceived(packet_ins(0, 2))
    b.dataReceived(packet_ins(10, 2, switch=2))
    b.connectionLost(None)
    clock.advance(0.001)
    assert answers(ta) == [0, 1] and tb.value() == b""
    assert factory.queue.sent == 2 and factory.queue.discarded == 2 and factory.queue.dropped == 0


# --------------------------------------------------------------------------- --police-rate

def test_a_policer_passes_its_burst_then_its_rate_and_drops_the_rest_over_all_sessions():
    clock = Clock()
    factory = NullControllerFactory(clock=clock, behaviour=Behaviour(police_rate=1000, police_burst=20))
    (a, ta), (b, tb) = session(factory), session(factory)
    a.dataReceived(packet_ins(0, 15))
    b.dataReceived(packet_ins(100, 15, switch=2))
    assert answers(ta) == list(range(15)) and answers(tb) == list(range(100, 105))    # the burst: 20 of 30
    clock.advance(0.010)                                # 10 ms at 1000/s: 10 tokens
    a.dataReceived(packet_ins(15, 30))
    assert answers(ta) == list(range(15, 25))           # the first 10 of 30 pass, in order; nothing waits
    clock.advance(10)                                   # the bucket refills to its burst, no further
    b.dataReceived(packet_ins(200, 50, switch=2))
    assert answers(tb) == list(range(200, 220))
    assert (factory.police.passed, factory.police.dropped) == (50, 60) and factory.queue is None


def test_the_policer_is_on_the_command_line_and_refuses_nonsense():
    b = Behaviour(police_rate=5000.0, police_burst=200)
    assert b.arguments() == ["--police-rate", "5000.0", "--police-burst", "200"]
    with pytest.raises(ValueError, match="police_rate"):
        Behaviour(police_rate=0)
    with pytest.raises(ValueError, match="police_burst"):
        Behaviour(police_rate=10, police_burst=0)


# --------------------------------------------------------------------------- --rate-cap

def test_rate_cap_paces_one_fifo_queue_over_all_sessions_and_drops_nothing():
    clock = Clock()
    factory = NullControllerFactory(clock=clock, behaviour=Behaviour(rate_cap=100))
    (a, ta), (b, tb) = session(factory), session(factory)
    for first in range(0, 500, 50):                     # A 0-49, B 1000-1049, A 50-99, B 1050-1099 ...
        a.dataReceived(packet_ins(first, 50))
        b.dataReceived(packet_ins(1000 + first, 50, switch=2))
    assert answers(ta) == [0] and tb.value() == b""     # slot 0 is now: the first answer leaves at once
    got_a, got_b = [0], []
    for _ in range(490):                                # to 0.49 s, by 1 ms ticks
        clock.advance(0.001)
    got_a += answers(ta)
    assert got_a == list(range(50)) and tb.value() == b""            # slots 0..49: A's first read only
    for _ in range(510):                                # to 1 s
        clock.advance(0.001)
    got_a += answers(ta)
    got_b += answers(tb)
    assert len(got_a) + len(got_b) == pytest.approx(100, abs=1)      # 100/s (slots 0..100 fall in [0, 1 s])
    assert got_a == list(range(51)) and got_b == list(range(1000, 1050))
    assert factory.queue.pending == 1000 - 101
    clock.advance(10)                                  # one late tick sends everything that came due
    got_a += answers(ta)
    got_b += answers(tb)
    assert got_a == list(range(500)) and got_b == list(range(1000, 1500))    # order kept, nothing lost
    q = factory.queue
    assert (q.sent, q.dropped, q.discarded, q.pending, q.high_water) == (1000, 0, 0, 0, 999)


@pytest.mark.parametrize("rate", [1_000, 20_000, 200_000])
@pytest.mark.parametrize("tick", [0.001, 0.0037])
def test_rate_cap_holds_at_high_rates_with_coarse_ticks(rate, tick):
    """Ticks far coarser than 1/R still give R/s: each tick sends every answer whose slot came
    (and at epoch-sized clock values, where a running sum of 1/R would round off)."""
    clock = Clock()
    clock.advance(1_700_000_000.0)
    start = clock.seconds()
    factory = NullControllerFactory(clock=clock, behaviour=Behaviour(rate_cap=rate))
    proto, transport = session(factory)
    duration = 0.2
    n = int(rate * duration * 1.5)
    block = packet_ins(0, 1)
    proto.dataReceived(block * n)
    elapsed = 0.0
    while elapsed < duration:
        clock.advance(tick)
        elapsed += tick
    sent = len(codec.split_frames(transport.value())[0])
    assert sent == pytest.approx(rate * (clock.seconds() - start), rel=0.01, abs=2)
    assert factory.queue.sent == sent and factory.queue.pending == n - sent


def test_rate_cap_and_delay_combine_as_the_later_of_ready_and_slot():
    clock = Clock()
    factory = NullControllerFactory(clock=clock, behaviour=Behaviour(rate_cap=1000, delay_ms=5))   # slots 1 ms apart
    proto, transport = session(factory)
    proto.dataReceived(packet_ins(0, 3))
    seen = []
    for step in range(1, 21):
        clock.advance(0.001)
        seen += [(step, bid) for bid in answers(transport)]
        if step == 10:
            proto.dataReceived(packet_ins(3, 1))       # after an idle gap: ready at 15 ms, no backlog
    assert seen == [(5, 0), (6, 1), (7, 2), (15, 3)]


def test_rate_cap_queue_is_bounded_past_which_answers_are_dropped_and_counted():
    clock = Clock()
    factory = NullControllerFactory(clock=clock, queue_limit=10, behaviour=Behaviour(rate_cap=10))
    drops = []
    factory.queue.on_first_drop = drops.append
    proto, transport = session(factory)
    proto.dataReceived(packet_ins(0, 15))              # a read's answers are queued, then the due ones go
    assert factory.queue.dropped == 5 and len(drops) == 1 and factory.queue.high_water == 10
    proto.dataReceived(packet_ins(15, 1))             # 9 wait: room for one more
    assert factory.queue.dropped == 5
    clock.advance(5)
    assert answers(transport) == list(range(10)) + [15] and proto.packet_ins == 16
    assert factory.queue.sent == 11 and factory.queue.pending == 0


def test_rate_cap_discards_answers_for_a_session_that_closed():
    clock = Clock()
    factory = NullControllerFactory(clock=clock, behaviour=Behaviour(rate_cap=10))
    (a, ta), (b, tb) = session(factory), session(factory)
    a.dataReceived(packet_ins(0, 3))
    b.dataReceived(packet_ins(0, 3, switch=2))
    a.connectionLost(None)
    clock.advance(1)
    assert answers(ta) == [0] and answers(tb) == [0, 1, 2]
    assert factory.queue.discarded == 2 and factory.queue.sent == 4


# --------------------------------------------------------------------------- --malformed

HELLO_13 = codec.encode_hello(OFP13, 1, (OFP10, OFP13))
EXPECTED = {   # what the message becomes: version byte and xid kept unless said otherwise
    "short-length": lambda m: m[0:2] + b"\x00\x04" + m[4:8],
    "truncated-body": lambda m: m[0:1] + b"\x0d\x00\x08" + m[4:8],
    "unknown-type": lambda m: m[0:1] + b"\xfa\x00\x08" + m[4:8],
    "bad-version": lambda m: b"\x09" + m[1:],
}


@pytest.mark.parametrize("what", list(EXPECTED))
def test_malformed_hello(what):
    factory = NullControllerFactory(behaviour=Behaviour(malformed=f"hello:{what}"))
    proto = factory.buildProtocol(None)
    transport = StringTransport()
    proto.makeConnection(transport)
    assert transport.value() == EXPECTED[what](HELLO_13)
    transport.clear()
    proto.dataReceived(HELLO_13)                       # then it carries on: FEATURES_REQUEST
    assert codec.decode(transport.value()).name == "features_request"


@pytest.mark.parametrize("what", list(EXPECTED))
@pytest.mark.parametrize("version", [OFP10, OFP13])
def test_malformed_handshake(what, version):
    factory = NullControllerFactory(behaviour=Behaviour(malformed=("handshake", what)))
    proto = factory.buildProtocol(None)
    transport = StringTransport()
    proto.makeConnection(transport)
    transport.clear()
    proto.dataReceived(codec.encode_hello(version, 1, (OFP10, OFP13) if version == OFP13 else ()))
    features_request = codec.header(version, codec.FEATURES_REQUEST, 8, 1)
    assert transport.value() == EXPECTED[what](features_request)


@pytest.mark.parametrize("what", list(EXPECTED))
@pytest.mark.parametrize("version", [OFP10, OFP13])
def test_malformed_answer_to_the_first_packet_in_of_each_session(what, version):
    factory = NullControllerFactory(behaviour=Behaviour(malformed=f"packet_in:{what}"))
    reference, ref_transport = session(NullControllerFactory(), version)
    reference.dataReceived(packet_ins(0, 1, version))
    good_first = ref_transport.value()
    for _ in range(2):                                  # each session's first answer
        proto, transport = session(factory, version)
        proto.dataReceived(packet_ins(0, 3, version))
        data = transport.value()
        bad = EXPECTED[what](good_first)
        assert data.startswith(bad)
        outs, tail = codec.split_frames(data[len(bad):])
        assert tail == b"" and [int.from_bytes(f[8:12], "big") for f in outs] == [1, 2]
        transport.clear()
        proto.dataReceived(packet_ins(3, 1, version))
        assert answers(transport) == [3]


def test_malformed_answer_goes_through_the_delay_line_too():
    clock = Clock()
    factory = NullControllerFactory(clock=clock, behaviour=Behaviour(delay_ms=2, malformed="packet_in:unknown-type"))
    proto, transport = session(factory)
    proto.dataReceived(packet_ins(0, 2))
    assert transport.value() == b""
    clock.advance(0.002)
    assert transport.value()[:4] == bytes((OFP13, 250, 0, 8)) and len(transport.value()) == 8 + 24 + 16


def test_malformed_bytes_are_what_the_emulator_codec_chokes_on():
    po = codec.encode_packet_out(OFP13, 5, 42, 1, codec.OFPP_FLOOD_13)
    with pytest.raises(codec.FramingError):
        codec.split_frames(malform(po, "short-length"))
    for version in (OFP10, OFP13):
        msg = codec.decode(malform(codec.encode_packet_out(version, 5, 42, 1, 0xFFFB), "truncated-body"))
        assert msg.name == "malformed_packet_out" and msg.xid == 5
    msg = codec.decode(malform(po, "unknown-type"))
    assert isinstance(msg, codec.Unknown) and msg.type == 250
    msg = codec.decode(malform(po, "bad-version"))
    assert isinstance(msg, codec.Unknown) and msg.version == 9 and msg.body == po[8:]


def test_option_values_are_checked():
    assert parse_malformed("packet_in:bad-version") == ("packet_in", "bad-version")
    for bad in ("packet_in", "hello:nope", "later:short-length", ""):
        with pytest.raises(ValueError, match="WHEN:WHAT"):
            parse_malformed(bad)
    for args in (["--malformed", "hello"], ["--delay-ms", "-1"], ["--rate-cap", "0"], ["--rate-cap", "x"]):
        with pytest.raises(SystemExit) as exc:
            main(args)
        assert exc.value.code == 2
    with pytest.raises(ValueError):
        NullControllerFactory(behaviour=Behaviour(rate_cap=0))
    with pytest.raises(ValueError):
        NullControllerFactory(behaviour=Behaviour(delay_ms=-1))


def test_a_rate_capped_controller_stops_reading_when_its_backlog_is_full():
    # Like a real controller whose input queue is full: it stops reading, and TCP pushes back on the switches.
    clock = Clock()
    f = NullControllerFactory(clock=clock, backlog=10, behaviour=Behaviour(rate_cap=100.0))
    p = f.buildProtocol(None)
    t = StringTransport()
    p.makeConnection(t)
    p.dataReceived(codec.encode_hello(OFP13, 1, (OFP13,)))
    p.dataReceived(b"".join(codec.encode_packet_in(OFP13, i, i, 1, b"\0" * 64) for i in range(12)))
    assert t.producerState == "paused"                 # 12 waiting > 10: this session is not read any more
    clock.advance(0.07)                                # 8 answers out at 100/s: 4 wait, at most half of 10
    assert t.producerState == "producing" and f.queue.dropped == 0


def connect(factory):
    """A TCP connection accepted by ``factory`` (no switch HELLO yet)."""
    proto = factory.buildProtocol(None)
    transport = StringTransport()
    proto.makeConnection(transport)
    return proto, transport


@pytest.mark.parametrize("mode", ["crash", "stall"])
def test_past_the_limit_a_collapsing_controller_crashes_or_stalls_at_once(mode):
    seen = []
    factory = NullControllerFactory(collapse_action=lambda m, why: seen.append((m, why)),
                                    behaviour=Behaviour(session_limit=2, limit_mode=mode))
    connect(factory), connect(factory)
    assert seen == []
    connect(factory)
    assert seen == [(mode, "session 3 is past the limit of 2")]


def test_close_all_closes_every_session_at_its_limit_and_serves_anew():
    factory = NullControllerFactory(behaviour=Behaviour(session_limit=2, limit_mode="close-all"))
    (a, ta), (b, tb) = connect(factory), connect(factory)
    c, tc = connect(factory)
    assert ta.disconnecting and tb.disconnecting and tc.disconnecting and factory.collapses == 1
    for proto in (a, b, c):
        proto.connectionLost(None)
    d, td = connect(factory)
    assert not td.disconnecting and td.value().startswith(b"\x04\x00")   # a HELLO for the next switch


def test_hold_limit_collapses_only_when_held_past_it_for_hold_after():
    clock, seen = Clock(), []
    factory = NullControllerFactory(clock=clock, collapse_action=lambda m, why: seen.append(why),
                                    behaviour=Behaviour(limit_mode="crash", hold_limit=2, hold_after=1.5))
    protos = [connect(factory)[0] for _ in range(3)]
    clock.advance(1.0)
    protos[2].connectionLost(None)             # back to 2: disarmed
    clock.advance(1.0)
    assert seen == []
    connect(factory)
    clock.advance(1.5)
    assert seen == ["more than 2 sessions open for 1.5 s"]


def test_hold_limit_needs_a_collapsing_mode():
    with pytest.raises(ValueError, match="needs a collapsing mode"):
        NullControllerFactory(behaviour=Behaviour(limit_mode="refuse", hold_limit=3))
