"""results.json, its renderers (JUnit, RFC report), re-rendering, and profile errors."""

import json
import xml.etree.ElementTree as ET

import pytest

from fixtures.profiles import ProfileError, load_profile
from reports.__main__ import main as reports_main
from reports.junit import render_junit
from reports.results import ResultsError, ResultStore, load_results, ok_values
from reports.rfc_report import render_markdown
from reports.stats import summarize
from reports.verdict import against_threshold


def sample_results(tmp_path, values=(100, 102, None, 98, 101, 99, 100, 103, 97, 100, 100), verdict=True):
    store = ResultStore(tmp_path / "results.json", {"started": "2026-11-22T00:00:00+00:00",
                                                    "controller": {"name": "ryu", "version": "4.34"},
                                                    "openflow": "1.3", "host": {"cpus": 2, "memory_gib": 24}})
    trials = [{"index": i + 1, "value": x, "ok": x is not None, **({} if x is not None else
                                                                   {"reason": "controller exited (signal 9)"})}
              for i, x in enumerate(values)]
    entry = store.add_benchmark({"benchmark": "test_control_session_capacity", "title": "Control Sessions Capacity",
                                 "rfc_section": "5.2.1", "unit": "sessions", "symbol": "CCn",
                                 "parameters": {"ramp_group": 25}, "trials": trials})
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
    assert data["schema_version"] == 1
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
    data = load_results(sample_results(tmp_path, verdict=False).path)
    case = next(ET.fromstring(render_junit(data)).iter("testcase"))
    assert case.find("failure") is None
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
    assert sorted(p.name for p in out.iterdir()) == ["junit.xml", "report.md"]
    assert reports_main(["summary", str(store.path)]) == 0
    assert "mean 100 sessions, variance 3.11111, n = 10, 1 failed" in capsys.readouterr().out
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
    from fixtures.controllers import PROJECT_ROOT
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
    from reports.summary import headline
    assert headline(data["benchmarks"][0]).startswith("test_control_session_capacity[leaf-spine-2x2] (RFC 8456")


def test_baseline_lookup_matches_the_series_point():
    from reports.results import find_benchmark
    data = {"benchmarks": [{"benchmark": "b", "variant": "4sw", "x": 1}, {"benchmark": "b", "variant": "16sw", "x": 2},
                           {"benchmark": "c", "x": 3}]}
    assert find_benchmark(data, "b", "16sw")["x"] == 2
    assert find_benchmark(data, "b", "64sw") is None           # no point to compare with: no baseline
    assert find_benchmark(data, "c", "anything")["x"] == 3     # an older run without variants
    assert find_benchmark(data, "b")["x"] == 1
