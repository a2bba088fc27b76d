"""Real runs of the suite appended to a history store with ``--history``, against the null controller with a known
answer delay that steps from 2 ms to 3 ms half-way; ``python -m reports history check`` must find exactly that step,
as a regression, at the first run after it, and pass once it is acknowledged.

Ten runs go to a SQLite file (system tier: real runs end to end, 10 s each); two more go to a real PostgreSQL server
(external tier), given with the password in the URL, which nothing the runs leave may keep.  Five runs each side of
the step are found at --min-runs 3 and --alpha 0.01; the 24-run version with the defaults is docs/measurements.md's
"history check against a known step".

A run's figure is the median of its trials, each the mean of ~120 exchanges of a 0.3 s trial; a controller not
scheduled for a while answers that much later, and the mean carries it: stopping the 2 ms null controller for 20 ms
every 300 ms read trials of 2.65, 3.08 and 2.65 ms (2.36-2.43 ms undisturbed; docs/measurements.md, "a known answer
under load").  A disturbance of a second or so could so move two of three trials, and a run of three then read 3.56
ms on a loaded CI machine; the median of five needs three disturbed trials to move."""

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from urllib.parse import urlsplit

import pytest
from helpers import PROJECT_ROOT, pytest_run

from fixtures.ports import free_port
from reports.history import open_store
from reports.stores import masked

pytestmark = pytest.mark.component


def check(*args):
    return subprocess.run([sys.executable, "-m", "reports", "history", "check", *map(str, args)], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=120)


def with_password(spec: str) -> tuple:
    """(spec, the password in it): a PostgreSQL URL given its password (PGPASSWORD's), as a careless user would,
    to see that it is kept nowhere; a SQLite path as it is."""
    if "://" not in spec:
        return spec, None
    parts = urlsplit(spec)
    password = parts.password or os.environ.get("PGPASSWORD")
    assert password, "a PostgreSQL store needs a password here (in BMWG_POSTGRESQL_URL or PGPASSWORD)"
    return parts._replace(netloc=f"{parts.username}:{password}@{parts.hostname}:{parts.port}").geturl(), password


def real_run(tmp_path, number: int, delay_ms: float, store: str):
    """Run ``number`` of the suite's §5.1.2 against the null controller answering after ``delay_ms``,
    appended to ``store``."""
    start = f"{sys.executable} -m emulator.nullctl --host {{host}} --port {{port}} --delay-ms {delay_ms}"
    run = pytest_run("suites", "-k", "async_message_processing_time", "--controller",
                     f"external:127.0.0.1:{free_port()}", "--controller-name", "nullctl", "--start-command", start,
                     "--no-restart", "--repetitions", "5", "--trial-duration", "0.3", "--switches", "2",
                     "--settle", "0.1", "--response-timeout", "0.3", "--no-ceiling",
                     "--report-dir", tmp_path / f"run{number}", "--history", store)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert f"history: run {number} added in {masked(store)}" in run.stdout
    return run


@pytest.mark.system      # ten real runs end to end: two minutes, more than the component tier's budget can hold
def test_history_check_finds_a_known_delay_step_in_real_runs_once_at_its_run(tmp_path):
    store = str(tmp_path / "history.db")
    for number in range(1, 11):
        real_run(tmp_path, number, 2 if number <= 5 else 3, store)
    with open_store(store) as history:
        medians = [p["median"] for p in history.points()]
    assert len(medians) == 10 and max(medians[:5]) < min(medians[5:]), medians
    junit = tmp_path / "check.xml"
    found = check("--history", store, "--min-runs", "3", "--alpha", "0.01", "--junit", junit)
    assert found.returncode == 1, found.stdout + found.stderr
    lines = [line.strip() for line in found.stdout.splitlines() if line.startswith("    ")]
    assert len(lines) == 1 and lines[0].startswith("regression at run 6 "), found.stdout
    (case,) = ET.parse(junit).getroot().findall(".//testcase")
    assert case.find("failure") is not None and "nullctl" in case.get("name")
    acks = tmp_path / "known.yaml"
    acks.write_text("- controller: nullctl\n  run: 6\n  reason: the delay was raised to 3 ms on purpose\n")
    passed = check("--history", store, "--min-runs", "3", "--alpha", "0.01", "--acknowledgements", acks)
    assert passed.returncode == 0 and "acknowledged: the delay was raised to 3 ms on purpose" in passed.stdout


@pytest.mark.external
def test_real_runs_added_to_a_postgresql_store_keep_its_password_nowhere(tmp_path, postgresql_database):
    """Real runs appended to a PostgreSQL store given with its password in the URL, as a careless user would: added in
    order and read back (finding a step in either store is tests/test_regressions.py's, on both), and the password
    kept in no file nor in the store."""
    store, password = with_password(postgresql_database("history"))
    for number, delay in ((1, 2), (2, 3)):
        run = real_run(tmp_path, number, delay, store)
        assert password not in run.stdout + run.stderr
    with open_store(store) as history:
        medians = [p["median"] for p in history.points()]
    assert len(medians) == 2 and medians[0] >= 2.0 and medians[1] >= 3.0, medians      # a delay only adds
    too_few = check("--history", store)
    assert too_few.returncode == 3 and password not in too_few.stdout + too_few.stderr, too_few.stdout
    for path in tmp_path.rglob("*"):
        assert not path.is_file() or password.encode() not in path.read_bytes(), path
    with open_store(store) as history:
        assert all(password not in json.dumps(history.results(run)) for run, *_ in history.runs())
        assert all(password not in command for (command,) in history.all("SELECT command FROM runs"))


def test_a_run_its_store_fails_at_the_end_keeps_its_files_and_says_so_everywhere(tmp_path):
    store = tmp_path / "history.db"
    # The store passes the check before the run; the controller's start command then spoils it, so the append at
    # the run's end fails (as a store whose disk filled or whose server went away mid-run would).
    nullctl = f"{sys.executable} -m emulator.nullctl --host {{host}} --port {{port}} --delay-ms 2"
    start = f"sh -c 'printf not-a-database-%.0s $(seq 300) > {store}; exec {nullctl}'"
    report = tmp_path / "run"
    run = pytest_run("suites", "-k", "async_message_processing_time", "--controller",
                     f"external:127.0.0.1:{free_port()}", "--controller-name", "nullctl", "--start-command", start,
                     "--no-restart", "--repetitions", "3", "--trial-duration", "0.3", "--switches", "2", "--settle",
                     "0.1", "--response-timeout", "0.3", "--report-dir", report, "--history", store)
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-2000:]
    assert f"history: error: the run was not added to history {store}: not a usable SQLite store" in run.stdout
    data = json.loads((report / "results.json").read_text())
    assert data["benchmarks"][0]["outcome"]["status"] == "passed" and len(data["benchmarks"][0]["trials"]) == 3
    assert "file is not a database" in data["run"]["history_error"]
    (case,) = [c for c in ET.parse(report / "junit.xml").getroot().iter("testcase") if c.get("name") == "history"]
    assert "not added to history" in case.find("error").get("message")
    assert f"ERROR, 1 benchmark: 1 passed, 0 failed, 0 error, 0 skipped; not added to history {store}: not a usable " \
        "SQLite store" in (report / "report.md").read_text()
    assert "not added to history" in (report / "report.html").read_text()
