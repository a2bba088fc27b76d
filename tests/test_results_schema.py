"""reports/results.schema.json: realistic results validate, broken ones are named by their JSON path."""

import copy
import json
import os
import re
from pathlib import Path

import pytest
from results_check import check_results_files

from reports.outcome import judge
from reports.results import SCHEMA_PATH, ResultsError, ResultStore, load_results, ok_values, validate
from reports.stats import SUMMARY_KEYS, summarize
from reports.verdict import against_baseline, against_threshold

jsonschema = pytest.importorskip("jsonschema")

DOC = Path(__file__).resolve().parent.parent / "docs" / "results-schema.md"
# docs/results-schema.md's tables, by heading, and the part of the schema each documents (None: the top level).
TABLES = {"Top level": None, "`run`": "run", "`run.controller`": "controller",
          "`run.ovn_cluster` and `run.ovn_central`": "ovn_device", "A benchmark entry": "benchmark",
          "A trial": "trial", "A comparison": "comparison", "A screened kind": "screened_kind",
          "`summary`": "summary", "`verdict`": "verdict"}

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


# --------------------------------------------------------------------------- the schema and its page agree

def schema_fields() -> dict:
    """Each documented part of the schema -> the dotted paths of its fields ('[]' for an array's items), down to
    where another documented part begins (a $ref to it) or the record is free-form."""
    schema = json.loads(SCHEMA_PATH.read_text())
    defs, tabled = schema["$defs"], {name for name in TABLES.values() if name}

    def walk(node: dict, path: str, out: set, inside: frozenset) -> None:
        ref = node.get("$ref", "").rsplit("/", 1)[-1]
        if ref:
            if ref not in tabled and ref not in inside:
                walk(defs[ref], path, out, inside | {ref})
            return
        for alternative in node.get("anyOf", []):
            walk(alternative, path, out, inside)
        for key, sub in node.get("properties", {}).items():
            field = f"{path}.{key}" if path else key
            out.add(field)
            walk(sub, field, out, inside)
        if isinstance(node.get("items"), dict):
            walk(node["items"], f"{path}[]", out, inside)

    fields = {}
    for name in TABLES.values():
        out: set = set()
        walk(schema if name is None else defs[name], "", out, frozenset({name} if name else ()))
        fields[name] = out
    return fields


def doc_rows() -> dict:
    """Each table of docs/results-schema.md (by the part of the schema it documents) -> {field: its row's text};
    a row may name several fields, and `.x` after `a.b` means `a.x`."""
    parts = re.split(r"(?m)^#{2,3} (.*)$", DOC.read_text())
    tables = {}
    for title, body in zip(parts[1::2], parts[2::2]):
        if title.strip() not in TABLES:
            continue
        rows: dict = {}
        for line in body.splitlines():
            if not line.startswith("| `"):
                continue
            first, text = line.split("|")[1], "|".join(line.split("|")[2:])
            previous = None
            for name in re.findall(r"`([^`]+)`", first):
                if name.startswith(".") and previous:
                    name = previous.rsplit(".", 1)[0] + name
                rows[name] = text
                previous = name
        tables[TABLES[title.strip()]] = rows
    return tables


def documented(field: str, rows: dict) -> bool:
    """A field is documented by a row of its own (an object also by rows of its fields), or in backticks in the row
    of its nearest documented parent."""
    if field in rows or any(row.startswith(f"{field}.") for row in rows):
        return True
    parts = field.replace("[]", "").split(".")
    for i in range(len(parts) - 1, 0, -1):
        parent = ".".join(parts[:i])
        if parent in rows:
            return f"`{parts[-1]}`" in rows[parent]
    return False


def test_every_field_of_the_schema_is_documented_and_every_documented_field_is_in_the_schema():
    fields, tables = schema_fields(), doc_rows()
    assert set(tables) == set(TABLES.values()), "docs/results-schema.md lacks a table"
    for name, rows in tables.items():
        part = name or "the top level"
        missing = sorted(f for f in fields[name] if not documented(f, rows))
        assert not missing, f"{part}: fields of the schema that docs/results-schema.md does not document: {missing}"
        unknown = sorted(r for r in rows if r not in fields[name])
        assert not unknown, f"{part}: fields docs/results-schema.md documents that the schema has not: {unknown}"


@pytest.mark.parametrize("where,field", [
    ("", "surprise"), ("run", "traffic"), ("run/emulator", "processing_time"), ("run/host", "disk_gib"),
    ("run/controller", "colour"), ("benchmarks/0", "table_of_my_own"), ("benchmarks/0/trials/0", "extra"),
    ("benchmarks/0/verdict", "confidence"), ("benchmarks/0/outcome", "why"),
    ("benchmarks/0/trials/0/controller_resources", "threads"),
])
def test_a_field_the_schema_does_not_name_is_refused(where, field):
    data = results()
    node = data
    for key in [int(k) if k.isdigit() else k for k in where.split("/") if k]:
        node = node[key]
    node[field] = 1
    with pytest.raises(ResultsError, match=rf"Additional properties are not allowed \('{field}' was unexpected\)"):
        validate(data)


def test_every_context_record_the_suite_writes_validates():
    """The benchmark-specific records beside the trials, as the families write them."""
    entry = harness_entry()
    comparison = {"baseline": "this run's 0 % cell", "baseline_mean": 10.0, "baseline_n": 10, "mean": 9.0,
                  "deviation_percent": -10.0, "test": "welch-t", "p_value": 0.2, "result": "PASS", "effect_size": 0.3}
    entry.update(
        derived_from="test_async_message_processing_rate", provisioning_type="reactive",
        search_in_progress={"3": [{"nodes": 16, "matched": True, "seconds": 4.2}]},
        preflight={"rtt_ms": 0.2, "answered_by": "PACKET_OUT", "switches_answered": 16, "answered_by_flow_mod": 0,
                   "announcements_confirmed": 16, "announcement_wait_s": 0.51},
        emulator_ceiling={"switches": 16, "shards": 1, "td_s": 3.0, "against": "bmwg-sdn null controller",
                          "open_loop_send_rate": 3.0e6, "response_rate": 5.3e5, "response_rate_loss_ratio": 0.0,
                          "paced_response_rate": 4.9e5},
        against_without_exceptions=comparison, against_without_attacks={"withheld": "no cell without attacks"},
        attack_against_sham=comparison,
        attack_reached={"mean_rate": 19990.0, "min_rate": 19980.0, "target_rate": 20000.0, "unit": "SYN/s",
                        "min_share": 0.999},
        reelection={"election_timer_ms": 1000, "window_ms": 2500, "slack_ms": 500, "write_gap_ms": summarize([1.0]),
                    "cluster": {"members": [{"name": "nb1", "sid": "a1b2", "client": "tcp:127.0.0.1:1",
                                             "raft": "tcp:127.0.0.1:2"}],
                                "ovs_version": "3.1.0", "schema": "/usr/share/ovn/ovn-nb.ovsschema", "generation": 1,
                                "workdir": None, "logs": "logs/ovn-cluster"}},
        ovn_provisioning={"concurrency": 8, "rally": {"count": 800, "success_pct": 100.0, "min": 6.9, "median": 42.3,
                                                      "p90": 201.0, "p95": 294.0, "p99": 374.0, "max": 496.0,
                                                      "avg": 79.8},
                          "client_cpu_pct": 90.0, "central_cpu_pct": 36.0, "ovn_version": "23.03.1"},
        screen={"kinds": [{"kind": "B03", "class": "B", "title": "...", "hazard": "", "anchor": "RFC 8456 A.6.1",
                           "ideal": "discard it", "passes_on": ["CONFORMANT", "TOLERANT"], "outcome": "TOLERANT",
                           "runs": ["TOLERANT"], "flaky": False, "pass": True, "detail": "...", "reply": "",
                           "sentinel_p99_before_ms": 1.4, "sentinel_p99_after_ms": 1.3, "fresh_handshake_ms": 0.4}],
                "screened": 1, "not_screened": 0, "passed": 1, "conformant": 0, "robustness_score": 100.0,
                "strict_score": 0.0, "outcomes": {"TOLERANT": 1}, "failed_kinds": [], "known_failed_kinds": [],
                "known_now_passing": []})
    run = copy.deepcopy(RUN)
    run["host"]["load_average"] = [0.1, 0.2, 0.3]
    run["emulator"]["shards"] = ["popen × 1"]
    run["controller"].update(cpus=[1], options="--observe-links", lldp_period_s=0.9)
    run.update(pid=4242, max_failed_trials=0, finished="2026-11-22T00:10:00+00:00", interrupted="SIGTERM",
               ovn_cluster={"name": "ovn-nb-raft", "version": "3.1.0", "mode": "embedded", "address": None,
                            "redundancy": "RAFT cluster of 3 ovsdb-server members", "apps": ["ovsdb-server 3.1.0"]})
    validate({"schema_version": 2, "run": run, "benchmarks": [entry]})


# --------------------------------------------------------------------------- what the families write, as they write it

SOURCES = Path(__file__).resolve().parent.parent


def test_every_record_a_family_writes_beside_the_trials_is_a_field_of_the_schema():
    """Each ``run.context("key", ...)`` of the families and suites names a field of a benchmark entry: a key the
    schema does not name would make every results.json holding it fail validate()."""
    schema = json.loads(SCHEMA_PATH.read_text())
    fields = set(schema["$defs"]["benchmark"]["properties"])
    written = {}
    for path in sorted([*(SOURCES / "fixtures").rglob("*.py"), *(SOURCES / "suites").glob("*.py")]):
        for key in re.findall(r"\.context\(\s*[\"']([a-z_]+)[\"']", path.read_text()):
            written.setdefault(key, path.relative_to(SOURCES))
    assert "datastore" in written and "preflight" in written      # the scan finds what it looks for
    unknown = {key: str(where) for key, where in written.items() if key not in fields}
    assert not unknown, f"records the schema's benchmark entry does not name: {unknown}"


class Ctl:
    """The device as the trial loop sees it: always ready, no process."""
    pid = None
    mode = "embedded"

    def prepare_trial(self):
        pass

    def check_alive(self, timeout=None):
        return 0.0

    def exit_reason(self):
        return None

    def log_tail(self):
        return ""


class DatastoreCluster:
    """odl-cluster as datastore.start() and the *_trials functions read it, already running."""
    n, strategy = 3, "per-module"

    def running(self):
        return True

    def info(self):
        return {"election_timeout": "10 s", "members": ["odl-member-1", "odl-member-2", "odl-member-3"],
                "boot_s": 116.0}


def datastore_run(tmp_path, name):
    from fixtures.benchmark import suite_benchmarks
    from fixtures.harness import BenchmarkRun, Trials
    (bench,) = [b for b in suite_benchmarks() if b.name == name]
    store = ResultStore(tmp_path / f"{name}.json", copy.deepcopy(RUN))
    return store, BenchmarkRun(store, Ctl(), bench, Trials(3), variant="3nodes-per-module-x",
                               progress=lambda line: None)


def latencies(ms):
    return {"min": ms - 1, "mean": ms, "median": ms, "max": ms + 2}


@pytest.mark.parametrize("ok", [True, False], ids=["measured", "every-trial-failed"])
def test_the_datastore_extras_entries_validate_as_their_family_writes_them(tmp_path, monkeypatch, ok):
    """The three ★ datastore extras, each entry made by the family's own code (fixtures/families/datastore.py) with
    the trials' figures given: their ``datastore`` row validates, with its figures and when no trial succeeded."""
    from test_datastore import Clock, ModelCluster

    from fixtures.families import datastore
    from fixtures.harness import TrialFailed

    def failed(*args, **kw):
        raise TrialFailed("the shards were not settled: member 2 did not answer")

    clock = Clock()
    real = datastore.reelection_trial
    monkeypatch.setattr(datastore, "reelection_trial", (lambda cluster, p, t: real(
        ModelCluster(clock), p, t, wall=lambda: clock.wall, sleep=clock.sleep, now=lambda: clock.mono)) if ok
        else failed)
    monkeypatch.setattr(datastore, "crud_trial", (lambda cluster, p, role, index: {
        "member": "odl-member-1", "role": role, "shard": "topology-config", "requests": p.crud_requests,
        **{f"{op}_ms": latencies(5.0 + index) for op in datastore.OPERATIONS}}) if ok else failed)
    monkeypatch.setattr(datastore, "rpc_trial", (lambda cluster, em, p, role, index: {
        "member": "odl-member-2", "owner": "odl-member-2", "role": role, "requests": p.rpc_requests,
        "flow_mods_at_switch": p.rpc_requests, "routable_after_s": 0.0, "rpc_ms": latencies(500.0)}) if ok
        else failed)
    p, cluster = datastore.DatastoreParams(), DatastoreCluster()
    made = {"test_datastore_leader_reelection": datastore.LeaderReelection(cluster, p, 1.0),
            "test_datastore_crud_latency": datastore.CrudLatency(cluster, p, "follower"),
            "test_datastore_routed_rpc_latency": datastore.RoutedRpcLatency(cluster, None, p, "non-owner")}
    for name, procedure in made.items():
        store, run = datastore_run(tmp_path, name)
        run.measure(procedure, finish=False)
        data = load_results(store.path)            # as written to results.json
        row = data["benchmarks"][0]["datastore"]
        assert row["nodes"] == 3 and (row.get("terms_mean", row.get("rpc", row.get("create"))) is None) != ok
        validate(data)


def test_the_schema_page_names_every_star_extra_and_its_example_uses_no_deprecated_option():
    from fixtures.benchmark import suite_benchmarks
    from fixtures.config import option_families
    rows = doc_rows()["benchmark"]
    extras = {b.short for b in suite_benchmarks() if b.section == "★"}
    listed = set(re.findall(r"`([a-z_]+)`", rows["rfc_section"]))
    assert extras <= listed, f"results-schema.md's rfc_section row leaves out ★ extras: {sorted(extras - listed)}"
    old = {alias for family in option_families().values() for _f, spec in family.option_fields()
           for alias in spec.aliases}
    example = DOC.read_text().split("## Example", 1)[1].split("\n## ", 1)[0]
    assert old and not [a for a in old if re.search(rf"{a}(?![\w-])", example)]
