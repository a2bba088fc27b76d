"""The null controller's compiled responder (``python -m emulator.nullctl --responder compiled``, the C loop
``emulator._fastpath.respond``).

Over a real loopback session it writes the same messages as the reactor's path does for the same stream (the
handshake, buffered and unbuffered PACKET_INs, ECHO_REQUESTs, a PACKET_IN too short for its fields, the switch's
FEATURES_REPLY, as a sink too), the answers to PACKET_INs in the same order and the rest in the same order, whatever
the reads' boundaries; it refuses the options that shape answers; and the emulator's serial trial runs against
it."""

import random
import socket
import struct
import threading

import pytest
from twisted.internet.testing import StringTransport

from conftest import compiled
from emulator import codec, fastpath, frames
from emulator.codec import OFP10, OFP13
from emulator.nullctl import Behaviour, NullControllerFactory, main, serve_compiled

pytestmark = pytest.mark.component


def stream(version, seed):
    """A switch's side of a session after its HELLO: PACKET_INs from four switches' blocks (one unbuffered), two
    ECHO_REQUESTs (one long), a PACKET_IN too short for its fields, a multipart reply and the FEATURES_REPLY, in a
    random order of blocks."""
    rng = random.Random(seed)
    template = frames.build_template()
    parts = []
    for dpid, buffered in ((1, True), (2, False), (3, True), (4, True)):
        block = frames.PacketInBlock(version, dpid, template, 7, nonce=9, buffered=buffered)
        parts.append(block.take(rng.randint(0, 50), rng.randint(1, 300)))
    parts.append(codec.encode_echo_request(version, 3, b"ping"))
    parts.append(codec.encode_echo_request(version, 4, bytes(300)))      # longer than the C loop answers
    parts.append(codec.header(version, codec.PACKET_IN, 12, 77) + b"\0" * 4)
    parts.append(codec.header(version, 19, 16, 78) + b"\0" * 8)         # a multipart reply: read and dropped
    # the switch's FEATURES_REPLY: a 1.3 controller asks for the port descriptions on it
    parts.append(codec.encode_features_reply(version, 2, 0x42))
    rng.shuffle(parts)
    hello = codec.encode_hello(version, 1, (version,) if version == OFP13 else ())
    return hello + b"".join(parts)


def over_the_reactor(version, blob, answer):
    factory = NullControllerFactory(versions=(version,), behaviour=Behaviour(answer=answer))
    proto = factory.buildProtocol(None)
    transport = StringTransport()
    proto.makeConnection(transport)
    proto.dataReceived(blob)
    return transport.value(), proto.packet_ins


def over_the_compiled_responder(version, blob, answer, piece):
    factory = NullControllerFactory(versions=(version,), behaviour=Behaviour(answer=answer))
    with socket.create_server(("127.0.0.1", 0)) as listener:
        ours = socket.create_connection(listener.getsockname())
        theirs, _ = listener.accept()
    got = []
    server = threading.Thread(target=lambda: got.append(serve_compiled(theirs, factory)), daemon=True)
    with ours:
        server.start()
        for at in range(0, len(blob), piece):
            ours.sendall(blob[at:at + piece])
        ours.shutdown(socket.SHUT_WR)
        ours.settimeout(10)
        written = b""
        while True:
            data = ours.recv(65536)
            if not data:
                break
            written += data
    server.join(10)
    assert not server.is_alive()
    return written


@pytest.mark.parametrize("version", [OFP10, OFP13])
@pytest.mark.parametrize("answer", ["packet_out", "none"])
@pytest.mark.parametrize("piece", [1_000_000, 997, 61])
def test_the_compiled_responder_writes_what_the_reactor_path_writes(version, answer, piece):
    compiled()
    blob = stream(version, seed=piece)
    expected, count = over_the_reactor(version, blob, answer)
    got = over_the_compiled_responder(version, blob, answer, piece)
    replies, tail = codec.split_frames(got)
    theirs, _ = codec.split_frames(expected)
    # the same messages in the same order, but for where the answers to PACKET_INs (PACKET_OUT, ERROR) fall among
    # the rest: the reactor's path writes an ECHO_REPLY or a request of its own at once and a read's answers after
    # them; the compiled loop writes everything in stream order
    answers = (codec.PACKET_OUT, codec.ERROR)
    assert tail == b"" and [m for m in replies if m[1] in answers] == [m for m in theirs if m[1] in answers]
    assert [m for m in replies if m[1] not in answers] == [m for m in theirs if m[1] not in answers]
    kinds = {m[1] for m in replies}
    assert codec.ECHO_REPLY in kinds and count > 300
    assert (codec.msg_type(version, "stats_request") in kinds) == (version == OFP13)
    # a sink answers no PACKET_IN, the short one included
    assert (codec.PACKET_OUT in kinds) == (codec.ERROR in kinds) == (answer == "packet_out")


def test_the_compiled_responder_takes_no_option_that_shapes_answers(capsys):
    for args in (["--busy-poll"], ["--delay-ms", "2"], ["--rate-cap", "5000"], ["--police-rate", "10"],
                 ["--malformed", "hello:short-length"], ["--session-limit", "5"], ["--answer", "lldp"]):
        with pytest.raises(SystemExit) as exc:
            main(["--responder", "compiled", *args])
        assert exc.value.code == 2
        assert "--responder compiled answers at once and takes no" in capsys.readouterr().err


def test_respond_refuses_what_it_cannot_serve():
    native = compiled()
    with pytest.raises(ValueError, match="respond"):
        native.respond(-1, OFP13, 0, True)
    with pytest.raises(ValueError, match="respond"):
        native.respond(0, 7, 0, True)
    r, w = socket.socketpair()
    with r, w:
        w.close()
        assert native.respond(r.fileno(), OFP13, 5, True) == (0, 5, b"", True)   # the peer closed first


def test_the_emulators_serial_trial_runs_against_the_compiled_responder(tmp_path):
    from emulator.params import AsyncParams, RampParams
    from fixtures.families.async_msgs import AsyncEmulator, against_null
    from fixtures.selfbench import _pool
    compiled()
    pool = _pool()
    try:
        em = AsyncEmulator(lambda: pool, AsyncParams(duration=0.5, no_learn=True).at(1), RampParams(), OFP13)
        f = against_null(em, tmp_path, OFP13, "compiled", "serial", 0.5)
    finally:
        pool.close()
    assert f["nrx"] > 100 and f["loss_ratio"] == 0 and struct.calcsize("q") == 8
    assert fastpath.native is not None
