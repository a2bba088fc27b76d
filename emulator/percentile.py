"""The project's one percentile rule, used by the reports, the families and the emulator alike.

The q-th percentile (0..100) of n values is read at position (n − 1) · q / 100 of the sorted values, interpolated
linearly between the two order statistics around it: NumPy's default rule, the standard library's
``statistics.quantiles(method="inclusive")`` and R's type 7.  So the p99 of 1..100 reads 99.01 everywhere, and a
median is the mean of the two middle values of an even count.

It lives in the emulator, the lowest package, because the emulator's own code (the robustness screen's sentinel,
the northbound load generator) is copied alone to the hosts that run its shards and must not need ``reports``.
"""

from __future__ import annotations

from typing import Iterable, Optional, Sequence

import numpy as np

RULE = ("linear interpolation between order statistics at (n − 1)·q/100 (NumPy's default, "
        "statistics.quantiles(method='inclusive'))")


def _check(q: float) -> None:
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be within 0..100 (got {q})")


def as_array(values) -> np.ndarray:
    """``values`` as a float array, whatever iterable they come in."""
    try:
        return np.asarray(values, dtype=float)       # lists, tuples, arrays, array('q') through its buffer
    except TypeError:
        return np.asarray(list(values), dtype=float)  # a generator


def percentile(values: Iterable[float], q: float) -> Optional[float]:
    """The q-th percentile (0..100) of ``values`` by :data:`RULE`; None for no values."""
    _check(q)
    x = as_array(values)
    return float(np.percentile(x, q)) if x.size else None


def percentiles(values: Iterable[float], qs: Sequence[float]) -> list:
    """The percentiles ``qs`` (each 0..100) of one sample by :data:`RULE`, sorted once; Nones for no values."""
    for q in qs:
        _check(q)
    x = as_array(values)
    return [float(v) for v in np.percentile(x, list(qs))] if x.size else [None for _ in qs]
