"""RFC 8456 §5.3.1's invalid messages in the asynchronous stream: the seeded positions (k = round(p·N)), the
invalid forms of a PACKET_IN, and the fabric replacing them (StringTransport, no sockets)."""

import itertools

import pytest
from twisted.internet.task import Clock

from emulator import codec
from emulator import malformed as mf
from emulator import topology as tp
from emulator.codec import OFP10, OFP13
from emulator.fabric import Fabric

LLDP = bytes.fromhex("0180c200000e" "020000000201" "88cc") + bytes.fromhex("020704") + bytes(6) + bytes(4)


@pytest.mark.parametrize("percent,n", [(1, 1000), (2, 1000), (1, 250), (2, 7000), (5, 300)])
def test_k_is_round_p_n_at_seeded_positions(percent, n):
    plan = mf.ExceptionPlan(percent, seed=3)
    hits = [i for i in range(n) if plan.take()]
    assert abs(len(hits) - round(percent * n / 100)) <= 1 and plan.replaced == len(hits) and plan.seen == n
    again = mf.ExceptionPlan(percent, seed=3)
    assert [i for i in range(n) if again.take()] == hits                  # the seed fixes the positions
    other = mf.ExceptionPlan(percent, seed=4)
    assert [i for i in range(n) if other.take()] != hits
    assert len({h % mf.EXCEPTION_BLOCK for h in hits}) > 1          # each block draws its own positions


def test_invalid_forms_keep_the_frame():
    data = LLDP
    for version in (OFP10, OFP13):
        b03 = mf.exception_bytes("B03", version, 77, 3, data)
        pin = codec.packet_in_fields(b03)
        assert b03[0] == mf.other(version) and pin["data"] == data and pin["in_port"] == 3 and b03[4:8] == bytes(
            [0, 0, 0, 77])
        assert mf.exception_bytes("B01", version, 77, 3, data)[0] == 0x42
        assert mf.exception_bytes("C02", version, 77, 3, data)[1] == 0xCC
        assert mf.exception_bytes("E03", version, 77, 3, data) == mf.payload("E03", version)[0][1]
    assert mf.exception_kind_problem("B03") is None and mf.exception_kind_problem("E03") is None
    assert "K01" in mf.exception_kind_problem("K01") and "Z1" in mf.exception_kind_problem("Z1")
    assert mf.exception_kind_problem("A09")          # a timed drip, not one message


def test_the_fabric_replaces_one_packet_in_in_a_hundred():
    ticks = itertools.count(1000, 10)
    topo = tp.leaf_spine(1, 2)
    fabric = Fabric(topo, versions=(OFP13,), now_ns=lambda: next(ticks))
    clock = Clock()
    sw = {dpid: fabric.open_in_memory(dpid, clock) for dpid in topo.switches}
    for _, tr in sw.values():
        tr.clear()
    fabric.exceptions = mf.ExceptionPlan(1, "B03", seed=5)
    controller = codec.PORT_CONTROLLER | 0xFFFF0000
    for _ in range(300):
        sw[2][0].dataReceived(codec.encode_packet_out(OFP13, 9, codec.NO_BUFFER, controller, 1, LLDP))
    frames, rest = codec.split_frames(sw[1][1].value())
    versions = [f[0] for f in frames if f[1] == codec.PACKET_IN]
    assert rest == b"" and len(versions) == 300 and versions.count(OFP10) == 3 == fabric.exceptions_sent
    assert fabric.async_messages == 300 and fabric.relayed == 297          # a replaced one is not relayed
    assert fabric.status()["exceptions_sent"] == 3


def cell(test, pct, values, unit="paths/s", status="passed", comparison=None, reason=""):
    b = {"benchmark": "test_exception_handling", "rfc_section": "5.3.1", "unit": unit, "variant": f"{test}-{pct}%",
         "parameters": {"test": test, "exceptions_percent": pct, "exception_kind": "B03",
                        "exception_kind_title": "PACKET_IN of the other version"},
         "trials": [{"index": i + 1, "ok": True, "value": v} for i, v in enumerate(values)],
         "summary": {"n": len(values), "mean": sum(values) / len(values)} if values else {"n": 0},
         "verdict": None, "outcome": {"status": status, **({"reason": reason} if reason else {})}}
    if comparison:
        b["against_without_exceptions"] = comparison
    from fixtures.families.exceptions import table_entry
    b["table"] = table_entry(test, pct, "B03")
    return b


def test_baselines_and_the_rfc_table():
    from fixtures.families.exceptions import TABLE, ExceptionParams
    from fixtures.families.tables import comparison
    baseline_for, path_programming_rate = TABLE.baseline_for, TABLE.path_programming_rate
    from reports.tables import render_tables
    rate = "reactive_path_provisioning_rate"
    run = {"benchmarks": [cell(rate, 0, [300.0, 310.0, 320.0])]}
    assert baseline_for(rate, run, None) == ([300.0, 310.0, 320.0], "the 0 % cell of this run")
    assert path_programming_rate(run, None)[0] == pytest.approx(310.0)
    older = {"benchmarks": [{"benchmark": "test_reactive_path_provisioning_rate", "trials": [
        {"ok": True, "value": 200.0}, {"ok": True, "value": 220.0}]}]}
    assert baseline_for(rate, {"benchmarks": []}, older)[1] == "test_reactive_path_provisioning_rate in --baseline"
    assert baseline_for(rate, {"benchmarks": []}, None)[0] is None
    c = comparison([250.0, 255.0, 260.0, 252.0], [300.0, 310.0, 320.0, 305.0], True, 0.05, "the 0 % cell")
    assert c["deviation_percent"] == pytest.approx((254.25 - 308.75) / 308.75 * 100) and c["p_value"] < 0.05
    table = render_tables([cell(rate, 0, [310.0]), cell(rate, 1, [254.0], comparison=c),
                                    cell("network_topology_change_detection_time", 2, [], unit="ms",
                                         status="skipped", reason="not benchmarkable at 2 % with kind B03")])
    text = "\n".join(table)
    assert "| Test | Without Exceptions | With 1% Exceptions | With 2% Exceptions |" in text
    assert "Δ -17.7 %" in text and "not benchmarkable at 2 % with kind B03" in text and "B03 (" in text
    assert ExceptionParams(kind="K01").problems() and ExceptionParams(percents=(0,)).problems()
    assert ExceptionParams().cells()[:3] == [(rate, 0), (rate, 1), (rate, 2)]
