"""report.html: report.md as one self-contained page a browser opens offline, its plots inline as SVG.

The converter knows the Markdown :mod:`reports.rfc_report` writes and no more: headings, pipe tables (``\\|``
inside a cell), fenced code blocks, ``- `` lists, ``**bold**`` and ```code``` spans, paragraphs, and
``![caption](plots/x.svg)`` lines, which become the SVG itself (from ``svgs``, keyed by that path).
"""

from __future__ import annotations

import html
import re

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
pre { background: #f6f6f6; padding: 0.7em; overflow-x: auto; }
code { background: #f3f3f3; padding: 0 3px; }
figure { display: inline-block; margin: 0.5em 1em 1em 0; }
figcaption { font-size: 12px; color: #555; }
h2 { border-top: 1px solid #ddd; padding-top: 0.8em; margin-top: 1.6em; }
"""

IMAGE = re.compile(r"^!\[(?P<caption>[^\]]*)\]\((?P<path>[^)]+)\)$")
FENCE = re.compile(r"^(`{3,})")


def _inline(text: str) -> str:
    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", out)


def _cells(line: str) -> list:
    body = line.strip()[1:-1] if line.strip().endswith("|") else line.strip()[1:]
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", body)]


def _table(rows: list) -> str:
    head, body = _cells(rows[0]), [_cells(r) for r in rows[2:]]
    out = ["<table>", "<tr>" + "".join(f"<th>{_inline(c)}</th>" for c in head) + "</tr>"]
    out += ["<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>" for r in body]
    return "\n".join(out + ["</table>"])


def to_html(markdown: str, svgs: dict, title: str = "RFC 8456 benchmark report — bmwg-sdn") -> str:
    lines = markdown.splitlines()
    out, i, para = [], 0, []

    def flush():
        if para:
            out.append(f"<p>{_inline(' '.join(para))}</p>")
            para.clear()
    while i < len(lines):
        line = lines[i]
        fence = FENCE.match(line)
        if fence:
            flush()
            end = next((j for j in range(i + 1, len(lines)) if lines[j] == fence.group(1)), len(lines))
            out.append(f"<pre>{html.escape(chr(10).join(lines[i + 1:end]))}</pre>")
            i = end + 1
            continue
        if line.startswith("|"):
            flush()
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            out.append(_table(lines[i:j]))
            i = j
            continue
        heading = re.match(r"^(#{1,4}) (.*)$", line)
        image = IMAGE.match(line)
        if heading:
            flush()
            n = len(heading.group(1))
            out.append(f"<h{n}>{_inline(heading.group(2))}</h{n}>")
        elif image:
            flush()
            svg = svgs.get(image.group("path"))
            caption = _inline(image.group("caption"))
            out.append(f"<figure>{svg}<figcaption>{caption}</figcaption></figure>" if svg
                       else f"<p><em>(plot {html.escape(image.group('path'))} not available)</em></p>")
        elif line.startswith("- "):
            flush()
            items = []
            while i < len(lines) and lines[i].startswith("- "):
                items.append(f"<li>{_inline(lines[i][2:])}</li>")
                i += 1
            out.append("<ul>" + "".join(items) + "</ul>")
            continue
        elif not line.strip():
            flush()
        else:
            para.append(line)
        i += 1
    flush()
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>\n"
            + "\n".join(out) + "\n</body></html>\n")
