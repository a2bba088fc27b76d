"""Emulator shards over execnet: each shard is a Python process with its own reactor and switches.

The caller (pytest, or ``python -m fixtures.selfbench``) never runs a reactor.  It
opens one execnet gateway per shard (``popen`` here; the same code runs over an
``ssh`` gateway on another host) and runs :func:`serve` there.  Commands and
answers are plain dicts over the channel:

* ``connect``  : connect this shard's switches; answer ``{"connected", "failures"}``
* ``learn``    : each switch announces its destination host (gratuitous ARP)
* ``trial``    : one :class:`~emulator.traffic.Traffic` trial starting at a shared
  monotonic instant; answer its counters, latencies as bytes of int64 ns
* ``fabric_init``: this shard's switches of a topology and its relay listener (TCP); answer its address
* ``fabric_connect``: connect them, with every other shard's relay address; answer ``connected``
* ``fabric_status``: the fabric's counters and instants (:meth:`emulator.fabric.Fabric.status`)
* ``fabric_change``: link down / link up / switch down (every shard applies it to its own ends)
* ``test_port``  : attach a test port at a host port, announce hosts, add and start streams, report
* ``quiesce``  : answer once the controller has been silent for a while (backlog drained)
* ``disconnect``: close the sessions, keep the process for the next repetition
* ``close``    : close the sessions and stop the reactor

Shards on one host share CLOCK_MONOTONIC, so their timestamps merge directly.
"""

from __future__ import annotations

import os
import sys
import time
from array import array
from pathlib import Path
from typing import Optional

PROJECT_ROOT = Path(__file__).resolve().parent.parent


class ShardError(RuntimeError):
    """A shard failed or did not answer; the message says which and why."""


# --------------------------------------------------------------------------- remote side

def serve(channel) -> None:  # pragma: no cover - runs in the shard process (integration-tested)
    from twisted.internet import reactor

    from .traffic import SwitchSet, Traffic, TrafficParams

    state = {"set": None, "fabric": None}

    def reply(obj):
        channel.send(obj)

    def fail(exc):
        reply({"event": "error", "message": f"{type(exc).__name__}: {exc}"})

    def handle(cmd):
        try:
            name = cmd["cmd"]
            if name == "connect":
                versions = tuple(cmd["versions"])
                s = SwitchSet(reactor, cmd["host"], cmd["port"], cmd["datapath_ids"], versions,
                              frame_kind=cmd["frame_kind"], frame_size=cmd["frame_size"], n_macs=cmd["n_macs"],
                              buffered=cmd["buffered"], ramp_group=cmd["ramp_group"],
                              handshake_timeout=cmd["handshake_timeout"])
                state["set"] = s
                s.connect().addCallbacks(lambda r: reply({"event": "connected", **r}), lambda f: fail(f.value))
            elif name == "learn":
                reply({"event": "learned", "sent": state["set"].learn_destinations()})
            elif name == "trial":
                s = state["set"]
                live = [sw for sw in s.switches if not sw.closed]
                if cmd.get("only_first"):
                    live = live[:1]
                if not live:
                    reply({"event": "error", "message": "no connected switch left in this shard"})
                    return
                for sw in live:
                    s.refresh_block(sw)
                t = Traffic(live, TrafficParams(**cmd["params"]), reactor, trial=cmd["trial"],
                            limit=cmd.get("limit"))
                d = t.start_at(cmd["start_at_ns"])

                def done(result):
                    result["latencies_ns"] = result["latencies_ns"].tobytes()
                    result["pid"] = os.getpid()
                    reply({"event": "result", **result})
                d.addCallbacks(done, lambda f: fail(f.value))
            elif name == "fabric_init":
                from .fabric_net import FabricNet
                if state["fabric"] is not None:
                    state["fabric"].close()
                state["fabric"] = FabricNet(reactor, cmd["topology"], cmd["owned"], tuple(cmd["versions"]),
                                            host_refresh=cmd.get("host_refresh", 5.0),
                                            host_delay=cmd.get("host_delay", 1.0),
                                            handshake_timeout=cmd.get("handshake_timeout", 10.0),
                                            data_plane=cmd.get("data_plane"))
                reply({"event": "fabric_ready", "relay": list(state["fabric"].relay_address)})
            elif name == "fabric_connect":
                net = state["fabric"]
                net.connect(cmd["host"], cmd["port"], cmd["peers"], cmd.get("ramp_group", 25),
                            cmd.get("ramp_delay", 0.05)).addCallbacks(
                    lambda r: reply({"event": "connected", "retries": net.connect_retries, **r}),
                    lambda f: fail(f.value))
            elif name == "fabric_status":
                reply({"event": "status", "now_ns": time.monotonic_ns(), "pid": os.getpid(),
                       **state["fabric"].fabric.status(cmd.get("before_ns"))})
            elif name == "test_port":
                reply({"event": "test_port", **state["fabric"].test_port(cmd)})
            elif name == "fabric_trace":
                fabric = state["fabric"].fabric
                if cmd["action"] == "start":
                    fabric.start_trace()
                    reply({"event": "trace", "started_ns": time.monotonic_ns()})
                else:
                    reply({"event": "trace", **fabric.trace_report()})
            elif name == "fabric_change":
                reply({"event": "changed", "change": state["fabric"].change(cmd["kind"], cmd["dpid"], cmd.get("port"))})
            elif name == "quiesce":
                quiesce(state["set"], cmd["quiet"], cmd["max_wait"])
            elif name == "disconnect":
                if state["set"] is not None:
                    state["set"].close_all()
                    state["set"] = None
                if state["fabric"] is not None:
                    state["fabric"].close()
                    state["fabric"] = None
                reply({"event": "disconnected"})
            elif name == "close":
                if state["set"] is not None:
                    state["set"].close_all()
                if state["fabric"] is not None:
                    state["fabric"].close()
                reactor.callLater(0.2, reactor.stop)
                reply({"event": "closed"})
            else:
                reply({"event": "error", "message": f"unknown shard command {name!r}"})
        except Exception as exc:  # reported to the caller, which fails the trial with it
            fail(exc)

    def quiesce(switch_set, quiet: float, max_wait: float) -> None:
        """Answer once the controller has sent nothing for ``quiet`` s (its backlog is drained), or at
        ``max_wait``."""
        began = time.monotonic_ns()

        def check():
            now = time.monotonic_ns()
            last = max([sw.t_last_rx or 0 for sw in switch_set.switches] + [began])
            if now - last >= quiet * 1e9 or now - began >= max_wait * 1e9:
                reply({"event": "quiet", "waited_s": (now - began) / 1e9, "quiet": now - last >= quiet * 1e9})
            else:
                reactor.callLater(min(0.05, quiet / 4), check)
        check()

    channel.setcallback(lambda cmd: reactor.callFromThread(handle, cmd), endmarker=None)
    reactor.run(installSignalHandlers=False)


# --------------------------------------------------------------------------- local side

class ShardPool:
    """``n`` shard processes over execnet popen gateways."""

    def __init__(self, n: int, python: str = sys.executable, spec_extra: str = ""):
        import execnet

        if n < 1:
            raise ValueError(f"emulator shards must be at least 1 (got {n})")
        self.group = execnet.Group()
        self.channels = []
        try:
            for i in range(n):
                gw = self.group.makegateway(f"popen//python={python}//chdir={PROJECT_ROOT}//id=shard{i}{spec_extra}")
                self.channels.append(gw.remote_exec(
                    "import sys; sys.path.insert(0, %r)\nfrom emulator.shard import serve\nserve(channel)"
                    % str(PROJECT_ROOT)))
        except Exception:
            self.close()
            raise

    def __len__(self):
        return len(self.channels)

    def request(self, cmds: list, timeout: float, expect: str) -> list:
        """Send one command per shard (``None``: skip that shard) and collect each answer."""
        import execnet

        for ch, cmd in zip(self.channels, cmds):
            if cmd is not None:
                ch.send(cmd)
        answers = []
        deadline = time.monotonic() + timeout
        for i, (ch, cmd) in enumerate(zip(self.channels, cmds)):
            if cmd is None:
                answers.append(None)
                continue
            try:
                ans = ch.receive(max(0.1, deadline - time.monotonic()))
            except execnet.TimeoutError:
                raise ShardError(f"emulator shard {i} did not answer {cmd['cmd']!r} within {timeout:g} s") from None
            except (EOFError, OSError, execnet.RemoteError) as exc:
                raise ShardError(f"emulator shard {i} failed during {cmd['cmd']!r}: {exc}") from None
            if ans.get("event") == "error":
                raise ShardError(f"emulator shard {i}: {ans['message']}")
            if ans.get("event") != expect:
                raise ShardError(f"emulator shard {i} answered {ans.get('event')!r} to {cmd['cmd']!r}")
            answers.append(ans)
        return answers

    def close(self) -> None:
        for ch in self.channels:
            try:
                ch.send({"cmd": "close"})
            except Exception:  # a shard that is already gone has nothing to close
                pass
        try:
            self.group.terminate(timeout=3.0)
        except Exception:
            pass
        self.channels = []


def split_switches(n_switches: int, n_shards: int, first_dpid: int = 1) -> list:
    """Datapath ids per shard, as even as possible; shards with none are dropped."""
    out = []
    per, extra = divmod(n_switches, n_shards)
    dpid = first_dpid
    for i in range(n_shards):
        k = per + (1 if i < extra else 0)
        if k:
            out.append(list(range(dpid, dpid + k)))
        dpid += k
    return out


COUNTERS = ("ntx", "nrx", "nrx_in_td", "late", "duplicates", "stale", "overrun", "not_counted", "unmatched",
            "deferred_by_backpressure", "rtt_sum_ns", "packet_out", "flow_mod", "switches", "sessions_lost")


def merge_results(results: list) -> dict:
    """One trial's result from its shards' results: counters summed, latencies pooled, window widened."""
    results = [r for r in results if r is not None]
    if not results:
        raise ShardError("no shard returned a result")
    merged = {k: sum(r[k] for r in results) for k in COUNTERS}
    lat = array("q")
    for r in results:
        raw = r["latencies_ns"]
        lat.frombytes(raw if isinstance(raw, (bytes, bytearray)) else raw.tobytes())
    first = results[0]
    merged.update(mode=first["mode"], duration_s=first["duration_s"], response_timeout_s=first["response_timeout_s"],
                  offered_rate_target=first["offered_rate_target"], shards=len(results),
                  t_start_ns=min(r["t_start_ns"] for r in results), t_end_ns=max(r["t_end_ns"] for r in results),
                  start_skew_us=(max(r["t_start_ns"] for r in results) - min(r["t_start_ns"] for r in results)) / 1e3,
                  latencies_ns=lat)
    return merged
