"""★ OVN Northbound Provisioning: a seed extra, not an RFC 8456 benchmark.

The OpenStack study among the suite's seeds compared OVN with ML2/OVS through Rally at concurrency 8, 16 and 32.
This extra measures OVN's row of it below Neutron: logical switches and ports written to an OVN central's
northbound database by concurrent ovsdbapp clients, each timed until ovn-northd has carried it into the
southbound database (fixtures/ovn_central.py).  The device under test is the OVN central, not an OpenFlow
controller.
"""

import pytest

from fixtures.devices.ovn_central import OvnCentralError
from fixtures.families.ovn_nb import ML2_NOTE, cpu_percent, provisioning_run, rally_row
from fixtures.harness import TrialFailed, TrialOutcome

DEFINITION = (
    "Provisioning time = T1 − T0 per iteration. C clients (the concurrency), each with its own ovsdbapp "
    "connection, share the run's iterations as Rally's constant runner does. T0: a client submits one northbound "
    "transaction that creates a logical switch with its ports and increments NB_Global.nb_cfg. T1: the client's "
    "IDL sees NB_Global.sb_cfg reach the new nb_cfg, i.e. ovn-northd has written the change into the southbound "
    "database (ovn-nbctl --wait=sb). Each run starts on a fresh OVN central; its value is its median iteration; "
    "Rally's columns (min, median, 90 %, 95 %, max, avg, success, count, plus p99) pool the iterations of all runs.")
CLIENT_BOUND_PCT = 80.0    # clients' CPU (% of one core) above which the figure is marked as bounded by them
MEASUREMENT_POINT = (
    "the client's thread: time.perf_counter_ns before the transaction is queued and when its IDL's NB_Global "
    "update is delivered (ovsdbapp's connection thread notifies it); clients and central share this host's cores")


@pytest.mark.rfc8456(section="★", category="extra", title="OVN Northbound Provisioning Time", symbol="OPT",
                     unit="ms", higher_is_better=False, definition=DEFINITION, measurement_point=MEASUREMENT_POINT,
                     device="ovn_central", repetitions="ovn.runs")
def test_ovn_northbound_provisioning(benchmark_run, ovn_central, bmwg, ovn_concurrency):
    p, central, c = bmwg.ovn, ovn_central, ovn_concurrency
    missing = central.unavailable()
    if missing:
        benchmark_run.skip(missing)
    run = benchmark_run.parameters(concurrency=c, iterations_per_run=p.iterations, ports_per_switch=p.ports,
                                   iteration_timeout_s=p.iteration_timeout, runner="constant (Rally's), one "
                                   "ovsdbapp connection per client", wait="NB_Global.sb_cfg ≥ the new nb_cfg",
                                   central="ovsdb-server NB + SB and ovn-northd on 127.0.0.1, fresh for every run")
    run.series("concurrency", c)
    run.note(ML2_NOTE)
    run.columns([("median_ms", "Median (ms)"), ("p95_ms", "95 % (ms)"), ("max_ms", "Max (ms)"),
                 ("success_pct", "Success (%)"), ("per_s", "Iterations/s"), ("client_cpu_pct", "Client CPU (%)"),
                 ("central_cpu_pct", "Central CPU (%)")])
    pooled, failed_total, errors, client_cpu, central_cpu = [], 0, [], [], []

    def trial(index):
        nonlocal failed_total
        try:
            r = provisioning_run(central, c, p, tag=f"c{c}-r{index}")
        except OvnCentralError as exc:
            raise TrialFailed(str(exc)) from None
        if not r.durations:
            raise TrialFailed(f"no iteration succeeded; first error: {r.failed[0].error if r.failed else '—'}")
        row = rally_row(r.durations, len(r.failed))
        pooled.extend(r.durations)        # --ovn-runs are all measured: this extra has no warm-up
        failed_total += len(r.failed)
        errors.extend(i.error for i in r.failed)
        client_cpu.append(cpu_percent(r.client_cpu_s, r.wall_s))
        central_cpu.append(cpu_percent(sum(r.central_cpu_s.values()), r.wall_s))
        details = {"median_ms": round(row["median"], 3), "p95_ms": round(row["p95"], 3), "max_ms": round(row["max"], 3),
                   "success_pct": round(row["success_pct"], 2), "per_s": round(len(r.iterations) / r.wall_s, 1),
                   "client_cpu_pct": round(cpu_percent(r.client_cpu_s, r.wall_s), 1),
                   "central_cpu_pct": round(cpu_percent(sum(r.central_cpu_s.values()), r.wall_s), 1),
                   "central_cpu_s": {k: round(v, 3) for k, v in r.central_cpu_s.items()},
                   "rally": {k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()},
                   "commit_median_ms": round(sorted(i.commit_ms for i in r.iterations if i.ok)[len(r.durations) // 2],
                                             3),
                   "connect_s": round(r.connect_s, 3), "wall_s": round(r.wall_s, 3), "failed": len(r.failed)}
        return TrialOutcome(value=row["median"], details=details)

    try:
        run.trials(trial)
    finally:
        if pooled or failed_total:
            run.context("ovn_provisioning", {
                "concurrency": c, "rally": rally_row(pooled, failed_total),
                "client_cpu_pct": round(sum(client_cpu) / len(client_cpu), 1) if client_cpu else None,
                "central_cpu_pct": round(sum(central_cpu) / len(central_cpu), 1) if central_cpu else None,
                "ovn_version": central.version()})
    busy = sum(client_cpu) / len(client_cpu) if client_cpu else 0.0
    if busy >= CLIENT_BOUND_PCT:
        central = sum(central_cpu) / len(central_cpu)
        run.note(f"CLIENT-BOUND: the clients used {busy:.0f} % of a core (the central {central:.0f} %): every "
                 "client's IDL receives every row the others write, so the clients' work per iteration grows with the "
                 "concurrency, and one Python process runs them all; this figure includes their own cost")
    if failed_total:
        run.fail(f"{failed_total} of {len(pooled) + failed_total} iterations failed; first: {errors[0]}")
    run.finish()
