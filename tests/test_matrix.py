"""python -m reports matrix, the report's summary table, and small run-record pieces (argument files, controller
notes, selfbench logs), from hand-made data (no run)."""

import pytest

from reports.__main__ import main
from reports.matrix import build, columns, render
from reports.rfc_report import render_summary_table


def bench(name, status="passed", reason="", values=(1.0, 2.0), variant=None, unit="ms", section="5.1.2",
          duration=12.0, verdict=None):
    n = len(values)
    summary = {"n": n, "mean": sum(values) / n, "variance": 0.5, "stdev": 0.7, "median": values[0],
               "min": min(values), "max": max(values), "ci95_low": min(values), "ci95_high": max(values)} if n else None
    return {"benchmark": name, "variant": variant, "title": name[5:].replace("_", " "), "rfc_section": section,
            "unit": unit, "trials": [{"index": i + 1, "ok": True, "value": v} for i, v in enumerate(values)],
            "summary": summary, "verdict": verdict, "outcome": {"status": status, "reason": reason},
            "duration_s": duration, "max_failed_trials": 0}


def suite():
    """The run record's list of the benchmarks collected: the RFC's fifteen, as a run of every suite has them."""
    from fixtures.benchmark import suite_benchmarks
    return [{"benchmark": b.name, "rfc_section": b.section, "title": b.title, "extension": b.extension}
            for b in suite_benchmarks() if not b.extension and b.section != "★"]


def run(name, *benches, version="1.0", command="pytest suites"):
    return {"schema_version": 2, "run": {"controller": {"name": name, "version": version}, "command": command,
                                           "started": "2026-11-24T10:00:00+00:00", "suite": suite()},
            "benchmarks": list(benches)}


def test_cells_say_works_with_the_figure_skips_with_a_footnote_and_not_run():
    ryu = run("ryu", bench("test_async_message_processing_time", values=(0.2, 0.4)))
    faucet = run("faucet", bench("test_async_message_processing_time", status="skipped", reason="no flow API",
                                 values=()),
                 bench("test_reactive_path_provisioning_time", status="skipped", reason="no flow API", values=(),
                       section="5.1.4"))
    rows, notes = build(columns([(ryu, "a/results.json"), (faucet, "b/results.json")]))
    by = {r[0]: r[2:] for r in rows}
    assert by["Asynchronous Message Processing Time"] == ["works: 0.3 ms", "skips [1]"]
    assert by["Reactive Path Provisioning Time"] == ["not run", "skips [1]"]        # one reason, one footnote
    # a benchmark the runs collected but did not run (deselected) has its row; §5.4.1 without a cluster is a skip
    # with its reason in the run itself, so "not run" needs no footnote of its own
    assert by["Controller Failover Time"] == ["not run", "not run"]
    assert notes == ["skipped: no flow API"]
    assert len(rows) == 15                                 # every RFC benchmark has a row, run or not


def test_partly_passing_benchmarks_count_their_entries_and_runs_of_one_controller_share_a_column():
    a = run("ryu", bench("test_network_reprovisioning_time", variant="link", section="5.4.2"))
    b = run("ryu", bench("test_network_reprovisioning_time", variant="switch", status="failed",
                         reason="2 of 2 trials failed", section="5.4.2"))
    cols = columns([(a, "x/results.json"), (b, "y/results.json")])
    assert [label for label, _ in cols] == ["ryu 1.0"]
    rows, notes = build(cols)
    by = {r[0]: r[2:] for r in rows}
    assert by["Network Re-provisioning Time"] == ["1 of 2 pass [1]"] and notes[0] == "failed: 2 of 2 trials failed"
    text = render([(a, "x/results.json"), (b, "y/results.json")])
    assert text.count("| ryu 1.0 |") == 3 and "## Notes" in text     # two runs listed, one column
    assert "do not edit by hand" in text


def test_the_matrix_command_writes_the_file(tmp_path, capsys):
    import json
    path = tmp_path / "r" / "results.json"
    path.parent.mkdir()
    path.write_text(json.dumps(run("osken", bench("test_control_session_capacity", unit="sessions",
                                                  section="5.2.1", values=(16.0, 16.0)))))
    out = tmp_path / "docs" / "compatibility.md"
    assert main(["matrix", str(path), "--out", str(out)]) == 0
    assert "| Control Sessions Capacity | RFC 8456 §5.2.1 | works: 16 sessions |" in out.read_text()
    assert main(["matrix", str(tmp_path / "missing.json")]) == 2
    assert "error:" in capsys.readouterr().err


def test_the_matrix_writes_paths_under_the_project_relative_to_it():
    ryu = run("ryu", bench("test_async_message_processing_time"),
              command="pytest suites --controller ryu --report-dir /home/ci/bmwg/.tox/matrix/ryu --overwrite")
    text = render([(ryu, "/home/ci/bmwg/.tox/matrix/ryu/results.json")],
                  command="python -m reports matrix /home/ci/bmwg/.tox/matrix/ryu/results.json", root="/home/ci/bmwg")
    assert "`python -m reports matrix .tox/matrix/ryu/results.json`" in text
    assert "--report-dir .tox/matrix/ryu --overwrite`" in text and "/home/ci" not in text
    elsewhere = render([(ryu, "r.json")], root="/home/ci/other")            # not under the root: left as run
    assert "--report-dir /home/ci/bmwg/.tox/matrix/ryu" in elsewhere


def test_the_summary_table_gives_figure_bound_verdict_p_value_outcome_and_wall_time():
    judged = bench("test_async_message_processing_time", values=(0.2, 0.4), duration=30.4,
                   verdict={"result": "PASS", "test": "Wilcoxon", "p_value": 0.001, "threshold": 1.0, "bound": "max"})
    skipped = bench("test_network_discovery_size", status="skipped", reason="no northbound", values=(), duration=0.2,
                    section="5.2.2")
    derived = dict(bench("test_async_message_processing_time_other", values=(0.1, 0.2), duration=30.4),
                   derived_from="test_async_message_processing_time")
    lines = render_summary_table([judged, skipped, derived])
    assert lines[0] == "## Summary"
    assert any(line.endswith("| 30 s, the trials of async message processing time |") for line in lines)
    assert "| async message processing time | RFC 8456 §5.1.2 | 0.3 ms | ≤ 1 | PASS | 0.001 | PASSED | 30 s |" \
        in lines
    assert any("| — | — | no verdict | — | SKIPPED: no northbound | 0 s |" in line for line in lines)
    assert lines[-2] == "| Total |  |  |  |  |  |  | 31 s |"
    assert render_summary_table([]) == []


def test_the_run_record_expands_an_argument_file_and_keeps_other_arguments(tmp_path):
    from fixtures.session import expand_argfiles
    args = tmp_path / "short.args"
    args.write_text("--repetitions=2\n\n--switches=4\n")
    assert expand_argfiles(["-k", "x", f"@{args}", "@missing-file", "--overwrite"]) == \
        ["-k", "x", "--repetitions=2", "--switches=4", "@missing-file", "--overwrite"]


@pytest.mark.system
def test_ovs_testcontroller_says_its_sixteen_switch_limit_where_it_shapes_the_figure(tmp_path):
    from fixtures.devices.base import Can
    from fixtures.devices.ovs import OvsTestController
    from fixtures.devices.ryu import RyuController
    ovs = OvsTestController(tmp_path)
    # the benchmarks its limit shapes note Can.MANY_SWITCHES (capacity, asynchronous messages, DoS); others do not
    assert "at most 16 switches" in ovs.lacking(Can.MANY_SWITCHES)
    assert Can.MANY_SWITCHES not in ovs.capabilities() and Can.SERVE_ANY_SWITCH in ovs.capabilities()
    assert ovs.info()["max_switches"] == 16
    assert Can.MANY_SWITCHES in RyuController(tmp_path).capabilities()


def test_the_star_extras_have_no_row():
    extra = bench("test_ovn_northbound_provisioning", section="★")
    rows, _ = build(columns([(run("ryu", extra), "a/results.json")]))
    assert all(r[0] != "ovn northbound provisioning" for r in rows) and len(rows) == 15


def test_a_run_that_never_started_its_controller_joins_that_controllers_column():
    main_run = run("osken", bench("test_async_message_processing_time"), version="3.1.0")
    skipped = run("osken", bench("test_controller_failover_time", status="skipped", reason="no cluster", values=(),
                                 section="5.4.1"))
    del skipped["run"]["controller"]["version"]
    cols = columns([(main_run, "a/results.json"), (skipped, "b/results.json")])
    assert [label for label, _ in cols] == ["osken 3.1.0"] and len(cols[0][1]["benchmarks"]) == 2


def test_selfbench_removes_its_log_folders_after_a_success_and_names_them_after_a_failure(capsys):
    from fixtures import selfbench
    good = selfbench._log_dir()
    selfbench._clean_logs(True)
    assert not good.exists()
    bad = selfbench._log_dir()
    try:
        selfbench._clean_logs(False)
        assert bad.exists() and f"controller logs kept in {bad}" in capsys.readouterr().err
    finally:
        bad.rmdir()


def test_the_current_figures_are_the_latest_run_with_a_figure_per_controller_and_variant(tmp_path):
    from reports.current import render
    old = run("ryu", bench("test_async_message_processing_time", values=(0.2, 0.4), variant="16sw"))
    old["run"]["started"] = "2026-11-01T10:00:00+00:00"
    new = run("ryu", bench("test_async_message_processing_time", values=(0.1, 0.1), variant="16sw"),
              bench("test_control_session_capacity", status="skipped", reason="no cap", values=(), section="5.2.1"))
    new["run"].update(code={"version": "0.1.0", "commit": "0123456789abcdef", "modified": False},
                      host={"cpus": 2, "cpu_model": "X", "load_average": [0.25, 0.2, 0.1]})
    osken = run("osken", bench("test_async_message_processing_time", values=(0.5, 0.7), variant="16sw"),
                version="3.1.0")
    text = render([(new, tmp_path / "b.json"), (old, tmp_path / "a.json"), (osken, tmp_path / "c.json")],
                  root=tmp_path)
    rows = [line for line in text.splitlines() if line.startswith("| ryu") or line.startswith("| osken")]
    assert rows[0].startswith("| osken 3.1.0 | 16sw | 0.6 ms | 2 |") and "`c.json`" in rows[0]
    assert rows[1].startswith("| ryu 1.0 | 16sw | 0.1 ms | 2 |") and "0123456789" in rows[1]
    assert "load 0.25" in rows[1] and "`b.json`" in rows[1]
    assert "Control Sessions Capacity" not in text          # a skipped benchmark gives no figure


def test_the_recorded_command_starts_with_pytest_however_pytest_was_started():
    # The matrix page of 2026-11-26 showed "__main__.py suites ..." for runs started as python -m pytest.
    from fixtures.session import program
    assert program("/venv/lib/python3.11/site-packages/pytest/__main__.py") == "pytest"
    assert program("/venv/bin/pytest") == "pytest"
    assert program("/venv/bin/py.test") == "pytest"
