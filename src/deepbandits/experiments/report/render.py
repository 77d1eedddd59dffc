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

Text (paragraphs, headings, cells, captions) may hold Markdown's ```code``` and ``**bold**``:
the Markdown keeps them, the HTML renders them (:func:`inline_html`), so no backquote reaches
the page. Numbers follow one rule (:func:`pm`, :func:`interval`, :func:`fmt`): a value with an
uncertainty shows the uncertainty to two significant digits and the value to the same decimal
place; a value alone shows four significant digits. A table cell that holds only numbers never
wraps (:data:`NUMERIC`, the ``num`` class).
"""

from __future__ import annotations

import html
import math
import re
from typing import Any

Block = tuple[str, Any]

#: Levels an embedded Markdown document's headings move down (``#`` becomes ``###``).
EMBED_SHIFT = 2

STYLE = (
    "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
    "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;"
    "padding:3px 8px;text-align:right}td:first-child,th:first-child{text-align:left}"
    "figure{margin:1.5em 0}img{max-width:100%}figcaption{font-size:90%;color:#333}"
    "pre{background:#f4f4f4;padding:1em;overflow:auto;font-size:80%}"
    "td.num{white-space:nowrap;font-variant-numeric:tabular-nums}</style>"
)

#: A table cell of numbers only (with ±, /, brackets, dashes): rendered unbroken.
NUMERIC = re.compile(r"^[\s\d.,eE+\-−±–\[\]/()%]*\d[\s\d.,eE+\-−±–\[\]/()%]*$")

#: Significant digits of a value shown alone, and of an uncertainty.
DIGITS, UNCERTAINTY_DIGITS = 4, 2

HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
BULLET = re.compile(r"^( *)[-*]\s+(.*)$")
SEPARATOR = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def fmt(x: float) -> str:
    """A value alone, to :data:`DIGITS` significant digits (``–`` when not finite):
    ``4422``, ``0.1160``, ``3.000e-05``."""
    if not math.isfinite(x):
        return "–"
    if x == 0:
        return "0"
    exponent = math.floor(math.log10(abs(x)))
    if not -4 <= exponent < 6:
        return f"{x:.{DIGITS - 1}e}"
    return f"{x:.{max(DIGITS - 1 - exponent, 0)}f}"


def decimals(uncertainty: float) -> int | None:
    """The decimal places that show ``uncertainty`` to :data:`UNCERTAINTY_DIGITS` significant
    digits (negative: rounded to tens, hundreds, ...); None when it is 0 or not finite."""
    if not math.isfinite(uncertainty) or uncertainty <= 0:
        return None
    places = UNCERTAINTY_DIGITS - 1 - math.floor(math.log10(uncertainty))
    # the rounding may carry into one more digit (0.0996 -> 0.10): count it from the rounded value
    rounded = round(uncertainty, places)
    return UNCERTAINTY_DIGITS - 1 - math.floor(math.log10(rounded)) if rounded else places


def at(x: float, places: int) -> str:
    """``x`` rounded to ``places`` decimals (to tens, hundreds, ... when negative)."""
    if not math.isfinite(x):
        return "–"
    if places <= 0:
        return f"{round(x, places):.0f}"
    return f"{x:.{places}f}"


def pm(mean: float, std: float) -> str:
    """``mean ± std``: the std to two significant digits, the mean to the same decimal place
    (``4422 ± 43``, ``0.116000 ± 0.000030``); the mean alone (:func:`fmt`) when the std is not
    finite, ``± 0`` when it is 0, and both in scientific notation when the std is below 1e-8
    (a spread too small to write out beside the mean)."""
    if not math.isfinite(mean):
        return "–"
    places = decimals(std)
    if places is None:
        return fmt(mean) if not math.isfinite(std) else f"{fmt(mean)} ± 0"
    if places > 8:  # tiny values, or a spread too small to show beside the mean
        return f"{mean:.{DIGITS - 1}e} ± {std:.{UNCERTAINTY_DIGITS - 1}e}"
    return f"{at(mean, places)} ± {at(std, places)}"


def interval(low: float, high: float) -> str:
    """A confidence interval ``[low, high]``, both ends to the decimal place that shows its
    half-width to two significant digits."""
    places = decimals((high - low) / 2) if math.isfinite(low) and math.isfinite(high) else None
    if places is None:
        return f"[{fmt(low)}, {fmt(high)}]"
    return f"[{at(low, places)}, {at(high, places)}]"


def estimate(value: float, uncertainty: float) -> str:
    """A value shown to the decimal place of its uncertainty (a difference beside its
    standard error or interval): ``-12``, ``0.0031``."""
    places = decimals(uncertainty)
    return fmt(value) if places is None else at(value, places)


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
                "<tr>" + "".join(cell_html(c, tag) for c in row) + "</tr>"
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


def cell_html(text: str, tag: str = "td") -> str:
    """One table cell: inline Markdown rendered, a cell of numbers marked ``num`` (unbroken)."""
    kind = ' class="num"' if tag == "td" and NUMERIC.match(text) else ""
    return f"<{tag}{kind}>{inline_html(text)}</{tag}>"


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
            parts.append(f"<{kind}>{inline_html(value)}</{kind}>")
        elif kind == "table":
            header, rows = value
            parts.append("<table><tr>" + "".join(cell_html(h, "th") for h in header) + "</tr>")
            parts += ["<tr>" + "".join(cell_html(c) for c in r) + "</tr>" for r in rows]
            parts.append("</table>")
        elif kind == "figure":
            png, svg, caption = value
            alt = e(caption.replace("`", ""))
            parts.append(
                f'<figure><img src="{e(png)}" alt="{alt}"><figcaption>{inline_html(caption)} '
                f'(<a href="{e(svg)}">SVG</a>)</figcaption></figure>'
            )
        elif kind == "link":
            text, href = value
            parts.append(f'<p><a href="{e(href)}">{inline_html(text)}</a></p>')
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
