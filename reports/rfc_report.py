"""The RFC 8456 report (Markdown), rendered from results.json.

Layout: the run's outcome and the outcome rule, the run record (command line,
profile, controller apps and limits, CPU placement), the §4.8 global template
(test configuration, controller settings, emulator capabilities), then per
benchmark its outcome, definition, measurement point, parameters, the
per-trial table ending in the RFC's average and variance rows, labelled
non-RFC extras, the verdict and the controller's resource use; then the RFC's
series and the tables the entries declare (:mod:`reports.tables`).  A value that
is a lower bound (a cap was reached) is shown as ``≥ value``.
"""

from __future__ import annotations

import re
from typing import Optional

from .outcome import RULE, judge, run_line
from .results import is_extra, lower_bound_note, lower_bound_trials
from .summary import section_label
from .tables import render_tables, table
from .tables import v as _v

EXTRA_KEYS = ("median", "stdev", "min", "max", "ci95_low", "ci95_high", "ci95_method")
SCHEMA_1_CI = "Student t interval (schema 1 file)"


def _table(rows, header=("Parameter", "Value")) -> list:
    return table(rows, header)


def _code_block(text: str) -> list:
    """``text`` verbatim, fenced by more backticks than it holds in a row."""
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall("`+", text)), default=0))
    return [fence, text, fence, ""]


def _pictures(pics) -> list:
    return [line for path, caption in pics for line in (f"![{caption}]({path})", "")]


def render_markdown(data: dict, pictures: Optional[dict] = None) -> str:
    """The report; ``pictures`` ({"entries": {entry key: [(path, caption)]}, "series": {(benchmark, X name):
    [...]}, "note": why there are none}) are linked where they belong (reports/plots.py draws them)."""
    pictures = pictures or {}
    run = data.get("run") or {}
    ctl = run.get("controller") or {}
    host = run.get("host") or {}
    emu = run.get("emulator") or {}
    lines = ["# RFC 8456 benchmark report — bmwg-sdn", "",
             f"Run started {run.get('started', '—')}; rendered from `results.json` "
             f"(schema {data.get('schema_version', '—')}).", "",
             f"**Outcome.** {_run_outcome(data)}", "",
             f"**Outcome rule.** {RULE}", ""]
    lines += render_summary_table(data.get("benchmarks", []))
    if pictures.get("note"):
        lines += [f"**Plots.** {pictures['note']}", ""]
    lines += render_run_record(run)
    lines += ["## Test configuration parameters (RFC 8456 §4.8)", ""]
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
        key = f"{bench['benchmark']}[{bench['variant']}]" if bench.get("variant") else bench["benchmark"]
        lines += render_benchmark(bench, data.get("schema_version"), (pictures.get("entries") or {}).get(key, ()))
    lines += render_series(data.get("benchmarks", []), pictures.get("series") or {})
    lines += render_tables(data.get("benchmarks", []))
    return "\n".join(lines)


def render_summary_table(benchmarks: list) -> list:
    """The run at a glance, before the sections: per benchmark its figure (the mean), the bound it was judged
    against, the verdict with its p-value, the outcome (with the reason when it did not pass) and its wall time."""
    if not benchmarks:
        return []
    rows = []
    for b in benchmarks:
        name = b.get("title", b["benchmark"]) + (f" ({b['variant']})" if b.get("variant") else "")
        status, reason = judge(b)
        s, v = b.get("summary") or {}, b.get("verdict") or {}
        figure = "—"
        if s.get("n"):
            figure = ("≥ " if lower_bound_trials(b) else "") + f"{_v(s.get('mean'))} {b.get('unit', '')}".strip()
        bound = (f"{'≤' if v.get('bound') == 'max' else '≥'} {_v(v['threshold'])}" if v.get("threshold") is not None
                 else f"{(v.get('baseline') or {}).get('source', 'baseline')}" if v.get("baseline") else "—")
        outcome = status.upper() + (f": {reason}" if status != "passed" and reason else "")
        wall = f"{b['duration_s']:.0f} s" if isinstance(b.get("duration_s"), (int, float)) else "—"
        if b.get("derived_from") and wall != "—":
            wall += f", the trials of {b['derived_from'].removeprefix('test_').replace('_', ' ')}"
        rows.append((name, section_label(b), figure, bound, v.get("result", "no verdict"), _v(v.get("p_value")),
                     outcome, wall))
    # a benchmark computed from another's trials (§5.1.3's loss-free rate) took no time of its own
    total = sum(b["duration_s"] for b in benchmarks
                if isinstance(b.get("duration_s"), (int, float)) and not b.get("derived_from"))
    rows.append(("Total", "", "", "", "", "", "", f"{total:.0f} s"))
    return ["## Summary", ""] + _table(rows, header=("Benchmark", "Section", "Figure (mean)", "Bound", "Verdict",
                                                      "p-value", "Outcome", "Wall time"))


def _run_outcome(data: dict) -> str:
    line = run_line(data)  # "run FAILED, 5 benchmarks: 3 passed, ..."
    return line[len("run "):]


def render_run_record(run: dict) -> list:
    """What was run, exactly: command line, profile, controller apps and limits, CPU placement, emulator waits."""
    ctl = run.get("controller") or {}
    emu = run.get("emulator") or {}
    lines = ["## Run record", "", "Command line:", ""]
    lines += _code_block(run["command"]) if run.get("command") else ["—", ""]
    apps = ctl.get("apps")
    lines += _table([
        ("Profile", run.get("profile")),
        ("Baseline", run.get("baseline")),
        ("Controller", ctl.get("name")),
        ("Controller version", ctl.get("version")),
        ("Controller apps", ", ".join(map(str, apps)) if isinstance(apps, list) else apps),
        ("Controller open-file limit", _nofile(ctl)),
        ("CPU placement", _affinity(run.get("cpu_affinity"))),
        ("Emulator waits", _busy_poll(emu.get("busy_poll"))),
        ("Emulator PACKET_IN path", emu.get("packet_in_path", "python (not recorded)")),
    ] + ([("OVN cluster (★ extra)", _ovn_cluster(run["ovn_cluster"]))] if run.get("ovn_cluster") else []),
        header=("Item", "Value"))
    return lines


def _ovn_cluster(info) -> str:
    if not isinstance(info, dict):
        return str(info)
    return f"{info.get('redundancy', '—')}, ovsdb-server {info.get('version', '—')}, clients at {info.get('address')}"


def _nofile(ctl: dict):
    limit = ctl.get("nofile_limit")
    if limit is None:
        if ctl.get("mode") != "external":
            return None
        if ctl.get("start_command"):    # started, but no process of its group was found listening
            return "not known (no process of the start command's group was found listening)"
        return "not known (external: give --start-command or --controller-pid)"
    if isinstance(limit, dict):
        return f"soft {_v(limit.get('soft'))} / hard {_v(limit.get('hard'))}"
    if isinstance(limit, (list, tuple)) and len(limit) == 2:
        return f"soft {_v(limit[0])} / hard {_v(limit[1])}"
    return limit


def _affinity(value):
    if isinstance(value, dict):
        return "; ".join(f"{who}: CPU {', '.join(map(str, cpus))}" if isinstance(cpus, list) else f"{who}: {cpus}"
                         for who, cpus in value.items()) or None
    return value


def _busy_poll(value):
    if value is None:
        return None
    return "busy-polling (opt-in)" if value else "blocking waits (default)"


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


def render_series(benchmarks: list, pictures: Optional[dict] = None) -> list:
    """The RFC's graphs as tables: X = the varied parameter, Y = each benchmark's average."""
    groups: dict = {}
    for b in benchmarks:
        x = b.get("series_x")
        if x and (b.get("summary") or {}).get("n"):
            groups.setdefault((b["benchmark"], b.get("title"), x["name"]), []).append((x["value"], b))
    lines = []
    for (name, _title, xname), points in groups.items():
        if len(points) < 2:
            continue
        unit = points[0][1].get("unit", "")
        lines += [f"## Series: {points[0][1].get('title', name)}, X = {xname}", ""]
        lines += _table([(x, b["summary"]["mean"], b["summary"].get("variance"), b["summary"]["n"])
                         for x, b in sorted(points, key=lambda p: p[0])],
                        header=(f"X = {xname}", f"Average ({unit})", "Variance", "n"))
        lines += _pictures((pictures or {}).get((name, xname), ()))
    return lines


def render_benchmark(bench: dict, schema_version=None, pictures=()) -> list:
    unit = bench.get("unit", "")
    variant = f" ({bench['variant']})" if bench.get("variant") else ""
    status, reason = judge(bench)
    lines = [f"## {bench.get('title', bench['benchmark'])}{variant} — {section_label(bench)}", "",
             f"Outcome: {status.upper()}" + (f" — {reason}" if reason else ""), ""]
    if bench.get("definition"):
        lines += [f"**Definition.** {bench['definition']}", ""]
    if bench.get("measurement_point"):
        lines += [f"**Measurement point.** {bench['measurement_point']}", ""]
    lines += ["### Parameters", ""]
    lines += _table(sorted((bench.get("parameters") or {}).items()))
    symbol = bench.get("symbol", "Value")
    lines += ["### Per-trial results", ""]
    rows = []
    columns = bench.get("trial_columns") or []
    for t in bench.get("trials", []):
        value = ("≥ " if t.get("lower_bound") else "") + _v(t.get("value")) if t.get("ok") else "—"
        extra = tuple((t.get("details") or {}).get(key) for key, _label in columns)
        rows.append((t.get("index"), value) + extra +
                    ("ok" if t.get("ok") else "failed", t.get("note") or t.get("reason", "")))
    summary = bench.get("summary") or {}
    blank = ("",) * len(columns)
    capped = len(lower_bound_trials(bench))
    mean = ("≥ " if capped and summary.get("mean") is not None else "") + _v(summary.get("mean"))
    rfc = "" if is_extra(bench) else "RFC: "
    rows.append(("Average", mean) + blank + (f"n = {summary.get('n', 0)}", f"{rfc}sum of values / trials" +
                                             (f"; {lower_bound_note(capped)}" if capped else "")))
    rows.append(("Variance", _v(summary.get("variance"))) + blank + ("", f"{rfc}divisor n − 1"))
    lines += _table(rows, header=("Trial", f"{symbol} ({unit})") + tuple(label for _key, label in columns)
                    + ("Outcome", "Notes"))
    invalid = bench.get("invalid_trials") or []
    if invalid:
        lines += [f"Invalid trials run again ({len(invalid)} of at most {bench.get('max_replaced_trials', 0)}, "
                  "--max-replaced-trials): the benchmark's prerequisite did not hold, so they measured nothing and "
                  "are in no figure.", ""]
        lines += _table([(t.get("index"), t.get("reason", "")) for t in invalid], header=("Trial", "Why invalid"))
    lines += _pictures(pictures)
    lines += ["### Extras (not required by RFC 8456)", ""]
    extras = dict((k, summary.get(k)) for k in EXTRA_KEYS)
    if extras["ci95_method"] is None and extras["ci95_low"] is not None and schema_version == 1:
        extras["ci95_method"] = SCHEMA_1_CI
    lines += _table(extras.items(), header=("Statistic", f"Value ({unit})"))
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
    return lines


SEARCH_COLUMNS = ("trial", "mode", "td_s", "offered_rate", "apr", "loss_ratio", "late", "latency_median_ms",
                  "benchmark")


def render_details(bench: dict) -> list:
    """Benchmark-specific sections: the preflight, the emulator's own ceiling, the §5.1.3 search table."""
    lines = []
    x = bench.get("series_x")
    if x:
        lines += [f"Series point: X = {x['name']} = {x['value']}.", ""]
    if bench.get("findings"):
        lines += ["### Findings", ""] + _table(bench["findings"].items(), header=("Finding", "Value"))
    sustained = bench.get("sustained_capacity")
    if sustained and sustained.get("steps"):
        lines += ["### Sustained capacity search (beside RFC 8456: a fresh controller each step)", ""]
        lines += _table([(k, step["sessions"], "yes" if step["held"] else "no", step.get("kept"),
                          step.get("failure_mode") or "") for k, step in enumerate(sustained["steps"], 1)],
                        header=("Step", "Sessions", "All held", "Held after the hold", "Failure mode"))
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
                  "requests without a response within the response timeout / Ntx. The calibrated search's "
                  "calibration and probe trials only bracket: its figures come from the trials of the full Td.", ""]
        for t in searches:
            lines += [f"Repetition {t['index']}:", ""]
            lines += _table([tuple(row.get(c) for c in SEARCH_COLUMNS) for row in t["details"]["search"]],
                            header=("Trial", "Mode", "Td (s)", "Offered rate (/s)", "APR (/s)", "Loss ratio", "Late",
                                    "Median latency (ms)", "Benchmark at this trial"))
    if bench.get("screen"):
        lines += render_screen(bench["screen"])
    return lines


def render_screen(screen: dict) -> list:
    """The robustness screen: scores, the kind × outcome table, then each finding with its bytes and replay."""
    out = screen.get("outcomes") or {}
    lines = ["### Robustness screen: kind × outcome", "",
             f"{screen.get('screened', 0)} kinds screened ({screen.get('not_screened', 0)} not screened): "
             f"robustness score {_v(screen.get('robustness_score'))} % (pass), strict score "
             f"{_v(screen.get('strict_score'))} % (CONFORMANT).  Outcomes: "
             + ", ".join(f"{k} {v}" for k, v in out.items() if v) + ".", "",
             "A kind's outcome is its worst over the passes (Runs lists each); Pass: the outcome is one the kind "
             "allows (Passes on).  Reply: what the probe session received (ERROR type/code, or the answer that acted "
             "on the kind); sentinel p99: the innocent session's round trip before and after the kind.", ""]
    rows = []
    for r in screen.get("kinds", []):
        verdict = "—" if r.get("pass") is None else "yes" if r["pass"] else ("known" if r.get("known") else "**NO**")
        rows.append((r["kind"], r["title"] + (" (H)" if r.get("hazard") else ""), r["outcome"],
                     " ".join(r.get("runs", [])) + (" (flaky)" if r.get("flaky") else ""), verdict,
                     "/".join(r.get("passes_on", [])), r.get("reply"), _v(r.get("sentinel_p99_before_ms"), 3),
                     _v(r.get("sentinel_p99_after_ms"), 3), _v(r.get("fresh_handshake_ms"), 3), r.get("detail")))
    lines += _table(rows, header=("Kind", "Message", "Outcome", "Runs", "Pass", "Passes on", "Reply",
                                  "Sentinel p99 before (ms)", "after (ms)", "Fresh handshake (ms)", "Detail"))
    findings = [r for r in screen.get("kinds", []) if r.get("pass") is False]
    if findings:
        lines += ["### Findings", ""]
        for r in findings:
            known = f" Known finding: {r['known']}." if r.get("known") else ""
            lines += [f"**{r['kind']} {r['outcome']}** — {r['title']}. {r['detail']}.{known} "
                      f"Ideal: {r.get('ideal', '—')}.", "",
                      f"Bytes sent (hex): `{r.get('bytes_hex', '')}`", "", f"Replay: `{r.get('replay', '')}`", ""]
    return lines


def _mib(value):
    return None if value is None else value / 2**20

