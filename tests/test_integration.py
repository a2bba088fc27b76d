"""Integration: real processes on loopback — the null controller with a known capacity, the
embedded Ryu, sharded emulator runs, and the faults a user meets (unreachable controller, bad
options, port in use, low fd limit, controller killed mid-trial, Ctrl-C)."""

import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time

import pytest

from emulator import codec
from fixtures.controllers import (PROJECT_ROOT, ControllerError, ExternalController, NullController, RyuController,
                                  free_port, openflow_probe)
from fixtures.emulated_network import STOP_CAP, STOP_DROPPING, EmulatedNetwork
from fixtures.harness import BenchmarkRun, Judging, TrialOutcome
from reports.results import ResultStore, load_results

pytestmark = pytest.mark.integration

FAST = dict(ramp_group=10, ramp_delay=0.0, hold_time=0.5, echo_interval=0.5, echo_timeout=2.0,
            handshake_timeout=3.0, connect_timeout=3.0, deadline=60)


@pytest.fixture
def null_controller(tmp_path):
    started = []

    def make(**kwargs):
        ctl = NullController(tmp_path / "logs", ready_timeout=15, **kwargs)
        ctl.start()
        started.append(ctl)
        return ctl

    yield make
    for ctl in started:
        ctl.stop()


def pytest_run(*args, timeout=180):
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=timeout)


# A refusing controller shows as "refused" for SYNs after it stops listening, and as "reset" for
# connections the kernel had already completed in its accept queue: which comes first is timing.
@pytest.mark.parametrize("mode,kinds", [("refuse", {"refused", "reset"}), ("close", {"closed"})])
def test_capacity_equals_known_limit_of_null_controller(null_controller, tmp_path, mode, kinds):
    ctl = null_controller(session_limit=37, limit_mode=mode)
    result = EmulatedNetwork(tmp_path).session_capacity(ctl.address, max_sessions=500, **FAST)
    assert result["kept"] == 37 and result["established"] == 37
    assert result["stop_reason"] == STOP_DROPPING
    assert result["first_failure"]["kind"] in kinds


def test_silent_controller_is_a_handshake_timeout(null_controller, tmp_path):
    ctl = null_controller(session_limit=5, limit_mode="silent")
    result = EmulatedNetwork(tmp_path).session_capacity(ctl.address, max_sessions=100,
                                                        **{**FAST, "handshake_timeout": 1.0})
    assert result["kept"] == 5
    assert result["first_failure"]["kind"] == "handshake timeout"


def test_sharded_run_merges_and_stops_together(null_controller, tmp_path):
    net = EmulatedNetwork(tmp_path, per_process=30)
    open_ctl = null_controller()
    full = net.session_capacity(open_ctl.address, max_sessions=75, **FAST)
    assert (full["shards"], full["kept"], full["stop_reason"]) == (3, 75, STOP_CAP)
    limited = null_controller(session_limit=50, limit_mode="refuse")
    result = net.session_capacity(limited.address, max_sessions=75, **FAST)
    assert (result["shards"], result["kept"], result["stop_reason"]) == (3, 50, STOP_DROPPING)


def test_openflow10_sessions(null_controller, tmp_path):
    ctl = null_controller()
    result = EmulatedNetwork(tmp_path, openflow=codec.OFP10).session_capacity(ctl.address, max_sessions=20, **FAST)
    assert result["kept"] == 20


def test_embedded_ryu_ready_by_handshake_holds_sessions_and_leaves_nothing(tmp_path):
    ctl = RyuController(tmp_path / "logs", ready_timeout=60)
    ctl.start()
    pid = ctl.pid
    try:
        assert ctl.info()["name"] == "ryu" and ctl.version() == "4.34"
        result = EmulatedNetwork(tmp_path).session_capacity(ctl.address, max_sessions=60, **FAST)
        assert (result["kept"], result["established"], result["failed"]) == (60, 60, 0)
        assert openflow_probe(*ctl.address, timeout=5) < 5
    finally:
        ctl.stop()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_unreachable_controller_fails_fast_with_a_clear_error(tmp_path):
    port = free_port()
    start = time.monotonic()
    with pytest.raises(ControllerError, match=f"nothing accepts connections at 127.0.0.1:{port}"):
        ExternalController("127.0.0.1", port).check_alive()
    run = pytest_run("suites", "-k", "control_session_capacity", "--controller", f"external:127.0.0.1:{port}",
                     "--report-dir", str(tmp_path))
    assert run.returncode != 0
    assert "external controller is not answering" in run.stdout and "connection refused" in run.stdout
    assert time.monotonic() - start < 30


def test_bad_options_are_named():
    run = pytest_run("suites", "--repetitions", "0", "--openflow", "2.0", "--controller", "floodlight",
                     "--ramp-group", "-1")
    assert run.returncode == 4  # pytest's usage error
    for text in ("--repetitions must be a positive integer (got 0)", "--openflow must be one of 1.0, 1.3",
                 "--controller 'floodlight'", "--ramp-group must be a positive integer (got -1)"):
        assert text in run.stderr


def test_malformed_profile_is_named_before_anything_starts(tmp_path):
    bad = tmp_path / "p.yaml"
    bad.write_text("control_session_capacity: {min: [\n")
    run = pytest_run("suites", "--profile", str(bad))
    assert run.returncode == 4 and f"profile {bad} is not valid YAML" in run.stderr


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
    assert event["kind"] == "fd_limit"
    assert "need 5064 open files but RLIMIT_NOFILE is 256 (hard 256)" in event["message"]


def test_controller_killed_mid_trial_fails_that_trial_only(tmp_path):
    ctl = NullController(tmp_path / "logs", ready_timeout=15)
    ctl.start()
    store = ResultStore(tmp_path / "results.json", {"started": "now"})
    run = BenchmarkRun(store, ctl, benchmark="test_control_session_capacity", title="t", rfc_section="5.2.1",
                       unit="sessions", symbol="CCn", definition="", measurement_point="", higher_is_better=True,
                       parameters={}, repetitions=3, judging=Judging(), progress=lambda line: None)
    net = EmulatedNetwork(tmp_path)

    def trial(index):
        def kill_once(progress):
            if index == 2 and progress["established"] > 0 and ctl.pid:
                os.kill(ctl.pid, signal.SIGKILL)

        params = {**FAST, "ramp_group": 5, "ramp_delay": 0.05}
        r = net.session_capacity(ctl.address, max_sessions=300, on_progress=kill_once, **params)
        return TrialOutcome(r["kept"], r)

    try:
        entry = run.run(trial)
    finally:
        ctl.stop()
    ok = [t["ok"] for t in entry["trials"]]
    assert ok == [True, False, True]
    assert "controller exited (signal 9 (SIGKILL)) during the trial" in entry["trials"][1]["reason"]
    on_disk = load_results(store.path)["benchmarks"][0]
    assert [t["ok"] for t in on_disk["trials"]] == ok and on_disk["summary"]["n"] == 2


def test_ctrl_c_keeps_completed_trials_and_leaves_no_process(tmp_path):
    import psutil
    report = tmp_path / "report"
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "suites", "-k",
                             "control_session_capacity", "--controller", "null", "--repetitions", "50",
                             "--max-sessions", "20", "--hold-time", "0.5", "--report-dir", str(report)],
                            cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            # A shell without job control starts background jobs with SIGINT ignored, and
                            # Python keeps an inherited SIG_IGN: give the run the default disposition.
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    results = report / "results.json"
    deadline = time.monotonic() + 120
    children = []
    while time.monotonic() < deadline:
        children = psutil.Process(proc.pid).children(recursive=True) or children
        if results.exists():
            data = json.loads(results.read_text())
            if data["benchmarks"] and len(data["benchmarks"][0]["trials"]) >= 2:
                break
        time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("the run never completed two trials")
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2, out  # pytest's "interrupted"
    bench = load_results(results)["benchmarks"][0]
    assert len(bench["trials"]) >= 2 and all(t["ok"] for t in bench["trials"])
    assert bench["outcome"]["status"] == "interrupted"
    assert children, "the run had started a controller"
    gone, alive = psutil.wait_procs(children, timeout=10)
    assert not alive, [p.cmdline() for p in alive]


def test_suite_end_to_end_with_profile_then_baseline(tmp_path):
    profile = tmp_path / "p.yaml"
    profile.write_text("control_session_capacity: {min: 10}\n")
    first = tmp_path / "first"
    run = pytest_run("suites", "-k", "control_session_capacity", "--controller", "null", "--repetitions", "5",
                     "--max-sessions", "20", "--hold-time", "0.5", "--profile", str(profile), "--report-dir", str(first))
    assert run.returncode == 0, run.stdout[-3000:]
    assert "verdict PASS by sign-test (zero-variance sample), p = 0.0312" in run.stdout
    assert "trial 5 (5/5) 20 sessions" in run.stdout
    assert sorted(p.name for p in first.iterdir()) == ["junit.xml", "logs", "report.md", "results.json"]
    bench = load_results(first / "results.json")["benchmarks"][0]
    assert [t["value"] for t in bench["trials"]] == [20] * 5
    assert all(t["controller_resources"]["samples"] >= 1 for t in bench["trials"])
    second = tmp_path / "second"
    run = pytest_run("suites", "-k", "control_session_capacity", "--controller", "null", "--repetitions", "5",
                     "--max-sessions", "20", "--hold-time", "0.5", "--baseline", str(first / "results.json"),
                     "--report-dir", str(second))
    assert run.returncode == 0, run.stdout[-3000:]
    verdict = load_results(second / "results.json")["benchmarks"][0]["verdict"]
    assert verdict["result"] == "PASS" and verdict["test"] == "none (identical constant samples)"


def test_capped_trials_below_a_minimum_are_inconclusive_not_fail(tmp_path):
    profile = tmp_path / "p.yaml"
    profile.write_text("control_session_capacity: {min: 50}\n")
    run = pytest_run("suites", "-k", "control_session_capacity", "--controller", "null", "--repetitions", "5",
                     "--max-sessions", "20", "--hold-time", "0.5", "--profile", str(profile),
                     "--report-dir", str(tmp_path / "r"))
    assert run.returncode == 0, run.stdout[-3000:]
    bench = load_results(tmp_path / "r" / "results.json")["benchmarks"][0]
    assert all(t["lower_bound"] for t in bench["trials"])
    assert bench["verdict"]["result"] == "INCONCLUSIVE"
    assert bench["verdict"]["note"].startswith("FAIL withdrawn: 5 trial value(s) are lower bounds")


def test_embedded_controller_on_a_taken_port_retries_on_another(tmp_path, monkeypatch):
    import fixtures.controllers as controllers
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
    from fixtures.controllers import ephemeral_range
    assert free_port() < ephemeral_range()[0]


def test_null_controllers_sharing_one_port(tmp_path):
    port = free_port()
    shared = [NullController(tmp_path / f"n{i}", port=port, reuse_port=True, ready_timeout=15) for i in range(2)]
    try:
        for ctl in shared:
            ctl.start()
        result = EmulatedNetwork(tmp_path).session_capacity(("127.0.0.1", port), max_sessions=60, **FAST)
        assert result["kept"] == 60
        assert all(ctl.exit_reason() is None for ctl in shared)
    finally:
        for ctl in shared:
            ctl.stop()
    with pytest.raises(ValueError, match="needs that port given"):
        NullController(tmp_path, reuse_port=True)
