"""Integration: PACKET_IN traffic over loopback against real controllers — the null controller (known
answers: every PACKET_IN answered, none, after a known delay, at a known rate, or garbage), the shards,
ovs-testcontroller, the embedded Ryu, and the two suites end to end (values, skip on no answer, reports)."""

import shutil

import pytest
from helpers import PROJECT_ROOT, GarbledController, pytest_run, said
from results_check import check_results_files

from emulator import codec
from emulator.commands import EmulatorError
from emulator.nullctl import Behaviour
from emulator.params import AsyncParams, RampParams
from fixtures.devices.null import NullController
from fixtures.devices.ovs import OvsTestController
from fixtures.devices.ryu import OsKenController, RyuController
from fixtures.families.async_msgs import (
    GENERATOR_BOUND_FRACTION,
    AsyncEmulator,
    PreflightFailed,
    TrialInvalid,
    search,
    trial_figures,
)
from reports.results import load_results

pytestmark = pytest.mark.component

QUICK = dict(macs=50, duration=0.5, response_timeout=0.5, settle=0.2)
OVS = pytest.mark.skipif(shutil.which("ovs-testcontroller") is None, reason="ovs-testcontroller is not installed "
                         "(apt-get install openvswitch-testcontroller; .ci/run installs it)")


@pytest.fixture
def emulator(shard_pool):
    made = []

    def make(openflow=codec.OFP13, switches=2, shards=1, **kw):
        em = AsyncEmulator(lambda: shard_pool, AsyncParams(**{**QUICK, **kw}).at(switches),
                           RampParams(handshake_timeout=5.0), openflow, shards=shards)
        made.append(em)
        return em

    yield make
    for em in made:
        em.disconnect()


@pytest.mark.parametrize("openflow", [codec.OFP10, codec.OFP13])
def test_null_controller_answers_every_request_once(emulator, started, tmp_path, openflow):
    ctl = started(NullController(tmp_path, openflow=openflow))
    em = emulator(openflow, switches=3)
    em.connect(ctl.address)
    assert em.preflight()["answered_by"] == "PACKET_OUT"
    serial = trial_figures(em.run("serial", 0.5))
    assert serial["nrx"] == serial["ntx"] > 100 and serial["loss_ratio"] == 0
    assert serial["duplicates"] == serial["stale"] == serial["unmatched"] == 0
    assert 0 < serial["apt_ms"] < 5
    flood = trial_figures(em.run("max", 0.5))
    assert flood["ntx"] > serial["ntx"] and flood["nrx"] == flood["ntx"] and flood["packet_out"] == flood["ntx"]
    paced = trial_figures(em.run("paced", 0.5, rate=2000))
    assert 900 <= paced["ntx"] <= 1100 and paced["nrx"] == paced["ntx"]


def test_unbuffered_frames_are_matched_by_their_tag(emulator, started, tmp_path):
    ctl = started(NullController(tmp_path))
    em = emulator(switches=2, no_buffer=True, frame_size=512, frame_kind="arp")
    em.connect(ctl.address)
    f = trial_figures(em.run("per-switch", 0.5))
    assert f["nrx"] == f["ntx"] > 50 and f["stale"] == 0


def test_a_controller_that_never_answers_fails_the_preflight_with_the_reason(emulator, started, tmp_path):
    ctl = started(NullController(tmp_path, behaviour=Behaviour(answer="none")))
    em = emulator(switches=2, learn_timeout=1.0)
    with pytest.raises(PreflightFailed, match="none of the 2 destination-host announcements .* was answered"):
        em.connect(ctl.address)
    em = emulator(switches=2, no_learn=True)
    em.connect(ctl.address)
    with pytest.raises(PreflightFailed, match="controller app does not answer PACKET_IN: 2 of 2 switch"):
        em.preflight()


def test_two_shards_merge_into_one_result(emulator, started, tmp_path):
    ctl = started(NullController(tmp_path))
    em = emulator(switches=5, shards=2)
    em.connect(ctl.address)
    assert [len(g) for g in em.groups.values()] == [3, 2]
    f = trial_figures(em.run("max", 0.5))
    assert f["shards"] == 2 and f["nrx"] == f["ntx"] > 0
    assert f["start_skew_us"] < 100_000          # both shards started at the shared instant


def test_unreachable_controller_is_a_named_emulator_error(emulator):
    em = emulator(switches=2)
    em.ramp = em.ramp.replace(handshake_timeout=1.0, connect_timeout=1.0)
    with pytest.raises(EmulatorError, match="2 of 2 switches could not connect .*refused"):
        em.connect(("127.0.0.1", 9))


def test_a_shard_answers_a_command_it_does_not_know_with_an_error(shard_pool):
    from dataclasses import dataclass

    from emulator import commands as c

    @c.wire
    @dataclass(frozen=True)
    class Explode(c.Command):     # declared here only: the shard has never heard of it
        pass

    with pytest.raises(EmulatorError, match="cannot read the command: unknown message type 'Explode'"):
        shard_pool.call_one(0, Explode(), 20)
    assert shard_pool.call_one(0, c.Hello(), 20).pid > 0     # and it still answers


@pytest.mark.system
@OVS
def test_ovs_testcontroller_installs_flows_for_learned_destinations(emulator, started, tmp_path):
    ctl = started(OvsTestController(tmp_path, openflow=codec.OFP10))
    em = emulator(codec.OFP10, switches=2)
    em.connect(ctl.address)
    assert em.preflight()["answered_by"] == "FLOW_MOD"
    f = trial_figures(em.run("max", 0.5))
    assert f["flow_mod"] > 1000 and f["apr"] > 0


@pytest.mark.system
def test_embedded_ryu_answers_packet_in(emulator, started, tmp_path):
    ctl = started(RyuController(tmp_path, openflow=codec.OFP13, ready_timeout=60))
    em = emulator(switches=2)
    em.connect(ctl.address)
    em.preflight()
    f = trial_figures(em.run("serial", 0.5))
    assert f["nrx"] > 10 and f["apt_ms"] > 0


@pytest.mark.system
@pytest.mark.parametrize("openflow", [codec.OFP13, codec.OFP10])
def test_embedded_osken_with_the_suites_learning_switch_installs_flows(emulator, started, tmp_path, openflow):
    """os-ken ships no app: the suite's learning switch answers a PACKET_IN whose destination it has learned with a
    FLOW_MOD, on both OpenFlow versions (1.3 after its own table-miss entry)."""
    ctl = started(OsKenController(tmp_path, openflow=openflow, ready_timeout=60))
    assert ctl.version().startswith("3.") and ctl.capabilities() == RyuController.CAPABILITIES   # all run
    em = emulator(openflow, switches=2)
    em.connect(ctl.address)
    assert em.preflight()["answered_by"] == "FLOW_MOD"
    f = trial_figures(em.run("serial", 0.5))
    assert f["nrx"] > 10 and f["apt_ms"] > 0


def test_rate_and_time_suites_end_to_end_on_the_null_controller(tmp_path):
    out = tmp_path / "r"
    # Short and coarse (a 0.3 s Td, steps of 50 %, a resolution of 20 %): the null controller answers millions a
    # second, so each search climbs to the emulator's own ceiling; what is checked here is the whole run's shape.
    # The series X = 1, 2 runs §5.1.2 at both points and §5.1.3 at the second only (its search at one switch would
    # add ~25 s and check nothing more).
    r = pytest_run("suites", "-k", "async_message and not (processing_rate and 1sw)", "--controller", "null",
                   "--repetitions", "2", "--trial-duration", "0.3", "--switches", "1,2", "--macs", "20",
                   "--settle", "0.1", "--rest", "0.1", "--rate-step", "0.5", "--rate-resolution", "0.2",
                   "--max-confirm", "2", "--report-dir", str(out))
    assert r.returncode == 0, said(r, out)
    data = load_results(out / "results.json")
    names = [(b["benchmark"], b["series_x"]["value"]) for b in data["benchmarks"]]
    assert ("test_async_message_processing_rate_loss_free", 2) in names
    assert ("test_async_message_processing_time", 1) in names
    assert ("test_async_message_processing_rate", 1) not in names
    for b in data["benchmarks"]:
        assert b["summary"]["n"] == 2 and b["summary"]["mean"] > 0
        assert "emulator_ceiling" in b
    rate = next(b for b in data["benchmarks"] if b["benchmark"] == "test_async_message_processing_rate")
    first = rate["trials"][0]["details"]["search"][0]
    assert first["mode"] == "calibration" and first["benchmark"] == ""      # the calibrated search, by default
    # GENERATOR-BOUND, end to end: each repetition is flagged exactly when its maximum reaches 80 % of the lower
    # of the two response ceilings recorded beside it, and the note names those repetitions and that ceiling.
    # (Against the null controller the run is generator-bound in principle, but whether a repetition's maximum
    # gets there is not certain: one trial that falls short by chance ends the climb, and in two CI runs on fresh
    # machines no repetition at two switches got there, one peaking at 58 %.  The rule is unit-tested with fixed
    # figures.)
    for b in data["benchmarks"]:
        if b["benchmark"] != "test_async_message_processing_rate":
            continue
        ceiling = b["emulator_ceiling"]
        assert min(ceiling[k] for k in ("response_rate", "paced_response_rate", "open_loop_send_rate")) > 0
        top = min(ceiling["response_rate"], ceiling["paced_response_rate"])
        bound = [t["index"] for t in b["trials"] if t["ok"] and t["value"] >= GENERATOR_BOUND_FRACTION * top]
        assert [t["index"] for t in b["trials"] if t["ok"] and t["details"]["generator_bound"]] == bound
        notes = [n for n in b["notes"] if "GENERATOR-BOUND" in n]
        assert notes == ([f"GENERATOR-BOUND in repetition(s) {bound}: the maximum rate is within 80% of the "
                          f"emulator's own response-processing ceiling ({top:.0f}/s); add --emulator-shards or "
                          "hosts before reading it as the controller's"] if bound else [])
    report = (out / "report.md").read_text()
    assert "Rate search" in report and "Loss-Free" in report and "X = number of switches" in report


def test_suite_skips_with_the_reason_when_packet_in_is_not_answered(tmp_path):
    sink = NullController(tmp_path / "logs", behaviour=Behaviour(answer="none"))
    sink.start()
    try:
        out = tmp_path / "r"
        r = pytest_run("suites", "-k", "async_message_processing_time or async_message_processing_rate",
                       "--controller", f"external:{sink.host}:{sink.port}", "--repetitions", "2",
                       "--trial-duration", "0.5", "--switches", "2", "--no-ceiling", "--announce-timeout", "1",
                       "--report-dir", str(out), "-rs")
    finally:
        sink.stop()
    assert r.returncode == 0, r.stdout[-3000:]
    assert "controller app does not answer PACKET_IN" in r.stdout
    benches = {b["benchmark"]: b for b in load_results(out / "results.json")["benchmarks"]}
    # the loss-free rate and the rate at the loss goal, computed from the maximum rate's searches, appear with the
    # same skip (issue 15 §2)
    assert sorted(benches) == ["test_async_message_processing_rate", "test_async_message_processing_rate_at_loss_goal",
                               "test_async_message_processing_rate_loss_free", "test_async_message_processing_time"]
    for bench in benches.values():
        assert bench["outcome"]["status"] == "skipped" and bench["trials"] == [] and bench["summary"] is None
        assert "does not answer PACKET_IN" in bench["outcome"]["reason"]
    junit = (out / "junit.xml").read_text()
    assert junit.count("<skipped") == 4 and "test_async_message_processing_rate_loss_free" in junit


@pytest.mark.parametrize("openflow", [codec.OFP10, codec.OFP13])
def test_a_controller_with_a_known_2ms_delay_reads_2ms(emulator, started, tmp_path, openflow):
    # Issue 12 §0.1: with the emulator spinning, a 2 ms controller read 4.7-6.3 ms (1.3) and 3.8-4.0 ms (1.0).
    # The figure within [2.0, 2.6] ms is measured by `python -m fixtures.selfbench known` (docs/measurements.md).
    # Here the emulator's reading is held to what the controller actually did: on a host whose timers fire late
    # (CI once read 3.4 and 3.8 ms here, at load average 0.65) the controller's answers wait longer than 2 ms, and
    # the emulator must read that wait, plus its own share (a few tenths of a ms; 1 ms bounds it on a loaded host).
    ctl = started(NullController(tmp_path, openflow=openflow, behaviour=Behaviour(delay_ms=2.0)))
    em = emulator(openflow, switches=4, duration=1.0)
    em.connect(ctl.address)
    f = trial_figures(em.run("serial", 1.0))
    em.disconnect()
    ctl.stop()
    held = ctl.answer_holds()
    assert held is not None and held["answers"] > 0, ctl.log_tail()
    said = f"the emulator read {f['apt_ms']:.3f} ms; the controller held its answers {held['held_ms_mean']:.3f} ms"
    assert f["loss_ratio"] == 0 and 2.0 <= held["held_ms_mean"], said
    assert held["held_ms_mean"] <= f["apt_ms"] < held["held_ms_mean"] + 1.0, said


def test_a_rate_capped_controller_is_loss_free_below_its_cap_and_not_above(emulator, started, tmp_path):
    # Issue 12 §0.3: answers after Td but within the response timeout made overloaded trials "loss-free".
    ctl = started(NullController(tmp_path, behaviour=Behaviour(rate_cap=3000.0)))
    em = emulator(switches=4, duration=1.0, response_timeout=2.0)
    em.connect(ctl.address)
    below = trial_figures(em.run("paced", 1.0, rate=2000))
    above = trial_figures(em.run("paced", 1.0, rate=4500))
    assert below["loss_free"], below["loss_free_reason"]
    assert above["loss_ratio"] == 0 and not above["loss_free"]       # every answer came, but a backlog grew
    assert "latency climbed" in above["loss_free_reason"]


def test_the_calibrated_search_finds_a_known_cap_without_a_trial_at_the_top_rate(emulator, started, tmp_path):
    # Issue 27 §2: no overloaded trial 1 to drain; probes bracket, full-Td trials give the figures.  The cap is
    # found within the resolution by `python -m fixtures.selfbench known` (docs/measurements.md); here, looser.
    ctl = started(NullController(tmp_path, behaviour=Behaviour(rate_cap=3000.0)))
    em = emulator(switches=4, duration=1.0, rate_resolution=0.05, probe_duration=0.3)
    em.connect(ctl.address)
    s = search(em, em.p, lambda: em.quiesce(0.2), None)
    rows = s["rows"]
    assert rows[0].mode == "calibration" and 2000 < rows[0].apr <= 3100
    assert max(r.offered_rate for r in rows) < 4 * 3000                       # never the emulator's top rate
    assert 0.85 * 3000 <= s["loss_free"].apr <= s["maximum"].apr <= 1.02 * 3000, [(r.mode, r.apr) for r in rows]
    assert {r.figures["td_s"] for r in rows if r.decides} == {1.0} and s["maximum"].decides


@pytest.mark.system
def test_every_switch_has_learned_its_destination_before_trial_1_against_ryu_13(emulator, started, tmp_path):
    # Issue 12 §0.6: the announcements raced Ryu's handshake under OpenFlow 1.3 and were dropped, so Ryu flooded
    # instead of installing flows and trials alternated between 0.19 and 0.3 ms.  Now each announcement is
    # repeated until Ryu has answered it, and the preflight checks every switch.
    ctl = started(RyuController(tmp_path, openflow=codec.OFP13, ready_timeout=60))
    em = emulator(switches=16, settle=0.5)
    got = em.connect(ctl.address)
    assert got["announced"] == 16
    pre = em.preflight()
    assert pre["switches_answered"] == 16 and pre["answered_by_flow_mod"] == 16   # a FLOW_MOD: the host is known


def test_a_controller_that_dies_during_a_trial_invalidates_it(emulator, started, tmp_path):
    # Issue 12 §1.2: an external controller killed mid-trial: all sessions lost, 5k instead of ~40k requests
    # sent, and the trial was recorded ok and averaged in.
    import threading
    ctl = started(NullController(tmp_path))
    em = emulator(switches=3, duration=1.5)
    em.connect(ctl.address)
    threading.Timer(0.7, ctl.stop).start()
    with pytest.raises(TrialInvalid, match="3 of 3 control sessions dropped during the trial"):
        em.run("serial", 1.5)


def test_garbage_from_the_controller_fails_the_trial_with_the_bytes_and_the_run_goes_on(tmp_path):
    # Issue 12 §1.7: mid-run, malformed OpenFlow aborted the whole benchmark with results.json left "running".
    with GarbledController(tmp_path, "packet_in:short-length") as bad:
        out = tmp_path / "r"
        r = pytest_run("suites", "-k", "async_message_processing_time", "--controller",
                       f"external:127.0.0.1:{bad.port}", "--repetitions", "2", "--trial-duration", "0.5",
                       "--switches", "2", "--no-ceiling", "--report-dir", out)
    assert r.returncode == 1, r.stdout[-3000:]
    bench = load_results(out / "results.json")["benchmarks"][0]
    assert bench["outcome"]["status"] in ("failed", "error")
    text = bench["outcome"]["reason"]
    assert "protocol error" in text and "framing error" in text and "0d0004" in text   # the bytes, in hex
    check_results_files(out)


@pytest.mark.system
@OVS
def test_a_relative_report_dir_works_with_ovs(tmp_path):
    # Issue 12 §0.7: with --controller ovs, a relative --report-dir failed at start.
    r = pytest_run(PROJECT_ROOT / "suites", "-k", "async_message_processing_time", "--controller", "ovs",
                   "--openflow", "1.0", "--repetitions", "1", "--trial-duration", "0.5", "--switches", "1",
                   "--no-ceiling", "--report-dir", "rel", cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:]
    assert (tmp_path / "rel" / "results.json").exists() and (tmp_path / "rel" / "report.md").exists()
