"""Integration: an external controller the suite starts, restarts and stops with the user's commands
(``--start-command``, ``--stop-command``), against the null controller (``python -m emulator.nullctl``) made to
crash once by tests/crashing_controller.py; and one the user runs, gone after a trial, which fails the rest of the
benchmark at once."""

import os
import sys
import time

import pytest
from helpers import PROJECT_ROOT, orphans, pytest_run, wait_gone
from results_check import check_results_files

from emulator.process import ChildProcess, wait_until
from fixtures.devices.base import ControllerError, ControllerGone
from fixtures.devices.external import ExternalController, Lifecycle, answers, group_members
from fixtures.ports import free_port
from reports.results import load_results

pytestmark = pytest.mark.component

HELPER = PROJECT_ROOT / "tests" / "crashing_controller.py"
NULLCTL = f"{sys.executable} -m emulator.nullctl --host {{host}} --port {{port}}"
CAPACITY = ("suites", "-k", "control_session_capacity", "--max-sessions", "20", "--hold-time", "0.5")


def crashing(counter, start: int, sessions: int = 5) -> str:
    """A start command running the null controller, which crashes on start number ``start`` once it holds
    ``sessions`` sessions (a trial's, never the readiness probe's single one)."""
    return f"{sys.executable} {HELPER} {counter} {start} {sessions} {{port}} -- {NULLCTL}"


def test_a_started_controller_that_crashes_in_trial_1_is_started_again_and_trials_2_to_n_succeed(tmp_path):
    port, out, counter = free_port(), tmp_path / "r", tmp_path / "starts"
    # start 1: the session's; start 2: trial 1's fresh start, which crashes under the trial's sessions
    run = pytest_run(*CAPACITY, "--controller", f"external:127.0.0.1:{port}", "--controller-name", "nullctl",
                     "--start-command", crashing(counter, 2), "--repetitions", "3", "--max-failed-trials", "1",
                     "--report-dir", out)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    check_results_files(out)
    data = load_results(out / "results.json")
    bench = data["benchmarks"][0]
    trials = bench["trials"]
    assert [t["ok"] for t in trials] == [False, True, True], trials
    assert "controller exited" in trials[0]["reason"] and "during the trial" in trials[0]["reason"]
    assert "crashing_controller: 5 sessions held" in trials[0]["controller_log_tail"]
    assert all(t["value"] == 20 for t in trials[1:])
    assert any(t.get("controller_resources", {}).get("samples") for t in trials[1:])   # the listener, sampled
    assert counter.read_text() == "4"          # the session's start, then one fresh start per trial
    log = (out / "logs" / "nullctl.log").read_text()
    assert log.count("===== bmwg-sdn: start #") == 4 and "5 sessions held" in log
    ctl = data["run"]["controller"]
    assert ctl["start_command"] == crashing(counter, 2) and ctl["persistence"].startswith("none (restarted")
    assert bench["outcome"]["status"] == "passed"
    assert not answers("127.0.0.1", port) and not orphans()


def test_with_no_restart_a_crashed_controller_is_started_again_for_the_next_trial(tmp_path):
    port, out, counter = free_port(), tmp_path / "r", tmp_path / "starts"
    run = pytest_run(*CAPACITY, "--controller", f"external:127.0.0.1:{port}", "--no-restart",
                     "--start-command", crashing(counter, 1), "--repetitions", "3", "--report-dir", out)
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-2000:]       # 1 of 3 failed, none allowed
    trials = load_results(out / "results.json")["benchmarks"][0]["trials"]
    assert [t["ok"] for t in trials] == [False, True, True], trials
    assert counter.read_text() == "2"          # the crashed one, then one start kept for trials 2 and 3
    assert "1 of 3 trials failed: controller exited" in run.stdout
    assert not answers("127.0.0.1", port) and not orphans()


def test_without_a_start_command_a_controller_gone_fails_the_rest_of_the_benchmark_at_once(tmp_path):
    port, out, counter = free_port(), tmp_path / "r", tmp_path / "starts"
    # the user's controller: crashes under trial 1's sessions, and nothing starts it again
    argv = crashing(counter, 1).replace("{port}", str(port)).replace("{host}", "127.0.0.1").split()
    user = ChildProcess(argv, name="users-controller", log=tmp_path / "user.log").start()
    try:
        wait_until(lambda: answers("127.0.0.1", port), 20, what="the user's controller", retry_on=(OSError,))
        t0 = time.monotonic()
        run = pytest_run(*CAPACITY, "--controller", f"external:127.0.0.1:{port}", "--repetitions", "6",
                         "--report-dir", out)
        took = time.monotonic() - t0
    finally:
        user.end()
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-2000:]
    check_results_files(out)
    bench = load_results(out / "results.json")["benchmarks"][0]
    trials = bench["trials"]
    # trial 1: the sessions the controller took with it are a §5.2.1 finding (closes earlier sessions), or a
    # failed trial; trial 2 finds it gone
    assert len(trials) == 6 and not any(t["ok"] for t in trials[1:])
    gone = trials[1]["reason"]
    assert gone.startswith("controller not ready: external controller is not answering: nothing accepts "
                           f"connections at 127.0.0.1:{port}") and "no --start-command" in gone
    assert [t["reason"] for t in trials[2:]] == [gone] * 4 and all(t["not_run"] for t in trials[2:])
    assert "trial(s) 3–6 not run" in " ".join(bench["notes"])
    reason = bench["outcome"]["reason"]
    assert bench["outcome"]["status"] == "failed" and gone in reason and reason.count("controller not ready") == 1
    assert gone in (out / "junit.xml").read_text() and "no --start-command" in (out / "report.md").read_text()
    assert took < 90 and sum(t["duration_s"] for t in trials[1:]) < 5      # never one timeout per trial


def test_a_start_command_that_fails_is_named_with_its_log_at_once(tmp_path):
    port = free_port()
    ctl = ExternalController("127.0.0.1", port, lifecycle=Lifecycle("echo no licence for {host}:{port} >&2; exit 3"),
                             log_dir=tmp_path, ready_timeout=30)
    t0 = time.monotonic()
    with pytest.raises(ControllerError, match=r"--start-command exited \(exit status 3\)") as exc:
        ctl.start()
    assert f"no licence for 127.0.0.1:{port}" in str(exc.value) and time.monotonic() - t0 < 10


def test_the_stop_command_stops_it_and_the_group_is_ended_either_way(tmp_path):
    port = free_port()
    pidfile = tmp_path / "pid"
    # a launcher script that starts the controller in the background and waits, as bin/karaf or a JVM wrapper does
    start = launcher(pidfile)
    stop = f"kill -TERM $(cat {pidfile})"
    ctl = ExternalController("127.0.0.1", port, lifecycle=Lifecycle(start, stop), log_dir=tmp_path,
                             ready_timeout=30)
    ctl.start()
    try:
        server = int(pidfile.read_text())
        assert ctl.pid == server != ctl.proc.pid          # the listener is sampled, not the launcher's shell
        assert ctl.exit_reason() is None and ctl.check_alive(5) < 5
        ctl.restart()
        assert ctl.pid == int(pidfile.read_text()) != server and not wait_gone([server], 5)
    finally:
        leader = ctl.proc.pid
        ctl.stop()
    assert not group_members(leader) and not answers("127.0.0.1", port)
    assert ctl.log_tail().count("===== bmwg-sdn: stop: kill -TERM") == 2


def test_a_started_controllers_open_file_limit_is_read_from_the_process_that_listens(tmp_path):
    lifecycle = Lifecycle(f"ulimit -Sn 777; {NULLCTL} & wait", grace=2)
    ctl = ExternalController("127.0.0.1", free_port(), lifecycle=lifecycle, log_dir=tmp_path, ready_timeout=30)
    assert "nofile_limit" not in ctl.info()          # not started: not known
    ctl.start()
    try:
        assert ctl.info()["nofile_limit"]["soft"] == 777
    finally:
        ctl.stop()
    assert ctl.info()["nofile_limit"]["soft"] == 777  # kept for the report after the controller is gone


def test_without_a_stop_command_the_group_is_terminated_and_a_user_controller_is_never_stopped(tmp_path):
    port = free_port()
    ctl = ExternalController("127.0.0.1", port, lifecycle=Lifecycle(f"{NULLCTL} & wait", grace=2),
                             log_dir=tmp_path, ready_timeout=30)
    ctl.start()
    leader, server = ctl.proc.pid, ctl.pid
    ctl.stop()
    assert not wait_gone([leader, server], 5) and not group_members(leader)
    user = ExternalController("127.0.0.1", port, ready_timeout=2)
    with pytest.raises(ControllerGone, match="no --start-command"):
        user.prepare_trial()
    assert os.path.exists(tmp_path / "external.log")


@pytest.mark.parametrize("name,manager,app", [
    ("ryu", [sys.executable, "-m", "fixtures.ryu_launcher"], "ryu.app.simple_switch_13"),
    ("osken", [os.path.join(os.path.dirname(sys.executable), "osken-manager")],
     "fixtures.osken_apps.learning_switch")])
@pytest.mark.system
def test_the_documented_python_start_command_runs_the_manager_and_samples_it(tmp_path, name, manager, app):
    # docs/benchmarks/common.md#external-controllers: Ryu's or os-ken's manager started by --start-command
    pytest.importorskip("ryu" if name == "ryu" else "os_ken")
    start = " ".join(manager) + f" --ofp-listen-host {{host}} --ofp-tcp-listen-port {{port}} {app}"
    ctl = ExternalController("127.0.0.1", free_port(), name=name, lifecycle=Lifecycle(start), log_dir=tmp_path,
                             ready_timeout=60)
    ctl.start()
    try:
        import psutil
        assert ctl.pid is not None and manager[-1] in psutil.Process(ctl.pid).cmdline()   # the manager, not sh
        ctl.prepare_trial()                              # fresh: stopped and started again
        assert ctl.starts == 2 and ctl.exit_reason() is None
    finally:
        leader = ctl.proc.pid
        ctl.stop()
    assert not group_members(leader) and (tmp_path / f"{name}.log").read_text().count("start #") == 2


def launcher(pidfile) -> str:
    """A start command that starts the null controller in the background and waits, writing the controller's pid to
    ``pidfile`` whole: written aside and renamed, so that a reader never finds it empty while a restart's launcher
    writes it (``echo $! > FILE`` truncates FILE first, and a test read it in that instant)."""
    return f"{NULLCTL} & echo $! > {pidfile}.new && mv {pidfile}.new {pidfile}; wait"


def start_run(out, port, pidfile, *extra):
    """A capacity run whose --start-command is a launcher that starts the null controller in the background and
    waits (as a script starting a JVM does), writing the controller's pid to ``pidfile``."""
    import subprocess
    return subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *CAPACITY, "--controller",
                             f"external:127.0.0.1:{port}", "--start-command", launcher(pidfile),
                             "--repetitions", "50", "--report-dir", str(out), *extra], cwd=PROJECT_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_a_stopped_or_killed_run_leaves_nothing_of_the_controller_it_started(tmp_path, how):
    import signal

    from test_integration import wait_for_trials

    port, out, pidfile = free_port(), tmp_path / "r", tmp_path / "pid"
    proc = start_run(out, port, pidfile)
    try:
        wait_for_trials(out / "results.json", 2)
        server = int(pidfile.read_text())
        proc.send_signal(getattr(signal, how))
        text, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    if how == "SIGTERM":
        assert proc.returncode == 2, text[-3000:]
        assert load_results(out / "results.json")["benchmarks"][0]["outcome"]["status"] == "interrupted"
    # the launcher's background child too: through the lifeline it dies with the run even after SIGKILL.  The
    # controller is restarted between trials: the one the signal found may be a later one than the pid read above
    later = pidfile.read_text().strip()
    servers = sorted({server, *([int(later)] if later.isdigit() else [])})
    assert not wait_gone(servers, 10) and not answers("127.0.0.1", port) and not orphans()


def test_orphans_names_a_process_a_test_left_behind_and_not_one_that_ran_before_it():
    """What the tests above call a leftover: a process of ours reparented to PID 1 and started during the session.
    One started before the given instant (a CI job's shell, a controller a user runs beside the tests) is not."""
    import shlex
    import subprocess

    before = time.time()
    left = shlex.join([sys.executable, "-c", "import time; time.sleep(30)", str(PROJECT_ROOT)])
    # sh starts python in the background and exits: python's parent becomes PID 1 (or the machine's subreaper)
    pid = int(subprocess.run(["sh", "-c", f"{left} >/dev/null 2>&1 & echo $!"], capture_output=True, text=True,
                             timeout=10, check=True).stdout)
    try:
        import psutil
        if psutil.Process(pid).ppid() != 1:
            pytest.skip("this machine has a subreaper: an orphan's parent is not PID 1")
        assert pid in [p for p, _ in orphans()]
        assert pid in [p for p, _ in orphans(since=before)]
        assert pid not in [p for p, _ in orphans(since=time.time() + 5)]
    finally:
        os.kill(pid, 9)
    assert not wait_gone([pid], 10)
