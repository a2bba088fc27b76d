"""Integration: the robustness screen against real controllers over loopback — a finding fails the run in the
exit status, junit.xml and report.md alike; listed as a known finding it does not; a hang is ended by a
restart; ovs-testcontroller screened at OpenFlow 1.0; a stopped screen keeps what it saw."""

import shutil
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from helpers import PROJECT_ROOT, pytest_run
from results_check import check_results_files

from reports.results import load_results

pytestmark = pytest.mark.system

# --collateral-floor 50: these tests are about findings, hangs and stops, not collateral timing; on a slow CI host a
# restarted Ryu's sentinel p99 once rose 20 ms after C01 (2.2 ms before) and called it COLLATERAL.
QUICK = ("--malformed-runs", "1", "--sentinel-baseline", "0.5", "--malformed-window", "2.5", "--collateral-floor", "50")


def screen(out, kinds, *extra, timeout=240):
    return pytest_run("suites", "-k", "malformed_message_handling", "--malformed-kinds", kinds, *QUICK,
                      "--report-dir", out, *extra, timeout=timeout)


def junit_cases(out) -> dict:
    root = ET.parse(out / "junit.xml").getroot()
    return {case.get("name"): case for case in root.iter("testcase")}


def test_a_ryu_hang_is_found_restarted_and_fails_everywhere_unless_known(tmp_path):
    # K01 (a HELLO element of length 0) hangs Ryu 4.34 before its handshake (faucetsdn/ryu#195); C01 does not.
    out = tmp_path / "found"
    proc = screen(out, "C01,K01")
    assert proc.returncode == 1, proc.stdout[-3000:]
    bench = load_results(out / "results.json")["benchmarks"][0]
    rows = {r["kind"]: r for r in bench["screen"]["kinds"]}
    assert rows["K01"]["outcome"] == "HANG" and rows["C01"]["pass"] is True
    assert list(rows) == ["C01", "K01"]                  # the hazard ran last
    assert bench["outcome"]["status"] == "failed" and "K01 HANG" in bench["outcome"]["reason"]
    cases = junit_cases(out)
    assert cases["test_malformed_message_handling[K01]"].find("failure") is not None
    assert cases["test_malformed_message_handling"].find("failure") is not None
    report = (out / "report.md").read_text()
    assert "**K01 HANG**" in report and "--malformed-kinds K01" in report and rows["K01"]["bytes_hex"] in report
    check_results_files(out)

    known = tmp_path / "known.yaml"
    known.write_text('K01: "faucetsdn/ryu#195"\n')
    out2 = tmp_path / "known"
    proc = screen(out2, "K01,C01", "--known-findings", known)
    assert proc.returncode == 0, proc.stdout[-3000:]
    bench = load_results(out2 / "results.json")["benchmarks"][0]
    assert bench["screen"]["known_failed_kinds"] == ["K01"] and bench["outcome"]["status"] == "passed"
    skipped = junit_cases(out2)["test_malformed_message_handling[K01]"].find("skipped")
    assert skipped is not None and "known finding" in skipped.get("message")


@pytest.mark.skipif(shutil.which("ovs-testcontroller") is None, reason="ovs-testcontroller is not installed")
def test_ovs_testcontroller_screened_at_openflow_10(tmp_path):
    out = tmp_path / "ovs"
    proc = screen(out, "B03,C01,E10", "--controller", "ovs", "--openflow", "1.0")
    bench = load_results(out / "results.json")["benchmarks"][0]
    rows = {r["kind"]: r for r in bench["screen"]["kinds"]}
    assert set(rows) == {"B03", "C01", "E10"} and all(r["outcome"] != "NOT-SCREENED" for r in rows.values())
    assert rows["E10"]["outcome"] == "CONFORMANT"                  # a valid PACKET_IN is answered
    assert proc.returncode == (1 if bench["screen"]["failed_kinds"] else 0), proc.stdout[-3000:]


def test_a_screen_stopped_by_sigterm_keeps_the_kinds_it_judged(tmp_path):
    out = tmp_path / "stopped"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "suites", "-k", "malformed_message_handling",
           "--malformed-kinds", "A,B", *QUICK, "--report-dir", str(out)]
    proc = subprocess.Popen(cmd, cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for line in proc.stdout:
            if "kind 3/" in line:
                break
        proc.send_signal(signal.SIGTERM)
        text, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 2, text[-3000:]
    bench = load_results(out / "results.json")["benchmarks"][0]
    assert bench["outcome"]["status"] == "interrupted" and bench["screen"]["screened"] >= 3
    assert "<error" in (out / "junit.xml").read_text() and "A01" in (out / "report.md").read_text()
    check_results_files(out)


EXC_QUICK = ("--repetitions", "2", "--topology", "leaf-spine:2x2", "--rate-td", "2", "--offered-rate", "300",
             "--change-td", "3", "--exception-percents", "1")


def test_exception_handling_table_against_ryu(tmp_path):
    # The rate row; tox -e ci runs the change row against Ryu (short-run.args, --exception-tests=change).
    out = tmp_path / "exc"
    proc = pytest_run("suites", "-k", "exception_handling", "--exception-tests", "rate", *EXC_QUICK,
                      "--report-dir", out, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:]
    data = load_results(out / "results.json")
    cells = {(b["parameters"]["test"], b["parameters"]["exceptions_percent"]): b for b in data["benchmarks"]}
    assert set(cells) == {("reactive_path_provisioning_rate", 0), ("reactive_path_provisioning_rate", 1)}
    one = cells[("reactive_path_provisioning_rate", 1)]
    base = cells[("reactive_path_provisioning_rate", 0)]
    assert one["parameters"]["offered_rate"] == pytest.approx(1.01 * base["summary"]["mean"])
    sent = [t["details"]["exceptions_sent"] for t in one["trials"]]
    assert all(s >= 1 for s in sent) and all(
        abs(t["details"]["exceptions_sent"] - round(t["details"]["async_messages"] / 100)) <= 1 for t in one["trials"])
    assert "exceptions_sent" not in base["trials"][0]["details"]          # the 0 % cell sends none
    assert one["against_without_exceptions"]["baseline"] == "the 0 % cell of this run"
    report = (out / "report.md").read_text()
    assert "| Test | Without Exceptions | With 1% Exceptions |" in report and "Δ " in report
    check_results_files(out)


def test_a_kind_that_closes_sessions_is_not_benchmarkable(tmp_path):
    # Ryu closes the session of a switch that sends version 0x42 (the screen's B01 CLOSED): never a rate.
    out = tmp_path / "closes"
    proc = pytest_run("suites", "-k", "exception_handling", "--exception-tests", "rate", "--exception-kind", "B01",
                      *EXC_QUICK, "--report-dir", out, timeout=600)
    data = load_results(out / "results.json")
    one = next(b for b in data["benchmarks"] if b["parameters"].get("exceptions_percent") == 1)
    assert one["outcome"]["status"] == "skipped", one["outcome"]
    assert "not benchmarkable at 1 % with kind B01" in one["outcome"]["reason"]
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "not benchmarkable" in (out / "report.md").read_text()


DOS_QUICK = ("--repetitions", "2", "--topology", "leaf-spine:2x2", "--rate-td", "2", "--offered-rate", "300",
             "--dos-lead", "0.5")


def attack_processes(root_pid: int) -> list:
    """The attack processes below ``root_pid`` (looked at, never signalled)."""
    import psutil
    try:
        kids = psutil.Process(root_pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    out = []
    for p in kids:
        try:
            if "emulator.attack" in " ".join(p.cmdline()):
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out


def test_denial_of_service_table_against_ryu(tmp_path):
    out = tmp_path / "dos"
    # One attack (packet-in, and its sham: it needs no privilege, so every check below runs as any user); tox -e ci
    # runs the syn attack's cells against Ryu (--dos-attacks=syn).
    proc = pytest_run("suites", "-k", "denial_of_service", "--dos-tests", "rate", "--dos-attacks", "packet-in",
                      *DOS_QUICK, "--report-dir", out, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:]
    data = load_results(out / "results.json")
    cells = {(b["parameters"]["condition"], b["parameters"].get("attack")): b for b in data["benchmarks"]}
    assert list(cells) == [("none", None), ("attack", "packet-in"), ("sham", "packet-in")]
    base = cells[("none", None)]
    assert "attack_sent" not in base["trials"][0]["details"]
    for key in list(cells)[1:]:
        b = cells[key]
        assert b["parameters"]["offered_rate"] == pytest.approx(1.01 * base["summary"]["mean"])
        assert all(t["details"]["attack_sent"] > 0 for t in b["trials"])
        assert b["attack_reached"]["target_rate"] == b["parameters"]["attack_target_rate"]
        if key[0] == "sham":      # the sham at the rate its attack reached
            reached = cells[("attack", key[1])]["attack_reached"]["mean_rate"]
            assert b["parameters"]["attack_target_rate"] == pytest.approx(reached)
        assert b["against_without_attacks"]["baseline"] == "the cell without any attacks of this run"
    assert "attack_against_sham" in cells[("sham", "packet-in")]
    report = (out / "report.md").read_text()
    assert "| Test | Without any attacks | Sham (packet-in) | With attacks (packet-in) |" in report
    assert "Nature of the attack" in report and "not applicable on one host" in report
    assert len(junit_cases(out)) == 3
    check_results_files(out)


def test_a_dos_run_stopped_by_sigterm_leaves_no_attacker_and_keeps_its_trials(tmp_path):
    import time

    out = tmp_path / "stopped"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "suites", "-k", "denial_of_service",
           "--dos-tests", "rate", "--dos-attacks", "half-open", "--dos-rate", "half-open=100", *DOS_QUICK,
           "--report-dir", str(out)]
    proc = subprocess.Popen(cmd, cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = []
    try:
        deadline = time.monotonic() + 240
        while not seen and time.monotonic() < deadline and proc.poll() is None:
            seen = attack_processes(proc.pid)
            time.sleep(0.2)      # watching another process; not a measurement
        assert seen, "no attack process started"
        proc.send_signal(signal.SIGTERM)
        text, _ = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 2, text[-3000:]
    assert not any(p.is_running() and p.status() != "zombie" for p in seen), "an attack process outlived the run"
    data = load_results(out / "results.json")
    statuses = [b["outcome"]["status"] for b in data["benchmarks"]]
    assert statuses[0] == "passed" and "interrupted" in statuses
    assert "<error" in (out / "junit.xml").read_text()
    check_results_files(out)
