"""The rules that turn one capacity trial's emulator result into CCn and a failure mode (or a failed trial), and the
search for the sustained capacity."""

import pytest

from fixtures.families import capacity as cap
from fixtures.families.capacity import capacity_outcome, failure_mode, sustained_search
from fixtures.harness import TrialFailed


def result(**kw):
    base = {"ccn": 0, "kept": 0, "established": 0, "established_before_failure": 0, "failures": {},
            "new_failures": {}, "dropped_after_ready": 0, "unanswered": 0, "first_failure": None, "capped": False,
            "emulator_bound": False}
    return {**base, **kw}


FIRST = {"kind": "refused", "session": 20001, "detail": "connection refused", "established_before": 19995}
TIMEOUT = {"kind": "handshake timeout", "session": 301, "detail": "no HELLO from controller within 10 s",
           "established_before": 300}


def test_a_refusing_controller_holds_its_ccn():
    r = result(ccn=1000, kept=1000, established=1000, new_failures={"refused": 3}, first_failure=FIRST)
    out = capacity_outcome(r, 100000, None, False)
    assert out.value == 1000 and not out.lower_bound and out.controller_exit_counted
    assert r["failure_mode"] == cap.REFUSES
    assert "failure mode: refuses new sessions" in out.note and "1000 of 1000 held after the hold" in out.note
    assert "controller started dropping: refused at the switch with datapath id 20001" in out.note


def test_cap_reached_is_a_lower_bound_with_no_failure_mode():
    r = result(ccn=300, kept=300, established=300, capped=True)
    out = capacity_outcome(r, 300, None, False)
    assert out.value == 300 and out.lower_bound and "capped at 300" in out.note and r["failure_mode"] is None


def test_a_controller_that_exits_at_its_limit_reports_ccn_and_the_exit():
    r = result(ccn=19995, kept=0, established=19995, dropped_after_ready=19995, first_failure=FIRST)
    out = capacity_outcome(r, 100000, "controller exited (exit status 0)", True)
    assert out.value == 19995 and out.controller_exit_counted and r["failure_mode"] == cap.EXITED
    assert out.note.startswith("controller exited (exit status 0) at its limit; failure mode: the process exited")
    assert "only 0 of 19995 held after the hold" in out.note


def test_a_controller_that_stops_answering_still_has_a_ccn():
    # the EMFILE accept loop: new handshakes time out, the established sessions' echoes go unanswered
    r = result(ccn=1011, kept=0, established=1011, unanswered=1011, new_failures={"handshake timeout": 25},
               first_failure=TIMEOUT)
    out = capacity_outcome(r, 100000, None, False)
    assert out.value == 1011 and r["failure_mode"] == cap.STOPS_ECHOES


def test_a_killed_controller_is_left_to_the_harness_to_fail():
    r = result(ccn=500, kept=0, established=500, dropped_after_ready=500, first_failure=FIRST)
    out = capacity_outcome(r, 100000, "controller exited (signal 9 (SIGKILL))", False)
    assert not out.controller_exit_counted and r["failure_mode"] == cap.CLOSES_EARLIER


def test_no_session_established_fails_the_trial_rather_than_reporting_zero():
    r = result(new_failures={"version negotiation failed": 25}, first_failure=FIRST)
    with pytest.raises(TrialFailed, match=r"no session was established"):
        capacity_outcome(r, 100000, None, False)


def test_emulator_limit_fails_the_trial():
    with pytest.raises(TrialFailed, match="emulator's own limit"):
        capacity_outcome(result(ccn=10, kept=10, established=10, emulator_bound=True, first_failure=FIRST), 100,
                         None, False)


@pytest.mark.parametrize("kw,exited,mode", [
    (dict(dropped_after_ready=3, unanswered=5), "controller exited (exit status 70)", cap.EXITED),
    (dict(dropped_after_ready=3, unanswered=5), None, cap.CLOSES_EARLIER),
    (dict(unanswered=5, new_failures={"refused": 1}), None, cap.STOPS_ECHOES),
    (dict(new_failures={"refused": 1, "reset": 2}, first_failure=FIRST), None, cap.REFUSES),
    (dict(new_failures={"closed": 1}), None, cap.REFUSES),
    (dict(new_failures={"handshake timeout": 4}, first_failure=TIMEOUT), None, cap.STOPS_ACCEPTING),
    (dict(new_failures={"connect timeout": 4, "handshake timeout": 1}), None, cap.STOPS_ACCEPTING),
    (dict(), None, None),
])
def test_failure_modes(kw, exited, mode):
    assert failure_mode(result(**kw), exited) == mode


def holds_up_to(limit, tried):
    def hold(m):
        tried.append(m)
        return {"held": m <= limit}
    return hold


def test_sustained_search_tries_ccn_first():
    tried = []
    found = sustained_search(300, holds_up_to(300, tried), 0.02, 8)
    assert tried == [300] and found["sessions"] == 300 and found["not_held_at"] is None and found["bracketed"]


def test_sustained_search_bisects_to_the_resolution():
    tried = []
    found = sustained_search(300, holds_up_to(200, tried), 0.0, 20)
    assert found["sessions"] == 200 and found["not_held_at"] == 201 and found["bracketed"]
    assert tried[:3] == [300, 150, 225] and len(tried) <= 10


def test_sustained_search_stops_after_its_steps_with_the_bracket_so_far():
    found = sustained_search(1000, holds_up_to(10, []), 0.0, 3)
    assert (found["sessions"], found["not_held_at"], found["bracketed"]) == (None, 250, False)
    assert [s["sessions"] for s in found["steps"]] == [1000, 500, 250]


def test_sustained_search_where_nothing_holds():
    found = sustained_search(4, holds_up_to(0, []), 0.0, 10)
    assert found["sessions"] is None and found["not_held_at"] == 1 and found["bracketed"]


def test_findings_rank_the_failure_modes():
    trials = [{"ok": True, "value": 5, "details": {"ccn": 5, "attempted": 6, "failure_mode": m}}
              for m in (cap.EXITED, cap.EXITED, cap.REFUSES)]
    out = cap.findings({"trials": trials + [{"ok": False, "value": None}]})
    assert out == {"failure_mode": cap.EXITED,
                   "failure_modes": "the process exited (2 trials), refuses new sessions (1 trial)"}


def test_the_sustained_capacity_search_says_truly_why_it_has_no_fresh_controller(tmp_path):
    """A fresh controller each step: an embedded one the suite restarts, or an external one it starts
    (--start-command). The embedded OpenDaylight is kept across trials by its kind, not by a --no-restart that was
    never given; an external controller the user runs lacks a restart."""
    from fixtures.devices.external import ExternalController, Lifecycle
    from fixtures.devices.null import NullController
    from fixtures.devices.odl import OdlController
    assert cap.no_fresh_controller(NullController(tmp_path)) is None
    assert cap.no_fresh_controller(ExternalController("127.0.0.1", 6653, lifecycle=Lifecycle("ctl {host} {port}"))) \
        is None
    assert cap.no_fresh_controller(NullController(tmp_path, restart_between_trials=False)) == \
        "--no-restart keeps one controller"
    assert cap.no_fresh_controller(ExternalController("127.0.0.1", 6653,
                                                      lifecycle=Lifecycle("ctl", restart_between_trials=False))) == \
        "--no-restart keeps one controller"
    odl = cap.no_fresh_controller(OdlController(tmp_path))
    assert "--no-restart keeps" not in odl and odl.startswith("controller odl is kept across trials")
    assert cap.no_fresh_controller(ExternalController("127.0.0.1", 6653)) == \
        "controller external cannot be restarted by the suite"
