"""The pure parts of the asynchronous-message benchmarks: the RFC's rate search over model
controllers, per-trial figures, PACKET_IN bytes against Ryu's parser, and the null controller's
answers over a StringTransport."""

from array import array

import pytest
from twisted.internet.testing import StringTransport

from emulator import codec, frames
from emulator.codec import OFP10, OFP13
from emulator.nullctl import NullControllerFactory
from emulator.shard import merge_results, split_switches
from fixtures.async_msgs import AsyncParams, agree, percentile, rate_search, trial_figures


def model(capacity, max_offered=50_000.0, loss_below=None, noise=(), swamped=1.0):
    """A controller that answers up to ``capacity``/s and loses the excess (and, optionally,
    loses a little even below capacity until the offered rate is under ``loss_below``).
    Under the open-loop trial it answers only ``swamped`` × capacity."""
    calls = []
    noise = list(noise)

    def run(rate):
        offered = max_offered if rate is None else rate
        apr = min(offered, capacity * (swamped if rate is None else 1.0)) * (noise.pop(0) if noise else 1.0)
        loss = max(0.0, 1 - apr / offered)
        if loss_below is not None and offered >= loss_below:
            loss = max(loss, 0.01)
        calls.append(rate)
        return {"offered_rate": offered, "apr": apr, "loss_ratio": loss}

    run.calls = calls
    return run


def test_search_starts_at_the_maximum_then_steps_down_from_above_capacity():
    run = model(1000.0)
    s = rate_search(run, step=0.1, tolerance=0.05, max_confirm=5)
    assert run.calls[0] is None                                   # trial 1: maximum possible offered rate
    assert run.calls[1] == pytest.approx(1100.0)                  # one STEP above what was answered
    assert s["max_offered_rate"] == 50_000.0 and s["step_rate"] == pytest.approx(100.0)
    assert s["maximum"].apr == 1000.0 and s["maximum"].benchmark == "Maximum" and s["maximum_confirmed"]
    assert s["loss_free"].apr == pytest.approx(1000.0) and s["loss_free"].loss_ratio == 0
    assert s["loss_free_confirmed"] and "Loss-Free" in s["loss_free"].benchmark


def test_search_climbs_when_the_first_paced_level_loses_nothing():
    # Swamped by the open-loop burst, the controller answers 800/s; paced, it handles 1000/s.
    run = model(1000.0, swamped=0.8)
    s = rate_search(run, step=0.1, tolerance=0.05, max_confirm=5)
    assert run.calls[1:4] == [pytest.approx(880.0), pytest.approx(960.0), pytest.approx(1040.0)]
    assert s["loss_free"].offered_rate == pytest.approx(960.0) and s["loss_free"].loss_ratio == 0
    assert s["maximum"].apr == pytest.approx(1000.0) and s["maximum"].offered_rate == pytest.approx(1040.0)


def test_climb_stops_at_the_emulators_maximum_offered_rate():
    # The controller could take 2000/s, but the emulator offers at most 1000/s.
    run = model(2000.0, max_offered=1000.0, swamped=0.25)
    s = rate_search(run, step=0.2, tolerance=0.05, max_confirm=5)
    assert run.calls[1] == pytest.approx(600.0)
    assert max(r for r in run.calls if r is not None) == pytest.approx(1000.0)
    assert s["loss_free"].offered_rate == pytest.approx(1000.0)


def test_loss_free_rate_lies_below_the_maximum_when_the_controller_drops_near_capacity():
    s = rate_search(model(1000.0, loss_below=700.0), step=0.1, tolerance=0.05, max_confirm=5)
    assert s["maximum"].apr == 1000.0
    assert s["loss_free"].offered_rate < 700.0 and s["loss_free"].loss_ratio == 0
    rates = [r.target_rate for r in s["rows"][1:] if r.benchmark == ""]
    assert all(a > b for a, b in zip(rates, rates[1:]) if a != b)  # the descent only goes down


def test_levels_repeat_until_two_consecutive_trials_agree():
    # The maximum level's repeats answer 1000, 900, 1000, 1000: agreement needs the fourth trial.
    noisy = model(1000.0, noise=[1.0, 1.0, 0.9, 1.0, 1.0])
    s = rate_search(noisy, step=0.1, tolerance=0.05, max_confirm=5)
    assert s["maximum_confirmed"]
    same_level = [r for r in s["rows"] if r.target_rate == s["maximum"].target_rate]
    assert len(same_level) >= 2 and agree(same_level[-1].apr, same_level[-2].apr, 0.05)


def test_unconfirmed_level_is_reported_as_such():
    flip = model(1000.0, noise=[1.0] + [1.0, 0.5] * 10)
    s = rate_search(flip, step=0.1, tolerance=0.01, max_confirm=3)
    assert s["maximum_confirmed"] is False


def test_no_answer_at_all_means_no_result_not_zero():
    s = rate_search(model(0.0), step=0.1, tolerance=0.05, max_confirm=3)
    assert s["maximum"] is None and "no response" in s["reason"]


def test_agree_is_relative_to_the_larger_count():
    assert agree(100, 95, 0.05) and not agree(100, 94, 0.05) and agree(0, 0, 0.05)


def test_trial_figures_follow_the_rfc_formulas():
    r = {"ntx": 10, "nrx": 8, "nrx_in_td": 9, "duration_s": 2.0, "rtt_sum_ns": 8 * 250_000,
         "latencies_ns": array("q", [100_000, 200_000, 200_000, 300_000, 300_000, 300_000, 300_000, 300_000]),
         "late": 1, "duplicates": 0, "stale": 0, "unmatched": 0, "overrun": 0, "not_counted": 0,
         "deferred_by_backpressure": 0, "packet_out": 9, "flow_mod": 0, "sessions_lost": 0}
    f = trial_figures(r)
    assert f["apt_ms"] == pytest.approx(0.25)              # (ΣR − ΣT) / Nrx
    assert f["unsuccessful_percent"] == pytest.approx(20)  # (1 − Nrx/Ntx) × 100
    assert f["apr"] == 4.5 and f["offered_rate"] == 5.0 and f["loss_ratio"] == pytest.approx(0.2)
    assert f["latency_median_ms"] == pytest.approx(0.3) and f["latency_p99_ms"] == pytest.approx(0.3)
    assert percentile([1, 2, 3, 4], 50) == 2 and percentile([1, 2, 3, 4], 100) == 4


def test_merge_sums_counters_and_pools_latencies():
    base = {"mode": "max", "duration_s": 1.0, "response_timeout_s": 1.0, "offered_rate_target": None,
            "late": 0, "duplicates": 0, "stale": 0, "overrun": 0, "not_counted": 0, "unmatched": 0,
            "deferred_by_backpressure": 0, "packet_out": 0, "flow_mod": 0, "sessions_lost": 0}
    a = {**base, "ntx": 5, "nrx": 4, "nrx_in_td": 4, "rtt_sum_ns": 40, "switches": 2, "t_start_ns": 100,
         "t_end_ns": 200, "latencies_ns": array("q", [10] * 4).tobytes()}
    b = {**base, "ntx": 3, "nrx": 3, "nrx_in_td": 3, "rtt_sum_ns": 60, "switches": 1, "t_start_ns": 130,
         "t_end_ns": 220, "latencies_ns": array("q", [20] * 3).tobytes()}
    m = merge_results([a, b])
    assert (m["ntx"], m["nrx"], m["rtt_sum_ns"], m["switches"], m["shards"]) == (8, 7, 100, 3, 2)
    assert list(m["latencies_ns"]) == [10] * 4 + [20] * 3 and m["start_skew_us"] == pytest.approx(0.03)
    assert split_switches(5, 2) == [[1, 2, 3], [4, 5]] and split_switches(2, 4) == [[1], [2]]


def test_params_name_every_bad_value():
    bad = AsyncParams(switches=0, macs=0, frame_size=10, mode="max", response_type="x", duration=0,
                      rate_step=1.5, tolerance=0, max_confirm=1, shards=0)
    text = " ".join(bad.problems())
    for word in ("--switches", "--macs", "frame size", "--async-mode", "--response-type", "--trial-duration",
                 "--rate-step", "--rate-tolerance", "--max-confirm", "--emulator-shards"):
        assert word in text


@pytest.mark.parametrize("version", [OFP10, OFP13])
def test_packet_in_block_decodes_with_ryu_parser(version):
    from ryu.ofproto import ofproto_v1_0, ofproto_v1_0_parser, ofproto_v1_3, ofproto_v1_3_parser

    ofp, parser = ((ofproto_v1_0, ofproto_v1_0_parser) if version == OFP10 else (ofproto_v1_3, ofproto_v1_3_parser))

    class Datapath:
        ofproto, ofproto_parser = ofp, parser

    template = frames.build_template("ipv4", 512)
    block = frames.PacketInBlock(version, 7, template, 10, nonce=0xABCD, buffered=True, miss_send_len=128)
    msg = block.one(23)
    pin = parser.OFPPacketIn.parser(Datapath, version, codec.PACKET_IN, len(msg), 23, msg)
    assert pin.buffer_id == 23 and pin.total_len == 512 and len(pin.data) == 128
    in_port = pin.in_port if version == OFP10 else pin.match["in_port"]
    assert in_port == frames.TEST_PORT
    assert pin.data[6:12] == frames.src_mac(7, 23 % 10) and pin.data[0:6] == frames.host_mac(7)
    assert frames.parse_tag(pin.data) == (0xABCD, 23)


def test_learn_frame_is_a_gratuitous_arp_from_the_destination_host():
    from scapy.layers.l2 import ARP, Ether
    pkt = Ether(frames.learn_frame(7))
    assert pkt[Ether].src == ":".join(f"{b:02x}" for b in frames.host_mac(7)) and pkt[ARP].op == 2


@pytest.mark.parametrize("version", [OFP10, OFP13])
@pytest.mark.parametrize("buffered", [True, False])
def test_null_controller_answers_each_packet_in_with_one_packet_out(version, buffered):
    factory = NullControllerFactory()
    proto = factory.buildProtocol(None)
    transport = StringTransport()
    proto.makeConnection(transport)
    proto.dataReceived(codec.encode_hello(version, 1, (OFP10, OFP13) if version == OFP13 else ()))
    transport.clear()
    block = frames.PacketInBlock(version, 3, frames.build_template("ipv4", 128), 5, nonce=1, buffered=buffered)
    data = block.take(100, 3)
    proto.dataReceived(data[:50])
    proto.dataReceived(data[50:])                         # split across reads
    outs, tail = codec.split_frames(transport.value())
    assert tail == b"" and len(outs) == 3 and proto.packet_ins == 3
    for seq, frame in zip(range(100, 103), outs):
        assert frame[1] == codec.PACKET_OUT
        bid = int.from_bytes(frame[8:12], "big")
        if buffered:
            assert bid == seq
        else:
            assert bid == codec.NO_BUFFER and frames.parse_tag(frame[-128:]) == (1, seq)


def test_null_controller_as_a_sink_reads_but_does_not_answer():
    factory = NullControllerFactory(answer="none")
    proto = factory.buildProtocol(None)
    transport = StringTransport()
    proto.makeConnection(transport)
    proto.dataReceived(codec.encode_hello(OFP13, 1, (OFP13,)))
    transport.clear()
    proto.dataReceived(frames.PacketInBlock(OFP13, 1, frames.build_template(), 2, nonce=1).take(0, 4))
    assert proto.packet_ins == 4 and transport.value() == b""
