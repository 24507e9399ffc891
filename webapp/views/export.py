"""/r/<slug>/export.html: the whole report as one file that works offline (webapp/offline.py says how)."""

from __future__ import annotations

import functools
import json
import os
import re
import urllib.parse

from flask import Blueprint, Response, abort, render_template
from markupsafe import Markup

from contract import provenance
from storage import progress, runstore
from storage.config import PROJECT_ROOT
from storage.models import IMPORT, Run, utcnow
from webapp import context, offline
from webapp.render import Renderer, listing, stylesheet, title_of
from webapp.tabs import VIEWS, generic, overview, section_models
from webapp.views.pages import (
    DRAWN_FIELDS,
    EXTRA_SECTIONS,
    NOT_IN_OVERVIEW,
    STAGE_TABS,
    TABS,
    kernel_repro_script,
    line_times_text,
    minified_repro_script,
    part_html,
    repro_facts,
    repro_script,
)

bp = Blueprint("export", __name__)


def _tab_html(run: Run, tab: str, sections: dict, models: dict, facts, renderer: Renderer) -> str:
    stage = sections.get(tab) or {}
    if not stage:
        return '<p class="none">This stage recorded nothing for this run.</p>'
    other_fields = {key: value for key, value in stage.items() if key not in DRAWN_FIELDS.get(tab, ())}
    return render_template(
        f"report/{tab}.html",
        run=run,
        tab=tab,
        sections=sections,
        models=models,
        stage=models[tab],
        other_fields=other_fields,
        renderer=renderer,
        view=VIEWS[tab],
        generic=generic,
        listing=listing,
        title_of=title_of,
        device_name=(run.environment or {}).get("device_name"),
        error=runstore.error_of(run),
        facts=facts,
        why_not=overview.why_not,
        states=facts.states,
    )


@bp.get("/r/<slug>/export.html")
def export_html(slug: str):
    session = context.session()
    run = runstore.get_run(session, slug)
    if run is None or not runstore.has_report(session, run):
        abort(404)
    renderer = Renderer(run.filename)
    # The stage tabs and the Overview's story read what the pages read: the same facts, computed the same way.
    wanted = [*STAGE_TABS, *{s for extra in EXTRA_SECTIONS.values() for s in extra}, "summary", "stages"]
    sections = runstore.load_sections(session, run, wanted, outlines=True)
    models = section_models(sections)
    stages, error = progress.stage_progress(run), runstore.error_of(run)
    facts = overview.page_facts(run, stages, error, models, stored=True)
    tale = overview.story(models, facts=facts, progress=stages, failure=error, filename=run.filename)
    raw_fields = runstore.load_sections(session, run, exclude=NOT_IN_OVERVIEW)
    trace_import = (
        section_models(runstore.load_sections(session, run, ["trace_import"])).get("trace_import")
        if run.kind == IMPORT
        else None
    )
    inline = _inliner(session, run)
    tabs = {tab: Markup(inline(_tab_html(run, tab, sections, models, facts, renderer))) for tab in STAGE_TABS}
    scripts = _scripts(charts=any('class="chart"' in html for html in tabs.values()))
    csp = offline.content_security_policy(list(scripts.values()))
    html = render_template(
        "export.html",
        run=run,
        tabs=tabs,
        tab_labels=TABS,
        sections=raw_fields,
        view_story=tale,
        present=False,
        renderer=renderer,
        title_of=title_of,
        css=Markup(_read_css()),
        highlight_css=Markup(stylesheet()),
        csp=csp,
        provenance_json=_provenance_json(session, run),
        source_listing=listing(run.code, "L"),
        trace_import=trace_import,
        exported_at=progress.iso(utcnow()),
        scripts={name: Markup(text) for name, text in scripts.items()},
        worker=Markup(offline.worker_source()),
        worker_element=offline.WORKER_ELEMENT,
    )
    html = inline(html)
    return Response(
        html,
        mimetype="text/html",
        headers={
            "Content-Security-Policy": csp,
            "Content-Disposition": attachment(f"pt2scope-{run.filename.rsplit('.', 1)[0]}-{run.slug}.html"),
        },
    )


def _inliner(session, run: Run):
    """offline.inline_links for this run: its links inside the one file, its graphs and every fold's part (and the
    parts those link to in turn: a fusion group's "more") as data: URLs."""
    graph_text = functools.partial(runstore.graph_json_text, session, run)
    facts = functools.cache(lambda: repro_facts(session, run))  # read once for every graph's repro
    inductor = functools.cache(lambda: runstore.load_sections(session, run, ["inductor"]).get("inductor"))

    device_code_bytes = 0

    def part_text(tab: str, kind: str, key: str) -> str | None:
        nonlocal device_code_bytes
        html = part_html(session, run, tab, kind, urllib.parse.unquote(key))
        if html is not None and kind == "devicecode":
            # Every IR stage of every kernel would make the file hundreds of megabytes for a large model.
            if device_code_bytes + len(html) > DEVICE_CODE_BYTES:
                return (
                    f'<p class="none">The offline file carries device code up to {DEVICE_CODE_BYTES // 2**20} MiB: '
                    f"open this kernel on the run's page (/r/{run.slug}/inductor#kernel-{key}).</p>"
                )
            device_code_bytes += len(html)
        return None if html is None else inline(html)

    def inline(html: str) -> str:
        return offline.inline_links(
            html,
            run.slug,
            graph_text,
            part_text,
            functools.partial(runstore.compile_trace_text, session, run),
            lambda graph_id: (
                minified_repro_script(session, run, facts())
                if graph_id == "minified"
                else repro_script(session, run, graph_id, facts())
            ),
            kernel_script,
            functools.cache(lambda: line_times_text(session, run)),
        )

    # Each kernel's script carries its whole output code: a model of a hundred kernels would carry it a hundred
    # times. The file holds scripts up to KERNEL_SCRIPTS_BYTES; the rest say where to download them.
    inlined_bytes = 0

    def kernel_script(index: int) -> tuple[str | None, str | None]:
        nonlocal inlined_bytes
        script, why_not = kernel_repro_script(session, run, index, facts(), inductor())
        if script is not None and inlined_bytes + len(script) > KERNEL_SCRIPTS_BYTES:
            return None, (
                f"the offline file carries kernel scripts up to {KERNEL_SCRIPTS_BYTES // 2**20} MiB; download this "
                f"one from the run's page (/r/{run.slug}/kernels/{index}/repro.py)"
            )
        inlined_bytes += len(script or "")
        return script, why_not

    return inline


KERNEL_SCRIPTS_BYTES = 4 * 2**20
DEVICE_CODE_BYTES = 16 * 2**20  # the device code (IR texts) an offline file carries, all kernels together


def attachment(filename: str) -> str:
    """A Content-Disposition header that saves as ``filename``, whatever it holds (an upload's name may be any text:
    non-Latin-1 letters, CR/LF, quotes): an ASCII fallback and the exact name, UTF-8 and percent-encoded (RFC 6266),
    so that no name can make the header invalid."""
    fallback = re.sub(r"[^A-Za-z0-9._-]+", "_", filename).strip("_") or "pt2scope-report.html"
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{urllib.parse.quote(filename, safe='', errors='backslashreplace')}"


def _scripts(charts: bool) -> dict[str, str]:
    """The page's scripts, inlined: the report's and the graph viewer's; Plotly and the charts only where a tab
    draws a chart."""
    scripts = {"report": offline.script_file("report.js"), "bundle": offline.viewer_bundle()}
    if charts:
        scripts.update(plotly=offline.plotly_source(), charts=offline.script_file("charts.js"))
    return scripts


def _provenance_json(session, run) -> Markup:
    """Every source line's piece of provenance, inline (report-ui.js reads it where the page would fetch one
    line's), as JSON safe inside a script element: every <, > and & escaped (a node named ``<!--<script>`` would
    otherwise turn the rest of the file's scripts into this one's text)."""
    full = runstore.load_sections(session, run, ["dynamo", "aot", "inductor"])
    pieces = {str(line): entry for line, entry in provenance.by_line(full, run.filename).items()}
    text = json.dumps(pieces).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Markup(text)


def _read_css() -> str:
    with open(os.path.join(PROJECT_ROOT, "static", "style.css")) as f:
        return f.read()
