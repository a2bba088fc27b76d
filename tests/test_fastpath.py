"""The compiled PACKET_IN path and pure Python count the same, byte for byte: the same streams through both.

The other tests of the path (test_traffic.py, test_nullctl.py, test_async_logic.py) each run over both paths
(``packet_in_path`` in conftest.py); here one random stream of every kind of answer goes through each and the
results must be equal in every field."""

import os
import random

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
                     (bytes(64), 3, 1, 0, 1, 0, -1, 0)):              # messages shorter than a field
        with pytest.raises(ValueError, match="geometry"):
            native.fill(*geometry)
