"""``python -m reports history site DIR``: the history as a static page that needs no network.

One plot per series (benchmark × controller kind, on one testbed and cell: reports/regressions.py): each run's
median in the order the runs started, with the interval of its mean as a bar, every change point
``history check`` finds as a vertical line (red a regression, green an improvement, orange a change of unknown
direction, grey acknowledged), the releases annotated (a run's tag, or its controller version where it changes),
and each point a link to its run's report.html when the store knows where the run's results.json was read from.
Under each plot, the change points and the runs in a table.  Two selectors filter the series by testbed and by
controller.

Everything is in DIR/index.html: plots inline as SVG, style and the filter script inline; it loads nothing.
"""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Optional

from .plots import _pyplot, _svg, slug
from .regressions import change_line

COLOURS = {"regression": "tab:red", "improvement": "tab:green", "change": "tab:orange"}

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 12px; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
section { border-top: 1px solid #ddd; padding-top: 0.6em; margin-top: 1.2em; }
.status-regression { color: #b00; font-weight: bold; }
.filters label { margin-right: 1.5em; }
"""

SCRIPT = """
function applyFilters() {
  var bed = document.getElementById('testbed').value, ctl = document.getElementById('controller').value;
  var shown = 0;
  document.querySelectorAll('section.series').forEach(function (s) {
    var on = (!bed || s.dataset.testbed === bed) && (!ctl || s.dataset.controller === ctl);
    s.style.display = on ? '' : 'none';
    if (on) { shown += 1; }
  });
  document.getElementById('shown').textContent = shown;
}
document.getElementById('testbed').addEventListener('change', applyFilters);
document.getElementById('controller').addEventListener('change', applyFilters);
applyFilters();
"""


def report_link(point: dict, out_dir: Path) -> Optional[str]:
    """The run's report.html, relative to the site, when the store knows its results.json and the report is there."""
    source = point.get("source")
    if not source:
        return None
    report = Path(source).parent / "report.html"
    if not report.is_file():
        return None
    return os.path.relpath(report, out_dir)


def series_figure(s, links: list) -> Optional[str]:
    points = s.points
    if not points:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8.0, 3.0))
    xs = list(range(1, len(points) + 1))
    medians = [p["median"] for p in points]
    for x, p in zip(xs, points):
        if p.get("ci95_low") is not None and p.get("ci95_high") is not None:
            ax.plot([x, x], [p["ci95_low"], p["ci95_high"]], color="tab:blue", alpha=0.35, linewidth=2)
    ax.plot(xs, medians, color="tab:blue", linewidth=0.8, alpha=0.6)
    dots = ax.scatter(xs, medians, s=18, color="tab:blue", zorder=3)
    dots.set_urls(links)
    for c in (s.changes.change_points if s.changes else []):
        colour = "grey" if c.index in s.acknowledged else COLOURS.get(c.direction, "tab:orange")
        ax.axvline(c.index + 0.5, color=colour, linestyle="--", linewidth=1.2,
                   label=f"{'acknowledged ' if c.index in s.acknowledged else ''}{c.direction} at run "
                         f"{points[c.index]['run']} ({c.magnitude:+.1%}, p = {c.p_value:.2g})")
    previous = None
    for x, p in zip(xs, points):
        name = p.get("tag") or p.get("controller_version")
        if name and name != previous:
            ax.annotate(str(name), (x, p["median"]), textcoords="offset points", xytext=(0, 8), fontsize=7,
                        rotation=45, color="#555", parse_math=False)
        previous = name
    ax.set_xticks(xs, [str(p["run"]) for p in points], fontsize=7)
    ax.set_xlabel("run (in the order the runs started)")
    ax.set_ylabel(f"median ({s.unit})" if s.unit else "median")
    ax.set_title(s.name, fontsize=9, parse_math=False)
    if s.changes and s.changes.change_points:
        ax.legend(loc="best", fontsize=7)
    ax.grid(alpha=0.3)
    return _svg(fig)


def _options(values: list, everything: str) -> str:
    return "".join([f'<option value="">{everything}</option>'] +
                   [f'<option value="{html.escape(v)}">{html.escape(v)}</option>' for v in values])


def render_site(every: list, out_dir: Path, store_name: str) -> Path:
    """DIR/index.html for the series ``every`` (checked: reports/regressions.py)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    beds = sorted({s.testbed for s in every})
    controllers = sorted({s.controller or "?" for s in every})
    parts = [f"<h1>bmwg-sdn history: {html.escape(store_name)}</h1>",
             f"<p>{len(every)} series, {len({p['run'] for s in every for p in s.points})} runs. Each point is a "
             "run's median (the bar: its mean's 95 % interval); dashed lines are change points; a point links to "
             "its run's report when the store knows where it is.</p>",
             '<p class="filters"><label>testbed <select id="testbed">' + _options(beds, "all") + "</select></label>"
             '<label>controller <select id="controller">' + _options(controllers, "all") + "</select></label>"
             'series shown: <span id="shown"></span></p>']
    for s in every:
        links = [report_link(p, out_dir) for p in s.points]
        svg = series_figure(s, links) or "<p>no point to draw</p>"
        rows = "".join(
            f"<tr><td>{p['run']}</td><td>{html.escape(p['started'] or '')}</td>"
            f"<td>{html.escape(str(p.get('tag') or ''))}</td>"
            f"<td>{html.escape(str(p.get('controller_version') or ''))}</td>"
            f"<td>{html.escape((p.get('suite_commit') or '')[:12])}</td><td>{p['median']:.4g}</td><td>{p['n']}</td>"
            + (f'<td><a href="{html.escape(link)}">report</a></td>' if link else "<td></td>") + "</tr>"
            for p, link in zip(s.points, links))
        changes = "".join(f"<li>{html.escape(change_line(s, c))}</li>"
                          for c in (s.changes.change_points if s.changes else []))
        status = s.status
        parts.append(
            f'<section class="series" id="{slug(s.label)}" data-testbed="{html.escape(s.testbed)}" '
            f'data-controller="{html.escape(s.controller or "?")}">'
            f"<h2>{html.escape(s.title or s.benchmark)}{f' [{html.escape(s.variant)}]' if s.variant else ''} — "
            f"{html.escape(s.controller or '?')}</h2>"
            f'<p>testbed {html.escape(s.testbed)}, cell {html.escape(s.cell)}: '
            f'<span class="status-{slug(status)}">{html.escape(status)}</span></p>'
            f'<div class="plot">{svg}</div>'
            + (f"<ul>{changes}</ul>" if changes else "")
            + "<details><summary>runs</summary><table><tr><th>run</th><th>started</th><th>tag</th>"
              "<th>controller version</th><th>commit</th><th>median</th><th>n</th><th></th></tr>"
            + rows + "</table></details></section>")
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>bmwg-sdn history</title><style>{STYLE}</style></head><body>"
            + "\n".join(parts) + f"<script>{SCRIPT}</script></body></html>\n")
    path = out_dir / "index.html"
    path.write_text(page)
    return path

