"""A benchmark family added in three code files (issue 43): its module (options, device fixture, procedure), its
suite (identity and one statement), and its line in ``fixtures.plugin.FAMILIES``.  The toy family here is written
into a scratch project beside the real one, its line added to ``FAMILIES`` for this session only, and run through
the real core: its option parsed into ``bmwg.toy``, its trials through the one trial loop, its entry in
results.json, junit.xml and the report, and its plausibility check able to fail the run."""

import json

import matplotlib.pyplot  # noqa: F401  (a run imports it lazily: loaded before pytester's snapshot of sys.modules)
import pytest
import scipy.stats  # noqa: F401  (likewise: numpy's compiled modules load once per process)

from fixtures import plugin

pytestmark = pytest.mark.component     # the session reads the testbed (platform runs uname), as every run does

TOY_FAMILY = '''
"""A toy family: an abacus that counts ``--toy-step`` beads a trial."""
from dataclasses import dataclass
from typing import ClassVar

import pytest

from emulator.params import Family, option, positive_int
from fixtures.config import add_options
from fixtures.devices.base import Device, Needs
from fixtures.harness import Procedure, TrialOutcome


@dataclass(frozen=True)
class ToyParams(Family):
    """The toy family's options."""
    TITLE: ClassVar[str] = "a toy family"
    toy_step: int = option(3, "--toy-step", "beads each trial adds", positive_int)


OPTIONS = {"toy": ToyParams}
NEEDS = Needs.of()


def pytest_addoption(parser):
    add_options(parser, OPTIONS)


class Abacus(Device):
    KIND = TITLE = name = "abacus"


@pytest.fixture
def abacus():
    return Abacus()


class Count(Procedure):
    """Trial i counts i steps of beads."""

    def __init__(self, p: ToyParams, fudge: int = 0):
        self.p, self.fudge = p, fudge

    def prepare(self, run):
        run.parameters(step=self.p.toy_step).columns([("beads", "Beads")])

    def trial(self, index):
        return TrialOutcome(value=index * self.p.toy_step + self.fudge, details={"beads": index})

    def conclude(self, run, entry):
        run.note(f"{len(entry['trials'])} rows of the abacus counted")

    def plausible(self, entry):
        """a count that is not a whole number of steps"""
        return all(t["value"] % self.p.toy_step == 0 for t in entry["trials"] if t.get("ok"))
'''

TOY_SUITE = '''
import pytest

import toy_family


@pytest.mark.rfc8456(section="★", category="extra", title="Abacus Count", symbol="AC", unit="beads",
                     higher_is_better=True, definition="beads counted", measurement_point="the abacus",
                     needs=toy_family.NEEDS, device="abacus")
def test_abacus_count(benchmark_run, bmwg):
    benchmark_run.measure(toy_family.Count(bmwg.toy, FUDGE))
'''


@pytest.fixture
def toy_project(pytester, monkeypatch):
    """A scratch project whose conftest loads the real core, with the toy family's line added to FAMILIES."""
    pytester.makeconftest('pytest_plugins = ["fixtures.plugin"]')
    pytester.makepyfile(toy_family=TOY_FAMILY)
    pytester.syspathinsert()
    families = (*plugin.FAMILIES, "toy_family")
    monkeypatch.setattr(plugin, "FAMILIES", families)
    monkeypatch.setattr(plugin, "pytest_plugins", [*plugin.CORE, *families])
    return pytester


@pytest.mark.parametrize("fudge", [0, 1])
def test_a_toy_family_in_three_files_runs_through_the_core(toy_project, fudge):
    toy_project.makepyfile(test_toy_suite=TOY_SUITE.replace("FUDGE", str(fudge)))
    out = toy_project.path / "report"
    result = toy_project.runpytest_inprocess("test_toy_suite.py", "--repetitions", "3", "--warmup", "0",
                                             "--toy-step", "5", "--report-dir", str(out))
    (entry,) = json.loads((out / "results.json").read_text())["benchmarks"]
    assert entry["benchmark"] == "test_abacus_count" and entry["parameters"]["step"] == 5
    assert [t["value"] for t in entry["trials"]] == [5 + fudge, 10 + fudge, 15 + fudge]
    assert "3 rows of the abacus counted" in entry["notes"]
    junit = (out / "junit.xml").read_text()
    assert "test_abacus_count" in junit and "Abacus Count" in (out / "report.md").read_text()
    if fudge:
        assert result.ret == 1 and entry["outcome"] == {
            "status": "failed", "reason": "implausible result: a count that is not a whole number of steps"}
        assert "implausible result" in junit
    else:
        assert result.ret == 0 and entry["outcome"]["status"] == "passed" and entry["summary"]["mean"] == 10
