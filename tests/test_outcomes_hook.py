"""fixtures/outcomes.py: the test's own failure is the recorded outcome when nothing else explains it."""

from types import SimpleNamespace

import pytest

from fixtures import outcomes
from fixtures.benchmark import Benchmark
from fixtures.harness import BenchmarkRun, Trials
from reports.junit import render_junit
from reports.outcome import judge
from reports.results import ResultStore

X = Benchmark(name="test_x", section="5.2.2", category="scalability", title="X", symbol="S", unit="nodes",
              higher_is_better=True, definition="d", measurement_point="m")


class Device:
    def log_tail(self):
        return ""


def hook(item, call, report):
    gen = outcomes.pytest_runtest_makereport(item, call)
    next(gen)
    with pytest.raises(StopIteration):
        gen.send(SimpleNamespace(get_result=lambda: report))


def test_an_exception_before_the_first_trial_is_the_recorded_reason(tmp_path):
    # The matrix run of 2026-11-26: an AttributeError raised before §5.2.2's first trial left its entry "running",
    # and junit.xml and the report said "did not finish" instead of the error.
    store = ResultStore(tmp_path / "results.json", {"started": "now"})
    run = BenchmarkRun(store, Device(), X, Trials(2), progress=lambda line: None)
    item = SimpleNamespace(stash={outcomes.RUNS: [run], outcomes.IDENTITY: X},
                           config=SimpleNamespace(stash={outcomes.STORE: store}))
    try:
        raise AttributeError("'FaucetNorthbound' object has no attribute 'reports_hosts'")
    except AttributeError:
        excinfo = pytest.ExceptionInfo.from_current()
    call = SimpleNamespace(when="call", excinfo=excinfo)
    report = SimpleNamespace(failed=True, skipped=False, sections=[], longrepr=None, longreprtext="")
    hook(item, call, report)
    status, reason = judge(run.result)
    assert status == "error" and reason == "AttributeError: 'FaucetNorthbound' object has no attribute 'reports_hosts'"
    assert "has no attribute 'reports_hosts'" in render_junit(store.data)


def test_a_concluded_failure_explains_itself_and_a_running_entry_does_not():
    assert outcomes.explains({"outcome": {"status": "failed", "reason": "verdict FAIL"}, "trials": []})
    assert not outcomes.explains({"outcome": {"status": "running"}, "trials": []})
    assert not outcomes.explains({"outcome": {"status": "passed"}, "trials": [{"index": 1, "ok": True, "value": 1}],
                                  "verdict": None})
