"""Change points along the history (reports/changes.py) and the CI check over a store (reports/regressions.py):
known steps found once, at their run, in the right direction; unchanged series left alone; acknowledgements;
the exit status and the JUnit file."""

import random
import re
import xml.etree.ElementTree as ET

import pytest

from reports.__main__ import main as reports_main
from reports.changes import IMPROVEMENT, REGRESSION, change_points
from reports.history import open_store
from reports.regressions import AckError, load_acks
from reports.stats import summarize


def noisy(level: float, n: int, sd: float, seed: int) -> list:
    rng = random.Random(seed)
    return [rng.gauss(level, sd) for _ in range(n)]


def test_a_delay_that_steps_from_2_to_3_ms_after_run_12_is_one_regression_at_run_13():
    values = noisy(2.0, 12, 0.05, 1) + noisy(3.0, 12, 0.05, 2)
    found = change_points(values, higher_is_better=False)
    (c,) = found.change_points
    assert (c.index, c.direction, c.before_runs, c.after_runs) == (12, REGRESSION, 12, 12)
    assert c.p_value <= 0.001 and c.magnitude == pytest.approx(0.5, abs=0.05)


def test_a_rate_cap_that_drops_20_percent_is_a_regression_and_a_rise_an_improvement():
    drop = noisy(5000, 12, 40, 3) + noisy(4000, 12, 40, 4)
    (c,) = change_points(drop, higher_is_better=True).change_points
    assert (c.index, c.direction) == (12, REGRESSION) and c.magnitude == pytest.approx(-0.2, abs=0.02)
    (c,) = change_points(drop[::-1], higher_is_better=True).change_points
    assert (c.index, c.direction) == (12, IMPROVEMENT)
    (c,) = change_points(drop, higher_is_better=None).change_points
    assert c.direction == "change"


@pytest.mark.parametrize("seed", range(5))
def test_an_unchanged_series_has_no_change_point(seed):
    assert change_points(noisy(2.4, 24, 0.15, 100 + seed), higher_is_better=False).change_points == []


def test_one_run_that_went_astray_is_not_a_change_and_a_constant_series_has_none():
    values = noisy(2.0, 24, 0.05, 7)
    values[11] = 40.0
    assert change_points(values).change_points == []
    assert change_points([5.0] * 24).change_points == []


def test_a_change_needs_min_runs_on_each_side_and_min_change():
    assert not change_points(noisy(2.0, 9, 0.05, 1), min_runs=5).enough_data
    late = noisy(2.0, 20, 0.05, 8) + noisy(3.0, 4, 0.05, 9)       # 4 runs after the step: not yet
    assert change_points(late, min_runs=5).change_points == []
    small = noisy(100, 12, 0.5, 10) + noisy(103, 12, 0.5, 11)      # significant, but 3 %
    assert [c.index for c in change_points(small).change_points] == [12]
    assert change_points(small, min_change=0.05).change_points == []
    with pytest.raises(ValueError, match="min_runs 1"):
        change_points(small, min_runs=1)


def test_two_steps_are_two_change_points():
    values = noisy(2.0, 10, 0.03, 12) + noisy(3.0, 10, 0.03, 13) + noisy(2.0, 10, 0.03, 14)
    assert [(c.index, c.direction) for c in change_points(values, False).change_points] == [
        (10, REGRESSION), (20, IMPROVEMENT)]


# ----------------------------------------------------------------------- the check over a store

def run_of(number: int, median: float, controller="null", benchmark="test_async_message_processing_time") -> dict:
    values = [median + d for d in (-0.02, -0.01, 0.0, 0.01, 0.02)]
    return {"schema_version": 2,
            "run": {"started": f"2026-11-01T00:{number:02d}:00+00:00", "pid": 1000 + number, "command": "pytest",
                    "finished": f"2026-11-01T00:{number:02d}:30+00:00",
                    "controller": {"name": controller, "version": f"1.{number}"},
                    "host": {"cpus": 2, "cpu_model": "x", "memory_gib": 24, "os": "Linux", "python": "3.11"},
                    "code": {"version": "0.1.0", "commit": f"{number:040x}", "modified": False}},
            "benchmarks": [{"benchmark": benchmark, "variant": "4sw", "title": "Asynchronous Message Processing Time",
                            "unit": "ms", "higher_is_better": False, "parameters": {"switches": 4},
                            "trials": [{"index": i + 1, "value": v, "ok": True} for i, v in enumerate(values)],
                            "summary": summarize(values), "outcome": {"status": "passed"}}]}


def store_of(spec, medians, **kw):
    """A store at ``spec`` (a folder: its h.db) holding one run per median."""
    path = spec if isinstance(spec, str) else str(spec / "h.db")
    with open_store(path) as store:
        for number, median in enumerate(medians, 1):
            store.add(run_of(number, median, **kw))
    return path


def junit_cases(path):
    return ET.parse(path).getroot().findall(".//testcase")


def test_history_check_fails_on_the_step_passes_once_acknowledged(tmp_path, capsys, history_spec):
    medians = noisy(2.0, 12, 0.05, 21) + noisy(3.0, 12, 0.05, 22)
    path = store_of(history_spec(), medians)
    junit = tmp_path / "junit.xml"
    assert reports_main(["history", "check", "--history", str(path), "--junit", str(junit)]) == 1
    out = capsys.readouterr().out
    assert "REGRESSION       test_async_message_processing_time[4sw] on null" in out
    assert out.count("regression at run 13 (2026-11-01T00:13:00+00:00, null 1.13, commit 000000000000") == 1
    (case,) = junit_cases(junit)
    assert case.get("classname") == "regression detection" and case.find("failure") is not None
    acks = tmp_path / "acks.yaml"
    acks.write_text("acknowledgements:\n  - benchmark: test_async_message_processing_time\n    run: 13\n"
                    "    reason: the delay was raised on purpose\n")
    assert reports_main(["history", "check", "--history", str(path), "--junit", str(junit),
                         "--acknowledgements", str(acks)]) == 0
    assert "acknowledged: the delay was raised on purpose" in capsys.readouterr().out
    (case,) = junit_cases(junit)
    assert case.find("failure") is None and case.find("skipped") is None
    acks.write_text("- run: 12\n  reason: another run\n")            # a different run does not cover it
    assert reports_main(["history", "check", "--history", str(path), "--acknowledgements", str(acks)]) == 1


def test_history_check_passes_an_unchanged_history_and_says_when_it_has_too_few_runs(tmp_path, capsys,
                                                                                       history_spec):
    path = store_of(history_spec(), noisy(2.0, 24, 0.05, 31))
    assert reports_main(["history", "check", "--history", str(path)]) == 0
    assert "no unacknowledged regression" in capsys.readouterr().out
    path = store_of(history_spec("few"), [2.0, 2.1, 2.0])
    junit = tmp_path / "junit.xml"
    assert reports_main(["history", "check", "--history", str(path), "--junit", str(junit)]) == 3
    assert "not enough data" in capsys.readouterr().out
    (case,) = junit_cases(junit)
    assert case.find("skipped") is not None


def test_series_are_kept_apart_by_controller(history_spec):
    path = history_spec()
    with open_store(path) as store:
        for number, median in enumerate(noisy(2.0, 14, 0.05, 41), 1):
            store.add(run_of(number, median, controller="ryu"))
        for number, median in enumerate(noisy(3.0, 14, 0.05, 42), 15):
            store.add(run_of(number, median, controller="osken"))
    assert reports_main(["history", "check", "--history", str(path)]) == 0


@pytest.mark.parametrize("text,says", [
    ("- benchmark: x\n", "'reason' is required"),
    ("- reason: why\n", "name a series"),
    ("- run: first\n  reason: why\n", "'run' must be a run number"),
    ("- colour: red\n  reason: why\n", "unknown key(s) colour"),
    ("acknowledgements: 3\n", "expected a list"),
    ("- [1, 2]\n", "expected a mapping"),
    ("a: [\n", "not valid YAML at line 2"),
])
def test_a_bad_acknowledgements_file_is_named_with_what_is_wrong(tmp_path, text, says, capsys):
    acks = tmp_path / "acks.yaml"
    acks.write_text(text)
    with pytest.raises(AckError, match="item 1" if "item" in says else "acks.yaml"):
        load_acks(acks)
    path = store_of(tmp_path, [2.0])
    assert reports_main(["history", "check", "--history", str(path), "--acknowledgements", str(acks)]) == 2
    assert says in capsys.readouterr().err
    assert load_acks(_empty(tmp_path)) == []


def _empty(tmp_path):
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    return empty


@pytest.mark.parametrize("option,value,says", [("--alpha", "2", "--alpha must be between 0 and 1"),
                                               ("--min-runs", "1", "--min-runs must be 2 or more"),
                                               ("--min-change", "-1", "--min-change must not be negative")])
def test_bad_check_options_are_named(tmp_path, option, value, says, capsys):
    assert reports_main(["history", "check", "--history", str(tmp_path / "h.db"), option, value]) == 2
    assert says in capsys.readouterr().err
    assert not (tmp_path / "h.db").exists()


def test_history_site_is_one_offline_page_with_a_plot_per_series(tmp_path, capsys, history_spec):
    import re
    medians = noisy(2.0, 12, 0.05, 51) + noisy(3.0, 12, 0.05, 52)
    path = history_spec()
    report = tmp_path / "run1" / "report.html"
    report.parent.mkdir()
    report.write_text("<html></html>")
    with open_store(path) as store:
        for number, median in enumerate(medians, 1):
            store.add(run_of(number, median), source=str(report.parent / "results.json") if number == 1 else None)
        for number, median in enumerate(noisy(5.0, 3, 0.05, 53), 30):
            store.add(run_of(number, median, controller="ryu"))
    out = tmp_path / "site"
    assert reports_main(["history", "site", str(out), "--history", str(path)]) == 0
    page = (out / "index.html").read_text()
    assert page.count('<section class="series"') == 2 and page.count("<svg") == 2
    assert 'data-controller="null"' in page and 'data-controller="ryu"' in page
    assert "regression at run 13" in page and 'id="testbed"' in page and 'id="controller"' in page
    assert 'xlink:href="../run1/report.html"' in page                  # the first point links to its run's report
    fetched = re.findall(r'(?:src|href)="([^"#][^"]*)"', page)
    assert fetched and all(not re.match(r"^[a-z]+:", url) for url in fetched), fetched   # nothing to fetch
    assert "not enough data" in page


def test_a_series_too_short_for_the_test_to_reach_alpha_has_not_enough_data():
    from reports.changes import p_floor
    assert p_floor(13, 5) > 0.001 >= p_floor(14, 5)
    step13 = [1.0] * 6 + [2.0] * 7
    assert not change_points(step13).enough_data and change_points(step13).change_points == []
    step14 = [1.0] * 7 + [2.0] * 7
    assert [c.index for c in change_points(step14).change_points] == [7]


def test_a_ci_gate_on_a_store_still_filling_can_pass_saying_so(tmp_path, capsys, history_spec):
    """--allow-not-enough-data: exit 0, not 3, while no series has the runs a change needs; the text and the JUnit
    file still say so. A regression still fails."""
    path = store_of(history_spec("few"), [2.0, 2.1, 2.0])
    junit = tmp_path / "junit.xml"
    assert reports_main(["history", "check", "--history", str(path), "--junit", str(junit),
                         "--allow-not-enough-data"]) == 0
    assert "not enough data" in capsys.readouterr().out
    (case,) = junit_cases(junit)
    assert case.find("skipped") is not None
    stepped = store_of(history_spec(), noisy(2.0, 12, 0.05, 21) + noisy(3.0, 12, 0.05, 22))
    assert reports_main(["history", "check", "--history", str(stepped), "--allow-not-enough-data"]) == 1


def test_the_help_of_python_m_reports_history_names_every_action():
    """`python -m reports --help` and `python -m reports history --help` describe add, list, check and site, and
    the program itself, not only its first command."""
    import argparse

    from reports.__main__ import build_parser
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    history = commands.choices["history"]
    (actions,) = [a for a in history._actions if isinstance(a, argparse._SubParsersAction)]
    listed = next(c for c in commands._choices_actions if c.dest == "history").help
    for text in (listed, history.description):
        assert all(re.search(rf"\b{word}\b", text) for word in actions.choices), text
    assert set(actions.choices) == {"add", "list", "check", "site"}
    assert not parser.description.startswith("``python -m reports render")
