"""The ★ OVN provisioning extra's pure parts (the device fixtures/devices/ovn_central.py, the family
fixtures/families/ovn_nb.py): options, Rally's columns, the skip reason, the report's table."""

import pytest

from fixtures.devices.ovn_central import missing_tools
from fixtures.families.ovn_nb import ML2_NOTE, TABLE, OvnNbParams, concurrency_list, cpu_percent, rally_row
from reports import tables


def test_concurrency_is_a_list_of_whole_numbers_within_bounds_without_repeats():
    assert concurrency_list("8,16,32") == (8, 16, 32)
    assert concurrency_list(" 4, 4 ,1") == (4, 1)
    for bad, says in (("8,x", "'x' is not a whole number"), ("0", "outside 1..256"), ("300", "outside 1..256")):
        with pytest.raises(ValueError, match=says):
            concurrency_list(bad)


def test_rallys_percentiles_interpolate_between_closest_ranks_like_numpy():
    """(reports.stats.percentile: the one percentile of the project.)"""
    import numpy as np
    values = [12.0, 3.5, 7.0, 100.0, 1.0, 55.5, 8.25]
    row = rally_row(values, 0)
    for q, key in ((0, "min"), (50, "median"), (90, "p90"), (95, "p95"), (99, "p99"), (100, "max")):
        assert row[key] == pytest.approx(float(np.percentile(values, q)))
    assert rally_row([4.0], 0)["p95"] == 4.0
    assert "p95" not in rally_row([], 1)


def test_rally_row_has_the_studys_columns_plus_p99_and_counts_failures_in_success():
    row = rally_row([10.0, 20.0, 30.0, 40.0], failed=1)
    assert row["count"] == 5 and row["success_pct"] == 80.0
    assert (row["min"], row["median"], row["max"], row["avg"]) == (10.0, 25.0, 40.0, 25.0)
    assert row["p90"] == pytest.approx(37.0) and row["p95"] == pytest.approx(38.5) and row["p99"] < 40.0
    assert rally_row([], failed=3) == {"count": 3, "success_pct": 0.0}
    assert rally_row([], failed=0) == {"count": 0, "success_pct": None}


def test_cpu_is_a_share_of_one_core_and_none_without_wall_time():
    assert cpu_percent(0.5, 2.0) == 25.0 and cpu_percent(1.0, 0.0) is None


def test_the_skip_reason_names_every_missing_piece_and_where_it_comes_from():
    p = OvnNbParams()
    assert missing_tools(sb_schema=p.sb_schema, which=lambda t: f"/usr/bin/{t}", exists=lambda path: True) is None
    why = missing_tools(sb_schema=p.sb_schema, which=lambda t: None if t == "ovn-northd" else "/x",
                        exists=lambda path: "sb" not in path)
    assert "ovn-northd not found on PATH" in why and "ovn-sb.ovsschema is absent" in why and "--ovn-sb-schema" in why


def test_the_report_table_is_one_row_per_concurrency_with_rally_columns_and_cpu():
    def entry(c, median):
        return {"benchmark": "test_ovn_northbound_provisioning", "variant": f"c{c}",
                "ovn_provisioning": {"concurrency": c, "client_cpu_pct": 90.5, "central_cpu_pct": 40.0,
                                     "rally": {**rally_row([median, median * 2], 0)}},
                "table": tables.rows(**TABLE)}
    lines = tables.render_tables([entry(32, 100.0), entry(8, 10.0), {"benchmark": "test_other"}])
    assert lines[0].startswith("## OVN Northbound Provisioning — ★ extra")
    rows = [line for line in lines if line.startswith("| 8 ") or line.startswith("| 32 ")]
    assert rows[0].startswith("| 8 | 10 | 15 |") and rows[1].startswith("| 32 | 100 | 150 |")
    assert "| 100 | 2 | 90.5 | 40 |" in rows[0]
    assert tables.render_tables([{"benchmark": "test_other"}]) == []
    assert "Neutron" in ML2_NOTE


def no_central_left() -> None:
    psutil = pytest.importorskip("psutil")
    left = [p.pid for p in psutil.process_iter(["cmdline"])
            if "bmwg-ovn-central-" in " ".join(p.info["cmdline"] or ())]
    assert not left, f"central processes outlived the run: {left}"


@pytest.mark.system
def test_the_suite_provisions_on_a_real_ovn_central_and_leaves_no_process(tmp_path):
    """End to end, as a user types it: two concurrencies, two runs each on a fresh central, Rally's table in the
    report, every central process ended."""
    import json

    from helpers import pytest_run, said
    from results_check import check_results_files

    why = OvnNbParams().central(tmp_path).unavailable()
    if why:
        pytest.skip(why)
    out = tmp_path / "r"
    r = pytest_run("suites", "-k", "ovn_northbound_provisioning", "--ovn-concurrency", "2,3", "--ovn-runs", "2",
                   "--ovn-iterations", "12", "--report-dir", str(out), "-rs")
    assert r.returncode == 0, said(r, out)
    data = json.loads((out / "results.json").read_text())
    entries = [b for b in data["benchmarks"] if b["benchmark"] == "test_ovn_northbound_provisioning"]
    assert [b["variant"] for b in entries] == ["c2", "c3"]
    for b in entries:
        assert b["rfc_section"] == "★" and b["summary"]["n"] == 2 and b["outcome"]["status"] == "passed"
        rally = b["ovn_provisioning"]["rally"]
        assert rally["count"] == 24 and rally["success_pct"] == 100.0 and 0 < rally["min"] <= rally["p95"]
        assert any("ML2/OVS" in n for n in b["notes"])
        assert all(t["details"]["client_cpu_pct"] > 0 for t in b["trials"])
    assert data["run"]["ovn_central"]["name"] == "ovn-central"
    report = (out / "report.md").read_text()
    assert "## OVN Northbound Provisioning — ★ extra" in report and "| 2 |" in report
    check_results_files(out)
    no_central_left()


# --------------------------------------------------------------------------- the scaling point against OVN

def test_the_southbound_monitor_keeps_the_first_instant_of_each_binding():
    from fixtures.families.ovn_load import PortBindings
    clock = iter(range(100, 1000, 100))
    w = PortBindings(1, clock=lambda: next(clock))
    assert w.request()["params"][2]["Port_Binding"]["select"]["insert"] is True
    assert w.handle({"id": "bmwg-monitor", "result": {}, "error": None}) is None
    update = {"method": "update", "params": ["bmwg", {"Port_Binding": {
        "u1": {"new": {"logical_port": "bmwg-nb-1"}}, "u2": {"new": {"logical_port": "bmwg-nb-2"}}}}]}
    w.handle(update)
    w.handle({"method": "update", "params": ["bmwg", {"Port_Binding": {"u1": {"new": {"logical_port": "bmwg-nb-1"}},
                                                                       "u3": {"old": {}}}}]})
    assert w.served(["bmwg-nb-2", "bmwg-nb-1", "bmwg-nb-9"]) == [100, 100, 0] and w.count() == 2
    w.handle({"id": "echo", "method": "echo", "params": ["x"]})       # answered by its JsonRpcConnection
    w.handle({"id": "bmwg-monitor", "result": None, "error": "unknown database"})
    assert "refused the monitor" in w.errors[0]


def test_a_port_request_inserts_the_port_and_adds_it_to_its_switch_in_one_transaction():
    import json

    from fixtures.families.ovn_load import port_request, switch_ops
    req = json.loads(port_request("bmwg-nb-7", "uuid-ls", 6))
    assert req["id"] == 6 and req["method"] == "transact" and req["params"][0] == "OVN_Northbound"
    insert, mutate = req["params"][1:]
    assert insert["row"] == {"name": "bmwg-nb-7"} and mutate["where"] == [["_uuid", "==", ["uuid", "uuid-ls"]]]
    assert mutate["mutations"] == [["ports", "insert", ["named-uuid", insert["uuid-name"]]]]
    ops = switch_ops(2, 3, "t")
    switches = [op for op in ops if op["table"] == "Logical_Switch"]
    assert len(ops) == 8 and [s["row"]["name"] for s in switches] == ["t-ls0", "t-ls1"]
    assert len(switches[1]["row"]["ports"][1]) == 3


def test_a_central_has_one_to_seven_members():
    from fixtures.devices.ovn_central import OvnCentral
    assert OvnCentral("/tmp/x", members=3).n == 3
    with pytest.raises(ValueError, match="1..7 members"):
        OvnCentral("/tmp/x", members=8)


@pytest.mark.system
def test_the_scaling_point_of_a_standalone_and_a_clustered_ovn_central_through_the_suite(tmp_path):
    """The northbound scaling point against OVN at 1 and 3 members, as a user types it: both cells, the deployment
    table with the overhead, every central process ended."""
    import json

    from helpers import pytest_run, said
    from results_check import check_results_files

    why = OvnNbParams().central(tmp_path).unavailable()
    if why:
        pytest.skip(why)
    out = tmp_path / "r"
    r = pytest_run("suites", "-k", "ovn_northbound_scaling", "--cluster-nodes", "1,3", "--repetitions", "1",
                   "--nb-td", "0.5", "--nb-rest", "0.1", "--nb-max-rate", "800", "--report-dir", str(out), "-rs",
                   timeout=300)
    assert r.returncode == 0, said(r, out)
    data = json.loads((out / "results.json").read_text())
    entries = [b for b in data["benchmarks"] if b["benchmark"] == "test_ovn_northbound_scaling"]
    assert [b["variant"] for b in entries] == ["async-4x1", "async-4x1-3n"]
    for b, n in zip(entries, (1, 3)):
        t = b["trials"][0]
        assert t["ok"] and t["value"] > 0 and t["details"]["nodes"] == n and b["deployment"]["nodes"] == n
        assert all(step["served"] > 0 for step in t["details"]["curve"])
    assert entries[0]["deployment"]["overhead_text"] == "— (the reference)"
    assert entries[1]["deployment"]["overhead"] is not None
    assert len(entries[1]["trials"][0]["details"]["resources"]["members"]) == 7      # 3 NB, 3 SB, northd
    report = (out / "report.md").read_text()
    assert "Northbound scaling point by deployment" in report and "| ovn-central | 3 | async |" in report
    check_results_files(out)
    no_central_left()


def test_an_iteration_is_one_transaction_that_bumps_nb_cfg_and_reads_it_back():
    import json

    from fixtures.families.ovn_nb import iteration_request
    req = json.loads(iteration_request("c8-r1-ls3", 2, 3))
    ops = req["params"][1:]
    assert req["id"] == 3 and [op["op"] for op in ops] == ["insert", "insert", "insert", "mutate", "select"]
    assert ops[2]["row"]["ports"] == ["set", [["named-uuid", "p0"], ["named-uuid", "p1"]]]
    assert ops[3]["mutations"] == [["nb_cfg", "+=", 1]] and ops[4]["columns"] == ["nb_cfg"]


def test_each_iteration_is_served_within_the_timeout_or_fails_saying_why():
    from array import array

    from emulator import nbload as nl
    from fixtures.families.ovn_nb import iterations_of
    ms = 1_000_000
    a = nl.Answers(0, 1e6, array("q", [0] * 5), array("q", [10 * ms, 10 * ms, 10 * ms, 10 * ms, 0]),
                   array("q", [12 * ms, 0, 11 * ms, 12 * ms, 0]), array("h", [200, 0, 409, 200, 0]),
                   served=array("q", [30 * ms, 0, 0, 5000 * ms, 0]))
    its = iterations_of(a, 2.0)
    assert its[0].ok and its[0].total_ms == 20.0 and its[0].commit_ms == 2.0
    assert [it.error.split(" ")[0] for it in its[1:]] == ["no", "transaction", "took", "never"]
    assert "more than --ovn-timeout 2 s" in its[3].error
