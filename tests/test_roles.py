"""OpenFlow 1.3 multi-controller roles, driven by scripted controllers (StringTransport and task.Clock, no
sockets, no sleeps).

The first tests port the behaviours OFTest checks in tests-1.3/role_request.py (RoleRequestNochange,
EqualToSlave, EqualToMaster, SlaveToMaster, RolePermissions, SlaveNoPacketIn, RoleSwitch); the others cover
what a cluster of controllers needs of the fabric: asynchronous messages fanned out by role, a keep-alive
that tells a frozen controller, one pipeline shared by a switch's connections, the timeline, and the
reconnecting ramp and the shard's commands behind RFC 8456 §5.4.1 (controller failover).
"""

import dataclasses
import itertools
import struct

import pytest
from twisted.internet import error as terror
from twisted.internet.task import Clock
from twisted.internet.testing import MemoryReactorClock, StringTransport
from twisted.python.failure import Failure

from emulator import codec
from emulator import commands as c
from emulator import flowcodec as fc
from emulator import params as pm
from emulator import roles as rl
from emulator import topology as tp
from emulator.codec import OFP10, OFP13
from emulator.fabric import Fabric
from emulator.params import FabricParams
from emulator.protocol import SessionListener, SessionRules, SwitchProtocol, SwitchSpec

NO_HANDSHAKE_TIMEOUT = SessionRules(handshake_timeout=0)

EQUAL, MASTER, SLAVE, NOCHANGE = rl.EQUAL, rl.MASTER, rl.SLAVE, rl.NOCHANGE
LLDP = bytes.fromhex("0180c200000e" "020000000201" "88cc") + bytes(14)
FRAME = bytes.fromhex("0e0000020000" "0e0000010000" "0800") + bytes(46)     # host 1 -> host 2 of linear(2)


def add_mod64(a: int, b: int) -> int:
    return (a + b) & (2 ** 64 - 1)


class Controller:
    """A scripted controller on one connection of an emulated switch: what it sends goes into the switch's
    ``dataReceived``; what the switch wrote is read back from the transport."""

    xids = itertools.count(100)

    def __init__(self, fabric: Fabric, dpid: int, clock, name: str):
        self.sw, self.tr = fabric.open_in_memory(dpid, clock, controller=name)
        self.name = name

    def send(self, *messages: bytes) -> None:
        for m in messages:
            self.sw.dataReceived(m)

    def read(self) -> list:
        frames, rest = codec.split_frames(self.tr.value())
        assert rest == b""
        self.tr.clear()
        return [codec.decode(f) for f in frames]

    def transact(self, message: bytes) -> list:
        self.read()
        self.send(message)
        return self.read()

    def role(self, role: int, gen: int = 0) -> tuple:
        """A role request expected to succeed: (role, generation_id) of the reply."""
        (reply,) = self.transact(codec.encode_role_request(next(self.xids), role, gen))
        assert reply.name == "role_reply", reply
        if role != NOCHANGE:
            assert reply.fields["role"] == role
        return reply.fields["role"], reply.fields["generation_id"]

    def role_refused(self, role: int, gen: int, code: int) -> None:
        (reply,) = self.transact(codec.encode_role_request(next(self.xids), role, gen))
        assert reply.name == "error" and (reply.fields["err_type"], reply.fields["code"]) == (
            codec.OFPET_ROLE_REQUEST_FAILED, code)

    def lose(self, exc=None) -> None:
        self.sw.connectionLost(Failure(exc or terror.ConnectionDone()))


def cluster(*names, data_plane=False, version=OFP13, dpid=1, **kw):
    """Switch ``dpid`` of a two-switch line connected to one scripted controller per name."""
    ticks = itertools.count(1_000_000, 1000)
    clock = Clock()
    fabric = Fabric(tp.linear(2), versions=(version,), now_ns=lambda: next(ticks), clock=clock,
                    params=FabricParams(host_refresh=0, host_delay=0, data_plane=data_plane, **kw))
    return fabric, clock, [Controller(fabric, dpid, clock, name) for name in names]


# --------------------------------------------------------------------------- OFTest role_request.py

def test_role_request_nochange_answers_equal_and_keeps_the_generation():
    _, _, (ctl,) = cluster("c1")
    role, gen = ctl.role(NOCHANGE)
    assert role == EQUAL
    assert ctl.role(NOCHANGE) == (EQUAL, gen)


@pytest.mark.parametrize("target", [SLAVE, MASTER], ids=["equal_to_slave", "equal_to_master"])
def test_equal_to_a_role_and_back_with_fresh_and_stale_generations(target):
    _, _, (ctl,) = cluster("c1")
    _, gen0 = ctl.role(NOCHANGE)
    _, gen1 = ctl.role(target, gen0)                             # unchanged generation: no cache yet
    assert gen1 == gen0
    ctl.role(EQUAL)
    _, gen2 = ctl.role(target, add_mod64(gen1, 1))              # the smallest greater generation
    assert gen2 == add_mod64(gen1, 1)
    ctl.role(EQUAL)
    _, gen3 = ctl.role(target, add_mod64(gen2, 2 ** 63 - 1))    # the largest greater generation
    ctl.role(EQUAL)
    ctl.role_refused(target, add_mod64(gen3, -1), codec.OFPRRFC_STALE)          # the least stale
    assert ctl.role(NOCHANGE) == (EQUAL, gen3)
    ctl.role_refused(target, add_mod64(gen3, -(2 ** 63)), codec.OFPRRFC_STALE)  # the most stale
    assert ctl.role(NOCHANGE) == (EQUAL, gen3)


def test_slave_to_master_and_back():
    _, _, (ctl,) = cluster("c1")
    _, gen0 = ctl.role(NOCHANGE)
    _, gen1 = ctl.role(SLAVE, gen0)
    _, gen2 = ctl.role(MASTER, gen1)
    ctl.role(SLAVE, gen2)
    _, gen3 = ctl.role(MASTER, add_mod64(gen2, 1))
    ctl.role(SLAVE, gen3)
    _, gen4 = ctl.role(MASTER, add_mod64(gen3, 2 ** 63 - 1))
    ctl.role(SLAVE, gen4)
    ctl.role_refused(MASTER, add_mod64(gen4, -1), codec.OFPRRFC_STALE)
    assert ctl.role(NOCHANGE) == (SLAVE, gen4)
    ctl.role_refused(MASTER, add_mod64(gen4, -(2 ** 63)), codec.OFPRRFC_STALE)
    assert ctl.role(NOCHANGE) == (SLAVE, gen4)


@pytest.mark.parametrize("cached,gen,is_stale", [
    (None, 0, False), (5, 5, False), (5, 6, False), (5, add_mod64(5, 2 ** 63 - 1), False), (5, 4, True),
    (5, add_mod64(5, -(2 ** 63)), True), (2 ** 64 - 1, 0, False), (0, 2 ** 64 - 1, True)])
def test_generation_staleness_is_a_signed_64_bit_difference(cached, gen, is_stale):
    assert rl.stale(gen, cached) is is_stale


def test_equal_requests_leave_the_generation_cache_alone_and_bad_roles_are_refused():
    _, _, (ctl,) = cluster("c1")
    ctl.role(SLAVE, 100)
    assert ctl.role(EQUAL, 5) == (EQUAL, 100)                 # not checked, not cached
    ctl.role_refused(SLAVE, 99, codec.OFPRRFC_STALE)
    ctl.role_refused(7, 200, codec.OFPRRFC_BAD_ROLE)
    assert ctl.role(NOCHANGE) == (EQUAL, 100)


def test_a_new_master_demotes_the_other_and_equal_leaves_the_master_alone():
    # OFTest's RoleSwitch (disabled there: it needs a switch connected to two controllers; the fabric is one).
    fabric, _, (c0, c1) = cluster("c0", "c1")
    assert c0.role(NOCHANGE)[0] == c1.role(NOCHANGE)[0] == EQUAL
    c0.role(MASTER, 0)
    c1.role(SLAVE, 0)
    assert (c0.role(NOCHANGE)[0], c1.role(NOCHANGE)[0]) == (MASTER, SLAVE) and fabric.master_of(1) == "c0"
    c1.role(MASTER, 0)
    assert (c0.role(NOCHANGE)[0], c1.role(NOCHANGE)[0]) == (SLAVE, MASTER) and fabric.sessions[1] is c1.sw
    c0.role(MASTER, 0)
    assert (c0.role(NOCHANGE)[0], c1.role(NOCHANGE)[0]) == (MASTER, SLAVE)
    c1.role(EQUAL, 0)
    assert (c0.role(NOCHANGE)[0], c1.role(NOCHANGE)[0]) == (MASTER, EQUAL)
    c0.role(SLAVE, 0)
    c1.role(SLAVE, 0)
    assert (c0.role(NOCHANGE)[0], c1.role(NOCHANGE)[0]) == (SLAVE, SLAVE) and fabric.master_of(1) is None
    demoted = [e for e in fabric.timeline_report()[1]["events"] if e["event"] == "demoted"]
    assert [(e["controller"], e["by"]) for e in demoted] == [("c0", "c1"), ("c1", "c0")]


def writes(xids):
    """One of each state-changing message OpenFlow 1.3 refuses from a slave (bodies the switch never parses
    when it refuses; accepted silently, or applied, otherwise)."""
    x = iter(xids)
    packet_out = codec.encode_packet_out(OFP13, next(x), codec.NO_BUFFER, 0xFFFFFFFD, 0xFFFFFFFB, b"")
    delete_all = fc.encode_flow_mod_13(next(x), {}, command=fc.DELETE, table_id=fc.OFPTT_ALL)
    group_delete_all = struct.pack("!HBxI", 2, 0, 0xFFFFFFFC)     # command DELETE, group ALL
    return [packet_out, delete_all,
            codec.header(OFP13, codec.msg_type(OFP13, "group_mod"), 16, next(x)) + group_delete_all,
            codec.header(OFP13, codec.msg_type(OFP13, "port_mod"), 40, next(x)) + bytes(32),
            codec.header(OFP13, codec.msg_type(OFP13, "table_mod"), 16, next(x)) + bytes(8),
            codec.header(OFP13, codec.msg_type(OFP13, "meter_mod"), 16, next(x)) + bytes(8)]


@pytest.mark.parametrize("data_plane", [False, True])
def test_role_permissions_only_a_slave_is_refused_its_writes(data_plane):
    fabric, _, (ctl,) = cluster("c1", data_plane=data_plane)

    def is_slave_errors():
        ctl.read()
        ctl.send(*writes(range(1, 7)), codec.header(OFP13, codec.msg_type(OFP13, "barrier_request"), 8, 99))
        replies = ctl.read()
        assert replies[-1].name == "barrier_reply"
        errors = [m for m in replies if m.name == "error"]
        assert all((m.fields["err_type"], m.fields["code"]) == (codec.OFPET_BAD_REQUEST, codec.OFPBRC_IS_SLAVE)
                   for m in errors)
        return [m.xid for m in errors]

    assert is_slave_errors() == []
    _, gen = ctl.role(NOCHANGE)
    ctl.role(MASTER, gen)
    assert is_slave_errors() == []
    ctl.role(SLAVE, gen)
    assert is_slave_errors() == [1, 2, 3, 4, 5, 6]              # exactly the six writes, none applied
    if data_plane:
        applied = fabric.flow_mods                              # the deletes of the equal and master rounds
        ctl.send(fc.encode_flow_mod_13(50, {"eth_dst": 1}, (2,), priority=5))
        (err,) = ctl.read()
        assert err.fields["code"] == codec.OFPBRC_IS_SLAVE and fabric.pipelines[1].count == 0
        assert fabric.flow_mods == applied == 2
    # a slave still reads: barrier, config, description, role, asynchronous configuration
    ctl.send(codec.header(OFP13, codec.GET_CONFIG_REQUEST, 8, 60), codec.header(OFP13, 18, 16, 61) + bytes(8),
             codec.header(OFP13, codec.msg_type(OFP13, "get_async_request"), 8, 62))
    assert [m.name for m in ctl.read()] == ["get_config_reply", "stats_reply", "get_async_reply"]
    ctl.role(EQUAL)
    assert is_slave_errors() == []


def test_slave_gets_no_packet_in_master_and_equal_do():
    fabric, _, (ctl,) = cluster("c1", data_plane=True)       # table-miss: to the controller

    def packet_ins():
        ctl.read()
        fabric.send_at(tp.Endpoint(1, 2), FRAME)
        return [m for m in ctl.read() if m.name == "packet_in"]

    _, gen = ctl.role(NOCHANGE)
    ctl.role(MASTER, gen)
    (pin,) = packet_ins()
    assert codec.packet_in_fields(codec.header(OFP13, codec.PACKET_IN, 8 + len(pin.body), 0) + pin.body)["data"] \
        == FRAME
    ctl.role(SLAVE, gen)
    assert packet_ins() == [] and fabric.packet_ins_unwanted == 1
    ctl.role(EQUAL, gen)
    assert len(packet_ins()) == 1


# --------------------------------------------------------------------------- asynchronous configuration

def test_get_async_gives_the_openflow_defaults_and_set_async_changes_them():
    fabric, _, (ctl,) = cluster("c1", data_plane=True)
    (reply,) = ctl.transact(codec.header(OFP13, codec.msg_type(OFP13, "get_async_request"), 8, 7))
    assert (reply.name, reply.xid) == ("get_async_reply", 7)
    # master/equal: PACKET_IN NO_MATCH|ACTION, PORT_STATUS all, FLOW_REMOVED all; slave: PORT_STATUS only
    assert reply.fields["masks"] == (0b11, 0, 0b111, 0b111, 0b1111, 0)
    ctl.role(SLAVE, 1)
    fabric.send_at(tp.Endpoint(1, 2), FRAME)
    assert [m.name for m in ctl.read()] == []
    masks = (0, 1 << codec.OFPR_NO_MATCH, 0b111, 0, 0, 0)      # a slave that asks for table misses
    assert ctl.transact(codec.encode_set_async(8, masks)) == []
    fabric.send_at(tp.Endpoint(1, 2), FRAME)
    assert [m.name for m in ctl.read()] == ["packet_in"]
    (reply,) = ctl.transact(codec.header(OFP13, codec.msg_type(OFP13, "get_async_request"), 8, 9))
    assert reply.fields["masks"] == masks
    ctl.role(MASTER, 1)                                         # a master mask of 0: no PACKET_IN any more
    fabric.send_at(tp.Endpoint(1, 2), FRAME)
    assert ctl.read() == []
    fabric.set_link(tp.Endpoint(1, 1), up=False)                # PORT_STATUS: still wanted as master
    assert [m.name for m in ctl.read()] == ["port_status"]


def test_async_config_messages_agree_with_ryu():
    pytest.importorskip("ryu.ofproto.ofproto_parser", reason="Ryu is installed by tox (see tox.ini)")
    from ryu.ofproto import ofproto_parser
    from ryu.ofproto import ofproto_v1_3 as o13
    from ryu.ofproto import ofproto_v1_3_parser as p13
    from ryu.ofproto.ofproto_protocol import ProtocolDesc

    dp = ProtocolDesc(OFP13)
    msg = p13.OFPSetAsync(dp, [1, 2], [3, 4], [5, 6])
    msg.serialize()
    assert codec.decode(bytes(msg.buf)).fields["masks"] == (1, 2, 3, 4, 5, 6)
    data = codec.encode_get_async_reply(4, (1, 2, 3, 4, 5, 6))
    reply = ofproto_parser.msg(dp, OFP13, data[1], len(data), 4, data)
    assert (reply.packet_in_mask, reply.port_status_mask, reply.flow_removed_mask) == ([1, 2], [3, 4], [5, 6])
    req = p13.OFPRoleRequest(dp, o13.OFPCR_ROLE_SLAVE, 2 ** 64 - 1)
    req.xid = 5
    req.serialize()
    assert bytes(req.buf) == codec.encode_role_request(5, o13.OFPCR_ROLE_SLAVE, 2 ** 64 - 1)
    assert (codec.OFPET_ROLE_REQUEST_FAILED, codec.OFPRRFC_STALE, codec.OFPRRFC_BAD_ROLE, codec.OFPBRC_IS_SLAVE) == (
        o13.OFPET_ROLE_REQUEST_FAILED, o13.OFPRRFC_STALE, o13.OFPRRFC_BAD_ROLE, o13.OFPBRC_IS_SLAVE)


# --------------------------------------------------------------------------- a switch of a cluster

def test_packet_in_port_status_and_flow_removed_fan_out_by_role():
    fabric, _, (a, b, s) = cluster("master", "equal", "slave", data_plane=True)
    a.role(MASTER, 1)
    s.role(SLAVE, 1)
    for ctl in (a, b, s):
        ctl.read()
    fabric.send_at(tp.Endpoint(1, 2), FRAME)
    assert [len([m for m in ctl.read() if m.name == "packet_in"]) for ctl in (a, b, s)] == [1, 1, 0]
    assert fabric.packet_ins_data == 1                          # one PACKET_IN however many controllers get it
    fabric.set_link(tp.Endpoint(1, 1), up=False)
    assert [[m.name for m in ctl.read()] for ctl in (a, b, s)] == [["port_status"]] * 3
    assert fabric.change["notices"] == 1
    a.send(fc.encode_flow_mod_13(20, {"eth_dst": 5}, (2,), priority=9, flags=fc.FF_SEND_FLOW_REM))
    a.send(fc.encode_flow_mod_13(21, {"eth_dst": 5}, (), priority=9, command=fc.DELETE_STRICT))
    assert [[m.name for m in ctl.read()] for ctl in (a, b, s)] == [["flow_removed"], ["flow_removed"], []]
    assert fabric.flow_removed_sent == 1


def test_the_pipeline_survives_the_loss_of_one_of_two_connections():
    fabric, clock, (a, b) = cluster("a", "b", data_plane=True)
    pipeline = fabric.pipelines[1]
    assert a.sw.pipeline is b.sw.pipeline is pipeline and fabric.sessions[1] is a.sw
    a.send(fc.encode_flow_mod_13(20, {"eth_dst": 0x0E0000020000}, (1,), priority=9))
    a.role(MASTER, 3)
    a.lose(terror.ConnectionLost())
    assert fabric.pipelines[1] is pipeline and pipeline.count == 1 and fabric.sessions[1] is b.sw
    assert fabric.connections[1] == [b.sw] and fabric.master_of(1) is None
    before = fabric.frames_forwarded
    fabric.send_at(tp.Endpoint(1, 2), FRAME)                    # still forwarded by a's entry, toward switch 2
    assert fabric.frames_forwarded == before + 1
    b.lose()
    assert 1 not in fabric.pipelines and 1 not in fabric.sessions and 1 not in fabric.connections
    c = Controller(fabric, 1, clock, "c")                       # the switch starts afresh
    assert fabric.pipelines[1].count == 0 and c.role(NOCHANGE) == (EQUAL, 0)
    c.role(SLAVE, 1)                                            # the generation cache went with the last one


def test_identical_flow_mods_from_two_equal_controllers_are_counted_once():
    fabric, _, (a, b) = cluster("a", "b", data_plane=True)
    flow = fc.encode_flow_mod_13(20, {"eth_dst": 5}, (2,), priority=9)
    a.send(flow)
    b.send(flow)                                                # both answered one PACKET_IN
    assert (fabric.flow_mods, fabric.flow_mods_duplicate, len(fabric.flow_mod_times[1])) == (1, 1, 1)
    assert fabric.pipelines[1].count == 1
    b.send(fc.encode_flow_mod_13(21, {"eth_dst": 5}, (1,), priority=9))     # not identical: a change
    assert (fabric.flow_mods, fabric.flow_mods_duplicate) == (2, 1)
    b.send(fc.encode_flow_mod_13(22, {"eth_dst": 5}, (1,), priority=9))     # the same controller again
    assert (fabric.flow_mods, fabric.flow_mods_duplicate) == (3, 1)
    assert fabric.status()["data_plane"]["flow_mods_duplicate"] == 1


def test_openflow10_has_no_roles_and_every_connection_gets_packet_ins():
    fabric, _, (a, b) = cluster("a", "b", version=OFP10)
    (err,) = a.transact(codec.header(OFP10, 24, 24, 3) + struct.pack("!I4xQ", MASTER, 1))
    assert err.fields["code"] == codec.OFPBRC_BAD_TYPE
    fabric.deliver(tp.Endpoint(1, 2), LLDP, 0)
    assert [[m.name for m in ctl.read()] for ctl in (a, b)] == [["packet_in"], ["packet_in"]]
    assert fabric.relayed == 1


# --------------------------------------------------------------------------- keep-alive

def keepalive_switch(interval=1.0, timeout=3.0):
    clock = Clock()
    closed = []

    class Recorder(SessionListener):
        def session_closed(self, s, kind, detail):
            closed.append((kind, detail))

    sw = SwitchProtocol(SwitchSpec.simple(7), clock, Recorder(),
                        SessionRules(handshake_timeout=0, echo_interval=interval, echo_timeout=timeout),
                        now_ns=lambda: int(clock.seconds() * 1e9))
    tr = StringTransport()
    sw.makeConnection(tr)
    sw.dataReceived(codec.encode_hello(OFP13, 1, (OFP13,)) + codec.header(OFP13, codec.FEATURES_REQUEST, 8, 2))
    tr.clear()
    return sw, tr, clock, closed


def echo_requests(tr):
    frames, _ = codec.split_frames(tr.value())
    tr.clear()
    return [codec.decode(f) for f in frames if f[1] == codec.ECHO_REQUEST]


def test_keepalive_closes_a_connection_whose_controller_went_silent():
    sw, tr, clock, closed = keepalive_switch()
    for _ in range(3):                                          # an answering controller stays connected
        clock.advance(1.0)
        (req,) = echo_requests(tr)
        sw.dataReceived(codec.encode_echo_reply(OFP13, req.xid, req.body))
    clock.pump([0.5] * 7)                                       # frozen (SIGSTOP): TCP up, no reply
    assert not tr.disconnecting and len(echo_requests(tr)) == 3
    clock.advance(0.5)                                          # the first unanswered one is 3 s old
    assert tr.disconnecting and tr.disconnected                  # aborted: a frozen peer reads nothing
    sw.connectionLost(Failure(terror.ConnectionAborted()))
    assert closed == [(c.CLOSE_ECHO_TIMEOUT, "no ECHO_REPLY within 3 s (keep-alive every 1 s)")]
    assert clock.getDelayedCalls() == []


def test_keepalive_is_off_by_default_and_stops_with_the_connection():
    sw, tr, clock, closed = keepalive_switch(interval=0.0)
    clock.advance(60)
    assert echo_requests(tr) == [] and clock.getDelayedCalls() == []
    sw, tr, clock, closed = keepalive_switch()
    sw.connectionLost(Failure(terror.ConnectionDone()))
    assert clock.getDelayedCalls() == [] and closed[0][0] == c.CLOSE_BY_PEER


# --------------------------------------------------------------------------- the timeline

def test_timeline_records_readiness_roles_loss_and_the_survivors_first_reactions():
    fabric, _, (a, b) = cluster("a", "b", data_plane=True)
    a.role(MASTER, 1)
    a.send(fc.encode_flow_mod_13(20, {"eth_dst": 5}, (2,)))     # a's first FLOW_MOD as master
    a.send(fc.encode_flow_mod_13(21, {"eth_dst": 6}, (2,)))     # not a first
    b.role(SLAVE, 1)
    b.role_refused(MASTER, 0, codec.OFPRRFC_STALE)
    a.lose(terror.ConnectionLost())                             # the master dies
    b.send(codec.encode_packet_out(OFP13, 30, codec.NO_BUFFER, 0xFFFFFFFD, 1, LLDP))   # refused: still slave
    b.role(MASTER, 2)                                           # the survivor takes over
    b.send(codec.encode_packet_out(OFP13, 31, codec.NO_BUFFER, 0xFFFFFFFD, 1, LLDP))
    b.send(fc.encode_flow_mod_13(32, {"eth_dst": 7}, (2,)))
    rep = fabric.timeline_report()[1]
    seen = [(e["event"], e["controller"]) for e in rep["events"]]
    assert seen == [("ready", "a"), ("ready", "b"), ("role_request", "a"), ("first_flow_mod", "a"),
                    ("role_request", "b"), ("role_request", "b"), ("lost", "a"), ("first_lldp_out", "b"),
                    ("role_request", "b"), ("first_lldp_out", "b"), ("first_flow_mod", "b")]
    ev = rep["events"]
    assert [e["t_ns"] for e in ev] == sorted(e["t_ns"] for e in ev)
    assert (ev[2]["role"], ev[2]["generation_id"], ev[2]["outcome"]) == ("master", 1, "master")
    assert ev[3]["after"] == "master" and ev[3]["role"] == "master"
    assert ev[5]["outcome"] == "stale" and ev[6]["kind"] == c.CLOSE_RESET
    assert ev[7]["after"] == "loss of a" and ev[7]["refused"] == "IS_SLAVE"
    assert ev[9]["after"] == "master" and ev[9]["after_ns"] == ev[8]["t_ns"] and "refused" not in ev[9]
    assert rep["roles"] == [["b", "master"]] and rep["master"] == "b" and rep["dropped"] == 0
    assert fabric.timeline_report(since_ns=ev[8]["t_ns"])[1]["events"][0]["event"] == "role_request"


def test_timeline_is_bounded():
    tl = rl.SwitchTimeline(limit=3)
    for i in range(5):
        tl.add(i, "ready", f"c{i}")
    assert [e["controller"] for e in tl.report()["events"]] == ["c2", "c3", "c4"] and tl.report()["dropped"] == 2
    with pytest.raises(ValueError):
        rl.SwitchTimeline(limit=0)


# --------------------------------------------------------------------------- parameters and commands

@pytest.mark.parametrize("kw,message", [
    ({"echo_interval": -1}, "fabric echo interval must be a non-negative number of seconds"),
    ({"echo_interval": float("nan")}, "fabric echo interval must be"),
    ({"echo_interval": "1"}, "fabric echo interval must be"),
    ({"echo_timeout": 0}, "fabric echo timeout must be a positive number"),
    ({"reconnect_delay": 0}, "fabric reconnect delay must be a positive number"),
    ({"reconnect_delay": 2.0, "reconnect_max_delay": 1.0}, "no smaller than the reconnect delay"),
    ({"timeline_limit": 0}, "fabric timeline limit must be a positive integer"),
    ({"table_miss": "flood"}, "fabric table miss must be one of controller, drop, table"),
])
def test_fabric_params_refuse_bad_values_in_one_line(kw, message):
    with pytest.raises(ValueError, match=message) as info:
        pm.FabricParams(**kw)
    assert "\n" not in str(info.value)


def test_fabric_params_default_to_no_keepalive_and_no_reconnect_and_cross_the_wire():
    f = pm.FabricParams()
    assert (f.echo_interval, f.reconnect) == (0.0, False)
    g = dataclasses.replace(f, echo_interval=1.0, reconnect=True)
    assert c.from_wire(c.to_wire(g)) == g


def test_connect_fabric_takes_one_controller_or_a_cluster():
    ramp = pm.RampParams()
    assert c.ConnectFabric(("127.0.0.1", 6653), {}, ramp).controllers() == (("127.0.0.1", 6653),)
    two = c.ConnectFabric((("127.0.0.1", 6653), ["127.0.0.1", 6753]), {}, ramp)
    assert two.controllers() == (("127.0.0.1", 6653), ("127.0.0.1", 6753))
    assert c.from_wire(c.to_wire(two)) == two
    for bad in [(), ("127.0.0.1", 0), (("127.0.0.1", 1), ("127.0.0.1", 1)), (("h",),)]:
        with pytest.raises(c.EmulatorError):
            c.ConnectFabric(bad, {}, ramp).controllers()


def test_timeline_answers_merge_and_name_the_master():
    one = c.Timeline({1: {"events": [{"t_ns": 5, "event": "ready", "controller": "x"}], "dropped": 0,
                          "roles": [["x", "master"]], "master": "x"}}, 1, (10,))
    two = c.Timeline({2: {"events": [{"t_ns": 3, "event": "lost", "controller": "y"}], "dropped": 0, "roles": [],
                          "master": None}}, 2, (11,))
    m = c.Timeline.merge([one, two])
    assert m.master_of(1) == "x" and m.master_of(2) is None and m.master_of(3) is None
    assert m.roles_of(1) == [["x", "master"]] and m.flow_mods_duplicate == 3 and m.pids == (10, 11)
    assert [(e["dpid"], e["event"]) for e in m.events()] == [(2, "lost"), (1, "ready")]
    assert m.events("ready") == [{"t_ns": 5, "event": "ready", "controller": "x", "dpid": 1}]


# --------------------------------------------------------------------------- the reconnecting ramp, the shard

def test_ramp_reconnects_each_key_with_exponential_backoff_until_closed():
    from emulator.ramp import Ramp, RampLedger

    reactor = MemoryReactorClock()
    owner = RampLedger()
    ramp = Ramp(reactor, ("127.0.0.1", 6653), [(1, 0), (1, 1)], None, owner, settle_first=False, delay=0,
                address_of=lambda key: ("127.0.0.1", 6653 + 100 * key[1]), reconnect=True, reconnect_delay=0.25,
                reconnect_max_delay=1.0)
    ramp.build = lambda index, key: SwitchProtocol(SwitchSpec.simple(key[0]), reactor, ramp, NO_HANDSHAKE_TIMEOUT)
    ramp.start()
    assert [(h, p) for h, p, *_ in reactor.tcpClients] == [("127.0.0.1", 6653), ("127.0.0.1", 6753)]

    def up(i):
        proto = reactor.tcpClients[i][2].buildProtocol(None)
        proto.makeConnection(StringTransport())
        proto.dataReceived(codec.encode_hello(OFP13, 1, (OFP13,)) + codec.header(OFP13, 5, 8, 2))
        return proto

    first, _ = up(0), up(1)
    assert ramp.done.called and ramp.ready == 2
    first.connectionLost(Failure(terror.ConnectionLost()))
    reactor.advance(0.24)
    assert len(reactor.tcpClients) == 2
    reactor.advance(0.01)
    assert reactor.tcpClients[2][:2] == ("127.0.0.1", 6653)    # only the lost key reconnects
    waits = []
    for _ in range(4):                                          # the controller is still down: 0.5, 1, 1, 1 s
        n = len(reactor.tcpClients)
        reactor.tcpClients[-1][2].clientConnectionFailed(reactor.connectors[-1],
                                                         Failure(terror.ConnectionRefusedError()))
        t = 0
        while len(reactor.tcpClients) == n:
            reactor.advance(0.25)
            t += 0.25
        waits.append(t)
    assert waits == [0.5, 1.0, 1.0, 1.0] and ramp.reconnects == 5 and owner.failures == []
    again = up(len(reactor.tcpClients) - 1)
    assert ramp.reconnected == 1 and ramp.ready == 2            # the ramp's own count is of first sessions
    again.connectionLost(Failure(terror.ConnectionDone()))
    ramp.close()                                                # the fabric is closing: no more tries
    reactor.advance(10)
    assert len(reactor.tcpClients) == 7 and reactor.getDelayedCalls() == []


def test_ramp_does_not_reconnect_what_the_emulator_closed_itself():
    from emulator.ramp import Ramp, RampLedger

    reactor = MemoryReactorClock()
    ramp = Ramp(reactor, ("127.0.0.1", 6653), [1], None, RampLedger(), reconnect=True)
    ramp.build = lambda index, key: SwitchProtocol(SwitchSpec.simple(key), reactor, ramp, NO_HANDSHAKE_TIMEOUT)
    ramp.start()
    proto = reactor.tcpClients[0][2].buildProtocol(None)
    proto.makeConnection(StringTransport())
    proto.abort(c.CLOSE_LOCAL, "switch down")
    proto.connectionLost(Failure(terror.ConnectionDone()))
    reactor.advance(10)
    assert len(reactor.tcpClients) == 1


class Channel(list):
    """What a shard sends its harness, read back as (kind, call id, message)."""

    def answers(self):
        return [(kind, call, c.from_wire(p) if kind != "error" else p) for kind, call, p in self]


def test_a_shard_connects_each_switch_to_two_controllers_and_answers_the_timeline():
    from emulator.shard import Shard

    reactor = MemoryReactorClock()
    out = Channel()
    shard = Shard(reactor, out.append)
    topo = tp.linear(2)
    fabric = pm.FabricParams(host_refresh=0, echo_interval=1.0, echo_timeout=2.0, reconnect=True)
    shard.dispatch(1, c.DeployFabric(topo.to_dict(), (1, 2), (OFP13,), fabric))
    controllers = (("127.0.0.1", 6653), ("127.0.0.1", 6753))
    shard.dispatch(2, c.ConnectFabric(controllers, {}, pm.RampParams(ramp_delay=0)))
    assert sorted(p for _h, p, *_ in reactor.tcpClients) == [6653, 6653, 6753, 6753]
    ctl = {}
    for _host, port, factory, _t, _b in reactor.tcpClients:
        proto = factory.buildProtocol(None)
        proto.makeConnection(StringTransport())
        proto.dataReceived(codec.encode_hello(OFP13, 1, (OFP13,)) + codec.header(OFP13, 5, 8, 2))
        ctl[(proto.spec.datapath_id, port)] = proto
    for proto in ctl.values():
        proto.transport.clear()
    for dpid in (1, 2):
        ctl[(dpid, 6653)].dataReceived(codec.encode_role_request(3, MASTER, 10))
        ctl[(dpid, 6753)].dataReceived(codec.encode_role_request(4, SLAVE, 10))
    shard.dispatch(3, c.GetTimeline())
    answers = out.answers()
    assert [type(p).__name__ for _, _, p in answers] == ["FabricReady", "Connected", "Timeline"]
    assert answers[1][2].connected == 4
    tl = answers[2][2]
    assert tl.master_of(1) == tl.master_of(2) == "127.0.0.1:6653"
    assert tl.roles_of(1) == [["127.0.0.1:6653", "master"], ["127.0.0.1:6753", "slave"]]
    # The master freezes: the slave answers its keep-alive, the master does not.
    reactor.advance(1.0)
    for (_dpid, port), proto in ctl.items():
        frames, _ = codec.split_frames(proto.transport.value())
        proto.transport.clear()
        if port == 6753:
            for f in frames:
                if f[1] == codec.ECHO_REQUEST:
                    proto.dataReceived(codec.encode_echo_reply(OFP13, codec.decode(f).xid))
    reactor.advance(2.0)
    frozen = [p for (d, port), p in ctl.items() if port == 6653]
    assert all(p.transport.disconnected for p in frozen)
    for p in frozen:
        p.connectionLost(Failure(terror.ConnectionAborted()))
    shard.dispatch(4, c.GetTimeline(dpids=(1,)))
    tl = out.answers()[-1][2]
    lost = tl.events("lost")
    assert [(e["dpid"], e["controller"], e["kind"]) for e in lost] == [(1, "127.0.0.1:6653", c.CLOSE_ECHO_TIMEOUT)]
    assert tl.master_of(1) is None and tl.roles_of(1) == [["127.0.0.1:6753", "slave"]]
    shard.dispatch(5, c.GetFabricState())
    state = out.answers()[-1][2]
    assert state.ready == 2 and state.counters["connections"] == 2 and state.sessions_lost == 2
    reactor.advance(0.25)                                       # each switch reconnects to the frozen one
    assert sorted(p for _h, p, *_ in reactor.tcpClients[4:]) == [6653, 6653]
    shard.dispatch(6, c.Disconnect())
    reactor.advance(30)
    assert len(reactor.tcpClients) == 6
