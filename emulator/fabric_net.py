"""One shard's part of a topology, on a real reactor: its switches connected to the controller (or to
each controller of a cluster: one connection per switch and controller, each reconnecting on its own
when the fabric's parameters ask for it) and a TCP listener on loopback through which frames cross to
the switches of other shards (one connection per pair of shards, length-prefixed records; TCP so that a
burst is never dropped).

:mod:`emulator.shard` drives this from the caller's commands; :class:`~emulator.fabric.Fabric`
holds the logic (and is unit-tested without sockets).
"""

from __future__ import annotations

from typing import Optional

from twisted.internet.defer import Deferred, succeed
from twisted.internet.error import NotConnectingError
from twisted.internet.protocol import ClientFactory, Factory
from twisted.protocols.basic import Int32StringReceiver

from . import testports as tpt
from . import topology as tp
from .commands import CLOSE_LOCAL, Connected, ConnectFabric, DeployFabric, EmulatorError, PortAnswer, TestPortCommand
from .fabric import REMOTE_HEAD, Fabric
from .protocol import SessionRules
from .ramp import Ramp, RampLedger
from .topology import Endpoint


class _Relay(Int32StringReceiver):
    """One shard-to-shard connection: each record is :data:`REMOTE_HEAD` + frame.  ``on_connected`` (dialled
    connections): called once the connection is up, to send what waited for it, in order."""
    MAX_LENGTH = 1 << 20

    def __init__(self, fabric: Fabric, on_connected=None):
        self.fabric = fabric
        self.on_connected = on_connected

    def connectionMade(self):
        if hasattr(self.transport, "setTcpNoDelay"):
            self.transport.setTcpNoDelay(True)
        if self.on_connected is not None:
            self.on_connected(self)

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


class _FabricLedger(RampLedger):
    """The ramp's failures by datapath id: the fabric's ramp keys are (dpid, controller index); with a cluster
    each failure also names its controller."""

    def __init__(self):
        super().__init__()
        self.addresses: tuple = ()

    def connect_failed(self, index: int, key, kind: str, detail: str) -> None:
        dpid, i = key
        where = f" ({self.addresses[i][0]}:{self.addresses[i][1]})" if len(self.addresses) > 1 else ""
        self.failures.append((dpid, f"{kind}: {detail}{where}"))

    def session_closed(self, session, kind: str, detail: str) -> None:
        if len(self.addresses) > 1 and kind != CLOSE_LOCAL:
            detail = f"{detail}; controller {session.controller}"
        super().session_closed(session, kind, detail)


class FabricNet:
    def __init__(self, reactor, cmd: DeployFabric, source: str = "127.0.0.1"):
        self.reactor = reactor
        self.topology = tp.from_dict(cmd.topology)
        self.owned = list(cmd.owned)
        self.source = source
        self.sessions = _FabricLedger()
        self.ramp: Optional[Ramp] = None
        self.params = f = cmd.fabric
        self.fabric = Fabric(self.topology, tuple(cmd.versions), owned=self.owned, remote_send=self._send_remote,
                             clock=reactor, params=f)
        self.fabric.prepare_hosts()
        self.fabric.host_receive = self._host_receive
        self.test_ports: dict = {}     # Endpoint -> TestPort (at host ports of switches this shard owns)
        self.peers: dict = {}          # dpid -> (host, port) of the shard that owns it
        self.relay_factory = _RelayFactory(self.fabric)
        self.listener = reactor.listenTCP(0, self.relay_factory, interface=source)
        self.out: dict = {}            # (host, port) -> connected _Relay, or a list of records waiting for it
        self.dials: dict = {}          # (host, port) -> the connector of a relay connection being made
        self.switches: list = []
        self.closed = False

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

        def connected(p: _Relay) -> None:
            waiting = net.out.get(addr)
            for record in waiting if isinstance(waiting, list) else ():   # what waited goes first, in order
                p.sendString(record)
            net.out[addr] = p

        class Dial(ClientFactory):
            def startedConnecting(self, connector):
                net.dials[addr] = connector

            def buildProtocol(self, a):
                net.dials.pop(addr, None)
                return None if net.closed else _Relay(net.fabric, connected)

            def clientConnectionFailed(self, connector, reason):
                net.dials.pop(addr, None)
                lost = net.out.pop(addr, [])
                net.fabric.not_delivered += len(lost) if isinstance(lost, list) else 0

        if not self.closed:
            self.reactor.connectTCP(addr[0], addr[1], Dial(), timeout=5)

    def connect(self, cmd: ConnectFabric):
        """Connect the owned switches, each to every controller ``cmd`` names, through the ramp (groups on the
        clock; a switch whose TCP connect fails tries again three times, 1 s apart, as a real switch keeps
        reconnecting; with the fabric's ``reconnect``, a lost connection is opened again with backoff); fires
        with a :class:`Connected` counting connections (switches × controllers)."""
        self.peers = {int(k): tuple(v) for k, v in cmd.peers.items()}
        addresses = cmd.controllers()
        self.sessions.addresses = addresses
        keys = [(dpid, i) for dpid in self.owned for i in range(len(addresses))]
        f = self.params
        rules = SessionRules(handshake_timeout=cmd.ramp.handshake_timeout, echo_interval=f.echo_interval,
                             echo_timeout=f.echo_timeout)

        def build(index, key):
            dpid, i = key
            host, port = addresses[i]
            p = self.fabric.make_protocol(dpid, self.reactor, controller=f"{host}:{port}", rules=rules)
            if len(self.switches) > 2 * len(keys):        # reconnects: forget the sessions long closed
                self.switches = [s for s in self.switches if not s.closed]
            self.switches.append(p)
            return p

        self.ramp = Ramp.from_params(cmd.ramp, self.reactor, addresses[0], keys, build, self.sessions,
                                     settle_first=False, retries=3, retry_delay=1.0, source_base=self.source,
                                     address_of=lambda key: addresses[key[1]], reconnect=f.reconnect,
                                     reconnect_delay=f.reconnect_delay, reconnect_max_delay=f.reconnect_max_delay)
        self.fabric.listener = self.ramp     # the fabric passes each session's ready/closed on to the ramp

        def done(ramp):
            return Connected(connected=ramp.ready, failures=tuple(self.sessions.failures), retries=ramp.retried)
        return self.ramp.start().addCallback(done)

    def change(self, kind: str, dpid: int, port: Optional[int] = None) -> None:
        if kind in ("link_down", "link_up"):
            self.fabric.set_link(Endpoint(dpid, port), up=kind == "link_up")
        elif kind == "switch_down":
            if self.ramp is not None:
                self.ramp.forget(lambda key: key[0] == dpid)     # a switch taken down stays down
            self.fabric.switch_down(dpid)
        else:
            raise EmulatorError(f"unknown change {kind!r} (link_down, link_up, switch_down)")

    # ------------------------------------------------------------------ test ports
    def _host_receive(self, host, frame: bytes, t: int) -> None:
        port = self.test_ports.get(host.at)
        if port is not None:
            port.receive(frame, t)

    def test_port(self, cmd: TestPortCommand) -> PortAnswer:
        """A test-port action at host port ``cmd.at`` of a switch this shard owns."""
        at = Endpoint(*cmd.at)
        if at.dpid not in self.fabric.owned:
            raise EmulatorError(f"switch {at.dpid} is not on this shard")
        if cmd.action == "attach":
            if self.topology.host_at(at.dpid, at.port) is None:
                raise EmulatorError(f"switch {at.dpid} port {at.port} is not a host port: a test port sits at the edge")
            fabric = self.fabric
            self.test_ports[at] = tpt.TestPort(lambda frame: fabric.send_at(at, frame), self.reactor, fabric.now_ns)
            return PortAnswer()
        port = self.test_ports.get(at)
        if port is None:
            raise EmulatorError(f"no test port attached at switch {at.dpid} port {at.port}")
        if cmd.action == "announce":
            return PortAnswer(announced=port.announce([(bytes.fromhex(m), ip) for m, ip in cmd.hosts]))
        if cmd.action == "stream":
            st = cmd.stream
            flows = tpt.synthetic_flows(st.flows, st.src_net, st.dst_net, st.first)
            if st.one_destination:            # every source to pair ``first``'s destination (D1)
                d1 = flows[0]
                flows = [tpt.Flow(f.src_mac, d1.dst_mac, f.src_ip, d1.dst_ip) for f in flows]
            s = port.add_stream(st.stream, flows, st.size, st.rate, st.count, st.duration, st.delay)
            return PortAnswer(tx={st.stream: s.report()})
        if cmd.action == "start":
            port.start()
            return PortAnswer()
        if cmd.action == "stop":
            port.stop()
            return PortAnswer()
        return PortAnswer(**port.report(cmd.flow_times))

    def lost(self) -> tuple:
        """(sessions lost after they were ready, what happened to the first few)."""
        return len(self.sessions.lost), "; ".join(self.sessions.lost[:3])

    def close(self) -> Deferred:
        """The end of the deployment: no switch connects, retries or reconnects any more (connects under way
        stopped), every session and relay connection closed, the relay listener closed.  Fires once every switch
        session is gone."""
        self.closed = True
        if self.ramp is not None:
            self.ramp.close()
        for connector in list(self.dials.values()):
            try:
                connector.stopConnecting()
            except NotConnectingError:
                pass
        self.dials.clear()
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
        return self.ramp.gone() if self.ramp is not None else succeed(None)
