"""RFC 8456 §5.4.2: the failure's target, each direction's figures and the validity checks, from hand-made traces
and test-port reports (no sockets)."""

from types import SimpleNamespace

import pytest

from emulator import flowcodec as fc
from emulator import testports as tpt
from emulator import topology as tp
from fixtures.dataplane import choose_path
from fixtures.families.reprovisioning import (
    ReprovisioningParams,
    Side,
    assess,
    direction,
    failure_target,
    has_alternate,
    reverse,
    serving_switches,
)
from fixtures.harness import TrialFailed, TrialInvalid

FLOW = tpt.synthetic_flows(1)[0]
MS = 1_000_000


def _mod(t, dpid, flow=FLOW, forwards=True):
    fields = [["eth_src", int.from_bytes(flow.src_mac, "big"), fc.full_mask("eth_src")],
              ["eth_dst", int.from_bytes(flow.dst_mac, "big"), fc.full_mask("eth_dst")]]
    return (t, dpid, fields, forwards)


def _rx(losses, last_ns, missing=0):
    return {"last_ns": last_ns, "losses": losses, "missing": missing}


def test_the_receiving_stream_records_each_jump_in_its_sequence_numbers_not_its_pauses():
    rx = tpt.RxStream()
    t = 0
    for seq in range(40):
        if seq in (30, 31, 35):
            continue                        # lost
        t += 9 * MS if seq == 10 else MS    # a pause without loss
        rx.record(0, seq, 0, t)
    r = rx.report()
    assert r["losses"] == [[38 * MS, 39 * MS, 29, 32], [41 * MS, 42 * MS, 34, 36]]    # seq k < 10 arrives at k + 1 ms
    assert r["missing"] == 3 and rx.longest_gap_ns == 9 * MS
    for seq in range(100, 100 + tpt.LOSSES_KEPT + 5):
        rx.record(0, 2 * seq, 0, t + seq)
    assert len(rx.losses) == tpt.LOSSES_KEPT and rx.losses[-1][3] == 2 * (100 + tpt.LOSSES_KEPT + 4)


def test_a_direction_reads_the_first_loss_after_the_failure():
    losses = [[100 * MS, 190 * MS, 10, 12], [500 * MS, 520 * MS, 400, 404], [600 * MS, 601 * MS, 500, 502]]
    d = direction(_rx(losses, 900 * MS, missing=5), t_fail=505 * MS, missing_before=1)
    assert d == {"resumed": True, "negligible": False, "drt_ms": 20.0, "loss": 4, "loss_episodes": 2,
                 "t_lfr": 500 * MS, "t_ffr": 520 * MS, "lfr_seq": 400, "ffr_seq": 404}


def test_a_direction_with_no_frame_lost_is_negligible_and_one_not_back_is_not_resumed():
    losses = [[100 * MS, 190 * MS, 10, 12]]
    assert direction(_rx(losses, 900 * MS, missing=1), 501 * MS, 1) == {
        "resumed": True, "negligible": True, "drt_ms": 0.0, "loss": 0, "loss_episodes": 0}
    assert direction(_rx(losses, 900 * MS, missing=3), 501 * MS, missing_before=1)["unexplained_loss"] == 2
    late = direction(_rx([[600 * MS, 601 * MS, 500, 502]], 900 * MS, missing=1), 501 * MS, missing_before=1)
    assert late["negligible"] and late["late_frames"] and late["loss"] == 0     # the jump's frame came afterwards
    assert direction(_rx(losses, 400 * MS), 501 * MS) == {"resumed": False}
    assert direction(None, 1) == {"resumed": False}


def test_the_failure_goes_on_an_element_both_directions_cross():
    topo = tp.leaf_spine(2, 2)          # spines 1, 2; leaves 3, 4
    kind, link = failure_target(topo, [3, 1, 4], [4, 1, 3], "link")
    assert kind == "link" and {link.a.dpid, link.b.dpid} == {3, 1}
    kind, link = failure_target(topo, [3, 1, 4], [4, 2, 3], "link")       # nothing shared: the forward path's
    assert {link.a.dpid, link.b.dpid} == {3, 1}
    assert failure_target(topo, [3, 1, 4], [4, 1, 3], "switch") == ("switch", 1)
    with pytest.raises(TrialFailed, match="no switch on it other than TP1's and TP2's"):
        failure_target(topo, [3, 4], [4, 3], "switch")


def test_a_topology_without_an_alternate_path_is_named():
    lin = tp.linear(3)
    why = has_alternate(lin, choose_path(lin), "link")
    assert "no path from TP1's switch to TP2's without link" in why and "redundant paths" in why
    ls = tp.leaf_spine(2, 2)
    assert has_alternate(ls, choose_path(ls), "link") is None and has_alternate(ls, choose_path(ls), "switch") is None
    assert has_alternate(tp.ring(4), choose_path(tp.ring(4)), "switch") is None
    two = tp.linear(2)
    assert "no switch on it other than TP1's and TP2's" in has_alternate(two, choose_path(two), "switch")


def _trace(*mods):
    return SimpleNamespace(flow_mods=list(mods), packet_ins={})


LOST = {"last_ns": 900, "losses": [[150, 210, 40, 46]], "missing": 5}


def test_a_valid_reroute_gives_the_alternate_path_and_the_last_flow_mod():
    topo = tp.leaf_spine(2, 2)
    target = failure_target(topo, [3, 1, 4], [4, 1, 3], "link")
    trace = _trace(_mod(10, 4), _mod(11, 1), _mod(12, 3), _mod(200, 4), _mod(201, 2), _mod(202, 3),
                   _mod(205, 3, reverse(FLOW)))
    rx = LOST
    d = assess(topo, trace, target, Side(FLOW, [3, 1, 4], rx, 0, "forward", "TP2"), 160)
    assert d["alternate"] == [3, 2, 4] and d["last_flow_mod_ns"] == 202 and d["loss"] == 5 and d["drt_ms"] == 60e-6
    assert serving_switches(trace, FLOW, after_ns=160) == {4: 200, 2: 201, 3: 202}


def test_an_alternate_path_installed_before_the_failure_is_invalid():
    topo = tp.leaf_spine(2, 2)
    target = failure_target(topo, [3, 1, 4], [4, 1, 3], "link")
    trace = _trace(_mod(10, 4), _mod(11, 1), _mod(12, 3), _mod(13, 2), _mod(201, 3))
    with pytest.raises(TrialInvalid, match=r"invalid: forward: switch\(es\) 2 .*held an entry.*before the failure"):
        assess(topo, trace, target, Side(FLOW, [3, 1, 4], LOST, 0, "forward", "TP2"), 160)


def test_frames_through_a_switch_before_its_entry_make_the_trial_invalid():
    topo = tp.leaf_spine(2, 2)
    target = failure_target(topo, [3, 1, 4], [4, 1, 3], "switch")
    trace = _trace(_mod(10, 4), _mod(11, 1), _mod(12, 3), _mod(200, 3), _mod(230, 2))
    with pytest.raises(TrialInvalid, match=r"reached TP2 before switch\(es\) 2 of the alternate path got their entry"):
        assess(topo, trace, target, Side(FLOW, [3, 1, 4], LOST, 0, "forward", "TP2"), 160)


def test_frames_carried_by_a_flood_entry_rewritten_after_the_failure_are_valid_and_say_so():
    """Faucet: the alternate spine first floods (an entry naming no address, written after the failure), and gets
    the pair's own entry once it has learned D1 again."""
    topo = tp.leaf_spine(2, 2)
    target = failure_target(topo, [3, 1, 4], [4, 1, 3], "link")
    flood = (190, 2, [["eth_dst", 0xFFFFFFFFFFFF, fc.full_mask("eth_dst")]], True)    # a broadcast flood entry
    trace = _trace(_mod(10, 4), _mod(11, 1), _mod(12, 3), flood, _mod(200, 3), _mod(230, 2))
    d = assess(topo, trace, target, Side(FLOW, [3, 1, 4], LOST, 0, "forward", "TP2"), 160)
    assert d["alternate"] == [3, 2, 4] and d["last_flow_mod_ns"] == 200 and "switch(es) 2" in d["carried_by"]
    stale = _trace(_mod(10, 4), _mod(11, 1), _mod(12, 3), (100, *flood[1:]), (195, 2, flood[2], False),
                   _mod(200, 3), _mod(230, 2))
    with pytest.raises(TrialFailed, match=r"got their entry, and nothing was written there since the failure"):
        assess(topo, stale, target, Side(FLOW, [3, 1, 4], LOST, 0, "forward", "TP2"), 160)


def test_traffic_back_with_no_path_provisioned_around_the_failure_is_named():
    topo = tp.leaf_spine(2, 2)
    target = failure_target(topo, [3, 1, 4], [4, 1, 3], "switch")
    trace = _trace(_mod(10, 4), _mod(11, 1), _mod(12, 3))
    with pytest.raises(TrialFailed, match=r"provisioned for the pair \(3, 4\) make no path around switch 1"):
        assess(topo, trace, target, Side(FLOW, [3, 1, 4], LOST, 0, "forward", "TP2"), 160)


def test_options_are_checked():
    assert ReprovisioningParams().problems() == []
    assert "at most 16,777,216" in ReprovisioningParams(rate=5e6).problems()[0]


def test_a_negligible_direction_still_names_the_reroute_the_trace_shows():
    topo = tp.leaf_spine(2, 2)
    target = failure_target(topo, [3, 1, 4], [4, 1, 3], "switch")
    trace = _trace(_mod(10, 4), _mod(11, 1), _mod(12, 3), _mod(200, 4), _mod(201, 2), _mod(202, 3))
    d = assess(topo, trace, target, Side(FLOW, [3, 1, 4], _rx([], 900), 0, "fwd", "TP2"), 160)
    assert d["negligible"] and d["drt_ms"] == 0.0 and d["alternate"] == [3, 2, 4] and d["last_flow_mod_ns"] == 202
    d = assess(topo, _trace(_mod(10, 4), _mod(11, 1), _mod(12, 3)), target,
               Side(FLOW, [3, 1, 4], _rx([], 900), 0, "fwd", "TP2"), 160)
    assert d["negligible"] and d["alternate"] is None and d["last_flow_mod_ns"] is None


def test_a_receiver_far_behind_its_sender_has_stalled_even_without_a_sequence_jump():
    rx = {"last_ns": 900 * MS, "losses": [], "missing": 0, "unique": 257}     # frames 0..256 came, then nothing
    assert direction(rx, 501 * MS, 0, sent=2767, in_flight=40) == {"resumed": False, "stalled": 2510}
    assert direction(rx, 501 * MS, 0, sent=290, in_flight=40)["negligible"]   # 33 on their way: not a stall
