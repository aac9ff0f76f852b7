"""report.md → HTML for the page's summary, so the page shows exactly report.md's numbers.

Only the subset `alignment.analysis.report` writes: `#`/`##` headings, pipe tables, `- ` lists, image
lines (embedded as base64 data URIs, so the page works from file:// on its own) and paragraphs
with **bold**, *italic* and `code`.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

_IMAGE = re.compile(r"^!\[([^\]]*)\]\(([^)]+)\)$")


def inline(text: str) -> str:
    """Escape, then apply the inline marks.

    >>> inline("**4.0 points** from `rm` <b>")
    '<strong>4.0 points</strong> from <code>rm</code> &lt;b&gt;'
    """
    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    out = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", out)
    return re.sub(r"(?<![*\w])\*([^*]+)\*(?![*\w])", r"<em>\1</em>", out)


def slug(title: str) -> str:
    """>>> slug("Acknowledgment under best-of-N: RM vs RM_D / RM_C")
    'acknowledgment-under-best-of-n-rm-vs-rm-d-rm-c'
    """
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def image(src: str, alt: str, base: Path) -> str:
    path = base / src
    if not path.is_file():
        return f'<p class="missing">figure {html.escape(src)} not found</p>'
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<figure><img alt="{html.escape(alt)}" src="data:image/png;base64,{data}"><figcaption>{html.escape(src)}</figcaption></figure>'


def _table(rows: list[str]) -> str:
    cells = [[c.strip() for c in r.strip().strip("|").split("|")] for r in rows if not re.fullmatch(r"\|(---\|)+", r.strip())]
    head = "".join(f"<th>{inline(c)}</th>" for c in cells[0])
    body = "".join("<tr>" + "".join(f"<td>{inline(c)}</td>" for c in r) + "</tr>" for r in cells[1:])
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _block(lines: list[str], base: Path) -> str:
    first = lines[0]
    if first.startswith("|"):
        return _table(lines)
    if first.startswith("- "):
        return "<ul>" + "".join(f"<li>{inline(x[2:])}</li>" for x in lines) + "</ul>"
    if m := _IMAGE.match(first):
        return image(m.group(2), m.group(1), base)
    if m := re.match(r"^(#{1,3}) (.*)$", first):
        level = len(m.group(1))
        return f'<h{level} id="{slug(m.group(2))}">{inline(m.group(2))}</h{level}>'
    return f"<p>{inline(' '.join(lines))}</p>"


def to_html(markdown: str, base: Path) -> str:
    """Blocks are separated by blank lines; a heading is a block of its own.

    >>> print(to_html("## T\\n\\n| a | b |\\n|---|---|\\n| 1 | 2 |\\n", Path(".")))
    <h2 id="t">T</h2>
    <div class="scroll"><table><thead><tr><th>a</th><th>b</th></tr></thead><tbody><tr><td>1</td><td>2</td></tr></tbody></table></div>
    """
    blocks: list[list[str]] = [[]]
    for line in markdown.splitlines():
        if not line.strip() or line.startswith("#"):
            blocks.append([])
        if line.strip():
            blocks[-1].append(line)
        if line.startswith("#"):
            blocks.append([])
    return "\n".join(_block(b, base) for b in blocks if b)
