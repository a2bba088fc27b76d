"""Change points along the run history: where a series of per-run figures steps, how much, and how sure.

A **series** is one benchmark entry's figure across runs that measured the same thing: the same benchmark,
variant and cell (reports/history.py), the same controller kind, the same testbed, in the order the runs started.
Its points are each run's median (robust to a trial that went astray; the RFC's mean is kept beside it).

Finding the change points takes two steps, as Hunter/Otava's split-and-merge does:

1. **Candidates** (ruptures' binary segmentation, least-squares cost, at least ``min_runs`` runs in every segment):
   as many splits as the series can hold.
2. **Weighing** (the merge): each candidate is tested over the two segments it separates, on ranks (one run that
   went astray weighs no more than any other): its rank-sum statistic (Mann-Whitney's, standardised) against the
   strongest split of each of 9,999 shuffles of those runs, so that picking the strongest split does not make
   chance look significant.  The weakest candidate whose p-value is above ``alpha``, or whose magnitude is below
   ``min_change``, is dropped and its neighbours are tested again over the joined segment, until every
   remaining change point holds.

A change point's **magnitude** is the relative change of the median from the segment before to the segment after,
and its **direction** follows the benchmark's ``higher_is_better``: a regression, an improvement, or a change
(no direction known).  A series shorter than ``2 × min_runs`` runs has **not enough data** for a change to be
called, and so has one too short for the test to reach ``alpha`` even with a clean step (:func:`p_floor`; at the
defaults, 14 runs).
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Optional, Sequence

MIN_RUNS = 5            # runs on each side of a change before it is called
ALPHA = 0.001           # the significance level of a change point
MODEL = "l2"           # ruptures cost behind the candidate splits (its rank cost misplaces a step back)
PERMUTATIONS = 9999     # shuffles behind each p-value (the smallest p-value is 1 / (1 + PERMUTATIONS))
REGRESSION, IMPROVEMENT, CHANGE = "regression", "improvement", "change"


@dataclass
class ChangePoint:
    index: int              # the first point after the change (0-based in the series)
    p_value: float
    magnitude: float        # median after / median before - 1 (None when the median before is 0)
    before_median: float
    after_median: float
    before_runs: int
    after_runs: int
    direction: str

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class SeriesChanges:
    points: int
    change_points: list = field(default_factory=list)
    enough_data: bool = True


def direction_of(magnitude: float, higher_is_better: Optional[bool]) -> str:
    if higher_is_better is None or magnitude == 0:
        return CHANGE
    return IMPROVEMENT if (magnitude > 0) == bool(higher_is_better) else REGRESSION


def _split_scores(ranks, min_runs: int):
    """|z| of the rank-sum statistic at every allowed split of each row of ``ranks`` (rows: orderings of one
    segment's ranks), splits ``min_runs`` .. n - ``min_runs``."""
    import numpy as np
    n = ranks.shape[-1]
    ks = np.arange(min_runs, n - min_runs + 1)
    sums = np.cumsum(ranks, axis=-1)[..., ks - 1]
    mean = ks * (n + 1) / 2.0
    sd = np.sqrt(ks * (n - ks) * (n + 1) / 12.0)
    return np.abs(sums - mean) / sd, ks


def _p_value(segment: Sequence[float], cut: int, min_runs: int, permutations: int) -> float:
    """How often a split as strong as the one at ``cut`` appears anywhere in the segment when its runs are shuffled:
    a permutation test of the largest rank-sum |z| over every allowed split (the split was chosen as the strongest,
    so it is weighed against the strongest of each shuffle, not against one fixed split).  The shuffles come from
    a fixed seed: the same history gives the same p-value."""
    import numpy as np
    from scipy.stats import rankdata
    ranks = rankdata(np.asarray(segment, dtype=float))
    scores, ks = _split_scores(ranks, min_runs)
    observed = scores[int(np.flatnonzero(ks == cut)[0])]
    shuffled = np.random.default_rng(0).permuted(np.tile(ranks, (permutations, 1)), axis=1)
    strongest = _split_scores(shuffled, min_runs)[0].max(axis=1)
    return float((1 + np.count_nonzero(strongest >= observed - 1e-9)) / (1 + permutations))


@lru_cache(maxsize=256)
def p_floor(n: int, min_runs: int, permutations: int = PERMUTATIONS) -> float:
    """The smallest p-value a split of ``n`` runs can get: that of a clean step half-way (every run after it above
    every run before).  A series whose floor is above ``alpha`` cannot have a change called yet."""
    return _p_value(list(range(n)), n // 2, min_runs, permutations)


def _weigh(values: Sequence[float], lo: int, cut: int, hi: int, higher_is_better, min_runs: int,
           permutations: int) -> ChangePoint:
    before, after = list(values[lo:cut]), list(values[cut:hi])
    if len(set(before) | set(after)) == 1:
        p = 1.0                 # every point equal: nothing changed
    else:
        p = _p_value(values[lo:hi], cut - lo, min_runs, permutations)
    b, a = statistics.median(before), statistics.median(after)
    magnitude = (a / b - 1.0) if b else (0.0 if a == b else float("inf") if a > b else float("-inf"))
    return ChangePoint(index=cut, p_value=p, magnitude=magnitude, before_median=b, after_median=a,
                       before_runs=len(before), after_runs=len(after),
                       direction=direction_of(magnitude, higher_is_better))


def candidates(values: Sequence[float], min_runs: int) -> list:
    """Every split ruptures' binary segmentation finds with at least ``min_runs`` points in each segment."""
    import numpy as np
    import ruptures as rpt
    n = len(values)
    most = n // min_runs - 1
    if most < 1:
        return []
    signal = np.asarray(values, dtype=float).reshape(-1, 1)
    if float(np.ptp(signal)) == 0.0:
        return []
    algo = rpt.Binseg(model=MODEL, min_size=min_runs, jump=1).fit(signal)
    try:
        ends = algo.predict(n_bkps=most)
    except rpt.exceptions.BadSegmentationParameters:
        ends = algo.predict(n_bkps=1)
    return [e for e in ends if e < n]


def change_points(values: Sequence[float], higher_is_better: Optional[bool] = None, min_runs: int = MIN_RUNS,
                  alpha: float = ALPHA, min_change: float = 0.0, permutations: int = PERMUTATIONS) -> SeriesChanges:
    """The change points of one series (see the module's docstring)."""
    if min_runs < 2:
        raise ValueError(f"min_runs {min_runs} must be 2 or more")
    n = len(values)
    if n < 2 * min_runs or p_floor(n, min_runs, permutations) > alpha:
        return SeriesChanges(points=n, enough_data=False)
    cuts = candidates(values, min_runs)
    while cuts:
        bounds = [0, *cuts, n]
        weighed = [_weigh(values, bounds[i - 1], bounds[i], bounds[i + 1], higher_is_better, min_runs, permutations)
                   for i in range(1, len(bounds) - 1)]
        weakest = max(range(len(weighed)), key=lambda i: (weighed[i].p_value, -abs(weighed[i].magnitude)))
        w = weighed[weakest]
        if w.p_value <= alpha and abs(w.magnitude) >= min_change:
            small = [i for i, c in enumerate(weighed) if abs(c.magnitude) < min_change]
            if not small:
                return SeriesChanges(points=n, change_points=weighed)
            weakest = min(small, key=lambda i: abs(weighed[i].magnitude))
        del cuts[weakest]
    return SeriesChanges(points=n)
