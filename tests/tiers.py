"""The project's own tests in four tiers, by what a test needs and what it costs, each with a time budget.

=========  =====================================================================================  ========
tier       what its tests need                                                                    budget
=========  =====================================================================================  ========
unit       nothing but the code: no socket, no subprocess, no sleep (Twisted's StringTransport    60 s
           and task.Clock stand in); a unit test that opens one fails, naming what it opened
component  the project's own parts for real on loopback: the null controller and the model        480 s
           controllers of tests/, emulator shards, the pytest plugin, short ``--controller null``
           runs of the suite
system     the embedded controllers, real and third-party: Ryu, os-ken, Faucet,                   780 s
           ovs-testcontroller, OVN central; real runs end to end too long for component
external   what needs a large download or a service: OpenDaylight (Maven, a JVM; its cluster),    720 s
           PostgreSQL, Chromium, sshd, the package index
=========  =====================================================================================  ========

A test module or test says its tier with a marker (``pytestmark = pytest.mark.component``); the closest one counts
(a test's or a parameter's over its module's); a test with none is a unit test (the marker ``unit`` is added to it,
so ``-m unit`` selects it).  Two tiers at one level is an error.  ``--tier component`` (or ``--tier system,external``)
runs the tests of those tiers: the tier is the closest marker, which ``-m`` cannot tell from an outer one.

A budget is checked where its tier runs: at the end of the session, a tier whose tests took longer than its budget
fails the run (exit status 1), naming its slowest tests.  The time of a tier is the session's wall time when the
session ran that tier alone (collection included), else the sum of its tests' setup, call and teardown.
``--tier-budget TIER=SECONDS`` sets another budget for one session (a lower one shows the check at work).  With
``BMWG_NO_SKIPS=1`` (``.ci/run`` sets it, where everything the tests need is installed) a skipped test fails the
session too: a tier whose tests all skipped would otherwise pass having tested nothing.
"""

from __future__ import annotations

import _posixsubprocess
import contextlib
import os
import socket
import subprocess
import threading
import time

import pytest

BUDGETS_S = {"unit": 60.0, "component": 480.0, "system": 780.0, "external": 720.0}
TIERS = tuple(BUDGETS_S)
HELP = {
    "unit": "the code alone: no socket, no subprocess, no sleep (the default tier of an unmarked test)",
    "component": "the project's own parts for real on loopback: null and model controllers, emulator shards, the "
                 "pytest plugin, short --controller null runs",
    "system": "the embedded controllers: Ryu, os-ken, Faucet, ovs-testcontroller, OVN central",
    "external": "a large download or a service: OpenDaylight, PostgreSQL, Chromium, sshd, the package index",
}
SLOWEST = 8            # tests named when a tier is over its budget
OPTIONS = ("--tier", "--tier-budget")     # the options the project's tests add to pytest
NO_SKIPS = "BMWG_NO_SKIPS"      # set (.ci/run sets it): a skipped test fails the session, as a test that ran nothing


def marked_tiers(item) -> list:
    """The tiers of the closest level that names one (its parameter set, else the test, else its class, else
    its module); [] when none does."""
    callspec = getattr(item, "callspec", None)
    levels = [callspec.marks if callspec is not None else []]
    levels += [node.own_markers for node in reversed(item.listchain())]
    for marks in levels:
        found = sorted({m.name for m in marks if m.name in TIERS}, key=TIERS.index)
        if found:
            return found
    return []


def tier_of(item) -> str:
    """The tier ``item`` belongs to: the closest tier marker (a parameter's outranks its module's); unit when none."""
    found = marked_tiers(item)
    return found[0] if found else "unit"


def assign(items) -> list:
    """Mark every test with no tier ``unit``; the node ids of tests marked with two tiers at one level."""
    twice = []
    for item in items:
        found = marked_tiers(item)
        if not found:
            item.add_marker(pytest.mark.unit)
        elif len(found) > 1:
            twice.append(f"{item.nodeid} ({', '.join(found)})")
    return twice


def parse_budget(text: str) -> tuple:
    """``TIER=SECONDS`` as ``(tier, seconds)``; ValueError naming what is wrong."""
    tier, sep, value = text.partition("=")
    if not sep or tier not in BUDGETS_S:
        raise ValueError(f"--tier-budget {text!r}: expected TIER=SECONDS with TIER one of {', '.join(TIERS)}")
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise ValueError(f"--tier-budget {text!r}: SECONDS must be a positive number")
    return tier, seconds


# --------------------------------------------------------------------------- the unit tier's guard

# What the guard replaces besides socket.socket.__init__ (which lets netlink through): (owner, name, what it did)
PROCESSES_AND_SLEEP = ((subprocess.Popen, "__init__", "started a subprocess"),
                       (_posixsubprocess, "fork_exec", "started a process"),
                       (os, "fork", "forked"), (os, "forkpty", "forked"), (os, "posix_spawn", "spawned a process"),
                       (os, "posix_spawnp", "spawned a process"), (os, "system", "ran a shell command"),
                       (time, "sleep", "slept"))
GUARDED = ((socket.socket, "__init__"), *((owner, name) for owner, name, _what in PROCESSES_AND_SLEEP))
ORIGINALS = {(owner, name): getattr(owner, name) for owner, name in GUARDED if hasattr(owner, name)}  # at import


class Guard:
    """While a unit test's setup, call or teardown runs, opening a socket, starting a process (Popen, fork,
    posix_spawn, forkpty, os.system, multiprocessing's spawn) or sleeping fails it, naming what it did and where it
    belongs.  In the test's own thread the call fails at once (``pytest.fail``, which ``except Exception`` does not
    swallow); in another thread it goes ahead and the test fails when the phase ends (:attr:`elsewhere`), so a
    background thread is never killed halfway.  A netlink socket (this kernel's interface list, which scapy reads
    when it is first imported) is let through.  Not caught: a function bound before the test (``sleep=time.sleep``
    as a default argument), and waits that are not sleeps (``Event.wait``, ``select``, a queue's timeout)."""

    def __init__(self):
        self.saved = []
        self.elsewhere: list = []           # what other threads did while the guard was on
        self.owner = None

    def refuse(self, what: str, original):
        def refused(*args, **kwargs):
            if threading.get_ident() != self.owner:
                self.elsewhere.append(f"{what} (in thread {threading.current_thread().name})")
                return original(*args, **kwargs)
            pytest.fail(f"a unit test {what}: {ADVICE}", pytrace=True)
        return refused

    def __enter__(self):
        self.owner = threading.get_ident()
        original = socket.socket.__init__
        refused = self.refuse("opened a socket", original)

        def open_socket(sock, family=-1, *args, **kwargs):
            # a netlink socket asks this kernel about its interfaces (scapy does on import): no peer, no traffic
            if family == getattr(socket, "AF_NETLINK", None):
                return original(sock, family, *args, **kwargs)
            return refused(sock, family, *args, **kwargs)

        self.saved.append((socket.socket, "__init__", original))
        socket.socket.__init__ = open_socket
        for owner, name, what in PROCESSES_AND_SLEEP:
            if hasattr(owner, name):
                self.saved.append((owner, name, getattr(owner, name)))
                setattr(owner, name, self.refuse(what, getattr(owner, name)))
        return self

    def __exit__(self, *exc):
        for owner, name, original in reversed(self.saved):
            setattr(owner, name, original)
        self.saved.clear()



ADVICE = ("unit tests open no socket, start no process and never sleep (Twisted's StringTransport and task.Clock "
          "stand in); mark it component, system or external (tests/tiers.py)")


def warm_up() -> None:
    """What the code under test does once per process and a unit test may be the first to reach, done before any
    test: matplotlib builds its font cache with ``fc-list`` the first time it is imported on a machine."""
    try:
        import matplotlib.font_manager  # noqa: F401
    except ImportError:
        pass


# --------------------------------------------------------------------------- budgets

class Clock:
    """What each test took, by tier, and the session's wall time."""

    def __init__(self, started: float = 0.0):
        self.started = self.ended = started
        self.tests: dict = {}          # nodeid -> [tier, seconds]

    def add(self, nodeid: str, tier: str, seconds: float) -> None:
        entry = self.tests.setdefault(nodeid, [tier, 0.0])
        entry[1] += seconds

    def tiers(self) -> list:
        return [t for t in TIERS if any(tier == t for tier, _ in self.tests.values())]

    def spent(self, tier: str) -> float:
        if self.tiers() == [tier]:
            return self.ended - self.started
        return sum(s for t, s in self.tests.values() if t == tier)

    def slowest(self, tier: str, n: int = SLOWEST) -> list:
        return sorted(((s, nodeid) for nodeid, (t, s) in self.tests.items() if t == tier), reverse=True)[:n]


def verdicts(clock: Clock, budgets: dict) -> list:
    """``(tier, seconds, budget, over)`` for every tier the session ran."""
    return [(t, clock.spent(t), budgets[t], clock.spent(t) > budgets[t]) for t in clock.tiers()]


def summary_lines(clock: Clock, budgets: dict) -> list:
    """The terminal's lines: each tier's time against its budget; for a tier over it, its slowest tests."""
    lines = []
    for tier, seconds, budget, over in verdicts(clock, budgets):
        tests = sum(1 for t, _ in clock.tests.values() if t == tier)
        lines.append(f"tier {tier}: {seconds:.1f} s of its {budget:g} s budget, {tests} tests"
                     + (" — OVER BUDGET" if over else ""))
        if over:
            lines.append("  its slowest tests (tests/tiers.py; move one down a tier, or make it cheaper):")
            lines += [f"  {s:8.2f} s  {nodeid}" for s, nodeid in clock.slowest(tier)]
    return lines


# --------------------------------------------------------------------------- the plugin

def addoption(parser) -> None:
    """``--tier-budget`` (tests/conftest.py's pytest_addoption)."""
    parser.addoption(OPTIONS[0], action="append", default=[], metavar="TIER[,TIER]",
                     help="run only the tests of these tiers: " + ", ".join(TIERS) + " (tests/tiers.py)")
    parser.addoption(OPTIONS[1], action="append", default=[], metavar="TIER=SECONDS",
                     help="another time budget for one tier in this session (tests/tiers.py: "
                          + ", ".join(f"{t} {s:g} s" for t, s in BUDGETS_S.items()) + ")")


def configure(config) -> None:
    """The tiers' markers, and the plugin that assigns tiers, guards unit tests and checks the budgets
    (tests/conftest.py's pytest_configure)."""
    for tier in TIERS:
        config.addinivalue_line("markers", f"{tier}: test tier: {HELP[tier]} (tests/tiers.py)")
    budgets = dict(BUDGETS_S)
    for text in config.getoption("--tier-budget", default=None) or []:
        try:
            tier, seconds = parse_budget(text)
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
        budgets[tier] = seconds
    chosen = [t.strip() for text in config.getoption("--tier", default=None) or [] for t in text.split(",")]
    unknown = [t for t in chosen if t not in TIERS]
    if unknown:
        raise pytest.UsageError(f"--tier {','.join(unknown)}: expected one of {', '.join(TIERS)}")
    config.pluginmanager.register(Tiers(budgets, chosen), "bmwg-tiers")


ELSEWHERE = pytest.StashKey[list]()


class Tiers:
    """The tiers' hooks for one session."""

    def __init__(self, budgets: dict, chosen=(), clock=time.monotonic, no_skips=None):
        self.budgets = budgets
        self.chosen = tuple(chosen)
        self.no_skips = os.environ.get(NO_SKIPS, "").strip() not in ("", "0") if no_skips is None else no_skips
        self.skipped: list = []
        self.now = clock
        self.clock = Clock(clock())

    @pytest.hookimpl(tryfirst=True)         # before -m deselects by the markers it adds
    def pytest_collection_modifyitems(self, items, config):
        twice = assign(items)
        if twice:
            raise pytest.UsageError("tests marked with more than one tier (tests/tiers.py): " + "; ".join(twice))
        if self.chosen:
            keep = [item for item in items if tier_of(item) in self.chosen]
            dropped = [item for item in items if tier_of(item) not in self.chosen]
            if dropped:
                config.hook.pytest_deselected(items=dropped)
                items[:] = keep

    def pytest_sessionstart(self, session):
        warm_up()

    @staticmethod
    def _guarded(item):
        return Guard() if tier_of(item) == "unit" else contextlib.nullcontext()

    def _phase(self, item, guard):
        """Run one phase under ``guard``; what other threads did under it fails the phase when it ends."""
        with guard:
            outcome = yield
        if isinstance(guard, Guard) and guard.elsewhere and outcome.excinfo is None:
            item.stash[ELSEWHERE] = item.stash.get(ELSEWHERE, []) + guard.elsewhere

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item):
        yield from self._phase(item, self._guarded(item))

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        yield from self._phase(item, self._guarded(item))

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item, nextitem):
        # Only the test's own fixtures are torn down when the next test shares its parent; otherwise wider fixtures
        # (a module's, the session's shard pool) end here too, and they are not the unit test's doing.
        same_parent = nextitem is not None and nextitem.parent is item.parent
        yield from self._phase(item, self._guarded(item) if same_parent else contextlib.nullcontext())

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        self.clock.add(item.nodeid, tier_of(item), report.duration)
        if report.skipped:
            self.skipped.append(f"{item.nodeid}: {report.longrepr[-1] if isinstance(report.longrepr, tuple) else ''}")
        done = item.stash.get(ELSEWHERE, None)
        if done and report.when == call.when and report.passed:
            item.stash[ELSEWHERE] = []
            report.outcome = "failed"
            report.longrepr = f"while it ran, a unit test's thread {'; '.join(sorted(set(done)))}: {ADVICE}"

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session, exitstatus):
        self.clock.ended = self.now()
        over = any(v[3] for v in verdicts(self.clock, self.budgets))
        if exitstatus == pytest.ExitCode.OK and (over or self.no_skips and self.skipped):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter):
        if not self.clock.tests:
            return
        lines = summary_lines(self.clock, self.budgets)
        over = any(line.endswith("OVER BUDGET") for line in lines)
        terminalreporter.section("tier budgets (tests/tiers.py)", red=over, green=not over)
        for line in lines:
            terminalreporter.line(line, red=over and line.endswith("OVER BUDGET"))
        if self.no_skips and self.skipped:
            terminalreporter.section(f"skipped while {NO_SKIPS} is set: the run fails", red=True)
            for line in self.skipped:
                terminalreporter.line(line, red=True)
