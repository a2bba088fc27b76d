"""Pictures of a run, drawn from results.json with matplotlib (never by rerunning), as SVG text.

* every benchmark entry: its trials as a box plot with each trial a point, and the profile's bound as a line;
* a time benchmark (ms, s, µs): the trials' distribution as a CDF;
* the northbound scaling point: T_SR against SR over every step of every search, and the served latency per step;
* a series (entries of one benchmark sharing the name of their X: ``--switches 1,2,4,...``): the mean at each X
  with the 95 % interval of the mean as a band, the medians as points.

:func:`figures` returns them per entry and per series; :func:`reports.__main__.render_all` writes them beside
report.md (``plots/*.svg``, linked from it) and inlines them in report.html.
"""

from __future__ import annotations

import io
import re
from typing import Optional

from . import stats
from .results import ok_values

TIME_UNITS = {"ms", "s", "µs", "us", "ns"}
MISSING = "matplotlib is not installed (pip install matplotlib): the reports have no plots"


def unavailable() -> Optional[str]:
    """Why no plot can be drawn here, or None."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return MISSING
    return None


def entry_key(bench: dict) -> str:
    return f"{bench['benchmark']}[{bench['variant']}]" if bench.get("variant") else bench["benchmark"]


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "bmwg-sdn", "font.size": 9})
    import matplotlib.pyplot as plt
    return plt


def _svg(fig) -> str:
    plt = _pyplot()
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]          # inline: no XML declaration or DOCTYPE


def _label(bench: dict) -> str:
    unit = bench.get("unit", "")
    return f"{bench.get('symbol') or 'value'} ({unit})" if unit else (bench.get("symbol") or "value")


def trials_figure(bench: dict) -> Optional[str]:
    values = ok_values(bench)
    if not values:
        return None
    import numpy as np
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(4.2, 3.0))
    ax.boxplot(values, widths=0.5, showfliers=False)
    jitter = np.random.default_rng(0).uniform(-0.12, 0.12, len(values))
    ax.scatter(1 + jitter, values, s=10, alpha=0.6, zorder=3)
    verdict = bench.get("verdict") or {}
    if verdict.get("threshold") is not None:
        ax.axhline(verdict["threshold"], linestyle="--", linewidth=1, color="tab:red",
                   label=f"{verdict.get('bound', 'bound')} {verdict['threshold']:g}")
        ax.legend(loc="best", fontsize=8)
    ax.set_xticks([1], [f"{len(values)} trials"])
    ax.set_ylabel(_label(bench))
    ax.set_title(f"{bench.get('title', bench['benchmark'])}" + (f" ({bench['variant']})" if bench.get("variant")
                                                                  else ""), fontsize=9)
    return _svg(fig)


def cdf_figure(bench: dict) -> Optional[str]:
    values = sorted(ok_values(bench))
    if len(values) < 2 or bench.get("unit") not in TIME_UNITS:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(4.2, 3.0))
    ax.step(values, [(i + 1) / len(values) for i in range(len(values))], where="post")
    ax.set_xlabel(_label(bench))
    ax.set_ylabel("fraction of trials ≤ x")
    ax.set_ylim(0, 1.02)
    ax.set_title("distribution of the trials (CDF)", fontsize=9)
    return _svg(fig)


def levels_figure(bench: dict) -> Optional[str]:
    """A rate search's levels (§5.1.3): each level tried, offered rate against answered rate, loss-free or not, every
    trial's levels together; the diagonal is 'every request answered'."""
    levels = [(t.get("index"), lv) for t in bench.get("trials", []) if t.get("ok")
              for lv in (t.get("details") or {}).get("search") or ()
              if isinstance(lv, dict) and lv.get("offered_rate") is not None and lv.get("apr") is not None]
    if len(levels) < 2:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.0, 3.4))
    for loss_free, marker, label in ((True, "o", "loss-free level"), (False, "x", "level with loss")):
        pts = [lv for _, lv in levels if bool(lv.get("loss_free")) is loss_free]
        if pts:
            ax.scatter([lv["offered_rate"] for lv in pts], [lv["apr"] for lv in pts], marker=marker, s=16,
                       alpha=0.7, label=label)
    top = max(max(lv["offered_rate"], lv["apr"]) for _, lv in levels)
    ax.plot([0, top], [0, top], linestyle=":", linewidth=1, color="grey", label="answered = offered")
    ax.set_xscale("symlog")
    ax.set_xlabel("offered rate (requests/s)")
    ax.set_ylabel(f"answered rate ({bench.get('unit', '')})")
    trials = len({i for i, _ in levels})
    ax.set_title(f"the rate search's levels ({len(levels)} levels, {trials} trials)", fontsize=9)
    ax.legend(loc="best", fontsize=8)
    return _svg(fig)


def _curve_steps(bench: dict) -> list:
    return [(t.get("index"), st) for t in bench.get("trials", []) if t.get("ok")
            for st in (t.get("details") or {}).get("curve") or ()
            if isinstance(st, dict) and st.get("offered_rate") is not None and st.get("t_sr") is not None]


def curve_figure(bench: dict) -> Optional[str]:
    """The northbound scaling point's curve: every step of every repetition's search, throughput T_SR against the
    offered rate SR, η ≥ η0 or not; the lines T_SR = SR and T_SR = η0·SR, and the scaling points."""
    steps = _curve_steps(bench)
    if len(steps) < 2:
        return None
    eta0 = (bench.get("parameters") or {}).get("eta_threshold", 0.8)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.0, 3.4))
    for held, marker, label in ((True, "o", f"η ≥ {eta0:g}"), (False, "x", f"η < {eta0:g}")):
        pts = [st for _, st in steps if (st.get("eta", 0) >= eta0) is held]
        if pts:
            ax.scatter([st["offered_rate"] for st in pts], [st["t_sr"] for st in pts], marker=marker, s=16,
                       alpha=0.7, label=label)
    top = max(st["offered_rate"] for _, st in steps)
    ax.plot([0, top], [0, top], linestyle=":", linewidth=1, color="grey", label="T_SR = SR")
    ax.plot([0, top], [0, eta0 * top], linestyle="--", linewidth=1, color="tab:red", label=f"T_SR = {eta0:g}·SR")
    for v in ok_values(bench):
        ax.axvline(v, linewidth=0.5, alpha=0.3, color="tab:green")
    ax.set_xlabel("offered rate SR (requests/s)")
    ax.set_ylabel("served T_SR (requests/s)")
    ax.set_title(f"T_SR against SR ({len(steps)} steps; green: the scaling points)", fontsize=9)
    ax.legend(loc="best", fontsize=8)
    return _svg(fig)


def latency_figure(bench: dict) -> Optional[str]:
    """The northbound scaling point's served latency per step: median and 99th percentile against SR."""
    steps = [(i, st) for i, st in _curve_steps(bench) if st.get("latency_served_ms")]
    if len(steps) < 2:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.0, 3.4))
    for key, marker in (("p50", "o"), ("p99", "^")):
        ax.scatter([st["offered_rate"] for _, st in steps], [st["latency_served_ms"][key] for _, st in steps],
                   marker=marker, s=14, alpha=0.7, label=f"served latency {key}")
    ax.set_yscale("log")
    ax.set_xlabel("offered rate SR (requests/s)")
    ax.set_ylabel("ms")
    ax.set_title("latency from request to FLOW_MOD, per step", fontsize=9)
    ax.legend(loc="best", fontsize=8)
    return _svg(fig)


def compare_figure(runs: list, title: str, label: str) -> Optional[str]:
    """Several runs' trials of one benchmark side by side: a box plot with points per run (``runs``: [(run label,
    values)]), for ``python -m reports compare --plots``."""
    runs = [(name, list(values)) for name, values in runs if values]
    if len(runs) < 2:
        return None
    import numpy as np
    plt = _pyplot()
    fig, (ax, cdf) = plt.subplots(1, 2, figsize=(8.4, 3.2))
    ax.boxplot([v for _, v in runs], widths=0.5, showfliers=False)
    rng = np.random.default_rng(0)
    for i, (_, values) in enumerate(runs, 1):
        ax.scatter(i + rng.uniform(-0.12, 0.12, len(values)), values, s=8, alpha=0.6, zorder=3)
    ax.set_xticks(range(1, len(runs) + 1), [name for name, _ in runs], fontsize=7, rotation=15)
    ax.set_ylabel(label)
    for name, values in runs:
        v = sorted(values)
        cdf.step(v, [(i + 1) / len(v) for i in range(len(v))], where="post", label=name)
    cdf.set_xlabel(label)
    cdf.set_ylabel("fraction of trials ≤ x")
    cdf.legend(loc="best", fontsize=7)
    fig.suptitle(title, fontsize=9)
    return _svg(fig)


def series_figure(points: list, x_name: str) -> Optional[str]:
    """``points``: [(x, entry)] sorted by x, each entry with successful trials."""
    rows = []
    for x, bench in points:
        values = ok_values(bench)
        if values:
            ci = stats.ci95_of_mean(values)
            mean = stats.mean(values)
            rows.append((x, mean, stats.median(values), ci or (mean, mean)))
    if len(rows) < 2:
        return None
    plt = _pyplot()
    bench = points[0][1]
    fig, ax = plt.subplots(figsize=(5.0, 3.2))
    xs = [r[0] for r in rows]
    ax.plot(xs, [r[1] for r in rows], marker="o", label="mean")
    ax.fill_between(xs, [r[3][0] for r in rows], [r[3][1] for r in rows], alpha=0.25, label="95 % CI of the mean")
    ax.scatter(xs, [r[2] for r in rows], marker="x", zorder=3, label="median")
    numeric = all(isinstance(x, (int, float)) for x in xs)
    if numeric and min(xs) > 0 and max(xs) / min(xs) >= 8:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(x_name)
    ax.set_ylabel(_label(bench))
    ax.set_title(f"{bench.get('title', bench['benchmark'])} over {x_name}", fontsize=9)
    ax.legend(loc="best", fontsize=8)
    return _svg(fig)


def figures(data: dict) -> dict:
    """{"entries": {entry key: [(file name, caption, svg)]}, "series": {(benchmark, X name): [...]}} for ``data``;
    empty when matplotlib is missing."""
    out: dict = {"entries": {}, "series": {}}
    if unavailable():
        return out
    groups: dict = {}
    for bench in data.get("benchmarks", []):
        key = entry_key(bench)
        pics = []
        for kind, caption, draw in (("trials", "the trials (box plot, each trial a point)", trials_figure),
                                    ("cdf", "the trials' distribution (CDF)", cdf_figure),
                                    ("levels", "the rate search's levels, offered against answered", levels_figure),
                                    ("curve", "T_SR against the offered rate SR, every step", curve_figure),
                                    ("latency", "served latency per step (p50, p99)", latency_figure)):
            svg = draw(bench)
            if svg:
                pics.append((f"{slug(key)}-{kind}.svg", caption, svg))
        if pics:
            out["entries"][key] = pics
        x = bench.get("series_x")
        if isinstance(x, dict) and "name" in x:
            groups.setdefault((bench["benchmark"], x["name"]), []).append((x["value"], bench))
    for (name, x_name), points in groups.items():
        if len(points) < 2:
            continue
        svg = series_figure(sorted(points, key=lambda p: p[0]), x_name)
        if svg:
            out["series"][(name, x_name)] = [(f"series-{slug(name)}-{slug(x_name)}.svg",
                                              f"{x_name}: mean, 95 % CI band and median", svg)]
    return out
