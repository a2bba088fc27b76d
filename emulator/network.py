"""Network driver: many emulated switches against one controller.

For now it runs the Control Sessions Capacity trial (RFC 8456 §5.2.1): open
sessions in groups (the ramp), stop when the controller starts dropping them or
a cap is reached, hold, probe every session with an ECHO, and count the ones
still alive.  It reports through an ``emit`` callable (JSON-able dicts), knows
nothing of the harness, and takes its reactor as a parameter.
"""

from __future__ import annotations

import errno
import ipaddress
import socket
import struct
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Optional

from twisted.internet import error as terror
from twisted.internet.protocol import ClientFactory

from . import codec
from .limits import rss_bytes
from .protocol import CLOSE_LOCAL, SessionListener, SwitchProtocol, SwitchSpec

# How a session failed.  LOCAL_* failures are the emulator's own limits, never the controller's.
FAIL_REFUSED = "refused"
FAIL_CONNECT_TIMEOUT = "connect timeout"
FAIL_ECHO_TIMEOUT = "echo timeout"
FAIL_EARLIER_DROPPED = "earlier sessions dropped"
FAIL_LOCAL = "emulator resource limit"
LOCAL_ERRNOS = {errno.EADDRNOTAVAIL, errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM, errno.EADDRINUSE}

STOP_CAP = "session cap reached"
STOP_DROPPING = "controller started dropping sessions"
STOP_LOCAL = "emulator resource limit reached"
STOP_REQUESTED = "ramp stopped on request (another shard saw the controller drop sessions)"


@dataclass
class CapacityParams:
    host: str
    port: int
    max_sessions: int
    ramp_group: int = 50
    ramp_delay: float = 0.05
    connect_timeout: float = 5.0
    handshake_timeout: float = 10.0
    hold_time: float = 3.0
    echo_interval: float = 1.0
    echo_timeout: float = 3.0
    versions: tuple = (codec.OFP13,)
    datapath_id_base: int = 1
    n_ports: int = 2
    sessions_per_source: int = 20000
    source_base: str = "127.0.0.1"

    def __post_init__(self):
        problems = []
        if self.max_sessions < 1:
            problems.append(f"max_sessions must be at least 1 (got {self.max_sessions})")
        if self.ramp_group < 1:
            problems.append(f"ramp_group must be at least 1 (got {self.ramp_group})")
        for name in ("ramp_delay", "hold_time"):
            if getattr(self, name) < 0:
                problems.append(f"{name} must not be negative (got {getattr(self, name)})")
        for name in ("connect_timeout", "handshake_timeout", "echo_interval", "echo_timeout"):
            if getattr(self, name) <= 0:
                problems.append(f"{name} must be positive (got {getattr(self, name)})")
        if not 1 <= self.sessions_per_source <= 60000:
            problems.append(f"sessions_per_source must be 1..60000 (got {self.sessions_per_source})")
        if not ipaddress.ip_address(self.source_base).is_loopback:
            problems.append(f"source_base must be a loopback address (got {self.source_base})")
        if problems:
            raise ValueError("; ".join(problems))


def source_address(base: str, index: int, per_source: int) -> str:
    """The loopback source address for session ``index``: ``per_source`` sessions per address.

    One source address has one ephemeral port range toward the controller, so
    more sessions than that range holds are spread over 127.0.0.0/8.
    """
    addr = ipaddress.ip_address(base) + index // per_source
    if not addr.is_loopback:
        raise ValueError(f"session {index} would need source address {addr}, outside 127.0.0.0/8")
    return str(addr)


def classify_connect_failure(reason) -> tuple[str, str]:
    exc = getattr(reason, "value", reason)
    os_err = getattr(exc, "osError", None)
    if isinstance(exc, terror.ConnectionRefusedError):
        return FAIL_REFUSED, "connection refused"
    if isinstance(exc, (terror.TimeoutError, terror.TCPTimedOutError)):
        return FAIL_CONNECT_TIMEOUT, "TCP connect timed out"
    if isinstance(exc, terror.ConnectBindError) or os_err in LOCAL_ERRNOS:
        return FAIL_LOCAL, f"emulator could not open a socket: {exc}"
    return FAIL_REFUSED, f"connect failed: {exc}"


class _SessionFactory(ClientFactory):
    """Builds the protocol of one session and reports a failed connect."""

    def __init__(self, run: "CapacityRun", index: int):
        self.run = run
        self.index = index

    def buildProtocol(self, addr):
        proto = self.run.make_protocol(self.index)
        proto.factory = self
        return proto

    def clientConnectionFailed(self, connector, reason):
        self.run.connect_failed(self.index, reason)


@dataclass
class _Tally:
    attempted: int = 0
    ready: int = 0
    failed: int = 0
    dropped_after_ready: int = 0
    failures: dict = field(default_factory=dict)
    first_failure: Optional[dict] = None


class CapacityRun(SessionListener):
    """One Control Sessions Capacity trial.  ``start()`` begins; ``on_done(result)`` ends it."""

    def __init__(self, params: CapacityParams, reactor, emit: Callable[[dict], None],
                 on_done: Callable[[dict], None], now_ns: Callable[[], int] = time.monotonic_ns,
                 progress_interval: float = 1.0):
        self.p = params
        self.reactor = reactor
        self.emit = emit
        self.on_done = on_done
        self.now_ns = now_ns
        self.progress_interval = progress_interval
        self.sessions: list[Optional[SwitchProtocol]] = []
        self.tally = _Tally()
        self.phase = "idle"
        self.stop_reason: Optional[str] = None
        self._group_pending = 0
        self._group_failed = 0
        self._echo_rtts: list[int] = []
        self._final_probe: dict = {}
        self._calls = []
        self._stop_requested = False
        self.t_start = self.t_ramp_end = self.t_first_ready = self.t_last_ready = None
        self.rss_start = self.rss_peak = None

    # ------------------------------------------------------------------ ramp
    def start(self) -> None:
        self.phase = "ramp"
        self.t_start = self.now_ns()
        self.rss_start = rss_bytes()
        self.emit({"event": "start", "params": asdict(self.p)})
        self._progress_call = self.reactor.callLater(self.progress_interval, self._progress)
        self._open_group()

    def _open_group(self) -> None:
        if self.phase != "ramp":
            return
        remaining = self.p.max_sessions - self.tally.attempted
        count = min(self.p.ramp_group, remaining)
        self._group_pending = count
        self._group_failed = 0
        for _ in range(count):
            self._connect(self.tally.attempted)
            self.tally.attempted += 1

    def _connect(self, index: int) -> None:
        self.sessions.append(None)
        try:
            source = source_address(self.p.source_base, index, self.p.sessions_per_source)
        except ValueError as exc:
            self.reactor.callLater(0, self.connect_failed, index, terror.ConnectBindError(str(exc)))
            return
        self.reactor.connectTCP(self.p.host, self.p.port, _SessionFactory(self, index),
                                timeout=self.p.connect_timeout, bindAddress=(source, 0))

    def make_protocol(self, index: int) -> SwitchProtocol:
        spec = SwitchSpec.simple(self.p.datapath_id_base + index, self.p.versions, self.p.n_ports)
        proto = SwitchProtocol(spec, self.reactor, self, self.p.handshake_timeout, self.now_ns)
        proto.index = index
        self.sessions[index] = proto
        return proto

    def connect_failed(self, index: int, reason) -> None:
        kind, detail = classify_connect_failure(reason)
        self._fail(index, kind, detail)
        self._group_settled_one()

    def session_ready(self, session: SwitchProtocol) -> None:
        t = session.t_ready
        self.tally.ready += 1
        if self.t_first_ready is None:
            self.t_first_ready = t
        self.t_last_ready = t
        self._group_settled_one()

    def session_closed(self, session: SwitchProtocol, kind: str, detail: str) -> None:
        if kind == CLOSE_LOCAL or self.phase == "done":
            return
        if session.ready:
            self.tally.dropped_after_ready += 1
            self._fail(session.index, FAIL_EARLIER_DROPPED if self.phase == "ramp" else kind, detail)
        else:
            self._fail(session.index, kind, detail)
            self._group_settled_one()

    def _fail(self, index: int, kind: str, detail: str) -> None:
        t = self.tally
        t.failed += 1
        self._group_failed += 1
        t.failures[kind] = t.failures.get(kind, 0) + 1
        if t.first_failure is None:
            t.first_failure = {"session": self.p.datapath_id_base + index, "kind": kind, "detail": detail,
                               "after_s": (self.now_ns() - self.t_start) / 1e9, "phase": self.phase,
                               "established_before": t.ready}

    def _group_settled_one(self) -> None:
        if self.phase != "ramp":
            return
        self._group_pending -= 1
        if self._group_pending > 0:
            return
        if self.tally.failures.get(FAIL_LOCAL):
            self._end_ramp(STOP_LOCAL)
        elif self._stop_requested and not self.tally.failed:
            self._end_ramp(STOP_REQUESTED)
        elif self.tally.failed:
            self._end_ramp(STOP_DROPPING)
        elif self.tally.attempted >= self.p.max_sessions:
            self._end_ramp(STOP_CAP)
        else:
            self.reactor.callLater(self.p.ramp_delay, self._open_group)

    def stop_ramp(self) -> None:
        """Open no further group: end the ramp once the current group has settled."""
        self._stop_requested = True

    # ------------------------------------------------------------------ hold and probe
    def _end_ramp(self, reason: str) -> None:
        self.phase = "hold"
        self.stop_reason = reason
        self.t_ramp_end = self.now_ns()
        self.rss_peak = rss_bytes()
        self.emit({"event": "ramp_end", "reason": reason, "established": self.tally.ready,
                   "attempted": self.tally.attempted})
        # Keep-alive probes while holding; the final round at hold_time is the one that counts.
        k = 1
        while k * self.p.echo_interval < self.p.hold_time:
            self._calls.append(self.reactor.callLater(k * self.p.echo_interval, self._probe_all, False))
            k += 1
        self._calls.append(self.reactor.callLater(self.p.hold_time, self._final_round))

    def live_sessions(self):
        return [s for s in self.sessions if s is not None and s.ready and not s.closed]

    def _probe_all(self, final: bool) -> None:
        for s in self.live_sessions():
            xid = s.probe_echo()
            if final:
                self._final_probe[s.index] = xid

    def _final_round(self) -> None:
        self.phase = "probe"
        self._final_answered = 0
        self._probe_all(True)
        self._final_call = self.reactor.callLater(self.p.echo_timeout, self._finish)
        if not self._final_probe:
            self._finish()

    def echo_answered(self, session: SwitchProtocol, rtt_ns: int) -> None:
        if len(self._echo_rtts) < 200000:
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
                self._fail(s.index, FAIL_ECHO_TIMEOUT, f"no ECHO_REPLY within {self.p.echo_timeout:g} s")
            else:
                kept += 1
        self.phase = "done"
        for call in self._calls + [getattr(self, "_final_call", None), getattr(self, "_progress_call", None)]:
            if call is not None and call.active():
                call.cancel()
        self.on_done(self.result(kept))

    def result(self, kept: int) -> dict:
        t = self.tally
        ramp_s = (self.t_ramp_end - self.t_start) / 1e9 if self.t_ramp_end else None
        setup_s = ((self.t_last_ready - self.t_start) / 1e9) if self.t_last_ready else None
        rss_growth = (self.rss_peak - self.rss_start) if self.rss_peak and self.rss_start else None
        rtts = sorted(self._echo_rtts)
        return {
            "event": "result",
            "kept": kept,
            "established": t.ready,
            "established_before_failure": t.first_failure["established_before"] if t.first_failure else t.ready,
            "attempted": t.attempted,
            "failed": t.failed,
            "dropped_after_ready": t.dropped_after_ready,
            "failures": t.failures,
            "first_failure": t.first_failure,
            "stop_reason": self.stop_reason,
            "capped": self.stop_reason == STOP_CAP,
            "emulator_bound": self.stop_reason == STOP_LOCAL,
            "ramp_s": ramp_s,
            "setup_rate_per_s": (t.ready / setup_s) if setup_s else None,
            "emulator_rss_bytes": self.rss_peak,
            "emulator_rss_per_session_bytes": (rss_growth / t.ready) if rss_growth and t.ready else None,
            "echo_rtt_ms": {
                "median": rtts[len(rtts) // 2] / 1e6,
                "p99": rtts[min(len(rtts) - 1, int(len(rtts) * 0.99))] / 1e6,
            } if rtts else None,
        }

    def _progress(self) -> None:
        if self.phase == "done":
            return
        t = self.tally
        self.emit({"event": "progress", "phase": self.phase, "attempted": t.attempted,
                   "established": t.ready, "failed": t.failed,
                   "elapsed_s": round((self.now_ns() - self.t_start) / 1e9, 3)})
        self._progress_call = self.reactor.callLater(self.progress_interval, self._progress)

    def close_all(self) -> None:
        """Reset every session (RST, no TIME_WAIT left to starve the next trial's ports)."""
        for s in self.sessions:
            if s is None or s.closed or s.transport is None:
                continue
            s._closing_kind = CLOSE_LOCAL
            sock = getattr(s.transport, "socket", None)
            if sock is not None:
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                except OSError:
                    pass
            s.transport.abortConnection()
