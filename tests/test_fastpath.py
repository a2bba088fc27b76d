"""The compiled PACKET_IN path and pure Python count the same, byte for byte: the same streams through both.

The other tests of the path (test_traffic.py, test_nullctl.py, test_async_logic.py) each run over both paths
(``packet_in_path`` in conftest.py); here one random stream of every kind of answer goes through each and the
results must be equal in every field."""

import os
import random
import struct

import pytest
from test_traffic import Net, flow_mod, packet_out_for
from twisted.internet.testing import StringTransport

from conftest import compiled
from emulator import codec, fastpath, frames
from emulator.codec import OFP10, OFP13
from emulator.nullctl import Behaviour, NullControllerFactory


def over(path, monkeypatch, fn):
    monkeypatch.setattr(fastpath, "native", compiled() if path == "compiled" else None)
    try:
        return fn()
    finally:
        monkeypatch.undo()


def answers_stream(version, buffered, seed):
    """Run a max-mode trial over one switch, answering its requests with a random mix: PACKET_OUT by buffer_id or
    carrying the frame, buffered and unbuffered FLOW_MODs, duplicates, stale seqs, answers of an earlier trial's
    nonce, ECHO_REQUESTs between them, some answers after the response timeout; the stream is cut at random
    places.  Returns the trial's result and what the switch wrote."""
    rng = random.Random(seed)
    net = Net(version=version, macs=5, buffered=buffered, ring=256)
    net.traffic(mode="max", max_batch=200, tick=5.0, duration=1.0, response_timeout=0.02)   # one write
    sw = net.switches[0]
    stream = []
    pins = net.requests(sw)
    for pin in pins:
        roll = rng.random()
        carry = not buffered or roll < 0.15          # unbuffered requests are answered with their frame
        if roll < 0.5:
            stream.append(packet_out_for(version, pin, with_data=carry))
        elif roll < 0.6:
            stream.append(flow_mod(version, pin["buffer_id"] if buffered else codec.NO_BUFFER, pin["data"][6:12]))
        elif roll < 0.7:
            stream.append(packet_out_for(version, pin, with_data=carry) * 2)       # a duplicate
        elif roll < 0.75:                                                          # a seq never sent
            data = bytearray(pin["data"])
            data[frames.TAG_AT + 4:frames.TAG_AT + 8] = (pin["buffer_id"] + 100_000 & 0xFFFF_FFFF).to_bytes(4, "big")
            stale = dict(pin, buffer_id=(pin["buffer_id"] + 100_000) & 0xFFFFFFFF, data=bytes(data))
            stream.append(packet_out_for(version, stale, with_data=carry))
        elif roll < 0.8:
            data = bytearray(pin["data"])
            data[frames.TAG_AT:frames.TAG_AT + 4] = b"\x01\x02\x03\x04"          # another trial's nonce
            stream.append(packet_out_for(version, dict(pin, data=bytes(data)), with_data=True))
        elif roll < 0.85:
            stream.append(codec.encode_echo_request(version, 7, b"x") + packet_out_for(version, pin, with_data=carry))
        # else: never answered (lost)
    blob = b"".join(stream)
    at = 0
    while at < len(blob):
        k = rng.randint(1, 2000)
        net.advance(rng.choice((0.0, 0.0, 0.0005, 0.002, 0.006)))
        sw.dataReceived(blob[at:at + k])
        at += k
    net.advance(1.0)
    net.advance(0.2)
    (result,) = net.results
    return result, sw.transport.value()


@pytest.mark.parametrize("version", [OFP10, OFP13])
@pytest.mark.parametrize("buffered", [True, False])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_random_stream_of_answers_counts_the_same_on_both_paths(monkeypatch, version, buffered, seed):
    fast = over("compiled", monkeypatch, lambda: answers_stream(version, buffered, seed))
    slow = over("python", monkeypatch, lambda: answers_stream(version, buffered, seed))
    assert fast == slow
    r = fast[0]
    # the stream had every kind in it: the comparison is not of two empty results
    assert r.nrx > 0 and r.duplicates > 0 and r.stale > 0 and r.flow_mod > 0 and r.latencies_ns
    assert r.late > 0 or r.ntx > r.nrx


@pytest.mark.parametrize("version", [OFP10, OFP13])
def test_a_packet_out_shorter_than_its_fixed_fields_closes_the_session_alike_on_both_paths(monkeypatch, version):
    def run():
        net = Net(version=version)
        net.traffic(mode="per-switch")
        sw = net.switches[0]
        (pin,) = net.requests(sw)
        good = packet_out_for(version, pin)
        sw.dataReceived(good + codec.header(version, codec.PACKET_OUT, 10, 5) + b"\0\0")
        return sw.nrx, sw._closing_kind, sw._closing_detail, sw.transport.disconnecting
    fast, slow = over("compiled", monkeypatch, run), over("python", monkeypatch, run)
    assert fast == slow and fast[0] == 1 and fast[3] and "malformed packet_out" in fast[2]


def null_controller_answers(version, answer, seed):
    rng = random.Random(seed)
    factory = NullControllerFactory(versions=(version,), behaviour=Behaviour(answer=answer))
    proto = factory.buildProtocol(None)
    transport = StringTransport()
    proto.makeConnection(transport)
    proto.dataReceived(codec.encode_hello(version, 1, (version,) if version == OFP13 else ()))
    transport.clear()
    template = frames.build_template()
    parts = []
    for dpid, buffered in ((1, True), (2, False), (3, True)):
        block = frames.PacketInBlock(version, dpid, template, 7, nonce=9, buffered=buffered)
        parts.append(block.take(rng.randint(0, 50), rng.randint(1, 30)))
    parts.insert(1, codec.encode_echo_request(version, 3, b"ping"))
    blob = b"".join(parts)
    at = 0
    while at < len(blob):
        k = rng.randint(1, 400)
        proto.dataReceived(blob[at:at + k])
        at += k
    return proto.packet_ins, proto.xid, transport.value()


@pytest.mark.parametrize("version", [OFP10, OFP13])
@pytest.mark.parametrize("answer", ["packet_out", "none"])
def test_the_null_controller_answers_the_same_bytes_on_both_paths(monkeypatch, version, answer):
    fast = over("compiled", monkeypatch, lambda: null_controller_answers(version, answer, 4))
    slow = over("python", monkeypatch, lambda: null_controller_answers(version, answer, 4))
    assert fast == slow and fast[0] > 30
    assert (len(fast[2]) > 1000) == (answer == "packet_out")


def malformed_packet_ins(version):
    """PACKET_INs a controller can be sent by a broken switch, between two good ones: shorter than the fixed
    fields (8, 12 and one byte short of them), and, for 1.3, a match whose length runs past the message."""
    good = frames.PacketInBlock(version, 1, frames.build_template(), 3, nonce=9).take(0, 1)
    least = 18 if version == OFP10 else 34
    bad = [codec.header(version, codec.PACKET_IN, n, 40 + n) + bytes(range(n - 8)) for n in (8, 12, least - 1)]
    if version == OFP13:
        body = struct.pack("!IHBBQHH", 7, 128, 0, 0, 0, 1, 200) + bytes(12)      # match length 200 in 40 bytes
        bad.append(codec.header(version, codec.PACKET_IN, 8 + len(body), 77) + body)
    return good, bad


@pytest.mark.parametrize("version", [OFP10, OFP13])
@pytest.mark.parametrize("pieces", [1, 7])
def test_the_null_controller_answers_malformed_packet_ins_with_bad_length_alike_on_both_paths(monkeypatch, version,
                                                                                              pieces):
    """Each too-short PACKET_IN gets ERROR BAD_REQUEST/BAD_LEN with its xid and bytes (the spec's answer to a request
    of a bad length); the good ones around them get their PACKET_OUTs; the session stays open (issue 46: it raised
    struct.error or IndexError, or read the next message's bytes)."""
    good, bad = malformed_packet_ins(version)

    def run():
        factory = NullControllerFactory(versions=(version,))
        proto = factory.buildProtocol(None)
        transport = StringTransport()
        proto.makeConnection(transport)
        proto.dataReceived(codec.encode_hello(version, 1, (version,) if version == OFP13 else ()))
        transport.clear()
        blob = b"".join([good, *bad, good])
        step = -(-len(blob) // pieces)
        for at in range(0, len(blob), step):
            proto.dataReceived(blob[at:at + step])
        return proto.packet_ins, proto.bad_length, transport.value(), transport.disconnecting
    fast, slow = over("compiled", monkeypatch, run), over("python", monkeypatch, run)
    assert fast == slow
    count, bad_length, written, closing = fast
    replies, tail = codec.split_frames(written)
    assert tail == b"" and not closing and count == len(bad) + 2 and bad_length == len(bad)
    assert [m[1] for m in replies] == [codec.PACKET_OUT] + [codec.ERROR] * len(bad) + [codec.PACKET_OUT]
    for reply, message in zip(replies[1:-1], bad):
        assert reply[4:8] == message[4:8]                                   # the offending request's xid
        assert struct.unpack_from("!HH", reply, 8) == (codec.OFPET_BAD_REQUEST, codec.OFPBRC_BAD_LEN)
        assert reply[12:] == message[:64]


def switch_after(version, answer, max_len=codec.MAX_MESSAGE_LEN):
    """One switch in a per-switch trial (accepting messages up to ``max_len``), sent its first request's answer then
    ``answer(pin)``: what it counted and whether it closed, and why."""
    def run():
        net = Net(version=version)
        net.switches[0].max_message_len = max_len
        net.traffic(mode="per-switch")
        sw = net.switches[0]
        (pin,) = net.requests(sw)
        sw.dataReceived(packet_out_for(version, pin) + answer(pin))
        return (sw.nrx, sw.duplicates, sw.stale, sw.traffic.unmatched if sw.traffic else None, sw._closing_kind,
                sw._closing_detail, sw.transport.disconnecting)
    return run


def _with_length(message: bytes, length: int) -> bytes:
    return message[:2] + struct.pack("!H", length) + message[4:]


@pytest.mark.parametrize("version", [OFP10, OFP13])
@pytest.mark.parametrize("case", ["over the maximum length", "actions_len past the end",
                                  "flow_mod too short for its buffer_id", "another version"])
def test_malformed_answers_are_handled_alike_on_both_paths(monkeypatch, version, case):
    """Answers a controller can get wrong, each the same on both paths (issue 46): a length field past what the
    session allows closes it with a framing error; a PACKET_OUT whose actions_len points past its end, and a
    FLOW_MOD too short to hold its buffer_id, match nothing; an answer in another OpenFlow version is not counted
    as an answer."""
    alen_at = codec.PACKET_OUT_ACTIONS_LEN_AT[version]

    def answer(pin):
        if case == "over the maximum length":
            return _with_length(packet_out_for(version, pin), 2000)         # the session allows 1,024
        if case == "actions_len past the end":
            po = bytearray(packet_out_for(version, dict(pin, buffer_id=codec.NO_BUFFER), with_data=True))
            po[alen_at:alen_at + 2] = struct.pack("!H", 0xFFF0)
            return bytes(po)
        if case == "flow_mod too short for its buffer_id":
            return codec.header(version, codec.FLOW_MOD, 16, 5) + bytes(8)
        other = OFP10 if version == OFP13 else OFP13
        return bytes([other]) + packet_out_for(version, pin)[1:]

    run = switch_after(version, answer, 1024 if case == "over the maximum length" else codec.MAX_MESSAGE_LEN)
    fast, slow = over("compiled", monkeypatch, run), over("python", monkeypatch, run)
    assert fast == slow
    nrx, duplicates, stale, unmatched, closing_kind, detail, disconnecting = fast
    assert nrx == 1 and duplicates == 0
    if case == "over the maximum length":
        assert disconnecting and "framing error" in (detail or "")
    elif case == "another version":
        assert not disconnecting
    else:
        assert not disconnecting and unmatched == 1


@pytest.mark.parametrize("version", [OFP10, OFP13])
@pytest.mark.parametrize("buffered", [True, False])
def test_packet_in_blocks_are_the_same_bytes_on_both_paths(monkeypatch, version, buffered):
    def take():
        block = frames.PacketInBlock(version, 3, frames.build_template(), 5, nonce=11, buffered=buffered)
        return [block.take(seq, count) for seq, count in ((0, 1), (3, 4), (7, 13), (2**31 + 3, 5), (99, 1))]
    assert over("compiled", monkeypatch, take) == over("python", monkeypatch, take)


@pytest.mark.component
def test_the_path_that_runs_is_named_and_the_environment_can_choose_python(monkeypatch):
    import importlib
    import subprocess
    import sys
    env = dict(os.environ, **{fastpath.ENV: "1"})
    code = "from emulator import fastpath; print(fastpath.label())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "python (BMWG_PURE_PYTHON is set)"
    assert importlib.import_module("emulator.fastpath").label().split()[0] in ("compiled", "python")



def test_the_compiled_functions_refuse_arguments_out_of_range():
    """Each argument out of range is a ValueError naming it, never a crash (issue 46: an uninitialised result on a
    bad buffer, sizes that overflowed into a heap write, layout fields whose sums overflowed or read past a
    message)."""
    from array import array
    native = compiled()
    ctx = array("q", bytes(8 * fastpath.CTX_LEN))
    ring, buckets = array("q", bytes(8 * 16)), array("q", bytes(8 * 20))
    ctx[fastpath.MASK], ctx[fastpath.PO_HEAD], ctx[fastpath.PO_ALEN_AT], ctx[fastpath.FM_BID_AT] = 15, 16, 14, 64
    ctx[fastpath.MAX_LEN] = 0xFFFF
    assert native.match(b"", 0, ctx, ring, ring, bytearray(16), buckets, buckets, buckets) == (0, b"")
    for bad in ({fastpath.MASK: -1}, {fastpath.MASK: 16}, {fastpath.PO_ALEN_AT: 15}, {fastpath.FM_BID_AT: 0},
                {fastpath.PO_HEAD: 10, fastpath.PO_ALEN_AT: 8}, {fastpath.PO_HEAD: 11, fastpath.PO_ALEN_AT: 8},
                {fastpath.PO_ALEN_AT: 2**63 - 1}, {fastpath.PO_HEAD: 2**62}, {fastpath.FM_BID_AT: 2**63 - 3},
                {fastpath.MAX_LEN: 0}, {fastpath.MAX_LEN: 2**40}):
        c = array("q", ctx)
        for k, v in bad.items():
            c[k] = v
        with pytest.raises(ValueError, match="layout|mask"):
            native.match(b"", 0, c, ring, ring, bytearray(16), buckets, buckets, buckets)
    with pytest.raises(ValueError, match="offset"):
        native.match(b"12345678", -1, ctx, ring, ring, bytearray(16), buckets, buckets, buckets)
    # a buffer of the wrong kind for each int64 argument: bytes not 8 apart, one byte too long, misaligned
    wrong = (bytearray(8 * fastpath.CTX_LEN + 1), bytearray(8 * fastpath.CTX_LEN), memoryview(bytearray(8 * 17))[1:])
    for k in range(1000):                   # ~1,000 calls: the uninitialised result crashed within that many
        with pytest.raises((ValueError, TypeError)):
            native.match(b"", 0, wrong[k % 3], ring, ring, bytearray(16), buckets, buckets, buckets)
    for position in (3, 4, 6, 7, 8):        # each int64 array argument in turn
        args = [b"", 0, ctx, ring, ring, bytearray(16), buckets, buckets, buckets]
        args[position] = bytearray(len(bytes(args[position])))
        with pytest.raises(ValueError, match="8-byte integers"):
            native.match(*args)
    with pytest.raises(ValueError, match="offset"):
        native.packet_outs(b"", 5, OFP10, 0, True)
    for geometry in ((bytes(100), 100, 1, 0, 1, -4, 8, 60),           # a negative offset
                     (bytes(64), 64, 1, 0, 2**58 + 1, 4, -1, 12),     # count × length past the largest size
                     (bytes(64), 64, 2**58, 0, 1, 4, -1, 12),         # n × length past the largest size
                     (bytes(64), 64, 1, 0, 1, 4, -1, 61),             # a field's 4 bytes past the message
                     (bytes(64), 64, 1, 0, 1, 2**62, -1, 12),         # an offset whose + 4 overflows
                     (bytes(64), 64, 1, 0, 1, 4, 2**63 - 2, 12),
                     (bytes(64), 3, 1, 0, 1, 0, -1, 0),               # messages shorter than a field
                     (bytes(64), 64, 1, 0, 2**24 + 1, 4, -1, 12)):    # over 1 GiB of messages in one call
        with pytest.raises(ValueError, match="geometry"):
            native.fill(*geometry)


FUZZ_CALLS = "BMWG_FUZZ_CALLS"      # the sanitizer build's run asks for more (tests/test_native_build.py)


def _fuzz_stream(rng, version):
    """Bytes that look enough like OpenFlow to get past the first checks: headers of random types and lengths (some
    past the buffer, some shorter than a header), the right version mostly, random bodies."""
    out = bytearray()
    for _ in range(rng.randint(0, 12)):
        kind = rng.choice((codec.PACKET_OUT, codec.FLOW_MOD, codec.PACKET_IN, codec.ECHO_REQUEST, rng.randrange(256)))
        length = rng.choice((rng.randint(0, 16), rng.randint(8, 200), rng.randint(0, 0xFFFF)))
        body = bytes(rng.randrange(256) for _ in range(max(0, min(length, 220) - 8)))
        out += bytes([version if rng.random() < 0.9 else rng.randrange(256), kind]) + struct.pack("!HI", length,
                                                                                                   rng.randrange(2**32))
        out += body
    return bytes(out)


def test_the_compiled_functions_survive_random_inputs():
    """A short fuzz of the compiled functions, from a fixed seed: random streams and layouts, random offsets and
    sizes; each call returns or raises ValueError / TypeError / OverflowError, and what it returns is in range.
    Under the sanitizer build (tests/test_native_build.py) it runs longer, where a stray read or write aborts."""
    from array import array
    native = compiled()
    rng = random.Random(46)
    calls = int(os.environ.get(FUZZ_CALLS, "1500"))
    refused = (ValueError, TypeError, OverflowError)
    for _ in range(calls):
        version = rng.choice((OFP10, OFP13))
        buf = _fuzz_stream(rng, version)
        ring = 1 << rng.randint(0, 6)
        ctx = array("q", bytes(8 * fastpath.CTX_LEN))
        ctx[fastpath.MASK] = ring - 1 if rng.random() < 0.9 else rng.randint(-2, 200)
        ctx[fastpath.VERSION], ctx[fastpath.MAX_LEN] = version, rng.choice((0xFFFF, 64, 8, 7, 2**40))
        head = codec.PACKET_OUT_HEAD[version]
        ctx[fastpath.PO_HEAD] = rng.choice((head, 12, 10, 11, 0xFFFF, 2**62))
        ctx[fastpath.PO_ALEN_AT] = rng.choice((codec.PACKET_OUT_ACTIONS_LEN_AT[version], 8, 2**63 - 1, -5))
        ctx[fastpath.FM_BID_AT] = rng.choice((codec.FLOW_MOD_BUFFER_ID_AT[version], 8, 0xFFFF, 2**63 - 3))
        ctx[fastpath.T] = rng.choice((rng.randint(0, 10**12), -2**63, 2**63 - 1))
        ctx[fastpath.T_START], ctx[fastpath.T_END] = rng.choice(((0, 10**12), (2**63 - 1, -2**63), (-5, 5)))
        ctx[fastpath.TIMEOUT], ctx[fastpath.DURATION] = rng.randint(-1, 10**9), rng.choice((0, -1, 10**9, 2**63 - 1))
        ctx[fastpath.NONCE], ctx[fastpath.COUNT_PO], ctx[fastpath.COUNT_FM] = rng.randrange(2**32), 1, 1
        t_sent = array("q", [rng.choice((0, 2**63 - 1, -2**63, rng.randint(0, 10**12))) for _ in range(ring)])
        s_sent = array("q", [rng.randrange(2**32) if rng.random() < 0.5 else -1 for _ in range(ring)])
        done = bytearray(rng.randrange(2) for _ in range(ring))
        buckets = [array("q", bytes(8 * 20)) for _ in range(3)]
        off = rng.choice((0, 0, rng.randint(-2, len(buf) + 2)))
        try:
            end, lat = native.match(buf, off, ctx, t_sent, s_sent, done, *buckets)
        except refused:
            pass
        else:
            assert off <= end <= len(buf) and len(lat) % 8 == 0
        try:
            end, out, count, xid = native.packet_outs(buf, off, rng.choice((version, 0, 255)), rng.randrange(2**32),
                                                      rng.random() < 0.8)
        except refused:
            pass
        else:
            assert off <= end <= len(buf) and count >= 0 and 0 <= xid < 2**32
        length = rng.choice((rng.randint(-1, 80), 2**rng.randint(10, 62)))
        n = rng.choice((rng.randint(-1, 4), 2**rng.randint(10, 62)))
        try:
            out = native.fill(bytes(rng.randint(0, 300)), length, n, rng.randrange(2**40),
                              rng.choice((rng.randint(-1, 5), 2**rng.randint(10, 62))),
                              *(rng.choice((rng.randint(-2, 80), 2**rng.randint(10, 63) - 1)) for _ in range(3)))
        except (*refused, MemoryError):
            pass
        else:
            assert len(out) % max(1, length) == 0
