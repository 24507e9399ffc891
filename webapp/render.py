"""Report sections to HTML: every artifact visible, in a plain but complete form.

Generic by design, so a field the engine adds shows up without a change here. A few rules make compiler
artifacts readable: code (FX graphs, kernels, output code, IR) gets a Pygments listing whose lines are anchors;
lists of records become tables, and a record's bulky fields (code, node lists) get a card of their own linked from
its row; a file:line in the user's file links to that line of the source listing (#L-N).
"""

from __future__ import annotations

import re

from markupsafe import Markup, escape
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import CppLexer, LlvmLexer, PtxLexer, PythonLexer, TextLexer

from contract.userfile import is_user_file

CODE_KEYS = {"code", "source", "output_code", "graph", "traceback"}
TEXT_KEYS = {"text", "ir"}
LEXERS = {
    "cpp": CppLexer,
    "c++": CppLexer,
    "c": CppLexer,
    "triton": PythonLexer,
    "python": PythonLexer,
    "llir": LlvmLexer,  # Triton's IR stages (Kernel.device_code); TTIR, TTGIR and SASS as plain text
    "ptx": PtxLexer,
}
TITLE_KEYS = ("name", "config", "compile_id", "kind", "stage", "label")
SMALL_TEXT_LINES = 20  # a multi-line message up to this long stays in its table cell


class _LineSpanFormatter(HtmlFormatter):
    """Line N of a listing is ``<span id="{anchor}-N">``, the target its line number links to.

    A span around the whole line (Pygments' linespans) rather than an empty anchor before it (lineanchors), so a
    linked line can be highlighted: by CSS :target, and by the page when a kernel or node selects it. Pygments
    needs lineanchors to link the numbers; this drops the empty anchors it would add, which would repeat the ids.
    """

    def _wrap_lineanchors(self, inner):
        return inner


def listing(code: str, anchor: str, language: str = "python") -> Markup:
    """Highlighted code with numbered lines; line N is the element ``#{anchor}-N``."""
    lexer = LEXERS.get((language or "").lower(), TextLexer)()
    formatter = _LineSpanFormatter(
        linenos="table", anchorlinenos=True, lineanchors=anchor, linespans=anchor, wrapcode=True
    )
    return Markup(f'<div class="listing" id="{escape(anchor)}">{highlight(code, lexer, formatter)}</div>')


def breakable(name) -> Markup:
    """An identifier that may wrap after its underscores and dots (a kernel or op name of 80 characters), and only
    there: a table column then holds its words whole."""
    return Markup(re.sub(r"([_.])", r"\1<wbr>", str(escape(name))))


def stylesheet() -> str:
    return HtmlFormatter().get_style_defs(".highlight")


ACRONYMS = {"ir": "IR", "aot": "AOT", "fx": "FX", "id": "id", "cuda": "CUDA", "cpu": "CPU", "ms": "ms"}


def title_of(key: str) -> str:
    words = [ACRONYMS.get(word.lower(), word) for word in key.split("_")]
    return " ".join([words[0][:1].upper() + words[0][1:], *words[1:]]) if words else key


class Renderer:
    def __init__(self, source_filename: str):
        self.source_filename = source_filename

    def value(self, value, path: tuple, key: str | None = None) -> Markup:
        if value is None:
            return Markup('<span class="none">—</span>')
        if isinstance(value, bool):
            return Markup("yes" if value else "no")
        if isinstance(value, (int, float)):
            return escape(_number(value))
        if isinstance(value, str):
            return self._string(value, path, key)
        if isinstance(value, dict):
            return self._record(value, path)
        if isinstance(value, list):
            return self._list(value, path)
        return escape(str(value))

    def _string(self, text: str, path: tuple, key: str | None, language: str | None = None) -> Markup:
        if key in CODE_KEYS and "\n" in text.strip():
            return listing(text, _anchor(path), language or "python")
        if key in CODE_KEYS:  # one line of code (a graph break's source line): no listing around it
            return Markup(f"<code>{escape(text)}</code>")
        if key in TEXT_KEYS and "\n" in text:  # IR and the like: numbered lines help discussing them
            return listing(text, _anchor(path), language or "text")
        if "\n" in text:  # anything else (the user's output, messages): plain, scrolling when long
            return Markup(f'<pre class="text">{escape(text)}</pre>')
        return escape(text)

    def _record(self, record: dict, path: tuple) -> Markup:
        if not record:
            return Markup('<span class="none">none recorded</span>')
        items = []
        for key, value in record.items():
            if isinstance(value, str) and key in CODE_KEYS | TEXT_KEYS:
                body = self._string(value, path + (key,), key, record.get("language"))
            else:
                body = self._cell(record, key, path) if not _bulky(value) else self.value(value, path + (key,), key)
            items.append(f"<dt>{escape(title_of(str(key)))}</dt><dd>{body}</dd>")
        return Markup(f'<dl class="record">{"".join(items)}</dl>')

    def _list(self, items: list, path: tuple) -> Markup:
        if not items:
            return Markup('<span class="none">none recorded</span>')
        if all(isinstance(item, dict) for item in items):
            return self._records(items, path)
        if all(not isinstance(item, (dict, list)) for item in items) and not any(
            isinstance(item, str) and "\n" in item for item in items
        ):
            return Markup(
                '<ul class="plain">' + "".join(f"<li>{self.value(item, path)}</li>" for item in items) + "</ul>"
            )
        return Markup(
            "<ol>" + "".join(f"<li>{self.value(item, path + (i,))}</li>" for i, item in enumerate(items)) + "</ol>"
        )

    def _records(self, rows: list[dict], path: tuple) -> Markup:
        """A table of the short fields; one card per row for its bulky fields (code, nested lists)."""
        columns = list(dict.fromkeys(key for row in rows for key in row))
        bulky = [c for c in columns if any(_bulky(row.get(c), c) for row in rows)]
        short = [c for c in columns if c not in bulky]
        anchor = _anchor(path)
        head = "".join(f"<th>{escape(title_of(str(c)))}</th>" for c in short)
        if bulky:
            head = "<th>#</th>" + head
        body = []
        for i, row in enumerate(rows):
            cells = "".join(f"<td>{self._cell(row, c, path + (i,))}</td>" for c in short)
            if bulky:
                cells = f'<td><a href="#{anchor}-{i}">{i + 1}</a></td>' + cells
            body.append(f"<tr>{cells}</tr>")
        html = f'<table class="records"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
        if short and not bulky:
            return Markup(html)
        cards = [self._card(row, bulky, path + (i,), f"{anchor}-{i}", i) for i, row in enumerate(rows)]
        return Markup((html if short else "") + "".join(cards))

    def _card(self, row: dict, fields: list[str], path: tuple, anchor: str, index: int) -> str:
        title = " · ".join(f"{escape(str(row[k]))}" for k in TITLE_KEYS if k in row and row[k] is not None)
        parts = [f'<article class="artifact" id="{anchor}"><h4>{index + 1}. {title}</h4>']
        for field in fields:
            value = row.get(field)
            if value is None:
                continue
            if isinstance(value, str):
                rendered = self._string(
                    value, path + (field,), field if field in CODE_KEYS | TEXT_KEYS else "code", row.get("language")
                )
                parts.append(f"<h5>{escape(title_of(field))}</h5>{rendered}")
            else:
                count = f" ({len(value)})" if isinstance(value, (list, dict)) else ""
                parts.append(
                    f"<details><summary>{escape(title_of(field))}{count}</summary>"
                    f"{self.value(value, path + (field,), field)}</details>"
                )
        parts.append("</article>")
        return "".join(parts)

    def _cell(self, row: dict, key: str, path: tuple) -> Markup:
        value = row.get(key)
        user_file = is_user_file(row.get("file") or row.get("filename"), self.source_filename)
        if key == "line" and isinstance(value, int) and user_file:
            return Markup(f'<a class="line" href="#L-{value}">{value}</a>')
        if isinstance(value, list) and not any(isinstance(v, (dict, list)) for v in value):
            return escape(", ".join(_number(v) if isinstance(v, (int, float)) else str(v) for v in value))
        if isinstance(value, dict) and not any(isinstance(v, (dict, list)) for v in value.values()):
            return escape(", ".join(f"{k}={v}" for k, v in value.items()))
        if isinstance(value, str) and "\n" in value:
            return Markup(f'<pre class="text">{escape(value)}</pre>')
        return self.value(value, path + (key,), key)


def _bulky(value, key: str | None = None) -> bool:
    """Too big for a table cell: code, long text, nested records or long lists."""
    if isinstance(value, str):
        if key in CODE_KEYS and "\n" in value:
            return True
        return value.count("\n") >= SMALL_TEXT_LINES or len(value) > 2000
    if isinstance(value, list):
        return len(value) > 12 or any(isinstance(v, (dict, list)) for v in value)
    if isinstance(value, dict):
        return len(value) > 8 or any(isinstance(v, (dict, list)) for v in value.values())
    return False


def _number(value) -> str:
    if isinstance(value, float):
        return f"{value:.1f}" if abs(value) >= 1000 else f"{value:.4g}"
    return str(value)


def _anchor(path: tuple) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", "-".join(str(p) for p in path))
