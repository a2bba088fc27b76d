"""An emulator shard: one process with its own reactor, answering the commands of :mod:`emulator.commands`.

The harness never runs a reactor.  It opens shards through execnet gateways (``popen`` here,
``ssh`` on other hosts; :mod:`emulator.pool`) and each runs :func:`serve`.  A shard is a table
of responders: one method per command class, returning the command's response or a Deferred
of it.  Messages on the channel are tuples:

* harness → shard: ``("call", id, command)``;
* shard → harness: ``("event", id, event)``, ``("answer", id, response)``, ``("error", id, message)``;

with every dataclass in its wire form (:func:`emulator.commands.to_wire`).

A shard dies with its harness: it asks the kernel for SIGKILL when its parent goes
(``PR_SET_PDEATHSIG``, Linux), and it exits when its channel closes.

The end of a trial is ``Disconnect`` (``Close`` also ends the process): every switch of the shard — traffic
switches, the topology's, a capacity trial's, a screen's — stops connecting (no further group, retry or reconnect;
connects under way stopped) and closes its session, and the answer comes once all of them are gone.  From then on
no switch of the finished trial touches the network, so the controller's ports may go to the next one.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import resource
import signal
import sys
import threading
import time
from typing import Callable, Optional

from . import __version__, fastpath
from . import commands as c
from .host import boot_id
from .limits import FD_RESERVE, FdLimitError, die_with_parent, load_libc, raise_nofile

RESPONDERS: dict = {}
END_WITHIN = 10.0     # seconds the switches of a finished trial have to go before Disconnect says which did not


def responder(cmd_class):
    """Mark a :class:`Shard` method as the responder of ``cmd_class``."""
    def mark(fn):
        RESPONDERS[cmd_class] = fn.__name__
        return fn
    return mark


class Shard:
    """One process's switches: traffic switches, a fabric, a capacity trial — whichever the harness asked for."""

    def __init__(self, reactor, send: Callable[[tuple], None], source_base=c.OpenSessions.source_base):
        self.reactor = reactor
        self.send = send
        self.source_base = source_base
        self.switch_set = None
        self.fabric = None
        self.capacity = None
        self._capacity_call = None      # (the OpenSessions answer, its deadline) while the trial runs
        self.screens: set = set()       # screens running, or ended with sessions still open

    # ------------------------------------------------------------------ dispatch
    def dispatch(self, call_id: int, cmd) -> None:
        from twisted.internet.defer import Deferred, maybeDeferred

        name = RESPONDERS.get(type(cmd))
        if name is None:
            self._error(call_id, f"this shard has no responder for {type(cmd).__name__} (mismatched versions?)")
            return
        def emit(event) -> None:
            self.send(("event", call_id, c.to_wire(event)))

        d: Deferred = maybeDeferred(getattr(self, name), cmd, emit)
        if type(cmd).answered:
            # An answer that cannot be sent is an error the caller hears of, not a silent timeout.
            d.addCallback(lambda r: self.send(("answer", call_id, c.to_wire(r))))
            d.addErrback(lambda f: self._error(call_id, _describe(f.value)))
        else:
            d.addErrback(lambda f: sys.stderr.write(f"{type(cmd).__name__}: {_describe(f.value)}\n"))

    def _error(self, call_id: int, message: str) -> None:
        self.send(("error", call_id, message))

    # ------------------------------------------------------------------ general
    @responder(c.Hello)
    def hello(self, cmd: c.Hello, emit) -> c.ShardInfo:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < hard:   # each shard raises its own open-file limit: sessions are files
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
                soft = hard
            except (ValueError, OSError):
                pass
        return c.ShardInfo(pid=os.getpid(), hostname=platform.node(), boot_id=boot_id(),
                           monotonic_ns=time.monotonic_ns(), nofile_soft=soft, nofile_hard=hard,
                           version=__version__, python=platform.python_version(), packet_in_path=fastpath.IMPL)

    @responder(c.Pin)
    def pin(self, cmd: c.Pin, emit) -> c.Done:
        """Every thread of this process (the reactor's and execnet's) on ``cpus``."""
        if cmd.cpus and hasattr(os, "sched_setaffinity"):
            try:
                for tid in os.listdir("/proc/self/task"):
                    os.sched_setaffinity(int(tid), set(cmd.cpus))
            except OSError as exc:
                raise c.EmulatorError(f"cannot run this shard on CPUs {list(cmd.cpus)}: {exc}") from None
        return c.Done()

    @responder(c.Disconnect)
    def disconnect(self, cmd, emit):
        return self._end_all("Disconnect").addCallback(lambda _: c.Done())

    @responder(c.Close)
    def close(self, cmd, emit):
        def stop(result):
            self.reactor.callLater(0.1, self.reactor.stop)
            return result
        return self._end_all("Close").addBoth(stop).addCallback(lambda _: c.Done())

    def _end_all(self, why: str):
        """End every switch of this shard (see the module text); fires once all are gone, or fails naming what
        is still open after :data:`END_WITHIN` s."""
        ending = []
        if self.switch_set is not None:
            ending.append(("traffic switch", self.switch_set.close_all()))
            self.switch_set = None
        if self.fabric is not None:
            ending.append(("topology switch", self.fabric.close()))
            self.fabric = None
        if self.capacity is not None:
            self._end_capacity(why)
            ending.append(("capacity trial", self.capacity.close_all()))
            self.capacity = None
        for screen in list(self.screens):
            ending.append(("robustness screen", screen.end(f"the screen was ended by {why}")))
        return self._all_gone(ending, why)

    def _all_gone(self, ending: list, why: str):
        from twisted.internet.defer import Deferred, DeferredList

        done: Deferred = Deferred()

        def gone(_):
            if timer.active():
                timer.cancel()
            if not done.called:
                done.callback(None)

        def late():
            left = sorted({what for what, d in ending if not d.called})
            if not done.called:
                done.errback(c.EmulatorError(f"{why}: switch sessions still open {END_WITHIN:g} s after the trial "
                                             f"ended ({', '.join(left)})"))

        timer = self.reactor.callLater(END_WITHIN, late)
        DeferredList([d for _what, d in ending], consumeErrors=True).addCallback(gone)
        return done

    def _end_capacity(self, why: str) -> None:
        """The capacity trial's call ends with it: its deadline cancelled, its answer an error if not given."""
        call, self._capacity_call = self._capacity_call, None
        if call is None:
            return
        done, deadline = call
        if deadline.active():
            deadline.cancel()
        if not done.called:
            done.errback(c.EmulatorError(f"the capacity trial was ended by {why} before its result"))

    # ------------------------------------------------------------------ §5.2.1
    @responder(c.OpenSessions)
    def open_sessions(self, cmd: c.OpenSessions, emit):
        from twisted.internet.defer import Deferred

        from .capacity import CapacityRun

        if cmd.sessions < 1:
            raise c.EmulatorError(f"a capacity trial needs at least one session (got {cmd.sessions})")
        try:
            raise_nofile(cmd.sessions + FD_RESERVE)
        except FdLimitError as exc:
            raise c.EmulatorError(str(exc)) from None
        if self.capacity is not None:
            self._end_capacity("a new capacity trial")
            self.capacity.close_all()
        done: Deferred = Deferred()

        def finished(result):
            self._capacity_call = None
            run.close_all()
            if deadline.active():
                deadline.cancel()
            if not done.called:
                done.callback(result)

        def expired():
            phase = run.phase
            run.close_all()
            if not done.called:
                done.errback(c.EmulatorError(f"the capacity trial did not finish within {cmd.deadline:g} s "
                                             f"(phase {phase})"))

        run = CapacityRun(cmd, self.reactor, emit, finished)
        self.capacity = run
        deadline = self.reactor.callLater(cmd.deadline, expired)
        self._capacity_call = (done, deadline)
        run.start()
        return done

    @responder(c.StopRamp)
    def stop_ramp(self, cmd, emit) -> None:
        if self.capacity is not None:
            self.capacity.stop_ramp()

    # ------------------------------------------------------------------ §5.1.2 / §5.1.3
    @responder(c.ConnectSwitches)
    def connect_switches(self, cmd: c.ConnectSwitches, emit):
        from .traffic import SwitchSet

        if self.switch_set is not None:
            self.switch_set.close_all()
        self.switch_set = SwitchSet(self.reactor, cmd, source_base=self.source_base)
        return self.switch_set.connect()

    def _switches(self):
        if self.switch_set is None:
            raise c.EmulatorError("no switches are connected on this shard (ConnectSwitches first)")
        return self.switch_set

    @responder(c.AnnounceDestinations)
    def announce(self, cmd: c.AnnounceDestinations, emit):
        return self._switches().announce(cmd)

    @responder(c.RunTraffic)
    def run_traffic(self, cmd: c.RunTraffic, emit):
        from .traffic import Traffic

        s = self._switches()
        live = s.live()
        if not live:
            raise c.EmulatorError("no connected switch left on this shard")
        for sw in live:
            s.refresh_block(sw)
        t = Traffic(live, cmd.traffic, self.reactor, trial=cmd.trial, limit=cmd.limit)
        return t.start_at(cmd.start_at_ns).addCallback(
            lambda r: dataclasses.replace(r, pids=(os.getpid(),)))

    @responder(c.Quiesce)
    def quiesce(self, cmd: c.Quiesce, emit):
        """Answer once the controller has sent nothing for ``quiet`` s (its backlog is drained), or at
        ``max_wait``."""
        from twisted.internet.defer import Deferred

        switches = self._switches().switches
        began = time.monotonic_ns()
        done: Deferred = Deferred()

        def check():
            now = time.monotonic_ns()
            last = max([sw.t_last_rx or 0 for sw in switches] + [began])
            if now - last >= cmd.quiet * 1e9 or now - began >= cmd.max_wait * 1e9:
                done.callback(c.Quiet(waited_s=(now - began) / 1e9, quiet=now - last >= cmd.quiet * 1e9))
            else:
                self.reactor.callLater(min(0.05, cmd.quiet / 4), check)
        check()
        return done

    @responder(c.ScreenKind)
    def screen_kind(self, cmd: c.ScreenKind, emit):
        from .screen import KindScreen, tcp_connector

        screen = KindScreen(self.reactor, cmd, tcp_connector(self.reactor, *cmd.address))
        self.screens.add(screen)
        screen.gone().addCallback(lambda _: self.screens.discard(screen))
        return screen.run()

    # ------------------------------------------------------------------ topologies and the data plane
    @responder(c.DeployFabric)
    def deploy_fabric(self, cmd: c.DeployFabric, emit) -> c.FabricReady:
        from .fabric_net import FabricNet

        if self.fabric is not None:
            self.fabric.close()
        self.fabric = FabricNet(self.reactor, cmd, source=self.source_base or "127.0.0.1")
        return c.FabricReady(relay=tuple(self.fabric.relay_address))

    def _fabric(self):
        if self.fabric is None:
            raise c.EmulatorError("no topology is deployed on this shard (DeployFabric first)")
        return self.fabric

    @responder(c.ConnectFabric)
    def connect_fabric(self, cmd: c.ConnectFabric, emit):
        return self._fabric().connect(cmd)

    @responder(c.GetFabricState)
    def fabric_state(self, cmd: c.GetFabricState, emit) -> c.FabricState:
        net = self._fabric()
        st = net.fabric.status(cmd.before_ns)
        lost, detail = net.lost()
        counters = {k: st[k] for k in ("relayed", "sent_remote", "received_remote", "not_delivered", "discovery_outs",
                                       "other_outs", "buffered_outs", "hosts_announced", "async_messages",
                                       "exceptions_sent", "packet_ins_unwanted", "connections")}
        return c.FabricState(ready=st["ready"], owned=st["owned"], counters=counters,
                             t_first_discovery_out=st["t_first_discovery_out"],
                             t_last_relayed_in=st["t_last_relayed_in"], last_relay_before=st["last_relay_before"],
                             first_in=tuple(tuple(x) for x in st["first_in"]),
                             relay_latency_ns=st["relay_latency_ns"], change=st["change"],
                             data_plane=st["data_plane"] or None, sessions_lost=lost, lost_detail=detail,
                             pids=(os.getpid(),))

    @responder(c.GetTimeline)
    def timeline(self, cmd: c.GetTimeline, emit) -> c.Timeline:
        """Each switch's control-plane timeline and the roles of its connections (controller failover, §5.4.1)."""
        fabric = self._fabric().fabric
        return c.Timeline(switches=fabric.timeline_report(cmd.dpids, cmd.since_ns),
                          flow_mods_duplicate=fabric.flow_mods_duplicate, pids=(os.getpid(),))

    @responder(c.SetExceptions)
    def set_exceptions(self, cmd: c.SetExceptions, emit) -> c.Done:
        from .malformed import ExceptionPlan

        fabric = self._fabric().fabric
        fabric.exceptions = ExceptionPlan(cmd.percent, cmd.kind, cmd.seed) if cmd.percent > 0 else None
        return c.Done()

    @responder(c.ChangeTopology)
    def change(self, cmd: c.ChangeTopology, emit) -> c.Done:
        self._fabric().change(cmd.kind, cmd.dpid, cmd.port)
        return c.Done()

    @responder(c.StartTrace)
    def start_trace(self, cmd, emit) -> c.TraceStarted:
        self._fabric().fabric.start_trace()
        return c.TraceStarted(time.monotonic_ns())

    @responder(c.GetTrace)
    def trace(self, cmd, emit) -> c.Trace:
        rep = self._fabric().fabric.trace_report()
        pins = {(src, dst): (t, dpid) for src, dst, t, dpid in rep["packet_ins"]}
        return c.Trace(packet_ins=pins, flow_mods=tuple(tuple(r) for r in rep["flow_mods"]),
                       truncated=rep["truncated"])

    @responder(c.TestPortCommand)
    def test_port(self, cmd: c.TestPortCommand, emit) -> c.PortAnswer:
        return self._fabric().test_port(cmd)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, c.EmulatorError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


# --------------------------------------------------------------------------- the process

def serve(channel, parent: Optional[int] = None, log: Optional[str] = None) -> None:  # pragma: no cover
    """The shard's main loop (integration-tested): answer commands until ``Close`` or until the channel closes.
    ``parent``: the harness's pid when it started this process itself (popen); ``log``: where this shard's
    stderr and Twisted's own log go."""
    from twisted.internet import reactor

    load_libc()
    die_with_parent(parent)
    if log:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 2)
        os.close(fd)
        sys.stderr = os.fdopen(2, "w", buffering=1)
    from twisted.logger import (
        FilteringLogObserver,
        LogLevel,
        LogLevelFilterPredicate,
        globalLogBeginner,
        textFileLogObserver,
    )
    warnings_up = LogLevelFilterPredicate(defaultLogLevel=LogLevel.warn)   # errors, not every factory started
    globalLogBeginner.beginLoggingTo([FilteringLogObserver(textFileLogObserver(sys.stderr), [warnings_up])],
                                     redirectStandardIO=False)
    try:   # Ctrl-C in a terminal reaches the whole process group: the harness decides, not the shard
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:   # not the main thread
        pass
    end = object()

    def send(message):
        try:
            channel.send(message)
        except (OSError, EOFError, ValueError):   # the harness is gone: nothing to tell
            pass
        except Exception as exc:                   # a value execnet cannot carry: say so instead
            if message[0] == "error":
                raise
            channel.send(("error", message[1], f"the answer cannot cross the channel: {_describe(exc)}"))

    shard = Shard(reactor, send)

    def received(message):
        if message is end:
            # The harness closed the channel or died: leave at once, with every session.
            reactor.callFromThread(reactor.stop)
            threading.Timer(2.0, os._exit, (0,)).start()
            return
        kind, call_id, payload = message
        try:
            cmd = c.from_wire(payload)
        except Exception as exc:  # a message this shard cannot read: say so to the caller
            send(("error", call_id, f"cannot read the command: {_describe(exc)}"))
            return
        reactor.callFromThread(shard.dispatch, call_id, cmd)

    channel.setcallback(received, endmarker=end)
    reactor.run(installSignalHandlers=False)
    sys.stdout.flush()
