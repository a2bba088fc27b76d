"""A null OpenFlow controller on the project's own codec.

It does the controller's half of the handshake (HELLO, FEATURES_REQUEST, and
PORT_DESC for 1.3), answers ECHO_REQUEST, and nothing else.  It serves the
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
import sys

from twisted.internet.protocol import Factory, Protocol

from . import codec
from .limits import FdLimitError, raise_nofile

LIMIT_MODES = ("refuse", "close", "silent")


class NullControllerProtocol(Protocol):
    def __init__(self, factory: "NullControllerFactory"):
        self.factory = factory
        self.buffer = b""
        self.version = None
        self.xid = 0
        self.counted = False

    def connectionMade(self):
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
        try:
            frames, self.buffer = codec.split_frames(self.buffer + data)
        except codec.FramingError:
            self.transport.abortConnection()
            return
        for frame in frames:
            msg = codec.decode(frame)
            if msg.name == "hello":
                self.version = codec.negotiate(self.factory.versions, msg.version, codec.hello_versions(msg))
                if self.version is None:
                    self.transport.loseConnection()
                    return
                self.send(codec.FEATURES_REQUEST, b"")
            elif msg.name == "echo_request":
                self.transport.write(codec.encode_echo_reply(self.version, msg.xid, msg.body))
            elif msg.name == "features_reply" and self.version == codec.OFP13:
                self.send(codec.msg_type(codec.OFP13, "stats_request"), b"\x00\x0d\x00\x00\x00\x00\x00\x00")

    def send(self, type_: int, body: bytes):
        self.xid += 1
        self.transport.write(codec.header(self.version, type_, codec.HEADER_LEN + len(body), self.xid) + body)


class NullControllerFactory(Factory):
    def __init__(self, versions=(codec.OFP10, codec.OFP13), limit=None, mode="refuse"):
        self.versions = tuple(versions)
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

    factory = NullControllerFactory(limit=args.session_limit, mode=args.limit_mode)
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
    reactor.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
