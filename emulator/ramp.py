"""One connection ramp: emulated switches connect to the controller in groups.

The policy is in attributes, as in Twisted's ``ReconnectingClientFactory``:

* ``group`` sessions open together, ``delay`` seconds between groups;
* ``settle_first``: the next group opens only once every session of the current one is ready
  (handshake done) or has failed — the capacity benchmark's rule, which lets the owner stop the
  ramp at the first failure; otherwise groups open on the clock alone;
* ``retries`` / ``retry_delay``: a failed TCP connect is tried again, as a real switch keeps
  reconnecting to its controller (never for the emulator's own resource limits);
* ``connect_timeout``; ``source_base`` / ``per_source``: toward a controller on loopback, sessions take
  loopback source addresses ``per_source`` at a time (one address has one ephemeral port range toward the
  controller); toward any other address, or with ``None``, the kernel chooses;
* ``address_of``: where the session of a key connects (default: the ramp's one address); a switch connected
  to a cluster of controllers is one key per (switch, controller);
* ``reconnect`` / ``reconnect_delay`` / ``reconnect_max_delay``: a session that is lost (not closed by the
  emulator itself) or never gets going is opened again, each key on its own, after ``reconnect_delay``
  seconds, doubled after every try that fails up to ``reconnect_max_delay``, back to the start once a
  session is ready again; until :meth:`Ramp.close`.  A real switch keeps reconnecting to each of its
  controllers this way.

The end of a trial is :meth:`Ramp.close`: no further group, retry or reconnect, and every connect still under way
stopped (Twisted's ``IConnector.stopConnecting``); :meth:`Ramp.gone` fires once every session the ramp opened has
closed as well.  From then on nothing of the ramp touches the network: a port the trial's controller had may be
handed to the next one.

The ramp sits between the switch sessions and their owner: it is (or is told by) the sessions'
:class:`~emulator.protocol.SessionListener`, counts each session settled once, and passes every
event on to the owner (:class:`RampOwner`), who may end the ramp after any group.
"""

from __future__ import annotations

import errno
import ipaddress
from typing import Callable, Optional

from twisted.internet import error as terror
from twisted.internet.defer import Deferred
from twisted.internet.protocol import ClientFactory

from .commands import CLOSE_LOCAL, FAIL_CONNECT_TIMEOUT, FAIL_LOCAL, FAIL_REFUSED
from .host import is_loopback
from .params import RampParams
from .protocol import SessionListener, WhenGone

LOCAL_ERRNOS = {errno.EADDRNOTAVAIL, errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM, errno.EADDRINUSE}


def source_address(base: str, index: int, per_source: int) -> str:
    """The loopback source address of session ``index``: ``per_source`` sessions per address."""
    addr = ipaddress.ip_address(base) + index // per_source
    if not addr.is_loopback:
        raise ValueError(f"session {index} would need source address {addr}, outside 127.0.0.0/8")
    return str(addr)


def classify_connect_failure(reason) -> tuple:
    """(failure kind, detail) of a failed TCP connect."""
    exc = getattr(reason, "value", reason)
    os_err = getattr(exc, "osError", None)
    if isinstance(exc, terror.ConnectionRefusedError):
        return FAIL_REFUSED, "connection refused"
    if isinstance(exc, (terror.TimeoutError, terror.TCPTimedOutError)):
        return FAIL_CONNECT_TIMEOUT, "TCP connect timed out"
    if isinstance(exc, terror.ConnectBindError) or os_err in LOCAL_ERRNOS:
        return FAIL_LOCAL, f"emulator could not open a socket: {exc}"
    return FAIL_REFUSED, f"connect failed: {exc}"


class RampOwner(SessionListener):
    """What the ramp tells whoever runs it; every method is optional."""

    def connect_failed(self, index: int, key, kind: str, detail: str) -> None:
        """Session ``index`` (for ``key``) could not connect, after its retries."""

    def group_settled(self, ramp: "Ramp") -> bool:
        """Every session of the current group is ready or failed: go on with the next group?"""
        return True


class RampLedger(RampOwner):
    """An owner that keeps the ramp's failures: sessions that never became ready ((datapath id or key, why)),
    and sessions lost once ready (what happened), the emulator's own closes left out."""

    def __init__(self):
        self.failures: list = []
        self.lost: list = []

    def connect_failed(self, index: int, key, kind: str, detail: str) -> None:
        self.failures.append((key, f"{kind}: {detail}"))

    def session_closed(self, session, kind: str, detail: str) -> None:
        if kind == CLOSE_LOCAL:      # the emulator's own doing (a switch taken down, the end of the run)
            return
        if session.ready:
            self.lost.append(f"switch {session.spec.datapath_id}: {kind} ({detail})")
        else:
            self.failures.append((session.spec.datapath_id, f"{kind}: {detail}"))


class _Factory(ClientFactory):
    """One key's connections: the first, its retries, and (with ``reconnect``) every later one."""

    def __init__(self, ramp: "Ramp", index: int, key):
        self.ramp, self.index, self.key = ramp, index, key
        self.attempts = 1
        self.settled = False          # its first session was counted ready or failed
        self.backoff = ramp.reconnect_delay
        self.timer = None             # the pending retry or reconnect
        self.connector = None         # the connect under way
        self.forgotten = False        # never reconnect (the switch was taken down)

    def startedConnecting(self, connector):
        self.ramp._connecting_now(self, connector)

    def buildProtocol(self, addr):
        return self.ramp._connected(self)

    def clientConnectionFailed(self, connector, reason):
        self.ramp._connect_failed(self, connector, reason)


class Ramp(SessionListener):
    group = 25
    delay = 0.05
    settle_first = True
    retries = 0
    retry_delay = 1.0
    connect_timeout = 5.0
    source_base: Optional[str] = "127.0.0.1"
    per_source = 20000
    address_of: Optional[Callable[[object], tuple]] = None
    reconnect = False
    reconnect_delay = 0.25
    reconnect_max_delay = 4.0

    def __init__(self, reactor, address: tuple, keys, build: Callable[[int, object], object],
                 owner: Optional[RampOwner] = None, **policy):
        """``build(index, key)`` makes the protocol of session ``index``; its listener must be this
        ramp, or something that passes ready/closed events on to it."""
        for name, value in policy.items():
            if not hasattr(type(self), name):
                raise TypeError(f"unknown ramp policy {name!r}")
            setattr(self, name, value)
        if self.group < 1:
            raise ValueError(f"a ramp group must hold at least one session (got {self.group})")
        self.reactor = reactor
        self.host, self.port = address
        if not is_loopback(self.host):
            self.source_base = None      # a loopback source cannot reach another host: the kernel chooses
        self.keys = list(keys)
        self.build = build
        self.owner = owner or RampOwner()
        self.done: Deferred = Deferred()
        self.stopped = False
        self.opened = 0           # sessions whose first connect was started
        self.ready = 0
        self.failed = 0
        self.retried = 0
        self.reconnects = 0       # reconnect attempts started
        self.reconnected = 0      # sessions ready again after a reconnect
        self.closed = False
        self.live = 0             # sessions connected and not closed yet
        self._factories: list = []
        self._pending = 0
        self._timer = None
        self._connecting: set = set()   # factories with a connect under way
        self._waiting: set = set()      # factories with a retry or reconnect pending
        self._gone = WhenGone(lambda: self.closed and self.live <= 0 and not self._connecting)

    @classmethod
    def from_params(cls, p: RampParams, reactor, address: tuple, keys, build, owner=None, **policy) -> "Ramp":
        return cls(reactor, address, keys, build, owner, group=p.ramp_group, delay=p.ramp_delay,
                   connect_timeout=p.connect_timeout, **policy)

    # ------------------------------------------------------------------ driving
    def start(self) -> Deferred:
        if not self.keys or self.stopped:
            self._finish()
        else:
            self._open_group()
        return self.done

    def stop(self) -> None:
        """Open no further group; ``done`` fires once the sessions already opened have settled."""
        self.stopped = True
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
            self._timer = None
            if self._pending == 0:
                self._finish()

    def close(self) -> None:
        """The trial is over (the owner is closing its sessions): open no further group, retry and reconnect
        nothing, and stop every connect still under way.  ``done`` fires now if it has not."""
        self.stop()
        self.closed = True
        for factory in list(self._waiting):
            self._cancel_timer(factory)
        for factory in list(self._connecting):
            connector, factory.connector = factory.connector, None
            self._connecting.discard(factory)
            try:
                connector.stopConnecting()    # Twisted fails the attempt at once (clientConnectionFailed)
            except terror.NotConnectingError:
                pass
        self._finish()
        self._gone.check()

    def gone(self) -> Deferred:
        """Fires (with None) once the ramp is closed and every session it opened has closed."""
        return self._gone.wait()

    def forget(self, which: Callable[[object], bool]) -> None:
        """Never reconnect the keys ``which(key)`` picks (their switch was taken down for good)."""
        for factory in set(self._factories) | self._waiting:
            if which(factory.key):
                factory.forgotten = True
                self._cancel_timer(factory)

    def _open_group(self) -> None:
        self._timer = None
        if self.stopped or self.done.called:
            return
        start = self.opened
        batch = self.keys[start:start + self.group]
        self._pending += len(batch)
        for i, key in enumerate(batch, start):
            self.opened += 1
            factory = _Factory(self, i, key)
            if self.reconnect:                 # kept to cancel their reconnects (a capacity ramp keeps none)
                self._factories.append(factory)
            self._connect(factory)
        if not self.settle_first and self.opened < len(self.keys):
            self._timer = self.reactor.callLater(self.delay, self._open_group)

    def _connect(self, factory: _Factory) -> None:
        if self.closed:
            return
        host, port = (self.host, self.port) if self.address_of is None else self.address_of(factory.key)
        bind = None
        if self.source_base is not None and is_loopback(host):
            try:
                bind = (source_address(self.source_base, factory.index, self.per_source), 0)
            except ValueError as exc:
                self._later(factory, 0, self._connect_failed, None, terror.ConnectBindError(str(exc)))
                return
        self.reactor.connectTCP(host, port, factory, timeout=self.connect_timeout, bindAddress=bind)

    def _connecting_now(self, factory: _Factory, connector) -> None:
        factory.connector = connector
        self._connecting.add(factory)

    def _connected(self, factory: _Factory):
        """The TCP connect of ``factory`` succeeded: its session (none once the ramp is closed: Twisted then
        drops the connection)."""
        factory.connector = None
        self._connecting.discard(factory)
        if self.closed:
            return None
        proto = self.build(factory.index, factory.key)
        proto.factory = factory
        self.live += 1
        return proto

    def _connect_failed(self, factory: _Factory, connector, reason) -> None:
        factory.connector = None
        self._connecting.discard(factory)
        if self.closed:                     # stopped by close(), or failed after it: nothing more to do
            self._gone.check()
            return
        kind, detail = classify_connect_failure(reason)
        if factory.settled:                 # a reconnect that failed: try again later
            self._reconnect_later(factory)
            return
        if kind != FAIL_LOCAL and factory.attempts <= self.retries and connector is not None and not self.stopped:
            factory.attempts += 1
            self.retried += 1
            self._later(factory, self.retry_delay, self._retry)
            return
        self._cancel_timer(factory)
        self.failed += 1
        factory.settled = True
        self.owner.connect_failed(factory.index, factory.key, kind, detail)
        self._settled()
        if kind != FAIL_LOCAL:
            self._reconnect_later(factory)

    def _retry(self, factory: _Factory) -> None:
        """The first connect of ``factory`` failed: try it again (a new connect to the same address)."""
        self._connect(factory)

    # ------------------------------------------------------------------ reconnecting
    def _reconnect_later(self, factory: _Factory) -> None:
        if not self.reconnect or self.closed or factory.forgotten:
            return
        if factory.timer is not None and factory.timer.active():
            return
        delay = factory.backoff
        factory.backoff = min(delay * 2, self.reconnect_max_delay)
        self._later(factory, delay, self._reconnect)

    def _reconnect(self, factory: _Factory) -> None:
        if self.closed or factory.forgotten:
            return
        self.reconnects += 1
        self._connect(factory)

    # ------------------------------------------------------------------ the pending retries and reconnects
    def _later(self, factory: _Factory, delay: float, fn, *args) -> None:
        """``fn(factory, *args)`` after ``delay`` s: the factory's one pending retry or reconnect, which
        :meth:`close` cancels."""
        self._cancel_timer(factory)
        factory.timer = self.reactor.callLater(delay, self._fire, factory, fn, args)
        self._waiting.add(factory)

    def _fire(self, factory: _Factory, fn, args) -> None:
        factory.timer = None
        self._waiting.discard(factory)
        fn(factory, *args)

    def _cancel_timer(self, factory: _Factory) -> None:
        if factory.timer is not None and factory.timer.active():
            factory.timer.cancel()
        factory.timer = None
        self._waiting.discard(factory)

    # ------------------------------------------------------------------ SessionListener
    def session_ready(self, session) -> None:
        factory = getattr(session, "factory", None)
        if isinstance(factory, _Factory):
            factory.backoff = self.reconnect_delay
            if factory.settled:             # a reconnect: the ramp counted this key already
                self.reconnected += 1
                self.owner.session_ready(session)
                return
            factory.settled = True
        self.ready += 1
        self.owner.session_ready(session)
        self._settled()

    def session_closed(self, session, kind: str, detail: str) -> None:
        self.owner.session_closed(session, kind, detail)
        factory = getattr(session, "factory", None)
        if isinstance(factory, _Factory) and factory.ramp is self:
            self.live -= 1
            self._gone.check()
        counted = isinstance(factory, _Factory) and factory.settled
        if not session.ready and not counted:
            if isinstance(factory, _Factory):
                factory.settled = True
            self.failed += 1
            self._settled()
        if isinstance(factory, _Factory) and kind != CLOSE_LOCAL:
            self._reconnect_later(factory)

    def echo_answered(self, session, rtt_ns: int) -> None:
        self.owner.echo_answered(session, rtt_ns)

    # ------------------------------------------------------------------ settling
    def _settled(self) -> None:
        self._pending -= 1
        if self._pending > 0 or self.done.called:
            return
        if self.settle_first:
            more = self.opened < len(self.keys) and not self.stopped
            if more and self.owner.group_settled(self) is not False and not self.stopped:
                self._timer = self.reactor.callLater(self.delay, self._open_group)
            else:
                self._finish()
        elif self.opened >= len(self.keys) or self.stopped:
            self._finish()

    def _finish(self) -> None:
        if not self.done.called:
            self.done.callback(self)
