"""junit.xml rendered from results.json: one testcase per benchmark (and one, run, for a stopped run).

Each testcase carries the summary, verdict and p-value as ``<properties>`` (as
pytest's ``record_property`` does).  Its result is reports/outcome.py's rule:
failed is a ``<failure>``, error a ``<error>``, skipped a ``<skipped>``, each
with the rule's reason, so the suite counts agree with pytest's.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from junit_xml import TestCase, TestSuite, to_xml_report_string

from .outcome import ERROR, FAILED, SKIPPED, history_failure, judge, stopped
from .results import is_extra, ok_values
from .summary import headline


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def benchmark_properties(bench: dict) -> dict:
    status, reason = judge(bench)
    props = {"rfc_section": bench.get("rfc_section"), "unit": bench.get("unit"), "outcome": status,
             "outcome.reason": reason}
    for key, value in (bench.get("summary") or {}).items():
        props[f"summary.{key}"] = value
    verdict = bench.get("verdict") or {}
    for key in ("result", "test", "p_value", "effect_size", "effect_measure", "alternative", "threshold"):
        if verdict.get(key) is not None:
            props[f"verdict.{key}"] = verdict[key]
    for key, value in (bench.get("findings") or {}).items():
        props[f"finding.{key}"] = value
    failed = [t for t in bench.get("trials", []) if not t.get("ok")]
    props["trials.ok"] = len(ok_values(bench))
    props["trials.failed"] = len(failed)
    if bench.get("invalid_trials"):
        props["trials.invalid_replaced"] = len(bench["invalid_trials"])
    return {k: _fmt(v) for k, v in props.items() if v is not None}


def render_junit(data: dict) -> str:
    suites, started = [], (data.get("run") or {}).get("started")
    for bench in data.get("benchmarks", []):
        name = bench["benchmark"] + (f"[{bench['variant']}]" if bench.get("variant") else "")
        family = "extension" if bench.get("extension") else "rfc8456"
        classname = "bmwg_sdn.extra" if is_extra(bench) else f"bmwg_sdn.{family}.s{bench.get('rfc_section', '')}"
        case = TestCase(name, classname=classname,
                        elapsed_sec=bench.get("duration_s"),
                        stdout=headline(bench))
        status, reason = judge(bench)
        if status == SKIPPED:
            case.add_skipped_info(reason)
        elif status == FAILED:
            case.add_failure_info(reason, _failure_text(bench))
        elif status == ERROR:
            case.add_error_info(reason, _failure_text(bench))
        cases = [case] + [_kind_case(name, row) for row in (bench.get("screen") or {}).get("kinds", [])]
        suites.append(TestSuite(f"bmwg-sdn {name}", cases, timestamp=started))
    why = stopped(data)
    if why:                 # the stop itself, which may have come before any benchmark began
        suites.append(_run_error("run", f"interrupted: {why}", "the run was stopped before it ended; the benchmarks "
                                 "recorded by then are in the other testcases", started))
    lost = history_failure(data)
    if lost:                # the run's files hold what it measured; the history store it was meant for does not
        suites.append(_run_error("history", f"not added to history {lost}", "results.json and the reports hold the "
                                 "run; add it later with python -m reports history add", started))
    xml = to_xml_report_string(suites, prettyprint=False)
    return _add_case_properties(xml, data)


def _run_error(name: str, message: str, text: str, started) -> TestSuite:
    """A suite of one testcase in error for something that befell the whole run rather than one benchmark."""
    case = TestCase(name, classname="bmwg_sdn.run")
    case.add_error_info(message, text)
    return TestSuite(f"bmwg-sdn {name}", [case], timestamp=started)


def _kind_case(name: str, row: dict) -> TestCase:
    """One testcase per kind of the robustness screen: failed unless its outcome passes, skipped when it was
    not screened or is a listed known finding."""
    case = TestCase(f"{name}[{row['kind']}]", classname=f"bmwg_sdn.malformed.{row.get('class', '')}",
                    stdout=f"{row['outcome']}: {row.get('detail', '')}")
    text = f"{row['outcome']}: {row.get('detail', '')}"
    if row.get("pass") is None:
        case.add_skipped_info(f"not screened: {row.get('detail', '')}")
    elif not row["pass"]:
        replay = f"bytes (hex): {row.get('bytes_hex', '')}\nreplay: {row.get('replay', '')}"
        if row.get("known"):
            case.add_skipped_info(f"known finding ({row['known']}): {text}")
        else:
            case.add_failure_info(text, replay)
    return case


def kind_properties(row: dict) -> dict:
    props = {"outcome": row.get("outcome"), "runs": " ".join(row.get("runs", [])), "reply": row.get("reply"),
             "passes_on": "/".join(row.get("passes_on", [])),
             "sentinel_p99_before_ms": row.get("sentinel_p99_before_ms"),
             "sentinel_p99_after_ms": row.get("sentinel_p99_after_ms"),
             "fresh_handshake_ms": row.get("fresh_handshake_ms"), "known_finding": row.get("known")}
    return {k: _fmt(v) for k, v in props.items() if v is not None}


def _failure_text(bench: dict) -> str:
    lines = [f"trial {t.get('index')}: {t.get('reason', 'failed')}" for t in bench.get("trials", []) if not t.get("ok")]
    return "\n".join(lines) or headline(bench)


def _add_case_properties(xml: str, data: dict) -> str:
    root = ET.fromstring(xml)
    root.set("skipped", str(sum(int(suite.get("skipped", 0)) for suite in root.iter("testsuite"))))
    for suite, bench in zip(root.iter("testsuite"), data.get("benchmarks", [])):
        rows = (bench.get("screen") or {}).get("kinds", [])
        for case, props_of in zip(suite.findall("testcase"), [benchmark_properties(bench)]
                                  + [kind_properties(r) for r in rows]):
            props = ET.Element("properties")
            for key, value in props_of.items():
                ET.SubElement(props, "property", name=key, value=value)
            case.insert(0, props)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
