"""One report as one self-contained HTML file (/r/<slug>/export.html): the pages' own scripts and styles inlined,
every graph and the provenance inlined as data: URLs, so it works opened from disk and makes no request.

- Scripts: report-ui.js and the ES modules it imports (static/js/*.js) are bundled into one inline module: each
  imported file becomes a function returning its exports, and ``import {a} from "./x.js"`` becomes
  ``const {a} = <x's exports>``. The layout worker is graph-worker.js bundled the same way, started from a Blob
  (file:// pages cannot load module workers). Plotly goes in only when the report has a chart.
- Data: the viewer fetches ``data-graph-url``; here that is a ``data:application/json`` URL, which a fetch reads
  without a network (connect-src data: only).
- The Content-Security-Policy (sent as a header and as a <meta>, which is what applies on disk) allows the inline
  scripts by hash, data: fetches and a blob: worker: no request to any server can be made.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re

from storage.config import PROJECT_ROOT

JS = os.path.join(PROJECT_ROOT, "static", "js")
PLOTLY = os.path.join(PROJECT_ROOT, "static", "vendor", "plotly-basic.min.js")
_IMPORT = re.compile(r'^import\s*\{(?P<names>[^}]*)\}\s*from\s*"\./(?P<file>[\w-]+)\.js";\s*$', re.M | re.S)
_EXPORT = re.compile(r"^export (?P<kind>const|let|function|class|async function) (?P<name>\w+)", re.M)
_WORKER = re.compile(r'new Worker\(new URL\("\./graph-worker\.js", import\.meta\.url\)(?:, \{[^}]*\})?\)')
WORKER_ELEMENT = "pt2scope-layout-worker"


class BundleError(RuntimeError):
    """The page scripts changed in a way the bundler does not know (a test catches this before users do)."""


def _source(name: str) -> str:
    with open(os.path.join(JS, name + ".js")) as f:
        return f.read()


def _bundle(entry: str) -> str:
    """``entry`` and every module it imports (depth first, each once): the imported ones as functions returning
    their exports, the entry itself inline, in a block of its own."""
    parts, done = [], set()

    def visit(name: str, is_entry: bool) -> None:
        source = _source(name)
        for match in _IMPORT.finditer(source):
            if match["file"] not in done:
                visit(match["file"], False)
        done.add(name)
        names = [m["name"] for m in _EXPORT.finditer(source)]
        source = _EXPORT.sub(lambda m: f"{m['kind']} {m['name']}", source)
        source = _IMPORT.sub(lambda m: f"const {{{m['names']}}} = {_var(m['file'])};", source)
        if name == "graph-view":
            worker = (
                f'new Worker(URL.createObjectURL(new Blob([document.getElementById("{WORKER_ELEMENT}")'
                '.textContent], { type: "text/javascript" })))'
            )
            source, count = _WORKER.subn(worker, source)
            if count != 1:
                raise BundleError("static/js/graph-view.js no longer starts its worker as the bundler expects")
        if is_entry:
            parts.append("{\n" + source + "\n}\n")
        else:
            parts.append(f"const {_var(name)} = (() => {{\n{source}\nreturn {{ {', '.join(names)} }};\n}})();\n")

    visit(entry, True)
    return "".join(parts)


def _var(name: str) -> str:
    return "__pt2scope_" + name.replace("-", "_")


def viewer_bundle() -> str:
    """report-ui.js with the viewer modules it imports, as one module script; the worker made from a Blob."""
    return _bundle("report-ui")


def worker_source() -> str:
    """The layout worker (graph-worker.js and what it imports) as one classic script."""
    return _bundle("graph-worker")


def script_file(name: str) -> str:
    with open(os.path.join(JS, name)) as f:
        return f.read()


def plotly_source() -> str:
    with open(PLOTLY) as f:
        return f.read()


def csp_hash(script: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode() + "'"


def content_security_policy(scripts: list[str]) -> str:
    return "; ".join(
        [
            "default-src 'none'",
            "script-src " + " ".join(csp_hash(s) for s in scripts),
            "style-src 'unsafe-inline'",
            "img-src data:",
            "connect-src data:",
            "worker-src blob:",
            "base-uri 'none'",
            "form-action 'none'",
        ]
    )


def data_url(text: str, mimetype: str = "application/json") -> str:
    return f"data:{mimetype};base64,{base64.b64encode(text.encode()).decode()}"


def _inline_scripts(html: str, url: str, script_of, what: str) -> str:
    """Each link to a download matching ``url`` (its key a named group) as a data: URL of the script
    (``script_of(key)`` -> (script, None) or (None, why not)), or of the words saying why there is none."""

    def inline(match):
        script, why_not = script_of(match["key"])
        if script is None:
            return f'href="{data_url(f"No repro.py for this {what}: {why_not}.", "text/plain")}"'
        return f'href="{data_url(script, "text/x-python")}"'

    return re.sub(rf'href="{url}"', inline, html)


def inline_links(
    html: str,
    slug: str,
    graph_text,
    part_text=None,
    trace_text=None,
    repro_text=None,
    kernel_repro_text=None,
    line_times_text=None,
) -> str:
    """Links between the report's pages become links inside the one page; graph URLs, the parts a fold loads
    when opened (a kernel's source, a frame's guards, the output code), the compile trace's download and each
    graph's and kernel's repro.py become data: URLs (``graph_text(graph_id)`` -> the stored payload text,
    ``part_text(tab, kind, key)`` -> the fragment's HTML, ``trace_text()`` -> the trace's JSON,
    ``repro_text(graph_id)`` and ``kernel_repro_text(index)`` -> (the script, or None and why not),
    ``line_times_text()`` -> the Dynamo graphs' time overlay; either may give None)."""
    prefix = f"/r/{slug}"
    times_link = f'data-times-url="{prefix}/line-times.json"'
    if line_times_text is not None and times_link in html:
        html = html.replace(times_link, f'data-times-url="{data_url(line_times_text())}"')
    trace_link = f'href="{prefix}/compile-trace.json"'
    if trace_text is not None and trace_link in html:
        html = html.replace(trace_link, f'href="{data_url(trace_text())}"')

    if repro_text is not None:
        html = _inline_scripts(html, rf"{re.escape(prefix)}/graphs/(?P<key>[\w-]+)/repro\.py", repro_text, "graph")
        html = _inline_scripts(html, rf"{re.escape(prefix)}/(?P<key>minified)-repro\.py", repro_text, "graph")
    if kernel_repro_text is not None:
        by_index = lambda index: kernel_repro_text(int(index))  # noqa: E731
        html = _inline_scripts(html, rf"{re.escape(prefix)}/kernels/(?P<key>\d+)/repro\.py", by_index, "kernel")

    def graph(match):
        text = graph_text(match["id"])
        return f'data-graph-url="{data_url(text) if text is not None else ""}"'

    def part(match):
        text = part_text(match["tab"], match["kind"], match["key"])
        return f'data-part-url="{data_url(text, "text/html") if text is not None else ""}"'

    html = re.sub(rf'data-graph-url="{re.escape(prefix)}/graphs/(?P<id>[\w-]+)\.json"', graph, html)
    html = html.replace(f'data-inductor-url="{prefix}/inductor"', 'data-inductor-url=""')  # its kernels are here
    if part_text is not None:
        html = re.sub(
            rf'data-part-url="{re.escape(prefix)}/part/(?P<tab>\w+)/(?P<kind>\w+)/(?P<key>[^"/]+)"', part, html
        )
    html = re.sub(
        rf'href="{re.escape(prefix)}(?:/(?:overview|dynamo|aot|inductor|runtime))?(?P<fragment>#[^"]*)"',
        lambda m: f'href="{m["fragment"]}"',
        html,
    )
    html = re.sub(
        rf'href="{re.escape(prefix)}/(?P<tab>overview|dynamo|aot|inductor|runtime)"',
        lambda m: f'href="#tab-{m["tab"]}"',
        html,
    )
    return html
