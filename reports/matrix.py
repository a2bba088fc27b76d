"""Which benchmark runs against which controller, from real runs:
``python -m reports matrix A/results.json B/results.json ... [--out FILE]``.

One column per controller (its name and version, :func:`reports.compare.base_label`; runs of the
same controller and version share a column, their entries pooled), one row per benchmark of the suite (the
benchmarks each run collected, ``run.suite``, and its entries, variants and series points, taken together).  A
cell says what the run's results.json says:

* **works**: every entry passed; the figure is given when the benchmark has one entry with a figure;
* **k of n pass**: some entries passed, the others' outcomes are footnoted;
* **skips**, **fails**, **error**: no entry passed; the reason is a footnote, the same reason one footnote;
* **not run**: the run holds no entry of that benchmark (deselected, or stopped before it).

The ★ extras (OVN clusters and centrals) measure no OpenFlow controller and have no row.

Nothing is measured here; the table is only as fresh as the runs, so it names each run's command and date.
"""

from __future__ import annotations

from .compare import base_label
from .outcome import PASSED, SKIPPED, judge, run_line
from .results import lower_bound_trials
from .summary import section_label

# Ordered by RFC section: the fifteen RFC benchmarks, then the extensions and extras the suite has.
ORDER = ("5.1.1", "5.1.2", "5.1.3", "5.1.4", "5.1.5", "5.1.6", "5.1.7", "5.1.8", "5.2.1", "5.2.2", "5.2.3",
         "5.3.1", "5.3.2", "5.4.1", "5.4.2", "★")


def section_order(bench: dict) -> tuple:
    """A benchmark entry's place in the RFC's order: its section, the section's own benchmarks before those beside
    it, then the name."""
    section = bench.get("rfc_section", "?")
    return (ORDER.index(section) if section in ORDER else len(ORDER), bool(bench.get("extension")),
            bench["benchmark"])


def _figure(bench: dict) -> str:
    s = bench.get("summary") or {}
    if not s.get("n"):
        return ""
    mean = s["mean"]
    text = f"{mean:.4g}" if abs(mean) < 1e6 else f"{mean:.3e}"
    return f"{'≥ ' if lower_bound_trials(bench) else ''}{text} {bench.get('unit', '')}".strip()


class Notes:
    """Footnotes, numbered in order of first use; one per distinct text."""

    def __init__(self):
        self.texts: list[str] = []

    def ref(self, text: str) -> str:
        if text not in self.texts:
            self.texts.append(text)
        return f"[{self.texts.index(text) + 1}]"


def cell(entries: list, notes: Notes) -> str:
    if not entries:
        return "not run"
    judged = [(b, *judge(b)) for b in entries]
    passed = [b for b, status, _ in judged if status == PASSED]
    others = [(b, status, reason) for b, status, reason in judged if status != PASSED]
    refs = "".join(sorted({notes.ref(f"{status}: {reason}" if reason else status) for _, status, reason in others},
                          key=lambda r: int(r[1:-1])))
    if not others:
        figure = _figure(entries[0]) if len(entries) == 1 else ""
        return "works" + (f": {figure}" if figure else f" ({len(entries)} entries)" if len(entries) > 1 else "")
    if passed:
        return f"{len(passed)} of {len(entries)} pass {refs}"
    statuses = {status for _, status, _ in others}
    word = {SKIPPED: "skips"}.get(statuses.pop(), "fails") if len(statuses) == 1 else "fails"
    if word == "fails" and all(status == "error" for _, status, _ in others):
        word = "error"
    return f"{word} {refs}"


def build(runs: list) -> tuple:
    """``runs``: [(label, data)].  The rows ([title, section, cell per run]) and the footnotes.  A row for every
    benchmark a run's suite has (``run.suite``: those collected, run or not) and every entry of a run."""
    names: dict = {}
    for _, data in runs:
        for b in (data.get("run") or {}).get("suite", []) + data.get("benchmarks", []):
            if b.get("rfc_section") != "★":          # the ★ extras measure no OpenFlow controller
                names.setdefault(b["benchmark"], b)
    notes = Notes()
    rows = []
    for name, first in sorted(names.items(), key=lambda item: section_order(item[1])):
        title = first.get("title", name).split(":")[0].split(" (")[0]
        row = [title, section_label(first)]
        for _, data in runs:
            row.append(cell([b for b in data.get("benchmarks", []) if b["benchmark"] == name], notes))
        rows.append(row)
    return rows, notes.texts


def _escape(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def columns(loaded: list) -> list:
    """[(data, path)] → [(label, pooled data)]: one per controller and version, in order of first appearance."""
    pooled: dict = {}
    suites: dict = {}
    for data, path in loaded:
        label = _column(data, path, loaded)
        pooled.setdefault(label, []).extend(data.get("benchmarks", []))
        suites.setdefault(label, []).extend((data.get("run") or {}).get("suite", []))
    return [(label, {"run": {"suite": suites[label]}, "benchmarks": benches}) for label, benches in pooled.items()]


def _column(data: dict, path, loaded: list) -> str:
    """A run that never started its controller records no version: it joins a column of the same controller."""
    ctl = (data.get("run") or {}).get("controller") or {}
    if ctl.get("version") in (None, "unknown") and ctl.get("name"):
        for other, other_path in loaded:
            o = (other.get("run") or {}).get("controller") or {}
            if o.get("name") == ctl["name"] and o.get("version") not in (None, "unknown"):
                return base_label(other, other_path)
    return base_label(data, path)


def _relative(text: str, root) -> str:
    """Paths under ``root`` (the project directory the runs and the matrix ran from) written relative to it, so
    the generated page names no one machine's checkout."""
    text = str(text)
    return text.replace(str(root).rstrip("/") + "/", "") if root else text


def render(loaded: list, command: str = "", root=None) -> str:
    """``loaded``: [(data, path)], one per results.json.  The matrix as Markdown; with ``root``, paths under it in
    the commands are written relative to it."""
    runs = columns(loaded)
    labels = [label for label, _ in runs]
    rows, notes = build(runs)
    lines = ["# Compatibility matrix", "",
             "Controller × benchmark, from the runs below (generated by `python -m reports matrix`"
             + (f": `{_relative(command, root)}`" if command else "") + "; do not edit by hand; `tox -e matrix` makes "
             "the runs and this page again). A figure is the mean of the "
             "run's successful trials at the run's own, short settings: it shows the benchmark works, not "
             "what the controller can do; see docs/measurements.md for figures.", "", "## Runs", ""]
    lines += ["| Controller | Started | Outcome | Command |", "|---|---|---|---|"]
    for data, path in loaded:
        label, run = _column(data, path, loaded), data.get("run") or {}
        lines.append(f"| {_escape(label)} | {_escape(run.get('started', '—'))} | {_escape(run_line(data))} | "
                     f"`{_escape(_relative(run.get('command', str(path)), root))}` |")
    lines += ["", "## Matrix", "", "| Benchmark | Section | " + " | ".join(labels) + " |",
              "|---|---|" + "---|" * len(labels)]
    lines += ["| " + " | ".join(_escape(c) for c in row) + " |" for row in rows]
    if notes:
        lines += ["", "## Notes", ""]
        lines += [f"{i}. {_escape(text)}" for i, text in enumerate(notes, 1)]
    return "\n".join(lines) + "\n"
