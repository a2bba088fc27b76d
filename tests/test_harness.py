"""The trial loop and the run's configuration without processes: a fake controller, an in-memory store."""

import errno
import json
import os

import pytest

from emulator.commands import EmulatorError
from fixtures.benchmark import Benchmark, Derived
from fixtures.config import BmwgConfig, ReportDirError, claim_report_dir, default_report_dir
from fixtures.devices.base import ControllerError
from fixtures.harness import BenchmarkRun, Interrupted, TrialFailed, TrialInvalid, TrialOutcome, Trials
from reports import results as results_mod
from reports.results import ResultStore


class FakeController:
    pid = None
    mode = "external"

    def __init__(self, answers=True):
        self.answers = answers

    def prepare_trial(self):
        pass

    def check_alive(self, timeout=None):
        if not self.answers:
            raise ControllerError("external controller is not answering: connection refused")
        return 0.001

    def exit_reason(self):
        return None

    def log_tail(self):
        return ""

    def info(self):
        return {"name": "fake"}


class CountingStore(ResultStore):
    saves = 0

    def save(self):
        CountingStore.saves += 1
        super().save()


X = Benchmark(name="test_x", section="5.2.1", category="scalability", title="X", symbol="S", unit="sessions",
              higher_is_better=True, definition="d", measurement_point="m",
              derived=(Derived("test_y", "Y", "Y", "dd"),))


def make_run(tmp_path, controller=None, repetitions=3, max_failed_trials=0, max_replaced=0, warmup=0, **kw):
    store = CountingStore(tmp_path / "results.json", {"started": "now"})
    return BenchmarkRun(store, controller or FakeController(), X,
                        Trials(repetitions, warmup, max_failed_trials, max_replaced), progress=lambda line: None, **kw)


def on_disk(tmp_path):
    return json.loads((tmp_path / "results.json").read_text())["benchmarks"][0]


def test_the_runs_methods_save_by_themselves_and_guard_its_own_fields(tmp_path):
    run = make_run(tmp_path)
    before = CountingStore.saves
    run.parameters(a=1).series("switches", 4).columns([("k", "K")]).context("preflight", {"rtt_ms": 1}).note("n")
    assert CountingStore.saves == before + 5
    e = on_disk(tmp_path)
    assert e["parameters"]["a"] == 1 and e["series_x"] == {"name": "switches", "value": 4}
    assert e["trial_columns"] == [["k", "K"]] and e["preflight"] == {"rtt_ms": 1} and "n" in e["notes"]
    with pytest.raises(ValueError, match="entry's own fields"):
        run.context("trials", [])


def test_an_emulator_failure_fails_that_trial_and_the_run_goes_on(tmp_path):
    # Issue 12 §1.4: a shard error aborted the async benchmarks, left results.json "running" and showed a pass.
    def trial(i):
        if i == 2:
            raise EmulatorError("emulator shard 0 (popen) ended while running RunTraffic")
        return TrialOutcome(5.0)

    run = make_run(tmp_path, max_failed_trials=1)
    entry = run.trials(trial)
    assert [t["ok"] for t in entry["trials"]] == [True, False, True]
    assert entry["trials"][1]["reason"] == "emulator: emulator shard 0 (popen) ended while running RunTraffic"
    assert on_disk(tmp_path)["outcome"]["status"] == "passed"     # one failure allowed


def test_failed_trials_fail_the_benchmark_unless_allowed(tmp_path):
    # Issue 12 §1.3: 4 of 5 trials failed, and the benchmark passed.
    def trial(i):
        if i > 1:
            raise TrialFailed("the controller went away")
        return TrialOutcome(5.0)

    run = make_run(tmp_path, repetitions=5)
    run.trials(trial)
    assert run.result["outcome"] == {"status": "failed", "reason": "4 of 5 trials failed: the controller went away"}
    with pytest.raises(pytest.fail.Exception, match="test_x FAILED: 4 of 5 trials failed"):
        run.finish()


def test_a_controller_that_stops_answering_invalidates_the_trial(tmp_path):
    # Issue 12 §1.2: the trial in which the controller died was recorded ok and averaged in.
    run = make_run(tmp_path, controller=FakeController(answers=False), repetitions=1)
    entry = run.trials(lambda i: TrialOutcome(40000.0))
    assert not entry["trials"][0]["ok"]
    assert "the controller stopped answering during the trial" in entry["trials"][0]["reason"]


def test_a_stopped_run_is_recorded_as_interrupted_with_the_signal(tmp_path):
    def trial(i):
        if i == 2:
            raise Interrupted("stopped by SIGTERM (the run was terminated)")
        return TrialOutcome(1.0)

    run = make_run(tmp_path)
    with pytest.raises(KeyboardInterrupt):
        run.trials(trial)
    e = on_disk(tmp_path)
    assert e["outcome"] == {"status": "interrupted", "reason": "stopped by SIGTERM (the run was terminated)"}
    assert len(e["trials"]) == 1 and e["summary"]["n"] == 1


def test_an_implausible_result_fails_with_the_reason(tmp_path):
    run = make_run(tmp_path, repetitions=1)
    run.trials(lambda i: TrialOutcome(-1.0))

    def check(entry):
        assert all(t["value"] >= 0 for t in entry["trials"]), "a negative capacity"

    with pytest.raises(AssertionError):
        run.finish(check)
    assert run.result["outcome"]["status"] == "failed" and "a negative capacity" in run.result["outcome"]["reason"]


def test_a_derived_benchmark_takes_its_values_from_the_same_trials(tmp_path):
    run = make_run(tmp_path, repetitions=2)
    run.trials(lambda i: TrialOutcome(10.0 * i, details={"other": 5.0 if i == 1 else None}))
    other = run.derived("test_y", pick=lambda t: (t["details"]["other"], "no value in this trial"))
    assert [t["value"] for t in other.result["trials"]] == [5.0, None]
    assert other.result["trials"][1]["reason"] == "no value in this trial"
    assert other.result["outcome"]["status"] == "failed"


def test_a_derived_benchmark_appears_with_the_outcome_of_a_source_that_gave_it_nothing(tmp_path):
    from fixtures.outcomes import add_placeholders
    run = make_run(tmp_path)
    skipped = {"status": "skipped", "reason": "no PACKET_IN answered"}
    add_placeholders(run.store, X, "16sw", skipped, derived_only=True)
    add_placeholders(run.store, X, "16sw", skipped, derived_only=True)
    (y,) = [e for e in run.store.data["benchmarks"] if e["benchmark"] == "test_y"]   # once, not twice
    assert y["variant"] == "16sw" and y["title"] == "Y" and y["trials"] == [] and y["summary"] is None
    assert y["outcome"] == {"status": "skipped", "reason": "no PACKET_IN answered"}
    # a source that made its derived benchmark leaves it alone
    (tmp_path / "b").mkdir()
    run2 = make_run(tmp_path / "b", repetitions=1)
    run2.trials(lambda i: TrialOutcome(1.0))
    run2.derived("test_y", pick=lambda t: (2.0, ""))
    add_placeholders(run2.store, X, None, {"status": "error", "reason": "late"}, derived_only=True)
    (y,) = [e for e in run2.store.data["benchmarks"] if e["benchmark"] == "test_y"]
    assert y["outcome"]["status"] == "passed" and y["trials"][0]["value"] == 2.0


def test_a_results_write_that_fails_keeps_the_data_and_says_where(tmp_path, monkeypatch):
    # Issue 12 §1.10: a full disk crashed the run at the end, losing the last trial and every report.
    store = ResultStore(tmp_path / "results.json", {"started": "now"})
    real = results_mod.write_json_atomic

    def full_disk(path, data):
        if path == store.path:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, data)

    monkeypatch.setattr(results_mod, "write_json_atomic", full_disk)
    store.add_benchmark({"benchmark": "test_x", "rfc_section": "5.2.1", "unit": "s"})
    store.save()
    assert "No space left on device" in store.write_error and store.fallback.exists()
    assert "a copy is in" in store.where()
    assert json.loads(store.fallback.read_text())["benchmarks"][0]["benchmark"] == "test_x"
    store.fallback.unlink()


def test_default_report_folders_are_never_shared(tmp_path, monkeypatch):
    # Issue 12 §1.8: two runs started in the same second shared one folder; the second overwrote the first.
    base = tmp_path / "20260101-000000-42"
    first = claim_report_dir(base, given=False, overwrite=False)
    second = claim_report_dir(base, given=False, overwrite=False)
    assert first != second and first.is_dir() and second.is_dir() and str(os.getpid()) in default_report_dir().name


def test_a_given_report_folder_with_results_needs_overwrite(tmp_path):
    (tmp_path / "results.json").write_text("{}")
    with pytest.raises(ReportDirError, match="already holds a results.json .* --overwrite"):
        claim_report_dir(tmp_path, given=True, overwrite=False)
    assert claim_report_dir(tmp_path, given=True, overwrite=True) == tmp_path
    (tmp_path / "file").write_text("x")
    with pytest.raises(ReportDirError, match="cannot create --report-dir"):
        claim_report_dir(tmp_path / "file" / "sub", given=True, overwrite=False)


def test_the_configuration_names_every_problem_at_once(tmp_path):
    import argparse

    from fixtures.config import option_families
    parser = argparse.ArgumentParser()
    for family in option_families().values():
        family.add_options(parser)
    bad = tmp_path / "p.yaml"
    bad.write_text("alpha: 7\n")
    opt = parser.parse_args(["--size-start", "9", "--size-max", "4", "--bmwg-profile", str(bad),
                             "--ryu-lldp-period", "1", "--controller", "null", "--report-dir", "rel"])
    with pytest.raises(pytest.UsageError) as info:
        BmwgConfig.from_options(opt)
    text = str(info.value)
    for what in ("--size-max (4) must not be below --size-start (9)", "key 'alpha' must be a number between 0 and 1",
                 "--ryu-lldp-period sets the LLDP period of the embedded Ryu or os-ken"):
        assert what in text
    ok = BmwgConfig.from_options(parser.parse_args(["--report-dir", "rel", "--switches", "1,4"]), args=("--profile",))
    assert ok.report_dir.is_absolute() and ok.async_params.switch_counts == (1, 4)   # §0.7: a relative folder
    assert "deprecated" in ok.notes[0]
    # a family is checked as its configure hook settled it (§5.4.1's cluster follows the controller: ryu-ha), once
    with pytest.raises(pytest.UsageError) as info:
        BmwgConfig.from_options(parser.parse_args(["--report-dir", "rel", "--keepalive", "500"]))
    assert str(info.value).count("ryu-ha's coordination service (ovsdb-server) probes at 1000 ms") == 1


def test_the_ramp_options_reach_the_asynchronous_benchmarks():
    # Issue 12 §1.5: --ramp-group and --handshake-timeout never reached the async benchmarks.
    from emulator import commands as c
    from emulator.params import AsyncParams, RampParams
    from fixtures.families.async_msgs import AsyncEmulator

    class Handle:
        def __init__(self, index):
            self.index, self.local = index, True

    class Pool:
        sent = []

        def ensure(self, n, address=None):
            return [Handle(i) for i in range(n)]

        def call_each(self, cmds, timeout, on_event=None):
            self.sent += list(cmds.values())
            return c.Connected(connected=4)

    em = AsyncEmulator(Pool, AsyncParams(no_learn=True, settle=0).at(4),
                       RampParams(ramp_group=6, handshake_timeout=2.5, connect_timeout=1.5), 4, shards=2)
    em.connect(("127.0.0.1", 6653))
    ramps = [cmd.ramp for cmd in Pool.sent]
    assert [r.ramp_group for r in ramps] == [3, 3]            # the group split between the two shards
    assert all(r.handshake_timeout == 2.5 and r.connect_timeout == 1.5 for r in ramps)


def test_a_stop_whose_signal_exception_was_swallowed_still_stops_the_run(tmp_path):
    # A handler's KeyboardInterrupt that lands in a finaliser is swallowed ("Exception ignored in ..."): a CI run
    # went on to its 50th trial after SIGHUP.  The loop looks at the recorded stop after every trial.
    from emulator.stopping import StopRequest

    def trial(i):
        if i == 2:
            StopRequest.reason = "stopped by SIGHUP (the run was terminated)"   # as the handler records it
        return TrialOutcome(1.0)

    run = make_run(tmp_path, repetitions=5)
    try:
        with pytest.raises(KeyboardInterrupt):
            run.trials(trial)
    finally:
        StopRequest.reason = None
    assert len(run.result["trials"]) == 2 and run.result["outcome"]["status"] == "interrupted"
    assert "SIGHUP" in run.result["outcome"]["reason"]


def test_an_external_controller_is_named_versioned_and_sampled_as_the_user_says():
    import argparse
    import os

    from fixtures.config import option_families
    from fixtures.devices.external import ExternalController
    parser = argparse.ArgumentParser()
    for family in option_families().values():
        family.add_options(parser)
    ok = BmwgConfig.from_options(parser.parse_args(["--controller", "external:127.0.0.1:6653", "--controller-name",
                                                    "onos", "--controller-version", "2.7.0", "--controller-pid",
                                                    str(os.getpid())]))
    assert (ok.run.controller_name, ok.run.controller_version, ok.run.controller_pid) == ("onos", "2.7.0", os.getpid())
    ctl = ExternalController("127.0.0.1", 6653, name="onos", version="2.7.0", pid=os.getpid())
    info = ctl.info()
    assert (info["name"], info["version"], info["mode"], info["pid"]) == ("onos", "2.7.0", "external", os.getpid())
    assert ctl.pid == os.getpid()                             # a running process: each trial samples it
    plain = ExternalController("127.0.0.1", 6653)
    assert (plain.info()["name"], plain.version(), plain.pid) == ("external", "unknown", None)
    with pytest.raises(pytest.UsageError) as info:
        BmwgConfig.from_options(parser.parse_args(["--controller-name", "x", "--controller-pid", "1"]))
    assert "--controller-name, --controller-pid: for --controller external:HOST:PORT" in str(info.value)
    with pytest.raises(pytest.UsageError, match="--controller-pid 4194999: no such process on this host"):
        BmwgConfig.from_options(parser.parse_args(["--controller", "external:h:1", "--controller-pid", "4194999"]))


@pytest.mark.component
def test_the_deployed_topology_leads_every_test_id():
    # The families parametrise their own cells in their own hooks; the topology must still come first in the ids
    # (a baseline matches entries by them, and -k selections name them): test_exception_handling's cells read
    # leaf-spine-2x2-exceptions-rate-0%, not exceptions-rate-0%-leaf-spine-2x2.
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-m", "pytest", "suites", "--collect-only", "-q", "-p", "no:cacheprovider"],
                         cwd=root, capture_output=True, text=True, timeout=120).stdout
    for test_id in ("test_exception_handling[leaf-spine-2x2-exceptions-rate-0%]",
                    "test_denial_of_service_handling[leaf-spine-2x2-dos-rate-none]",
                    "test_forwarding_table_capacity[leaf-spine-2x2-reactive]",
                    "test_network_reprovisioning_time[leaf-spine-2x2-link]",
                    "test_network_topology_change_detection_time[leaf-spine-2x2-link]"):
        assert test_id in out, f"{test_id} not collected:\n{out[-2000:]}"


def invalid_at(calls: list, bad: set):
    """A trial function whose calls number 1, 2, … (``calls`` records the index each was given) and whose call
    numbers in ``bad`` find the prerequisite broken."""
    def trial(i):
        calls.append(i)
        if len(calls) in bad:
            raise TrialInvalid(f"invalid: call {len(calls)} found the alternate path provisioned")
        return TrialOutcome(float(len(calls)))
    return trial


def test_an_invalid_trial_is_kept_aside_and_run_again_under_its_index(tmp_path):
    # Issue 25 §4: Faucet pre-learned the pair on the alternate spine in 3 of 30 §5.4.2 trials, which then failed
    # the run although the RFC's prerequisite, not the controller's function, had not held.
    calls: list = []
    run = make_run(tmp_path, repetitions=3, max_replaced=2)
    entry = run.trials(invalid_at(calls, {2}))
    assert calls == [1, 2, 2, 3]
    assert [(t["index"], t["value"]) for t in entry["trials"]] == [(1, 1.0), (2, 3.0), (3, 4.0)]
    disk = on_disk(tmp_path)
    assert [(t["index"], t["invalid"], t["ok"]) for t in disk["invalid_trials"]] == [(2, True, False)]
    assert disk["invalid_trials"][0]["reason"] == "invalid: call 2 found the alternate path provisioned"
    assert disk["max_replaced_trials"] == 2 and disk["summary"]["n"] == 3
    assert disk["outcome"]["status"] == "passed"
    assert any("trial 2 was invalid and was run again" in n for n in disk["notes"])


def test_invalid_trials_beyond_the_allowance_fail_and_say_so(tmp_path):
    calls: list = []
    run = make_run(tmp_path, repetitions=3, max_replaced=1)
    entry = run.trials(invalid_at(calls, {1, 2}))
    assert calls == [1, 1, 2, 3]
    assert len(entry["invalid_trials"]) == 1
    t1 = entry["trials"][0]
    assert not t1["ok"] and t1["invalid"] and "not replaced: 1 invalid trial(s) were replaced already" in t1["reason"]
    assert entry["outcome"]["status"] == "failed"


def test_without_an_allowance_an_invalid_trial_is_a_failed_one(tmp_path):
    calls: list = []
    entry = make_run(tmp_path, repetitions=2).trials(invalid_at(calls, {1}))
    assert calls == [1, 2] and entry["invalid_trials"] == []
    assert entry["trials"][0]["reason"] == "invalid: call 1 found the alternate path provisioned"


def test_an_invalid_warm_up_trial_is_not_run_again(tmp_path):
    calls: list = []
    entry = make_run(tmp_path, repetitions=2, warmup=1, max_replaced=3).trials(invalid_at(calls, {1}))
    assert calls == [1, 1, 2] and entry["invalid_trials"] == [] and len(entry["warmup_trials"]) == 1


def test_replaced_trials_show_in_the_report_and_junit(tmp_path):
    from reports.junit import benchmark_properties
    from reports.rfc_report import render_benchmark
    entry = make_run(tmp_path, repetitions=2, max_replaced=3).trials(invalid_at([], {1}))
    text = "\n".join(render_benchmark(entry))
    assert "Invalid trials run again (1 of at most 3, --max-replaced-trials)" in text
    assert "| 1 | invalid: call 1 found the alternate path provisioned |" in text
    assert benchmark_properties(entry)["trials.invalid_replaced"] == "1"


def test_the_run_record_names_only_the_cpus_the_suite_pinned():
    # An external controller (even one --start-command starts) is never pinned: a run against the null controller
    # started so recorded "controller: [1]", which was not so (docs/measurements.md, a known answer under load).
    from fixtures.session import cpu_affinity
    assert cpu_affinity("embedded", (1,), (0,)) == {"controller": [1], "emulator": [0]}
    assert cpu_affinity("external", (1,), (0,)) == {"emulator": [0]}
    assert cpu_affinity("embedded", (), ()) == "not pinned"


def test_a_check_that_answers_false_fails_the_benchmark_naming_what_it_checks(tmp_path):
    # A suite's check written as a predicate (``lambda e: all(...)``) was called and its False ignored: a check
    # that could not fail.  False now fails the benchmark as implausible, with the check's docstring or name.
    def no_more_sessions_than_attempted(entry):
        """a trial counted more sessions than it attempted"""
        return False

    for check, says in ((no_more_sessions_than_attempted, "a trial counted more sessions than it attempted"),
                        (lambda e: all(t["value"] > 0 for t in e["trials"]), "the check <lambda> failed")):
        run = make_run(tmp_path, repetitions=1)
        run.trials(lambda i: TrialOutcome(-1.0))
        with pytest.raises(AssertionError, match=says):
            run.finish(check)
        assert run.result["outcome"] == {"status": "failed", "reason": f"implausible result: {says}"}


def test_a_procedure_is_prepared_measured_concluded_and_checked_in_that_order(tmp_path):
    from fixtures.harness import Procedure
    said = []

    class Toy(Procedure):
        def prepare(self, run):
            said.append("prepare")
            run.parameters(offered=3)

        def trial(self, index):
            said.append(f"trial {index}")
            return TrialOutcome(float(index))

        def conclude(self, run, entry):
            said.append(f"conclude {len(entry['trials'])}")
            return [run.derived("test_y", pick=lambda t: (t["value"] * 2, ""))]

        def plausible(self, entry):
            """a value above the number of trials"""
            said.append("check")
            return all(t["value"] <= 2 for t in entry["trials"])

    run = make_run(tmp_path, repetitions=2)
    entry = run.measure(Toy())
    assert said == ["prepare", "trial 1", "trial 2", "conclude 2", "check"]
    assert entry["parameters"]["offered"] == 3 and entry["outcome"]["status"] == "passed"

    class Implausible(Toy):
        def plausible(self, entry):
            """a value above the number of trials"""
            return False

    run = make_run(tmp_path, repetitions=1)
    with pytest.raises(AssertionError, match="a value above the number of trials"):
        run.measure(Implausible())


def test_an_extra_trial_keeps_the_trial_rules_and_stays_out_of_the_trials(tmp_path):
    # Issue 43: the sustained-capacity search's steps ran outside the trial loop, unsampled and unjudged.
    run = make_run(tmp_path, repetitions=1)
    run.trials(lambda i: TrialOutcome(7.0))
    step = run.extra_trial(lambda: TrialOutcome(3.0, details={"held": True}))
    assert step.details == {"held": True} and len(run.result["trials"]) == 1
    silent = make_run(tmp_path, controller=FakeController(answers=False), repetitions=1)
    with pytest.raises(TrialFailed, match="the controller stopped answering during the trial"):
        silent.extra_trial(lambda: TrialOutcome(3.0))
    counted = silent.extra_trial(lambda: TrialOutcome(3.0, controller_exit_counted=True))
    assert counted.value == 3.0      # a step that counts the controller's end as its figure
