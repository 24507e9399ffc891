"""HTML pages: the new-run form (with the gallery) and /r/<slug>, which shows progress until the report exists."""

from __future__ import annotations

import json
from typing import Any

from flask import Blueprint, Response, abort, jsonify, redirect, render_template, request, url_for

from contract.repro import REPRO_GRAPHS, graph_repro, kernel_repro, minified_payload
from contract.vocab import CONFIGS, DEFAULT_CONFIGS, capture_config
from storage import progress, runstore
from storage.models import FINISHED_STATUSES, IMPORT, RUNNING, Run
from webapp import context, security, tabs
from webapp.examples import list_examples, read_example
from webapp.heavy import heavy_slot
from webapp.render import Renderer, listing, stylesheet, title_of
from webapp.submission import DEVICE_LABELS, TRAIN_CHOICES, config_choices, validate
from webapp.tabs import generic, overview
from webapp.tabs import inductor as inductor_tab
from webapp.views.api import RATE_LIMITED, measured_by, submit

bp = Blueprint("pages", __name__)

# Report tabs and the sections each reads; Overview reads every section (stage sections as outlines, without
# graph nodes; not the code, which the run row already holds) to tell the story of the four stages.
STAGE_TABS = {"dynamo": "Dynamo", "aot": "AOTAutograd", "inductor": "Inductor", "runtime": "Runtime"}
TABS = {"overview": "Overview", **STAGE_TABS}
NOT_IN_OVERVIEW = [*STAGE_TABS, "source", "trace_import"]  # an import's facts head every tab instead
# Sections a stage tab reads besides its own: the Inductor tab times its kernels with the runtime's profile, the
# Runtime tab draws the job's timeline and the debug section (the user's backends, memory per rung).
EXTRA_SECTIONS = {"inductor": ["runtime"], "runtime": ["timeline", "debug"]}
# The fields each stage tab draws with a purpose-built view; any other field is shown by the generic renderer.
DRAWN_FIELDS = {
    "dynamo": {"graphs", "graph_breaks", "guards", "recompiles", "symbols", "bytecode", "summary", "not_in_log"},
    "aot": {"graphs", "partitions", "functionalization", "decompositions", "not_in_log"},
    "inductor": {
        "post_grad_graphs",
        "kernels",
        "fusion_decisions",
        "ir_pre_fusion",
        "ir_post_fusion",
        "library_calls",
        "metrics",
        "not_in_log",
    },
    # timing, recorded_config, first_call_ms: in the ledes; job_seconds: the Overview's "the whole job took".
    "runtime": {
        "autotune",
        "benchmarks",
        "bisect",
        "compile_seconds",
        "compile_cache",
        "compile_timeline",
        "kernel_profile",
        "cudagraphs",
        "timing",
        "recorded_config",
        "first_call_ms",
        "job_seconds",
        "not_in_log",
    },
}


@bp.get("/")
def new_run():
    settings = context.settings()
    form = {"code": "", "filename": "model.py", "device": "cpu", "train": "auto", "configs": DEFAULT_CONFIGS["cpu"]}
    example = request.args.get("example")
    rerun = runstore.get_run(context.session(), request.args.get("rerun", "")) if request.args.get("rerun") else None
    if rerun is not None and rerun.kind != IMPORT:  # the same code, to run again with other settings
        form.update(
            code=rerun.code,
            filename=rerun.filename,
            device=rerun.device,
            configs=rerun.configs,
            train={None: "auto", True: "training", False: "inference"}[rerun.train],
            rerun=rerun.slug,
        )
    if example:
        code = read_example(settings.examples_dir, example)
        if code is None:
            abort(404)
        form.update(code=code, filename=f"{example}.py")
    return _form_page(form, {})


@bp.post("/")
def create_run():
    settings = context.settings()
    form: dict[str, Any] = {
        "code": request.form.get("code", ""),
        "filename": request.form.get("filename") or "model.py",
        "device": request.form.get("device", "cpu"),
        "train": request.form.get("train", "auto"),
        "configs": request.form.getlist("configs"),
        "rerun": request.form.get("rerun") or "",
        "fresh": request.form.get("fresh") == "1",
    }
    errors = {}
    upload = request.files.get("upload")
    if upload and upload.filename:
        content = upload.read(settings.max_code_bytes + 1)  # text only: an upload is never unpickled or run here
        if not upload.filename.endswith(".py"):
            errors["upload"] = "Upload a Python file (.py)."
        elif len(content) > settings.max_code_bytes:
            errors["upload"] = f"The file is larger than {settings.max_code_bytes // 1024} KiB, the limit for a model."
        else:
            try:
                form.update(code=content.decode("utf-8"), filename=upload.filename)
            except UnicodeDecodeError:
                errors["upload"] = "The file is not UTF-8 text."
    session = context.session()
    submission = None
    if not errors:
        submission, errors = validate(
            form, max_code_bytes=settings.max_code_bytes, online_queues=runstore.online_queues(session, settings)
        )
    if submission is None:
        return _form_page(form, errors), 422
    parent = runstore.get_run(session, form["rerun"]) if form["rerun"] else None
    run, reused = submit(submission, parent=parent)
    if run is None:
        message, wait = security.rate_limited() or RATE_LIMITED
        return _form_page(form, {"code": message}), 429, {"Retry-After": str(wait)}
    query: dict[str, Any] = {"reused": 1} if reused else {}
    return redirect(url_for("pages.report", slug=run.slug, **query), code=303)


def _form_page(form: dict, errors: dict):
    settings = context.settings()
    online = runstore.online_queues(context.session(), settings)
    return render_template(
        "new_run.html",
        form=form,
        errors=errors,
        examples=list_examples(settings.examples_dir),
        configs=config_choices(),
        default_configs=DEFAULT_CONFIGS,
        devices=DEVICE_LABELS,
        gpu_online="gpu" in online,
        worker_online=bool(online),
        train_choices=list(TRAIN_CHOICES),
    )


@bp.get("/examples/<name>.py")
def example_source(name: str):
    code = read_example(context.settings().examples_dir, name)
    if code is None:
        abort(404)
    return Response(code, mimetype="text/x-python")


def _progress_context(session, run) -> dict:
    """What the page says of a run's progress: its steps and the current one, the time left, whether it is still
    measuring after its report, its place in the queue and its messages."""
    steps = progress.progress_steps(run)
    still_measuring = progress.still_measuring(run, steps, context.settings())
    deferred = bool(still_measuring) and run.deferred_since is not None
    return {
        "steps": steps,
        "current": progress.current_step(steps),
        "time_left": runstore.time_left(session, run, steps),
        "still_measuring": still_measuring,
        "waiting_before_deferred": runstore.waiting_runs(session, run.queue) if deferred else None,
        "queue": runstore.queue_estimate(session, context.settings(), run),
        "messages": progress.messages(run),
    }


@bp.get("/r/<slug>", defaults={"tab": "overview"})
@bp.get("/r/<slug>/<tab>")
def report(slug: str, tab: str):
    session = context.session()
    run = _run_or_404(slug)
    if tab not in TABS:
        abort(404)
    if run.status == RUNNING:
        runstore.reap_stale_runs(session, context.settings(), run_id=run.id)
    finished = run.status in FINISHED_STATUSES
    stages = progress.stage_progress(run)
    error = runstore.error_of(run)
    stored = runstore.has_report(session, run)  # also while running: the worker stores sections as they finish
    shared = tabs.section_models(runstore.load_sections(session, run, ["summary", "stages"])) if stored else {}
    facts = overview.page_facts(run, stages, error, shared, stored)
    sections = _tab_sections(session, run, tab, facts.ready, stored)
    models = tabs.section_models(sections)
    stage_sections = sections.get(tab, {}) if tab in STAGE_TABS else {}
    other_fields = {key: value for key, value in stage_sections.items() if key not in DRAWN_FIELDS.get(tab, ())}
    tale = (
        overview.story(models, facts=facts, progress=stages, failure=error, filename=run.filename)
        if tab == "overview" and stored
        else None
    )
    return render_template(
        "run.html",
        run=run,
        tab=tab,
        tabs=TABS,
        finished=finished,
        **_progress_context(session, run),
        error=error,
        sections=sections,
        models=models,
        stage=models.get(tab),
        other_fields=other_fields,
        has_report=stored,
        facts=facts,
        why_not=overview.why_not,
        tabs_ready=facts.ready,
        states=facts.states,
        view_story=tale,
        renderer=Renderer(run.filename),
        source_listing=listing(run.code, "L"),
        title_of=title_of,
        view=tabs.VIEWS.get(tab),
        generic=generic,
        listing=listing,
        present="present" in request.args,
        reused="reused" in request.args,
        measured=measured_by(run),
        train_choice={value: key for key, value in TRAIN_CHOICES.items()}[run.train],
        device_name=(run.environment or {}).get("device_name"),
        worker_online=bool(runstore.online_queues(session, context.settings())),
        trace_import=_import_ranks(session, run) if finished and run.kind == IMPORT else None,
        parent=session.get(Run, run.parent_id) if run.parent_id else None,
    )


def _tab_sections(session, run: Run, tab: str, ready: set, stored: bool) -> dict:
    """The report sections the tab draws, graphs without their nodes (each viewer fetches its own): every section
    for the Overview's story, the tab's own and those it borrows for a stage tab that is ready, else none."""
    if stored and tab == "overview":
        return runstore.load_sections(session, run, exclude=["source"], outlines=True)
    if tab in ready:
        return runstore.load_sections(session, run, [tab, *EXTRA_SECTIONS.get(tab, [])], outlines=True)
    return {}


def _import_ranks(session, run: Run):
    """An imported log's trace_import section with every rank (a further rank's report lists only the first rank
    and itself)."""
    trace_import = runstore.load_sections(session, run, ["trace_import"]).get("trace_import")
    if not trace_import:
        return None
    return tabs.section_models({"trace_import": runstore.import_ranks(session, run, trace_import)})["trace_import"]


# The long parts of a tab drawn only when opened (templates/report/parts.html): kind -> the tab that holds it.
PARTS = {
    "kernel": {"inductor"},
    "devicecode": {"inductor"},
    "fusion": {"inductor"},
    "ir": {"inductor"},
    "irnode": {"inductor"},
    "guards": {"dynamo"},
    "field": set(STAGE_TABS),
}


@bp.get("/r/<slug>/part/<tab>/<kind>/<key>")
def part(slug: str, tab: str, kind: str, key: str):
    """One long part of a tab as an HTML fragment: a kernel's source, a group of fusion decisions, the IR diff
    of one graph, one frame's guard tree. A finished report never changes."""
    session = context.session()
    run = _run_or_404(slug)
    html = part_html(session, run, tab, kind, key)
    if html is None:
        abort(404)
    return Response(html, mimetype="text/html", headers={"Cache-Control": "private, max-age=3600"})


def part_html(session, run: Run, tab: str, kind: str, key: str) -> str | None:
    """The fragment of one part (the page fetches it when its fold opens; the offline file carries it inline);
    None when the run's report has no such part."""
    if tab not in PARTS.get(kind, ()) or not runstore.has_report(session, run):
        return None
    # A kernel's device code is the one part its tab's outline leaves out (contract.graphs.section_outline).
    sections = runstore.load_sections(session, run, [tab], outlines=kind != "devicecode")
    if tab not in sections:
        return None
    # A generic field is drawn from the stored dict; every other part from the section's model.
    found = tabs.find_part(sections[tab] if kind == "field" else tabs.section_models(sections)[tab], kind, key)
    if found is None:
        return None
    return render_template(
        "report/part.html",
        run=run,
        tab=tab,
        kind=kind,
        part=found,
        listing=listing,
        renderer=Renderer(run.filename),
        title_of=title_of,
    )


@bp.get("/r/<slug>/graphs/<graph_id>.json")
def graph(slug: str, graph_id: str):
    """One graph for the viewer (contract.graphs.graph_payload), sent as stored: pages list graphs, and each is fetched
    when it is shown."""
    run = _run_or_404(slug)
    with heavy_slot():
        text = runstore.graph_json_text(context.session(), run, graph_id)
    if text is None:
        abort(404)
    # A finished report never changes.
    return Response(text, mimetype="application/json", headers={"Cache-Control": "private, max-age=3600"})


@bp.get("/r/<slug>/provenance.json")
def provenance(slug: str):
    """One user line's Dynamo nodes, ATen nodes and kernels (``?line=N``; contract.provenance), read when the
    user selects the line: a small row stored with the report, never derived per request."""
    session = context.session()
    run = _run_or_404(slug)
    line = request.args.get("line", type=int)
    if line is None or not 0 < line < 10**7:
        return jsonify(error="Ask for one line of the file: provenance.json?line=N"), 400
    if not runstore.has_report(session, run):
        abort(404)
    return Response(
        runstore.line_provenance_text(session, run, line),
        mimetype="application/json",
        headers={"Cache-Control": "private, max-age=3600"},
    )  # a stored report never changes


@bp.get("/r/<slug>/report.json")
def download(slug: str):
    session = context.session()
    run = _run_or_404(slug)
    if run.status not in FINISHED_STATUSES or not runstore.has_report(session, run):
        abort(404)
    with heavy_slot():
        pieces = runstore.report_json_pieces(session, run)
    return Response(
        pieces,  # sent piece by piece, its length summed (runstore.report_json_pieces says why)
        mimetype="application/json",
        headers={"Content-Disposition": f'attachment; filename="pt2scope-{run.slug}.json"'},
    )


@bp.get("/r/<slug>/compile-trace.json")
def compile_trace(slug: str):
    """The compile as a Chrome trace (contract.chrome_trace): torch's compile events and the job's phases, for
    Perfetto or chrome://tracing."""
    session = context.session()
    run = _run_or_404(slug)
    if run.status not in FINISHED_STATUSES or not runstore.has_report(session, run):
        abort(404)
    return Response(
        runstore.compile_trace_text(session, run),
        mimetype="application/json",
        headers={"Content-Disposition": f'attachment; filename="pt2scope-{run.slug}-compile-trace.json"'},
    )


@bp.get("/r/<slug>/graphs/<graph_id>/repro.py")
def repro(slug: str, graph_id: str):
    """A standalone repro.py of one graph (contract.repro): its code, random inputs of the recorded shapes, eager
    against the run's recorded config. A graph that cannot run alone gets a plain-text answer saying why."""
    session = context.session()
    run = _run_or_404(slug)
    if not graph_id.startswith(REPRO_GRAPHS):
        abort(404)
    with heavy_slot():
        found = repro_script(session, run, graph_id)
    return _script_download(found, graph_id, f"pt2scope-{run.slug}-{graph_id}-repro.py")


def _script_download(found: tuple[str | None, str | None], what: str, filename: str) -> Response:
    """A repro download's answer from its (script, why not): the script as an attachment, a plain-text 422 that
    says why there is none, or 404 where the run has no such thing."""
    script, why_not = found
    if script is None and why_not is None:
        abort(404)
    if script is None:
        return Response(f"No repro.py for {what}: {why_not}.\n", status=422, mimetype="text/plain")
    return Response(
        script, mimetype="text/x-python", headers={"Content-Disposition": f'attachment; filename="{filename}"'}
    )


def repro_script(session, run: Run, graph_id: str, facts: dict | None = None) -> tuple[str | None, str | None]:
    """(the graph's repro.py, None), (None, why it cannot run alone), or (None, None) when the run has no such
    graph; for the download and for the offline file's links (which pass the run's ``repro_facts`` once)."""
    text = runstore.graph_json_text(session, run, graph_id)
    if text is None:
        return None, None
    return graph_repro(json.loads(text), **(facts or repro_facts(session, run)))


@bp.get("/r/<slug>/kernels/<int:index>/repro.py")
def kernel_repro_download(slug: str, index: int):
    """One generated kernel alone as a script (contract.repro.kernel_repro): its output code run once to catch the
    kernel's arguments, then the kernel launched alone, checked and timed."""
    session = context.session()
    run = _run_or_404(slug)
    with heavy_slot():
        found = kernel_repro_script(session, run, index)
    return _script_download(found, f"kernel {index}", f"pt2scope-{run.slug}-kernel-{index}-repro.py")


def kernel_repro_script(
    session, run: Run, index: int, facts: dict | None = None, inductor: dict | None = None
) -> tuple[str | None, str | None]:
    """(kernel ``index``'s script, None), (None, why it cannot run alone) or (None, None) when there is no such
    kernel; for the download and the offline file (which passes the run's ``repro_facts`` and Inductor section
    once)."""
    inductor = inductor or runstore.load_sections(session, run, ["inductor"]).get("inductor")
    if inductor is None:
        return None, None
    facts = facts or repro_facts(session, run)
    return kernel_repro(
        inductor, index, device=facts["device"], torch_version=facts["torch_version"], source=facts["source"]
    )


@bp.get("/r/<slug>/line-times.json")
def line_times(slug: str):
    """The Dynamo graphs' time overlay: each line of the user's file with the kernels built from it and their share
    of the profiled step (webapp/tabs/inductor.py line_times); fetched when a reader first asks for it."""
    return Response(line_times_text(context.session(), _run_or_404(slug)), mimetype="application/json")


def line_times_text(session, run: Run) -> str:
    with heavy_slot():
        sections = runstore.load_sections(session, run, ["inductor", "runtime"], outlines=True)
    models = tabs.section_models(sections)
    if "inductor" not in models:
        return json.dumps({"by": "line", "times": {}})
    return json.dumps(inductor_tab.line_times(models["inductor"], models.get("runtime")))


@bp.get("/r/<slug>/minified-repro.py")
def minified_repro(slug: str):
    """The repro.py of the smallest graph that still breaks the bisected rung (runtime.bisect.minified), compiled
    with that rung's config."""
    session = context.session()
    run = _run_or_404(slug)
    with heavy_slot():
        found = minified_repro_script(session, run)
    return _script_download(found, "the minified graph", f"pt2scope-{run.slug}-minified-repro.py")


def minified_repro_script(session, run: Run, facts: dict | None = None) -> tuple[str | None, str | None]:
    """(the minified graph's repro.py, None), (None, why not), or (None, None) when the run has none."""
    bisect = (runstore.load_sections(session, run, ["runtime"]).get("runtime") or {}).get("bisect") or {}
    minified = bisect.get("minified") or {}
    if not minified.get("code"):
        return None, None
    config = CONFIGS[bisect["config"]]
    facts = {
        **(facts or repro_facts(session, run)),
        "config": {"name": config.name, "backend": config.backend, "mode": config.mode},
    }
    return graph_repro(minified_payload(minified, config.name), **facts)


def repro_facts(session, run: Run) -> dict:
    """What every repro of a run shares: its device, recorded config, torch version and the recorded value of each
    dynamic-shape symbol (contract.repro.graph_repro's keyword arguments)."""
    sections = runstore.load_sections(session, run, ["request", "environment", "dynamo"], outlines=True)
    request_section = sections.get("request") or {}
    config = capture_config(request_section.get("configs") or [])
    return {
        "device": request_section.get("device") or "cpu",
        "config": {"name": config.name, "backend": config.backend, "mode": config.mode},
        "torch_version": (sections.get("environment") or {}).get("torch_version"),
        "symbols": {
            s["symbol"]: int(s["value"])
            for s in (sections.get("dynamo") or {}).get("symbols") or []
            if str(s.get("value") or "").isdigit()
        },
        "source": f"run {run.slug}, {run.filename or 'an imported log'}",
    }


@bp.get("/favicon.ico")
def favicon():
    """For clients that ask for /favicon.ico without reading the page's icon link."""
    return redirect(url_for("static", filename="favicon.svg"), code=301)


@bp.get("/highlight.css")
def highlight_css():
    return Response(stylesheet(), mimetype="text/css", headers={"Cache-Control": "public, max-age=86400"})


def _run_or_404(slug: str) -> Run:
    run = runstore.get_run(context.session(), slug)
    if run is None:
        abort(404)
    return run
