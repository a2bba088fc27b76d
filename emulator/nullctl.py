"""A null OpenFlow controller on the project's own codec.

It does the controller's half of the handshake (HELLO, FEATURES_REQUEST, and
PORT_DESC for 1.3), answers ECHO_REQUEST, and answers each PACKET_IN with one
PACKET_OUT (FLOOD; by buffer_id when buffered, else carrying the frame).  With
``--answer none`` it is a sink: PACKET_INs are read and dropped unparsed.  With
``--answer lldp`` it is a minimal discovery prober for the emulator's fabric: once a
switch's handshake is done, and every ``--lldp-period`` seconds after, it floods one LLDP
frame naming the switch out of every port, and it counts the PACKET_INs that come back.  It serves the
self-tests and measures the emulator's own ceiling (RFC 8456 §4.8: characterise
the emulator against a stub controller).  ``--session-limit N`` makes it behave
like a controller with a known capacity, so the capacity benchmark can be
checked against a known answer: past N open sessions (``--limit-mode``) it refuses the
next one (stops listening), accepts and closes it, or accepts and stays silent — the
sessions it holds are still served — or it collapses as real controllers do at their
limits: it exits (``crash``, status 70), freezes (``stall``: nothing more is read,
written or accepted) or closes every session (``close-all``).  ``--hold-limit M`` with a
collapsing mode: more than M sessions open for ``--hold-after`` seconds collapse it (a
controller that establishes more sessions than it can keep).  Three more options make it a controller with other
known answers, to check the suite (and the emulator) against:

``--delay-ms D``
    Every answer to a PACKET_IN is written no earlier than D ms after the PACKET_IN was
    read (read time: the reactor clock once the read carrying it has been parsed; with
    epoll the timer wakes up to 1 ms late, so an answer leaves D to D + ~1 ms after).
    Answers keep their order; one timer serves all sessions.  With D = 0
    (the default) and no ``--rate-cap`` the answers are written at once, in the same
    call that read the PACKET_INs, as before.
``--rate-cap R``
    At most R answers per second in total, over all sessions: one shared pacing queue,
    first in first out across sessions in the order the PACKET_INs were read.  Answer k
    of a busy period leaves at its slot ``start + k / R`` (a busy period starts when an
    answer is ready while the queue's next slot is already past); an answer leaves at
    ``max(read + D, its slot)``.  The excess is queued, never dropped, like a controller
    whose backlog grows in its queues; past ``--backlog`` answers waiting (default 50 ms
    worth at the cap) the controller stops reading the sessions that add more until the
    queue is half as long, so TCP pushes back on the switches as a real controller's
    full input queue does.  As a last guard, up to ``--queue-limit`` answers wait (default
    1,000,000, delayed and paced ones together); past that the answer is dropped and
    counted (one ``warning`` JSON line on the first drop).  A timer tick sends every
    answer whose slot has come, so the rate holds at any R however coarse the reactor's
    timers (epoll: 1 ms); an answer leaves at its slot or up to one tick after.  Answers
    for a session that has closed meanwhile are discarded (counted apart).
``--malformed WHEN:WHAT``
    For the emulator's robustness tests: one message is replaced by a malformed one.
    WHEN is ``hello`` (instead of the controller's HELLO), ``handshake`` (after the
    switch's HELLO, instead of FEATURES_REQUEST) or ``packet_in`` (as the answer to the
    first PACKET_IN of each session; the later ones are answered normally).  WHAT, built
    from the message it replaces (same version byte and xid unless said otherwise):

    * ``short-length``: the 8-byte header with its length field 4 (below the header:
      the stream cannot be framed after it);
    * ``truncated-body``: an 8-byte PACKET_OUT (type 13, length 8), no body, where
      ``codec.decode`` needs 8 (1.0) or 10 (1.3) bytes of buffer_id/in_port/actions_len:
      it decodes as ``malformed_packet_out``;
    * ``unknown-type``: an 8-byte message of type 250;
    * ``bad-version``: the message itself with version byte 0x09.  For ``hello`` this is
      legal OpenFlow (a HELLO of a higher version, its bitmap still offering 1.0 and 1.3):
      a switch negotiates down, so it checks the emulator does not reject it.

    After the replaced message the controller carries on as if it had sent the right
    one (it still answers the switch's HELLO with FEATURES_REQUEST, and so on).

``--responder compiled``
    The fastest null controller this machine allows, for the emulator's latency floor (``selfbench async``): no
    reactor; each session is a blocking socket served by its own thread, whose hot loop is C
    (``emulator._fastpath.respond``, without the GIL): it blocks in ``read()`` between messages, answers each
    buffered PACKET_IN with a PACKET_OUT and each ECHO_REQUEST with its reply, and hands anything else (the
    handshake, an unbuffered PACKET_IN, a malformed message) to the same Python code as the reactor's path.  It
    answers at once, so it takes none of the options that shape the answers, nor a session limit.

``python -m emulator.nullctl --port 0`` prints one JSON line
``{"event": "listening", "host": ..., "port": ...}`` once it accepts connections.  With ``--delay-ms`` or
``--rate-cap``, stopping it (SIGTERM, SIGINT) prints ``{"event": "queue", "answers": ..., "held_ms_mean": ...,
"held_ms_max": ..., ...}``: how long its answers actually waited from read to send, the known answer as this host's
timers gave it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import struct
import sys
import time
from collections import deque
from dataclasses import dataclass
from typing import Optional, Union

from twisted.internet.protocol import Factory, Protocol

from . import codec, fastpath
from .limits import FdLimitError, raise_nofile
from .params import positive_int

LIMIT_MODES = ("refuse", "close", "silent", "crash", "stall", "close-all")
COLLAPSES = ("crash", "stall", "close-all")     # past the limit every session fails, not only the new one
CRASH_STATUS = 70
ANSWERS = ("packet_out", "none", "lldp")
MALFORMED_WHEN = ("hello", "handshake", "packet_in")
MALFORMED_WHAT = ("short-length", "truncated-body", "unknown-type", "bad-version")
UNKNOWN_TYPE = 250
BAD_VERSION = 0x09
BACKLOG_S = 0.05
QUEUE_LIMIT = 1_000_000
_OXM_IN_PORT = struct.pack("!I", codec.OXM_OF_IN_PORT)
_PO10 = struct.Struct("!BBHIIHHHHHH")         # header, buffer_id, in_port, actions_len, OUTPUT action
_PO13 = struct.Struct("!BBHIIIH6xHHIH6x")
# a PACKET_IN's fixed fields: 1.0 header, buffer_id, total_len, in_port, reason, pad; 1.3 header, buffer_id,
# total_len, reason, table_id, cookie, an empty match (8 bytes with its padding) and 2 bytes of pad
PACKET_IN_MIN = {codec.OFP10: 18, codec.OFP13: 34}


class NullControllerProtocol(Protocol):
    def __init__(self, factory: "NullControllerFactory"):
        self.factory = factory
        self.buffer = b""
        self.version = None
        self.xid = 0
        self.counted = False
        self.packet_ins = 0
        self.bad_length = 0         # PACKET_INs too short for their fields, answered with an ERROR
        self.dpid = None
        self.closed = False
        self.queue = factory.queue                     # None: answer at once (the fast path)
        self.police = factory.police                   # None: every answer passes
        self.bad_answer = factory.malformed_what if factory.malformed_when == "packet_in" else None

    def connectionMade(self):
        if hasattr(self.transport, "setTcpNoDelay"):
            self.transport.setTcpNoDelay(True)
        self.flush = hasattr(self.transport, "doWrite")  # a TCP transport (tests use StringTransport)
        self._connection_made()

    def _connection_made(self):
        f = self.factory
        f.open += 1
        f.sessions.add(self)
        if f.limit is not None and f.open > f.limit:
            if f.mode in COLLAPSES:
                f.collapse(f"session {f.open} is past the limit of {f.limit}")
                return
            if f.mode == "close":
                self.transport.loseConnection()
            elif f.mode == "refuse":  # accepted in the same accept loop before stopListening took effect
                self.transport.abortConnection()
            return
        top = max(f.versions)
        hello = codec.encode_hello(top, 1, f.versions if top >= codec.OFP13 else ())
        if f.malformed_when == "hello":
            hello = malform(hello, f.malformed_what)
        self.transport.write(hello)
        if f.mode == "refuse" and f.limit is not None and f.open >= f.limit and f.port is not None:
            f.port.stopListening()
            f.port = None
        f.check_hold_limit()

    def connectionLost(self, reason=None):
        self.closed = True
        self.factory.open -= 1
        self.factory.sessions.discard(self)
        self.factory.check_hold_limit()

    def dataReceived(self, data):
        buf = self.buffer + data if self.buffer else data
        n, off = len(buf), 0
        replies = []
        answer = self.factory.answer
        # the compiled path (emulator.fastpath) answers whole runs of buffered PACKET_INs; what it leaves (another
        # type, an unbuffered PACKET_IN, a malformed one) is Python's.  Delayed, paced or malformed answers: Python.
        native = fastpath.native if self.queue is None and self.police is None and not self.bad_answer \
            and self.version else None
        while n - off >= 8:
            if native is not None:
                off, out, k, self.xid = native.packet_outs(buf, off, self.version, self.xid, answer)
                if k:
                    self.packet_ins += k
                    if out:
                        replies.append(out)
                if n - off < 8:
                    break
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
            self._send(replies)

    def _send(self, replies: list) -> None:
        """The answers to one read: malformed first when asked, queued when paced, else written at once."""
        if self.police is not None:
            replies = replies[:self.police.take(len(replies))]
            if not replies:
                return
        if self.bad_answer:
            replies[0] = malform(replies[0], self.bad_answer)
            self.bad_answer = None
        if self.queue is not None:
            self.queue.add(self, replies)
            return
        self.transport.write(b"".join(replies))
        if self.flush:
            self.transport.doWrite()  # answer now, not on the reactor's next turn

    def _packet_out(self, buf, off: int, end: int) -> bytes:
        """One PACKET_OUT flooding the packet: by buffer_id, or carrying the frame when unbuffered.  A PACKET_IN
        too short for its fixed fields or its match gets what the spec answers a request of a bad length with: an
        ERROR (BAD_REQUEST / BAD_LEN) carrying its first 64 bytes."""
        version = self.version
        if end - off < PACKET_IN_MIN[version]:
            return self._bad_length(buf, off, end)
        (buffer_id,) = struct.unpack_from("!I", buf, off + 8)
        if version == codec.OFP10:
            in_port = (buf[off + 14] << 8) | buf[off + 15]
            data_at, out_port = off + 18, codec.OFPP_FLOOD_10
        elif end - off >= 36 and buf[off + 28:off + 32] == _OXM_IN_PORT:  # the usual single-field match
            (in_port,) = struct.unpack_from("!I", buf, off + 32)
            mlen = (buf[off + 26] << 8) | buf[off + 27]
            data_at, out_port = off + 24 + (mlen + 7) // 8 * 8 + 2, codec.OFPP_FLOOD_13
        else:
            try:
                fields = codec.packet_in_fields(bytes(buf[off:end]))
            except struct.error:                        # its match runs past its end
                return self._bad_length(buf, off, end)
            in_port, out_port = fields["in_port"] or 0, codec.OFPP_FLOOD_13
            data_at = end - len(fields["data"])
        self.xid = xid = (self.xid + 1) & 0xFFFFFFFF
        if buffer_id != codec.NO_BUFFER:  # the common case, in one pack
            if version == codec.OFP10:
                return _PO10.pack(version, codec.PACKET_OUT, 24, xid, buffer_id, in_port, 8, 0, 8, out_port, 0)
            return _PO13.pack(version, codec.PACKET_OUT, 40, xid, buffer_id, in_port, 16, 0, 16, out_port, 0)
        return codec.encode_packet_out(version, xid, buffer_id, in_port, out_port, buf[data_at:end])

    def _bad_length(self, buf, off: int, end: int) -> bytes:
        self.bad_length += 1
        (xid,) = struct.unpack_from("!I", buf, off + 4)
        return codec.encode_error(self.version, xid, codec.OFPET_BAD_REQUEST, codec.OFPBRC_BAD_LEN, bytes(buf[off:end]))

    def _other(self, frame: bytes) -> None:
        msg = codec.decode(frame)
        if msg.name == "hello":
            self.version = codec.negotiate(self.factory.versions, msg.version, codec.hello_versions(msg))
            if self.version is None:       # no common version: carry on in ours, as some real controllers do
                self.version = max(self.factory.versions)
            self.send(codec.FEATURES_REQUEST, b"",
                      self.factory.malformed_what if self.factory.malformed_when == "handshake" else None)
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

    def send(self, type_: int, body: bytes, malformed: str | None = None):
        self.xid += 1
        message = codec.header(self.version, type_, codec.HEADER_LEN + len(body), self.xid) + body
        self.transport.write(malform(message, malformed) if malformed else message)


def malform(message: bytes, what: str) -> bytes:
    """``message`` made malformed as ``--malformed ...:WHAT`` says (see the module's docstring)."""
    version, type_, xid = message[0], message[1], message[4:8]
    if what == "short-length":
        return bytes((version, type_, 0, 4)) + xid
    if what == "truncated-body":
        return bytes((version, codec.PACKET_OUT, 0, codec.HEADER_LEN)) + xid
    if what == "unknown-type":
        return bytes((version, UNKNOWN_TYPE, 0, codec.HEADER_LEN)) + xid
    if what == "bad-version":
        return bytes((BAD_VERSION,)) + message[1:]
    raise ValueError(f"unknown malformation {what!r}; expected one of {', '.join(MALFORMED_WHAT)}")


class TokenBucket:
    """A policer over all sessions: ``rate`` tokens a second, at most ``burst`` saved (full at the start); each answer
    takes one, and an answer that finds none is dropped, not queued, as a switch's or a controller's policer drops
    what is over its rate.  A trial offered more than ``rate`` passes the excess for as long as the saved credit
    lasts (``burst`` answers): a short one can pass above the rate."""

    def __init__(self, clock, rate: float, burst: int):
        self.clock, self.rate, self.burst = clock, rate, burst
        self.tokens = float(burst)
        self.at: float | None = None
        self.passed = 0
        self.dropped = 0

    def take(self, n: int) -> int:
        """How many of ``n`` answers pass now."""
        now = self.clock.seconds()
        if self.at is not None:
            self.tokens = min(float(self.burst), self.tokens + (now - self.at) * self.rate)
        self.at = now
        k = min(n, int(self.tokens))
        self.tokens -= k
        self.passed += k
        self.dropped += n - k
        return k


class AnswerQueue:
    """The answers waiting for their time: ``read + delay`` and, with a rate cap, their pacing
    slot.  One queue for all sessions, first in first out; one timer, set for the head."""

    def __init__(self, clock, delay: float = 0.0, rate: float | None = None, limit: int = QUEUE_LIMIT,
                 backlog: int | None = None):
        self.clock = clock
        # Past ``backlog`` answers waiting, a session that adds more stops being read until the queue is down
        # to half of it: TCP then pushes back on the switches, as a real controller's full input queue does.
        self.backlog = backlog
        self.paused: set = set()
        self.delay = delay
        self.interval = 1.0 / rate if rate else 0.0
        self.limit = limit
        self.entries: deque = deque()   # (ready time, protocol, bytes, answers): one answer each when paced,
        self.pending = 0                # else one entry per read, its answers joined; pending counts answers
        self.sent = 0
        self.dropped = 0
        self.discarded = 0              # their session closed before their time
        self.high_water = 0
        self.held = 0.0                 # seconds from read to send, summed over the answers taken
        self.held_max = 0.0
        self.timer = None
        self.base = float("-inf")       # the busy period's first slot; slot k is base + k * interval
        self.k = 0                      # (not a running sum: at epoch times, adding 1/R would round)
        self.on_first_drop = None

    def add(self, proto, answers: list) -> None:
        room = self.limit - self.pending
        if len(answers) > room:
            lost = len(answers) - max(room, 0)
            if not self.dropped and self.on_first_drop is not None:
                self.on_first_drop(self)
            self.dropped += lost
            answers = answers[:max(room, 0)]
            if not answers:
                return
        ready = self.clock.seconds() + self.delay
        if self.interval:
            self.entries.extend([(ready, proto, a, 1) for a in answers])
        else:
            self.entries.append((ready, proto, b"".join(answers), len(answers)))
        self.pending += len(answers)
        if self.pending > self.high_water:
            self.high_water = self.pending
        if self.backlog is not None and self.pending >= self.backlog and proto not in self.paused:
            proto.transport.pauseProducing()
            self.paused.add(proto)
        if self.timer is None:        # else the timer is set for the head, which a new tail cannot precede
            self.run()

    def run(self) -> None:
        """Send every answer whose time has come; set the timer for the next."""
        self.timer = None
        now = self.clock.seconds()
        out: dict = {}
        if self.interval:
            counts, next_at = None, self._take_paced(now, out)
        else:
            counts = {}
            next_at = self._take_due(now, out, counts)
        for proto, batch in out.items():
            n = len(batch) if counts is None else counts[proto]
            self.pending -= n
            if proto.closed or proto.transport is None:
                self.discarded += n
                continue
            self.sent += n
            proto.transport.write(b"".join(batch))
            if proto.flush:
                proto.transport.doWrite()
        if self.paused and self.pending <= self.backlog // 2:
            for proto in self.paused:
                if not proto.closed and proto.transport is not None:
                    proto.transport.resumeProducing()
            self.paused.clear()
        if next_at is not None:
            self.timer = self.clock.callLater(max(0.0, next_at - now), self.run)

    def _take_paced(self, now: float, out: dict):
        """With a rate cap: the answers whose pacing slot has come, one each, into ``out`` (protocol -> answers);
        the next slot's time, or None when the queue is empty."""
        entries, interval = self.entries, self.interval
        while entries:
            ready = entries[0][0]
            slot = self.base + self.k * interval
            if ready > slot:          # the queue fell idle: a new busy period starts at this answer
                self.base, self.k, slot = ready, 0, ready
            if slot > now:
                return slot
            ready, proto, answer, _n = entries.popleft()
            self._hold(now - ready + self.delay, 1)
            self.k += 1
            batch = out.get(proto)
            if batch is None:
                out[proto] = [answer]
            else:
                batch.append(answer)
        return None

    def _hold(self, seconds: float, n: int) -> None:
        self.held += seconds * n
        if seconds > self.held_max:
            self.held_max = seconds

    def summary(self) -> dict:
        """What the queue did: answers sent, dropped, discarded, and how long they were held from read to send
        (the delay asked for plus this host's timer lateness: the known answer as the controller gave it)."""
        taken = self.sent + self.discarded
        return {"answers": self.sent, "dropped": self.dropped, "discarded": self.discarded,
                "held_ms_mean": round(self.held / taken * 1000.0, 4) if taken else None,
                "held_ms_max": round(self.held_max * 1000.0, 4) if taken else None}

    def _take_due(self, now: float, out: dict, counts: dict):
        """Without a cap: the entries whose time has come into ``out`` (protocol -> joined answers) and ``counts``
        (protocol -> answers); the next entry's time, or None when the queue is empty."""
        entries = self.entries
        while entries:
            ready = entries[0][0]
            if ready > now:
                return ready
            ready, proto, answer, n = entries.popleft()
            self._hold(now - ready + self.delay, n)
            batch = out.get(proto)
            if batch is None:
                out[proto], counts[proto] = [answer], n
            else:
                batch.append(answer)
                counts[proto] += n
        return None


def lldp_frame(dpid: int) -> bytes:
    """A minimal LLDP frame: chassis ID (locally assigned: the dpid), port ID, TTL, end."""
    chassis = b"\x07" + b"dpid:%016x" % dpid
    port = b"\x07" + b"flood"
    ttl = struct.pack("!H", 120)

    def tlv(kind: int, value: bytes) -> bytes:
        return struct.pack("!H", kind << 9 | len(value)) + value

    return (bytes.fromhex("0180c200000e") + codec.port_mac(dpid, 0) + b"\x88\xcc"
            + tlv(1, chassis) + tlv(2, port) + tlv(3, ttl) + b"\x00\x00")


def parse_malformed(text: str) -> tuple:
    """``WHEN:WHAT`` as ``(when, what)``; ValueError naming what is wrong."""
    when, sep, what = text.partition(":")
    if not sep or when not in MALFORMED_WHEN or what not in MALFORMED_WHAT:
        raise ValueError(f"--malformed {text!r}: expected WHEN:WHAT with WHEN one of {', '.join(MALFORMED_WHEN)} "
                         f"and WHAT one of {', '.join(MALFORMED_WHAT)}")
    return when, what


@dataclass(frozen=True)
class Behaviour:
    """How a null controller behaves, beside answering every PACKET_IN at once: one value for its command line
    (:meth:`arguments`, :meth:`from_args`), its factory and the suite's device (fixtures/devices/null.py).
    ``session_limit``/``limit_mode``: past ``session_limit`` open sessions, the new one is refused (stop
    listening), closed or left silent, or the controller collapses: it exits (``crash``), stops serving anything
    (``stall``), or closes every session and serves anew (``close-all``).  ``hold_limit``/``hold_after``: more than
    ``hold_limit`` sessions open for ``hold_after`` seconds collapse it the ``limit_mode`` way (a controller that
    establishes more sessions than it can keep).  ``answer``: a PACKET_OUT, nothing, or LLDP rounds every
    ``lldp_period`` s; ``delay_ms``/``rate_cap``: every answer that late, at most that many a second (the rest
    queued); ``police_rate``/``police_burst``: a token bucket over the answers, the excess dropped
    (:class:`TokenBucket`); ``malformed``: ``"WHEN:WHAT"`` (or ``(when, what)``), one message replaced by a malformed
    one."""
    answer: str = "packet_out"
    session_limit: Optional[int] = None
    limit_mode: str = "refuse"
    hold_limit: Optional[int] = None
    hold_after: float = 1.0
    delay_ms: float = 0.0
    rate_cap: Optional[float] = None
    malformed: Union[str, tuple, None] = None
    lldp_period: float = 0.0
    police_rate: Optional[float] = None
    police_burst: int = 200

    def __post_init__(self):
        if self.answer not in ANSWERS:
            raise ValueError(f"answer {self.answer!r}: expected one of {', '.join(ANSWERS)}")
        if self.limit_mode not in LIMIT_MODES:
            raise ValueError(f"limit_mode {self.limit_mode!r}: expected one of {', '.join(LIMIT_MODES)}")
        if self.hold_limit is not None and self.limit_mode not in COLLAPSES:
            raise ValueError(f"hold_limit needs a collapsing mode ({', '.join(COLLAPSES)}), not {self.limit_mode!r}")
        if self.delay_ms < 0:
            raise ValueError(f"delay_ms {self.delay_ms!r} is negative")
        if self.rate_cap is not None and not self.rate_cap > 0:
            raise ValueError(f"rate_cap {self.rate_cap!r} is not a positive rate")
        if self.police_rate is not None and not self.police_rate > 0:
            raise ValueError(f"police_rate {self.police_rate!r} is not a positive rate")
        if self.police_burst < 1:
            raise ValueError(f"police_burst {self.police_burst!r} is below 1")

    @property
    def malformation(self) -> tuple:
        """(when, what) of ``malformed``, or (None, None)."""
        if isinstance(self.malformed, str):
            return parse_malformed(self.malformed)
        return tuple(self.malformed) if self.malformed else (None, None)

    @property
    def queued(self) -> bool:
        """Whether its answers wait in the pacing queue (a delay or a rate cap)."""
        return self.delay_ms > 0 or self.rate_cap is not None

    def arguments(self) -> list:
        """The command line's options for this behaviour (the defaults left out)."""
        out: list = []
        if self.session_limit is not None:
            out += ["--session-limit", str(self.session_limit)]
        if self.session_limit is not None or self.hold_limit is not None:
            out += ["--limit-mode", self.limit_mode]
        if self.hold_limit is not None:
            out += ["--hold-limit", str(self.hold_limit), "--hold-after", repr(self.hold_after)]
        if self.answer != "packet_out":
            out += ["--answer", self.answer]
        if self.answer == "lldp" and self.lldp_period:
            out += ["--lldp-period", repr(self.lldp_period)]
        if self.delay_ms:
            out += ["--delay-ms", repr(self.delay_ms)]
        if self.rate_cap:
            out += ["--rate-cap", repr(self.rate_cap)]
        if self.police_rate:
            out += ["--police-rate", repr(self.police_rate), "--police-burst", str(self.police_burst)]
        if self.malformed:
            when, what = self.malformation
            out += ["--malformed", f"{when}:{what}"]
        return out

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "Behaviour":
        return cls(answer=args.answer, session_limit=args.session_limit, limit_mode=args.limit_mode,
                   hold_limit=args.hold_limit, hold_after=args.hold_after, delay_ms=args.delay_ms,
                   rate_cap=args.rate_cap, malformed=args.malformed, lldp_period=args.lldp_period,
                   police_rate=args.police_rate, police_burst=args.police_burst)


NO_BEHAVIOUR = Behaviour()     # a PACKET_OUT for every PACKET_IN, at once, to any number of sessions


class NullControllerFactory(Factory):
    """A null controller's sessions, behaving as ``behaviour`` (:class:`Behaviour`) says.  ``clock``: the reactor's
    IReactorTime (default: the global reactor, looked up only when a delay or a rate cap needs it); tests pass a
    ``task.Clock``.  ``queue_limit``/``backlog``: the pacing queue's bounds (the command line's
    ``--queue-limit``/``--backlog``).  ``collapse_action(mode, why)`` replaces the process-level crash and stall
    (tests)."""

    def __init__(self, versions=(codec.OFP10, codec.OFP13), behaviour: Behaviour = NO_BEHAVIOUR, clock=None,
                 queue_limit: int = QUEUE_LIMIT, backlog: int | None = None, collapse_action=None):
        b = self.behaviour = behaviour
        self.versions = tuple(versions)
        self.answer = b.answer == "packet_out"
        self.lldp = b.answer == "lldp"
        self.probed: list = []
        self.limit = b.session_limit
        self.mode = b.limit_mode
        self.open = 0
        self.port = None
        self.sessions: set = set()
        self.hold_limit, self.hold_after = b.hold_limit, b.hold_after
        self._hold_call = None
        self.collapses = 0
        self.collapse_action = collapse_action or _collapse_process
        if queue_limit < 1:
            raise ValueError(f"queue_limit {queue_limit!r} is below 1")
        self.malformed_when, self.malformed_what = b.malformation
        if self.malformed_what is not None and self.malformed_what not in MALFORMED_WHAT:
            raise ValueError(f"unknown malformation {self.malformed_what!r}")
        self.delay_ms, self.rate_cap = b.delay_ms, b.rate_cap
        self._clock = clock
        self.police = TokenBucket(self.clock, b.police_rate, b.police_burst) if b.police_rate else None
        self.queue = None
        if b.queued:
            if backlog is None and b.rate_cap:
                backlog = max(64, int(b.rate_cap * BACKLOG_S))
            self.queue = AnswerQueue(self.clock, b.delay_ms / 1000.0, b.rate_cap, queue_limit, backlog)

    def collapse(self, why: str) -> None:
        """Fail the way ``mode`` says: every session closed (close-all), or the process exits or freezes."""
        self.collapses += 1
        if self._hold_call is not None and self._hold_call.active():
            self._hold_call.cancel()
        self._hold_call = None
        if self.mode == "close-all":
            for proto in list(self.sessions):
                proto.transport.loseConnection()
            return
        self.collapse_action(self.mode, why)

    def check_hold_limit(self) -> None:
        """Arm the collapse when more than ``hold_limit`` sessions are open, disarm it when they are not."""
        if self.hold_limit is None:
            return
        over = self.open > self.hold_limit
        armed = self._hold_call is not None and self._hold_call.active()
        if over and not armed:
            self._hold_call = self.clock.callLater(
                self.hold_after, self.collapse,
                f"more than {self.hold_limit} sessions open for {self.hold_after:g} s")
        elif not over and armed:
            self._hold_call.cancel()
            self._hold_call = None

    @property
    def clock(self):
        if self._clock is None:
            from twisted.internet import reactor
            self._clock = reactor
        return self._clock

    def buildProtocol(self, addr):
        return NullControllerProtocol(self)


def _collapse_process(mode: str, why: str) -> None:
    """A crash exits at once (status CRASH_STATUS, nothing cleaned up); a stall freezes the process: it reads,
    writes and accepts nothing more (the kernel still completes TCP handshakes into the listen backlog), and
    SIGTERM/SIGINT end it the default way."""
    print(json.dumps({"event": mode, "message": why}), flush=True)
    if mode == "crash":
        os._exit(CRASH_STATUS)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    while True:
        time.sleep(3600)


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


MALFORMED_HELP = """\
--malformed WHEN:WHAT replaces one message (same version byte and xid unless said):
  WHEN  hello      instead of the controller's HELLO
        handshake  after the switch's HELLO, instead of FEATURES_REQUEST
        packet_in  as the answer to the first PACKET_IN of each session
  WHAT  short-length    the 8-byte header with length field 4
        truncated-body  an 8-byte PACKET_OUT (type 13, length 8): too short for its
                        buffer_id/in_port/actions_len (decodes as malformed_packet_out)
        unknown-type    an 8-byte message of type 250
        bad-version     the message with version byte 0x09 (for hello: legal OpenFlow,
                        its bitmap still offers 1.0/1.3; a switch negotiates down)
The controller then carries on as if it had sent the right message."""


def _non_negative(text: str) -> float:
    value = float(text)
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number >= 0")
    return value


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number > 0")
    return value


def _malformed(text: str) -> tuple:
    try:
        return parse_malformed(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class SocketTransport:
    """What :class:`NullControllerProtocol` writes through in the compiled responder: one blocking socket."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.disconnecting = False

    def write(self, data: bytes) -> None:
        if not self.disconnecting:
            self.sock.sendall(data)

    def loseConnection(self) -> None:
        self.disconnecting = True
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)

    abortConnection = loseConnection


def serve_compiled(sock: socket.socket, factory: NullControllerFactory) -> None:
    """One session of the compiled responder (``--responder compiled``): the protocol's Python code does the
    handshake and every message the C loop leaves to it; the C loop (``fastpath.native.respond``) serves the rest,
    blocked in ``read()`` between messages.  Ends when the peer closes or the protocol closes the session."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    transport = SocketTransport(sock)
    proto = factory.buildProtocol(None)
    proto.transport = transport
    proto.flush = False
    try:
        proto._connection_made()
        while not transport.disconnecting:
            if proto.version is not None and not proto.buffer:
                count, proto.xid, rest, closed = fastpath.native.respond(sock.fileno(), proto.version, proto.xid,
                                                                         factory.answer)
                proto.packet_ins += count
                if rest:
                    proto.dataReceived(rest)
                if closed:
                    break
                continue
            data = sock.recv(65536)             # the handshake, or the rest of a message Python holds part of
            if not data:
                break
            proto.dataReceived(data)
    except OSError:
        pass                                    # the peer reset the session: it ends like a close
    finally:
        proto.connectionLost()
        with contextlib.suppress(OSError):
            sock.close()


def run_compiled(args, factory: NullControllerFactory) -> int:
    """The compiled responder's listener: one thread per session, until SIGTERM or SIGINT."""
    import threading
    if fastpath.native is None:
        print(json.dumps({"event": "error", "message": f"--responder compiled: {fastpath.WHY_PYTHON}"}), flush=True)
        return 3
    try:
        listener = socket.create_server((args.host, args.port), backlog=4096)
    except OSError as exc:
        print(json.dumps({"event": "error", "message": f"cannot listen on {args.host}:{args.port}: {exc}"}),
              flush=True)
        return 3
    print(json.dumps({"event": "listening", "host": args.host, "port": listener.getsockname()[1]}), flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        while True:
            conn, _ = listener.accept()
            threading.Thread(target=serve_compiled, args=(conn, factory), daemon=True).start()
    except KeyboardInterrupt:
        return 0
    finally:
        listener.close()


COMPILED_EXCLUDES = ("busy_poll", "delay_ms", "rate_cap", "police_rate", "malformed", "session_limit", "reuse_port")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m emulator.nullctl", description=__doc__.splitlines()[0],
                                     epilog=MALFORMED_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--session-limit", type=int, default=None,
                        help="behave as a controller that holds this many sessions")
    parser.add_argument("--limit-mode", choices=LIMIT_MODES, default="refuse",
                        help="past the limit: stop listening, accept and close, or accept and stay silent (the new "
                             "session fails, the others are served); or collapse: exit with status "
                             f"{CRASH_STATUS} (crash), freeze (stall: nothing read, written or accepted) or close "
                             "every session (close-all)")
    parser.add_argument("--hold-limit", type=int, default=None, metavar="M",
                        help="with a collapsing --limit-mode: more than M sessions open for --hold-after seconds "
                             "collapse the controller (it establishes more sessions than it keeps)")
    parser.add_argument("--hold-after", type=_positive, default=1.0, metavar="S",
                        help="seconds over --hold-limit before the collapse (default 1)")
    parser.add_argument("--openflow", choices=("1.0", "1.3", "both"), default="both",
                        help="the versions it speaks (default both); with one, it answers a switch that speaks "
                             "only the other in its own and carries on (some real controllers do)")
    parser.add_argument("--answer", choices=ANSWERS, default="packet_out",
                        help="answer each PACKET_IN with a PACKET_OUT (default), or drop it (a sink for the "
                             "emulator's open-loop ceiling)")
    parser.add_argument("--lldp-period", type=float, default=0.0,
                        help="with --answer lldp: seconds between LLDP rounds to every switch (0: one round)")
    parser.add_argument("--busy-poll", action="store_true",
                        help="poll instead of sleeping in epoll (spends a core; for the emulator's latency floor)")
    parser.add_argument("--responder", choices=("reactor", "compiled"), default="reactor",
                        help="reactor (default): every option; compiled: blocking sockets, a thread per session "
                             "and the C loop of emulator._fastpath (the emulator's latency floor; answers at once)")
    parser.add_argument("--max-files", type=int, default=200000, help="RLIMIT_NOFILE to ask for")
    parser.add_argument("--reuse-port", action="store_true",
                        help="listen with SO_REUSEPORT, so several null controllers share one port (and the "
                             "kernel spreads sessions over them past one process's open-file limit)")
    parser.add_argument("--delay-ms", type=_non_negative, default=0.0, metavar="D",
                        help="write each answer to a PACKET_IN D ms after the PACKET_IN was read (default 0: at "
                             "once); answers keep their order")
    parser.add_argument("--rate-cap", type=_positive, default=None, metavar="R",
                        help="answer at most R PACKET_INs per second over all sessions: one FIFO pacing queue "
                             "(answer k of a busy period at start + k/R; with --delay-ms, at max(read + D, slot)); "
                             "the excess waits, it is not dropped")
    parser.add_argument("--police-rate", type=_positive, default=None, metavar="R",
                        help="police the answers over all sessions: a token bucket of R a second (--police-burst "
                             "saved); an answer over it is dropped, not queued")
    parser.add_argument("--police-burst", type=positive_int, default=200, metavar="B",
                        help="with --police-rate: the answers the bucket saves (default %(default)d)")
    parser.add_argument("--queue-limit", type=int, default=QUEUE_LIMIT, metavar="N",
                        help="with --delay-ms or --rate-cap: answers that may wait (default %(default)d); past it "
                             "they are dropped and counted")
    parser.add_argument("--backlog", type=int, default=None, metavar="N",
                        help="with --rate-cap: past N answers waiting, stop reading the sessions that add more until "
                             "the queue is half as long (TCP then pushes back on the switches, as a real "
                             "controller's full input queue does; default: 50 ms worth of answers at the cap)")
    parser.add_argument("--malformed", type=_malformed, default=None, metavar="WHEN:WHAT",
                        help="replace one message by a malformed one (see below)")
    args = parser.parse_args(argv)
    if args.responder == "compiled":
        given = [name for name in COMPILED_EXCLUDES if getattr(args, name) not in (None, False, 0.0)]
        if given or args.answer == "lldp":
            what = ", ".join("--" + name.replace("_", "-") for name in given) or "--answer lldp"
            parser.error(f"--responder compiled answers at once and takes no {what}")
    if args.hold_limit is not None and args.limit_mode not in COLLAPSES:
        parser.error(f"--hold-limit needs a collapsing --limit-mode ({', '.join(COLLAPSES)}), not {args.limit_mode}")
    try:
        raise_nofile(args.max_files)
    except FdLimitError as exc:
        print(json.dumps({"event": "warning", "message": str(exc)}), flush=True)

    versions = (codec.OFP10, codec.OFP13) if args.openflow == "both" else (codec.VERSION_BY_NAME[args.openflow],)
    if args.responder == "compiled":
        return run_compiled(args, NullControllerFactory(versions=versions, behaviour=Behaviour.from_args(args)))

    from twisted.internet import reactor

    factory = NullControllerFactory(versions=versions, behaviour=Behaviour.from_args(args), clock=reactor,
                                    queue_limit=args.queue_limit, backlog=args.backlog)
    if factory.queue is not None:
        def first_drop(queue):
            print(json.dumps({"event": "warning", "message": f"answer queue full ({queue.limit} answers waiting): "
                              "dropping answers past it"}), flush=True)
        factory.queue.on_first_drop = first_drop
        # On SIGTERM (the fixture's stop), what the queue did, read back by fixtures/devices/null.py's answer_holds.
        reactor.addSystemEventTrigger("before", "shutdown", lambda: print(
            json.dumps({"event": "queue", **factory.queue.summary()}), flush=True))
    if not _listen(reactor, args, factory):
        return 3
    _start_timers(reactor, args, factory)
    reactor.run()
    return 0


def _listen(reactor, args, factory) -> bool:
    """Listen as ``args`` say, printing the ``listening`` event (or the ``error`` event, and False)."""
    try:
        if args.reuse_port:
            factory.port = listen_reuse_port(reactor, args.host, args.port, factory)
        else:
            factory.port = reactor.listenTCP(args.port, factory, backlog=4096, interface=args.host)
    except Exception as exc:  # CannotListenError / OSError carry the address and the OS reason
        print(json.dumps({"event": "error", "message": f"cannot listen on {args.host}:{args.port}: {exc}"}),
              flush=True)
        return False
    print(json.dumps({"event": "listening", "host": args.host, "port": factory.port.getHost().port}),
          flush=True)
    return True


def _start_timers(reactor, args, factory) -> None:
    """The periodic work ``args`` ask for: LLDP rounds to every switch, and the busy poll."""
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


if __name__ == "__main__":
    sys.exit(main())
