"""The Control Sessions Capacity trial (RFC 8456 §5.2.1) in one shard.

Open sessions through the ramp (one group at a time, each settled before the next), stop when
the controller starts dropping them or the cap is reached, hold, probe every session with an
ECHO, and count the ones still alive.  A session is established once the controller has answered an
ECHO_REQUEST sent after its handshake (``SessionRules(confirm=True)``), so a session whose handshake the
controller began but never served does not count, whatever the group size.  CCn (``ccn``) is the number
established when the first established session was lost — all of them when none was, so sessions of the last
group that the controller still served after refusing others count.  Progress goes out as
:class:`~emulator.commands.Progress` and :class:`~emulator.commands.RampEnded` events; the answer is a
:class:`~emulator.commands.SessionsResult`.  It knows nothing of the harness and takes its
reactor as a parameter.
"""

from __future__ import annotations

import socket
import struct
import time
from array import array
from dataclasses import dataclass, field
from typing import Callable, Optional

from twisted.internet.defer import Deferred

from .commands import (
    CLOSE_LOCAL,
    FAIL_EARLIER_DROPPED,
    FAIL_ECHO_TIMEOUT,
    FAIL_LOCAL,
    STOP_CAP,
    STOP_DROPPING,
    STOP_LOCAL,
    STOP_REQUESTED,
    FirstFailure,
    OpenSessions,
    Progress,
    RampEnded,
    SessionsResult,
)
from .limits import rss_bytes
from .protocol import SessionRules, SwitchProtocol, SwitchSpec
from .ramp import Ramp, RampOwner

ECHO_SAMPLES_MAX = 200_000


@dataclass
class _Tally:
    ready: int = 0
    failed: int = 0
    dropped_after_ready: int = 0
    failures: dict = field(default_factory=dict)
    new_failures: dict = field(default_factory=dict)     # of sessions never established
    first_failure: Optional[FirstFailure] = None
    ccn: Optional[int] = None        # established sessions when the first of them was lost
    first_loss_ns: int = 0
    unanswered: int = 0


class CapacityRun(RampOwner):
    """One trial.  ``start()`` begins; ``on_done(SessionsResult)`` ends it; ``emit(event)`` reports."""

    def __init__(self, cmd: OpenSessions, reactor, emit: Callable[[object], None],
                 on_done: Callable[[SessionsResult], None], now_ns: Callable[[], int] = time.monotonic_ns):
        self.cmd = cmd
        self.p = cmd.capacity
        self.reactor = reactor
        self.emit = emit
        self.on_done = on_done
        self.now_ns = now_ns
        self.sessions: list = []
        self.tally = _Tally()
        self.phase = "idle"
        self.stop_reason: Optional[str] = None
        self._stop_requested = False
        self._echo_rtts = array("q")
        self._ready_ns = array("q")
        self._final_probe: dict = {}
        self._calls: list = []
        self.t_start = self.t_ramp_end = self.t_last_ready = None
        self.rss_start = self.rss_peak = None
        self.ramp = Ramp.from_params(cmd.ramp, reactor, tuple(cmd.address), range(cmd.sessions), self._build, self,
                                     settle_first=True, source_base=cmd.source_base,
                                     per_source=cmd.sessions_per_source)

    @property
    def attempted(self) -> int:
        return self.ramp.opened

    # ------------------------------------------------------------------ ramp
    def start(self) -> None:
        self.phase = "ramp"
        self.t_start = self.now_ns()
        self.rss_start = rss_bytes()
        self._calls.append(self.reactor.callLater(self.cmd.progress_interval, self._progress))
        self.ramp.start().addCallback(lambda _: self._end_ramp())

    def _build(self, index: int, dpid_offset) -> SwitchProtocol:
        spec = SwitchSpec.simple(self.cmd.first_dpid + index, self.cmd.versions, 2)
        proto = SwitchProtocol(spec, self.reactor, self.ramp,
                               SessionRules(handshake_timeout=self.cmd.ramp.handshake_timeout, confirm=True),
                               self.now_ns)
        proto.index = index
        self.sessions.append(proto)
        return proto

    def connect_failed(self, index: int, key, kind: str, detail: str) -> None:
        self._fail(index, kind, detail, new=True)

    def session_ready(self, session: SwitchProtocol) -> None:
        self.tally.ready += 1
        self.t_last_ready = session.t_ready
        self._ready_ns.append(session.t_ready)

    def session_closed(self, session: SwitchProtocol, kind: str, detail: str) -> None:
        if kind == CLOSE_LOCAL or self.phase == "done":
            return
        if session.ready:
            t = self.tally
            t.dropped_after_ready += 1
            if t.ccn is None:                     # CCn: the sessions established when the first one was lost
                t.ccn, t.first_loss_ns = t.ready, self.now_ns()
            self._fail(session.index, FAIL_EARLIER_DROPPED if self.phase == "ramp" else kind, detail)
        else:
            self._fail(session.index, kind, detail, new=True)

    def _fail(self, index: int, kind: str, detail: str, new: bool = False) -> None:
        t = self.tally
        t.failed += 1
        t.failures[kind] = t.failures.get(kind, 0) + 1
        if new:
            t.new_failures[kind] = t.new_failures.get(kind, 0) + 1
        if t.first_failure is None:
            now = self.now_ns()
            t.first_failure = FirstFailure(session=self.cmd.first_dpid + index, kind=kind, detail=detail,
                                           after_s=(now - self.t_start) / 1e9, phase=self.phase,
                                           established_before=t.ready, at_ns=now)

    def group_settled(self, ramp) -> bool:
        return not self.tally.failed

    def stop_ramp(self) -> None:
        """Open no further group: end the ramp once the current group has settled."""
        if self.phase in ("idle", "ramp"):
            self._stop_requested = True
            self.ramp.stop()

    # ------------------------------------------------------------------ hold and probe
    def _end_ramp(self) -> None:
        if self.phase != "ramp":
            return
        if self.tally.failures.get(FAIL_LOCAL):
            reason = STOP_LOCAL
        elif self.tally.failed:
            reason = STOP_DROPPING
        elif self._stop_requested and self.attempted < self.cmd.sessions:
            reason = STOP_REQUESTED
        else:
            reason = STOP_CAP
        self.phase = "hold"
        self.stop_reason = reason
        self.t_ramp_end = self.now_ns()
        self.rss_peak = rss_bytes()
        self.emit(RampEnded(reason=reason, established=self.tally.ready, attempted=self.attempted))
        # Keep-alive probes while holding; the final round at hold_time is the one that counts.
        k = 1
        while k * self.p.echo_interval < self.p.hold_time:
            self._calls.append(self.reactor.callLater(k * self.p.echo_interval, self._probe_all, False))
            k += 1
        self._calls.append(self.reactor.callLater(self.p.hold_time, self._final_round))

    def live_sessions(self) -> list:
        return [s for s in self.sessions if s.ready and not s.closed]

    def _probe_all(self, final: bool) -> None:
        for s in self.live_sessions():
            xid = s.probe_echo()
            if final:
                self._final_probe[s.index] = xid

    def _final_round(self) -> None:
        self.phase = "probe"
        self._probe_all(True)
        self._calls.append(self.reactor.callLater(self.p.echo_timeout, self._finish))
        if not self._final_probe:
            self._finish()

    def echo_answered(self, session: SwitchProtocol, rtt_ns: int) -> None:
        if len(self._echo_rtts) < ECHO_SAMPLES_MAX:
            self._echo_rtts.append(rtt_ns)
        if self.phase == "probe" and self._final_probe.pop(session.index, None) is not None:
            if not self._final_probe:
                self._finish()

    # ------------------------------------------------------------------ result
    def _finish(self) -> None:
        if self.phase == "done":
            return
        kept = 0
        for s in self.live_sessions():
            if s.index in self._final_probe:  # probed in the final round, never answered
                self.tally.unanswered += 1
                self._fail(s.index, FAIL_ECHO_TIMEOUT, f"no ECHO_REPLY within {self.p.echo_timeout:g} s")
            else:
                kept += 1
        self.phase = "done"
        self.cancel()
        self.on_done(self.result(kept))

    def cancel(self) -> None:
        for call in self._calls:
            if call.active():
                call.cancel()
        self._calls = []

    def result(self, kept: int) -> SessionsResult:
        t = self.tally
        growth = (self.rss_peak - self.rss_start) if self.rss_peak and self.rss_start else None
        return SessionsResult(
            kept=kept, established=t.ready,
            established_before_failure=t.first_failure.established_before if t.first_failure else t.ready,
            attempted=self.attempted, failed=t.failed, dropped_after_ready=t.dropped_after_ready,
            failures=dict(t.failures), first_failure=t.first_failure, stop_reason=self.stop_reason or STOP_CAP,
            ramp_s=(self.t_ramp_end - self.t_start) / 1e9 if self.t_ramp_end else None,
            setup_s=(self.t_last_ready - self.t_start) / 1e9 if self.t_last_ready else None,
            rss_bytes=self.rss_peak, rss_growth_bytes=growth if growth and growth > 0 else None,
            echo_rtt_ns=self._echo_rtts.tobytes(), ready_ns=self._ready_ns.tobytes(),
            ccn=t.ready if t.ccn is None else t.ccn, first_loss_ns=t.first_loss_ns, new_failures=dict(t.new_failures),
            unanswered=t.unanswered)

    def _progress(self) -> None:
        if self.phase == "done":
            return
        t = self.tally
        self.emit(Progress(phase=self.phase, attempted=self.attempted, established=t.ready, failed=t.failed,
                           elapsed_s=round((self.now_ns() - self.t_start) / 1e9, 3)))
        self._calls.append(self.reactor.callLater(self.cmd.progress_interval, self._progress))

    def close_all(self) -> Deferred:
        """End the trial here: no further connect, timer or event (a result not given yet never comes), and every
        session reset (RST, no TIME_WAIT left to starve the next trial's ports).  Fires once every session is
        gone."""
        self.phase = "done"
        self.cancel()
        self.ramp.close()
        for s in self.sessions:
            if s.closed or s.transport is None:
                continue
            s._closing_kind = CLOSE_LOCAL
            sock = getattr(s.transport, "socket", None)
            if sock is not None:
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                except OSError:
                    pass
            s.transport.abortConnection()
        return self.ramp.gone()
