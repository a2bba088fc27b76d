"""Statistics and verdicts against hand-computed values and scipy."""

import inspect
import math
import time
import warnings

import numpy as np
import pytest
from scipy import stats as sps

from reports import verdict as v
from reports.stats import CI95_METHOD, SUMMARY_KEYS, ci95_of_mean, median, percentile, quantiles, summarize


def test_summary_rfc_figures_by_hand():
    s = summarize([2, 4, 4, 4, 5, 5, 7, 9])
    assert s["n"] == 8 and s["mean"] == 5.0
    assert s["variance"] == pytest.approx(32 / 7)  # sum of squared deviations 32, divisor n - 1
    assert s["stdev"] == pytest.approx(math.sqrt(32 / 7))
    assert (s["median"], s["min"], s["max"]) == (4.5, 2, 9)
    assert tuple(s) == SUMMARY_KEYS and s["ci95_method"] == CI95_METHOD


def test_ci95_is_scipys_bootstrap_percentile_interval_and_deterministic():
    values = [2, 4, 4, 4, 5, 5, 7, 9]
    s = summarize(values)
    seed_arg = "rng" if "rng" in inspect.signature(sps.bootstrap).parameters else "random_state"
    seed = {seed_arg: np.random.default_rng(0)}
    ref = sps.bootstrap((np.array(values, float),), np.mean, n_resamples=9999, method="percentile", **seed)
    assert (s["ci95_low"], s["ci95_high"]) == (ref.confidence_interval.low, ref.confidence_interval.high)
    assert summarize(values) == s  # same seed, same interval
    assert 2 < s["ci95_low"] < 5 < s["ci95_high"] < 9


def test_ci95_of_positive_times_never_goes_negative():
    times = [0.05, 0.1, 1.9, 0.04]  # one slow trial: the Student t interval's lower end was about -0.94
    mean, sd = sum(times) / 4, math.sqrt(summarize(times)["variance"])
    assert mean - float(sps.t.ppf(0.975, 3)) * sd / 2 < 0
    s = summarize(times)
    assert 0.04 <= s["ci95_low"] < s["mean"] < s["ci95_high"] <= 1.9
    assert ci95_of_mean(times) == (s["ci95_low"], s["ci95_high"])


def test_ci95_is_fast_enough_to_recompute_after_every_trial():
    rng = np.random.default_rng(1)
    values = list(rng.exponential(1.0, 300))
    started = time.perf_counter()
    low, high = ci95_of_mean(values)
    assert time.perf_counter() - started < 2.0 and low < np.mean(values) < high


def test_summary_zero_variance_and_small_samples():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no degenerate-bootstrap warning
        s = summarize([1017] * 30)
    assert (s["variance"], s["ci95_low"], s["ci95_high"]) == (0.0, 1017.0, 1017.0)
    one = summarize([3])
    assert one["n"] == 1 and one["variance"] is None and one["ci95_low"] is None and one["ci95_method"] is None
    assert summarize([])["n"] == 0 and summarize([])["mean"] is None


def test_percentile_median_and_quantiles():
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([10, 20, 30], 100) == 30 and percentile([], 50) is None
    with pytest.raises(ValueError):
        percentile([1], 101)
    with pytest.raises(ValueError):
        percentile([], -1)
    assert median([4, 1, 3]) == 3 and median([4, 1, 3, 2]) == 2.5 and median([]) is None
    assert quantiles([4, 1, 3, 2]) == [1.75, 2.5, 3.25]  # numpy's default "linear" method
    assert quantiles(range(101), (5, 95, 99)) == list(np.percentile(range(101), (5, 95, 99)))
    assert quantiles([], (50, 99)) == [None, None]
    with pytest.raises(ValueError):
        quantiles([1], (50, 100.5))


def test_zero_variance_capacity_above_threshold_passes_with_exact_sign_p():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no scipy warning, no NaN
        verdict = v.against_threshold([1017] * 30, 1000, "min")
    assert verdict.result == v.PASS and verdict.p_value == 0.5 ** 30
    assert verdict.test.startswith("sign-test") and verdict.effect_size == 1.0


def test_zero_variance_below_threshold_fails_and_small_n_is_inconclusive():
    assert v.against_threshold([900] * 10, 1000, "min").result == v.FAIL
    assert v.against_threshold([1017] * 4, 1000, "min").result == v.INCONCLUSIVE  # 0.5**4 = 0.0625
    equal = v.against_threshold([1000] * 10, 1000, "min")
    assert equal.result == v.PASS and equal.p_value is None


def test_threshold_rank_test_matches_scipy():
    values = [1, 2, 3, 6, 6, 6, 7, 7, 300, 900]  # heavily skewed: Shapiro-Wilk rejects, rank test
    verdict = v.against_threshold(values, 5, "min")
    assert verdict.test == "wilcoxon-signed-rank"
    d = [x - 5 for x in values]
    assert verdict.p_value == pytest.approx(sps.wilcoxon(d, alternative="greater").pvalue)
    assert verdict.p_value > 0.05 and sps.wilcoxon(d, alternative="less").pvalue > 0.05
    assert verdict.result == v.INCONCLUSIVE  # the median (6) is not clearly above 5 with these tails
    assert v.against_threshold(values, 0, "min").result == v.PASS
    # rank-biserial by hand: |d| = 4,3,2,1,1,1,2,2,295,895; tied 1s rank 2, tied 2s rank 5, 3 -> 7, 4 -> 8;
    # negatives (-4, -3, -2) hold 8 + 7 + 5 = 20 of the 55 rank points, positives 35
    assert verdict.effect_size == pytest.approx((35 - 20) / 55)


def test_threshold_t_test_for_normal_data_and_max_bound():
    values = [10.1, 9.8, 10.0, 10.3, 9.9, 10.2, 10.0, 9.7, 10.1, 9.9]
    verdict = v.against_threshold(values, 12, "max")  # times: at most 12 ms
    assert verdict.test == "one-sample-t" and verdict.result == v.PASS
    assert verdict.p_value == pytest.approx(sps.ttest_1samp(values, 12, alternative="less").pvalue)
    assert v.against_threshold(values, 9, "max").result == v.FAIL
    assert v.against_threshold(values, 10.0, "max").result == v.INCONCLUSIVE


def test_baseline_regression_detected_two_sided_then_one_sided():
    base = [1000, 1010, 990, 1005, 995, 1002, 998, 1001, 999, 1003]
    worse = [900, 905, 895, 910, 890, 902, 898, 901, 899, 903]
    fail = v.against_baseline(worse, base, higher_is_better=True)
    assert fail.result == v.FAIL and fail.alternative == "less" and fail.test == "welch-t"
    assert fail.p_value == pytest.approx(sps.ttest_ind(worse, base, equal_var=False, alternative="less").pvalue)
    assert v.against_baseline(base, worse, higher_is_better=True).result == v.PASS  # improvement
    assert v.against_baseline(worse, base, higher_is_better=False).result == v.PASS  # lower time is better


def test_baseline_same_distribution_passes_and_constant_samples_are_handled():
    same = v.against_baseline([5, 6, 7, 5, 6], [6, 5, 7, 6, 5], higher_is_better=True)
    assert same.result == v.PASS and same.test == "mann-whitney-u" and same.p_value > 0.05
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        identical = v.against_baseline([20] * 10, [20] * 10, higher_is_better=True)
        shifted = v.against_baseline([19] * 10, [20] * 10, higher_is_better=True)
    assert identical.result == v.PASS and identical.p_value == 1.0
    assert shifted.result == v.FAIL and shifted.effect_size == -1.0
    assert shifted.p_value == pytest.approx(sps.mannwhitneyu([19] * 10, [20] * 10, alternative="less").pvalue)


def test_verdict_input_errors():
    with pytest.raises(ValueError, match="no successful trials"):
        v.against_threshold([], 1)
    with pytest.raises(ValueError, match="alpha"):
        v.against_threshold([1], 1, alpha=1.5)
    with pytest.raises(ValueError, match="'min' or 'max'"):
        v.against_threshold([1], 1, bound="above")


def test_combine():
    pass_, fail = v.against_threshold([2] * 10, 1), v.against_threshold([0] * 10, 1)
    assert v.combine([pass_, fail]) == v.FAIL and v.combine([pass_]) == v.PASS and v.combine([]) is None


def test_lower_bounds_withdraw_only_conclusions_that_the_value_is_below():
    capped_below_min = v.with_lower_bounds(v.against_threshold([300] * 10, 1000, "min"), 10)
    assert capped_below_min.result == v.INCONCLUSIVE and "lower bounds" in capped_below_min.note
    capped_above_min = v.with_lower_bounds(v.against_threshold([1200] * 10, 1000, "min"), 10)
    assert capped_above_min.result == v.PASS  # at least 1200 is at least 1000
    under_max = v.with_lower_bounds(v.against_threshold([5] * 10, 10, "max"), 3)
    assert under_max.result == v.INCONCLUSIVE  # "at most 10" cannot rest on "at least 5"
    regression = v.with_lower_bounds(v.against_baseline([19] * 10, [20] * 10, higher_is_better=True), 10)
    assert regression.result == v.INCONCLUSIVE
    uncapped = v.with_lower_bounds(v.against_threshold([300] * 10, 1000, "min"), 0)
    assert uncapped.result == v.FAIL


def test_one_percentile_rule_everywhere_the_p99_of_1_to_100_reads_99_01():
    """The project's one percentile (emulator.percentile): the reports, the robustness screen's sentinel and the
    northbound generator read the same rank rule (that no other module defines its own: tests/test_toolkit.py)."""
    import emulator.malformed as malformed
    from emulator.percentile import percentile as one
    assert one(range(1, 101), 99) == percentile(list(range(1, 101)), 99) == pytest.approx(99.01)
    assert quantiles([1.0, 2.0, 3.0, 4.0], (50,)) == [2.5] and one([], 50) is None
    assert malformed.percentile is one            # the screen's sentinel; the generator's: tests/test_nbload.py


@pytest.mark.parametrize("what", ["profile", "known findings", "topology", "acknowledgements"])
def test_one_yaml_loader_every_bad_document_gets_one_message_shape(tmp_path, what):
    """emulator.documents.load_yaml: a file that is not YAML or cannot be read is named the same way by every
    loader, raised as the loader's own error (that no other module parses YAML: tests/test_toolkit.py)."""
    from emulator.topology import TopologyError
    from emulator.topology import load as load_topology_file
    from fixtures.families.screen import KnownFindingsError, load_known
    from fixtures.profiles import ProfileError, load_profile
    from reports.regressions import AckError, load_acks
    load, error, label = {"profile": (load_profile, ProfileError, "profile"),
                          "known findings": (load_known, KnownFindingsError, "--known-findings"),
                          "topology": (load_topology_file, TopologyError, "topology file"),
                          "acknowledgements": (load_acks, AckError, "acknowledgements")}[what]
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [\n")
    with pytest.raises(error, match=rf"^{label} {bad}: not valid YAML at line 2 column 1: "):
        load(str(bad))
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(error, match=rf"^{label} {binary}: cannot read it: "):
        load(str(binary))
