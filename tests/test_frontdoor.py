"""The emulator's front door without processes: option families, the wire form of every command, the merges,
and a shard's responder table driven in this process on a memory reactor."""

import argparse
import dataclasses

import pytest
from twisted.internet.testing import MemoryReactorClock

from emulator import codec
from emulator import commands as c
from emulator import params as pm
from emulator.shard import RESPONDERS, Shard


def test_every_command_is_a_declared_frozen_dataclass_with_a_responder_and_a_response():
    assert len(c.COMMANDS) >= 15
    for cls in c.COMMANDS:
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, cls
        assert cls in RESPONDERS, f"{cls.__name__} has no responder"
        assert not cls.answered or issubclass(cls.response, c.Response)


def test_commands_cross_the_wire_whole():
    cmd = c.OpenSessions(address=("127.0.0.1", 6653), versions=(codec.OFP13,), capacity=pm.CapacityParams(),
                         ramp=pm.RampParams(ramp_group=7), sessions=9)
    wire = c.to_wire(cmd)
    assert wire["capacity"]["__t__"] == "CapacityParams" and wire["ramp"]["ramp_group"] == 7
    assert c.from_wire(wire) == cmd
    spec = c.TestPortCommand((3, 2), "stream", stream=c.StreamSpec(1, flows=4, rate=10.0))
    assert c.from_wire(c.to_wire(spec)) == spec
    with pytest.raises(c.EmulatorError, match="unknown message type 'Nope'"):
        c.from_wire({"__t__": "Nope"})
    with pytest.raises(c.EmulatorError, match="unknown test-port action"):
        c.TestPortCommand((1, 1), "explode")


def test_capacity_results_merge_sums_the_earliest_failure_and_raw_samples():
    from array import array

    def result(**kw):
        base = dict(kept=10, established=10, established_before_failure=10, attempted=10, failed=0,
                    dropped_after_ready=0, failures={}, first_failure=None, stop_reason=c.STOP_CAP, ramp_s=1.0,
                    setup_s=1.0, rss_bytes=100, rss_growth_bytes=50, echo_rtt_ns=array("q", [1, 2]).tobytes())
        return c.SessionsResult(**{**base, **kw})

    late = c.FirstFailure(session=40, kind="reset", detail="x", after_s=0.5, phase="ramp", established_before=9,
                          at_ns=2000)
    early = c.FirstFailure(session=7, kind="refused", detail="y", after_s=1.0, phase="ramp", established_before=6,
                           at_ns=1000)
    m = c.SessionsResult.merge([result(first_failure=late, stop_reason=c.STOP_DROPPING, failures={"reset": 1},
                                       ready_ns=array("q", [100, 900, 1500]).tobytes()),
                                result(first_failure=early, stop_reason=c.STOP_REQUESTED, failures={"reset": 2},
                                       setup_s=2.0, echo_rtt_ns=array("q", [3]).tobytes(),
                                       ready_ns=array("q", [500, 1200]).tobytes())])
    assert (m.kept, m.established, m.shards) == (20, 20, 2) and m.failures == {"reset": 3}
    # the earliest failure by its instant (not by each shard's own start), and every shard's sessions ready
    # before it: the A.5.1 count over the whole ramp
    assert m.first_failure == early and m.established_before_failure == 3
    assert m.stop_reason == c.STOP_DROPPING and not m.capped
    assert list(c.samples(m.echo_rtt_ns)) == [1, 2, 3] and m.setup_rate_per_s == 10.0
    assert c.SessionsResult.merge([result(), result(stop_reason=c.STOP_LOCAL)]).emulator_bound


def test_a_one_shard_answer_refuses_to_merge_several():
    with pytest.raises(c.EmulatorError, match="comes from one shard"):
        c.PortAnswer.merge([c.PortAnswer(), c.PortAnswer()])
    assert c.Done.merge([c.Done(), c.Done()]) == c.Done()


# --------------------------------------------------------------------------- option families

def parse(family, *argv):
    parser = argparse.ArgumentParser(exit_on_error=False)
    family.add_options(parser)
    return family.from_options(parser.parse_args(argv))


def test_a_family_registers_its_options_and_builds_itself_from_them():
    p = parse(pm.AsyncParams, "--switches", "1,16", "--no-buffer", "--rate-resolution", "0.02")
    assert p.switch_counts == (1, 16) and p.no_buffer and not p.buffered and p.rate_resolution == 0.02
    assert parse(pm.AsyncParams) == pm.AsyncParams()                   # the defaults are the dataclass's
    assert parse(pm.RampParams, "--ramp-group", "5").ramp_group == 5


@pytest.mark.parametrize("argv,says", [
    (("--ramp-group", "0"), "must be a positive integer (got '0')"),
    (("--ramp-delay", "-1"), "must be a non-negative number (got '-1')"),
    (("--ramp-delay", "nan"), "must be a non-negative number (got 'nan')"),
    (("--connect-timeout", "x"), "must be a positive number (got 'x')")])
def test_bad_values_are_refused_at_the_boundary_naming_the_option(argv, says, capsys):
    parser = argparse.ArgumentParser(prog="t")
    pm.RampParams.add_options(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(argv)
    err = capsys.readouterr().err
    assert f"argument {argv[0]}: {says}" in err


def test_an_alias_taken_by_another_plugin_is_left_out():
    @dataclasses.dataclass(frozen=True)
    class Fam(pm.Family):
        x: int = pm.option(1, "--new-name", "x", pm.positive_int, aliases=("--old-name",))

    parser = argparse.ArgumentParser()
    Fam.add_options(parser, taken=lambda flag: flag == "--old-name")
    assert parser.parse_args(["--new-name", "3"]).new_name == 3
    both = argparse.ArgumentParser()
    Fam.add_options(both)
    assert both.parse_args(["--old-name", "4"]).new_name == 4


def test_list_options_and_cross_field_problems():
    assert pm.comma_list("link", "switch")("switch,link,switch") == ("switch", "link")
    with pytest.raises(argparse.ArgumentTypeError, match="comma list of link, switch"):
        pm.comma_list("link", "switch")("router")
    assert pm.int_list("1, 16") == (1, 16)
    problems = pm.AsyncParams(switch_counts=(70000,), rate_step=0.01, rate_resolution=0.05).problems()
    assert any("--switches must be 1..65535" in p for p in problems)
    assert any("--rate-resolution (0.05) must be finer than --rate-step (0.01)" in p for p in problems)


def test_emulator_hosts_and_cpu_placement_are_parsed():
    assert pm.parse_hosts("popen*2,ssh=me@hostB//python=/v/bin/python*4") == [
        ("popen", 2), ("ssh=me@hostB//python=/v/bin/python", 4)]
    assert pm.parse_hosts("ssh_config=/x/c//ssh=me@h") == [("ssh_config=/x/c//ssh=me@h", 1)]
    with pytest.raises(ValueError, match="popen or ssh=USER@HOST"):
        pm.parse_hosts("telnet=h*2")
    assert pm.parse_affinity("auto", [0, 1]) == ((1,), (0,)) and pm.parse_affinity("auto", [0]) is None
    assert pm.parse_affinity("auto", [4, 6, 9]) == ((6, 9), (4,))          # a cpuset numbers its CPUs freely
    assert pm.parse_affinity("2-3/0,1", [0, 1, 2, 3]) == ((2, 3), (0, 1)) and pm.parse_affinity("off", [0]) is None
    with pytest.raises(ValueError, match="disjoint"):
        pm.parse_affinity("0-1/1", [0, 1])
    with pytest.raises(ValueError, match=r"CPU\(s\) \[5\] are not available"):
        pm.parse_affinity("5/0", [0, 1])
    assert pm.EmulatorParams(emulator_shards=3).hosts() == [("popen", 3)]
    assert pm.EmulatorParams(cpu_affinity="x").problems()


# --------------------------------------------------------------------------- a shard, in this process

class Channel:
    def __init__(self):
        self.sent = []

    def __call__(self, message):
        self.sent.append(message)

    def answers(self):
        return [(kind, call, c.from_wire(p) if kind != "error" else p) for kind, call, p in self.sent]


def test_a_shard_answers_hello_and_errors_without_state():
    reactor = MemoryReactorClock()
    out = Channel()
    shard = Shard(reactor, out)
    shard.dispatch(1, c.Hello())
    shard.dispatch(2, c.GetFabricState())
    shard.dispatch(3, c.RunTraffic(pm.TrafficParams(), 1, 0))
    (kind, call, info), (ekind, ecall, emsg), (_, _, tmsg) = out.answers()
    assert (kind, call) == ("answer", 1) and info.nofile_soft == info.nofile_hard and info.boot_id
    assert (ekind, ecall) == ("error", 2) and "no topology is deployed on this shard" in emsg
    assert "no switches are connected" in tmsg


def answer_echoes(proto, answered: set) -> None:
    """Answer every ECHO_REQUEST the switch ``proto`` has sent and ``answered`` has not seen yet."""
    frames, _ = codec.split_frames(proto.transport.value())
    for f in frames:
        m = codec.decode(f)
        if m.name == "echo_request" and (id(proto), m.xid) not in answered:
            answered.add((id(proto), m.xid))
            proto.dataReceived(codec.encode_echo_reply(codec.OFP13, m.xid))


def test_a_shard_runs_a_capacity_trial_and_sends_its_events():
    reactor = MemoryReactorClock()
    out = Channel()
    shard = Shard(reactor, out)
    cmd = c.OpenSessions(address=("127.0.0.1", 1), versions=(codec.OFP13,), capacity=pm.CapacityParams(hold_time=0),
                         ramp=pm.RampParams(ramp_group=2, ramp_delay=0), sessions=2)
    shard.dispatch(5, cmd)
    answered: set = set()
    for _host, _port, factory, _timeout, _bind in reactor.tcpClients:
        from twisted.internet.testing import StringTransport
        proto = factory.buildProtocol(None)
        proto.makeConnection(StringTransport())
        proto.dataReceived(codec.encode_hello(codec.OFP13, 1, (codec.OFP13,)) + codec.header(codec.OFP13, 5, 8, 2))
        assert not proto.ready                           # established once the controller answers after the handshake
        answer_echoes(proto, answered)
        assert proto.ready
    shard.dispatch(6, c.StopRamp())                      # no answer to a notification
    reactor.advance(0)                                   # the final ECHO round goes out at once (hold 0)
    for proto in shard.capacity.sessions:
        answer_echoes(proto, answered)
    kinds = [(k, call, type(p).__name__) for k, call, p in out.answers()]
    assert ("event", 5, "RampEnded") in kinds and ("answer", 5, "SessionsResult") in kinds
    assert not [k for k in kinds if k[1] == 6]
    result = [p for k, call, p in out.answers() if k == "answer"][0]
    assert result.kept == 2 and result.stop_reason == c.STOP_CAP
