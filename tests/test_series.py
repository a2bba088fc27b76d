"""python -m reports series: neighbour tests, the saturation point and the best scenario of a series, from
hand-made results (no run)."""

import numpy as np

from reports.__main__ import main
from reports.series import analyse_all, render_text, series_of


def point(x, values, hib=True, name="switches"):
    return {"benchmark": "test_async_message_processing_rate", "variant": f"{x}sw", "title": "Rate", "unit": "msg/s",
            "higher_is_better": hib, "series_x": {"name": name, "value": x},
            "trials": [{"ok": True, "value": float(v)} for v in values]}


def around(center, seed, n=30):
    return np.random.default_rng(seed).normal(center, 1.0, n)


def test_a_rate_that_grows_then_flattens_then_drops_saturates_where_it_stops_growing():
    data = {"benchmarks": [point(1, around(100, 1)), point(2, around(200, 2)), point(4, around(300, 3)),
                           point(8, around(300, 4)), point(16, around(250, 5))]}
    [a] = analyse_all(data)
    assert [s.change for s in a.steps] == ["better", "better", "no significant change", "worse"]
    assert a.saturation == 4 and a.first_worse == 16
    assert set(a.best) == {4, 8}
    assert all(s.p_holm >= s.p_two for s in a.steps)
    text = render_text([a], 0.05)
    assert "saturation point: switches = 4" in text and "first significantly worse: switches = 16" in text


def test_a_time_that_only_grows_saturates_at_once_and_the_first_point_is_best():
    data = {"benchmarks": [point(x, around(10 * x, x), hib=False) for x in (1, 2, 4)]}
    [a] = analyse_all(data)
    assert a.saturation == 1 and a.first_worse == 2 and a.best == [1]


def test_points_without_enough_trials_are_left_out_and_lone_points_are_no_series():
    data = {"benchmarks": [point(1, [5]), point(2, around(5, 1)), point(4, around(5, 2)),
                           point(9, [1, 2], name="nodes")]}
    assert list(series_of(data)) == [("test_async_message_processing_rate", "switches")]
    [a] = analyse_all(data)
    assert a.skipped == [1] and [x for x, _n, _m in a.points] == [2, 4]


def test_the_command_says_when_a_run_has_no_series(tmp_path, capsys):
    assert main(["series", str(tmp_path / "missing.json")]) == 2
    assert "cannot read results file" in capsys.readouterr().err
