"""The robustness screen's engine: one malformed kind, a probe session, a sentinel and a fresh handshake.

For each kind (:mod:`emulator.malformed`) a :class:`KindScreen`:

1. connects the *sentinel* switch and, once it is ready, samples the controller every ``interval_s``: an
   ECHO_REQUEST and a PACKET_IN (a broadcast ARP from a fresh source MAC), each answered when its ECHO_REPLY,
   or a PACKET_OUT / FLOW_MOD naming that MAC, comes back.  A controller that answered ECHOs but none of the
   PACKET_INs before the send (one without a learning application: OpenDaylight's openflowplugin, Faucet) is
   sampled by its ECHOs alone from then on (``sentinel_liveness`` "echo"), so that its silence on PACKET_IN is
   not read as a hang;
2. after ``baseline_s`` of samples connects the *probe* switch and sends the kind's bytes at the kind's stage
   of the session (after the handshake, in place of the HELLO, before it, ...);
3. records for ``window_s`` what the probe receives (replies, ERROR type/code/xid, answers that name the
   kind's marked buffer or MAC, a close), while the sentinel goes on sampling; ``0.5 s`` after the send a
   *fresh* switch makes a new handshake;
4. answers a :class:`~emulator.commands.ScreenObservation`.  It judges nothing: the outcome is the harness's
   (:func:`emulator.malformed.classify`), which also knows whether the controller process still lives.

The clock and the connector are injected, so the unit tests drive it with ``task.Clock`` and
``StringTransport``.
"""

from __future__ import annotations

import struct
import time
from typing import Callable, Optional

from twisted.internet.defer import Deferred
from twisted.internet.error import NotConnectingError
from twisted.internet.protocol import ClientFactory

from . import codec
from . import malformed as mf
from .commands import CLOSE_LOCAL, ScreenKind, ScreenObservation
from .protocol import SessionListener, SessionRules, SwitchProtocol, SwitchSpec, WhenGone

FRESH_AFTER_S = 0.5
AFTER_HANDSHAKE = (mf.SESSION, mf.MUTE_ECHO, mf.ERROR_EVERY, mf.DUPLICATE)
SENTINEL_MAC_BASE = 0x025E_0000_0000
_SENTINEL_PREFIX = SENTINEL_MAC_BASE.to_bytes(6, "big")[:4]     # what every sentinel source MAC begins with
_MARKS = (mf.MARK_MAC, struct.pack("!I", mf.MARK_BUFFER))


def _ms(ns: int) -> float:
    return round(ns / 1e6, 3)


class ScreenSwitch(SwitchProtocol):
    """A switch of the screen: the sentinel, the probe (which sends the kind), its twin, or the fresh one."""

    def __init__(self, role: str, screen: "KindScreen", spec: SwitchSpec, stage: str = mf.SESSION, **kw):
        super().__init__(spec, screen.clock, listener=screen, now_ns=screen.now_ns, **kw)
        self.role = role
        self.screen = screen
        self.stage = stage
        self.t_connect: Optional[int] = None

    def connectionMade(self):
        self.t_connect = self.now_ns()
        if not self.screen.session_connected(self):
            return
        if self.role == "probe" and self.stage not in AFTER_HANDSHAKE:
            self.t_connected = self.t_connect
            self.screen.probe_connected(self)
            if self.stage in (mf.HELLO_STAGE, mf.PRE_HELLO, mf.SILENT):
                return
        super().connectionMade()

    def handle_frame(self, frame: bytes, t: int) -> None:
        if self.role not in ("probe", "twin"):
            super().handle_frame(frame, t)
            return
        # Whatever the controller sends the probe is recorded; nothing it sends makes the probe close.
        try:
            msg = codec.decode(frame)
        except ValueError:
            self.screen.probe_received(self, codec.Unknown(frame[0], frame[1], 0, frame[8:], "undecodable"), frame, t)
            return
        try:
            self._handle(msg, frame, t)
        except (ValueError, IndexError, KeyError, TypeError, struct.error):
            pass

    def _handle(self, msg, frame: bytes, t: int) -> None:
        screen = self.screen
        if self.role == "probe" or self.role == "twin":
            screen.probe_received(self, msg, frame, t)
        elif self.role == "sentinel":
            screen.sentinel_received(msg, frame, t)
        if self.role == "probe" and self._probe_handled(msg, frame, t):
            return
        super()._handle(msg, frame, t)

    def _probe_handled(self, msg, frame: bytes, t: int) -> bool:
        """The probe's own way with ``msg`` at its kind's stage; True when that was all (else the switch's usual
        answer follows)."""
        screen, stage, name = self.screen, self.stage, msg.name
        if name == "hello" and stage == mf.EARLY and self.version is None:
            super()._handle(msg, frame, t)
            screen.inject(self)
            return True
        if name == "features_request":
            screen.features_requested = True
            if stage == mf.NO_FEATURES:
                return True
            if stage == mf.FEATURES:
                data = mf.payload(screen.kind.id, screen.version)[0][1]
                screen.inject(self, replace_xid=msg.xid, data=data)
                if not self.ready:
                    self.ready = True
                    self.listener.session_ready(self)
                return True
        if stage in (mf.HELLO_STAGE, mf.PRE_HELLO, mf.SILENT):
            if name == "hello" and stage == mf.HELLO_STAGE and self.version is None:
                # our HELLO was the kind's; take the controller's version as offered, to go on if it does
                self.version = msg.version if msg.version in self.spec.versions else max(self.spec.versions)
                return True
            if stage != mf.HELLO_STAGE:
                return True     # the probe never said HELLO: it answers nothing
        if stage == mf.MUTE_ECHO and self.ready and name == "echo_request":
            return True
        if stage == mf.ERROR_EVERY and name in mf.ACTS and screen.t_inject is not None:
            self.send(codec.encode_error(self.version, msg.xid, mf.BAD_MATCH, mf.BAD_FIELD, frame), "error")
            return True
        return False


class _Dial(ClientFactory):
    def __init__(self, protocol: ScreenSwitch, failed: Callable[[ScreenSwitch, str], None]):
        self.protocol_instance, self.failed = protocol, failed
        self.connector = None          # while the connect is under way

    def startedConnecting(self, connector):
        self.connector = connector

    def buildProtocol(self, addr):
        self.connector = None
        return self.protocol_instance

    def clientConnectionFailed(self, connector, reason):
        self.connector = None
        self.failed(self.protocol_instance, f"connect failed: {reason.getErrorMessage()}")

    def stop(self) -> None:
        """Stop the connect if it is still under way (it then fails at once)."""
        connector, self.connector = self.connector, None
        if connector is not None:
            try:
                connector.stopConnecting()
            except NotConnectingError:
                pass


def tcp_connector(reactor, host: str, port: int, timeout: float = 5.0):
    """``connect(switch, failed)`` over TCP to ``host:port``; it returns what stops the connect (``stop()``)."""
    def connect(proto: ScreenSwitch, failed: Callable[[ScreenSwitch, str], None]) -> _Dial:
        dial = _Dial(proto, failed)
        reactor.connectTCP(host, port, dial, timeout=timeout)
        return dial
    return connect


class KindScreen(SessionListener):
    """One kind screened (see the module text); :meth:`run` fires with the observation.  ``connect(switch,
    failed)`` starts a switch's connect and may return something with ``stop()`` that stops it while it is
    under way; the end of the screen stops those, and :meth:`gone` fires once every session has closed."""

    def __init__(self, clock, cmd: ScreenKind, connect: Callable, now_ns: Callable[[], int] = time.monotonic_ns):
        self.clock = clock
        self.cmd = cmd
        self.p = cmd.screen
        self.kind = mf.kind_of(cmd.kind)
        self.version = cmd.version
        self.connect = connect
        self.now_ns = now_ns
        self.d: Deferred = Deferred()
        self.done = False
        self.t_inject: Optional[int] = None
        self.features_requested = False
        self.replies: list = []
        self.acted: list = []
        self.answers = 0
        self.probe_closed = ""
        self.probe_closed_ms: Optional[float] = None
        self.sent_bytes = 0
        self.pending: dict = {}          # sentinel probe key -> sent ns
        self.waits: list = []            # (sent ns, answered ns)
        self.rtt_before: list = []
        self.rtt_after: list = []
        self.sentinel_sent = 0
        self.sentinel_closed = ""
        self.echo_only = False           # no PACKET_IN answered before the send: ECHOs alone tell liveness
        self._answered = {"echo": 0, "mac": 0}
        self.fresh_ms: Optional[float] = None
        self.fresh_error = ""
        self._seq = 0
        self._calls: list = []
        self._sessions: list = []
        self._dials: list = []           # what stops each switch's connect (from ``connect``), if anything
        self._open: set = set()          # sessions connected and not closed
        self._gone = WhenGone(lambda: self.done and not self._open)
        self._sampling = None
        self.sentinel = self.probe = self.twin = self.fresh = None

    # ------------------------------------------------------------------ the sequence
    def run(self) -> Deferred:
        self.sentinel = self._session("sentinel", self.cmd.first_dpid)
        self._later(self.p.handshake_s + 3.0, self._not_ready, self.sentinel, "the sentinel switch")
        return self.d

    def _session(self, role: str, dpid: int, stage: str = mf.SESSION) -> ScreenSwitch:
        spec = SwitchSpec.simple(dpid, versions=(self.version,))
        timeout = 0 if role in ("probe", "twin") else self.p.handshake_s + 3.0
        sw = ScreenSwitch(role, self, spec, stage=stage, rules=SessionRules(handshake_timeout=timeout))
        self._sessions.append(sw)
        dial = self.connect(sw, self._connect_failed)
        if dial is not None:
            self._dials.append(dial)
        return sw

    def session_connected(self, sw: ScreenSwitch) -> bool:
        """A switch's TCP connection is up; False when the screen has ended (the connection is reset at once)."""
        self._open.add(sw)
        if self.done:
            sw._closing_kind, sw._closing_detail = CLOSE_LOCAL, "screen ended"
            sw.transport.abortConnection()
            return False
        return True

    def _later(self, delay: float, fn, *args):
        call = self.clock.callLater(delay, fn, *args)
        self._calls.append(call)
        return call

    def _not_ready(self, sw: ScreenSwitch, what: str) -> None:
        if not sw.ready and not self.done:
            self._finish(error=f"{what} could not complete a handshake within {self.p.handshake_s + 3.0:g} s "
                               f"({sw.close_detail or 'no answer'})")

    def _connect_failed(self, sw: ScreenSwitch, detail: str) -> None:
        if self.done:
            return
        if sw.role == "fresh":
            self.fresh_error = detail
        elif sw.role == "sentinel" or self.t_inject is None:
            self._finish(error=f"the {sw.role} switch could not connect: {detail}")
        else:
            self._closed(sw, detail)

    def session_ready(self, sw) -> None:
        if self.done:
            return
        if sw.role == "sentinel":
            self._later(self.p.settle_s, self._start_sampling)
        elif sw.role == "probe" and self.kind.stage in (mf.SESSION, mf.MUTE_ECHO, mf.ERROR_EVERY):
            self._later(self.p.settle_s, self.inject, sw)
        elif sw.role == "probe" and self.kind.stage == mf.DUPLICATE:
            self._later(self.p.settle_s, self._open_twin)
        elif sw.role == "fresh" and self.fresh_ms is None:
            self.fresh_ms = _ms(sw.t_ready - sw.t_connect)

    def _start_sampling(self) -> None:
        from twisted.internet.task import LoopingCall
        self._sampling = LoopingCall(self._sample)
        self._sampling.clock = self.clock
        self._sampling.start(self.p.interval_s, now=True)
        self._later(self.p.baseline_s, self._open_probe)

    def _open_probe(self) -> None:
        if self._answered["echo"] and not self._answered["mac"]:
            # the controller answers no PACKET_IN: the sentinel goes on with ECHOs alone
            self.echo_only = True
            self.pending = {key: sent for key, sent in self.pending.items() if key[0] != "mac"}
        self.probe = self._session("probe", self.cmd.first_dpid + 1, self.kind.stage)
        if self.kind.stage in AFTER_HANDSHAKE:
            self._later(self.p.handshake_s + 3.0, self._not_ready, self.probe, "the probe switch")

    def _open_twin(self) -> None:
        self._begin_window()
        self.twin = self._session("twin", self.cmd.first_dpid + 1)

    def probe_connected(self, sw: ScreenSwitch) -> None:
        """A probe whose kind replaces or precedes the handshake is connected: its window starts now."""
        stage = self.kind.stage
        if stage in (mf.HELLO_STAGE, mf.PRE_HELLO):
            self.inject(sw)
        else:
            self._begin_window()

    def inject(self, sw: ScreenSwitch, replace_xid: Optional[int] = None, data: Optional[bytes] = None) -> None:
        if self.done or sw.closed:
            return
        self._begin_window()
        if data is not None:
            if replace_xid is not None:
                data = data[:4] + struct.pack("!I", replace_xid) + data[8:]
            self._write(sw, data)
            return
        for delay, chunk in mf.payload(self.kind.id, self.version):
            if delay:
                self._later(delay, self._write, sw, chunk)
            else:
                self._write(sw, chunk)

    def _write(self, sw: ScreenSwitch, data: bytes) -> None:
        if not sw.closed and not self.done:
            sw.transport.write(data)
            self.sent_bytes += len(data)

    def _begin_window(self) -> None:
        if self.t_inject is not None:
            return
        self.t_inject = self.now_ns()
        self._later(FRESH_AFTER_S, self._open_fresh)
        self._later(self.p.window_s, self._finish)

    def _open_fresh(self) -> None:
        self.fresh = self._session("fresh", self.cmd.first_dpid + 2)
        self._later(self.p.handshake_s, self._fresh_expired)

    def _fresh_expired(self) -> None:
        if self.fresh_ms is None and not self.fresh_error:
            self.fresh_error = f"no handshake within {self.p.handshake_s:g} s"

    # ------------------------------------------------------------------ the sentinel
    def _sample(self) -> None:
        sw = self.sentinel
        if sw is None or sw.closed or not sw.ready or self.done:
            return
        xid = sw.next_xid()
        self.pending[("echo", xid)] = sw.send(codec.encode_echo_request(sw.version, xid), "echo_request", xid)
        self.sentinel_sent += 1
        if self.echo_only:
            return
        self._seq += 1
        mac = (SENTINEL_MAC_BASE + self._seq).to_bytes(6, "big")
        frame = mf.arp_frame(mac)
        t = sw.send(mf.packet_in(sw.version, frame, buffer_id=codec.NO_BUFFER, xid=0x5E000000 + self._seq),
                    "packet_in")
        self.pending[("mac", mac)] = t
        self.sentinel_sent += 1

    def sentinel_received(self, msg, frame: bytes, t: int) -> None:
        key = None
        if msg.name == "echo_reply":
            key = ("echo", msg.xid)
        elif msg.name in mf.ACTS:
            at = frame.find(_SENTINEL_PREFIX)
            while at >= 0 and key is None:
                candidate = ("mac", frame[at:at + 6])
                if candidate in self.pending:
                    key = candidate
                at = frame.find(_SENTINEL_PREFIX, at + 1)
        sent = self.pending.pop(key, None) if key else None
        if sent is None:
            return
        self._answered[key[0]] += 1
        self.waits.append((sent, t))
        rtt = _ms(t - sent)
        (self.rtt_before if self.t_inject is None or sent < self.t_inject else self.rtt_after).append(rtt)

    # ------------------------------------------------------------------ the probe
    def probe_received(self, sw: ScreenSwitch, msg, frame: bytes, t: int) -> None:
        if self.t_inject is None or self.done:
            return
        ms = _ms(t - self.t_inject)
        fields = getattr(msg, "fields", {}) or {}
        if len(self.replies) < 50:
            self.replies.append([ms, msg.name, msg.xid, fields.get("err_type"), fields.get("code")])
        if msg.name in mf.ACTS:
            self.answers += 1
            how = [what for what, mark in zip(("MAC", "buffer id"), _MARKS) if mark in frame]
            if how and len(self.acted) < 50:
                self.acted.append([ms, msg.name, " and ".join(how)])

    # ------------------------------------------------------------------ SessionListener
    def session_closed(self, sw, kind: str, detail: str) -> None:
        self._open.discard(sw)
        self._closed(sw, f"{kind}: {detail}")
        self._gone.check()

    def _closed(self, sw: ScreenSwitch, detail: str) -> None:
        if self.done:
            return
        if sw.role == "sentinel":
            if self.t_inject is None:
                self._finish(error=f"the sentinel session ended before the kind was sent ({detail})")
            elif not self.sentinel_closed:
                self.sentinel_closed = detail
        elif sw.role in ("probe", "twin"):
            if self.t_inject is None and sw.role == "probe":
                self._finish(error=f"the probe session ended before the kind was sent ({detail})")
            elif not self.probe_closed:
                which = "the first session" if self.kind.stage == mf.DUPLICATE and sw.role == "probe" else (
                    "the second session" if sw.role == "twin" else "")
                self.probe_closed = f"{which}: {detail}" if which else detail
                self.probe_closed_ms = _ms(self.now_ns() - self.t_inject)
        elif sw.role == "fresh" and self.fresh_ms is None and not self.fresh_error:
            self.fresh_error = detail

    # ------------------------------------------------------------------ the end
    def end(self, why: str) -> Deferred:
        """End the screen now (its observation, if not given yet, is an error saying ``why``); fires once every
        session has closed."""
        self._finish(error=why)
        return self.gone()

    def gone(self) -> Deferred:
        """Fires once the screen has ended and none of its sessions is open."""
        return self._gone.wait()

    def _finish(self, error: str = "") -> None:
        if self.done:
            return
        self.done = True
        end = self.now_ns()
        if self._sampling is not None and self._sampling.running:
            self._sampling.stop()
        for call in self._calls:
            if call.active():
                call.cancel()
        for dial in self._dials:           # a switch still connecting connects no more
            dial.stop()
        waits = [b - a for a, b in self.waits if self.t_inject is not None and b >= self.t_inject]
        waits += [end - sent for sent in self.pending.values()]
        if self.fresh_ms is None and not self.fresh_error and self.t_inject is not None:
            self.fresh_error = "no handshake before the window ended"
        obs = ScreenObservation(
            kind=self.kind.id, error=error, replies=self.replies, acted=self.acted, answers=self.answers,
            probe_closed=self.probe_closed, probe_closed_ms=self.probe_closed_ms,
            features_requested=self.features_requested, baseline_ms=self.rtt_before, during_ms=self.rtt_after,
            sentinel_sent=self.sentinel_sent, sentinel_answered=len(self.waits),
            sentinel_max_wait_ms=_ms(max(waits)) if waits else 0.0, sentinel_closed=self.sentinel_closed,
            sentinel_liveness="echo" if self.echo_only else "echo+packet_in", fresh_handshake_ms=self.fresh_ms,
            fresh_error="" if self.fresh_ms is not None else self.fresh_error,
            sent_bytes=self.sent_bytes)
        for sw in self._sessions:
            if sw.transport is not None and not sw.closed:
                sw._closing_kind, sw._closing_detail = CLOSE_LOCAL, "screen ended"
                sw.transport.abortConnection()   # at once, even toward a controller that reads nothing
        self.d.callback(obs)
        self._gone.check()
