"""Headline lines for the terminal: one a benchmark, then one for the run."""

from __future__ import annotations

from .outcome import PASSED, SKIPPED, judge, run_line
from .results import is_extra, lower_bound_note, lower_bound_trials

LOWER_BOUNDS_LISTED = 5


def headline_lines(data: dict) -> list[str]:
    return [headline(bench) for bench in data.get("benchmarks", [])] + [run_line(data)]


def section_label(bench: dict) -> str:
    """Where the benchmark stands in RFC 8456: its section, beside it for an extension, or outside it (★ extra)."""
    if is_extra(bench):
        return "★ extra, not an RFC 8456 benchmark"
    section = f"RFC 8456 §{bench.get('rfc_section', '?')}"
    return f"extension beside {section}" if bench.get("extension") else section


def headline(bench: dict) -> str:
    """The outcome, figures, verdict and notes of one benchmark, as the terminal and JUnit show them.

    A benchmark that did not pass starts with its status word and ends with the reason."""
    name = bench["benchmark"] + (f"[{bench['variant']}]" if bench.get("variant") else "")
    status, reason = judge(bench)
    if status == SKIPPED:
        return f"SKIPPED {name}: {reason}"
    prefix = "" if status == PASSED else f"{status.upper()} "
    s = bench.get("summary") or {}
    unit = bench.get("unit", "")
    trials = bench.get("trials", [])
    failed = sum(1 for t in trials if not t.get("ok"))
    where = f"{name} ({section_label(bench)})"
    if not s.get("n"):
        text = f"{prefix}{where}: no successful trial ({failed} failed)"
    else:
        capped = lower_bound_trials(bench)
        text = (f"{prefix}{where}: mean {'≥ ' if capped else ''}{s['mean']:.6g} {unit}, "
                f"variance {_g(s.get('variance'))}, n = {s['n']}")
        if failed:
            text += f", {failed} failed trial(s)"
        text += f" [extras: median {_g(s.get('median'))}, min {_g(s.get('min'))}, max {_g(s.get('max'))}, " \
                f"95% CI {_g(s.get('ci95_low'))}..{_g(s.get('ci95_high'))}]"
        if capped:
            shown = ", ".join(f"trial {t.get('index')} ≥ {t['value']:g}" for t in capped[:LOWER_BOUNDS_LISTED])
            more = ", …" if len(capped) > LOWER_BOUNDS_LISTED else ""
            text += f"\n    {lower_bound_note(len(capped))} ({shown}{more})"
        text += _verdict(bench.get("verdict"))
    found = bench.get("findings") or {}
    if found:
        text += "\n    findings: " + "; ".join(f"{k.replace('_', ' ')}: {v}" for k, v in found.items())
    for note in bench.get("notes", []):
        text += f"\n    note: {note}"
    if status != PASSED:
        text += f"\n    {status.upper()}: {reason}"
    return text


def _verdict(v) -> str:
    if not v:
        return "\n    no verdict (give --bmwg-profile or --baseline)"
    p = v.get("p_value")
    text = f"\n    verdict {v['result']} by {v['test']}" + (f", p = {p:.3g}" if p is not None else "")
    if v.get("effect_size") is not None:
        text += f", effect {v['effect_size']:.3g} ({v.get('effect_measure')})"
    if v.get("note"):
        text += f" — {v['note']}"
    return text


def _g(value) -> str:
    return "—" if value is None else f"{value:.6g}"
