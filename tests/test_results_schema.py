"""reports/results.schema.json: realistic results validate, broken ones are named by their JSON path."""

import copy
import json
import os

import pytest
from results_check import check_results_files

from reports.outcome import judge
from reports.results import SCHEMA_PATH, ResultsError, ResultStore, load_results, ok_values, validate
from reports.stats import SUMMARY_KEYS, summarize
from reports.verdict import against_baseline, against_threshold

jsonschema = pytest.importorskip("jsonschema")

RUN = {"started": "2026-11-22T00:00:00+00:00",
       "command": "pytest suites -k control_session_capacity --profile fixtures/profiles/default.yaml",
       "controller": {"name": "ryu", "version": "4.34", "mode": "embedded", "address": "127.0.0.1:6653",
                      "redundancy": "standalone", "apps": ["ryu.app.simple_switch_13"],
                      "persistence": "none (restarted fresh between trials)", "nofile_limit": "soft 1024 / hard 20000"},
       "openflow": "1.3", "connection_setup": "unencrypted TCP",
       "reference_setup": "RFC 8456 Section 3.1 (standalone controller)",
       "host": {"cpus": 2, "cpu_model": "x86", "memory_gib": 23.5, "os": "Linux", "python": "3.11.7"},
       "emulator": {"version": "0.1.0", "max_devices": "...", "measurement_point": "I1", "busy_poll": False},
       "profile": "fixtures/profiles/default.yaml", "baseline": None, "alpha": 0.05,
       "cpu_affinity": {"controller": [1], "emulator": [0]}}


def harness_entry() -> dict:
    """A §5.2.1 entry as fixtures/harness.py leaves it after its conclusion."""
    trials = [{"index": i, "started": "2026-11-22T00:00:01+00:00", "value": 2000.0, "ok": True, "lower_bound": True,
               "details": {"established": 2000, "stop_reason": "cap"}, "note": "cap reached", "duration_s": 3.2,
               "controller_resources": {"samples": 6, "cpu_percent_mean": 50.0, "cpu_percent_max": 99.0,
                                        "rss_bytes_max": 60_000_000, "rss_bytes_end": 59_000_000}}
              for i in range(1, 10)]
    trials.append({"index": 10, "started": "2026-11-22T00:00:40+00:00", "value": None, "ok": False,
                   "reason": "controller exited (signal 9 (SIGKILL)) during the trial", "duration_s": 1.0,
                   "controller_log_tail": "Killed"})
    values = [t["value"] for t in trials if t["ok"]]
    verdict = against_threshold(values, 1000, "min").to_dict()
    verdict["baseline_verdict"] = against_baseline(values, [1990.0] * 10, True).to_dict()
    return {"benchmark": "test_control_session_capacity", "title": "Control Sessions Capacity",
            "rfc_section": "5.2.1", "unit": "sessions", "symbol": "CCn", "definition": "...",
            "measurement_point": "I1", "higher_is_better": True,
            "parameters": {"repetitions": 10, "warmup": 1, "max_sessions": 2000, "ramp_group": 25},
            "started": "2026-11-22T00:00:00+00:00", "trials": trials, "warmup_trials": [dict(trials[0])],
            "summary": summarize(values), "verdict": verdict, "notes": ["a note"], "max_failed_trials": 1,
            "outcome": {"status": "passed"}, "duration_s": 42.0, "variant": "leaf-spine-2x2",
            "series_x": {"name": "N", "value": 4}, "trial_columns": [["established", "Established"]]}


def results() -> dict:
    return {"schema_version": 2, "run": copy.deepcopy(RUN), "benchmarks": [harness_entry()]}


def test_the_schema_is_a_valid_2020_12_schema_in_step_with_the_code():
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    assert tuple(schema["$defs"]["summary"]["properties"]) == SUMMARY_KEYS
    assert set(schema["$defs"]["outcome"]["properties"]["status"]["enum"]) == \
        {"running", "passed", "failed", "error", "skipped", "interrupted"}


def test_realistic_results_validate():
    data = results()
    validate(data)
    assert judge(data["benchmarks"][0]) == ("passed", "9 of 10 trials succeeded (1 failure(s) allowed); verdict PASS")
    skipped = {"benchmark": "b", "rfc_section": "5.1.1", "unit": "ms", "parameters": {}, "trials": [],
               "summary": None, "verdict": None, "outcome": {"status": "skipped", "reason": "no PACKET_IN app"}}
    empty = summarize([])
    validate({**data, "benchmarks": [skipped, {**skipped, "summary": empty, "outcome": {"status": "running"}}]})
    validate({**data, "run": {**RUN, "cpu_affinity": "not pinned", "controller": {"name": "x", "mode": "external"}}})


def test_what_the_result_store_writes_validates(tmp_path):
    store = ResultStore(tmp_path / "results.json", copy.deepcopy(RUN))
    entry = store.add_benchmark({"benchmark": "b", "rfc_section": "5.1.1", "unit": "ms"})
    validate(store.data)  # a freshly added entry is "running" until it concludes
    entry["trials"].append({"index": 1, "value": 0.2, "ok": True})
    entry["summary"] = summarize(ok_values(entry))
    store.save()
    assert check_results_files(tmp_path) == [store.path]


def test_version_1_results_still_validate():
    data = results()
    data["schema_version"] = 1
    for key in ("ci95_method",):
        del data["benchmarks"][0]["summary"][key]
    validate(data)


def broken(path: str, value=None, delete=False):
    """results() with the value at ``path`` (keys and indices joined by '/') replaced or deleted."""
    data = results()
    *parents, last = [int(p) if p.isdigit() else p for p in path.split("/")]
    node = data
    for key in parents:
        node = node[key]
    if delete:
        del node[last]
    else:
        node[last] = value
    return data


@pytest.mark.parametrize("data,message", [
    (broken("schema_version", "2"), r"^results: \$\.schema_version: '2' is not of type 'integer'"),
    (broken("benchmarks/0/unit", delete=True), r"\$\.benchmarks\[0\]: 'unit' is a required property"),
    (broken("benchmarks/0/trials/0/value", "2000"), r"\$\.benchmarks\[0\]\.trials\[0\]\.value: '2000' is not of type"),
    (broken("benchmarks/0/trials/0/value", None), r"\$\.benchmarks\[0\]\.trials\[0\]\.value: None is not of type"),
    (broken("benchmarks/0/trials/9/reason", delete=True),
     r"\$\.benchmarks\[0\]\.trials\[9\]: 'reason' is a required property"),
    (broken("benchmarks/0/trials/0/index", 0), r"\$\.benchmarks\[0\]\.trials\[0\]\.index: 0 is less than"),
    (broken("benchmarks/0/outcome/status", "crashed"), r"\$\.benchmarks\[0\]\.outcome\.status: 'crashed' is not one"),
    (broken("benchmarks/0/outcome", {"status": "failed"}),
     r"\$\.benchmarks\[0\]\.outcome: 'reason' is a required property"),
    (broken("benchmarks/0/verdict/result", "MAYBE"), r"\$\.benchmarks\[0\]\.verdict\.result: 'MAYBE' is not one"),
    (broken("benchmarks/0/verdict/baseline_verdict/result", "pass"),
     r"\$\.benchmarks\[0\]\.verdict\.baseline_verdict\.result: 'pass' is not one"),
    (broken("benchmarks/0/summary/p99", 3.0), r"\$\.benchmarks\[0\]\.summary: Additional properties .*'p99'"),
    (broken("benchmarks/0/summary/n", 2.5), r"\$\.benchmarks\[0\]\.summary\.n: 2\.5 is not of type 'integer'"),
    (broken("benchmarks/0/rfc_section", "§5.2.1"), r"\$\.benchmarks\[0\]\.rfc_section: '§5\.2\.1' does not match"),
    (broken("run/cpu_affinity", {"controller": "1"}), r"\$\.run\.cpu_affinity"),
    (broken("run/emulator/busy_poll", "yes"), r"\$\.run\.emulator\.busy_poll: 'yes' is not of type 'boolean'"),
    (broken("run/alpha", 5), r"\$\.run\.alpha: 5 is greater than or equal to the maximum of 1"),
    (broken("benchmarks", {}), r"\$\.benchmarks: \{\} is not of type 'array'"),
])
def test_broken_results_name_the_json_path(data, message):
    with pytest.raises(ResultsError, match=message):
        validate(data)


def test_check_results_files_names_each_bad_file(tmp_path):
    good, bad = tmp_path / "run1" / "results.json", tmp_path / "run2" / "results.json"
    for path, data in ((good, results()), (bad, broken("benchmarks/0/outcome/status", "done"))):
        store = ResultStore(path, {})
        store.data = data
        store.save()
    with pytest.raises(AssertionError, match=rf"{bad}: \$\.benchmarks\[0\]\.outcome\.status: 'done'") as info:
        check_results_files(tmp_path)
    assert str(good) not in str(info.value)
    bad.write_text(json.dumps(results()))
    os.chmod(bad, 0o600)
    with pytest.raises(AssertionError, match=rf"{bad}: mode 0600, not 0644"):
        check_results_files(tmp_path)
    with pytest.raises(AssertionError, match="no results.json under"):
        check_results_files(tmp_path / "empty")
    assert load_results(good)["schema_version"] == 2
