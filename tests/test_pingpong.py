"""The machine's own loopback limit (emulator/pingpong.py, emulator/_pingpong.c): the compiled ping-pong that
``selfbench async`` gives the emulator's floor against."""

import socket

import pytest

from emulator import pingpong

needs_build = pytest.mark.skipif(pingpong.native is None, reason=pingpong.WHY_NOT or "")


@needs_build
def test_bad_sizes_and_counts_are_refused_before_the_socket_is_touched():
    with pytest.raises(ValueError, match="message sizes must be 1..65536 bytes"):
        pingpong.native.ping(-1, 0, 10, 1)
    with pytest.raises(ValueError, match="message sizes"):
        pingpong.native.echo(-1, 10, 65537)
    with pytest.raises(ValueError, match="count must be"):
        pingpong.native.ping(-1, 10, 10, 0)


@needs_build
@pytest.mark.component
def test_the_ping_pong_times_every_exchange_between_two_processes():
    got = pingpong.measure(90, 106, count=500, warmup=50)
    assert got["exchanges"] == 500 and (got["request_bytes"], got["answer_bytes"]) == (90, 106)
    assert 0 < got["median_us"] <= got["p99_us"] and got["median_us"] < 10_000


@needs_build
@pytest.mark.component
def test_an_echo_side_that_closes_or_answers_short_is_an_error_not_a_figure():
    ours, theirs = socket.socketpair()
    with ours:
        theirs.close()
        with pytest.raises((ConnectionError, OSError)):
            pingpong.native.ping(ours.fileno(), 8, 8, 3)
    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(b"x" * 12)          # one answer and a half, then nothing more: the peer closes
        theirs.shutdown(socket.SHUT_WR)
        with pytest.raises(ConnectionError, match="closed after 1 of 3 exchanges"):
            pingpong.native.ping(ours.fileno(), 8, 8, 3)


def test_selfbench_sets_the_floor_beside_the_ping_pong_each_time_and_says_when_it_could_not(monkeypatch, tmp_path):
    from fixtures.selfbench import floor_against_pingpong
    serials = iter([{"nrx": 100, "apt_ms": 0.05, "latency_median_ms": 0.048, "latency_p99_ms": 0.1},
                    {"nrx": 100, "apt_ms": 0.06, "latency_median_ms": 0.060, "latency_p99_ms": 0.1},
                    {"nrx": 100, "apt_ms": 0.05, "latency_median_ms": 0.040, "latency_p99_ms": 0.1}])
    pongs = iter([{"median_us": 12.0, "p99_us": 20.0}, pingpong.PingPongError("not built"),
                  {"median_us": 10.0, "p99_us": 20.0}])

    def measure(request, answer, log):
        got = next(pongs)
        if isinstance(got, Exception):
            raise got
        return got
    monkeypatch.setattr(pingpong, "measure", measure)
    busy = iter([{"latency_median_ms": 0.024, "latency_p99_ms": 0.05}] * 3)
    floor = floor_against_pingpong(lambda: next(serials), (90, 106), 3, tmp_path / "pp.log",
                                   busy_poll=lambda: next(busy))
    assert [r.get("floor_to_pingpong") for r in floor["rounds"]] == [4.0, None, 4.0]
    assert [r.get("busy_poll_floor_to_pingpong") for r in floor["rounds"]] == [2.0, None, 2.4]
    assert floor["rounds"][1]["pingpong"] == "not measured: not built" and floor["floor_to_pingpong_median"] == 4.0
    assert floor["busy_poll_floor_to_pingpong_median"] == 2.2 and floor["rounds"][1]["busy_poll_rtt_median_us"] == 24
    assert pingpong.exchange_sizes(0x04, 64)[0] > pingpong.exchange_sizes(0x01, 64)[0] > 64


@needs_build
@pytest.mark.component
def test_an_echo_side_that_stops_answering_ends_the_wait_at_the_timeout():
    import time
    ours, theirs = socket.socketpair()
    with ours, theirs:
        pingpong.give_up_after(ours, 0.2)
        t0 = time.monotonic()
        with pytest.raises(BlockingIOError):
            pingpong.native.ping(ours.fileno(), 8, 8, 3)         # the request is read by no one
        assert time.monotonic() - t0 < 2
    assert pingpong.measure(90, 106, count=10, warmup=0)["exchanges"] == 10
