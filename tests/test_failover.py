"""RFC 8456 §5.4.1: the cluster's convergence, the control-plane split, the options, and the role app's log lines,
from hand-made timelines (no sockets, no processes)."""

from types import SimpleNamespace

import pytest

from fixtures.dataplane import TrialContext
from fixtures.devices.clusters import KILL_MODES, takeovers
from fixtures.families.failover import FailoverParams, cell_id, convergence, split, too_few

A, B, C = "127.0.0.1:6653", "127.0.0.1:6654", "127.0.0.1:6655"


def _timeline(roles: dict):
    """roles: dpid -> [[controller, role], ...]"""
    def roles_of(dpid):
        return roles.get(dpid, [])

    def master_of(dpid):
        return next((c for c, r in roles.get(dpid, []) if r == "master"), None)
    return SimpleNamespace(roles_of=roles_of, master_of=master_of)


def test_an_active_standby_cluster_has_converged_with_one_master_and_the_others_slave_at_every_switch():
    ok = _timeline({1: [[A, "master"], [B, "slave"]], 2: [[B, "slave"], [A, "master"]]})
    assert convergence(ok, [1, 2], 2) == (A, None)
    early = _timeline({1: [[A, "equal"], [B, "equal"]], 2: [[A, "equal"], [B, "equal"]]})
    master, why = convergence(early, [1, 2], 2)
    assert master is None and "switch 1 has roles" in why          # all EQUAL is not converged for active/standby
    assert convergence(early, [1, 2], 2, standby=False) == (None, None)
    half = _timeline({1: [[A, "master"]], 2: [[A, "master"], [B, "slave"]]})
    assert convergence(half, [1, 2], 2)[1] == "switch 1 has 1 of 2 controller connections"
    split_brain = _timeline({1: [[A, "master"], [B, "slave"]], 2: [[A, "slave"], [B, "master"]]})
    assert "different masters" in convergence(split_brain, [1, 2], 2)[1]
    two = _timeline({1: [[A, "master"], [B, "master"], [C, "slave"]]})
    assert "switch 1 has roles" in convergence(two, [1], 3)[1]


def test_the_control_plane_split_reads_the_switches_timelines_after_the_kill():
    ms = 1_000_000
    kill = 100 * ms
    events = {
        1: [{"t_ns": 90 * ms, "event": "lost", "controller": B, "kind": "closed"},          # before the kill
            {"t_ns": 104 * ms, "event": "lost", "controller": A, "kind": "reset"},
            {"t_ns": 112 * ms, "event": "role_request", "controller": B, "role": "master", "outcome": "master"},
            {"t_ns": 115 * ms, "event": "first_flow_mod", "controller": B}],
        2: [{"t_ns": 105 * ms, "event": "lost", "controller": A, "kind": "closed"},
            {"t_ns": 113 * ms, "event": "role_request", "controller": B, "role": "master", "outcome": "stale"},
            {"t_ns": 114 * ms, "event": "role_request", "controller": B, "role": "master", "outcome": "master"}],
    }
    s = split(events, kill, A)
    assert s == {"loss_seen_ms": 4.0, "loss_seen_as": "closed, reset", "role_request_ms": 14.0,
                 "first_flow_mod_ms": 15.0, "first_lldp_ms": None, "new_master": B}
    events[2] = events[2][:2]                # switch 2 never taken over: no "at every switch" figure
    assert split(events, kill, A)["role_request_ms"] is None


def test_options_cells_and_the_switches_keep_alive():
    p = FailoverParams(sizes=(2, 3), kills=("sigkill", "sigstop"))
    assert p.problems() == [] and p.cells() == [(2, "sigkill", 1000), (2, "sigstop", 1000), (3, "sigkill", 1000),
                                                (3, "sigstop", 1000)]
    assert cell_id(3, "sigstop", 2000) == "3nodes-sigstop-ka2000ms"
    series = FailoverParams(kills=("sigstop",), keepalives=(1000, 2000, 4000))
    assert series.problems() == [] and series.cells() == [(2, "sigstop", 1000), (2, "sigstop", 2000),
                                                          (2, "sigstop", 4000)]
    f = FailoverParams.fabric(500)
    assert (f.echo_interval, f.echo_timeout, f.reconnect, f.table_miss) == (0.5, 1.5, True, "controller")
    assert "probes at 1000 ms at least" in FailoverParams(cluster="ryu-ha", keepalives=(500, 1000)).problems()[0]
    assert FailoverParams(cluster="faucet-pair", keepalives=(500,)).problems() == []    # the switches' echo only
    bad = FailoverParams(sizes=(8,), rate=1e6, topology="ring:1x").problems()
    assert any("--cluster-nodes must be 1..7" in b for b in bad) and any("new source addresses" in b for b in bad)
    assert any(b.startswith("--failover-topology") for b in bad)
    assert set(KILL_MODES) == {"sigkill", "sigterm", "sigstop"}


def test_without_failover_cluster_the_controller_under_test_names_its_own_cluster_or_none():
    p = FailoverParams()
    assert p.for_controller("ryu").cluster == "ryu-ha" and p.for_controller("faucet").cluster == "faucet-pair"
    assert p.for_controller("osken").cluster is None and p.for_controller("external").cluster is None
    assert FailoverParams(cluster="ryu-ha").for_controller("osken").cluster == "ryu-ha"     # as the user said
    why = FailoverParams.no_cluster_reason("osken")
    assert "none of osken" in why and "--failover-cluster" in why


def test_the_role_apps_log_gives_each_takeover_with_its_lock_claim():
    log = ("bmwg-ha ryu-ha-1: waiting for lock x at tcp:1 t=5\n"
           "bmwg-ha ryu-ha-1: holds lock; claiming epoch 1 t=10\n"
           "bmwg-ha ryu-ha-1: master epoch=1 t=15\n"
           "bmwg-ha ryu-ha-1: slave (lost the lock) t=40\n"
           "bmwg-ha ryu-ha-1: master epoch=3 t=60\n")
    got = takeovers(log)
    assert [(t.member, t.epoch, t.t_claim_ns, t.t_master_ns) for t in got] == [("ryu-ha-1", 1, 10, 15),
                                                                                 ("ryu-ha-1", 3, None, 60)]


def test_an_external_cluster_is_named_by_its_members_and_brought_down_by_the_users_templates():
    import pytest

    from fixtures.devices.clusters import parse_external, template_problem

    assert parse_external("external:10.0.0.1:6653,ctl-b:6633") == (("10.0.0.1", 6653), ("ctl-b", 6633))
    for bad, why in (("external:a:1", "2 or more"), ("external:a:1,a:1", "listed twice"),
                     ("external:a:x,b:2", "HOST:PORT")):
        with pytest.raises(ValueError, match=why):
            parse_external(bad)
    assert template_problem("--kill-command", "ssh {host} kill -{signal} $(pgrep -f onos-{index})") is None
    assert "{signum}" in template_problem("--kill-command", "kill {pid}")
    p = FailoverParams(cluster="external:h:1,h:2,h:3", kill_command="kill -{signal} {port}", kills=("sigstop",))
    assert p.problems() == [] and p.cells() == [(3, "sigstop", 1000)]
    assert "needs --kill-command" in FailoverParams(cluster="external:h:1,h:2").problems()[0]
    assert "ryu-ha is brought down and back by the suite" in FailoverParams(kill_command="x").problems()[0]


def test_either_pattern_converges_when_the_mode_is_not_known_but_not_a_mix():
    both_equal = _timeline({1: [[A, "equal"], [B, "equal"]]})
    standby = _timeline({1: [[A, "master"], [B, "slave"]]})
    mixed = _timeline({1: [[A, "master"], [B, "equal"]]})
    assert convergence(both_equal, [1], 2, None) == (None, None)
    assert convergence(standby, [1], 2, None) == (A, None)
    assert "switch 1 has roles" in convergence(mixed, [1], 2, None)[1]


def test_a_cluster_electing_an_owner_per_switch_converges_with_different_masters_and_names_the_first_switchs():
    owners = _timeline({1: [[A, "slave"], [B, "master"], [C, "slave"]], 2: [[A, "master"], [B, "slave"], [C, "slave"]]})
    assert "different masters" in convergence(owners, [1, 2], 3)[1]
    assert convergence(owners, [1, 2], 3, one_master=False) == (B, None)
    assert convergence(owners, [2, 1], 3, one_master=False) == (A, None)
    half = _timeline({1: [[A, "slave"], [B, "master"]], 2: [[A, "master"], [B, "slave"], [C, "slave"]]})
    assert convergence(half, [1, 2], 3, one_master=False)[1] == "switch 1 has 2 of 3 controller connections"


def test_the_split_counts_the_takeover_of_the_switches_the_killed_member_owned_only():
    ms = 1_000_000
    events = {1: [{"t_ns": 130 * ms, "event": "role_request", "controller": C, "role": "master", "outcome": "master"}],
              2: []}                   # switch 2 was A's: B killed, nothing to take over there
    assert split(events, 100 * ms, B)["role_request_ms"] is None          # every switch: 2 never taken over
    s = split(events, 100 * ms, B, owned={1})
    assert s["role_request_ms"] == 30.0 and s["new_master"] == C


def test_odl_cluster_is_the_odl_controllers_cluster_with_three_members_by_default():
    p = FailoverParams().for_controller("odl")
    assert p.cluster == "odl-cluster" and p.problems() == [] and p.cells() == [(3, "sigkill", 1000)]
    assert FailoverParams(cluster="ryu-ha").cells() == [(2, "sigkill", 1000)]
    # --cluster-nodes is shared with the scaling point's sweep (1: the controller alone): a size §5.4.1 cannot
    # measure skips its cell, saying why
    assert FailoverParams(cluster="odl-cluster", sizes=(1, 2, 3)).problems() == []
    assert "at least 3 members of odl-cluster" in too_few("odl-cluster", 2) and "majority" in too_few("odl-cluster", 2)
    assert "at least 2 members of ryu-ha" in too_few("ryu-ha", 1) and too_few("ryu-ha", 2) == ""


def test_a_route_write_the_controller_asks_to_retry_is_retried_within_td_and_a_refusal_is_not():
    from types import SimpleNamespace as NS

    from emulator import testports as tpt
    from fixtures.dataplane import flow_fields
    from fixtures.devices.northbound import NorthboundError
    from fixtures.families.failover import FailoverTrial, retriable
    from fixtures.harness import TrialFailed
    from fixtures.http import Unreachable

    busy = NorthboundError("odl flow northbound: PUT /x answered HTTP 500 Internal Server Error: Transaction failed")
    assert retriable(busy) and retriable(Unreachable("timed out"))
    assert not retriable(NorthboundError("odl flow northbound: PUT /x answered HTTP 400 Bad Request"))
    d1 = tpt.synthetic_flows(1, first=7)[0]
    ff = flow_fields(d1)
    fields = [["eth_dst", ff["eth_dst"], (1 << 48) - 1]]

    class Flows:
        def __init__(self, answers):
            self.answers, self.calls = list(answers), []

        def add_flow(self, dpid, src, dst, out_port, priority):
            self.calls.append((dpid, src, dst, out_port))
            answer = self.answers.pop(0) if self.answers else None
            if answer:
                raise answer

    def trial(answers, td=10.0):
        clock = [0]
        flows = Flows(answers)
        em = NS(start_trace=lambda: None,
                trace=lambda: NS(flow_mods=[[1, dpid, fields, True] for dpid, *_ in flows.calls]))
        ctx = TrialContext(em, None, NS(flow_northbound=lambda: flows, addresses=((A, 1), (B, 2))), None,
                           NS(hops=[(1, 1, 2), (2, 1, 3)], switches=[1, 2]), now_ns=lambda: clock[0],
                           sleep=lambda s: clock.__setitem__(0, clock[0] + int(s * 1e9)))
        t = FailoverTrial(ctx, FailoverParams(td=td), "sigkill", 0)
        t.route(d1)
        return t, flows
    t, flows = trial([busy, busy])
    assert t.state["route_retries"] == 2 and [c[0] for c in flows.calls] == [2, 2, 2, 1]   # TP2's switch first
    assert all(c[1] is None and c[2] == d1.dst_mac for c in flows.calls)                     # any source, to D1
    with pytest.raises(TrialFailed, match="refused the path to D1: .*HTTP 400"):
        trial([NorthboundError("odl flow northbound: PUT /x answered HTTP 400 Bad Request")])
    with pytest.raises(TrialFailed, match="refused the path to D1: .*HTTP 500"):
        trial([busy] * 10, td=1.0)


def test_a_failback_the_cluster_does_not_take_back_is_an_extras_note_and_the_measured_failover_stands(monkeypatch):
    """The failover is measured before the killed member returns: a return the cluster does not converge on, or a
    returned member that does not serve within CONVERGE_S, is said in the failback extra, not a failed trial."""
    from types import SimpleNamespace as NS

    from fixtures.devices.base import ControllerError
    from fixtures.families import failover as fo

    clock = [0]
    restored, serve = [], []

    def wait_serving(dpids, timeout):
        serve.append(timeout)
        raise ControllerError("faucet-2 does not serve switches [1, 2] after 30 s (running: [1]); last log lines:\nx")
    left_out = []
    cluster = NS(addresses=((A, 1), (B, 2)), restore=restored.append, wait_serving=wait_serving,
                 not_rejoined=left_out.append)
    ctx = TrialContext(NS(), NS(switches=[1, 2]), cluster, None, None, now_ns=lambda: clock[0],
                       sleep=lambda s: clock.__setitem__(0, clock[0] + int(s * 1e9)))
    t = fo.FailoverTrial(ctx, FailoverParams(td=10.0), "sigkill", 0)
    t.converged = lambda: False
    t.state["why"] = "switch 1 has no MASTER"
    assert t.unready("the killed member's return") == (
        "the cluster did not converge within 30 s of the killed member's return", "switch 1 has no MASTER")
    assert clock[0] >= 30e9 and serve == []
    t.converged = lambda: True
    assert t.unready("the switches' connecting") == (
        "the cluster did not serve the switches within 30 s of the switches' connecting",
        "faucet-2 does not serve switches [1, 2] after 30 s (running: [1]); last log lines:\nx")
    assert serve == [fo.CONVERGE_S]

    monkeypatch.setattr(fo, "direction", lambda *a: {"resumed": True})
    t.rx_failover, t.t_kill, t.before, t.sent_failover = {"missing": 4}, 0, 0, 100
    t.killed_index = 1
    t.received = lambda: (500, {"unique": 490})
    assert t.fail_back() == {"failback_ms": None, "failback_loss": 6,
                             "failback_note": "the cluster did not serve the switches within 30 s of the killed "
                                              "member's return",
                             "failback_detail": "faucet-2 does not serve switches [1, 2] after 30 s (running: [1])"}
    assert restored == [1] and t.killed_index is None        # brought back once, not again by run()'s finally
    assert left_out == [1]                                   # and started afresh before the next trial
