"""python -m reports compare: Holm's correction, the pairwise tests and the ranking with ties, from hand-made results
(no run)."""

import numpy as np
import pytest

from reports.__main__ import main
from reports.compare import compare_runs, holm, render_text, run_labels, to_dict


def results(name, values, benchmark="test_async_message_processing_time", hib=False, variant=None, version="1"):
    return {"run": {"controller": {"name": name, "version": version}},
            "benchmarks": [{"benchmark": benchmark, "variant": variant, "title": "Asynchronous Message Processing Time",
                            "unit": "ms", "higher_is_better": hib,
                            "trials": [{"ok": True, "value": float(v)} for v in values] + [{"ok": False}]}]}


def sample(center, n=30, seed=0):
    return np.random.default_rng(seed).normal(center, 1.0, n)


def test_holm_multiplies_the_kth_smallest_by_m_minus_k_and_keeps_the_order():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.001]) == pytest.approx([0.5, 0.002])
    assert holm([0.6, 0.7]) == pytest.approx([1.0, 1.0])       # capped at 1, and never below an earlier one
    assert holm([]) == []


def test_a_clearly_faster_controller_ranks_first_and_two_alike_share_the_next_rank():
    runs = [("slow-a", results("slow-a", sample(20, seed=1))), ("fast", results("fast", sample(10, seed=2))),
            ("slow-b", results("slow-b", sample(20, seed=3)))]
    [c] = compare_runs(runs)
    assert [(r.label, r.rank) for r in c.runs][0] == ("fast", 1)
    assert {r.label: r.rank for r in c.runs} == {"fast": 1, "slow-a": 2, "slow-b": 2}
    by = {(p.a, p.b): p for p in c.pairs}
    assert by[("slow-a", "fast")].better == "fast" and by[("slow-a", "fast")].p_holm < 0.05
    assert by[("slow-a", "slow-b")].better is None and by[("slow-a", "slow-b")].p_holm >= 0.05
    assert all(p.p_holm >= p.p_two for p in c.pairs)
    text = render_text([c], 0.05)
    assert "fast better (one-sided p =" in text and "no significant difference" in text
    assert to_dict([c], 0.05)["benchmarks"][0]["runs"][0]["rank"] == 1


def test_higher_is_better_turns_the_direction_round():
    runs = [("low", results("low", sample(100, seed=4), hib=True)),
            ("high", results("high", sample(110, seed=5), hib=True))]
    [c] = compare_runs(runs)
    assert c.pairs[0].better == "high" and [r.label for r in c.runs] == ["high", "low"]


def test_identical_constants_tie_and_a_run_without_the_benchmark_is_named():
    runs = [("a", results("a", [16] * 10)), ("b", results("b", [16] * 10)),
            ("c", results("c", [1, 2, 3], benchmark="test_other")), ("d", results("d", [5]))]
    got = compare_runs(runs)
    assert len(got) == 1                                     # test_other: one run only, not compared
    [c] = got
    assert c.pairs[0].p_two == 1.0 and {r.rank for r in c.runs} == {1}
    assert c.absent == ["c", "d (1 successful trial(s))"]


def test_runs_are_named_by_controller_and_version_and_told_apart_by_folder():
    a, b = results("ryu", [1, 2]), results("ryu", [1, 2])
    assert run_labels([(a, "x/results.json"), (b, "y/results.json")]) == ["ryu 1 (x)", "ryu 1 (y)"]
    assert run_labels([(a, "x/results.json"), (results("osken", [1]), "y/results.json")]) == ["ryu 1", "osken 1"]
    assert run_labels([(a, "x/results.json"), (b, "x/results.json")])[1] == "ryu 1 (x/results.json)"


def test_the_command_refuses_one_file_a_missing_file_and_a_bad_alpha(tmp_path, capsys):
    assert main(["compare", str(tmp_path / "a.json")]) == 2
    assert "two or more" in capsys.readouterr().err
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 2
    assert "cannot read results file" in capsys.readouterr().err
    assert main(["compare", "a", "b", "--alpha", "1.5"]) == 2
    assert "--alpha must be between 0 and 1" in capsys.readouterr().err


def test_the_command_draws_the_runs_side_by_side_when_asked(tmp_path, capsys):
    import json
    paths = []
    for name, center in (("ryu", 20), ("osken", 10)):
        data = results(name, sample(center, n=12, seed=center))
        data["schema_version"] = 2
        path = tmp_path / name / "results.json"
        path.parent.mkdir()
        path.write_text(json.dumps(data))
        paths.append(str(path))
    assert main(["compare", *paths, "--plots", str(tmp_path / "plots")]) == 0
    [svg] = sorted((tmp_path / "plots").glob("*.svg"))
    assert svg.name == "compare-test-async-message-processing-time.svg"
    text = svg.read_text()
    assert text.startswith("<svg") and "ryu 1" in text and "osken 1" in text
    assert f"plot: {svg}" in capsys.readouterr().out
