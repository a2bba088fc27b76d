"""Per-benchmark statistics: the RFC's figures first, labelled extras after.

RFC 8456 asks for the mean and the sample variance (divisor n - 1) over the
trials (§5 reporting formats).  Median, standard deviation, min, max and a 95 %
confidence interval of the mean (Student t) are extras, named as such in every
report.
"""

from __future__ import annotations

import math
from typing import Iterable, Optional

from scipy import stats as sps

SUMMARY_KEYS = ("n", "mean", "variance", "stdev", "median", "min", "max", "ci95_low", "ci95_high")
RFC_KEYS = ("n", "mean", "variance")


def summarize(values: Iterable[float]) -> dict:
    """Summary of the successful trials' values (see SUMMARY_KEYS); None where undefined."""
    xs = [float(v) for v in values]
    n = len(xs)
    if n == 0:
        return {key: (0 if key == "n" else None) for key in SUMMARY_KEYS}
    mean = math.fsum(xs) / n
    ordered = sorted(xs)
    mid = n // 2
    median = ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    variance: Optional[float] = None
    stdev: Optional[float] = None
    low = high = None
    if n >= 2:
        variance = math.fsum((x - mean) ** 2 for x in xs) / (n - 1)
        stdev = math.sqrt(variance)
        half = float(sps.t.ppf(0.975, n - 1)) * stdev / math.sqrt(n)
        low, high = mean - half, mean + half
    return {"n": n, "mean": mean, "variance": variance, "stdev": stdev, "median": median,
            "min": ordered[0], "max": ordered[-1], "ci95_low": low, "ci95_high": high}


def percentile(values: Iterable[float], q: float) -> Optional[float]:
    """The q-th percentile (0..100) by linear interpolation; None for no values."""
    xs = sorted(float(v) for v in values)
    if not xs:
        return None
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be within 0..100 (got {q})")
    pos = (len(xs) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)
