"""One wait and one child-process class (emulator/process.py): ``wait_until`` on a fake clock, ``ChildProcess`` on a
fake ``Popen`` (no process, no sleep); one integration test starts real children."""

import os
import signal
import subprocess
import sys

import pytest

from emulator import process as pr
from emulator.process import ChildProcess, WaitGone, WaitTimeout, describe_exit, wait_until


class Clock:
    """A fake monotonic clock that only ``sleep`` moves."""

    def __init__(self):
        self.t, self.slept = 100.0, []

    def now(self):
        return self.t

    def sleep(self, s):
        self.slept.append(s)
        self.t += s


def test_wait_until_returns_the_first_true_value_and_sleeps_the_interval_between_tries():
    clock, answers = Clock(), iter([None, 0, "ready"])
    assert wait_until(lambda: next(answers), 5, interval=0.5, clock=clock) == "ready"
    assert clock.slept == [0.5, 0.5]


def test_wait_until_names_what_it_awaited_and_the_last_error_at_the_deadline():
    clock, tries = Clock(), []

    def probe():
        tries.append(clock.t)
        raise ConnectionRefusedError(f"refused #{len(tries)}")
    with pytest.raises(WaitTimeout) as info:
        wait_until(probe, 1.0, what="the REST API", interval=0.25, retry_on=(OSError,), clock=clock)
    assert str(info.value) == "the REST API not within 1 s (refused #5)"
    assert info.value.what == "the REST API" and info.value.last == "refused #5"
    assert tries == [100.0, 100.25, 100.5, 100.75, 101.0]           # a last try at the deadline


def test_an_error_it_was_not_told_to_retry_ends_the_wait():
    def probe():
        raise ValueError("a config error")
    with pytest.raises(ValueError, match="a config error"):
        wait_until(probe, 10, retry_on=(OSError,), clock=Clock())


def test_what_went_away_ends_the_wait_at_once_with_its_reason():
    clock, state = Clock(), {"n": 0}

    def gone():
        state["n"] += 1
        return "exit status 1" if state["n"] == 3 else None
    with pytest.raises(WaitGone) as info:
        wait_until(lambda: None, 60, what="ryu ready", gone=gone, clock=clock)
    assert str(info.value) == "ryu ready: exit status 1" and info.value.reason == "exit status 1"
    assert clock.t == pytest.approx(100.2)


def test_quiet_returns_the_last_value_instead_of_raising():
    clock = Clock()
    assert wait_until(lambda: 0, 1, quiet=True, clock=clock) == 0


class FakePopen:
    def __init__(self, pid=4321, code=None):
        self.pid, self.returncode, self.waits = pid, code, []
        self.stdout = self.stderr = None

    def poll(self):
        return self.returncode

    def wait(self, timeout=None):
        self.waits.append(timeout)
        if self.returncode is None:
            raise subprocess.TimeoutExpired("x", timeout)
        return self.returncode


def child(code=None, **kwargs):
    c = ChildProcess(["/usr/bin/some-daemon", "--flag"], **kwargs)
    c.popen = FakePopen(code=code)
    return c


def test_a_child_says_why_it_is_gone_and_whether_by_itself():
    assert ChildProcess(["/usr/bin/x"]).exit_reason() == "not started"
    running = child()
    assert running.alive and running.exit_reason() is None and running.wait(0.1) is None
    assert child(-9).exit_reason() == "signal 9 (SIGKILL)" and not child(-9).exited_by_itself()
    assert child(2).exit_reason() == "exit status 2" and child(2).exited_by_itself()
    assert child().name == "some-daemon" and child(name="nb1").name == "nb1"
    assert describe_exit(-15) == "signal 15 (SIGTERM)" and describe_exit(0) == "exit status 0"


def test_waiting_for_a_child_ends_when_it_exits_and_its_log_tail_says_why(tmp_path):
    c = child(log=tmp_path / "d.log")
    (tmp_path / "d.log").write_text("".join(f"line {i}\n" for i in range(30)) + "fatal: no config\n")
    clock, polls = Clock(), []

    def probe():
        polls.append(clock.t)
        if len(polls) == 2:
            c.popen.returncode = 1
        raise ConnectionRefusedError("refused")
    with pytest.raises(WaitGone) as info:
        c.wait_ready(probe, 30, retry_on=(OSError,), clock=clock)
    assert info.value.reason == "exit status 1" and info.value.last == "refused" and len(polls) == 2
    assert c.log_tail(2) == "line 29\nfatal: no config"


def test_a_child_is_ended_by_its_group_terminated_then_killed(monkeypatch):
    sent = []
    c = child()
    pr._LIVE[c.pid] = c
    monkeypatch.setattr(pr.os, "killpg", lambda pid, sig: sent.append((pid, sig)))
    c.end(grace=0.5)
    # SIGTERM, no exit within the grace: SIGKILL; then the group once more, whatever is left of it
    assert sent == [(4321, signal.SIGTERM), (4321, signal.SIGKILL), (4321, signal.SIGKILL)]
    assert c.popen.waits[:2] == [0.5, 5.0] and c.pid not in pr._LIVE
    c.signal(signal.SIGSTOP)
    assert sent[-1] == (4321, signal.SIGSTOP)
    with pytest.raises(ProcessLookupError, match="was not started"):
        ChildProcess(["x"]).signal(signal.SIGCONT)


def test_a_child_runs_with_the_project_on_its_path_and_its_own_variables(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    env = ChildProcess(["x"], env={"BMWG_X": "1"}).environment()
    assert env["PYTHONPATH"] == f"{pr.PROJECT_ROOT}{os.pathsep}/elsewhere" and env["BMWG_X"] == "1"
    assert env["PYTHONUNBUFFERED"] == "1"


@pytest.mark.component
def test_a_real_child_is_ready_by_its_probe_ended_by_its_group_and_reaped(tmp_path):
    """A child that forks a grandchild into its group, then says it is ready; ``end`` leaves neither."""
    psutil = pytest.importorskip("psutil")
    ready = tmp_path / "ready"
    code = ("import os, subprocess, sys, time\n"
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
            f"open({str(ready)!r}, 'w').write(str(os.getpid()))\n"
            "print('listening', flush=True)\n"
            "time.sleep(60)\n")
    c = ChildProcess([sys.executable, "-c", code], log=tmp_path / "c.log", grace=2.0).start()
    try:
        c.wait_ready(ready.exists, 15, what="the child")
        kids = psutil.Process(c.pid).children()
        assert len(kids) == 1 and os.getpgid(kids[0].pid) == os.getpgid(c.pid) == c.pid   # its own group
        assert c.pid in pr._LIVE and c.exit_reason() is None
    finally:
        c.end()
    assert c.exit_reason() == "signal 15 (SIGTERM)"

    def grandchild_gone():
        try:
            return psutil.Process(kids[0].pid).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True
    wait_until(grandchild_gone, 5, what="the grandchild's end")
    assert "listening" in c.log_tail() and c.pid not in pr._LIVE
    dead = ChildProcess([sys.executable, "-c", "import sys; print('bad flag', file=sys.stderr); sys.exit(3)"],
                        log=tmp_path / "d.log").start()
    with pytest.raises(WaitGone, match="exit status 3"):
        dead.wait_ready(lambda: False, 15)
    assert dead.log_tail() == "bad flag" and dead.exited_by_itself()
    dead.end()
