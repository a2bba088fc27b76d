"""The project's own tests in four tiers, by what a test needs and what it costs, each with a time budget.

=========  =====================================================================================  ========
tier       what its tests need                                                                    budget
=========  =====================================================================================  ========
unit       nothing but the code: no socket, no subprocess, no sleep (Twisted's StringTransport    60 s
           and task.Clock stand in); a unit test that opens one fails, naming what it opened
component  the project's own parts for real on loopback: the null controller and the model        480 s
           controllers of tests/, emulator shards, the pytest plugin, short ``--controller null``
           runs of the suite
system     the embedded controllers, real and third-party: Ryu, os-ken, Faucet,                   600 s
           ovs-testcontroller, OVN central
external   what needs a large download or a service: OpenDaylight (Maven, a JVM; its cluster),    900 s
           PostgreSQL, Chromium, sshd, the package index
=========  =====================================================================================  ========

A test module or test says its tier with a marker (``pytestmark = pytest.mark.component``); the closest one counts
(a test's or a parameter's over its module's); a test with none is a unit test (the marker ``unit`` is added to it,
so ``-m unit`` selects it).  Two tiers at one level is an error.  ``--tier component`` (or ``--tier system,external``)
runs the tests of those tiers: the tier is the closest marker, which ``-m`` cannot tell from an outer one.

A budget is checked where its tier runs: at the end of the session, a tier whose tests took longer than its budget
fails the run (exit status 1), naming its slowest tests.  The time of a tier is the session's wall time when the
session ran that tier alone (collection included), else the sum of its tests' setup, call and teardown.
``--tier-budget TIER=SECONDS`` sets another budget for one session (a lower one shows the check at work).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time

import pytest

BUDGETS_S = {"unit": 60.0, "component": 480.0, "system": 600.0, "external": 900.0}
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

class Guard:
    """While a unit test's setup, call or teardown runs, opening a socket, starting a process or sleeping fails
    it (``pytest.fail``, which ``except Exception`` does not swallow), naming what it did and where it belongs.
    A netlink socket (this kernel's interface list, which scapy reads when it is first imported) is let through."""

    def __init__(self):
        self.saved = []

    @staticmethod
    def refuse(what: str):
        def refused(*_args, **_kwargs):
            pytest.fail(f"a unit test {what}: unit tests open no socket, start no process and never sleep "
                        "(Twisted's StringTransport and task.Clock stand in); mark it component, system or external "
                        "(tests/tiers.py)", pytrace=True)
        return refused

    def __enter__(self):
        original = socket.socket.__init__
        refused = self.refuse("opened a socket")

        def open_socket(sock, family=-1, *args, **kwargs):
            # a netlink socket asks this kernel about its interfaces (scapy does on import): no peer, no traffic
            if family == getattr(socket, "AF_NETLINK", None):
                return original(sock, family, *args, **kwargs)
            return refused()

        self.saved.append((socket.socket, "__init__", original))
        socket.socket.__init__ = open_socket
        targets = [(subprocess.Popen, "__init__", "started a subprocess"),
                   (os, "fork", "forked"), (os, "posix_spawn", "spawned a process"),
                   (os, "system", "ran a shell command"), (time, "sleep", "slept")]
        for owner, name, what in targets:
            if hasattr(owner, name):
                self.saved.append((owner, name, getattr(owner, name)))
                setattr(owner, name, self.refuse(what))
        return self

    def __exit__(self, *exc):
        for owner, name, original in reversed(self.saved):
            setattr(owner, name, original)
        self.saved.clear()


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


class Tiers:
    """The tiers' hooks for one session."""

    def __init__(self, budgets: dict, chosen=(), clock=time.monotonic):
        self.budgets = budgets
        self.chosen = tuple(chosen)
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

    @staticmethod
    def _guarded(item):
        return Guard() if tier_of(item) == "unit" else contextlib.nullcontext()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item):
        with self._guarded(item):
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item):
        with self._guarded(item):
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item):
        with self._guarded(item):
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item):
        report = yield
        self.clock.add(item.nodeid, tier_of(item), report.duration)
        return report

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session, exitstatus):
        self.clock.ended = self.now()
        if exitstatus == pytest.ExitCode.OK and any(v[3] for v in verdicts(self.clock, self.budgets)):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter):
        if not self.clock.tests:
            return
        lines = summary_lines(self.clock, self.budgets)
        over = any(line.endswith("OVER BUDGET") for line in lines)
        terminalreporter.section("tier budgets (tests/tiers.py)", red=over, green=not over)
        for line in lines:
            terminalreporter.line(line, red=over and line.endswith("OVER BUDGET"))
