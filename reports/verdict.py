"""Statistical verdicts: PASS / FAIL / INCONCLUSIVE, each with its test, p-value and effect size.

Two questions are answered:

* against a threshold (a certification profile's ``min`` or ``max``): a
  one-sided one-sample test of the trials' location against the threshold;
* against a baseline run: a two-sample test, two-sided first (is there a
  difference at all?), then one-sided (is it a regression?).

Which test, by a stated rule (``TEST_RULE``): the t-test (one-sample t, or
Welch's t for two samples) when every sample has at least ``MIN_N_FOR_T``
values, non-zero variance and does not reject normality by Shapiro-Wilk at
0.05; otherwise the rank test (Wilcoxon signed-rank, or Mann-Whitney U).  A
zero-variance sample, common for capacities, never reaches scipy's degenerate
paths: it is decided by the exact sign test, or is identical to its reference.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Optional, Sequence

import numpy as np

from reports.stats import sps

PASS, FAIL, INCONCLUSIVE = "PASS", "FAIL", "INCONCLUSIVE"
MIN_N_FOR_T = 8
NORMALITY_ALPHA = 0.05
TEST_RULE = (f"t-test when every sample has n >= {MIN_N_FOR_T}, non-zero variance and Shapiro-Wilk "
             f"p >= {NORMALITY_ALPHA}; otherwise the rank test (Wilcoxon signed-rank / Mann-Whitney U); "
             "zero-variance samples by the exact sign test")


@dataclass
class Verdict:
    result: str
    test: str
    p_value: Optional[float]
    alternative: str
    effect_size: Optional[float]
    effect_measure: str
    alpha: float
    rule: str
    note: str = ""
    threshold: Optional[float] = None
    bound: Optional[str] = None
    baseline: Optional[dict] = None

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1 (got {alpha})")


def _normal_enough(x: np.ndarray) -> bool:
    if len(x) < MIN_N_FOR_T or float(np.var(x)) == 0.0:
        return False
    return float(sps.shapiro(x).pvalue) >= NORMALITY_ALPHA


def _rank_biserial_signed(d: np.ndarray) -> float:
    """Matched-pairs rank-biserial correlation of differences from the threshold (zeros left out)."""
    d = d[d != 0]
    if len(d) == 0:
        return 0.0
    ranks = sps.rankdata(np.abs(d))
    plus, minus = ranks[d > 0].sum(), ranks[d < 0].sum()
    return float((plus - minus) / (plus + minus))


def against_threshold(values: Sequence[float], threshold: float, bound: str = "min",
                      alpha: float = 0.05) -> Verdict:
    """Does the benchmark meet ``threshold``?  ``bound`` is ``"min"`` (at least) or ``"max"`` (at most).

    PASS when the trials' location is significantly on the good side of the
    threshold, FAIL when significantly on the bad side, INCONCLUSIVE otherwise.
    """
    _check_alpha(alpha)
    if bound not in ("min", "max"):
        raise ValueError(f"threshold bound must be 'min' or 'max' (got {bound!r})")
    x = np.asarray(values, dtype=float)
    if len(x) == 0:
        raise ValueError("no successful trials to judge")
    good, bad = ("greater", "less") if bound == "min" else ("less", "greater")
    common = dict(alpha=alpha, rule=TEST_RULE, threshold=float(threshold), bound=bound)
    d = x - threshold

    if np.all(d == d[0]):  # zero variance: every trial gave the same value
        n = len(x)
        if d[0] == 0:
            return Verdict(PASS, "none (every trial equals the threshold)", None, good, 0.0,
                           "rank-biserial", note=f"all {n} trials equal {threshold:g}; the bound holds in "
                           "each, and no test can separate them from it", **common)
        p = 0.5 ** n  # exact one-sided sign test: all n trials on one side
        on_good_side = (d[0] > 0) == (bound == "min")
        result = (PASS if on_good_side else FAIL) if p < alpha else INCONCLUSIVE
        return Verdict(result, "sign-test (zero-variance sample)", p, good if on_good_side else bad,
                       1.0 if d[0] > 0 else -1.0, "rank-biserial",
                       note=f"all {n} trials equal {x[0]:g}", **common)

    if _normal_enough(x):
        name, measure = "one-sample-t", "cohen-d"
        effect = float(d.mean() / d.std(ddof=1))

        def p_of(alt):
            return float(sps.ttest_1samp(x, threshold, alternative=alt).pvalue)
    else:
        name, measure = "wilcoxon-signed-rank", "rank-biserial"
        effect = _rank_biserial_signed(d)

        def p_of(alt):
            if np.all(d == 0):
                return 1.0
            return float(sps.wilcoxon(d, alternative=alt, zero_method="wilcox").pvalue)

    p_good = p_of(good)
    if p_good < alpha:
        return Verdict(PASS, name, p_good, good, effect, measure, **common)
    p_bad = p_of(bad)
    if p_bad < alpha:
        return Verdict(FAIL, name, p_bad, bad, effect, measure, **common)
    return Verdict(INCONCLUSIVE, name, p_good, good, effect, measure,
                   note="not significantly on either side of the threshold", **common)


def two_sample(x: np.ndarray, y: np.ndarray) -> tuple:
    """The two-sample test ``TEST_RULE`` picks for ``x`` against ``y``: (its name, the effect measure, the effect of
    x relative to y, p_of(alternative) with alternative "two-sided", "less" or "greater" for x against y).  Two
    samples that are each constant but differ are told apart by Mann-Whitney U, which handles ties."""
    if _normal_enough(x) and _normal_enough(y):
        pooled = math.sqrt(((len(x) - 1) * x.var(ddof=1) + (len(y) - 1) * y.var(ddof=1)) / (len(x) + len(y) - 2))

        def p_t(alt):
            return float(sps.ttest_ind(x, y, equal_var=False, alternative=alt).pvalue)
        return "welch-t", "cohen-d", float((x.mean() - y.mean()) / pooled), p_t
    u = sps.mannwhitneyu(x, y, alternative="two-sided").statistic

    def p_u(alt):
        return float(sps.mannwhitneyu(x, y, alternative=alt).pvalue)
    return "mann-whitney-u", "rank-biserial", float(2 * u / (len(x) * len(y)) - 1), p_u


def against_baseline(values: Sequence[float], baseline: Sequence[float], higher_is_better: bool,
                     alpha: float = 0.05, label: str = "baseline") -> Verdict:
    """Is this run a regression from ``baseline``?  Two-sided test first, one-sided second.

    PASS when there is no significant difference, or a significant improvement;
    FAIL when significantly worse; INCONCLUSIVE when a two-sided difference is
    found whose direction the one-sided tests cannot confirm.
    """
    _check_alpha(alpha)
    x = np.asarray(values, dtype=float)
    y = np.asarray(baseline, dtype=float)
    if len(x) == 0 or len(y) == 0:
        raise ValueError(f"no successful trials to compare ({len(x)} here, {len(y)} in the {label})")
    worse, better = ("less", "greater") if higher_is_better else ("greater", "less")
    info = {"source": label, "n": int(len(y)), "mean": float(y.mean())}
    common = dict(alpha=alpha, rule=TEST_RULE, baseline=info)

    if np.all(x == x[0]) and np.all(y == y[0]) and x[0] == y[0]:
        return Verdict(PASS, "none (identical constant samples)", 1.0, "two-sided", 0.0, "rank-biserial",
                       note=f"every trial in both runs equals {x[0]:g}", **common)

    name, measure, effect, p_of = two_sample(x, y)
    p_two = p_of("two-sided")
    if not p_two < alpha:
        return Verdict(PASS, name, p_two, "two-sided", effect, measure,
                       note=f"no significant difference from the {label}", **common)
    p_worse = p_of(worse)
    if p_worse < alpha:
        return Verdict(FAIL, name, p_worse, worse, effect, measure,
                       note=f"significantly worse than the {label}", **common)
    p_better = p_of(better)
    if p_better < alpha:
        return Verdict(PASS, name, p_better, better, effect, measure,
                       note=f"significantly better than the {label}", **common)
    return Verdict(INCONCLUSIVE, name, p_two, "two-sided", effect, measure,
                   note="two-sided difference without a confirmed direction", **common)


def with_lower_bounds(verdict: Verdict, n_lower_bounds: int) -> Verdict:
    """Withdraw a conclusion that lower-bound values cannot support.

    A trial stopped by a cap reports a lower bound: the true value may be
    larger.  A conclusion that the location is *below* its reference (the
    alternative "less": FAIL against a minimum, PASS against a maximum, a
    regression of a higher-is-better figure) then has no footing, and becomes
    INCONCLUSIVE.  Conclusions that the location is above stand.
    """
    if n_lower_bounds and verdict.alternative == "less" and verdict.result in (PASS, FAIL):
        verdict.note = (f"{verdict.result} withdrawn: {n_lower_bounds} trial value(s) are lower bounds (a cap was "
                        f"reached), so the true values may be higher; raise the cap to decide. {verdict.note}").strip()
        verdict.result = INCONCLUSIVE
    return verdict


def combine(verdicts: Sequence[Verdict]) -> Optional[str]:
    """One word for several verdicts: FAIL beats INCONCLUSIVE beats PASS."""
    results = {v.result for v in verdicts}
    for word in (FAIL, INCONCLUSIVE, PASS):
        if word in results:
            return word
    return None
