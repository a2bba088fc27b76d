"""The RFC 8456 report (Markdown), rendered from results.json.

Layout: the §4.8 global template (test configuration, controller settings,
emulator capabilities), then per benchmark its definition, measurement point,
parameters, the per-trial table ending in the RFC's average and variance rows,
labelled non-RFC extras, the verdict and the controller's resource use.
"""

from __future__ import annotations

from .results import ok_values

EXTRA_KEYS = ("median", "stdev", "min", "max", "ci95_low", "ci95_high")


def _v(value, digits: int = 6) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_v(v)}" for k, v in value.items())
    return str(value)


def _table(rows, header=("Parameter", "Value")) -> list:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(_v(c) for c in row) + " |" for row in rows]
    return out + [""]


def render_markdown(data: dict) -> str:
    run = data.get("run") or {}
    ctl = run.get("controller") or {}
    host = run.get("host") or {}
    emu = run.get("emulator") or {}
    lines = ["# RFC 8456 benchmark report — bmwg-sdn", "",
             f"Run started {run.get('started', '—')}; rendered from `results.json` "
             f"(schema {data.get('schema_version', '—')}).", "",
             "## Test configuration parameters (RFC 8456 §4.8)", ""]
    lines += _table([
        ("Controller name and version", f"{ctl.get('name', '—')} {ctl.get('version', '')}".strip()),
        ("Controller deployment", ctl.get("mode")),
        ("Northbound protocols and versions", run.get("northbound") or _from_benchmarks(data, "northbound",
                                                                                         "not used")),
        ("Southbound protocols and versions", f"OpenFlow {run.get('openflow', '—')}"),
        ("Controller redundancy mode", ctl.get("redundancy", "standalone")),
        ("Connection setup", run.get("connection_setup", "unencrypted")),
        ("Network device type", f"emulated (bmwg-sdn emulator {emu.get('version', '—')})"),
        ("Number of nodes", "per benchmark, below"),
        ("Number of links", "per benchmark, below"),
        ("Data-plane test traffic type", run.get("traffic") or _from_benchmarks(data, "data_plane_traffic",
                                                                                 "per benchmark, below")),
        ("Controller system configuration",
         f"{host.get('cpus', '—')} CPUs ({host.get('cpu_model', '—')}), {_v(host.get('memory_gib'))} GiB, "
         f"{host.get('os', '—')}; controller and emulator share this host over loopback"),
        ("Reference test setup", run.get("reference_setup", "RFC 8456 Section 3.1 (standalone)")),
    ])
    lines += ["## Controller settings parameters", ""]
    lines += _table([
        ("Topology rediscovery timeout", ctl.get("rediscovery_timeout") or _from_benchmarks(
            data, "controller_rediscovery", "controller default", fmt=_rediscovery)),
        ("Controller redundancy mode", ctl.get("redundancy", "standalone")),
        ("Controller state persistence", ctl.get("persistence", "—")),
    ])
    lines += ["## Test emulator capabilities", ""]
    lines += _table([
        ("Maximum number of network devices emulated", emu.get("max_devices", "see benchmark notes")),
        ("Control message processing time", emu.get("processing_time") or _emulator_exchange_time(data)),
        ("Measurement point", emu.get("measurement_point", "emulator socket write/read, monotonic ns clock")),
    ])
    for bench in data.get("benchmarks", []):
        lines += render_benchmark(bench)
    lines += render_series(data.get("benchmarks", []))
    return "\n".join(lines)


def _rediscovery(value) -> str:
    if isinstance(value, (int, float)):
        return f"LLDP re-sent every {value:g} s per port (topology benchmarks)"
    return str(value)


def _from_benchmarks(data: dict, key: str, default: str, fmt=str) -> str:
    """A run-wide field filled from the benchmarks' parameters, where they state it."""
    seen = dict.fromkeys(fmt(b["parameters"][key]) for b in data.get("benchmarks", [])
                         if (b.get("parameters") or {}).get(key) is not None)
    return "; ".join(seen) if seen else default


def _emulator_exchange_time(data: dict) -> str:
    """The emulator's own PACKET_IN round trip against the null controller, if a benchmark
    in this run measured it (§5.1.2's floor)."""
    for bench in data.get("benchmarks", []):
        floor = bench.get("emulator_ceiling") or {}
        if floor.get("apt_ms") is not None:
            return (f"{_v(floor['apt_ms'])} ms per PACKET_IN exchange (median {_v(floor.get('latency_median_ms'))} ms,"
                    f" {floor.get('mode', 'serial')}, {floor.get('switches')} switches) against the null controller")
    return "not measured in this run"


def render_series(benchmarks: list) -> list:
    """The RFC's graphs as tables: X = the varied parameter, Y = each benchmark's average."""
    groups: dict = {}
    for b in benchmarks:
        x = b.get("series_x")
        if x and (b.get("summary") or {}).get("n"):
            groups.setdefault((b["benchmark"], x["name"]), []).append((x["value"], b))
    lines = []
    for (name, xname), points in groups.items():
        if len(points) < 2:
            continue
        unit = points[0][1].get("unit", "")
        lines += [f"## Series: {points[0][1].get('title', name)}, X = {xname}", ""]
        lines += _table([(x, b["summary"]["mean"], b["summary"].get("variance"), b["summary"]["n"])
                         for x, b in sorted(points, key=lambda p: p[0])],
                        header=(f"X = {xname}", f"Average ({unit})", "Variance", "n"))
    return lines


def render_benchmark(bench: dict) -> list:
    unit = bench.get("unit", "")
    variant = f" ({bench['variant']})" if bench.get("variant") else ""
    lines = [f"## {bench.get('title', bench['benchmark'])}{variant} — RFC 8456 §{bench.get('rfc_section', '?')}", ""]
    if bench.get("definition"):
        lines += [f"**Definition.** {bench['definition']}", ""]
    if bench.get("measurement_point"):
        lines += [f"**Measurement point.** {bench['measurement_point']}", ""]
    outcome = bench.get("outcome") or {}
    if outcome.get("status") == "skipped":
        lines += [f"**Not run:** {outcome.get('reason', '')}", ""]
    lines += ["### Parameters", ""]
    lines += _table(sorted((bench.get("parameters") or {}).items()))
    symbol = bench.get("symbol", "Value")
    lines += ["### Per-trial results", ""]
    rows = []
    columns = bench.get("trial_columns") or []
    for t in bench.get("trials", []):
        value = f"{_v(t.get('value'))}" if t.get("ok") else "—"
        extra = tuple((t.get("details") or {}).get(key) for key, _label in columns)
        rows.append((t.get("index"), value) + extra +
                    ("ok" if t.get("ok") else "failed", t.get("note") or t.get("reason", "")))
    summary = bench.get("summary") or {}
    blank = ("",) * len(columns)
    rows.append(("Average", _v(summary.get("mean"))) + blank + (f"n = {summary.get('n', 0)}",
                                                                 "RFC: sum of values / trials"))
    rows.append(("Variance", _v(summary.get("variance"))) + blank + ("", "RFC: divisor n − 1"))
    lines += _table(rows, header=("Trial", f"{symbol} ({unit})") + tuple(label for _key, label in columns)
                    + ("Outcome", "Notes"))
    lines += ["### Extras (not required by RFC 8456)", ""]
    lines += _table([(k, summary.get(k)) for k in EXTRA_KEYS], header=("Statistic", f"Value ({unit})"))
    verdict = bench.get("verdict")
    lines += ["### Verdict", ""]
    if verdict:
        lines += _table([(k, verdict[k]) for k in ("result", "test", "alternative", "p_value", "effect_size",
                                                   "effect_measure", "alpha", "threshold", "bound", "baseline",
                                                   "note", "rule") if k in verdict])
    else:
        lines += ["No threshold (profile) or baseline was given, so no verdict was computed.", ""]
    lines += render_details(bench)
    resources = [(t.get("index"), (t.get("controller_resources") or {}).get("cpu_percent_mean"),
                  (t.get("controller_resources") or {}).get("cpu_percent_max"),
                  _mib((t.get("controller_resources") or {}).get("rss_bytes_max")))
                 for t in bench.get("trials", []) if t.get("controller_resources")]
    if resources:
        lines += ["### Controller resource use per trial (extras)", ""]
        lines += _table(resources, header=("Trial", "CPU % mean", "CPU % max", "RSS max (MiB)"))
    if bench.get("notes"):
        lines += ["### Notes", ""] + [f"- {n}" for n in bench["notes"]] + [""]
    if not ok_values(bench) and bench.get("trials"):
        lines += ["**No successful trial:** the benchmark has no value.", ""]
    return lines


SEARCH_COLUMNS = ("trial", "mode", "offered_rate", "apr", "loss_ratio", "late", "latency_median_ms", "benchmark")


def render_details(bench: dict) -> list:
    """Benchmark-specific sections: the preflight, the emulator's own ceiling, the §5.1.3 search table."""
    lines = []
    x = bench.get("series_x")
    if x:
        lines += [f"Series point: X = {x['name']} = {x['value']}.", ""]
    if bench.get("preflight"):
        lines += ["### Preflight", ""] + _table(sorted(bench["preflight"].items()))
    ceiling = bench.get("emulator_ceiling")
    if ceiling:
        lines += ["### Emulator ceiling measured in this run (against the null controller)", ""]
        lines += _table(sorted(ceiling.items()))
    searches = [t for t in bench.get("trials", []) if t.get("ok") and (t.get("details") or {}).get("search")]
    if searches:
        lines += ["### Rate search per repetition (RFC 8456 §5.1.3 reporting table)", "",
                  "Offered rate = Ntx/Td as achieved; APR = responses received within Td per second; loss ratio = "
                  "requests without a response within the response timeout / Ntx.", ""]
        for t in searches:
            lines += [f"Repetition {t['index']}:", ""]
            lines += _table([tuple(row.get(c) for c in SEARCH_COLUMNS) for row in t["details"]["search"]],
                            header=("Trial", "Mode", "Offered rate (/s)", "APR (/s)", "Loss ratio", "Late",
                                    "Median latency (ms)", "Benchmark at this trial"))
    return lines


def _mib(value):
    return None if value is None else value / 2**20

