"""The rule that turns one capacity trial's emulator result into a value, or a failed trial."""

import pytest

from fixtures.families.capacity import capacity_outcome
from fixtures.harness import TrialFailed


def result(**kw):
    base = {"kept": 0, "established": 0, "established_before_failure": 0, "failures": {}, "first_failure": None,
            "capped": False, "emulator_bound": False}
    return {**base, **kw}


FIRST = {"kind": "refused", "session": 20001, "detail": "connection refused", "established_before": 19995}


def test_held_sessions_are_the_value():
    out = capacity_outcome(result(kept=950, established=1000, first_failure=FIRST), 100000, None, False)
    assert out.value == 950 and not out.lower_bound and not out.controller_exit_counted
    assert "controller started dropping: refused at the switch with datapath id 20001" in out.note


def test_cap_reached_is_a_lower_bound():
    out = capacity_outcome(result(kept=300, established=300, capped=True), 300, None, False)
    assert out.value == 300 and out.lower_bound and "capped at 300" in out.note


def test_controller_that_exits_at_its_limit_counts_sessions_before_the_first_failure():
    r = result(kept=0, established=19995, established_before_failure=19995, first_failure=FIRST)
    out = capacity_outcome(r, 100000, "controller exited (exit status 0)", True)
    assert out.value == 19995 and out.controller_exit_counted
    assert out.note.startswith("not held: controller exited (exit status 0) at its limit")


def test_nothing_held_by_a_live_controller_fails_the_trial_rather_than_reporting_zero():
    r = result(kept=0, established=19995, failures={"echo timeout": 19995}, first_failure=FIRST)
    with pytest.raises(TrialFailed, match=r"no session survived the hold \(19995 established"):
        capacity_outcome(r, 100000, None, False)


def test_killed_controller_is_not_counted_as_its_limit():
    r = result(kept=0, established=500, failures={"reset": 500}, first_failure=FIRST)
    with pytest.raises(TrialFailed):
        capacity_outcome(r, 100000, "controller exited (signal 9 (SIGKILL))", False)


def test_emulator_limit_fails_the_trial():
    with pytest.raises(TrialFailed, match="emulator's own limit"):
        capacity_outcome(result(kept=10, established=10, emulator_bound=True, first_failure=FIRST), 100, None, False)
