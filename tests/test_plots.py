"""The reports' pictures (reports/plots.py) and report.html (reports/html.py), drawn from results.json: files
beside report.md, the same SVG inline in the page, and a report that never depends on them (no run, no socket)."""

import pytest
from test_reports import sample_results

from reports import plots
from reports.__main__ import main as reports_main
from reports.html import to_html

pytestmark = pytest.mark.skipif(plots.unavailable() is not None, reason=plots.MISSING)


def timed(name, x, values, unit="ms"):
    return {"benchmark": "test_async_message_processing_time", "variant": name, "title": "Asynchronous Message "
            "Processing Time", "unit": unit, "symbol": "TMPT", "series_x": {"name": "switches", "value": x},
            "trials": [{"index": i + 1, "value": v, "ok": True} for i, v in enumerate(values)]}


def test_each_entry_gets_its_trials_and_a_time_gets_its_cdf_and_a_series_its_line():
    data = {"benchmarks": [timed("1sw", 1, [1.0, 1.2, 1.1]), timed("8sw", 8, [2.0, 2.5, 2.2]),
                           {**timed("none", 16, []), "series_x": None},
                           {**timed("cap", 0, [16, 16], unit="sessions"), "benchmark": "test_other", "variant": None,
                            "series_x": None}]}
    got = plots.figures(data)
    names = {key: [name for name, _caption, _svg in pics] for key, pics in got["entries"].items()}
    assert names["test_async_message_processing_time[1sw]"] == ["test-async-message-processing-time-1sw-trials.svg",
                                                               "test-async-message-processing-time-1sw-cdf.svg"]
    assert names["test_other"] == ["test-other-trials.svg"]                    # no CDF for a count
    assert "test_async_message_processing_time[none]" not in names             # no successful trial: no picture
    [(name, caption, svg)] = got["series"][("test_async_message_processing_time", "switches")]
    assert name == "series-test-async-message-processing-time-switches.svg" and svg.startswith("<svg")
    assert "95 % CI" in caption


def test_render_writes_the_plots_links_them_from_the_report_and_inlines_them_in_the_page(tmp_path):
    store = sample_results(tmp_path)
    assert reports_main(["render", str(store.path)]) == 0
    svg = (tmp_path / "plots" / "test-control-session-capacity-trials.svg").read_text()
    md = (tmp_path / "report.md").read_text()
    assert "![the trials (box plot, each trial a point)](plots/test-control-session-capacity-trials.svg)" in md
    page = (tmp_path / "report.html").read_text()
    assert svg in page and "plots/" not in page.split("<body>")[1].replace(svg, "")
    assert page.startswith("<!DOCTYPE html>") and "<table>" in page and "http" not in page.split("<body>")[1] \
        .replace(svg, "")                                                     # nothing to fetch: opens offline


def test_a_plot_that_cannot_be_drawn_never_costs_the_report(tmp_path, monkeypatch):
    store = sample_results(tmp_path)

    def broken(_data):
        raise RuntimeError("no display")
    monkeypatch.setattr(plots, "figures", broken)
    assert reports_main(["render", str(store.path)]) == 0
    assert "**Plots.** not drawn (RuntimeError: no display)" in (tmp_path / "report.md").read_text()
    assert (tmp_path / "junit.xml").exists() and (tmp_path / "report.html").exists()


def test_the_page_converts_what_the_report_writes():
    md = "\n".join(["# Title", "", "Some **bold** and `code` <b>.", "", "| A | B |", "|---|---|", "| x \\| y | 2 |",
                    "", "- one", "- two", "", "```", "<raw> | text", "```", "", "![cap](plots/a.svg)",
                    "![gone](plots/b.svg)"])
    page = to_html(md, {"plots/a.svg": "<svg>A</svg>"})
    assert "<h1>Title</h1>" in page and "<strong>bold</strong>" in page and "<code>code</code>" in page
    assert "&lt;b&gt;" in page and "<td>x | y</td>" in page and "<ul><li>one</li><li>two</li></ul>" in page
    assert "<pre>&lt;raw&gt; | text</pre>" in page
    assert "<figure><svg>A</svg><figcaption>cap</figcaption></figure>" in page
    assert "(plot plots/b.svg not available)" in page


def test_a_rate_search_gets_its_levels_offered_against_answered():
    def level(offered, apr, loss_free):
        return {"offered_rate": offered, "apr": apr, "loss_free": loss_free}
    bench = {"benchmark": "test_async_message_processing_rate", "variant": "4sw", "unit": "responses/s",
             "title": "Maximum Asynchronous Message Processing Rate",
             "trials": [{"index": 1, "ok": True, "value": 9000.0,
                         "details": {"search": [level(76000, 7600, False), level(8400, 8400, True)]}},
                        {"index": 2, "ok": True, "value": 9100.0,
                         "details": {"search": [level(70000, 7500, False), level(8300, 8300, True)]}}]}
    names = [name for name, _c, _s in plots.figures({"benchmarks": [bench]})["entries"][
        "test_async_message_processing_rate[4sw]"]]
    assert names[-1] == "test-async-message-processing-rate-4sw-levels.svg"
    svg = plots.levels_figure(bench)
    assert "4 levels, 2 trials" in svg and "loss-free level" in svg and "level with loss" in svg
    assert plots.levels_figure({**bench, "trials": bench["trials"][:1]}) is not None
    assert plots.levels_figure({**bench, "trials": []}) is None


def test_a_scaling_point_search_gets_its_curve_and_its_latencies():
    def step(sr, t_sr):
        return {"offered_rate": sr, "t_sr": t_sr, "eta": t_sr / sr,
                "latency_served_ms": {"p50": 1.0 + sr / 1000, "p99": 3.0 + sr / 500}}
    bench = {"benchmark": "test_northbound_scaling_point", "variant": "async", "unit": "requests/s",
             "parameters": {"eta_threshold": 0.8},
             "trials": [{"index": 1, "ok": True, "value": 2500.0,
                         "details": {"curve": [step(1000, 1000), step(2000, 1990), step(4000, 2400),
                                               step(2500, 2100)]}}]}
    names = [name for name, _c, _s in plots.figures({"benchmarks": [bench]})["entries"][
        "test_northbound_scaling_point[async]"]]
    assert names[-2:] == ["test-northbound-scaling-point-async-curve.svg",
                          "test-northbound-scaling-point-async-latency.svg"]
    svg = plots.curve_figure(bench)
    assert "4 steps" in svg and "η ≥ 0.8" in svg and "η &lt; 0.8" in svg and "T_SR = 0.8·SR" in svg
    assert "served latency p99" in plots.latency_figure(bench)
    assert plots.curve_figure({**bench, "trials": []}) is None and plots.latency_figure({**bench, "trials": []}) is None
