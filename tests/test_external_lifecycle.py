"""An external controller's lifecycle without processes: the command templates (shared with §5.4.1's
--kill-command), the options that do not fit, how a trial is prepared with and without --start-command, and the
trial loop failing the rest of a benchmark at once when the controller is gone for good."""

import argparse

import pytest
from test_devices import run as run_of
from test_harness import CountingStore, FakeController, X

from fixtures.config import BmwgConfig, option_families
from fixtures.devices import commands, registry
from fixtures.devices import openflow as openflow_mod
from fixtures.devices.base import Can, ControllerError, ControllerGone
from fixtures.devices.clusters import TEMPLATE_FIELDS, template_problem
from fixtures.devices.external import ExternalController, Lifecycle
from fixtures.harness import BenchmarkRun, TrialOutcome, Trials
from reports.outcome import judge

# --------------------------------------------------------------------------- the templates


def test_a_template_is_filled_with_its_fields_and_a_literal_brace_is_doubled():
    assert commands.fill("ssh {host} start-ctl --port {port}", host="lab1", port=6653) == \
        "ssh lab1 start-ctl --port 6653"
    assert commands.fill("awk '{{print $1}}' < /run/{host}.pid", host="h") == "awk '{print $1}' < /run/h.pid"


@pytest.mark.parametrize("template,error", [
    ("java -jar ctl.jar --pid {pid}", "KeyError: 'pid'"),
    ("kill {0}", "IndexError"),
    ("echo ${HOME}", "KeyError: 'HOME'"),
    ("echo {host", "ValueError"),
    ("echo }", "ValueError"),
    ("echo {host.name}", "AttributeError"),
])
def test_a_template_that_cannot_be_filled_is_named_with_its_fields(template, error):
    why = commands.template_problem("--start-command", template, commands.LIFECYCLE_FIELDS)
    assert why.startswith(f"--start-command: cannot fill {template!r} ({error}")
    assert why.endswith("its fields are {host}, {port} (write a literal brace as {{ or }})")
    assert commands.template_problem("--start-command", "ctl --listen {host}:{port}",
                                     commands.LIFECYCLE_FIELDS) is None


def test_the_kill_command_keeps_its_own_fields_through_the_same_check():
    assert template_problem("--kill-command", "ssh {host} kill -{signal} $(cat /run/c{index}.pid)") is None
    assert set(TEMPLATE_FIELDS) > set(commands.LIFECYCLE_FIELDS)
    assert "(KeyError: 'index')" in commands.template_problem("--start-command", "start {index}",
                                                              commands.LIFECYCLE_FIELDS)


# --------------------------------------------------------------------------- the options

def test_lifecycle_options_that_do_not_fit_are_named_one_sentence_each():
    assert registry.option_problems(run_of("ryu", start_command="x", stop_command="y")) == [
        "--start-command, --stop-command: for --controller external:HOST:PORT; the suite starts and stops the "
        "embedded ryu itself"]
    assert registry.option_problems(run_of("external:h:1", stop_command="stop-ctl")) == [
        "--stop-command stops what --start-command started: give --start-command too"]
    assert registry.option_problems(run_of("external:h:1", start_command="c", controller_pid=1)) == [
        "--controller-pid: the suite samples the controller --start-command starts; give one or the other"]
    assert registry.option_problems(run_of("external:h:1", start_command="c {host} {port}",
                                           stop_command="s {port}")) == []


def test_a_bad_template_stops_the_run_before_anything_starts_in_one_message():
    parser = argparse.ArgumentParser()
    for family in option_families().values():
        family.add_options(parser)
    with pytest.raises(pytest.UsageError) as info:
        BmwgConfig.from_options(parser.parse_args(["--controller", "external:127.0.0.1:6653", "--start-command",
                                                   "bin/ctl --of-port {of_port}"]))
    text = str(info.value)
    assert text == ("bmwg-sdn: --start-command: cannot fill 'bin/ctl --of-port {of_port}' (KeyError: 'of_port'); "
                    "its fields are {host}, {port} (write a literal brace as {{ or }})")
    ok = BmwgConfig.from_options(parser.parse_args(["--controller", "external:127.0.0.1:6653", "--start-command",
                                                    "bin/ctl {port}", "--stop-command", "bin/ctl-stop"]))
    assert (ok.run.start_command, ok.run.stop_command) == ("bin/ctl {port}", "bin/ctl-stop")


def test_the_device_is_built_with_its_commands_and_its_log_named_after_it(tmp_path):
    ctl = registry.controller_from(run_of("external:127.0.0.1:6653", controller_name="onos/2", start_command="s",
                                          no_restart=True), log_dir=tmp_path)
    assert (ctl.start_command, ctl.stop_command, ctl.log_path) == ("s", None, tmp_path / "onos_2.log")
    assert not ctl.restarted_between_trials and Can.RESTART in ctl.capabilities()
    assert ctl.info()["persistence"].startswith("kept across trials")
    assert ctl.info()["stop_command"] == "none: SIGTERM to its process group, SIGKILL after 5 s"
    plain = registry.controller_from(run_of("external:127.0.0.1:6653"), log_dir=tmp_path)
    assert Can.RESTART not in plain.capabilities() and "start_command" not in plain.info()
    assert plain.log_tail() == "" and plain.exit_reason() is None and not plain.restarted_between_trials


# --------------------------------------------------------------------------- preparing a trial

class Recorder(ExternalController):
    """An external controller whose processes are a list of what was done."""

    def __init__(self, *, gone=False, answers=True, restart_between_trials=True):
        super().__init__("127.0.0.1", 6653, lifecycle=Lifecycle("s", restart_between_trials=restart_between_trials))
        self.done, self.gone, self.answers = [], gone, answers
        self.proc = object()

    def start(self):
        self.done.append("start")

    def stop(self):
        self.done.append("stop")

    def exit_reason(self):
        return "controller exited (signal 9 (SIGKILL))" if self.gone else None

    def check_alive(self, timeout=None):
        self.done.append("check")
        if not self.answers:
            raise ControllerError("external controller is not answering: no HELLO")
        return 0.001


def test_a_started_controller_is_started_fresh_before_each_trial():
    ctl = Recorder()
    ctl.prepare_trial()
    assert ctl.done == ["stop", "start"]


def test_with_no_restart_it_is_kept_while_it_answers_and_started_again_when_it_is_gone_or_hangs():
    kept = Recorder(restart_between_trials=False)
    kept.prepare_trial()
    assert kept.done == ["check"]
    crashed = Recorder(restart_between_trials=False, gone=True)
    crashed.prepare_trial()
    assert crashed.done == ["stop", "start"]
    hung = Recorder(restart_between_trials=False, answers=False)
    hung.prepare_trial()
    assert hung.done == ["check", "stop", "start"]


def test_without_a_start_command_a_controller_that_does_not_answer_is_gone_for_good(monkeypatch):
    def refused(host, port, timeout, version):
        raise ControllerError(f"nothing accepts connections at {host}:{port} (connection refused)")
    monkeypatch.setattr(openflow_mod, "openflow_probe", refused)
    with pytest.raises(ControllerGone) as info:
        ExternalController("127.0.0.1", 6653).prepare_trial()
    assert str(info.value) == ("external controller is not answering: nothing accepts connections at "
                               "127.0.0.1:6653 (connection refused) (the suite cannot start it again: no "
                               "--start-command)")
    with pytest.raises(ControllerError) as info:        # one the suite starts is only not answering: it restarts
        ExternalController("127.0.0.1", 6653, lifecycle=Lifecycle("s")).check_alive()
    assert type(info.value) is ControllerError


# --------------------------------------------------------------------------- the trial loop

class GoneAfter(FakeController):
    """Answers until trial ``k`` prepares; then, like a user's controller that crashed, never again."""

    def __init__(self, k, during=False):
        super().__init__()
        self.k, self.during, self.prepared = k, during, 0

    def prepare_trial(self):
        self.prepared += 1
        if self.prepared >= self.k and not self.during:
            raise ControllerGone("external controller is not answering: connection refused (the suite cannot "
                                 "start it again: no --start-command)")

    def check_alive(self, timeout=None):
        if self.during and self.prepared >= self.k:
            raise ControllerGone("external controller is not answering: no HELLO (the suite cannot start it "
                                 "again: no --start-command)")
        return 0.001


def make_run(tmp_path, controller, repetitions, warmup=0, lines=None):
    store = CountingStore(tmp_path / "results.json", {"started": "now"})
    return BenchmarkRun(store, controller, X, Trials(repetitions, warmup, 0),
                        progress=(lines.append if lines is not None else lambda line: None))


def test_a_controller_gone_for_good_fails_the_rest_of_the_benchmark_at_once_with_one_reason(tmp_path):
    lines, calls = [], []
    ctl = GoneAfter(2)
    run = make_run(tmp_path, ctl, 10, lines=lines)
    entry = run.trials(lambda i: calls.append(i) or TrialOutcome(5.0))
    trials = entry["trials"]
    assert calls == [1] and ctl.prepared == 2            # nothing is tried after the controller was found gone
    assert [t["ok"] for t in trials] == [True] + [False] * 9 and [t["index"] for t in trials] == list(range(1, 11))
    reason = ("controller not ready: external controller is not answering: connection refused (the suite cannot "
              "start it again: no --start-command)")
    assert {t["reason"] for t in trials[1:]} == {reason}
    assert "not_run" not in trials[1] and all(t["not_run"] and t["duration_s"] == 0.0 for t in trials[2:])
    assert entry["outcome"] == {"status": "failed", "reason": f"9 of 10 trials failed: {reason}"}
    assert judge(entry) == ("failed", f"9 of 10 trials failed: {reason}")
    assert "trial(s) 3–10 not run: the controller was gone at trial 2" in entry["notes"][-1]
    assert lines[-1] == f"test_x: trial(s) 3–10 not run, failed at once: {reason[:160]}"
    assert entry["summary"]["n"] == 1


def test_a_controller_found_gone_after_a_trial_fails_that_trial_and_the_rest_with_its_reason(tmp_path):
    ctl = GoneAfter(1, during=True)
    run = make_run(tmp_path, ctl, 4)
    entry = run.trials(lambda i: TrialOutcome(5.0))
    assert ctl.prepared == 1
    reasons = [t["reason"] for t in entry["trials"]]
    assert len(reasons) == 4 and len(set(reasons)) == 1
    assert reasons[0].startswith("the controller stopped answering during the trial: external controller")
    assert entry["outcome"]["reason"].startswith("no successful trial: the controller stopped answering")


def test_gone_in_the_warm_up_fails_every_measured_trial_and_runs_no_more_warm_up(tmp_path):
    ctl = GoneAfter(1)
    entry = make_run(tmp_path, ctl, 3, warmup=2).trials(lambda i: TrialOutcome(5.0))
    assert ctl.prepared == 1 and len(entry["warmup_trials"]) == 1
    assert [(t["index"], t["ok"], t["not_run"]) for t in entry["trials"]] == [(1, False, True), (2, False, True),
                                                                            (3, False, True)]
    assert "gone at warm-up trial 1" in entry["notes"][-1]


def test_a_controller_the_suite_can_start_again_fails_one_trial_only(tmp_path):
    class NotReadyOnce(FakeController):
        n = 0

        def prepare_trial(self):
            self.n += 1
            if self.n == 2:
                raise ControllerError("--start-command exited (exit status 3) before it answered")

    entry = make_run(tmp_path, NotReadyOnce(), 4).trials(lambda i: TrialOutcome(5.0))
    assert [t["ok"] for t in entry["trials"]] == [True, False, True, True]
    assert not any(t.get("not_run") for t in entry["trials"])


class FakeProc:
    def __init__(self, ended=None):
        self.ended = ended

    def exit_reason(self):
        return self.ended

    def poll(self):
        return {None: None, "exit status 0": 0, "exit status 3": 3, "signal 9 (SIGKILL)": -9,
                "exit status 137": 137}[self.ended]


class FakeListener:
    pid = 4242

    def __init__(self, alive):
        self.alive = alive

    def is_running(self):
        return self.alive

    def status(self):
        return "running"


@pytest.mark.parametrize("listener,ended,why", [
    (True, None, None),
    (False, None, "controller exited (its process 4242 is gone)"),
    (False, "exit status 0", "controller exited (its process 4242 is gone)"),    # a launcher that waited
    (False, "exit status 3", "controller exited (exit status 3)"),
    (None, "exit status 3", "controller exited (exit status 3)"),                # gone before it was found
    (None, "exit status 0", None),                                               # a daemon may run on
])
def test_why_a_started_controller_is_gone(listener, ended, why):
    ctl = ExternalController("127.0.0.1", 6653, lifecycle=Lifecycle("s"))
    assert ctl.exit_reason() == "controller is not running" and ctl.pid is None
    ctl.proc = FakeProc(ended)
    ctl.listener = FakeListener(listener) if listener is not None else None
    assert ctl.exit_reason() == why
    assert ctl.pid == (4242 if listener else None)


@pytest.mark.parametrize("listener,ended,by_itself", [
    (True, None, False),                  # running
    (False, "exit status 3", True),       # crashed at its limit: §5.2.1 counts it
    (False, "signal 9 (SIGKILL)", False),  # killed: the trial fails
    (False, "exit status 137", False),    # killed, as the start command's shell reports it (128 + 9)
    (False, "exit status 0", True),       # a daemon its launcher left: the suite did not stop it
])
def test_a_started_controller_that_ended_by_itself_is_told_from_one_killed(listener, ended, by_itself):
    ctl = ExternalController("127.0.0.1", 6653, lifecycle=Lifecycle("s"))
    ctl.proc = FakeProc(ended)
    ctl.listener = FakeListener(listener)
    assert ctl.exited_by_itself() is by_itself
