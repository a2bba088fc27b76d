"""Headline lines for the terminal: one a benchmark."""

from __future__ import annotations


def headline_lines(data: dict) -> list[str]:
    return [headline(bench) for bench in data.get("benchmarks", [])]


def headline(bench: dict) -> str:
    """The figures, verdict and notes of one benchmark, as the terminal and JUnit show them."""
    name = bench["benchmark"] + (f"[{bench['variant']}]" if bench.get("variant") else "")
    s = bench.get("summary") or {}
    unit = bench.get("unit", "")
    trials = bench.get("trials", [])
    failed = sum(1 for t in trials if not t.get("ok"))
    if (bench.get("outcome") or {}).get("status") == "skipped":
        return f"{name}: skipped — {bench['outcome'].get('reason', '')}"
    if not s.get("n"):
        return f"{name}: no successful trial ({failed} failed)"
    text = (f"{name} (RFC 8456 §{bench.get('rfc_section')}): mean {s['mean']:.6g} {unit}, "
            f"variance {_g(s.get('variance'))}, n = {s['n']}")
    if failed:
        text += f", {failed} failed trial(s)"
    text += f" [extras: median {_g(s.get('median'))}, min {_g(s.get('min'))}, max {_g(s.get('max'))}, " \
            f"95% CI {_g(s.get('ci95_low'))}..{_g(s.get('ci95_high'))}]"
    v = bench.get("verdict")
    if v:
        p = v.get("p_value")
        text += f"\n    verdict {v['result']} by {v['test']}" + (f", p = {p:.3g}" if p is not None else "")
        if v.get("effect_size") is not None:
            text += f", effect {v['effect_size']:.3g} ({v.get('effect_measure')})"
        if v.get("note"):
            text += f" — {v['note']}"
    else:
        text += "\n    no verdict (give --profile or --baseline)"
    for note in bench.get("notes", []):
        text += f"\n    note: {note}"
    return text


def _g(value) -> str:
    return "—" if value is None else f"{value:.6g}"
