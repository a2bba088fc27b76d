"""One shard's part of a topology, on a real reactor: its switches connected to the controller and
a TCP listener on loopback through which frames cross to the switches of other shards (one
connection per pair of shards, length-prefixed records; TCP so that a burst is never dropped).

:mod:`emulator.shard` drives this from the caller's commands; :class:`~emulator.fabric.Fabric`
holds the logic (and is unit-tested without sockets).
"""

from __future__ import annotations

from typing import Optional

from twisted.internet import defer
from twisted.internet.protocol import ClientFactory, Factory
from twisted.protocols.basic import Int32StringReceiver

from . import testports as tpt
from . import topology as tp
from .fabric import REMOTE_HEAD, Fabric
from .protocol import SessionListener
from .topology import Endpoint


class _Relay(Int32StringReceiver):
    """One shard-to-shard connection: each record is :data:`REMOTE_HEAD` + frame."""
    MAX_LENGTH = 1 << 20

    def __init__(self, fabric: Fabric):
        self.fabric = fabric

    def connectionMade(self):
        if hasattr(self.transport, "setTcpNoDelay"):
            self.transport.setTcpNoDelay(True)

    def stringReceived(self, record):
        if len(record) >= REMOTE_HEAD.size:
            self.fabric.deliver_remote(record)


class _RelayFactory(Factory):
    def __init__(self, fabric: Fabric):
        self.fabric = fabric
        self.protocols: list = []

    def buildProtocol(self, addr):
        p = _Relay(self.fabric)
        self.protocols.append(p)
        return p


class _Waiter(SessionListener):
    """Fires ``done`` once every owned switch is ready or has failed."""

    def __init__(self, expected: int):
        self.expected = expected
        self.ready = 0
        self.failures: dict = {}
        self.done = defer.Deferred()
        self.closed_after_ready = 0

    def _check(self):
        if not self.done.called and self.ready + sum(self.failures.values()) >= self.expected:
            self.done.callback({"connected": self.ready, "failures": dict(self.failures)})

    def session_ready(self, session):
        self.ready += 1
        self._check()

    def session_closed(self, session, kind, detail):
        if session.ready:
            self.closed_after_ready += 1
            return
        self.fail(kind)

    def fail(self, kind: str):
        self.failures[kind] = self.failures.get(kind, 0) + 1
        self._check()


class FabricNet:
    def __init__(self, reactor, topology: dict, owned: list, versions: tuple, host_refresh: float = 5.0,
                 host_delay: float = 1.0, source: str = "127.0.0.1", handshake_timeout: float = 10.0,
                 data_plane: Optional[dict] = None):
        self.reactor = reactor
        self.topology = tp.from_dict(topology)
        self.owned = list(owned)
        self.source = source
        self.handshake_timeout = handshake_timeout
        self.waiter = _Waiter(len(self.owned))
        self.fabric = Fabric(self.topology, versions, owned=self.owned, remote_send=self._send_remote,
                             listener=self.waiter, clock=reactor, host_delay=host_delay, host_refresh=host_refresh,
                             data_plane=data_plane is not None, **(data_plane or {}))
        self.fabric.prepare_hosts()
        self.fabric.host_receive = self._host_receive
        self.test_ports: dict = {}     # Endpoint -> TestPort (at host ports of switches this shard owns)
        self.peers: dict = {}          # dpid -> (host, port) of the shard that owns it
        self.relay_factory = _RelayFactory(self.fabric)
        self.listener = reactor.listenTCP(0, self.relay_factory, interface=source)
        self.out: dict = {}            # (host, port) -> connected _Relay, or a list of records waiting for it
        self.switches: list = []

    @property
    def relay_address(self) -> tuple:
        return self.source, self.listener.getHost().port

    def _send_remote(self, ep: Endpoint, data: bytes, t_out: int) -> None:
        addr = self.peers.get(ep.dpid)
        if addr is None:
            self.fabric.not_delivered += 1
            return
        record = REMOTE_HEAD.pack(ep.dpid, ep.port, t_out) + data
        link = self.out.get(addr)
        if isinstance(link, _Relay):
            link.sendString(record)
        elif link is not None:
            link.append(record)        # the connection to that shard is still being made
        else:
            self.out[addr] = [record]
            self._dial(addr)

    def _dial(self, addr: tuple) -> None:
        net = self

        class Dial(ClientFactory):
            def buildProtocol(self, a):
                p = _Relay(net.fabric)
                waiting = net.out.get(addr)
                net.out[addr] = p

                def flush():
                    for record in waiting if isinstance(waiting, list) else ():
                        p.sendString(record)
                net.reactor.callLater(0, flush)
                return p

            def clientConnectionFailed(self, connector, reason):
                lost = net.out.pop(addr, [])
                net.fabric.not_delivered += len(lost) if isinstance(lost, list) else 0

        self.reactor.connectTCP(addr[0], addr[1], Dial(), timeout=5)

    def connect(self, host: str, port: int, peers: dict, ramp_group: int = 25, ramp_delay: float = 0.05,
                retries: int = 3, retry_delay: float = 1.0):
        """Connect the owned switches (``ramp_group`` every ``ramp_delay`` s); fires with
        connected/failures.  A switch whose TCP connect fails tries again after ``retry_delay`` s, up to
        ``retries`` times, as a real switch keeps reconnecting to its controller."""
        self.peers = {int(k): tuple(v) for k, v in peers.items()}
        self.connect_retries = 0
        net = self

        class Factory(ClientFactory):
            def __init__(self, dpid):
                self.dpid = dpid
                self.attempts = 1

            def buildProtocol(self, addr):
                p = net.fabric.make_protocol(self.dpid, net.reactor, handshake_timeout=net.handshake_timeout)
                net.switches.append(p)
                return p

            def clientConnectionFailed(self, connector, reason):
                if self.attempts <= retries:
                    self.attempts += 1
                    net.connect_retries += 1
                    net.reactor.callLater(retry_delay, connector.connect)
                    return
                net.waiter.fail("connect failed: " + reason.getErrorMessage())

        def group(start: int):
            for dpid in self.owned[start:start + ramp_group]:
                self.reactor.connectTCP(host, port, Factory(dpid), timeout=5, bindAddress=(self.source, 0))
            if start + ramp_group < len(self.owned):
                self.reactor.callLater(ramp_delay, group, start + ramp_group)

        if self.owned:
            group(0)
        else:
            self.waiter._check()
        return self.waiter.done

    def change(self, kind: str, dpid: int, port: Optional[int] = None) -> dict:
        if kind in ("link_down", "link_up"):
            self.fabric.set_link(Endpoint(dpid, port), up=kind == "link_up")
        elif kind == "switch_down":
            self.fabric.switch_down(dpid)
        else:
            raise ValueError(f"unknown change {kind!r} (link_down, link_up, switch_down)")
        return self.fabric.status()["change"]

    # ------------------------------------------------------------------ test ports
    def _host_receive(self, host, frame: bytes, t: int) -> None:
        port = self.test_ports.get(host.at)
        if port is not None:
            port.receive(frame, t)

    def test_port(self, cmd: dict) -> dict:
        """A test-port command (``action``: attach, announce, stream, start, stop, report) for the
        port ``at`` = [dpid, port]; a shard that does not own that switch answers ``{"here": False}``."""
        at = Endpoint(*cmd["at"])
        if at.dpid not in self.fabric.owned:
            return {"here": False}
        action = cmd["action"]
        if action == "attach":
            if self.topology.host_at(at.dpid, at.port) is None:
                raise ValueError(f"switch {at.dpid} port {at.port} is not a host port: a test port sits at the edge")
            fabric = self.fabric
            self.test_ports[at] = tpt.TestPort(lambda frame: fabric.send_at(at, frame), self.reactor, fabric.now_ns)
            return {"here": True}
        port = self.test_ports.get(at)
        if port is None:
            raise ValueError(f"no test port attached at switch {at.dpid} port {at.port}")
        if action == "announce":
            return {"here": True, "announced": port.announce([(bytes.fromhex(m), ip) for m, ip in cmd["hosts"]])}
        if action == "stream":
            flows = tpt.synthetic_flows(cmd["flows"], cmd.get("src_net", 101), cmd.get("dst_net", 102),
                                        cmd.get("first", 1))
            s = port.add_stream(cmd["stream"], flows, cmd.get("size", 128), cmd.get("rate", 1000.0),
                                cmd.get("count"), cmd.get("duration"))
            return {"here": True, **s.report()}
        if action == "start":
            port.start()
            return {"here": True, "started_ns": self.fabric.now_ns()}
        if action == "stop":
            port.stop()
            return {"here": True}
        if action == "report":
            return {"here": True, **port.report(cmd.get("flow_times", False))}
        raise ValueError(f"unknown test-port action {action!r} (attach, announce, stream, start, stop, report)")

    def close(self) -> None:
        for port in self.test_ports.values():
            port.stop()
        self.fabric.stop()
        for p in self.switches:
            if p.transport is not None and not p.closed:
                p.transport.abortConnection()
        for link in list(self.out.values()) + self.relay_factory.protocols:
            if isinstance(link, _Relay) and link.transport is not None:
                link.transport.loseConnection()
        self.listener.stopListening()
