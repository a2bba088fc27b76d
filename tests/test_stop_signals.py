"""How the run reads a stop signal (the handler alone; no signal is sent)."""

import signal

import pytest

from emulator.stopping import StopRequest
from fixtures import signals
from fixtures.harness import Interrupted


@pytest.fixture
def stop(monkeypatch):
    quieted = []
    monkeypatch.setattr(signals, "quiet_output", lambda: quieted.append(True))
    s = signals.Stop()
    s.parent = 4242
    s.quieted = quieted
    yield s
    StopRequest.reason = None


def test_sigterm_from_a_live_parent_is_a_termination(stop, monkeypatch):
    monkeypatch.setattr(signals.os, "getppid", lambda: 4242)
    with pytest.raises(Interrupted, match="the run was terminated"):
        stop.handle(signal.SIGTERM, None)
    assert StopRequest.reason == stop.reason and not stop.quieted


def test_sigterm_after_the_parent_ended_names_it_and_silences_the_dead_terminal(stop, monkeypatch):
    monkeypatch.setattr(signals.os, "getppid", lambda: 1)
    with pytest.raises(Interrupted, match=r"its parent process, pid 4242, ended"):
        stop.handle(signal.SIGTERM, None)
    assert stop.quieted == [True]


def test_a_second_stop_signal_waits_for_the_clean_up_but_a_second_ctrl_c_does_not(stop, monkeypatch):
    monkeypatch.setattr(signals.os, "getppid", lambda: 4242)
    with pytest.raises(Interrupted, match="Ctrl-C"):
        stop.handle(signal.SIGINT, None)
    assert stop.handle(signal.SIGTERM, None) is None and stop.handle(signal.SIGHUP, None) is None
    with pytest.raises(KeyboardInterrupt):
        stop.handle(signal.SIGINT, None)
