"""Ports for the suite's listeners (fixtures/ports.py): a port handed to one listener is not handed to the next while
another is free (issue 24 §6: Ryu's REST server was given the OpenFlow port the previous trial's switches still
reconnected to).  No socket: the candidates, the bind check and the order are injected."""

import random

import pytest

from fixtures import ports


class InOrder(random.Random):
    """Candidates tried in the order given (the worst case for a random choice: the same first port every time)."""

    def shuffle(self, x):
        pass


def pool(candidates=(20001, 20002, 20003), free=lambda host, port: True):
    return ports.PortPool(lambda: candidates, free, InOrder())


def test_a_port_closed_after_its_listener_ended_is_not_handed_out_again_at_once():
    p = pool()
    first = p.take()
    # the first listener has ended and its port binds again, but its switches may still be reconnecting to it
    second = p.take()
    assert (first, second) == (20001, 20002)
    assert p.take() == 20003


def test_the_port_handed_out_longest_ago_comes_back_only_when_nothing_else_is_free():
    taken_now = {20002}
    p = pool(free=lambda host, port: port not in taken_now)
    assert [p.take() for _ in range(2)] == [20001, 20003]     # 20002 is held by something else
    assert p.take() == 20001                                  # all used: the oldest that binds
    assert p.take() == 20003
    assert list(p.handed) == [20001, 20003]


def test_a_reserved_port_counts_as_handed_out_now():
    p = pool()
    p.reserve(20001)                   # --controller-port 20001, or a member restarted on its old port
    assert p.take() == 20002
    p.take()
    assert p.take() == 20001           # the oldest again, once every other one was used


def test_no_free_port_is_said():
    p = pool(free=lambda host, port: False)
    with pytest.raises(ports.PortError, match="no free port on 127.0.0.1 among 3 unused and 0 used"):
        p.take()


def test_the_module_pool_takes_ports_below_the_ephemeral_range(monkeypatch):
    monkeypatch.setattr(ports, "POOL", pool(candidates=range(30000, 30010)))
    got = [ports.free_port() for _ in range(10)]
    assert sorted(got) == list(range(30000, 30010))
    assert ports.candidates().stop == ports.ephemeral_range()[0]
