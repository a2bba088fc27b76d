"""No switch of a finished trial touches the network again (issue 24 §6).

A shard answers ``Disconnect`` (the end of a trial) only once every switch it ran has stopped connecting — no
further ramp group, retry or reconnect, connects under way stopped — and every session has closed.  Afterwards,
minutes on the clock make no connect attempt: the previous controller's ports may be handed to the next controller
without an emulated switch knocking on them (from a clean clone, Ryu's REST server had been given such a port and
read OpenFlow HELLOs).

The reactor here is a MemoryReactorClock whose connects behave like TCP's: every attempt is recorded with its instant
(each ``connectTCP`` and each ``IConnector.connect()``, which is how a retry of the same connector would go),
``stopConnecting()`` fails the attempt at once as Twisted's connectors do, and a closed connection is lost on the
reactor's next turn, as a real transport's is.
"""

import pytest
from twisted.internet import error as terror
from twisted.internet.address import IPv4Address
from twisted.internet.testing import MemoryReactorClock, StringTransport
from twisted.python.failure import Failure

from emulator import codec
from emulator import commands as c
from emulator import params as pm
from emulator import topology as tp
from emulator.codec import OFP13
from emulator.shard import Shard

HANDSHAKE = codec.encode_hello(OFP13, 1, (OFP13,)) + codec.header(OFP13, codec.FEATURES_REQUEST, 8, 2)


class Transport(StringTransport):
    """A connection whose close reaches its protocol on the reactor's next turn (a real TCP transport's way)."""

    def __init__(self, net: "Network", protocol):
        super().__init__(peerAddress=IPv4Address("TCP", "127.0.0.1", 6653))
        self.net, self.protocol = net, protocol
        self.lost = False

    def loseConnection(self):
        self._lose(terror.ConnectionDone())

    def abortConnection(self):
        self._lose(terror.ConnectionAborted())

    def _lose(self, why):
        super().loseConnection()
        if not self.lost:
            self.lost = True
            self.net.callLater(0, self.protocol.connectionLost, Failure(why))


class Connector:
    """One connect: ``connecting`` until the test accepts or refuses it, or it is stopped."""

    def __init__(self, net: "Network", host: str, port: int, factory):
        self.net, self.host, self.port, self.factory = net, host, port, factory
        self.state = "disconnected"
        self.stopped = False

    def connect(self):
        self.net.attempts.append((self.net.seconds(), self.host, self.port))
        self.state = "connecting"
        self.factory.startedConnecting(self)

    def stopConnecting(self):
        if self.state != "connecting":
            raise terror.NotConnectingError("we're not trying to connect")
        self.state, self.stopped = "disconnected", True
        self.factory.clientConnectionFailed(self, Failure(terror.UserError()))

    def disconnect(self):
        if self.state == "connecting":
            self.stopConnecting()

    def getDestination(self):
        return IPv4Address("TCP", self.host, self.port)

    def accept(self, handshake: bool = True):
        """The controller accepts: the factory's protocol on a transport (its handshake answered)."""
        assert self.state == "connecting"
        self.state = "connected"
        proto = self.factory.buildProtocol(self.getDestination())
        proto.makeConnection(Transport(self.net, proto))
        if handshake:
            proto.dataReceived(HANDSHAKE)
        return proto

    def refuse(self):
        assert self.state == "connecting"
        self.state = "disconnected"
        self.factory.clientConnectionFailed(self, Failure(terror.ConnectionRefusedError()))


class Network(MemoryReactorClock):
    def __init__(self):
        super().__init__()
        self.attempts: list = []       # (instant, host, port) of every connect attempt

    def connectTCP(self, host, port, factory, timeout=30, bindAddress=None):
        self.tcpClients.append((host, port, factory, timeout, bindAddress))
        connector = Connector(self, host, port, factory)
        self.connectors.append(connector)
        connector.connect()
        return connector

    def connecting(self) -> list:
        return [x for x in self.connectors if x.state == "connecting"]

    def later(self, seconds: float, step: float = 0.5) -> list:
        """Let ``seconds`` pass, ``step`` at a time; the connect attempts made meanwhile."""
        before = len(self.attempts)
        for _ in range(round(seconds / step)):
            self.advance(step)
        return self.attempts[before:]


class Channel(list):
    def answers(self, call_id: int) -> list:
        return [(kind, c.from_wire(p) if kind != "error" else p) for kind, call, p in self if call == call_id]


def ended(net: Network, shard: Shard, out: Channel, call_id: int = 99) -> None:
    """Disconnect, then the checks of a finished trial: ten minutes later no switch has tried to connect; the
    answer came once the sessions had closed (on the reactor's turn after the Disconnect), not at once; no connect
    is left under way and no timer is left."""
    shard.dispatch(call_id, c.Disconnect())
    answered_at_once = bool(out.answers(call_id))
    assert net.later(600) == []
    assert out.answers(call_id) == [("answer", c.Done())] and not answered_at_once
    assert net.connecting() == []
    assert net.getDelayedCalls() == []


def test_the_topology_switches_of_a_finished_trial_never_connect_again():
    # The fabric's own policy: a refused first connect is tried again (3 times, 1 s apart), as a real switch keeps
    # trying its controller.  The trial ends while switch 1 waits to retry, switch 2's connect is under way and
    # switch 3 is connected.
    net, out = Network(), Channel()
    shard = Shard(net, out.append)
    shard.dispatch(1, c.DeployFabric(tp.linear(3).to_dict(), (1, 2, 3), (OFP13,), pm.FabricParams()))
    shard.dispatch(2, c.ConnectFabric(("127.0.0.1", 6653), {}, pm.RampParams(ramp_delay=0)))
    first = {x.factory.key[0]: x for x in net.connectors}
    first[1].refuse()
    first[3].accept()
    assert net.getDelayedCalls()                    # switch 1's retry, among others
    ended(net, shard, out)
    assert first[2].stopped


def test_a_reconnecting_topology_stops_reconnecting_at_the_end_of_its_trial():
    # With the fabric's reconnect (Faucet drops switches and expects them back): one session lost and waiting to
    # reconnect, one reconnect under way, one session up.
    net, out = Network(), Channel()
    shard = Shard(net, out.append)
    fabric = pm.FabricParams(reconnect=True, reconnect_delay=0.25, reconnect_max_delay=4.0)
    shard.dispatch(1, c.DeployFabric(tp.linear(3).to_dict(), (1, 2, 3), (OFP13,), fabric))
    shard.dispatch(2, c.ConnectFabric(("127.0.0.1", 6653), {}, pm.RampParams(ramp_delay=0)))
    sessions = {x.factory.key[0]: x.accept() for x in list(net.connectors)}
    assert [kind for kind, _ in out.answers(2)] == ["answer"]
    sessions[1].transport.loseConnection()          # the controller drops switches 1 and 2
    sessions[2].transport.loseConnection()
    net.advance(0)
    net.advance(0.25)
    assert sorted(x.factory.key[0] for x in net.connecting()) == [1, 2]
    net.connecting()[0].refuse()                    # one of them waits to try again
    ended(net, shard, out)


def test_the_traffic_switches_of_a_finished_trial_all_close_and_never_connect_again():
    # One switch ready, one still in its handshake, one connect under way.
    net, out = Network(), Channel()
    shard = Shard(net, out.append)
    cmd = c.ConnectSwitches(address=("127.0.0.1", 6653), versions=(OFP13,), datapath_ids=(1, 2, 3),
                            params=pm.AsyncParams(), ramp=pm.RampParams(ramp_group=3, ramp_delay=0))
    shard.dispatch(1, cmd)
    ready = net.connectors[0].accept()
    shaking = net.connectors[1].accept(handshake=False)
    ended(net, shard, out)
    assert ready.closed and shaking.closed and net.connectors[2].stopped


def test_a_capacity_trial_ended_mid_ramp_opens_no_further_group():
    net, out = Network(), Channel()
    shard = Shard(net, out.append)
    cmd = c.OpenSessions(address=("127.0.0.1", 6653), versions=(OFP13,), capacity=pm.CapacityParams(hold_time=1),
                         ramp=pm.RampParams(ramp_group=2, ramp_delay=0.5), sessions=6)
    shard.dispatch(1, cmd)
    net.connectors[0].accept()
    ended(net, shard, out)
    assert net.connectors[1].stopped and len(net.attempts) == 2
    (kind, message), = out.answers(1)
    assert kind == "error" and "ended by Disconnect" in message


def test_a_screen_ended_by_disconnect_opens_no_probe_and_no_fresh_switch():
    net, out = Network(), Channel()
    shard = Shard(net, out.append)
    shard.dispatch(1, c.ScreenKind(address=("127.0.0.1", 6653), version=OFP13, kind="C01",
                                   screen=pm.ScreenParams()))
    net.connectors[0].accept()                      # the sentinel
    ended(net, shard, out)
    (kind, obs), = out.answers(1)
    assert kind == "answer" and "ended by Disconnect" in obs.error and len(net.attempts) == 1


@pytest.mark.parametrize("stage", ["probe connecting", "fresh connecting"])
def test_a_screen_that_ends_by_itself_stops_the_connects_still_under_way(stage):
    # The screen's own end (its window, or a failure) stops a switch still connecting, and a connection that
    # completes anyway is reset at once.
    from emulator.screen import KindScreen, tcp_connector

    net = Network()
    p = pm.ScreenParams()
    screen = KindScreen(net, c.ScreenKind(address=("127.0.0.1", 6653), version=OFP13, kind="C01", screen=p),
                        tcp_connector(net, "127.0.0.1", 6653), now_ns=lambda: int(net.seconds() * 1e9))
    answers = []
    screen.run().addCallback(answers.append)
    net.connectors[0].accept()
    net.later(p.settle_s + p.baseline_s + 0.05, step=0.05)       # the probe's connect starts
    if stage == "fresh connecting":
        net.connectors[1].accept()
        net.later(p.settle_s + 1.0, step=0.05)      # the kind is sent, then the fresh switch's connect starts
    under_way = net.connecting()
    assert len(under_way) == 1
    screen.end("the harness gave up")
    assert answers and under_way[0].stopped and net.connecting() == []
    gone = []
    screen.gone().addCallback(gone.append)
    net.advance(0)
    assert gone == [None] and net.later(600) == []
