"""Documents as lists of blocks, rendered as Markdown and as HTML.

A block is ``(kind, value)``:

* ``"h2"``, ``"h3"``, ``"h4"``, ``"p"``: a heading or paragraph (plain text);
* ``"table"``: ``(header, rows)``, lists of cell strings;
* ``"figure"``: ``(png, svg, caption)``, the image paths relative to the document;
* ``"link"``: ``(text, href)``, a paragraph that is a link (``href`` relative to the document);
* ``"pre"``: preformatted text, shown as it is (an error message);
* ``"code"``: the configuration as JSON, collapsed;
* ``"markdown"``: a Markdown document embedded as it is (``latency.md``, ``matched.md``), its
  headings moved :data:`EMBED_SHIFT` levels down; the HTML renders its headings, paragraphs,
  bullet lists, tables, ``**bold**`` and ```code```.
"""

from __future__ import annotations

import html
import re
from typing import Any

import numpy as np

Block = tuple[str, Any]

#: Levels an embedded Markdown document's headings move down (``#`` becomes ``###``).
EMBED_SHIFT = 2

STYLE = (
    "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
    "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;"
    "padding:3px 8px;text-align:right}td:first-child,th:first-child{text-align:left}"
    "figure{margin:1.5em 0}img{max-width:100%}figcaption{font-size:90%;color:#333}"
    "pre{background:#f4f4f4;padding:1em;overflow:auto;font-size:80%}</style>"
)

HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
BULLET = re.compile(r"^( *)[-*]\s+(.*)$")
SEPARATOR = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def fmt(x: float) -> str:
    """A number for a table: thousands separators for large values, 3 digits for small."""
    if not np.isfinite(x):
        return "–"
    a = abs(x)
    if a >= 1000:
        return f"{x:,.0f}"
    if a >= 10:
        return f"{x:.1f}"
    if a >= 0.001 or a == 0:
        return f"{x:.3f}"
    return f"{x:.2e}"


def pm(mean: float, std: float) -> str:
    """``mean ± std`` (the mean alone when the std is not finite)."""
    return fmt(mean) if not np.isfinite(std) else f"{fmt(mean)} ± {fmt(std)}"


def interval(low: float, high: float) -> str:
    """A confidence interval ``[low, high]``."""
    return f"[{fmt(low)}, {fmt(high)}]"


def slug(name: str) -> str:
    """``name`` as a folder name: letters, digits, ``-`` and ``_``."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name).strip("_") or "results"


def shift_headings(text: str, levels: int) -> str:
    """``text`` (Markdown) with every heading outside code fences ``levels`` levels down."""
    lines, fenced = [], False
    for line in text.splitlines():
        fenced ^= line.startswith("```")
        match = None if fenced else HEADING.match(line)
        lines.append(f"{'#' * min(len(match[1]) + levels, 6)} {match[2]}" if match else line)
    return "\n".join(lines)


def markdown_row(cells: list[str]) -> str:
    """A Markdown table row; a cell's ``|`` is escaped and its line breaks become spaces."""
    return "| " + " | ".join(" ".join(c.replace("|", "\\|").split("\n")) for c in cells) + " |"


def to_markdown(blocks: list[Block], title: str) -> str:
    """The document as Markdown."""
    lines = [f"# {title}", ""]
    for kind, value in blocks:
        if kind in ("h2", "h3", "h4"):
            lines += ["#" * int(kind[1]) + " " + value, ""]
        elif kind == "p":
            lines += [value, ""]
        elif kind == "table":
            header, rows = value
            lines.append(markdown_row(header))
            lines.append("|" + "---|" * len(header))
            lines += [markdown_row(r) for r in rows]
            lines.append("")
        elif kind == "figure":
            png, svg, caption = value
            lines += [f"![{caption}]({png})", "", f"*{caption}* ([SVG]({svg}))", ""]
        elif kind == "link":
            text, href = value
            lines += [f"[{text}]({href})", ""]
        elif kind == "pre":
            lines += ["```", value, "```", ""]
        elif kind == "code":
            lines += [
                "<details><summary>configuration</summary>",
                "",
                "```json",
                value,
                "```",
                "",
                "</details>",
                "",
            ]
        elif kind == "markdown":
            lines += [shift_headings(value.strip(), EMBED_SHIFT), ""]
    return "\n".join(lines)


def inline_html(text: str) -> str:
    """Markdown inline text as HTML: escaped, with ``**bold**``, ```code``` and ``\\*``."""
    out = html.escape(text)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    out = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", out)
    return out.replace("\\*", "*")


def table_cells(line: str) -> list[str]:
    """The cells of a Markdown table row ``| a | b |``."""
    return [c.strip() for c in line.strip().strip("|").split("|")]


def markdown_html(text: str) -> list[str]:
    """HTML of a Markdown document: headings moved :data:`EMBED_SHIFT` levels down,
    paragraphs, bullet lists nested by indentation (two spaces a level), tables, fenced code."""
    parts: list[str] = []
    mode: str | None = None  # the open element: "p", "table", "list" or "pre"
    lines: list[str] = []  # its lines so far
    depth = 0  # open <ul> levels of a list

    def close() -> None:
        nonlocal mode, depth
        if mode == "p":
            parts.append(f"<p>{inline_html(' '.join(lines))}</p>")
        elif mode == "pre":
            code = html.escape("\n".join(lines))
            parts.append(f"<pre>{code}</pre>")
        elif mode == "table":
            rows = [table_cells(row) for row in lines if not SEPARATOR.match(row.strip())]
            tags = ["th"] + ["td"] * (len(rows) - 1)
            parts.append("<table>")
            parts.extend(
                "<tr>" + "".join(f"<{tag}>{inline_html(c)}</{tag}>" for c in row) + "</tr>"
                for tag, row in zip(tags, rows, strict=True)
            )
            parts.append("</table>")
        parts.extend(["</ul>"] * depth)
        mode, depth = None, 0
        lines.clear()

    def open_(kind: str) -> None:
        nonlocal mode
        if mode != kind:
            close()
            mode = kind

    for line in text.splitlines():
        if mode == "pre":
            if line.startswith("```"):
                close()
            else:
                lines.append(line)
            continue
        heading, bullet = HEADING.match(line), BULLET.match(line)
        if line.startswith("```"):
            close()
            mode = "pre"
        elif not line.strip():
            close()
        elif heading:
            close()
            level = min(len(heading[1]) + EMBED_SHIFT, 6)
            parts.append(f"<h{level}>{inline_html(heading[2])}</h{level}>")
        elif line.lstrip().startswith("|"):
            open_("table")
            lines.append(line)
        elif bullet:
            open_("list")
            level = len(bullet[1]) // 2 + 1
            parts.extend(["<ul>"] * (level - depth) + ["</ul>"] * (depth - level))
            depth = level
            parts.append(f"<li>{inline_html(bullet[2])}</li>")
        elif mode == "list":  # a list item's continuation line
            parts[-1] = parts[-1].removesuffix("</li>") + f" {inline_html(line.strip())}</li>"
        else:
            open_("p")
            lines.append(line.strip())
    close()
    return parts


def to_html(blocks: list[Block], title: str) -> str:
    """The document as a self-contained HTML page (images linked)."""
    e = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{e(title)}</title>",
        STYLE,
        "</head><body>",
        f"<h1>{e(title)}</h1>",
    ]
    for kind, value in blocks:
        if kind in ("h2", "h3", "h4", "p"):
            parts.append(f"<{kind}>{e(value)}</{kind}>")
        elif kind == "table":
            header, rows = value
            parts.append("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in header) + "</tr>")
            parts += ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in rows]
            parts.append("</table>")
        elif kind == "figure":
            png, svg, caption = value
            parts.append(
                f'<figure><img src="{e(png)}" alt="{e(caption)}"><figcaption>{e(caption)} '
                f'(<a href="{e(svg)}">SVG</a>)</figcaption></figure>'
            )
        elif kind == "link":
            text, href = value
            parts.append(f'<p><a href="{e(href)}">{e(text)}</a></p>')
        elif kind == "pre":
            parts.append(f"<pre>{e(value)}</pre>")
        elif kind == "code":
            parts.append(
                f"<details><summary>configuration</summary><pre>{e(value)}</pre></details>"
            )
        elif kind == "markdown":
            parts += markdown_html(value)
    parts.append("</body></html>")
    return "\n".join(parts)
