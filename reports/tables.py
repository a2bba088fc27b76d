"""Report tables declared in the results entries, and rendered without knowing any benchmark.

A benchmark whose entries form a table states it in each entry's ``table`` (the families build the declaration
with :func:`grid` or :func:`rows`); :func:`render_tables` gathers the entries by table and renders each, in the
order the tables first appear.  Two layouts:

* ``grid``: each entry is one cell, at ``row`` (a label) and ``column`` (a label, ordered by ``column_order``):
  the RFC's §5.3 tables, one row per underlying test, one column per condition.  A cell shows the entry's mean,
  unit and n (``≥`` when some trial was a lower bound); then each of ``comparisons`` found in the entry (or, with
  ``from_column``, in the entry of the same row in that column): its deviation in % and p-value (and the test
  named, with ``show_test``); then the entry's ``cell_notes``; its outcome in brackets unless it passed.  A skipped
  cell, or one without a successful trial, shows its outcome and reason.  ``legend``: a table of one row per key
  under the grid (the attacks' nature, say); ``footnote``: a line under it.
* ``rows``: each entry is one row: ``cells`` are paths into the entry (``reelection.window_ms``), each optionally
  ``path|format`` with format ``v4`` (4 significant digits), ``mmm`` (min / median / max of a summary), ``n_of``
  (successful trials of all) or ``outcome`` (the entry's outcome); rows are sorted by the ``sort`` path.

Pure: the entries are plain data (results.json); nothing here imports the harness or the emulator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .outcome import judge
from .results import lower_bound_trials


@dataclass(frozen=True)
class Grid:
    """A grid table's own declaration, which every cell of it repeats: its id, title and introduction, whether a
    cell names its test's p-value, and the footnote under it."""
    id: str
    title: str
    intro: str
    show_test: bool = False
    footnote: str = ""


def grid(table: Grid, *, row: str, column: str, column_order, comparisons: tuple = (), cell_notes: tuple = (),
         legend: Optional[dict] = None) -> dict:
    """The declaration of one cell of the grid ``table``.  ``comparisons``: ({"label": "vs none: ", "key":
    "against_without_attacks", "from_column": None}, ...); ``legend``: {"header": [...], "key": ..., "row":
    [...]}."""
    out = {"id": table.id, "layout": "grid", "title": table.title, "intro": table.intro, "row": row,
           "column": column, "column_order": column_order, "comparisons": [dict(c) for c in comparisons],
           "show_test": table.show_test, "cell_notes": list(cell_notes)}
    if legend:
        out["legend"] = legend
    if table.footnote:
        out["footnote"] = table.footnote
    return out


def rows(table: str, title: str, intro: str, *, header: tuple, cells: tuple, sort: str) -> dict:
    """The declaration of one row of the table ``table``."""
    if len(header) != len(cells):
        raise ValueError(f"table {table}: {len(header)} headers for {len(cells)} cells")
    return {"id": table, "layout": "rows", "title": title, "intro": intro, "header": list(header),
            "cells": list(cells), "sort": sort}


def render_tables(benchmarks: list) -> list:
    """Every declared table, in the order the tables first appear among the entries."""
    groups: dict = {}
    for b in benchmarks:
        decl = b.get("table")
        if decl:
            groups.setdefault(decl["id"], []).append(b)
    lines: list = []
    for entries in groups.values():
        first = entries[0]["table"]
        render = _render_grid if first["layout"] == "grid" else _render_rows
        lines += [f"## {first['title']}", "", first["intro"], ""] + render(entries)
    return lines


# --------------------------------------------------------------------------- formatting

def v(value, digits: int = 6) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v(x)}" for k, x in value.items())
    return str(value)


def _cell(value) -> str:
    return v(value).replace("|", "\\|").replace("\n", " ")


def table(rows_, header) -> list:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows_]
    return out + [""]


# --------------------------------------------------------------------------- grid

def _render_grid(entries: list) -> list:
    cells: dict = {}
    columns: dict = {}
    for b in entries:
        d = b["table"]
        cells.setdefault(d["row"], {})[d["column"]] = b
        columns.setdefault(d["column"], d["column_order"])
    order = sorted(columns, key=lambda c: _key(columns[c]))
    body = [tuple([row] + [grid_cell(by.get(col), by) for col in order]) for row, by in cells.items()]
    lines = table(body, header=("Test",) + tuple(order))
    legend: dict = {}
    for b in entries:
        lg = b["table"].get("legend")
        if lg:
            legend.setdefault(lg["key"], lg)
    if legend:
        first = next(iter(legend.values()))
        lines += table([tuple(lg["row"]) for lg in legend.values()], header=tuple(first["header"]))
    notes = list(dict.fromkeys(b["table"]["footnote"] for b in entries if b["table"].get("footnote")))
    for note in notes:
        lines += [note, ""]
    return lines


def _key(order):
    return tuple(order) if isinstance(order, (list, tuple)) else (order,)


def grid_cell(b: Optional[dict], row: dict) -> str:
    """One cell's text (see the module's docstring)."""
    if b is None:
        return "—"
    status, reason = judge(b)
    s = b.get("summary") or {}
    if status == "skipped" or not s.get("n"):
        return f"{status}: {reason}"
    d = b["table"]
    bound = "≥ " if lower_bound_trials(b) else ""
    text = f"{bound}{v(s['mean'], 4)} {b.get('unit', '')} (n = {s['n']})"
    for c in d.get("comparisons", ()):
        source = row.get(c["from_column"]) if c.get("from_column") else b
        found = (source or {}).get(c["key"]) or {}
        if found.get("deviation_percent") is not None:
            text += f"; {c.get('label', '')}Δ {found['deviation_percent']:+.1f} %, p = {v(found.get('p_value'), 3)}"
            if d.get("show_test"):
                text += f" ({found.get('test')})"
    for note in d.get("cell_notes", ()):
        text += f"; {note}" if not note.startswith("[") else f" {note}"
    if status != "passed":
        text += f" [{status}]"
    return text


# --------------------------------------------------------------------------- rows

def _at(entry: dict, path: str):
    value = entry
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _formatted(entry: dict, spec: str):
    path, _, fmt = spec.partition("|")
    if fmt == "outcome":
        status, reason = judge(entry)
        return status.upper() + (f" — {reason}" if reason and status != "passed" else "")
    if fmt == "n_of":
        return f"{(entry.get('summary') or {}).get('n', 0)} of {len(entry.get('trials', []))}"
    value = _at(entry, path)
    if fmt == "mmm":
        if not value or not value.get("n"):
            return "—"
        return f"{v(value.get('min'), 5)} / {v(value.get('median'), 5)} / {v(value.get('max'), 5)}"
    if fmt.startswith("v"):
        return v(value, int(fmt[1:]))
    return value


def _render_rows(entries: list) -> list:
    decl = entries[0]["table"]
    ordered = sorted(entries, key=lambda b: _at(b, b["table"]["sort"]) or 0)
    return table([tuple(_formatted(b, spec) for spec in b["table"]["cells"]) for b in ordered],
                 header=tuple(decl["header"]))
