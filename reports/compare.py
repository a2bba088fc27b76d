"""Several runs side by side (controllers or releases): ``python -m reports compare A.json B.json [...]``.

For each benchmark entry (a benchmark and its variant) that at least two of the runs measured:

* each run's successful trials: n, mean, median and the 95 % confidence interval of the mean;
* every pair of runs: the two-sample test the verdicts use (``reports.verdict.TEST_RULE``: Welch's t or
  Mann-Whitney U), two-sided, with its effect size.  The p-values of one benchmark's pairs are one family,
  corrected by Holm's step-down method;
* a pair that differs after the correction: the one-sided test in each direction says which run is the better
  one (by the benchmark's ``higher_is_better``).  A difference whose direction neither one-sided test confirms
  says so and separates nobody;
* a ranking with ties: a run's rank is 1 + the number of runs significantly better than it, so runs that no test
  separates share a rank.

Nothing is rerun: the figures are the trials recorded in each results.json.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from . import stats
from .results import ok_values
from .verdict import TEST_RULE, two_sample

MIN_N = 2      # trials a run needs in a benchmark to take part in its tests


def holm(pvalues: Sequence[float]) -> list:
    """Holm's step-down adjustment of a family of p-values, in their order: the k-th smallest (from 0) is
    multiplied by (m - k), made non-decreasing, and capped at 1."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, (m - k) * pvalues[i]))
        adjusted[i] = running
    return adjusted


@dataclass
class RunFigures:
    label: str
    n: int
    mean: Optional[float]
    median: Optional[float]
    ci95: Optional[tuple]
    values: list = field(repr=False, default_factory=list)
    rank: Optional[int] = None


@dataclass
class Pair:
    a: str
    b: str
    test: Optional[str] = None
    effect: Optional[float] = None         # of a relative to b
    measure: Optional[str] = None
    p_two: Optional[float] = None
    p_holm: Optional[float] = None
    better: Optional[str] = None           # the label of the better run, when a significant difference has one
    p_one: Optional[float] = None          # the one-sided p-value that named it
    note: str = ""


@dataclass
class BenchmarkComparison:
    benchmark: str
    variant: Optional[str]
    title: str
    unit: str
    higher_is_better: Optional[bool]
    runs: list
    pairs: list
    absent: list                           # runs without this entry, or with too few successful trials

    @property
    def key(self) -> str:
        return f"{self.benchmark}[{self.variant}]" if self.variant else self.benchmark


def base_label(data: dict, path) -> str:
    """A run's controller and version, or the results file's folder when that is not recorded."""
    ctl = (data.get("run") or {}).get("controller") or {}
    name = " ".join(str(x) for x in (ctl.get("name"), ctl.get("version")) if x and x != "unknown")
    return name or Path(path).parent.name or str(path)


def run_labels(runs: list) -> list:
    """Each run's name in the comparison, for [(results data, path)]: :func:`base_label`; runs that would share a
    name get their folder (or path) after it."""
    names = [base_label(d, p) for d, p in runs]
    out = []
    for (_data, path), name in zip(runs, names):
        if names.count(name) > 1:
            folder = Path(path).parent.name
            clash = sum(1 for (_d, q), n in zip(runs, names) if n == name and Path(q).parent.name == folder) > 1
            name = f"{name} ({path if clash or not folder else folder})"
        out.append(name)
    return out


def _pair(x: RunFigures, y: RunFigures) -> Pair:
    pair = Pair(x.label, y.label)
    a, b = np.asarray(x.values, dtype=float), np.asarray(y.values, dtype=float)
    if np.all(a == a[0]) and np.all(b == b[0]) and a[0] == b[0]:
        pair.test, pair.measure = "none (identical constant samples)", "rank-biserial"
        pair.effect, pair.p_two = 0.0, 1.0
        return pair
    pair.test, pair.measure, pair.effect, p_of = two_sample(a, b)
    pair.p_two = p_of("two-sided")
    pair._p_of = p_of                      # kept for the one-sided step, after the family's correction
    return pair


def compare_benchmark(entries: list, alpha: float) -> BenchmarkComparison:
    """``entries``: [(label, benchmark entry or None)], one per run, for one benchmark key."""
    present = [(label, e) for label, e in entries if e is not None]
    first = present[0][1]
    hib = first.get("higher_is_better")
    runs, absent = [], []
    for label, e in entries:
        values = ok_values(e) if e is not None else []
        if len(values) < MIN_N:
            absent.append(label if e is None else f"{label} ({len(values)} successful trial(s))")
            continue
        runs.append(RunFigures(label, len(values), stats.mean(values), stats.median(values),
                               stats.ci95_of_mean(values), values))
    pairs = [_pair(x, y) for x, y in combinations(runs, 2)]
    for pair, adjusted in zip(pairs, holm([p.p_two for p in pairs])):
        pair.p_holm = adjusted
        p_of = pair.__dict__.pop("_p_of", None)
        if adjusted >= alpha or p_of is None:
            continue
        if hib is None:
            pair.note = "differs; which is better is not recorded (higher_is_better)"
            continue
        a_better, b_better = ("greater", "less") if hib else ("less", "greater")
        for alt, label in ((a_better, pair.a), (b_better, pair.b)):
            p = p_of(alt)
            if p < alpha:
                pair.better, pair.p_one = label, p
                break
        else:
            pair.note = "differs two-sided; neither one-sided test confirms a direction"
    for pair in pairs:
        pair.__dict__.pop("_p_of", None)
    for run in runs:
        run.rank = 1 + sum(1 for p in pairs if p.better is not None and run.label in (p.a, p.b)
                           and p.better != run.label)
    runs.sort(key=lambda r: (r.rank, -(r.median or 0) if hib else (r.median or 0)))
    return BenchmarkComparison(first["benchmark"], first.get("variant"), first.get("title", first["benchmark"]),
                               first.get("unit", ""), hib, runs, pairs, absent)


def compare_runs(runs: list, alpha: float = 0.05) -> list:
    """``runs``: [(label, results data)].  One :class:`BenchmarkComparison` per benchmark entry at least two runs
    measured with enough successful trials, in the order they first appear."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1 (got {alpha})")
    keys: list = []
    for _label, data in runs:
        for e in data.get("benchmarks", []):
            key = (e.get("benchmark"), e.get("variant"))
            if key not in keys:
                keys.append(key)
    out = []
    for name, variant in keys:
        entries = [(label, next((e for e in data.get("benchmarks", [])
                                 if (e.get("benchmark"), e.get("variant")) == (name, variant)), None))
                   for label, data in runs]
        comparison = compare_benchmark(entries, alpha)
        if len(comparison.runs) >= 2:
            out.append(comparison)
    return out


def _num(x: Optional[float]) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    return f"{x:.4g}" if abs(x) < 1e5 else f"{x:,.0f}"


def p_text(x: Optional[float]) -> str:
    return "—" if x is None else (f"{x:.2g}" if x < 0.001 else f"{x:.3f}")


def direction_text(higher_is_better: Optional[bool]) -> str:
    return {True: "higher is better", False: "lower is better", None: "direction not recorded"}[higher_is_better]


def render_text(comparisons: list, alpha: float) -> str:
    lines = [f"Pairwise two-sided tests ({TEST_RULE}), Holm-corrected per benchmark, alpha {alpha:g}; "
             "then one-sided for the direction. Rank = 1 + runs significantly better (ties share a rank)."]
    for c in comparisons:
        lines += ["", f"== {c.title} ({c.key}) · {c.unit} · {direction_text(c.higher_is_better)}",
                  f"  {'rank':>4}  {'run':<32} {'n':>3}  {'mean':>10}  {'median':>10}  95% CI of the mean"]
        for r in c.runs:
            ci = f"{_num(r.ci95[0])}..{_num(r.ci95[1])}" if r.ci95 else "—"
            lines.append(f"  {r.rank:>4}  {r.label:<32} {r.n:>3}  {_num(r.mean):>10}  {_num(r.median):>10}  {ci}")
        for p in c.pairs:
            verdict = (f"{p.better} better (one-sided p = {p_text(p.p_one)})" if p.better
                       else p.note or "no significant difference")
            lines.append(f"  {p.a} vs {p.b}: {p.test}, p = {p_text(p.p_two)} (Holm {p_text(p.p_holm)}), effect "
                         f"{_num(p.effect)} {p.measure}: {verdict}")
        if c.absent:
            lines.append(f"  not compared: {', '.join(c.absent)}")
    return "\n".join(lines) + "\n"


def to_dict(comparisons: list, alpha: float) -> dict:
    return {"alpha": alpha, "rule": TEST_RULE, "correction": "holm, per benchmark",
            "benchmarks": [{"benchmark": c.benchmark, "variant": c.variant, "title": c.title, "unit": c.unit,
                            "higher_is_better": c.higher_is_better,
                            "runs": [{"label": r.label, "rank": r.rank, "n": r.n, "mean": r.mean, "median": r.median,
                                      "ci95": list(r.ci95) if r.ci95 else None} for r in c.runs],
                            "pairs": [{k: v for k, v in p.__dict__.items()} for p in c.pairs],
                            "not_compared": c.absent} for c in comparisons]}
