"""Integration: real processes on loopback — the capacity benchmark against controllers with a known capacity,
sharded over emulator processes, the embedded Ryu, and the faults a user meets: an unreachable or garbled
controller, bad options, a taken port, low open-file limits, a controller killed mid-trial, Ctrl-C, SIGTERM and
SIGKILL, a busy or unusable report folder, a misspelt -k."""

import json
import os
import re
import resource
import signal
import socket
import subprocess
import sys
import time

import pytest
from helpers import PROJECT_ROOT, GarbledController, default_sigint, orphans, pytest_run, wait_gone
from results_check import check_results_files

from emulator import codec
from emulator import commands as c
from emulator.nullctl import Behaviour
from emulator.params import CapacityParams, RampParams
from emulator.process import ChildProcess
from fixtures.benchmark import Benchmark
from fixtures.devices.base import ControllerError
from fixtures.devices.external import ExternalController
from fixtures.devices.null import NullController
from fixtures.devices.ryu import RyuController
from fixtures.families.capacity import CapacityEmulator
from fixtures.harness import BenchmarkRun, Judging, TrialOutcome, Trials
from fixtures.ports import free_port
from reports.results import ResultStore, load_results

pytestmark = pytest.mark.component

FAST_RAMP = RampParams(ramp_group=10, ramp_delay=0.0, handshake_timeout=3.0, connect_timeout=3.0)
FAST_HOLD = dict(hold_time=0.5, echo_interval=0.5, echo_timeout=2.0)
NULL_RUN = ("--controller", "null", "--max-sessions", "20", "--hold-time", "0.5")


def capacity(pool, address, sessions, openflow=codec.OFP13, ramp=FAST_RAMP, on_progress=None) -> dict:
    em = CapacityEmulator(lambda: pool, openflow, ramp, CapacityParams(max_sessions=sessions, **FAST_HOLD), 60)
    return em.trial(address, on_progress)


# A refusing controller shows as "refused" for SYNs after it stops listening, and as "reset" for
# connections the kernel had already completed in its accept queue: which comes first is timing.
@pytest.mark.parametrize("mode,kinds", [("refuse", {"refused", "reset"}), ("close", {"closed"})])
def test_capacity_equals_known_limit_of_null_controller(shard_pool, started, tmp_path, mode, kinds):
    ctl = started(NullController(tmp_path, ready_timeout=15, behaviour=Behaviour(session_limit=37, limit_mode=mode)))
    result = capacity(shard_pool, ctl.address, 500)
    assert result["kept"] == 37 and result["established"] == 37
    assert result["stop_reason"] == c.STOP_DROPPING
    assert result["first_failure"]["kind"] in kinds
    assert result["echo_rtt_ms"]["samples"] >= 37        # raw samples, summarised once


def test_silent_controller_is_a_handshake_timeout(shard_pool, started, tmp_path):
    ctl = started(NullController(tmp_path, ready_timeout=15, behaviour=Behaviour(session_limit=5, limit_mode="silent")))
    result = capacity(shard_pool, ctl.address, 100, ramp=FAST_RAMP.replace(handshake_timeout=1.0))
    assert result["kept"] == 5
    assert result["first_failure"]["kind"] == "handshake timeout"


def test_sharded_run_merges_and_stops_together(shard_pool, started, tmp_path, monkeypatch):
    # Three shards of at most 30 sessions each (their limit as if their open-file limit were 230).
    monkeypatch.setattr(type(shard_pool.shards[0]), "session_limit", property(lambda h: 30))
    open_ctl = started(NullController(tmp_path / "a", ready_timeout=15))
    full = capacity(shard_pool, open_ctl.address, 75)
    assert (full["shards"], full["kept"], full["stop_reason"]) == (3, 75, c.STOP_CAP)
    limited = started(NullController(tmp_path / "b", ready_timeout=15,
                                     behaviour=Behaviour(session_limit=50, limit_mode="refuse")))
    result = capacity(shard_pool, limited.address, 75)
    assert (result["shards"], result["kept"], result["stop_reason"]) == (3, 50, c.STOP_DROPPING)


def test_openflow10_sessions(shard_pool, started, tmp_path):
    ctl = started(NullController(tmp_path, ready_timeout=15))
    assert capacity(shard_pool, ctl.address, 20, openflow=codec.OFP10)["kept"] == 20


@pytest.mark.system
def test_embedded_ryu_ready_by_handshake_holds_sessions_and_leaves_nothing(shard_pool, tmp_path):
    ctl = RyuController(tmp_path / "logs", ready_timeout=60)
    ctl.start()
    pid = ctl.pid
    try:
        assert ctl.info()["name"] == "ryu" and ctl.version() == "4.34"
        assert ctl.info()["nofile_limit"]["soft"] == resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        result = capacity(shard_pool, ctl.address, 60)
        assert (result["kept"], result["established"], result["failed"]) == (60, 60, 0)
        assert ExternalController(*ctl.address).check_alive(5) < 5
    finally:
        ctl.stop()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_unreachable_controller_fails_fast_and_still_writes_its_reports(tmp_path):
    port = free_port()
    start = time.monotonic()
    with pytest.raises(ControllerError, match=f"nothing accepts connections at 127.0.0.1:{port}"):
        ExternalController("127.0.0.1", port).check_alive()
    out = tmp_path / "r"
    run = pytest_run("suites", "-k", "control_session_capacity", "--controller", f"external:127.0.0.1:{port}",
                     "--report-dir", out)
    assert run.returncode == 1
    assert "external controller is not answering" in run.stdout and "connection refused" in run.stdout
    assert time.monotonic() - start < 60
    check_results_files(out)   # issue 12 §1.11: results.json and junit.xml are written, with the error
    bench = load_results(out / "results.json")["benchmarks"][0]
    assert bench["outcome"]["status"] == "error" and "connection refused" in bench["outcome"]["reason"]
    junit = (out / "junit.xml").read_text()
    assert "<error" in junit and "connection refused" in junit
    assert "ERROR" in (out / "report.md").read_text()


def test_each_kind_of_bad_input_stops_the_run_in_one_short_message_before_anything_starts(tmp_path):
    """The front door, once per place a problem is found: a value the parser refuses, a file the configuration
    refuses, a -k that selects nothing, a report folder that holds a run or cannot be made.  Each is exit status 4
    and one short message, no traceback, nothing started or written.  Every message itself is checked on the
    configuration object (tests/test_option_errors.py) and the report folder's rule in tests/test_harness.py."""
    def refused(*args, says, lines=8):
        run = pytest_run("suites", *args)
        text = run.stdout + run.stderr
        assert run.returncode == 4 and says in text, text[-3000:]
        assert "Traceback" not in text and len(run.stderr.splitlines()) < lines, run.stderr
        return text

    out = tmp_path / "r"
    refused("-k", "control_session_capacity", "--repetitions", "0", "--report-dir", out,
            says="--repetitions: must be a positive integer (got '0')")
    bad = tmp_path / "p.yaml"
    bad.write_text("control_session_capacity: {min: [\n")
    refused("--bmwg-profile", bad, "--report-dir", out, says=f"profile {bad}: not valid YAML at line")
    text = refused("-k", "control_sesion_capacity", "--report-dir", out, says="selects no benchmark", lines=40)
    assert "control_session_capacity" in text and "async_message_processing_rate" in text
    assert not out.exists()                                   # nothing was written for any of them
    out.mkdir()
    (out / "results.json").write_text('{"kept": true}')
    refused("-k", "control_session_capacity", *NULL_RUN, "--report-dir", out, says="already holds a results.json")
    assert (out / "results.json").read_text() == '{"kept": true}'
    blocker = tmp_path / "file"
    blocker.write_text("x")   # as root no mode stops a write: a path whose parent is a file cannot be created
    refused("-k", "control_session_capacity", *NULL_RUN, "--report-dir", blocker / "sub",
            says="cannot create --report-dir")


def test_the_old_profile_option_still_works_with_a_deprecation_note(tmp_path):
    profile = tmp_path / "p.yaml"
    profile.write_text("control_session_capacity: {min: 10}\n")
    run = pytest_run("suites", "-k", "control_session_capacity", *NULL_RUN, "--repetitions", "2", "--profile",
                     profile, "--report-dir", tmp_path / "r")
    assert run.returncode == 0, run.stdout[-3000:]
    assert "--profile is deprecated" in run.stdout
    assert load_results(tmp_path / "r" / "results.json")["run"]["profile"] == str(profile)


def test_repetitions_for_gives_one_benchmark_a_count_of_its_own(tmp_path):
    run = pytest_run("suites", "-k", "control_session_capacity", *NULL_RUN, "--repetitions", "2",
                     "--repetitions-for", "control_session_capacity=1,exception_handling=10", "--report-dir",
                     tmp_path / "r")
    assert run.returncode == 0, run.stdout[-3000:]
    (entry,) = load_results(tmp_path / "r" / "results.json")["benchmarks"]
    assert entry["parameters"]["repetitions"] == 1 and len(entry["trials"]) == 1
    assert any("below the RFC 8456 §4.7 minimum" in note for note in entry["notes"])


def test_port_already_in_use(tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(ControllerError, match=f"port {port} on 127.0.0.1 is already in use"):
            NullController(tmp_path, port=port).start()


def test_fd_limit_too_low_is_said_with_the_numbers():
    def low_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    run = subprocess.run([sys.executable, "-m", "emulator", "capacity", "--controller", "127.0.0.1:6653",
                          "--max-sessions", "5000"], cwd=PROJECT_ROOT, capture_output=True, text=True,
                         preexec_fn=low_limit, timeout=30)
    assert run.returncode == 3
    event = json.loads(run.stdout.splitlines()[-1])
    assert event["event"] == "error"
    assert "need 5200 open files but RLIMIT_NOFILE is 256 (hard 256)" in event["message"]


def test_the_capacity_command_line_is_the_shards_responder(started, tmp_path):
    ctl = started(NullController(tmp_path, ready_timeout=15, behaviour=Behaviour(session_limit=12)))
    run = subprocess.run([sys.executable, "-m", "emulator", "capacity", "--controller", f"127.0.0.1:{ctl.port}",
                          "--max-sessions", "30", "--ramp-group", "5", "--hold-time", "0.3"], cwd=PROJECT_ROOT,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    events = [json.loads(line) for line in run.stdout.splitlines()]
    assert events[-1]["event"] == "result" and events[-1]["kept"] == 12
    assert any(e["event"] == "ramp_end" and e["reason"] == c.STOP_DROPPING for e in events)


def test_large_sharded_capacity_with_a_low_file_limit_keeps_every_trial(started, tmp_path):
    # Issue 12 §1.6: with `ulimit -n 256` and 2000 sessions (36 emulator processes) every trial failed with
    # "emulator shard N ended (-10)": the SIGUSR1 that stops the other shards killed those still starting up.
    ctl = started(NullController(tmp_path / "ctl", ready_timeout=15,
                                 behaviour=Behaviour(session_limit=150, limit_mode="close")))

    def low_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    out = tmp_path / "r"
    run = pytest_run("suites", "-k", "control_session_capacity", "--controller", f"external:127.0.0.1:{ctl.port}",
                     "--max-sessions", "400", "--hold-time", "0.3", "--ramp-group", "40", "--repetitions", "3",
                     "--report-dir", out, preexec_fn=low_limit, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:]
    bench = load_results(out / "results.json")["benchmarks"][0]
    assert [t["value"] for t in bench["trials"]] == [150] * 3
    assert all(t["details"]["shards"] == 8 for t in bench["trials"])       # 400 sessions at 56 per shard


def test_controller_killed_mid_trial_fails_that_trial_only(shard_pool, tmp_path):
    ctl = NullController(tmp_path / "logs", ready_timeout=15)
    ctl.start()
    store = ResultStore(tmp_path / "results.json", {"started": "now"})
    bench = Benchmark(name="test_control_session_capacity", title="t", section="5.2.1", category="scalability",
                      unit="sessions", symbol="CCn", definition="", measurement_point="", higher_is_better=True)
    run = BenchmarkRun(store, ctl, bench, Trials(3, 0, 1), judge=lambda name: Judging(),
                       progress=lambda line: None)

    def trial(index):
        def kill_once(progress):
            if index == 2 and progress["established"] > 0 and ctl.pid:
                os.kill(ctl.pid, signal.SIGKILL)

        em = CapacityEmulator(lambda: shard_pool, codec.OFP13, FAST_RAMP.replace(ramp_group=5, ramp_delay=0.05),
                              CapacityParams(max_sessions=300, **FAST_HOLD), 60)
        em.progress_interval = 0.1
        r = em.trial(ctl.address, on_progress=kill_once)
        return TrialOutcome(r["kept"], r)

    try:
        entry = run.trials(trial)
    finally:
        ctl.stop()
    ok = [t["ok"] for t in entry["trials"]]
    assert ok == [True, False, True]
    assert "controller exited (signal 9 (SIGKILL)) during the trial" in entry["trials"][1]["reason"]
    on_disk = load_results(store.path)["benchmarks"][0]
    assert [t["ok"] for t in on_disk["trials"]] == ok and on_disk["summary"]["n"] == 2
    assert on_disk["outcome"]["status"] == "passed"          # one failed trial allowed (--max-failed-trials 1)


def test_failed_trials_fail_the_benchmark_everywhere(started, tmp_path):
    # Issue 12 §1.3: 4 of 5 trials failed → "1 passed", exit 0, junit 0 failures.  One rule now: a benchmark
    # with a failed trial fails in pytest, the exit status, junit.xml and report.md alike.
    ctl = NullController(tmp_path / "ctl", ready_timeout=15)
    ctl.start()
    out = tmp_path / "r"
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "suites", "-k",
                             "control_session_capacity", "--controller", f"external:127.0.0.1:{ctl.port}",
                             "--max-sessions", "20", "--hold-time", "0.5", "--repetitions", "5", "--report-dir", out],
                            cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for_trials(out / "results.json", 1)
        ctl.stop()                   # the external controller goes away after the first trial
        text, _ = proc.communicate(timeout=120)
    finally:
        ctl.stop()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, text[-3000:]
    assert "1 failed" in text and "FAILED" in text
    bench = load_results(out / "results.json")["benchmarks"][0]
    # Trial 2 may have begun before the controller went: its sessions closed under it (a §5.2.1 finding, "closes
    # earlier sessions"), and the trials after it fail.
    failed = re.search(r"([34]) of 5 trials failed", bench["outcome"]["reason"])
    assert bench["outcome"]["status"] == "failed" and failed, bench["outcome"]
    junit = (out / "junit.xml").read_text()
    assert 'failures="1"' in junit and failed.group(0) in junit
    assert "FAILED" in (out / "report.md").read_text()


def wait_for_trials(results, n, timeout=120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if results.exists():
            try:
                data = json.loads(results.read_text())
            except ValueError:
                data = {"benchmarks": []}
            if data["benchmarks"] and len(data["benchmarks"][0]["trials"]) >= n:
                return data
        time.sleep(0.2)   # waiting for another process; not a measurement
    raise AssertionError(f"the run never completed {n} trial(s)")


def start_run(out, *extra):
    return subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "suites", "-k",
                             "control_session_capacity", *NULL_RUN, "--repetitions", "50", "--report-dir", str(out),
                             *extra], cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=default_sigint)


def descendants(pid) -> list:
    import psutil
    try:
        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_stopped_run_keeps_its_trials_renders_its_reports_and_leaves_no_process(tmp_path, how):
    # Issue 12 §1.1: SIGTERM (timeout, CI cancellation, tox) left Ryu and the emulator running under PID 1 and
    # wrote no report.  Ctrl-C, SIGTERM and SIGHUP now all stop the run the same way.
    out = tmp_path / "report"
    proc = start_run(out)
    try:
        wait_for_trials(out / "results.json", 2)
        children = descendants(proc.pid)
        proc.send_signal(getattr(signal, how))
        text, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 2, text[-3000:]   # pytest's "interrupted"
    bench = load_results(out / "results.json")["benchmarks"][0]
    assert len(bench["trials"]) >= 2 and all(t["ok"] for t in bench["trials"])
    assert bench["outcome"]["status"] == "interrupted"
    assert (how == "SIGINT") == ("Ctrl-C" in bench["outcome"]["reason"]) and (how == "SIGINT" or how in text)
    assert "<error" in (out / "junit.xml").read_text() and "interrupted" in (out / "report.md").read_text()
    check_results_files(out)
    assert children, "the run had started a controller and emulator shards"
    assert not wait_gone(children), "processes left behind"
    assert not [p for p in orphans() if str(out) in p[1]]


def test_a_killed_run_leaves_no_process(tmp_path):
    # Issue 12 §1.1: every child dies with its parent even when pytest itself is SIGKILLed.
    out = tmp_path / "report"
    proc = start_run(out)
    try:
        wait_for_trials(out / "results.json", 1)
        children = descendants(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert children
    assert not wait_gone(children), "children outlived the SIGKILLed run"
    data = load_results(out / "results.json")   # everything up to the last trial is on disk
    assert data["benchmarks"][0]["trials"] and data["benchmarks"][0]["outcome"]["status"] == "running"


# A parent like tox: it starts the run with TOX_ENV_NAME set, reads its output, and on SIGTERM simply exits.
TOX_LIKE = ("import os, subprocess, sys, time\n"
            "p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,\n"
            "                     env=dict(os.environ, TOX_ENV_NAME='bench'))\n"
            "print(p.pid, flush=True)\n"
            "time.sleep(600)\n")


def test_a_run_under_tox_stops_when_tox_is_terminated(tmp_path):
    # tox does not pass SIGTERM on to its commands: `tox -e bench` sent SIGTERM went away and left pytest running
    # with nobody reading its output, until a progress line failed on the broken pipe and the run died "running".
    out = tmp_path / "report"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "suites", "-k", "control_session_capacity",
           *NULL_RUN, "--repetitions", "50", "--report-dir", str(out)]
    tox = subprocess.Popen([sys.executable, "-c", TOX_LIKE, *cmd], cwd=PROJECT_ROOT, stdout=subprocess.PIPE,
                           text=True, preexec_fn=default_sigint)
    try:
        run = int(tox.stdout.readline())
        wait_for_trials(out / "results.json", 2)
        children = descendants(run)
        tox.terminate()
        tox.wait(timeout=10)
        assert not wait_gone([run], timeout=60), "the run went on after its tox ended"
    finally:
        if tox.poll() is None:
            tox.kill()
    bench = load_results(out / "results.json")["benchmarks"][0]
    assert bench["outcome"]["status"] == "interrupted" and "parent process" in bench["outcome"]["reason"]
    assert len(bench["trials"]) >= 2 and all(t["ok"] for t in bench["trials"])
    assert "<error" in (out / "junit.xml").read_text() and "parent process" in (out / "report.md").read_text()
    check_results_files(out)
    assert children and not wait_gone(children), "processes left behind"


def test_suite_end_to_end_with_profile_then_baseline(tmp_path):
    profile = tmp_path / "p.yaml"
    profile.write_text("control_session_capacity: {min: 10}\n")
    first = tmp_path / "first"
    run = pytest_run("suites", "-k", "control_session_capacity", *NULL_RUN, "--repetitions", "5", "--bmwg-profile",
                     profile, "--report-dir", first)
    assert run.returncode == 0, run.stdout[-3000:]
    assert "verdict PASS by sign-test (zero-variance sample), p = 0.0312" in run.stdout
    assert "trial 5 (5/5) ≥ 20 sessions" in run.stdout
    assert sorted(p.name for p in first.iterdir()) == ["junit.xml", "logs", "plots", "report.html", "report.md",
                                                         "results.json"]
    data = load_results(first / "results.json")
    bench = data["benchmarks"][0]
    assert [t["value"] for t in bench["trials"]] == [20] * 5
    assert all(t["controller_resources"]["samples"] >= 1 for t in bench["trials"])
    assert data["run"]["controller"]["nofile_limit"]["hard"] > 0          # issue 12 §1.11
    assert data["run"]["command"].startswith("pytest ") or "-k control_session_capacity" in data["run"]["command"]
    check_results_files(first)
    second = tmp_path / "second"
    run = pytest_run("suites", "-k", "control_session_capacity", *NULL_RUN, "--repetitions", "5", "--baseline",
                     first / "results.json", "--report-dir", second)
    assert run.returncode == 0, run.stdout[-3000:]
    verdict = load_results(second / "results.json")["benchmarks"][0]["verdict"]
    assert verdict["result"] == "PASS" and verdict["test"] == "none (identical constant samples)"


def test_a_garbled_controller_is_named_with_its_bytes(tmp_path):
    # Issue 12 §1.7: malformed OpenFlow from the controller gave a 75-line traceback at start.
    with GarbledController(tmp_path, "handshake:short-length") as bad:
        with pytest.raises(ControllerError, match="bytes that are not OpenFlow .*0[14]05000400"):
            ExternalController("127.0.0.1", bad.port).check_alive(5)
        out = tmp_path / "r"
        run = pytest_run("suites", "-k", "control_session_capacity", "--controller", f"external:127.0.0.1:{bad.port}",
                         "--report-dir", out)
    assert run.returncode == 1 and "not OpenFlow" in run.stdout and "Traceback" not in run.stdout
    assert load_results(out / "results.json")["benchmarks"][0]["outcome"]["status"] == "error"


def test_a_controller_speaking_only_openflow_10_is_told_in_words_in_all_three_outputs(tmp_path):
    log = tmp_path / "of10.log"
    port = free_port()
    proc = ChildProcess([sys.executable, "-m", "emulator.nullctl", "--port", str(port), "--openflow", "1.0"],
                        name="of10", log=log).start()
    try:
        proc.wait_ready(lambda: b"listening" in log.read_bytes(), 15, what="the 1.0-only controller", interval=0.05,
                        retry_on=(OSError,))
        out = tmp_path / "r"
        run = pytest_run("suites", "-k", "async_message_processing_time", "--controller", f"external:127.0.0.1:{port}",
                         "--openflow", "1.3", "--report-dir", out)
    finally:
        proc.end()
    said = "the controller speaks OpenFlow 1.0 only; run with --openflow 1.0"
    assert run.returncode == 1 and said in run.stdout, run.stdout[-3000:]
    bench = load_results(out / "results.json")["benchmarks"][0]
    assert said in bench["outcome"]["reason"]
    assert said in (out / "junit.xml").read_text() and said in (out / "report.md").read_text()


def test_capped_trials_below_a_minimum_are_inconclusive_not_fail(tmp_path):
    profile = tmp_path / "p.yaml"
    profile.write_text("control_session_capacity: {min: 50}\n")
    run = pytest_run("suites", "-k", "control_session_capacity", *NULL_RUN, "--repetitions", "5", "--bmwg-profile",
                     profile, "--report-dir", tmp_path / "r")
    assert run.returncode == 0, run.stdout[-3000:]
    bench = load_results(tmp_path / "r" / "results.json")["benchmarks"][0]
    assert all(t["lower_bound"] for t in bench["trials"])
    assert bench["verdict"]["result"] == "INCONCLUSIVE"
    assert bench["verdict"]["note"].startswith("FAIL withdrawn: 5 trial value(s) are lower bounds")
    assert "≥ 20" in (tmp_path / "r" / "report.md").read_text()


def test_embedded_controller_on_a_taken_port_retries_on_another(tmp_path, monkeypatch):
    import fixtures.ports as controllers
    with socket.socket() as holder:  # the port "free_port" first offers is taken before the bind
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        offers = iter([taken])
        real = controllers.free_port
        monkeypatch.setattr(controllers, "free_port", lambda host="127.0.0.1": next(offers, None) or real(host))
        ctl = NullController(tmp_path, ready_timeout=15)
        try:
            ctl.start()
            assert ctl.port != taken and ctl.starts == 2
        finally:
            ctl.stop()


def test_free_port_is_below_the_ephemeral_range():
    from fixtures.ports import ephemeral_range
    assert free_port() < ephemeral_range()[0]


def test_null_controllers_sharing_one_port(shard_pool, tmp_path):
    port = free_port()
    shared = [NullController(tmp_path / f"n{i}", port=port, reuse_port=True, ready_timeout=15) for i in range(2)]
    try:
        for ctl in shared:
            ctl.start()
        assert capacity(shard_pool, ("127.0.0.1", port), 60)["kept"] == 60
        assert all(ctl.exit_reason() is None for ctl in shared)
    finally:
        for ctl in shared:
            ctl.stop()
    with pytest.raises(ValueError, match="needs that port given"):
        NullController(tmp_path, reuse_port=True)


def test_a_dead_shard_fails_its_call_by_name_and_is_replaced(shard_pool, started, tmp_path):
    ctl = started(NullController(tmp_path, ready_timeout=15))
    victim = shard_pool.shards[1]
    os.kill(victim.info.pid, signal.SIGKILL)
    with pytest.raises(c.EmulatorError, match=r"emulator shard 1 .* (ended|is gone)"):
        shard_pool.call(c.Hello(), 20, shards=[1])
    shard_pool.ensure(2)
    assert shard_pool.shards[1].alive and shard_pool.shards[1].info.pid != victim.info.pid
    assert capacity(shard_pool, ctl.address, 10)["kept"] == 10
