"""One emulated OpenFlow switch on one control session: a Twisted Protocol.

Framing, handshake (HELLO with version negotiation, FEATURES, CONFIG, DESC /
PORT_DESC multipart, ROLE, BARRIER, ECHO both ways) and timestamps.  The clock
(``IReactorTime``) and the nanosecond time source are injected, so tests drive
it with ``StringTransport`` and ``task.Clock`` and never sleep.

OpenFlow 1.3 roles (:mod:`emulator.roles`): a switch connected to several
controllers has one session per controller, all sharing the switch's
:class:`~emulator.roles.RoleTable` (a session alone gets a table of its own).
ROLE_REQUEST follows the table's rules, a SLAVE's state-changing writes are
refused with IS_SLAVE, and SET_ASYNC / GET_ASYNC set and read which
asynchronous messages the session wants (:meth:`SwitchProtocol.wants_async`).
An optional keep-alive sends ECHO_REQUEST every ``echo_interval`` seconds and
closes the session (:data:`CLOSE_ECHO_TIMEOUT`) when one is not answered within
``echo_timeout``.

Timestamps are taken with a monotonic nanosecond clock at the write of each
message and at ``dataReceived`` for each message read: that is the measurement
point (RFC 8456 §4.3, §4.5) every benchmark reports.
"""

from __future__ import annotations

import errno
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

from twisted.internet import error as terror
from twisted.internet.defer import Deferred
from twisted.internet.protocol import Protocol

from . import codec
from . import roles as rl
from .commands import (  # noqa: F401
    CLOSE_BY_PEER,
    CLOSE_ECHO_TIMEOUT,
    CLOSE_HANDSHAKE_TIMEOUT,
    CLOSE_LOCAL,
    CLOSE_PROTOCOL,
    CLOSE_RESET,
    CLOSE_VERSION,
)

SUPPORTED_STATS = {codec.MP_DESC, codec.MP_FLOW, codec.MP_AGGREGATE, codec.MP_TABLE, codec.MP_PORT_STATS}
ACCEPTED_SILENTLY = {"flow_mod", "packet_out", "port_mod", "group_mod", "meter_mod", "table_mod", "flow_removed"}


@dataclass(frozen=True)
class SwitchSpec:
    """What one emulated switch says about itself."""
    datapath_id: int
    versions: tuple = (codec.OFP13,)
    ports: tuple = ()
    n_buffers: int = 256
    n_tables: int = 254
    description: str = "bmwg-sdn emulated switch"

    @classmethod
    def simple(cls, datapath_id: int, versions=(codec.OFP13,), n_ports: int = 2) -> "SwitchSpec":
        ports = tuple(codec.port_spec(datapath_id, p) for p in range(1, n_ports + 1))
        return cls(datapath_id=datapath_id, versions=tuple(versions), ports=ports)


class WhenGone:
    """Deferreds that fire (with None) once their owner is gone, ``is_gone()``: one asked for after that fires at
    once.  The owner calls :meth:`check` whenever what ``is_gone`` reads may have changed (a ramp's or a screen's
    last session closed, the owner closed)."""

    def __init__(self, is_gone: Callable[[], bool]):
        self._is_gone = is_gone
        self._waiting: list = []

    def wait(self) -> Deferred:
        d: Deferred = Deferred()
        self._waiting.append(d)
        self.check()
        return d

    def check(self) -> None:
        if self._waiting and self._is_gone():
            waiting, self._waiting = self._waiting, []
            for d in waiting:
                d.callback(None)


class SessionListener:
    """What a switch session tells whoever runs it.  Every method is optional."""

    def session_ready(self, session: "SwitchProtocol") -> None:
        """Handshake complete: HELLO exchanged and FEATURES_REQUEST answered."""

    def session_closed(self, session: "SwitchProtocol", kind: str, detail: str) -> None:
        """The session ended; ``kind`` is one of the CLOSE_* names of :mod:`emulator.commands`."""

    def echo_answered(self, session: "SwitchProtocol", rtt_ns: int) -> None:
        """The controller answered our ECHO_REQUEST probe."""

    def role_requested(self, session: "SwitchProtocol", role: int, generation_id: int, answer: rl.RoleAnswer,
                       t: int) -> None:
        """A ROLE_REQUEST (``role``, ``generation_id``) read at ``t`` was answered: ``answer`` says how."""



class PushProducer:
    """IPushProducer for whatever writes more than its peer reads: registered with a transport, it is paused
    when the transport's buffer passes its high-water mark (TCP flow control) and resumed when it drains."""
    paused = False

    def pauseProducing(self):
        self.paused = True

    def resumeProducing(self):
        self.paused = False

    def stopProducing(self):
        self.paused = True


@dataclass
class Counters:
    rx: int = 0
    tx: int = 0
    errors_sent: int = 0
    by_name: dict = field(default_factory=dict)


@dataclass(frozen=True)
class SessionRules:
    """How a switch starts and keeps one control session.

    ``handshake_timeout``: seconds from the connection to a finished handshake before the switch closes it (0:
    never); ``echo_interval`` / ``echo_timeout``: the keep-alive, an ECHO_REQUEST every interval, the session closed
    when one is not answered within the timeout (0: none / never closes); ``confirm``: the session is ready only
    once the controller has answered an ECHO_REQUEST sent after the handshake (§5.2.1 counts a session the
    controller serves, not one whose handshake it began), within the handshake timeout; ``max_message_len``: the
    longest message the switch accepts."""
    handshake_timeout: float = 10.0
    echo_interval: float = 0.0
    echo_timeout: float = 0.0
    confirm: bool = False
    max_message_len: int = codec.MAX_MESSAGE_LEN


SESSION_RULES = SessionRules()


class SwitchProtocol(Protocol):
    """An emulated switch's side of one OpenFlow control session."""

    def __init__(self, spec: SwitchSpec, clock, listener: Optional[SessionListener] = None,
                 rules: SessionRules = SESSION_RULES, now_ns: Callable[[], int] = time.monotonic_ns,
                 trace: Optional[Callable[[str, int, str, int, int], None]] = None,
                 roles: Optional[rl.RoleTable] = None, controller: str = ""):
        """``rules``: how the session starts and is kept (:class:`SessionRules`); ``roles``: the switch's role
        table, shared by its sessions (default: one of its own); ``controller``: the controller's address as the
        timeline names it (default: the transport's peer)."""
        self.spec = spec
        self.clock = clock
        self.listener = listener or SessionListener()
        self.rules = rules
        self.handshake_timeout = rules.handshake_timeout
        self.now_ns = now_ns
        self.trace = trace
        self.max_message_len = rules.max_message_len
        self.version: Optional[int] = None
        self.ready = False
        self.closed = False
        self.close_kind: Optional[str] = None
        self.close_detail = ""
        self.roles = roles if roles is not None else rl.RoleTable()
        self.async_config = rl.DEFAULT_ASYNC
        self.controller = controller
        self.echo_interval = rules.echo_interval
        self.echo_timeout = rules.echo_timeout
        self.confirm = rules.confirm
        self._confirm_xid: Optional[int] = None
        self.miss_send_len = 128
        self.t_connected: Optional[int] = None
        self.t_ready: Optional[int] = None
        self.t_last_rx: Optional[int] = None
        self.t_last_tx: Optional[int] = None
        self.t_echo_ok: Optional[int] = None
        self.counters = Counters()
        self._buffer = b""
        self._xid = 0
        self._echo_pending: dict = {}
        self._handshake_call = None
        self._keepalive_call = None
        self._echo_deadlines: dict = {}       # keep-alive xid -> the call that closes the session
        self._closing_kind: Optional[str] = None
        self._closing_detail = ""

    @property
    def controller_role(self) -> int:
        """This session's OpenFlow role (EQUAL, MASTER or SLAVE; always EQUAL under OpenFlow 1.0)."""
        return self.roles.role_of(self)

    def wants_async(self, kind: int, reason: int) -> bool:
        """Whether this session's controller gets asynchronous message ``kind`` (:data:`emulator.roles.PACKET_IN`,
        PORT_STATUS, FLOW_REMOVED) with ``reason``: by its role and asynchronous configuration under OpenFlow 1.3,
        always under 1.0 (no roles there)."""
        if self.version != codec.OFP13:
            return True
        return self.async_config.wants(kind, reason, self.roles.role_of(self))

    # ------------------------------------------------------------------ Twisted callbacks
    def connectionMade(self):
        self.t_connected = self.now_ns()
        if hasattr(self.transport, "setTcpNoDelay"):
            # each message leaves when it is written (its timestamp): no Nagle wait for an earlier one's ACK
            self.transport.setTcpNoDelay(True)
        if not self.controller:
            try:
                peer = self.transport.getPeer()
                self.controller = f"{peer.host}:{peer.port}"
            except (AttributeError, NotImplementedError):
                self.controller = "controller"
        versions = self.spec.versions
        bitmap = versions if max(versions) >= codec.OFP13 else ()
        self.send(codec.encode_hello(max(versions), self.next_xid(), bitmap), "hello")
        if self.handshake_timeout:
            self._handshake_call = self.clock.callLater(self.handshake_timeout, self._handshake_expired)

    def dataReceived(self, data: bytes):
        t = self.now_ns()
        self.t_last_rx = t
        try:
            frames, self._buffer = codec.split_frames(self._buffer + data, self.max_message_len)
        except codec.FramingError as exc:
            self.abort(CLOSE_PROTOCOL, f"framing error: {exc}: {bytes(self._buffer + data)[:32].hex()}")
            return
        for frame in frames:
            if self.closed or self._closing_kind:
                return
            self.counters.rx += 1
            self.handle_frame(frame, t)

    def handle_frame(self, frame: bytes, t: int) -> None:
        """Decode and handle one message; one the emulator cannot read closes this session, naming it."""
        try:
            msg = codec.decode(frame)
        except ValueError as exc:
            self.abort(CLOSE_PROTOCOL, f"malformed message from the controller ({exc}): {frame[:32].hex()}")
            return
        try:
            self._handle(msg, frame, t)
        except (ValueError, IndexError, KeyError, TypeError) as exc:   # struct.error is a ValueError
            self.abort(CLOSE_PROTOCOL, f"cannot handle {msg.name} from the controller ({type(exc).__name__}: "
                                       f"{exc}): {frame[:32].hex()}")

    def connectionLost(self, reason=None):
        self._cancel_handshake_timer()
        self._stop_keepalive()
        if self.closed:
            return
        self.closed = True
        self.roles.leave(self)
        if self._closing_kind:
            kind, detail = self._closing_kind, self._closing_detail
        else:
            kind, detail = classify_loss(reason)
        self.close_kind, self.close_detail = kind, detail
        self.listener.session_closed(self, kind, detail)

    # ------------------------------------------------------------------ sending
    def next_xid(self) -> int:
        self._xid = (self._xid + 1) & 0xFFFFFFFF
        return self._xid

    def send(self, data: bytes, name: str, xid: int = 0) -> int:
        t = self.now_ns()
        self.transport.write(data)
        self.t_last_tx = t
        self.counters.tx += 1
        if self.trace:
            self.trace("tx", data[0], name, xid, t)
        return t

    def probe_echo(self) -> int:
        """Send an ECHO_REQUEST to the controller; its answer reaches ``listener.echo_answered``."""
        version = self.version or max(self.spec.versions)
        xid = self.next_xid()
        self._echo_pending[xid] = self.send(codec.encode_echo_request(version, xid), "echo_request", xid)
        return xid

    def abort(self, kind: str, detail: str = "", hard: bool = False) -> None:
        """Close this session on our initiative, recording why; ``hard``: at once, unsent data dropped (toward a
        controller that reads nothing, a graceful close would wait for ever)."""
        if self.closed or self._closing_kind:
            return
        self._closing_kind, self._closing_detail = kind, detail
        if hard:
            self.transport.abortConnection()
        else:
            self.transport.loseConnection()

    # ------------------------------------------------------------------ receiving
    def _handle(self, msg, frame: bytes, t: int) -> None:
        if self.trace:
            self.trace("rx", msg.version, msg.name, msg.xid, t)
        by_name = self.counters.by_name
        by_name[msg.name] = by_name.get(msg.name, 0) + 1
        if msg.name == "hello":
            self._on_hello(msg)
            return
        if self.version is None:
            # The spec has HELLO first; answer anything else with an error and go on.
            self._send_error(msg, codec.OFPET_BAD_REQUEST, codec.OFPBRC_BAD_TYPE, frame)
            return
        if msg.version != self.version:
            self._send_error(msg, codec.OFPET_BAD_REQUEST, codec.OFPBRC_BAD_VERSION, frame)
            return
        if msg.name in rl.SLAVE_REFUSED and self.version == codec.OFP13 and not self.roles.may_write(self):
            self._send_error(msg, codec.OFPET_BAD_REQUEST, codec.OFPBRC_IS_SLAVE, frame)
            return
        handler = getattr(self, "_on_" + msg.name, None)
        if handler is not None:
            handler(msg, t)
        elif msg.name in ACCEPTED_SILENTLY:
            pass
        elif msg.name == "experimenter":
            self._send_error(msg, codec.OFPET_BAD_REQUEST, 3, frame)  # BAD_VENDOR / BAD_EXPERIMENTER
        else:
            self._send_error(msg, codec.OFPET_BAD_REQUEST, codec.OFPBRC_BAD_TYPE, frame)

    def _on_hello(self, msg) -> None:
        if self.version is not None:
            return
        agreed = codec.negotiate(self.spec.versions, msg.version, codec.hello_versions(msg))
        if agreed is None:
            ours = "/".join(codec.VERSION_NAMES.get(v, hex(v)) for v in self.spec.versions)
            self.send(codec.encode_error(max(self.spec.versions), msg.xid, codec.OFPET_HELLO_FAILED,
                                         codec.OFPHFC_INCOMPATIBLE, b"no common version"), "error")
            self.abort(CLOSE_VERSION, f"{codec.version_advice(msg.version, codec.hello_versions(msg))} (controller "
                                      f"offered version 0x{msg.version:02x}, switch speaks {ours})")
            return
        self.version = agreed

    def _on_echo_request(self, msg, t) -> None:
        self.send(codec.encode_echo_reply(self.version, msg.xid, msg.body), "echo_reply", msg.xid)

    def _on_echo_reply(self, msg, t) -> None:
        sent = self._echo_pending.pop(msg.xid, None)
        if sent is None:
            return
        deadline = self._echo_deadlines.pop(msg.xid, None)
        if deadline is not None and deadline.active():
            deadline.cancel()
        self.t_echo_ok = t
        self.listener.echo_answered(self, t - sent)
        if msg.xid == self._confirm_xid and not self.ready:
            self._confirm_xid = None
            self._become_ready(t)

    def _on_features_request(self, msg, t) -> None:
        spec = self.spec
        ports = spec.ports if self.version == codec.OFP10 else ()
        self.send(codec.encode_features_reply(self.version, msg.xid, spec.datapath_id, spec.n_buffers,
                                              spec.n_tables, ports), "features_reply", msg.xid)
        if self.ready:
            return
        if not self.confirm:
            self._become_ready(self.t_last_tx)
        elif self._confirm_xid is None:
            self._confirm_xid = self.probe_echo()

    def _become_ready(self, t: int) -> None:
        self.ready = True
        self.t_ready = t
        self._cancel_handshake_timer()
        self.roles.join(self)
        if self.echo_interval > 0:
            self._keepalive_call = self.clock.callLater(self.echo_interval, self._keepalive)
        self.listener.session_ready(self)

    def _on_set_config(self, msg, t) -> None:
        self.miss_send_len = msg.fields["miss_send_len"]

    def _on_get_config_request(self, msg, t) -> None:
        self.send(codec.encode_get_config_reply(self.version, msg.xid, 0, self.miss_send_len),
                  "get_config_reply", msg.xid)

    def _on_barrier_request(self, msg, t) -> None:
        self.send(codec.encode_barrier_reply(self.version, msg.xid), "barrier_reply", msg.xid)

    def _on_role_request(self, msg, t) -> None:
        role, generation_id = msg.fields["role"], msg.fields["generation_id"]
        answer = self.roles.request(self, role, generation_id)
        if answer.error is not None:
            self._send_error(msg, codec.OFPET_ROLE_REQUEST_FAILED, answer.error, msg_bytes(msg))
        else:
            self.send(codec.encode_role_reply(msg.xid, answer.role, answer.generation_id), "role_reply", msg.xid)
        self.listener.role_requested(self, role, generation_id, answer, t)

    def _on_set_async(self, msg, t) -> None:
        self.async_config = rl.AsyncConfig(tuple(msg.fields["masks"]))

    def _on_get_async_request(self, msg, t) -> None:
        self.send(codec.encode_get_async_reply(msg.xid, self.async_config.masks), "get_async_reply", msg.xid)

    def _on_stats_request(self, msg, t) -> None:
        kind = msg.fields["stats_type"]
        spec = self.spec
        if kind == codec.MP_DESC:
            reply = codec.encode_desc_reply(self.version, msg.xid, "bmwg-sdn", "emulated OpenFlow switch",
                                            "bmwg-sdn emulator", f"{spec.datapath_id:016x}", spec.description)
        elif kind == codec.MP_PORT_DESC and self.version == codec.OFP13:
            reply = codec.encode_port_desc_reply(msg.xid, spec.ports)
        elif kind in SUPPORTED_STATS:
            reply = codec.encode_empty_stats_reply(self.version, msg.xid, kind)
        else:
            self._send_error(msg, codec.OFPET_BAD_REQUEST, codec.OFPBRC_BAD_STAT, msg_bytes(msg))
            return
        self.send(reply, "stats_reply", msg.xid)

    def _on_error(self, msg, t) -> None:
        pass  # counted in counters.by_name; the controller told us something was wrong

    # ------------------------------------------------------------------ helpers
    def _send_error(self, msg, err_type: int, code: int, frame: bytes) -> None:
        version = self.version or max(self.spec.versions)
        self.counters.errors_sent += 1
        self.send(codec.encode_error(version, msg.xid, err_type, code, frame), "error", msg.xid)

    def _handshake_expired(self) -> None:
        self._handshake_call = None
        if not self.ready:
            stage = ("no HELLO from controller" if self.version is None else
                     "no ECHO_REPLY after the handshake" if self._confirm_xid is not None else
                     "no FEATURES_REQUEST from controller")
            self.abort(CLOSE_HANDSHAKE_TIMEOUT, f"{stage} within {self.handshake_timeout:g} s")

    def _cancel_handshake_timer(self) -> None:
        if self._handshake_call is not None and self._handshake_call.active():
            self._handshake_call.cancel()
        self._handshake_call = None

    # ------------------------------------------------------------------ keep-alive
    def _keepalive(self) -> None:
        """Send the next keep-alive ECHO_REQUEST; the session closes if its reply is late."""
        self._keepalive_call = None
        if self.closed or self._closing_kind:
            return
        xid = self.probe_echo()
        if self.echo_timeout > 0:
            self._echo_deadlines[xid] = self.clock.callLater(self.echo_timeout, self._echo_expired, xid)
        self._keepalive_call = self.clock.callLater(self.echo_interval, self._keepalive)

    def _echo_expired(self, xid: int) -> None:
        self._echo_deadlines.pop(xid, None)
        self._echo_pending.pop(xid, None)
        self.abort(CLOSE_ECHO_TIMEOUT, f"no ECHO_REPLY within {self.echo_timeout:g} s (keep-alive every "
                                       f"{self.echo_interval:g} s)", hard=True)

    def _stop_keepalive(self) -> None:
        calls = list(self._echo_deadlines.values())
        if self._keepalive_call is not None:
            calls.append(self._keepalive_call)
        for call in calls:
            if call.active():
                call.cancel()
        self._keepalive_call = None
        self._echo_deadlines.clear()


def msg_bytes(msg) -> bytes:
    return codec.header(msg.version, msg.type, codec.HEADER_LEN + len(msg.body), msg.xid) + msg.body


def classify_loss(reason) -> tuple[str, str]:
    """Name how the controller ended a session from Twisted's connectionLost reason."""
    exc = getattr(reason, "value", reason)
    if isinstance(exc, terror.ConnectionDone):
        return CLOSE_BY_PEER, "controller closed the connection (FIN)"
    os_errno = getattr(exc, "osError", None) or getattr(exc, "errno", None)
    if isinstance(exc, terror.ConnectionLost) or os_errno == errno.ECONNRESET:
        return CLOSE_RESET, "connection reset (RST)"
    return CLOSE_RESET, f"connection lost: {exc}"
