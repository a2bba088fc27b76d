"""Integration: §5.2.1 against model controllers that fail at a known session count the ways real controllers do —
refuse, crash, stall, close all — on loopback: CCn is exact, the failure mode is named in results.json, the report
and junit.xml, and the sustained capacity is found by a search with a fresh controller each step."""

import sys

import pytest
from helpers import pytest_run, said
from results_check import check_results_files

from emulator import codec
from emulator.nullctl import Behaviour
from emulator.params import CapacityParams, RampParams
from fixtures.benchmark import Benchmark
from fixtures.devices.null import NullController
from fixtures.families import capacity as cap
from fixtures.harness import BenchmarkRun, Judging, Trials
from fixtures.ports import free_port
from reports.junit import render_junit
from reports.results import ResultStore, load_results
from reports.rfc_report import render_markdown

pytestmark = pytest.mark.component

N = 60
RAMP = RampParams(ramp_group=10, ramp_delay=0.0, handshake_timeout=2.0, connect_timeout=2.0)
HOLD = dict(hold_time=1.5, echo_interval=0.5, echo_timeout=1.0)
BENCH = Benchmark(name="test_control_session_capacity", title="Control Sessions Capacity", section="5.2.1",
                  category="scalability", unit="sessions", symbol="CCn", definition="", measurement_point="",
                  higher_is_better=True)
MODES = {"refuse": cap.REFUSES, "silent": cap.STOPS_ACCEPTING, "crash": cap.EXITED, "stall": cap.STOPS_ECHOES,
         "close-all": cap.CLOSES_EARLIER}


@pytest.fixture(autouse=True)
def prompt_exit(monkeypatch):
    """The null controller that crashes at its limit exits within milliseconds: a trial whose sessions dropped waits
    2 s, not the 10 s a JVM may take to die, before it decides the controller lived (closes-all, stall)."""
    monkeypatch.setattr(cap, "EXIT_GRACE_S", 2.0)


def run_capacity(tmp_path, pool, ctl, ramp=RAMP, repetitions=2, **params):
    """The benchmark's trials and conclusion against ``ctl`` (restarted before each trial), as the suite runs them;
    the results as written to results.json."""
    store = ResultStore(tmp_path / "results.json", {"started": "now"})
    run = BenchmarkRun(store, ctl, BENCH, Trials(repetitions, 0, 0), judge=lambda name: Judging(),
                       progress=lambda line: None)
    run.columns(cap.TRIAL_COLUMNS)
    em = cap.CapacityEmulator(lambda: pool, codec.OFP13, ramp, CapacityParams(**{**HOLD, **params}), 60)
    try:
        entry = run.trials(lambda index: cap.capacity_trial(run, em, ctl, index))
        cap.conclude(run, em, ctl, entry)
    finally:
        ctl.stop()
    return load_results(store.path)


@pytest.mark.parametrize("mode", list(MODES))
def test_ccn_is_exact_and_the_failure_mode_named_in_all_three_outputs(shard_pool, tmp_path, mode):
    ctl = NullController(tmp_path / "logs", ready_timeout=15, behaviour=Behaviour(session_limit=N, limit_mode=mode))
    data = run_capacity(tmp_path, shard_pool, ctl, max_sessions=500)
    bench = data["benchmarks"][0]
    assert [t["value"] for t in bench["trials"]] == [N, N], bench["trials"]
    assert {t["details"]["failure_mode"] for t in bench["trials"]} == {MODES[mode]}
    assert bench["findings"]["failure_mode"] == MODES[mode]
    kept = [t["details"]["kept"] for t in bench["trials"]]
    if mode in ("refuse", "silent"):              # the sessions it held survive
        assert kept == [N, N]
    else:                                         # a collapse: they do not (close-all serves the next ones anew)
        assert max(kept) < N
    if mode in ("refuse", "silent"):
        assert bench["sustained_capacity"] == {"status": "held", "sessions": N,
                                               "reason": "every trial held all the sessions it established"}
    else:                                   # CCn held from a fresh start: a controller that fails past its limit
        assert bench["sustained_capacity"]["sessions"] == N
        assert [s["sessions"] for s in bench["sustained_capacity"]["steps"]] == [N]
    assert bench["outcome"]["status"] == "passed"
    report, junit = render_markdown(data), render_junit(data)
    assert f"| failure_mode | {MODES[mode]} |" in report
    assert f'name="finding.failure_mode" value="{MODES[mode]}"' in junit
    check_results_files(tmp_path)


@pytest.mark.parametrize("group", [1, 4, 10, 20])
def test_ccn_of_a_collapsing_controller_does_not_depend_on_the_group_size(shard_pool, tmp_path, group):
    ctl = NullController(tmp_path / "logs", ready_timeout=15, behaviour=Behaviour(session_limit=N, limit_mode="crash"))
    data = run_capacity(tmp_path, shard_pool, ctl, ramp=RAMP.replace(ramp_group=group), repetitions=1,
                        max_sessions=500, sustained_steps=0)
    trial = data["benchmarks"][0]["trials"][0]
    assert trial["value"] == N and trial["details"]["failure_mode"] == cap.EXITED


def test_sustained_capacity_is_not_searched_without_a_fresh_controller(shard_pool, tmp_path):
    ctl = NullController(tmp_path / "logs", restart_between_trials=False, ready_timeout=15,
                         behaviour=Behaviour(session_limit=N, limit_mode="close-all"))
    ctl.start()
    data = run_capacity(tmp_path, shard_pool, ctl, repetitions=1, max_sessions=500)
    found = data["benchmarks"][0]["sustained_capacity"]
    assert found == {"status": "not searched",
                     "reason": "each step needs a fresh controller, and --no-restart keeps one controller"}


def test_the_suite_reports_ccn_failure_mode_and_sustained_capacity_of_a_controller_it_restarts(tmp_path):
    # A user's controller the suite starts (--start-command): it establishes 60 sessions, crashes at the 61st, and
    # crashes once more than 40 are held for a second: CCn 60, sustained 40, searched with a fresh controller each
    # step.  Through the suite's command line, all three outputs.
    nullctl = (f"{sys.executable} -m emulator.nullctl --host {{host}} --port {{port}} --session-limit {N} "
               "--limit-mode crash --hold-limit 40 --hold-after 1")
    out = tmp_path / "r"
    run = pytest_run("suites", "-k", "control_session_capacity", "--controller", f"external:127.0.0.1:{free_port()}",
                     "--start-command", nullctl, "--max-sessions", "500", "--ramp-group", "10", "--ramp-delay", "0",
                     "--hold-time", "1.5", "--echo-interval", "0.5", "--echo-timeout", "1", "--repetitions", "2",
                     "--sustained-resolution", "0.01", "--sustained-steps", "10", "--report-dir", out)
    assert run.returncode == 0, said(run, out)
    assert "findings: failure mode: the process exited" in run.stdout and "sustained capacity: 40" in run.stdout
    bench = load_results(out / "results.json")["benchmarks"][0]
    assert [t["value"] for t in bench["trials"]] == [N, N]
    found = bench["sustained_capacity"]
    assert (found["status"], found["sessions"], found["not_held_at"], found["bracketed"]) == ("searched", 40, 41, True)
    assert found["steps"][0] == {"sessions": N, "held": False, "kept": 0, "ccn": N, "failure_mode": cap.EXITED}
    assert bench["findings"]["sustained_capacity"] == 40
    assert "sustained capacity (beside RFC 8456): 40 sessions (not held at 41)" in " ".join(bench["notes"])
    assert "### Sustained capacity search" in (out / "report.md").read_text()
    junit = (out / "junit.xml").read_text()
    assert 'name="finding.failure_mode" value="the process exited"' in junit
    assert 'name="finding.sustained_capacity" value="40"' in junit
    assert "| failure_mode | the process exited |" in (out / "report.md").read_text()
    check_results_files(out)
