"""``python -m reports history check``: every series of the history weighed for change points, acknowledged
changes set aside, one verdict for CI.

Exit status: 0 no unacknowledged regression, 1 a regression, 3 not enough data (no series has the runs a change
needs; 0 with ``--allow-not-enough-data``), 2 a store or an acknowledgements file that cannot be read.

An **acknowledgements file** (YAML) names known changes, each with a reason::

    acknowledgements:
      - benchmark: test_async_message_processing_time   # a series: benchmark, variant, controller, testbed, cell
        controller: ryu
        run: 13           # its change point at run 13 (the first run after the change); without it, the series
        reason: "4.35 answers after a flow install, by design"
      - run: 40           # any change point at run 40 (the testbed's kernel was upgraded)
        reason: "kernel 6.18 on the CI host"

A change point one of them matches is reported as acknowledged and fails nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from emulator.documents import load_yaml

from .changes import ALPHA, MIN_RUNS, REGRESSION, SeriesChanges, change_points

SERIES_KEYS = ("benchmark", "variant", "controller", "testbed", "cell")
ACK_KEYS = (*SERIES_KEYS, "run", "reason")
OK, REGRESSED, NOT_ENOUGH = 0, 1, 3


class AckError(Exception):
    """An acknowledgements file that cannot be used: the message names the file, the item and why."""


@dataclass
class Ack:
    reason: str
    match: dict
    run: Optional[int] = None

    def covers(self, series: "Series", run: int) -> bool:
        return (self.run is None or self.run == run) and all(series.key_dict()[k] == v for k, v in self.match.items())


def load_acks(path) -> list:
    data = load_yaml(path, "acknowledgements", AckError)
    items = data.get("acknowledgements") if isinstance(data, dict) else data
    if data is None:
        items = []
    if not isinstance(items, list):
        raise AckError(f"acknowledgements {path}: expected a list under 'acknowledgements'")
    acks = []
    for number, item in enumerate(items, 1):
        where = f"acknowledgements {path}: item {number}"
        if not isinstance(item, dict):
            raise AckError(f"{where}: expected a mapping of {', '.join(ACK_KEYS)}")
        unknown = sorted(set(item) - set(ACK_KEYS))
        if unknown:
            raise AckError(f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(ACK_KEYS)})")
        reason = item.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise AckError(f"{where}: 'reason' is required (why the change is known)")
        run = item.get("run")
        if run is not None and (isinstance(run, bool) or not isinstance(run, int) or run < 1):
            raise AckError(f"{where}: 'run' must be a run number (python -m reports history list), got {run!r}")
        match = {k: ("null" if item[k] is None else str(item[k])) for k in SERIES_KEYS if k in item}
        if not match and run is None:
            raise AckError(f"{where}: name a series ({', '.join(SERIES_KEYS)}), a run, or both")
        acks.append(Ack(reason=reason.strip(), match=match, run=run))
    return acks


@dataclass
class Series:
    benchmark: str
    variant: Optional[str]
    controller: Optional[str]
    testbed: str
    cell: str
    title: str = ""
    unit: str = ""
    higher_is_better: Optional[bool] = None
    points: list = field(default_factory=list)      # the history's rows, oldest first
    changes: Optional[SeriesChanges] = None
    acknowledged: dict = field(default_factory=dict)  # change point index -> reason

    def key_dict(self) -> dict:
        # a missing variant or controller is "?", as printed (YAML's null reads as the null controller's name)
        return {"benchmark": self.benchmark, "variant": "?" if self.variant is None else self.variant,
                "controller": "?" if self.controller is None else self.controller, "testbed": self.testbed,
                "cell": self.cell}

    @property
    def name(self) -> str:
        return f"{self.benchmark}{f'[{self.variant}]' if self.variant else ''} on {self.controller or '?'}"

    @property
    def label(self) -> str:
        return f"{self.name} (testbed {self.testbed}, cell {self.cell})"

    def regressions(self) -> list:
        return [c for c in (self.changes.change_points if self.changes else [])
                if c.direction == REGRESSION and c.index not in self.acknowledged]

    @property
    def status(self) -> str:
        if self.changes is None or not self.changes.enough_data:
            return "not enough data"
        return "regression" if self.regressions() else "ok"


def series_of(points: list) -> list:
    """The history's points grouped into series (benchmark, variant, cell, controller kind, testbed)."""
    out: dict = {}
    for p in points:
        key = (p["benchmark"], p["variant"], p["controller"], p["testbed"], p["cell_key"])
        s = out.get(key)
        if s is None:
            s = out[key] = Series(*key, title=p["title"] or "", unit=p["unit"] or "",
                                  higher_is_better=p["higher_is_better"])
        s.points.append(p)
    return list(out.values())


def check(points: list, acks: list = (), min_runs: int = MIN_RUNS, alpha: float = ALPHA,
          min_change: float = 0.0) -> list:
    """Every series weighed (reports/changes.py) and its change points matched against ``acks``."""
    every = series_of(points)
    for s in every:
        s.changes = change_points([p["median"] for p in s.points], s.higher_is_better, min_runs, alpha, min_change)
        for c in s.changes.change_points:
            run = s.points[c.index]["run"]
            reasons = [a.reason for a in acks if a.covers(s, run)]
            if reasons:
                s.acknowledged[c.index] = "; ".join(reasons)
    return every


def exit_status(every: list, allow_not_enough: bool = False) -> int:
    """REGRESSED for an unacknowledged regression; NOT_ENOUGH when no series has the runs a change needs (OK when
    ``allow_not_enough``: a CI gate on a store still filling); OK otherwise."""
    if any(s.regressions() for s in every):
        return REGRESSED
    if not any(s.changes and s.changes.enough_data for s in every):
        return OK if allow_not_enough else NOT_ENOUGH
    return OK


def _num(x: float) -> str:
    return f"{x:.4g}"


def change_line(s: Series, c) -> str:
    first = s.points[c.index]
    version = f", {s.controller} {first['controller_version']}" if first.get("controller_version") else ""
    commit = f", commit {first['suite_commit'][:12]}" if first.get("suite_commit") else ""
    magnitude = f"{c.magnitude:+.1%}" if abs(c.magnitude) != float("inf") else "from 0"
    text = (f"{c.direction} at run {first['run']} ({first['started']}{version}{commit}): median "
            f"{_num(c.before_median)} -> {_num(c.after_median)} {s.unit} ({magnitude}), p = {c.p_value:.2g}, "
            f"{c.before_runs} runs before, {c.after_runs} after")
    if c.index in s.acknowledged:
        text += f"; acknowledged: {s.acknowledged[c.index]}"
    return text


def render_text(every: list, min_runs: int, alpha: float) -> str:
    lines = [f"{len(every)} series; a change needs {min_runs} runs on each side and p <= {alpha:g} "
             "(a permutation test of the rank-sum split, over the segments ruptures' binary segmentation finds)"]
    for s in every:
        lines.append(f"{s.status.upper():16} {s.label}: {len(s.points)} runs")
        if s.changes and not s.changes.enough_data:
            lines.append(f"    too few runs for a change to be called yet ({2 * min_runs} or more are needed, and "
                         f"enough for p <= {alpha:g})")
        for c in (s.changes.change_points if s.changes else []):
            lines.append("    " + change_line(s, c))
    status = exit_status(every)
    lines.append({OK: "no unacknowledged regression", REGRESSED: "REGRESSION: see above",
                  NOT_ENOUGH: "not enough data: no series has the runs a change needs"}[status])
    return "\n".join(lines) + "\n"


def render_junit(every: list, min_runs: int) -> str:
    """One testcase per series, classname "regression detection": a failure for an unacknowledged regression, a
    skip for not enough data; every change point in its output."""
    from junit_xml import TestCase, TestSuite, to_xml_report_string
    cases = []
    for s in every:
        case = TestCase(s.label, classname="regression detection", elapsed_sec=0.0,
                        stdout="\n".join(change_line(s, c) for c in (s.changes.change_points if s.changes else []))
                        or None)
        if s.status == "regression":
            case.add_failure_info(message="; ".join(change_line(s, c) for c in s.regressions()))
        elif s.status == "not enough data":
            case.add_skipped_info(message=f"not enough data: {len(s.points)} runs, a change needs {min_runs} on "
                                          "each side and enough runs to reach the significance level")
        cases.append(case)
    return to_xml_report_string([TestSuite("bmwg-sdn history check", cases)])
