"""The harness's side of the emulator: shard processes behind execnet gateways, one call for all.

``ShardPool(hosts)`` opens one gateway per shard — ``popen`` on this host, ``ssh=USER@HOST`` (with
any ssh options, and ``//python=/path/to/venv/bin/python``) on others — and runs
:func:`emulator.shard.serve` there.  A remote host needs Python 3.9+ with Twisted, NumPy, Scapy and
networkx; the emulator's own code is copied there (execnet's rsync) so both sides always run the same
version.  ``pool.call(command)`` sends a declared command (:mod:`emulator.commands`) to the shards and
returns their answers merged into one typed response; any failure — a shard's error, a shard that
died, no answer in time — is one :class:`~emulator.commands.EmulatorError` naming the shard.

Shards on this host (same boot) share its monotonic clock, so their instants compare directly.
A shard on another host has its clock offset measured at start (round-trip midpoint); instants sent to
it (a trial's start) are translated, instants it reports are its own.
"""

from __future__ import annotations

import os
import queue
import sys
import time
from pathlib import Path
from typing import Callable, Iterable, Optional

from . import commands as c
from .host import boot_id, is_loopback
from .limits import FD_RESERVE
from .stopping import StopRequest

PROJECT_ROOT = Path(__file__).resolve().parent.parent
_END = ("__end__",)

_BOOT = ("import sys; sys.path.insert(0, {root!r})\n"
         "from emulator.shard import serve\nserve(channel, {parent!r}, {log!r})")


def split_switches(n_switches: int, n_shards: int, first_dpid: int = 1) -> list:
    """Datapath ids per shard, as even as possible: a tuple each, shards with none left out."""
    out, dpid = [], first_dpid
    per, extra = divmod(n_switches, n_shards)
    for i in range(n_shards):
        k = per + (1 if i < extra else 0)
        if k:
            out.append(tuple(range(dpid, dpid + k)))
        dpid += k
    return out


def is_popen(spec: str) -> bool:
    return "popen" in {part.split("=", 1)[0] for part in spec.split("//")}


class ShardHandle:
    """One shard: its gateway, channel and what it said about itself."""

    def __init__(self, index: int, spec: str, gateway, channel, info: c.ShardInfo, offset_ns: int):
        self.index = index
        self.spec = spec
        self.gateway = gateway
        self.channel = channel
        self.info = info
        self.offset_ns = offset_ns        # shard clock minus harness clock (0 on this host)
        self.alive = True

    @property
    def local(self) -> bool:
        return self.info.boot_id == boot_id()

    @property
    def session_limit(self) -> int:
        """Sessions this shard can hold: its open-file limit less what it keeps for itself."""
        return max(1, self.info.nofile_hard - FD_RESERVE)

    def describe(self) -> str:
        where = self.spec.split("//", 1)[0]
        if self.info is None:
            return f"emulator shard {self.index} ({where})"
        return f"emulator shard {self.index} ({where}, pid {self.info.pid} on {self.info.hostname})"


class ShardPool:
    """Shards over execnet gateways.  ``hosts``: [(spec, count)], e.g. [("popen", 2), ("ssh=u@h", 4)]."""

    def __init__(self, hosts: Iterable = (("popen", 1),), python: str = sys.executable, grow: bool = True,
                 start_timeout: float = 60.0, log_dir: Optional[Path] = None):
        import execnet

        self._execnet = execnet
        self.python = python
        self.grow = grow                    # may add popen shards when a benchmark needs more
        self.log_dir = Path(log_dir) if log_dir is not None else None   # shard{i}.log there (popen shards)
        self.start_timeout = start_timeout
        self.group = execnet.Group()
        self.shards: list = []
        self._queue: "queue.Queue" = queue.Queue()
        self._next_id = 0
        self._remote_dirs: dict = {}
        self._started = 0
        self.cpus: tuple = ()
        try:
            for spec, count in hosts:
                for _ in range(count):
                    self._open(spec)
        except BaseException:
            self.close()
            raise

    def __len__(self) -> int:
        return len(self.shards)

    # ------------------------------------------------------------------ starting shards
    def _gateway_spec(self, spec: str, index: int) -> str:
        self._started += 1
        extra = f"//id=shard{index}-{self._started}"
        if is_popen(spec) and "python=" not in spec:
            extra += f"//python={self.python}"
        return spec + extra

    def _open(self, spec: str, index: Optional[int] = None) -> ShardHandle:
        """Start a shard (at ``index``: in place of one that died)."""
        index = len(self.shards) if index is None else index
        try:
            gw = self.group.makegateway(self._gateway_spec(spec, index))
            if is_popen(spec):
                root, parent = str(PROJECT_ROOT), os.getpid()
                log = None
                if self.log_dir is not None:
                    self.log_dir.mkdir(parents=True, exist_ok=True)
                    log = str(self.log_dir / f"shard{index}.log")
            else:
                root, parent, log = self._copy_code(gw, spec), None, None
            channel = gw.remote_exec(_BOOT.format(root=root, parent=parent, log=log))
        except Exception as exc:
            raise c.EmulatorError(f"cannot start emulator shard {index} ({spec}): {type(exc).__name__}: {exc}") \
                from None
        handle = ShardHandle(index, spec, gw, channel, None, 0)  # type: ignore[arg-type]
        channel.setcallback(lambda msg, h=handle: self._queue.put((h, msg)), endmarker=_END)
        if index < len(self.shards):
            self.shards[index] = handle
        else:
            self.shards.append(handle)
        t0 = time.monotonic_ns()
        try:
            info = self._request({index: c.Hello()}, self.start_timeout)[0]
        except c.EmulatorError:
            handle.alive = False            # started again by the next ensure(), not used half-made
            try:
                gw.exit()
            except Exception:   # already gone
                pass
            raise
        t1 = time.monotonic_ns()
        handle.info = info
        handle.offset_ns = 0 if handle.local else info.monotonic_ns - (t0 + t1) // 2
        if self.cpus and handle.local:
            self._request({index: c.Pin(self.cpus)}, 30.0)
        return handle

    def _copy_code(self, gw, spec: str) -> str:
        """Copy the emulator package to a per-version folder on the shard's host; return its root."""
        from . import __version__

        key = spec
        if key not in self._remote_dirs:
            ch = gw.remote_exec(
                "import os, tempfile\n"
                f"d = os.path.join(tempfile.gettempdir(), 'bmwg-sdn-emulator-{__version__}-' + str(os.getuid()))\n"
                "os.makedirs(d, exist_ok=True)\nchannel.send(d)")
            root = ch.receive(self.start_timeout)
            rs = self._execnet.RSync(str(PROJECT_ROOT / "emulator"), verbose=False)
            rs.add_target(gw, root + "/emulator", delete=True)
            rs.send(raises=True)
            self._remote_dirs[key] = root
        return self._remote_dirs[key]

    def ensure(self, n: int, address: Optional[tuple] = None) -> list:
        """At least ``n`` shards (adding popen ones when this pool may grow), every one of them alive (a shard
        that died is started again in its place); the first ``n`` handles.  With the controller's ``address``:
        a loopback address is only reachable from shards on this host, which is checked."""
        for shard in self.shards[:n]:
            if not shard.alive:
                try:
                    shard.gateway.exit()
                except Exception:   # its process is gone already
                    pass
                self._open(shard.spec, shard.index)
        while len(self.shards) < n and self.grow:
            self._open("popen")
        handles = self.shards[:n]
        if address is not None and is_loopback(address[0]):
            remote = [h for h in handles if not h.local]
            if remote:
                raise c.EmulatorError(f"{remote[0].describe()} is on another host: it cannot reach a controller at "
                                      f"{address[0]}:{address[1]} (loopback); give the controller's routable address")
        return handles

    def pin(self, cpus: tuple) -> None:
        """Run every local shard, and every shard started later, on ``cpus``."""
        self.cpus = tuple(cpus)
        local = {s.index: c.Pin(self.cpus) for s in self.shards if s.local and s.alive}
        if local and self.cpus:
            self._request(local, 30.0)

    def packet_in_paths(self) -> str:
        """Which PACKET_IN path the shards run (emulator.fastpath): ``compiled``, ``python``, or both named."""
        return ", ".join(sorted({s.info.packet_in_path for s in self.shards if s.info is not None})) or "unknown"

    @property
    def pids(self) -> list:
        return [s.info.pid for s in self.shards if s.info is not None and s.local]

    # ------------------------------------------------------------------ calls
    def call(self, cmd: c.Command, timeout: float = 60.0, shards: Optional[Iterable[int]] = None,
             on_event: Optional[Callable[[int, object], None]] = None):
        """Send ``cmd`` to ``shards`` (default: all) and return the merged response."""
        targets = list(range(len(self.shards))) if shards is None else list(shards)
        return self.call_each({i: cmd for i in targets}, timeout, on_event)

    def call_each(self, cmds: dict, timeout: float = 60.0, on_event: Optional[Callable[[int, object], None]] = None):
        """Send ``cmds[i]`` to shard ``i`` (all of one command class) and return the merged response."""
        if not cmds:
            raise c.EmulatorError("no emulator shard to send the command to")
        kinds = {type(cmd) for cmd in cmds.values()}
        if len(kinds) != 1:
            raise c.EmulatorError(f"one call, one command class (got {', '.join(k.__name__ for k in kinds)})")
        cls = kinds.pop()
        answers = self._request(cmds, timeout, on_event)
        return cls.response.merge(answers)

    def call_one(self, index: int, cmd: c.Command, timeout: float = 60.0):
        return self._request({index: cmd}, timeout)[0]

    def notify(self, index: int, cmd: c.Command) -> None:
        """A command that has no answer (``StopRamp``)."""
        shard = self.shards[index]
        if shard.alive:
            self._send(shard, self._new_id(), cmd)

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _send(self, shard: ShardHandle, call_id: int, cmd: c.Command) -> None:
        message = ("call", call_id, c.to_wire(cmd))
        try:
            shard.channel.send(message)
        except self._execnet.DataFormatError as exc:
            raise c.EmulatorError(f"{type(cmd).__name__} cannot cross the channel to {shard.describe()}: {exc}") \
                from None
        except (OSError, EOFError, ValueError) as exc:   # the channel is closed: the shard is gone
            shard.alive = False
            raise c.EmulatorError(f"{shard.describe()} is gone ({type(exc).__name__}: {exc})") from None

    def _request(self, cmds: dict, timeout: float, on_event=None) -> list:
        """Send, then wait for one answer per shard (events passed to ``on_event`` meanwhile)."""
        pending = self._send_all(cmds)
        order = list(pending)
        answers: dict = {}
        cleanup = all(isinstance(cmd, (c.Disconnect, c.Close, c.StopRamp)) for cmd in cmds.values())
        deadline = time.monotonic() + timeout
        while pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                i, cmd = next(iter(pending.values()))
                raise c.EmulatorError(f"{self.shards[i].describe()} did not answer {type(cmd).__name__} within "
                                      f"{timeout:g} s")
            if not cleanup:
                StopRequest.check()
            try:
                handle, msg = self._queue.get(timeout=min(remaining, 1.0))
            except queue.Empty:
                continue
            if msg is _END:
                self._ended(handle, pending)
                continue
            kind, call_id, payload = msg
            if call_id not in pending:
                continue                       # an earlier, abandoned call's late message
            if kind == "event":
                if on_event is not None:
                    on_event(pending[call_id][0], c.from_wire(payload))
            elif kind == "answer":
                answers[call_id] = c.from_wire(payload)
                del pending[call_id]
            else:
                j, cmd = pending[call_id]
                raise c.EmulatorError(f"{self.shards[j].describe()}: {type(cmd).__name__} failed: {payload}")
        return [answers[k] for k in order]

    def _send_all(self, cmds: dict) -> dict:
        """Send each shard its command: {call id: (shard index, command)}, in the order sent."""
        pending: dict = {}
        for i, cmd in cmds.items():
            shard = self.shards[i]
            if not shard.alive:
                raise c.EmulatorError(f"{shard.describe()} is gone; it cannot run {type(cmd).__name__}")
            call_id = self._new_id()
            self._send(shard, call_id, cmd)
            pending[call_id] = (i, cmd)
        return pending

    def _ended(self, handle, pending: dict) -> None:
        """A shard's channel ended: EmulatorError when it still owed an answer (a shard already replaced is let go)."""
        handle.alive = False
        i = handle.index
        if self.shards[i] is not handle:
            return
        mine = [cmd for j, cmd in pending.values() if j == i]
        if mine:
            raise c.EmulatorError(f"{self.shards[i].describe()} ended while running {type(mine[0]).__name__} (its "
                                  f"process died; see its log, logs/shard{i}.log in the report folder)")

    def to_shard_clock(self, index: int, t_ns: int) -> int:
        return t_ns + self.shards[index].offset_ns

    # ------------------------------------------------------------------ ending
    def close(self) -> None:
        """Close every shard (its sessions first) and end the gateways."""
        for shard in self.shards:
            if shard.alive:
                try:
                    shard.channel.send(("call", self._new_id(), c.to_wire(c.Close())))
                except Exception:   # already gone: nothing to close
                    pass
        try:
            self.group.terminate(timeout=3.0)
        except Exception:
            pass
        self.shards = []

