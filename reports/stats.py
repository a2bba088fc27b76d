"""Per-benchmark statistics: the RFC's figures first, labelled extras after.

RFC 8456 asks for the mean and the sample variance (divisor n - 1) over the
trials (§5 reporting formats).  Median, standard deviation, min, max and a 95 %
confidence interval of the mean are extras, named as such in every report.

The interval is a bootstrap percentile interval (``CI95_METHOD``): it lies
within the sample's range, so a sample of positive times never gets a negative
bound, as a Student t interval on a skewed sample would.  It is deterministic
(a fixed seed).

``median``, ``percentile`` and ``quantiles`` are the helpers other modules call
for their own figures: the project's one percentile rule (linear interpolation
between order statistics, :mod:`emulator.percentile`).
"""

from __future__ import annotations

import inspect
import math
from typing import Iterable, Optional, Sequence

import numpy as np

from emulator.percentile import RULE as PERCENTILE_RULE  # noqa: F401  (the rule, stated where figures are made)
from emulator.percentile import as_array, percentile, percentiles

CI95_RESAMPLES = 9999
CI95_SEED = 0
CI95_METHOD = f"bootstrap percentile, {CI95_RESAMPLES} resamples, seed {CI95_SEED}"
SUMMARY_KEYS = ("n", "mean", "variance", "stdev", "median", "min", "max", "ci95_low", "ci95_high", "ci95_method")
RFC_KEYS = ("n", "mean", "variance")


class _SciPyStats:
    """``scipy.stats``, imported at its first use: it takes ~1.5 s, and a run stopped by a bad option, a shard
    process or a report command that needs no test should not wait for it."""

    def __getattr__(self, name):
        from scipy import stats
        return getattr(stats, name)


sps = _SciPyStats()


def _seed_arg() -> str:
    """scipy >= 1.15 names the generator ``rng``; older releases ``random_state``."""
    return "rng" if "rng" in inspect.signature(sps.bootstrap).parameters else "random_state"


def ci95_of_mean(values: Sequence[float]) -> Optional[tuple[float, float]]:
    """95 % bootstrap percentile interval of the mean; (mean, mean) for a constant sample, None for n < 2."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2:
        return None
    if np.all(x == x[0]):
        return float(x[0]), float(x[0])
    res = sps.bootstrap((x,), np.mean, n_resamples=CI95_RESAMPLES, confidence_level=0.95, method="percentile",
                        vectorized=True, **{_seed_arg(): np.random.default_rng(CI95_SEED)})
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return max(low, float(x.min())), min(high, float(x.max()))  # guard float noise at the range's ends


def summarize(values: Iterable[float]) -> dict:
    """Summary of the successful trials' values (see SUMMARY_KEYS); None where undefined."""
    xs = sorted(float(v) for v in values)
    n = len(xs)
    if n == 0:
        return {key: (0 if key == "n" else None) for key in SUMMARY_KEYS}
    mean = math.fsum(xs) / n
    variance = stdev = None
    if n >= 2:
        variance = math.fsum((x - mean) ** 2 for x in xs) / (n - 1)
        stdev = math.sqrt(variance)
    ci = ci95_of_mean(xs)
    return {"n": n, "mean": mean, "variance": variance, "stdev": stdev, "median": percentile(xs, 50),
            "min": xs[0], "max": xs[-1], "ci95_low": ci[0] if ci else None, "ci95_high": ci[1] if ci else None,
            "ci95_method": CI95_METHOD if ci else None}


def median(values: Iterable[float]) -> Optional[float]:
    """The median (the 50th percentile); None for no values."""
    return percentile(values, 50)


def quantiles(values: Iterable[float], qs: Sequence[float] = (25, 50, 75)) -> list:
    """The percentiles ``qs`` (each 0..100) of one sample; Nones for no values."""
    return percentiles(values, qs)


def mean(values: Iterable[float]) -> Optional[float]:
    """The arithmetic mean; None for no values."""
    x = as_array(values)
    return float(x.mean()) if x.size else None
