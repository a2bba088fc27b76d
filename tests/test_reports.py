"""results.json, its renderers (JUnit, RFC report), re-rendering, and profile errors."""

import json
import os
import stat
import xml.etree.ElementTree as ET

import pytest

from fixtures.profiles import ProfileError, load_profile
from reports.__main__ import main as reports_main
from reports.junit import render_junit
from reports.outcome import DID_NOT_FINISH, RULE, concluded, judge, run_status
from reports.results import ResultsError, ResultStore, load_results, ok_values, write_json_atomic
from reports.rfc_report import render_markdown
from reports.stats import summarize
from reports.summary import headline
from reports.verdict import against_threshold


def sample_results(tmp_path, values=(100, 102, None, 98, 101, 99, 100, 103, 97, 100, 100), verdict=True,
                   max_failed_trials=None):
    store = ResultStore(tmp_path / "results.json", {"started": "2026-11-22T00:00:00+00:00",
                                                    "controller": {"name": "ryu", "version": "4.34"},
                                                    "openflow": "1.3", "host": {"cpus": 2, "memory_gib": 24}})
    trials = [{"index": i + 1, "value": x, "ok": x is not None, **({} if x is not None else
                                                                   {"reason": "controller exited (signal 9)"})}
              for i, x in enumerate(values)]
    entry = store.add_benchmark({"benchmark": "test_control_session_capacity", "title": "Control Sessions Capacity",
                                 "rfc_section": "5.2.1", "unit": "sessions", "symbol": "CCn",
                                 "parameters": {"ramp_group": 25}, "trials": trials})
    if max_failed_trials is not None:
        entry["max_failed_trials"] = max_failed_trials
    entry["summary"] = summarize(ok_values(entry))
    if verdict:
        entry["verdict"] = against_threshold(ok_values(entry), 1000, "min").to_dict()
    entry["outcome"] = ({"status": "failed", "reason": "verdict FAIL (wilcoxon-signed-rank)"} if verdict
                        else {"status": "passed"})
    store.save()
    return store


def test_store_writes_atomically_and_loads_back(tmp_path):
    store = sample_results(tmp_path)
    data = load_results(store.path)
    assert data["schema_version"] == 2
    (bench,) = data["benchmarks"]
    assert ok_values(bench) == [100, 102, 98, 101, 99, 100, 103, 97, 100, 100]
    assert bench["trials"][2] == {"index": 3, "value": None, "ok": False, "reason": "controller exited (signal 9)"}
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]  # no temporary file left behind


@pytest.mark.parametrize("text,match", [("{not json", "is not JSON: .* line 1"), ("[]", "no 'benchmarks' list"),
                                        ('{"benchmarks": [{"unit": "s"}]}', r"benchmarks\[0\] lacks benchmark")])
def test_load_results_names_the_problem(tmp_path, text, match):
    path = tmp_path / "r.json"
    path.write_text(text)
    with pytest.raises(ResultsError, match=match):
        load_results(path)
    with pytest.raises(ResultsError, match="cannot read results file"):
        load_results(tmp_path / "missing.json")


def test_junit_has_one_testcase_with_properties_and_failure(tmp_path):
    data = load_results(sample_results(tmp_path).path)
    root = ET.fromstring(render_junit(data))
    (case,) = root.iter("testcase")
    props = {p.get("name"): p.get("value") for p in case.find("properties")}
    assert props["summary.mean"] == "100" and props["summary.n"] == "10"
    assert props["verdict.result"] == "FAIL" and props["verdict.test"] == "one-sample-t"
    assert float(props["verdict.p_value"]) < 1e-6 and props["trials.failed"] == "1"
    failure = case.find("failure")
    assert failure is not None and "verdict FAIL" in failure.get("message")
    assert "trial 3: controller exited (signal 9)" in failure.text


def test_junit_passes_without_verdict_and_skips_with_reason(tmp_path):
    data = load_results(sample_results(tmp_path, verdict=False, max_failed_trials=1).path)
    case = next(ET.fromstring(render_junit(data)).iter("testcase"))
    assert case.find("failure") is None and case.find("error") is None
    data["benchmarks"][0]["outcome"] = {"status": "skipped", "reason": "controller app does not answer PACKET_IN"}
    case = next(ET.fromstring(render_junit(data)).iter("testcase"))
    assert case.find("skipped").get("message") == "controller app does not answer PACKET_IN"


def test_rfc_report_has_template_and_average_variance_rows(tmp_path):
    text = render_markdown(load_results(sample_results(tmp_path).path))
    for field in ("Controller name and version | ryu 4.34", "Southbound protocols and versions | OpenFlow 1.3",
                  "Reference test setup", "Controller state persistence", "Number of links"):
        assert field in text
    lines = text.splitlines()
    table = [line for line in lines if line.startswith(("| 3 |", "| 4 |", "| Average", "| Variance"))]
    assert table == ["| 3 | — | failed | controller exited (signal 9) |",
                     "| 4 | 98 | ok |  |",
                     "| Average | 100 | n = 10 | RFC: sum of values / trials |",
                     "| Variance | 3.11111 |  | RFC: divisor n − 1 |"]  # 28 / 9 by hand
    assert "Extras (not required by RFC 8456)" in text and "| result | FAIL |" in text


def test_emulator_capabilities_show_the_exchange_floor_measured_in_the_run(tmp_path):
    data = load_results(sample_results(tmp_path).path)
    assert "Control message processing time | not measured in this run" in render_markdown(data)
    data["benchmarks"][0]["emulator_ceiling"] = {"mode": "serial", "switches": 16, "apt_ms": 0.0214,
                                                 "latency_median_ms": 0.0204}
    assert ("Control message processing time | 0.0214 ms per PACKET_IN exchange (median 0.0204 ms, serial, "
            "16 switches) against the null controller") in render_markdown(data)


def test_python_m_reports_rerenders_without_rerunning(tmp_path, capsys):
    store = sample_results(tmp_path)
    out = tmp_path / "again"
    assert reports_main(["render", str(store.path), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["junit.xml", "plots", "report.html", "report.md"]
    assert reports_main(["summary", str(store.path)]) == 1  # verdict FAIL: the run did not pass
    out = capsys.readouterr().out
    assert "mean 100 sessions, variance 3.11111, n = 10, 1 failed" in out
    assert out.splitlines()[-1] == "run FAILED, 1 benchmark: 0 passed, 1 failed, 0 error, 0 skipped"
    passing = sample_results(tmp_path / "ok", verdict=False, max_failed_trials=1)
    assert reports_main(["summary", str(passing.path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "run PASSED, 1 benchmark: 1 passed, 0 failed, 0 error, 0 skipped"
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert reports_main(["render", str(bad)]) == 2
    assert "is not JSON" in capsys.readouterr().err


def write(tmp_path, text):
    path = tmp_path / "profile.yaml"
    path.write_text(text)
    return path


def test_profile_loads_thresholds(tmp_path):
    prof = load_profile(write(tmp_path, "alpha: 0.01\ncontrol_session_capacity: {min: 1000}\n"
                                        "test_async_message_processing_time: {max: 2.5}\n"))
    assert prof["alpha"] == 0.01
    assert prof["thresholds"] == {"control_session_capacity": ("min", 1000.0),
                                  "async_message_processing_time": ("max", 2.5)}


@pytest.mark.parametrize("text,match", [
    ("control_session_capacity: {min: 10\n", r"not valid YAML at line \d+"),
    ("control_sessions_capacity: {min: 10}\n", "key 'control_sessions_capacity' is not a benchmark"),
    ("control_session_capacity: {above: 10}\n", "key 'control_session_capacity' must hold exactly one of"),
    ("control_session_capacity: {min: lots}\n", r"key 'control_session_capacity.min' must be a number"),
    ("alpha: 2\n", "key 'alpha' must be a number between 0 and 1"),
    ("- a list\n", "top level must be a mapping"),
])
def test_profile_errors_name_file_and_key(tmp_path, text, match):
    path = write(tmp_path, text)
    with pytest.raises(ProfileError, match=match) as info:
        load_profile(path)
    assert str(path) in str(info.value)


def test_shipped_default_profile_is_valid():
    from emulator.process import PROJECT_ROOT
    prof = load_profile(PROJECT_ROOT / "fixtures" / "profiles" / "default.yaml")
    assert prof["thresholds"]["control_session_capacity"] == ("min", 1000.0)


def test_topology_benchmarks_fill_the_northbound_and_rediscovery_rows(tmp_path):
    data = load_results(sample_results(tmp_path).path)
    text = render_markdown(data)
    assert "Northbound protocols and versions | not used" in text
    assert "Topology rediscovery timeout | controller default" in text
    data["benchmarks"][0]["parameters"].update(northbound="Ryu rest_topology /v1.0 (HTTP, JSON)",
                                               controller_rediscovery=0.9)
    text = render_markdown(data)
    assert "Northbound protocols and versions | Ryu rest_topology /v1.0 (HTTP, JSON) |" in text
    assert "Topology rediscovery timeout | LLDP re-sent every 0.9 s per port (topology benchmarks) |" in text


def test_a_series_point_is_named_in_junit_headline_and_report(tmp_path):
    data = load_results(sample_results(tmp_path).path)
    data["benchmarks"][0]["variant"] = "leaf-spine-2x2"
    assert 'name="test_control_session_capacity[leaf-spine-2x2]"' in render_junit(data)
    assert "## Control Sessions Capacity (leaf-spine-2x2) — RFC 8456 §5.2.1" in render_markdown(data)
    assert headline(data["benchmarks"][0]).startswith("FAILED test_control_session_capacity[leaf-spine-2x2] (RFC")


def test_baseline_lookup_matches_the_series_point():
    from reports.results import find_benchmark
    data = {"benchmarks": [{"benchmark": "b", "variant": "4sw", "x": 1}, {"benchmark": "b", "variant": "16sw", "x": 2},
                           {"benchmark": "c", "x": 3}]}
    assert find_benchmark(data, "b", "16sw")["x"] == 2
    assert find_benchmark(data, "b", "64sw") is None           # no point to compare with: no baseline
    assert find_benchmark(data, "c", "anything")["x"] == 3     # an older run without variants
    assert find_benchmark(data, "b")["x"] == 1


# ---------------------------------------------------------------- one outcome rule

def entry(status="passed", values=(5, 6, None), verdict=None, **extra):
    trials = [{"index": i + 1, "value": x, "ok": x is not None, **({} if x is not None else {"reason": f"r{i + 1}"})}
              for i, x in enumerate(values)]
    recorded = {"status": status, **({"reason": extra.pop("reason")} if "reason" in extra else {})}
    return {"benchmark": "b", "rfc_section": "5.1.1", "unit": "ms", "parameters": {}, "trials": trials,
            "summary": summarize(ok_values({"trials": trials})), "verdict": verdict, "outcome": recorded, **extra}


@pytest.mark.parametrize("bench,expected", [
    (entry("skipped", (), reason="no PACKET_IN app"), ("skipped", "no PACKET_IN app")),
    (entry("running"), ("error", DID_NOT_FINISH)),
    (entry("interrupted", reason="interrupted by the user (Ctrl-C)"),
     ("error", "interrupted: interrupted by the user (Ctrl-C)")),
    (entry("error", reason="emulator could not start"), ("error", "emulator could not start")),
    (entry("passed", (None, None)), ("failed", "no successful trial: r1; r2")),
    (entry("passed", ()), ("failed", "no successful trial: no trial was run")),
    (entry("passed", (5, 6), verdict={"result": "FAIL", "test": "sign-test"}), ("failed", "verdict FAIL (sign-test)")),
    (entry("passed"), ("failed", "1 of 3 trials failed: r3")),
    (entry("passed", max_failed_trials=1), ("passed", "2 of 3 trials succeeded (1 failure(s) allowed); no verdict")),
    (entry("passed", (5, 6), verdict={"result": "PASS", "test": "t"}),
     ("passed", "2 of 2 trials succeeded; verdict PASS")),
    (entry("failed", (5, 6), reason="paths not installed"), ("failed", "paths not installed")),
])
def test_judge_applies_the_rule_in_order(bench, expected):
    assert judge(bench) == expected


def test_failure_reason_quotes_the_first_distinct_reasons():
    bench = entry("passed", (1, None, None, None, None, None))
    bench["trials"][2]["reason"] = "r2"  # a repeat is quoted once
    assert judge(bench) == ("failed", "5 of 6 trials failed: r2; r4; r5; and 1 other reason(s)")


def test_concluded_is_what_the_harness_records_when_the_trials_are_done():
    assert concluded(entry("running")) == {"status": "failed", "reason": "1 of 3 trials failed: r3"}
    assert concluded(entry("running", (5, 6))) == {"status": "passed", "reason": "2 of 2 trials succeeded; no verdict"}
    assert concluded(entry("running", (None,))) == {"status": "failed", "reason": "no successful trial: r1"}
    assert concluded(entry("interrupted", reason="Ctrl-C")) == {"status": "interrupted", "reason": "Ctrl-C"}
    assert concluded(entry("failed", (5, 6), reason="paths not installed"))["reason"] == "paths not installed"
    recorded = entry("running", (5, 6))
    recorded["outcome"] = concluded(recorded)
    assert judge(recorded) == (recorded["outcome"]["status"], recorded["outcome"]["reason"])


def test_run_status_error_beats_failed_beats_passed():
    ok, skipped = entry("passed", (5, 6)), entry("skipped", (), reason="n/a")
    assert run_status({"benchmarks": [ok, skipped]}) == "passed"
    assert run_status({"benchmarks": [ok, entry("passed")]}) == "failed"
    assert run_status({"benchmarks": [entry("passed"), entry("running")]}) == "error"
    assert run_status({"benchmarks": []}) == "passed"


def test_a_run_stopped_before_its_first_benchmark_is_an_error_in_the_status_the_line_and_junit():
    """SIGTERM while the controller boots: no benchmark entry says so, the run record does."""
    from reports.outcome import run_line
    data = {"run": {"started": "2026-11-27T09:00:04+00:00", "interrupted": "stopped by SIGTERM"}, "benchmarks": []}
    assert run_status(data) == "error"
    assert run_line(data) == ("run ERROR, 0 benchmarks: 0 passed, 0 failed, 0 error, 0 skipped; interrupted: "
                              "stopped by SIGTERM")
    root = ET.fromstring(render_junit(data))
    [case] = root.iter("testcase")
    assert case.get("name") == "run" and case.find("error").get("message") == "interrupted: stopped by SIGTERM"
    data["benchmarks"] = [entry("passed", (5, 6))]
    assert run_status(data) == "error" and len(list(ET.fromstring(render_junit(data)).iter("error"))) == 1
    del data["run"]["interrupted"]
    assert run_status(data) == "passed" and not list(ET.fromstring(render_junit(data)).iter("error"))


def test_a_run_its_history_store_did_not_take_is_an_error_in_the_status_the_line_and_junit():
    from reports.outcome import run_line
    data = {"run": {"started": "2026-11-27T09:00:04+00:00", "history_error": "runs.db: is a folder"},
            "benchmarks": [entry("passed", (5, 6))]}
    assert run_status(data) == "error"
    assert run_line(data).endswith("1 passed, 0 failed, 0 error, 0 skipped; not added to history runs.db: is a folder")
    [case] = [c for c in ET.fromstring(render_junit(data)).iter("testcase") if c.find("error") is not None]
    assert case.get("name") == "history" and case.find("error").get("message") == \
        "not added to history runs.db: is a folder"


def test_junit_counts_follow_the_rule(tmp_path):
    data = {"run": {"started": "2026-11-22T00:00:00+00:00"},
            "benchmarks": [entry("passed", (5, 6)), entry("passed"), entry("running"),
                           entry("interrupted", reason="Ctrl-C"), entry("skipped", (), reason="n/a")]}
    root = ET.fromstring(render_junit(data))
    assert {k: root.get(k) for k in ("tests", "failures", "errors", "skipped")} == \
        {"tests": "5", "failures": "1", "errors": "2", "skipped": "1"}
    cases = list(root.iter("testcase"))
    assert cases[1].find("failure").get("message") == "1 of 3 trials failed: r3"
    assert cases[2].find("error").get("message") == DID_NOT_FINISH
    assert cases[3].find("error").get("message") == "interrupted: Ctrl-C"
    suites = list(root.iter("testsuite"))
    assert [(s.get("failures"), s.get("errors"), s.get("skipped")) for s in suites] == \
        [("0", "0", "0"), ("1", "0", "0"), ("0", "1", "0"), ("0", "1", "0"), ("0", "0", "1")]
    props = {p.get("name"): p.get("value") for p in cases[2].find("properties")}
    assert props["outcome"] == "error"


def test_headline_prefixes_the_status_and_lists_the_reason():
    assert headline(entry("passed", (5, 6))).startswith("b (RFC 8456 §5.1.1): mean 5.5 ms")
    running = headline(entry("running"))
    assert running.startswith("ERROR b (RFC 8456 §5.1.1): mean 5.5 ms")
    assert running.splitlines()[-1] == f"    ERROR: {DID_NOT_FINISH}"
    assert headline(entry("skipped", (), reason="no PACKET_IN app")) == "SKIPPED b: no PACKET_IN app"
    none = headline(entry("passed", (None,)))
    assert none.startswith("FAILED b (RFC 8456 §5.1.1): no successful trial (1 failed)")
    assert none.endswith("FAILED: no successful trial: r1")


def test_report_states_the_rule_once_and_each_outcome(tmp_path):
    data = load_results(sample_results(tmp_path).path)
    data["benchmarks"].append(entry("skipped", (), reason="controller app does not answer PACKET_IN"))
    text = render_markdown(data)
    assert text.count(RULE) == 1 and "**Outcome.** FAILED, 2 benchmarks: 0 passed, 1 failed, 0 error, 1 skipped" in text
    sections = text.split("\n## ")
    capacity = next(s for s in sections if s.startswith("Control Sessions Capacity"))
    assert capacity.splitlines()[2] == "Outcome: FAILED — verdict FAIL (one-sample-t)"
    skipped = next(s for s in sections if s.startswith("b — RFC"))
    assert skipped.splitlines()[2] == "Outcome: SKIPPED — controller app does not answer PACKET_IN"


# ---------------------------------------------------------------- lower bounds

def test_lower_bounds_are_shown_as_such(tmp_path):
    data = load_results(sample_results(tmp_path, values=(2000, 1800, 2000), verdict=False).path)
    for t in data["benchmarks"][0]["trials"]:
        t["lower_bound"] = t["value"] == 2000
    text = render_markdown(data)
    rows = [line for line in text.splitlines() if line.startswith(("| 1 |", "| 2 |", "| Average"))]
    assert rows == ["| 1 | ≥ 2000 | ok |  |", "| 2 | 1800 | ok |  |",
                    "| Average | ≥ 1933.33 | n = 3 | RFC: sum of values / trials; "
                    "lower bound: 2 trial(s) reached a cap |"]
    line = headline(data["benchmarks"][0])
    assert "mean ≥ 1933.33 sessions" in line
    assert "lower bound: 2 trial(s) reached a cap (trial 1 ≥ 2000, trial 3 ≥ 2000)" in line


# ---------------------------------------------------------------- the run record

FULL_RUN = {"started": "2026-11-22T00:00:00+00:00",
            "command": "pytest suites -k 'capacity or rate' --profile fixtures/profiles/default.yaml",
            "profile": "fixtures/profiles/default.yaml",
            "controller": {"name": "ryu", "version": "4.34", "mode": "embedded",
                           "apps": ["ryu.app.simple_switch_13", "ryu.app.ofctl_rest"],
                           "nofile_limit": "soft 1024 / hard 20000"},
            "cpu_affinity": {"controller": [1], "emulator": [0, 2]}, "emulator": {"busy_poll": False}}


def test_report_records_the_run_exactly():
    text = render_markdown({"schema_version": 2, "run": FULL_RUN, "benchmarks": []})
    assert "```\npytest suites -k 'capacity or rate' --profile fixtures/profiles/default.yaml\n```" in text
    for row in ("| Profile | fixtures/profiles/default.yaml |", "| Controller version | 4.34 |",
                "| Controller apps | ryu.app.simple_switch_13, ryu.app.ofctl_rest |",
                "| Controller open-file limit | soft 1024 / hard 20000 |",
                "| CPU placement | controller: CPU 1; emulator: CPU 0, 2 |",
                "| Emulator waits | blocking waits (default) |"):
        assert row in text


def test_run_record_for_external_controllers_and_old_files():
    external = {**FULL_RUN, "controller": {"name": "external", "mode": "external"}, "cpu_affinity": "not pinned",
                "emulator": {"busy_poll": True}, "command": "pytest a|b"}
    text = render_markdown({"run": external, "benchmarks": []})
    assert "| Controller open-file limit | not known (external: give --start-command or --controller-pid) |" in text
    started = {**FULL_RUN, "controller": {"mode": "external", "start_command": "ctl {port}"}}
    assert "not known (no process of the start command's group was found listening)" in \
        render_markdown({"run": started})
    assert "| CPU placement | not pinned |" in text and "| Emulator waits | busy-polling (opt-in) |" in text
    assert "```\npytest a|b\n```" in text
    old = render_markdown({"run": {"started": "x"}, "benchmarks": []})
    for row in ("Command line:\n\n—", "| Profile | — |", "| Controller apps | — |",
                "| Controller open-file limit | — |", "| CPU placement | — |", "| Emulator waits | — |"):
        assert row in old
    nofile = {**FULL_RUN, "controller": {"nofile_limit": {"soft": 1024, "hard": 20000}}}
    assert "| Controller open-file limit | soft 1024 / hard 20000 |" in render_markdown({"run": nofile})


# ---------------------------------------------------------------- the file itself

def test_results_file_is_readable_by_everyone(tmp_path):
    old = os.umask(0o077)  # even under a strict umask: results are meant to be shared
    try:
        path = tmp_path / "results.json"
        write_json_atomic(path, {"benchmarks": []})
        write_json_atomic(path, {"benchmarks": [], "again": True})
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_version_1_files_load_and_render(tmp_path):
    path = tmp_path / "v1.json"
    store = sample_results(tmp_path)
    v1 = json.loads(store.path.read_text())
    v1["schema_version"] = 1
    summary = v1["benchmarks"][0]["summary"]
    del summary["ci95_method"], v1["benchmarks"][0]["outcome"]  # v1 summaries had no method; very old, no outcome
    path.write_text(json.dumps(v1))
    data = load_results(path)
    text = render_markdown(data)
    assert "| ci95_method | Student t interval (schema 1 file) |" in text
    assert judge(data["benchmarks"][0])[0] == "failed"
    v1["schema_version"] = 3
    path.write_text(json.dumps(v1))
    with pytest.raises(ResultsError, match="schema_version 3; this bmwg-sdn reads versions 1, 2"):
        load_results(path)
