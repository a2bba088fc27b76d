"""A null OpenFlow controller on the project's own codec.

It does the controller's half of the handshake (HELLO, FEATURES_REQUEST, and
PORT_DESC for 1.3), answers ECHO_REQUEST, and answers each PACKET_IN with one
PACKET_OUT (FLOOD; by buffer_id when buffered, else carrying the frame).  With
``--answer none`` it is a sink: PACKET_INs are read and dropped unparsed.  With
``--answer lldp`` it is a minimal discovery prober for the emulator's fabric: once a
switch's handshake is done, and every ``--lldp-period`` seconds after, it floods one LLDP
frame naming the switch out of every port, and it counts the PACKET_INs that come back.  It serves the
self-tests and measures the emulator's own ceiling (RFC 8456 §4.8: characterise
the emulator against a stub controller).  ``--session-limit`` makes it behave
like a controller with a known capacity, so the capacity benchmark can be
checked against a known answer.

``python -m emulator.nullctl --port 0`` prints one JSON line
``{"event": "listening", "host": ..., "port": ...}`` once it accepts connections.
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import sys

from twisted.internet.protocol import Factory, Protocol

from . import codec
from .limits import FdLimitError, raise_nofile

LIMIT_MODES = ("refuse", "close", "silent")
ANSWERS = ("packet_out", "none", "lldp")
_OXM_IN_PORT = struct.pack("!I", codec.OXM_OF_IN_PORT)
_PO10 = struct.Struct("!BBHIIHHHHHH")         # header, buffer_id, in_port, actions_len, OUTPUT action
_PO13 = struct.Struct("!BBHIIIH6xHHIH6x")


class NullControllerProtocol(Protocol):
    def __init__(self, factory: "NullControllerFactory"):
        self.factory = factory
        self.buffer = b""
        self.version = None
        self.xid = 0
        self.counted = False
        self.packet_ins = 0
        self.dpid = None

    def connectionMade(self):
        if hasattr(self.transport, "setTcpNoDelay"):
            self.transport.setTcpNoDelay(True)
        self.flush = hasattr(self.transport, "doWrite")  # a TCP transport (tests use StringTransport)
        self._connection_made()

    def _connection_made(self):
        f = self.factory
        f.open += 1
        if f.limit is not None and f.open > f.limit:
            if f.mode == "close":
                self.transport.loseConnection()
            elif f.mode == "refuse":  # accepted in the same accept loop before stopListening took effect
                self.transport.abortConnection()
            return
        self.transport.write(codec.encode_hello(max(f.versions), 1, f.versions))
        if f.mode == "refuse" and f.limit is not None and f.open >= f.limit and f.port is not None:
            f.port.stopListening()
            f.port = None

    def connectionLost(self, reason=None):
        self.factory.open -= 1

    def dataReceived(self, data):
        buf = self.buffer + data if self.buffer else data
        n, off = len(buf), 0
        replies = []
        answer = self.factory.answer
        while n - off >= 8:
            length = (buf[off + 2] << 8) | buf[off + 3]
            if length < 8:
                self.transport.abortConnection()
                return
            end = off + length
            if end > n:
                break
            if buf[off + 1] == codec.PACKET_IN and buf[off] == self.version:
                self.packet_ins += 1
                if answer:
                    replies.append(self._packet_out(buf, off, end))
            else:
                self._other(buf[off:end])
            off = end
        self.buffer = buf[off:] if off < n else b""
        if replies:
            self.transport.write(b"".join(replies))
            if self.flush:
                self.transport.doWrite()  # answer now, not on the reactor's next turn

    def _packet_out(self, buf, off: int, end: int) -> bytes:
        """One PACKET_OUT flooding the packet: by buffer_id, or carrying the frame when unbuffered."""
        version = self.version
        (buffer_id,) = struct.unpack_from("!I", buf, off + 8)
        if version == codec.OFP10:
            in_port = (buf[off + 14] << 8) | buf[off + 15]
            data_at, out_port = off + 18, codec.OFPP_FLOOD_10
        elif buf[off + 28:off + 32] == _OXM_IN_PORT:  # the usual single-field match
            (in_port,) = struct.unpack_from("!I", buf, off + 32)
            mlen = (buf[off + 26] << 8) | buf[off + 27]
            data_at, out_port = off + 24 + (mlen + 7) // 8 * 8 + 2, codec.OFPP_FLOOD_13
        else:
            fields = codec.packet_in_fields(bytes(buf[off:end]))
            in_port, out_port = fields["in_port"] or 0, codec.OFPP_FLOOD_13
            data_at = end - len(fields["data"])
        self.xid = xid = (self.xid + 1) & 0xFFFFFFFF
        if buffer_id != codec.NO_BUFFER:  # the common case, in one pack
            if version == codec.OFP10:
                return _PO10.pack(version, codec.PACKET_OUT, 24, xid, buffer_id, in_port, 8, 0, 8, out_port, 0)
            return _PO13.pack(version, codec.PACKET_OUT, 40, xid, buffer_id, in_port, 16, 0, 16, out_port, 0)
        return codec.encode_packet_out(version, xid, buffer_id, in_port, out_port, buf[data_at:end])

    def _other(self, frame: bytes) -> None:
        msg = codec.decode(frame)
        if msg.name == "hello":
            self.version = codec.negotiate(self.factory.versions, msg.version, codec.hello_versions(msg))
            if self.version is None:
                self.transport.loseConnection()
                return
            self.send(codec.FEATURES_REQUEST, b"")
        elif msg.name == "echo_request":
            self.transport.write(codec.encode_echo_reply(self.version, msg.xid, msg.body))
        elif msg.name == "features_reply":
            if self.version == codec.OFP13:
                self.send(codec.msg_type(codec.OFP13, "stats_request"), b"\x00\x0d\x00\x00\x00\x00\x00\x00")
            if self.factory.lldp:
                self.dpid = msg.fields["datapath_id"]
                self.factory.probed.append(self)
                self.probe()

    def probe(self) -> None:
        """One LLDP frame naming this switch, flooded out of every port."""
        flood = codec.OFPP_FLOOD_10 if self.version == codec.OFP10 else codec.OFPP_FLOOD_13
        controller = 0xFFFD if self.version == codec.OFP10 else 0xFFFFFFFD
        self.xid = (self.xid + 1) & 0xFFFFFFFF
        self.transport.write(codec.encode_packet_out(self.version, self.xid, codec.NO_BUFFER, controller, flood,
                                                     lldp_frame(self.dpid)))

    def send(self, type_: int, body: bytes):
        self.xid += 1
        self.transport.write(codec.header(self.version, type_, codec.HEADER_LEN + len(body), self.xid) + body)


def lldp_frame(dpid: int) -> bytes:
    """A minimal LLDP frame: chassis ID (locally assigned: the dpid), port ID, TTL, end."""
    chassis = b"\x07" + b"dpid:%016x" % dpid
    port = b"\x07" + b"flood"
    ttl = struct.pack("!H", 120)

    def tlv(kind: int, value: bytes) -> bytes:
        return struct.pack("!H", kind << 9 | len(value)) + value

    return (bytes.fromhex("0180c200000e") + codec.port_mac(dpid, 0) + b"\x88\xcc"
            + tlv(1, chassis) + tlv(2, port) + tlv(3, ttl) + b"\x00\x00")


class NullControllerFactory(Factory):
    def __init__(self, versions=(codec.OFP10, codec.OFP13), limit=None, mode="refuse", answer="packet_out"):
        self.versions = tuple(versions)
        self.answer = answer == "packet_out"
        self.lldp = answer == "lldp"
        self.probed: list = []
        self.limit = limit
        self.mode = mode
        self.open = 0
        self.port = None

    def buildProtocol(self, addr):
        return NullControllerProtocol(self)


def listen_reuse_port(reactor, host: str, port: int, factory):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
        sock.listen(4096)
        sock.setblocking(False)
        return reactor.adoptStreamPort(sock.fileno(), socket.AF_INET, factory)
    finally:
        sock.close()  # adoptStreamPort made its own copy of the descriptor


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m emulator.nullctl", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--session-limit", type=int, default=None,
                        help="behave as a controller that holds this many sessions")
    parser.add_argument("--limit-mode", choices=LIMIT_MODES, default="refuse",
                        help="past the limit: stop listening, accept and close, or accept and stay silent")
    parser.add_argument("--answer", choices=ANSWERS, default="packet_out",
                        help="answer each PACKET_IN with a PACKET_OUT (default), or drop it (a sink for the "
                             "emulator's open-loop ceiling)")
    parser.add_argument("--lldp-period", type=float, default=0.0,
                        help="with --answer lldp: seconds between LLDP rounds to every switch (0: one round)")
    parser.add_argument("--busy-poll", action="store_true",
                        help="poll instead of sleeping in epoll (spends a core; for the emulator's latency floor)")
    parser.add_argument("--max-files", type=int, default=200000, help="RLIMIT_NOFILE to ask for")
    parser.add_argument("--reuse-port", action="store_true",
                        help="listen with SO_REUSEPORT, so several null controllers share one port (and the "
                             "kernel spreads sessions over them past one process's open-file limit)")
    args = parser.parse_args(argv)
    try:
        raise_nofile(args.max_files)
    except FdLimitError as exc:
        print(json.dumps({"event": "warning", "message": str(exc)}), flush=True)

    from twisted.internet import reactor

    factory = NullControllerFactory(limit=args.session_limit, mode=args.limit_mode, answer=args.answer)
    try:
        if args.reuse_port:
            factory.port = listen_reuse_port(reactor, args.host, args.port, factory)
        else:
            factory.port = reactor.listenTCP(args.port, factory, backlog=4096, interface=args.host)
    except Exception as exc:  # CannotListenError / OSError carry the address and the OS reason
        print(json.dumps({"event": "error", "message": f"cannot listen on {args.host}:{args.port}: {exc}"}),
              flush=True)
        return 3
    print(json.dumps({"event": "listening", "host": args.host, "port": factory.port.getHost().port}),
          flush=True)
    if args.answer == "lldp" and args.lldp_period > 0:
        from twisted.internet.task import LoopingCall

        def rounds():
            for proto in list(factory.probed):
                if proto.transport is not None and proto.connected:
                    proto.probe()
        LoopingCall(rounds).start(args.lldp_period, now=False)
    if args.busy_poll:
        def spin():
            reactor.callLater(0, spin)
        spin()
    reactor.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
