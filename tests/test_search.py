"""The project's one bracket-and-bisect search (fixtures/search.py): its rules, each on a model whose boundary is
known, and the four benchmarks' searches built on it."""

import math

import pytest

from fixtures.search import DOUBLING, Scale, Search, Steps


def boundary(limit: float, tried: list):
    """A level passes when it is at most ``limit``; every level tried is kept in ``tried``."""
    def trial(level):
        tried.append(level)
        return level <= limit
    return trial


def test_doubling_brackets_upward_then_bisection_narrows_on_a_count_scale():
    tried = []
    s = Search(boundary(37, tried), Scale.COUNT, 1, top=1000)
    found = s.bracket(4)
    assert tried == [4, 8, 16, 32, 64] and (found.passed, found.failed) == (32, 64)
    found = s.bisect()
    assert tried[5:] == [48, 40, 36, 38, 37] and (found.passed, found.failed, found.narrowed) == (37, 38, True)


def test_doubling_halves_downward_until_a_level_passes():
    tried = []
    found = Search(boundary(30, tried), Scale.GEOMETRIC, 0.05).bracket(1000)
    assert tried == [1000, 500, 250, 125, 62.5, 31.25, 15.625] and (found.passed, found.failed) == (15.625, 31.25)


def test_a_level_passing_at_the_top_or_failing_at_the_bottom_has_no_bracket_on_that_side():
    tried = []
    found = Search(boundary(1e9, tried), Scale.LINEAR, 0.01, top=100).bracket(30)
    assert tried == [30, 60, 100] and found.top_reached and found.failed is None
    tried = []
    found = Search(boundary(0.5, tried), Scale.GEOMETRIC, 0.01, bottom=1000 / 64).bracket(1000)
    assert tried == [1000, 500, 250, 125, 62.5, 31.25, 15.625] and found.bottom_reached and found.passed is None


def test_additive_steps_climb_by_a_step_that_doubles_and_descend_by_the_step():
    tried = []
    found = Search(boundary(1000, tried), Scale.LINEAR, 0.01).bracket(500, Steps(100))
    assert tried == [500, 600, 800, 1200] and (found.passed, found.failed) == (800, 1200)
    tried = []
    found = Search(boundary(250, tried), Scale.LINEAR, 0.01).bracket(500, Steps(100))
    assert tried == [500, 400, 300, 200] and (found.passed, found.failed) == (200, 300)
    tried = []      # a descent from 1,000, which just failed: 1,000 less 10, 20, 40, ... (the next is below 0)
    found = Search(boundary(100, tried), Scale.LINEAR, 0.01).bracket(990, Steps(10, down_doubles=True))
    assert tried == [990, 980, 960, 920, 840, 680, 360] and found.bottom_reached
    tried = []
    found = Search(boundary(900, tried), Scale.LINEAR, 0.01).bracket(990, Steps(10, down_doubles=True))
    assert tried == [990, 980, 960, 920, 840] and (found.passed, found.failed) == (840, 920)


def test_no_level_at_or_below_zero_is_tried():
    tried = []
    found = Search(boundary(-1, tried), Scale.LINEAR, 0.01).bracket(250, Steps(100))
    assert tried == [250, 150, 50] and found.bottom_reached


@pytest.mark.parametrize("scale, resolution, narrow", [
    (Scale.LINEAR, 0.1, lambda p, f: f - p <= 0.1 * f),
    (Scale.GEOMETRIC, 0.1, lambda p, f: f / p - 1 <= 0.1),
    (Scale.COUNT, 5, lambda p, f: f - p <= 5),
])
def test_bisection_stops_exactly_when_the_scale_calls_the_bracket_narrow(scale, resolution, narrow):
    for limit in (13.0, 77.7, 950.0):
        tried = []
        s = Search(boundary(limit, tried), scale, resolution)
        s.seed(passed=1, failed=1000)
        found = s.bisect()
        assert found.narrowed and narrow(found.passed, found.failed) and found.passed <= limit < found.failed
        # the step before the last was not yet narrow: no trial was wasted
        before = Search(boundary(limit, []), scale, resolution)
        before.seed(passed=1, failed=1000)
        for level in tried[:-1]:
            before.trial(level)
        assert not narrow(before.found.passed, before.found.failed)


def test_midpoints_by_scale():
    assert Scale.LINEAR.midpoint(10, 20) == 15
    assert Scale.GEOMETRIC.midpoint(10, 1000) == pytest.approx(100)
    assert Scale.COUNT.midpoint(10, 15) == 12 and Scale.COUNT.narrow(10, 11, 0)   # a count narrows to one at least


def test_the_budget_is_asked_before_every_trial_and_an_unnarrowed_bracket_says_so():
    tried = []
    s = Search(boundary(37, tried), Scale.COUNT, 1, room=lambda: len(tried) < 7)
    s.bracket(4)
    found = s.bisect()
    assert len(tried) == 7 and not found.narrowed and (found.passed, found.failed) == (32, 40)
    tried = []
    assert Search(boundary(37, tried), Scale.COUNT, 1, room=lambda: False).bracket(4).passed is None and not tried


def test_a_trial_that_answers_none_stops_the_search_with_the_benchmarks_reason():
    tried = []

    def trial(level):
        tried.append(level)
        if level > 100:
            s.stop(f"the generator was the limit at {level:g}")
            return None
        return True
    s = Search(trial, Scale.GEOMETRIC, 0.01)
    found = s.bracket(30)
    assert tried == [30, 60, 120] and found.stopped == "the generator was the limit at 120"
    assert s.bisect().narrowed is False and len(tried) == 3


def test_levels_kept_whatever_order_they_came_in_and_a_cap_ends_the_climb():
    s = Search(boundary(500, []), Scale.LINEAR, 0.01, top=math.inf)
    for level in (300, 900, 200, 700, 400):
        s.trial(level)
    assert (s.found.passed, s.found.failed) == (400, 700)
    tried = []

    def capped(level):
        tried.append(level)
        if s2.climbing and level > 250:
            s2.cap(level)             # the generator offered less than asked: no higher level
        return True
    s2 = Search(capped, Scale.LINEAR, 0.01)
    found = s2.bracket(100, Steps(100))
    assert tried == [100, 200, 400] and found.top_reached and s2.climbing is False


def test_doubling_is_the_default_steps():
    assert DOUBLING.up(10, 5) == 20 and DOUBLING.down(10, 5) == 5


def test_a_hint_is_used_once_each_side_and_replaced_by_the_next():
    tried = []
    s = Search(lambda level: (tried.append(level), level <= 1000)[1], Scale.LINEAR, 0.02)
    s.seed(passed=100, failed=8000)
    s.hint(1005)               # just below: 1005 × 0.99 = 994.95 passes; just above: 1015.05 fails: narrow at once
    found = s.bisect()
    assert tried == [pytest.approx(994.95), pytest.approx(1015.05)] and found.narrowed
    tried.clear()
    s = Search(lambda level: (tried.append(level), level <= 1000)[1], Scale.LINEAR, 0.02)
    s.seed(passed=100, failed=8000)
    s.hint(3000)               # a wrong hint costs two trials, then halving goes on
    s.bisect()
    assert tried[:3] == [pytest.approx(2970), 1535.0, 817.5] and s.found.narrowed
    s = Search(lambda level: True, Scale.COUNT, 1)
    s.hint(500)
    assert s.hinted is None    # a count has no hint


def test_a_hint_below_the_next_step_is_where_the_descent_goes():
    tried = []
    s = Search(lambda level: (tried.append(level), level <= 5040)[1], Scale.LINEAR, 0.01)
    s.seed(failed=5400)
    s.hint(5040)
    s.bracket(5346, Steps(54, down_doubles=True))
    assert tried == [5346, pytest.approx(5014.8)]


def test_a_failed_trial_that_says_nothing_drops_the_hint():
    s = Search(lambda level: False, Scale.LINEAR, 0.01)
    s.hint(1000)
    assert s.hinted == 1000
    s.hint(None)
    assert s.hinted is None


def test_an_opening_at_or_below_zero_or_the_bottom_tries_nothing():
    tried = []
    for start, bottom in ((0, 0.0), (-5, 0.0), (3, 4)):
        found = Search(boundary(10, tried), Scale.COUNT, 1, bottom=bottom).bracket(start)
        assert found.bottom_reached and found.passed is None
    assert tried == []


def test_a_count_is_tried_in_whole_numbers():
    tried = []
    found = Search(boundary(2, tried), Scale.COUNT, 1).bracket(37)
    assert tried == [37, 18, 9, 4, 2] and all(isinstance(n, int) for n in tried) and found.passed == 2


def test_a_hint_is_tried_where_the_next_step_would_go_below_zero():
    tried = []
    s = Search(boundary(50, tried), Scale.LINEAR, 0.02)
    s.hint(40)
    found = s.bracket(300, Steps(400))      # 300 - 400 < 0: no step left, but the hint (39.6) is
    assert tried == [300, pytest.approx(39.6)] and found.passed == pytest.approx(39.6)
