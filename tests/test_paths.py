"""Path-provisioning logic without processes: where TP1/TP2 sit, which FLOW_MODs serve a test
flow, the fabric's provisioning trace, the northbound flow adapters' requests and listings."""

import itertools
import json
from pathlib import Path

import pytest
from twisted.internet.task import Clock

from emulator import codec
from emulator import flowcodec as fc
from emulator import testports as tpt
from emulator import topology as tp
from emulator.commands import Trace
from emulator.fabric import Fabric, trace_record
from emulator.params import FabricParams
from fixtures.dataplane import choose_path, flow_fields, host_path, paths_completed, provisioning, serves
from fixtures.devices.flow_nb import OdlFlows, OnosFlows, RyuFlows, learned, make_flows
from fixtures.families import paths
from fixtures.families.paths import PathParams

DATA = Path(__file__).parent / "data" / "flows"


def test_choose_path_takes_the_longest_shortest_path_by_default_and_the_asked_length():
    topo = tp.leaf_spine(2, 6)
    c = choose_path(topo)
    assert len(c.hops) == 3 and c.hops[0][1] == c.tp1.port and c.hops[-1][2] == c.tp2.port
    assert topo.host_at(c.tp1.dpid, c.tp1.port) and topo.host_at(c.tp2.dpid, c.tp2.port)
    lin = tp.linear(5)
    for n in range(2, 6):
        c = choose_path(lin, n)
        assert len(c.hops) == n
        # each hop leaves by the port whose link reaches the next switch
        for (a, _, out), (b, inp, _) in zip(c.hops, c.hops[1:]):
            assert lin.peer(a, out) == tp.Endpoint(b, inp)
    with pytest.raises(ValueError, match=r"no two host ports 7 switch\(es\) apart .*paths of 2, 3, 4, 5 switches"):
        choose_path(lin, 7)


def test_host_path_of_unconnected_ports_is_none():
    topo = tp.build("two", [1, 2], [], hosts=[(1, 1), (2, 1)], connected=False)
    assert host_path(topo, tp.Endpoint(1, 1), tp.Endpoint(2, 1)) is None
    with pytest.raises(ValueError, match="no two host ports are connected"):
        choose_path(topo)


def _flow(i=1):
    return tpt.synthetic_flows(1, first=i)[0]


def _fields(**kw):
    return [[k, v, fc.full_mask(k)] for k, v in kw.items()]


def test_provisioning_takes_each_switch_first_flow_mod_after_the_first_packet_in():
    f, other = _flow(1), _flow(2)
    src, dst = int.from_bytes(f.src_mac, "big"), int.from_bytes(f.dst_mac, "big")
    trace = Trace(packet_ins={(f.src_mac.hex(), f.dst_mac.hex()): (1000, 1)}, truncated=False,
                  flow_mods=[
                 [900, 1, _fields(eth_dst=dst), True],                   # before the request: not this provisioning
                 [1100, 3, _fields(eth_src=src, eth_dst=dst), True],     # last switch first
                 [1150, 2, _fields(eth_dst=dst), True],                  # a destination-only entry serves it too
                 [1200, 1, _fields(eth_src=src, eth_dst=dst), True],
                 [1300, 1, _fields(eth_src=src, eth_dst=dst), True],     # installed again: does not count
                 [1250, 2, _fields(eth_dst=int.from_bytes(other.dst_mac, "big")), True],   # another flow
                 [1400, 2, _fields(ipv4_dst=f.dst_ip & 0xFFFF0000), False],                # no output
                 [1500, 4, [["ipv4_dst", f.dst_ip & 0xFFFFFF00, 0xFFFFFF00]], True],       # a prefix that fits
             ])
    p = provisioning(trace, f)
    assert p["tsf1_ns"] == 1000 and p["first_packet_in_at"] == 1
    assert p["per_switch_ns"] == {3: 1100, 2: 1150, 1: 1200, 4: 1500} and p["tdf1_ns"] == 1500
    assert p["flow_mods"] == 5
    assert provisioning(trace, other)["tsf1_ns"] is None
    assert provisioning(trace, f, since_ns=1250)["per_switch_ns"] == {1: 1300, 4: 1500}
    assert not serves(_fields(eth_src=1), flow_fields(f))
    assert not serves(_fields(arp_tpa=5), flow_fields(f))


def test_the_fabric_traces_packet_ins_and_address_flow_mods():
    topo = tp.linear(2)
    ticks = itertools.count(1_000_000, 1000)
    clock = Clock()
    fabric = Fabric(topo, now_ns=lambda: next(ticks), clock=clock,
                    params=FabricParams(host_refresh=0, host_delay=0, data_plane=True, table_miss="controller"))
    sw = {d: fabric.open_in_memory(d, clock) for d in topo.switches}
    f = _flow(7)
    fabric.start_trace()
    frame = tpt.frame_header(f, 128) + bytes(86)
    fabric.send_at(tp.Endpoint(1, 2), frame)
    fabric.send_at(tp.Endpoint(1, 2), frame)           # a second PACKET_IN of the pair: the first one stands
    match = {"eth_src": (int.from_bytes(f.src_mac, "big"), fc.full_mask("eth_src")),
             "eth_dst": (int.from_bytes(f.dst_mac, "big"), fc.full_mask("eth_dst"))}
    for dpid, port in ((2, 2), (1, 1)):
        sw[dpid][0].dataReceived(fc.encode_flow_mod_13(9, match, [port], priority=10))
    sw[1][0].dataReceived(fc.encode_flow_mod_13(10, {}, [codec.PORT_CONTROLLER], priority=0))   # table-miss
    rep = fabric.trace_report()
    (src, dst, t, dpid), = rep["packet_ins"]
    assert (src, dst, dpid) == (f.src_mac.hex(), f.dst_mac.hex(), 1)
    assert [r[1] for r in rep["flow_mods"]] == [2, 1] and all(r[3] for r in rep["flow_mods"])
    p = provisioning(Trace(packet_ins={(src, dst): (t, dpid)}, flow_mods=rep["flow_mods"], truncated=False), f)
    assert set(p["per_switch_ns"]) == {1, 2} and p["tdf1_ns"] > p["tsf1_ns"]
    assert trace_record({"match": {}, "instructions": []}) is None


def test_path_params_name_what_is_wrong():
    bad = PathParams(frame_size=10, ftc_flows=0xFFFFFF)
    text = "\n".join(bad.problems())
    for what in ("--path-frame-size must be 68..9000", "too many unique flows"):
        assert what in text
    assert PathParams().problems() == []


def test_async_rate_comes_from_this_runs_rate_benchmark():
    data = {"benchmarks": [{"benchmark": "test_async_message_processing_rate_loss_free", "summary": {"mean": 5.0}},
                           {"benchmark": "test_async_message_processing_rate", "summary": {"mean": 1234.0}}]}
    assert paths.async_rate_from(data) == 1234.0
    assert paths.async_rate_from({"benchmarks": []}) is None


# --------------------------------------------------------------------------- northbound flow adapters

def test_ryu_flow_request_and_listing():
    nb = RyuFlows("http://127.0.0.1:8080")
    method, path, body = nb.request(2, bytes.fromhex("0a6500000001"), "0A:66:00:00:00:01", 3, 10)
    assert (method, path) == ("POST", "/stats/flowentry/add")
    assert body["dpid"] == 2 and body["match"] == {"eth_src": "0a:65:00:00:00:01", "eth_dst": "0a:66:00:00:00:01"}
    assert body["actions"] == [{"type": "OUTPUT", "port": 3}] and body["idle_timeout"] == 0
    assert nb.list_path(2) == "/stats/flow/2"
    assert nb.count_in(json.loads((DATA / "ryu-stats-flow.json").read_text()), 2) == 2


def test_onos_flow_request_and_listing():
    nb = OnosFlows("http://127.0.0.1:8181")
    assert nb.auth == "onos:rocks"
    method, path, body = nb.request(2, "0a:65:00:00:00:01", "0a:66:00:00:00:01", 3, 100, in_port=1)
    assert method == "POST" and path == "/onos/v1/flows/of:0000000000000002?appId=org.bmwg.sdn"
    assert body["isPermanent"] is True and body["deviceId"] == "of:0000000000000002"
    assert body["treatment"]["instructions"] == [{"type": "OUTPUT", "port": "3"}]
    assert [c["type"] for c in body["selector"]["criteria"]] == ["IN_PORT", "ETH_SRC", "ETH_DST"]
    assert nb.count_in(json.loads((DATA / "onos-flows.json").read_text()), 2) == 2


def test_odl_flow_request_in_both_restconf_dialects_and_listing():
    nb = OdlFlows("http://127.0.0.1:8181")
    method, path, body = nb.request(2, "0a:65:00:00:00:01", "0a:66:00:00:00:01", 3)
    assert method == "PUT" and path.startswith("/rests/data/opendaylight-inventory:nodes/node=openflow%3A2/"
                                               "flow-node-inventory:table=0/flow=bmwg-0a6500000001-0a6600000001")
    flow = body["flow-node-inventory:flow"][0]
    assert flow["match"]["ethernet-match"]["ethernet-destination"] == {"address": "0a:66:00:00:00:01"}
    out = flow["instructions"]["instruction"][0]["apply-actions"]["action"][0]["output-action"]
    assert out["output-node-connector"] == "3"
    nb.rfc8040 = False
    method, path, body = nb.request(2, "0a:65:00:00:00:01", "0a:66:00:00:00:01", 3, flow_id="f1")
    assert path == "/restconf/config/opendaylight-inventory:nodes/node/openflow:2/table/0/flow/f1" and "flow" in body
    assert nb.list_path(2) == "/restconf/operational/opendaylight-inventory:nodes/node/openflow:2/table/0"
    assert nb.count_in(json.loads((DATA / "odl-table.json").read_text()), 2) == 2


def test_each_flow_adapter_deletes_what_it_wrote_on_the_switches_asked():
    assert RyuFlows("http://127.0.0.1:8080").delete_requests([1, 2]) == [
        ("DELETE", "/stats/flowentry/clear/1"), ("DELETE", "/stats/flowentry/clear/2")]
    assert OnosFlows("http://127.0.0.1:8181").delete_requests([1, 2]) == [
        ("DELETE", "/onos/v1/flows/application/org.bmwg.sdn")]
    odl = OdlFlows("http://127.0.0.1:8181")
    assert odl.delete_requests([3]) == [
        ("DELETE", "/rests/data/opendaylight-inventory:nodes/node=openflow%3A3/flow-node-inventory:table=0")]
    odl.rfc8040 = False
    assert odl.delete_requests([3]) == [
        ("DELETE", "/restconf/config/opendaylight-inventory:nodes/node/openflow:3/table/0")]


def test_learned_entries_name_a_unicast_address():
    assert learned(["0a:65:00:00:00:01"], []) and learned([], ["10.0.0.1"])
    assert not learned(["01:80:c2:00:00:0e"], []) and not learned(["ff:ff:ff:ff:ff:ff", None], [None])


@pytest.mark.component
def test_flow_adapter_errors_name_the_adapter_and_the_call():
    from fixtures.devices.northbound import NorthboundError
    from fixtures.ports import free_port
    nb = make_flows("ryu", f"http://127.0.0.1:{free_port()}")
    with pytest.raises(NorthboundError, match=r"ryu flow northbound at http://127.0.0.1:\d+: GET /stats/flow/1 failed"):
        nb.count_flows([1])
    with pytest.raises(ValueError, match="is not an http"):
        RyuFlows("ftp://x")


def test_paths_completed_needs_every_path_switch_and_exact_pairs():
    flows = tpt.synthetic_flows(3)
    def key(f):
        return dict(eth_src=int.from_bytes(f.src_mac, "big"), eth_dst=int.from_bytes(f.dst_mac, "big"))

    trace = Trace(truncated=False, packet_ins={}, flow_mods=[
        [100, 3, _fields(**key(flows[0])), True], [110, 2, _fields(**key(flows[0])), True],
        [120, 1, _fields(**key(flows[0])), True], [130, 1, _fields(**key(flows[0])), True],   # complete at 120
        [140, 3, _fields(**key(flows[1])), True], [150, 2, _fields(**key(flows[1])), True],   # two of three
        [160, 3, _fields(**key(flows[2])), False],                                            # no output
        [170, 3, _fields(eth_dst=key(flows[2])["eth_dst"]), True],                            # not a pair entry
        [50, 1, _fields(**key(flows[1])), True],                                              # before the start
    ])
    assert paths_completed(trace, flows, 3, since_ns=60) == [120]
    assert paths_completed(trace, flows, 2, since_ns=60) == [120, 150]
