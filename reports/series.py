"""A benchmark's series analysed point by point: ``python -m reports series RESULTS.json [--alpha 0.05]``.

A series is the entries of one benchmark whose ``series_x`` share a name (``--switches 1,2,4,...,256``, the
cluster's nodes, the keep-alive): one point per X.  As the seed study of centralized controllers does:

* each point is tested against its neighbour (the next X), two-sided by the verdicts' rule, the neighbour tests
  of one series corrected together by Holm's method, then one-sided for the direction: better, worse, or no
  significant change;
* the **saturation point**: the first X from which the figure stops improving significantly, i.e. the end of
  the run of significant improvements from the first point (the first point itself when the second is no
  better);
* the first X at which the figure gets significantly **worse** than at the point before, if any;
* the **best scenario**: every point that no other point of the series beats significantly (all pairs,
  Holm-corrected: :func:`reports.compare.compare_benchmark`), with the best median first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from . import stats
from .compare import MIN_N, compare_benchmark, direction_text, holm, p_text
from .results import ok_values
from .verdict import two_sample


@dataclass
class Step:
    x_from: object
    x_to: object
    test: str
    p_two: float
    p_holm: Optional[float] = None
    change: str = "no significant change"      # "better", "worse" or "no significant change"
    p_one: Optional[float] = None


@dataclass
class SeriesAnalysis:
    benchmark: str
    title: str
    unit: str
    x_name: str
    higher_is_better: Optional[bool]
    points: list          # [(x, n, median)]
    steps: list
    saturation: object
    first_worse: object
    best: list            # the X of every point no other beats significantly, best median first
    skipped: list         # X of points with fewer than MIN_N successful trials


def series_of(data: dict) -> dict:
    """(benchmark, series name) -> its entries sorted by X, for every series of two or more points."""
    groups: dict = {}
    for e in data.get("benchmarks", []):
        x = e.get("series_x")
        if isinstance(x, dict) and "name" in x and "value" in x:
            groups.setdefault((e["benchmark"], x["name"]), []).append(e)
    return {k: sorted(v, key=lambda e: e["series_x"]["value"]) for k, v in groups.items() if len(v) >= 2}


def _step(a: list, b: list, xa, xb) -> Step:
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if np.all(x == x[0]) and np.all(y == y[0]) and x[0] == y[0]:
        return Step(xa, xb, "none (identical constant samples)", 1.0)
    name, _measure, _effect, p_of = two_sample(y, x)        # the next point against this one
    step = Step(xa, xb, name, p_of("two-sided"))
    step._p_of = p_of
    return step


def analyse(entries: list, alpha: float = 0.05) -> SeriesAnalysis:
    first = entries[0]
    hib = first.get("higher_is_better")
    usable = [(e["series_x"]["value"], ok_values(e)) for e in entries]
    skipped = [x for x, v in usable if len(v) < MIN_N]
    usable = [(x, v) for x, v in usable if len(v) >= MIN_N]
    steps = [_step(va, vb, xa, xb) for (xa, va), (xb, vb) in zip(usable, usable[1:])]
    for step, adjusted in zip(steps, holm([s.p_two for s in steps])):
        step.p_holm = adjusted
        p_of = step.__dict__.pop("_p_of", None)
        if adjusted < alpha and p_of is not None and hib is not None:
            better, worse = ("greater", "less") if hib else ("less", "greater")
            for alt, word in ((better, "better"), (worse, "worse")):
                p = p_of(alt)
                if p < alpha:
                    step.change, step.p_one = word, p
                    break
    saturation = usable[0][0] if usable else None
    for step in steps:
        if step.change != "better":
            break
        saturation = step.x_to
    first_worse = next((s.x_to for s in steps if s.change == "worse"), None)
    ranked = compare_benchmark([(x, e) for x, e in ((e["series_x"]["value"], e) for e in entries)], alpha)
    best = [r.label for r in ranked.runs if r.rank == 1]
    return SeriesAnalysis(first["benchmark"], first.get("title", first["benchmark"]), first.get("unit", ""),
                          first["series_x"]["name"], hib, [(x, len(v), stats.median(v)) for x, v in usable],
                          steps, saturation, first_worse, best, skipped)


def analyse_all(data: dict, alpha: float = 0.05) -> list:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1 (got {alpha})")
    return [analyse(entries, alpha) for entries in series_of(data).values()]


def render_text(analyses: list, alpha: float) -> str:
    lines = [f"Each point against the next, two-sided, Holm-corrected per series, alpha {alpha:g}; then one-sided "
             "for the direction."]
    for a in analyses:
        lines += ["", f"== {a.title} ({a.benchmark}) over {a.x_name} · {a.unit} · {direction_text(a.higher_is_better)}"]
        lines.append("  " + "  ".join(f"{x}: median {m:.4g} (n {n})" for x, n, m in a.points))
        for s in a.steps:
            one_sided = f", one-sided {p_text(s.p_one)}" if s.p_one is not None else ""
            lines.append(f"  {s.x_from} → {s.x_to}: {s.change} ({s.test}, p = {p_text(s.p_two)}, "
                         f"Holm {p_text(s.p_holm)}{one_sided})")
        lines.append(f"  saturation point: {a.x_name} = {a.saturation} (no significant improvement after it)")
        if a.first_worse is not None:
            lines.append(f"  first significantly worse: {a.x_name} = {a.first_worse}")
        lines.append(f"  best scenario: {a.x_name} = {', '.join(map(str, a.best))} (no other point significantly "
                     "better)")
        if a.skipped:
            lines.append(f"  left out (fewer than {MIN_N} successful trials): {', '.join(map(str, a.skipped))}")
    return "\n".join(lines) + "\n"
