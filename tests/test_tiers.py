"""The tiers of the project's tests (tests/tiers.py): a unit test that opens a socket, starts a process or sleeps
fails; every test has one tier; a tier over its budget fails the session where it runs, naming its slowest tests."""

import socket
import subprocess
import sys
import time

import pytest
import tiers


@pytest.mark.parametrize("what,act", [
    ("opened a socket", lambda: socket.socket()),
    ("opened a socket", lambda: socket.socketpair()),
    ("opened a socket", lambda: socket.create_connection(("127.0.0.1", 9))),
    ("started a subprocess", lambda: subprocess.run([sys.executable, "-c", "pass"])),
    ("slept", lambda: time.sleep(0.001)),
])
def test_a_unit_test_that_opens_a_socket_starts_a_process_or_sleeps_fails(what, act):
    # This is a unit test: the guard is on, and even `except Exception` would not swallow its failure.
    with pytest.raises(pytest.fail.Exception, match=f"a unit test {what}: .* mark it component, system or external"):
        try:
            act()
        except Exception:       # noqa: BLE001 - code under test catching broadly must not hide it
            pass


def test_every_way_to_start_a_process_is_guarded_and_put_back_after():
    # (not called: were the guard off, os.fork would fork this very process)
    assert all(getattr(owner, name) is not original for (owner, name), original in tiers.ORIGINALS.items())
    assert {name for _owner, name in tiers.ORIGINALS} >= {"fork", "forkpty", "posix_spawn", "posix_spawnp", "system",
                                                          "fork_exec", "__init__", "sleep"}
    with tiers.Guard():
        pass
    assert all(getattr(owner, name) is not original for (owner, name), original in tiers.ORIGINALS.items())


def test_a_netlink_socket_is_no_network_and_passes():
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW)       # how scapy lists interfaces on its import
    sock.close()


def test_budgets_are_parsed_and_a_bad_one_is_named():
    assert tiers.parse_budget("component=90") == ("component", 90.0)
    for bad, says in [("unit", "expected TIER=SECONDS"), ("fast=1", "TIER one of unit, component, system, external"),
                      ("unit=0", "positive number"), ("unit=x", "positive number")]:
        with pytest.raises(ValueError, match=says):
            tiers.parse_budget(bad)


def test_a_tier_alone_is_timed_by_the_wall_clock_several_by_their_tests():
    clock = tiers.Clock(100.0)
    clock.add("a", "unit", 1.0)
    clock.add("a", "unit", 0.5)                   # setup, call and teardown add up
    clock.add("b", "unit", 2.0)
    clock.ended = 110.0
    assert clock.spent("unit") == 10.0            # collection and the rest of the session included
    clock.add("c", "component", 30.0)
    assert clock.spent("unit") == 3.5 and clock.spent("component") == 30.0
    assert tiers.verdicts(clock, {"unit": 3.0, "component": 60.0}) == [("unit", 3.5, 3.0, True),
                                                                      ("component", 30.0, 60.0, False)]
    lines = tiers.summary_lines(clock, {"unit": 3.0, "component": 60.0})
    assert lines[0] == "tier unit: 3.5 s of its 3 s budget, 2 tests — OVER BUDGET"
    assert lines[2].split() == ["2.00", "s", "b"] and lines[3].split() == ["1.50", "s", "a"]
    assert lines[4] == "tier component: 30.0 s of its 60 s budget, 1 tests"


CONFTEST = """
import tiers

def pytest_addoption(parser):
    tiers.addoption(parser)

def pytest_configure(config):
    tiers.configure(config)
"""

TESTS = """
import pytest

def test_plain():
    pass

@pytest.mark.component
def test_part():
    pass

@pytest.mark.component
@pytest.mark.system
def test_twice():
    pass
"""


def test_a_session_over_its_tiers_budget_fails_naming_its_slowest_tests(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_a=TESTS.replace("@pytest.mark.component\n@pytest.mark.system\ndef test_twice", "def x"))
    ok = pytester.runpytest_inprocess("-m", "unit")
    assert ok.ret == 0
    ok.stdout.fnmatch_lines(["*tier budgets*", "tier unit: * s of its 60 s budget, 1 tests"])
    over = pytester.runpytest_inprocess("--tier-budget", "component=0.000001")
    assert over.ret == 1
    over.stdout.fnmatch_lines(["tier unit: * s of its 60 s budget, 1 tests",
                               "tier component: * s of its 1e-06 s budget, 1 tests — OVER BUDGET",
                               "*its slowest tests*", "*test_a.py::test_part"])
    bad = pytester.runpytest_inprocess("--tier-budget", "unit")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    alone = pytester.runpytest_inprocess("--tier", "component", "--tier-budget", "component=0.000001")
    assert alone.ret == 1                  # one tier alone: the session's wall time, collection included
    alone.stdout.fnmatch_lines(["tier component: * s of its 1e-06 s budget, 1 tests — OVER BUDGET"])


MODULE_AND_PARAMETER = """
import pytest

pytestmark = pytest.mark.system

@pytest.mark.component
@pytest.mark.parametrize("store", ["file", pytest.param("server", marks=pytest.mark.external)])
def test_store(store):
    pass

def test_other():
    pass
"""


def test_a_parameters_tier_outranks_its_tests_a_tests_its_modules_and_tier_selects_by_it(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_c=MODULE_AND_PARAMETER)
    component = pytester.runpytest_inprocess("--tier", "component", "-v")
    component.assert_outcomes(passed=1, deselected=2)
    component.stdout.fnmatch_lines(["*test_store?file? PASSED*"])
    system = pytester.runpytest_inprocess("--tier", "system", "-v")
    system.assert_outcomes(passed=1, deselected=2)
    system.stdout.fnmatch_lines(["*test_other PASSED*"])
    external = pytester.runpytest_inprocess("--tier", "external", "-v")
    external.assert_outcomes(passed=1, deselected=2)
    budget = tiers.BUDGETS_S["external"]
    external.stdout.fnmatch_lines(["*test_store?server? PASSED*",
                                   f"tier external: * s of its {budget:g} s budget, 1 tests"])
    both = pytester.runpytest_inprocess("--tier", "system,external")
    both.assert_outcomes(passed=2, deselected=1)
    narrowed = pytester.runpytest_inprocess("--tier", "system,external", "-k", "store")      # -k and -m narrow it
    narrowed.assert_outcomes(passed=1, deselected=2)
    marked = pytester.runpytest_inprocess("--tier", "system,external", "-m", "external")
    marked.assert_outcomes(passed=1, deselected=2)
    wrong = pytester.runpytest_inprocess("--tier", "slow")
    assert wrong.ret == pytest.ExitCode.USAGE_ERROR
    wrong.stderr.fnmatch_lines(["*--tier slow: expected one of unit, component, system, external*"])


def test_a_test_in_two_tiers_is_an_error(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_b=TESTS)
    run = pytester.runpytest_inprocess()
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    run.stderr.fnmatch_lines(["*more than one tier*test_b.py::test_twice (component, system)*"])


def test_the_modules_table_and_architecture_md_give_the_budgets_the_code_checks():
    import re
    from pathlib import Path
    table = dict(re.findall(r"^(unit|component|system|external) .*?(\d+) s$", tiers.__doc__, re.M))
    assert {t: float(s) for t, s in table.items()} == tiers.BUDGETS_S
    page = (Path(__file__).resolve().parent.parent / "docs" / "architecture.md").read_text()
    rows = dict(re.findall(r"^\| (unit|component|system|external) \|.*\| (\d+) s \|", page, re.M))
    assert {t: float(s) for t, s in rows.items()} == tiers.BUDGETS_S, "docs/architecture.md's tier table"


THREAD = """
import threading, time

def test_sleeps_in_a_thread():
    t = threading.Thread(target=time.sleep, args=(0,), name="helper")
    t.start()
    t.join()
"""


@pytest.mark.component
def test_a_unit_tests_thread_that_sleeps_fails_the_test_when_it_ends_and_is_not_killed(pytester):
    # component: the guard of an outer unit test would see the thread too (pytester runs in this process)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_d=THREAD)
    run = pytester.runpytest_inprocess()
    run.assert_outcomes(failed=1)
    run.stdout.fnmatch_lines(["*a unit test's thread slept (in thread helper)*mark it component*"])


@pytest.mark.component
def test_the_unit_tier_passes_on_a_machine_without_matplotlibs_font_cache(tmp_path):
    # matplotlib runs fc-list the first time it is imported on a machine; a plot drawn in a unit test must not be
    # the first import (tests/tiers.py: warm_up, before any test)
    import subprocess as sp

    from helpers import PROJECT_ROOT
    env = dict(__import__("os").environ, MPLCONFIGDIR=str(tmp_path / "mpl"))
    run = sp.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "tests/test_plots.py", "--tier", "unit",
                  "-q"], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:]
    assert list((tmp_path / "mpl").glob("fontlist-*.json")), "matplotlib made no font cache: the test tested nothing"


SKIPPING = """
import pytest

def test_runs():
    pass

def test_needs_a_thing():
    pytest.skip("no thing here")
"""


def test_with_no_skips_set_a_skipped_test_fails_the_session(pytester, monkeypatch):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_e=SKIPPING)
    monkeypatch.delenv(tiers.NO_SKIPS, raising=False)
    assert pytester.runpytest_inprocess().ret == 0
    monkeypatch.setenv(tiers.NO_SKIPS, "1")
    run = pytester.runpytest_inprocess()
    assert run.ret == 1
    run.stdout.fnmatch_lines(["*skipped while BMWG_NO_SKIPS is set*", "*test_e.py::test_needs_a_thing: *no thing here"])

