"""The session-capacity driver and the connection ramp on a MemoryReactorClock: ramp groups, stop rules,
hold and probe, retries, source addresses."""

import errno

import pytest
from twisted.internet import error as terror
from twisted.internet.testing import MemoryReactorClock, StringTransport
from twisted.python.failure import Failure

from emulator import codec
from emulator.capacity import CapacityRun
from emulator.codec import OFP13
from emulator.commands import (
    FAIL_EARLIER_DROPPED,
    FAIL_ECHO_TIMEOUT,
    FAIL_LOCAL,
    FAIL_REFUSED,
    STOP_CAP,
    STOP_DROPPING,
    STOP_LOCAL,
    STOP_REQUESTED,
    OpenSessions,
    Progress,
    RampEnded,
)
from emulator.params import CapacityParams, RampParams
from emulator.ramp import Ramp, RampOwner, classify_connect_failure, source_address


class Scripted:
    """Plays the controller for every connection the run opens."""

    def __init__(self, **params):
        self.reactor = MemoryReactorClock()
        self.events, self.results = [], []
        cap = dict(hold_time=2.0, echo_interval=1.0, echo_timeout=1.0)
        ramp = dict(ramp_group=4, ramp_delay=0.5, handshake_timeout=10.0)
        cmd = dict(sessions=10, source_base="127.0.0.1", sessions_per_source=20000)
        for k, v in params.items():
            (cap if k in cap else ramp if k in ramp else cmd)[k] = v
        self.cmd = OpenSessions(address=("127.0.0.1", 6653), versions=(OFP13,), capacity=CapacityParams(**cap),
                                ramp=RampParams(**ramp), **cmd)
        self.run = CapacityRun(self.cmd, self.reactor, self.events.append, self.results.append,
                               now_ns=lambda: int(self.reactor.seconds() * 1e9))
        self.handled = 0
        self.protos = []

    def pending(self):
        return self.reactor.tcpClients[self.handled:]

    def accept(self, n=None, confirm=True):
        """Complete the handshake of the next ``n`` pending connections, and (``confirm``) answer the ECHO each
        switch sends after it (until then the session is not established)."""
        for _host, _port, factory, _timeout, _bind in self.pending()[:n]:
            self.handled += 1
            proto = factory.buildProtocol(None)
            proto.makeConnection(StringTransport())
            proto.dataReceived(codec.encode_hello(OFP13, 1, (OFP13,)) + codec.header(OFP13, 5, 8, 2))
            self.protos.append(proto)
            if confirm:
                self.answer_echoes([proto])

    def refuse(self, n=None, exc=terror.ConnectionRefusedError):
        for _host, _port, factory, _timeout, _bind in self.pending()[:n]:
            self.handled += 1
            factory.clientConnectionFailed(None, Failure(exc()))

    def answer_echoes(self, protos=None):
        for proto in protos if protos is not None else self.protos:
            frames, _ = codec.split_frames(proto.transport.value())
            proto.transport.clear()
            for f in frames:
                m = codec.decode(f)
                if m.name == "echo_request":
                    proto.dataReceived(codec.encode_echo_reply(OFP13, m.xid))


def test_ramp_in_groups_until_cap_then_hold_and_count():
    s = Scripted(sessions=10, ramp_group=4)
    s.run.start()
    assert len(s.reactor.tcpClients) == 4
    s.accept()
    assert len(s.reactor.tcpClients) == 4  # the next group waits for the ramp delay
    s.reactor.advance(0.5)
    assert len(s.reactor.tcpClients) == 8
    s.accept()
    s.reactor.advance(0.5)
    assert len(s.reactor.tcpClients) == 10  # the last group is what remains of the cap
    s.accept()
    assert s.run.stop_reason == STOP_CAP and s.run.phase == "hold"
    for _ in range(2):
        s.reactor.advance(1.0)
        s.answer_echoes()
    result = s.results[0]
    assert (result.kept, result.established, result.attempted, result.failed) == (10, 10, 10, 0)
    assert result.capped and not result.emulator_bound
    assert [e for e in s.events if isinstance(e, RampEnded)] == [RampEnded(STOP_CAP, established=10, attempted=10)]


def test_refusal_stops_the_ramp_and_is_recorded():
    s = Scripted(sessions=100, ramp_group=4)
    s.run.start()
    s.accept()
    s.reactor.advance(0.5)
    s.accept(2)
    s.refuse()
    assert s.run.stop_reason == STOP_DROPPING
    s.reactor.advance(2.0)
    s.answer_echoes()
    r = s.results[0]
    assert (r.kept, r.established, r.attempted) == (6, 6, 8)
    assert r.failures == {FAIL_REFUSED: 2}
    assert r.first_failure.session == 7 and r.first_failure.established_before == 6
    assert r.established_before_failure == 6


def test_a_session_counts_once_the_controller_answers_after_its_handshake():
    # A controller that begins handshakes it never serves (it collapsed at its 5th session): the group's last
    # session completed HELLO and FEATURES but its ECHO goes unanswered, so it is not established.
    s = Scripted(sessions=100, ramp_group=4, handshake_timeout=3.0)
    s.run.start()
    s.accept()
    s.reactor.advance(0.5)
    s.accept(confirm=False)
    assert s.run.tally.ready == 4
    s.reactor.advance(3.0)                      # the handshake timer covers the confirming ECHO
    for proto in s.protos[4:]:                  # the switch closed it: the transport reports the close
        assert proto.transport.disconnecting
        proto.connectionLost(Failure(terror.ConnectionDone()))
    assert s.run.stop_reason == STOP_DROPPING
    assert s.run.tally.first_failure.detail == "no ECHO_REPLY after the handshake within 3 s"
    s.reactor.advance(2.0)
    s.answer_echoes(s.protos[:4])
    r = s.results[0]
    assert (r.ccn, r.established, r.kept) == (4, 4, 4)
    assert r.new_failures == {"handshake timeout": 4}


def test_ccn_counts_the_group_members_served_after_a_refusal():
    # The refusal of session 6 arrives before sessions 5, 7 and 8 are answered: they still count, the
    # controller served them; CCn does not depend on the order within a group.
    s = Scripted(sessions=100, ramp_group=4)
    s.run.start()
    s.accept()
    s.reactor.advance(0.5)
    s.accept(1, confirm=False)
    s.refuse(1)
    s.accept(2, confirm=False)
    s.answer_echoes(s.protos[4:])
    s.reactor.advance(2.0)
    s.answer_echoes()
    r = s.results[0]
    assert (r.ccn, r.kept, r.established_before_failure) == (7, 7, 4)
    assert r.new_failures == {FAIL_REFUSED: 1} and r.first_loss_ns == 0


def test_ccn_is_frozen_when_an_established_session_is_lost():
    s = Scripted(sessions=100, ramp_group=4)
    s.run.start()
    s.accept()
    s.reactor.advance(0.5)
    s.accept(2)
    s.protos[0].connectionLost(Failure(terror.ConnectionDone()))     # the controller closes an earlier session
    s.accept(2)                                                     # two more are answered after it
    s.reactor.advance(2.0)
    s.answer_echoes()
    r = s.results[0]
    assert (r.ccn, r.established, r.kept, r.dropped_after_ready) == (6, 8, 7, 1)
    assert r.first_loss_ns > 0 and r.new_failures == {}


def test_hold_probes_keep_alive_and_the_final_round_is_sent_once():
    s = Scripted(sessions=1, ramp_group=1, hold_time=2.0, echo_interval=1.0)
    s.run.start()
    s.accept()
    counts = []
    for _ in range(2):
        s.reactor.advance(1.0)
        frames, _ = codec.split_frames(s.protos[0].transport.value())
        counts.append(sum(codec.decode(f).name == "echo_request" for f in frames))
        s.answer_echoes()
    assert counts == [1, 1]  # one keep-alive at 1 s, one final probe at 2 s (not two)
    assert s.results[0].kept == 1


def test_unanswered_echo_is_not_kept():
    s = Scripted(sessions=3, ramp_group=3, hold_time=1.0, echo_interval=1.0)
    s.run.start()
    s.accept()
    s.reactor.advance(1.0)  # final probe round goes out
    s.answer_echoes(s.protos[:2])
    assert not s.results  # still waiting for the third answer
    s.reactor.advance(1.0)  # echo timeout
    r = s.results[0]
    assert r.kept == 2 and r.failures == {FAIL_ECHO_TIMEOUT: 1}


def test_earlier_session_dropped_during_ramp_stops_it():
    s = Scripted(sessions=100, ramp_group=2)
    s.run.start()
    s.accept()
    s.protos[0].connectionLost(Failure(terror.ConnectionDone()))
    s.reactor.advance(0.5)
    s.accept()
    assert s.run.stop_reason == STOP_DROPPING
    assert s.run.tally.failures == {FAIL_EARLIER_DROPPED: 1}


def test_local_socket_error_is_the_emulators_limit_not_the_controllers():
    s = Scripted(sessions=100, ramp_group=2)
    s.run.start()
    s.accept(1)
    s.refuse(1, exc=lambda: terror.ConnectBindError(errno.EMFILE, "Too many open files"))
    assert s.run.stop_reason == STOP_LOCAL
    s.reactor.advance(2.0)
    s.answer_echoes()
    assert s.results[0].emulator_bound and s.results[0].failures == {FAIL_LOCAL: 1}


def test_stop_request_ends_the_ramp_after_the_current_group():
    s = Scripted(sessions=100, ramp_group=2)
    s.run.start()
    s.run.stop_ramp()
    s.accept()
    assert s.run.stop_reason == STOP_REQUESTED
    assert len(s.reactor.tcpClients) == 2


def test_sessions_spread_over_source_addresses():
    s = Scripted(sessions=5, ramp_group=5, sessions_per_source=2, source_base="127.0.0.9")
    s.run.start()
    assert [c[4] for c in s.reactor.tcpClients] == [("127.0.0.9", 0), ("127.0.0.9", 0), ("127.0.0.10", 0),
                                                    ("127.0.0.10", 0), ("127.0.0.11", 0)]
    assert {c[2].index for c in s.reactor.tcpClients} == {0, 1, 2, 3, 4}
    assert all(c[3] == 5.0 for c in s.reactor.tcpClients)    # RampParams.connect_timeout


def test_source_address_stays_in_loopback():
    assert source_address("127.255.255.254", 1, 1) == "127.255.255.255"
    with pytest.raises(ValueError, match="outside 127.0.0.0/8"):
        source_address("127.255.255.255", 1, 1)


def test_classify_connect_failures():
    assert classify_connect_failure(Failure(terror.ConnectionRefusedError()))[0] == FAIL_REFUSED
    assert classify_connect_failure(Failure(terror.TimeoutError()))[0] == "connect timeout"
    local = terror.ConnectError(osError=errno.EADDRNOTAVAIL)
    assert classify_connect_failure(Failure(local))[0] == FAIL_LOCAL


def test_a_stop_before_the_ramp_starts_ends_it_at_once():
    s = Scripted(sessions=100, ramp_group=2)
    s.run.stop_ramp()
    s.run.start()
    assert s.run.stop_reason == STOP_REQUESTED and not s.reactor.tcpClients


def test_progress_events_are_typed():
    s = Scripted(sessions=4, ramp_group=4)
    s.run.start()
    s.reactor.advance(1.0)
    assert isinstance(s.events[0], Progress) and s.events[0].attempted == 4


class Owner(RampOwner):
    def __init__(self):
        self.failed, self.ready = [], []

    def connect_failed(self, index, key, kind, detail):
        self.failed.append((key, kind))

    def session_ready(self, session):
        self.ready.append(session)


def make_ramp(reactor, keys, **policy):
    owner = Owner()
    ramp = Ramp(reactor, ("127.0.0.1", 6653), keys, None, owner, **policy)
    ramp.build = lambda index, key: _proto(reactor, ramp, key)
    return ramp, owner


def _proto(reactor, listener, key):
    from emulator.protocol import SwitchProtocol, SwitchSpec
    return SwitchProtocol(SwitchSpec.simple(key, (OFP13,)), reactor, listener)


def test_ramp_on_the_clock_opens_groups_without_waiting_and_retries_failed_connects():
    # The fabric's policy: groups every delay s whatever the first group did; a refused connect is tried again.
    reactor = MemoryReactorClock()
    ramp, owner = make_ramp(reactor, [11, 12, 13], group=2, delay=0.5, settle_first=False, retries=1,
                            retry_delay=1.0)
    ramp.start()
    assert len(reactor.tcpClients) == 2
    reactor.advance(0.5)
    assert len(reactor.tcpClients) == 3                 # the second group did not wait for the first
    factory = reactor.tcpClients[0][2]
    connector = reactor.connectors[0]
    factory.clientConnectionFailed(connector, Failure(terror.ConnectionRefusedError()))
    assert ramp.retried == 1 and not owner.failed       # retried after retry_delay, not failed
    factory.clientConnectionFailed(connector, Failure(terror.ConnectionRefusedError()))
    assert owner.failed == [(11, FAIL_REFUSED)]         # the retry failed too
    for _host, _port, f, _t, _b in reactor.tcpClients[1:]:
        p = f.buildProtocol(None)
        p.makeConnection(StringTransport())
        p.dataReceived(codec.encode_hello(OFP13, 1, (OFP13,)) + codec.header(OFP13, 5, 8, 2))
    assert ramp.done.called and ramp.ready == 2 and ramp.failed == 1


def test_ramp_unknown_policy_is_refused():
    with pytest.raises(TypeError, match="unknown ramp policy"):
        Ramp(MemoryReactorClock(), ("127.0.0.1", 1), [], None, groups=3)

