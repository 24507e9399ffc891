"""JSON API (docs/api.md, docs/openapi.yaml). A run's public id is its unguessable slug."""

from __future__ import annotations

from flask import Blueprint, Response, abort, jsonify, request, url_for

from storage import progress, runstore
from storage.models import FINISHED_STATUSES, RUNNING, Run
from webapp import context, security
from webapp.heavy import heavy_slot
from webapp.submission import syntax_error, validate
from webapp.tabs import overview
from webapp.views import diff, traces

bp = Blueprint("api", __name__, url_prefix="/api")
# JSON routes whose work lives beside their pages (endpoints api.<function>): listed here, so that every route of
# the API is on this blueprint before it is registered, whatever the order the view modules are imported in.
bp.add_url_rule("/traces", view_func=traces.create_trace_import, methods=["POST"])
bp.add_url_rule("/diff/<a>/<b>", view_func=diff.diff_json)


@bp.post("/runs")
def create_run():
    data = request.get_json(silent=True)
    if not isinstance(data, dict):
        return jsonify(errors={"body": "Send a JSON object: {code, device, train, configs}."}), 400
    session = context.session()
    settings = context.settings()
    submission, errors = validate(
        data, max_code_bytes=settings.max_code_bytes, online_queues=runstore.online_queues(session, settings)
    )
    if submission is None:
        code = data.get("code")
        syntax = (
            syntax_error(code, str(data.get("filename") or "model.py"))
            if isinstance(code, str) and "code" in errors
            else None
        )
        return jsonify(errors=errors, **({"syntax_error": syntax} if syntax else {})), 400
    run, reused = submit(submission)
    if run is None:
        message, wait = security.rate_limited() or RATE_LIMITED
        return jsonify(errors={"rate_limit": message}), 429, {"Retry-After": str(wait)}
    return jsonify(
        id=run.slug,
        url=url_for("pages.report", slug=run.slug, _external=True),
        status_url=url_for("api.get_run", slug=run.slug, _external=True),
        report_url=url_for("api.get_report", slug=run.slug, _external=True),
        reused=reused,
        measured=measured_by(run) if reused else None,
    ), 200 if reused else 202


# What a rejected submission says if the window slid on between the check and the message.
RATE_LIMITED = ("Too many runs from this address: try again in a minute.", 60)


def submit(submission: runstore.Submission, parent: Run | None = None) -> tuple[Run | None, bool]:
    """Store and enqueue a validated run (the form posts here too); (None, False) when the client is over its rate
    limit (checked atomically with the insert); (run, True) when an identical run (same request, same software on
    the queue's workers) answers it instead, checked under the lock of the insert (a class pressing Run at once
    gets one run), unless the submission asks for a fresh one. ``parent``: the run it
    re-runs with other settings."""
    session = context.session()
    fingerprint = runstore.fingerprint(
        submission, runstore.queue_software(session, context.settings(), runstore.QUEUE_FOR_DEVICE[submission.device])
    )
    run, reused = runstore.create_or_join_run(
        session,
        submission,
        client=security.client_id(),
        limit=security.submission_limit(),
        parent=parent,
        fingerprint=fingerprint,
        join=not submission.fresh,
    )
    if run is None or reused:
        return run, reused
    try:
        context.enqueue(run)
    except Exception as exc:  # broker down: say so on the run rather than leave it queued forever
        runstore.fail_run(session, run, "load", "queue_unavailable", f"the job queue is unavailable: {exc}")
    return run, False


def measured_by(run: Run) -> dict:
    """When and where a run was (or is being) measured."""
    return {
        "at": progress.iso(run.finished_at),
        "worker": run.worker_name,
        "device_name": (run.environment or {}).get("device_name"),
        "status": run.status,
    }


@bp.get("/runs")
def list_runs():
    """The newest runs, only where the operator allows it (PT2SCOPE_LIST_RUNS): links are private otherwise."""
    if not context.settings().list_runs:
        return jsonify(error="Listing runs is turned off on this server; a run is reached by its link."), 404
    return jsonify(
        runs=[
            {
                "id": run.slug,
                "url": url_for("pages.report", slug=run.slug, _external=True),
                "filename": run.filename,
                "status": run.status,
                "created_at": progress.iso(run.created_at),
            }
            for run in runstore.recent_runs(context.session(), 50)
        ]
    )


@bp.get("/runs/<slug>")
def get_run(slug: str):
    session = context.session()
    run = _run_or_404(slug)
    if run.status == RUNNING:  # a dead worker cannot say so: check here too, not only in other workers
        runstore.reap_stale_runs(session, context.settings(), run_id=run.id)
    return jsonify(status_of(run))


def status_of(run: Run) -> dict:
    session = context.session()
    steps, error, finished = progress.progress_steps(run), runstore.error_of(run), run.status in FINISHED_STATUSES
    stages = progress.stage_progress(run)
    queue = runstore.queue_estimate(session, context.settings(), run)
    return {
        "id": run.slug,
        "url": url_for("pages.report", slug=run.slug, _external=True),
        "status": run.status,
        # Its place in its queue (workers start runs round-robin across clients) and the expected wait, from the
        # queue's measured job times.
        "queue_position": queue and queue["position"],
        "queue": queue,
        "device": run.device,
        "train": run.train,
        "configs": run.configs,
        "filename": run.filename,
        "created_at": progress.iso(run.created_at),
        "started_at": progress.iso(run.started_at),
        "finished_at": progress.iso(run.finished_at),
        # When the worker was done with it (the report and every figure after it stored).
        "released_at": progress.iso(run.released_at),
        "stages": stages,
        # The steps in the order they run (a benchmark per config), those to come included; the one running now;
        # the seconds until the report is readable, measured against the queue's recent runs (storage.progress);
        # the stage tabs readable now.
        "steps": steps,
        "current": progress.current_step(steps),
        # Steps under way after the report was stored (the warm compile): the report page reloads when they end.
        "still_measuring": progress.still_measuring(run, steps, context.settings()),
        "time_left_s": runstore.time_left(session, run, steps),
        "tabs_ready": sorted(overview.tabs_ready(stages, run.status, error, runstore.has_report(session, run))),
        "messages": progress.messages(run),
        "error": error,
        "engine_seconds": run.engine_seconds,
        "worker": run.worker_name,
        "summary": run.summary,
        "report_url": url_for("api.get_report", slug=run.slug, _external=True) if finished else None,
    }


@bp.get("/runs/<slug>/report")
def get_report(slug: str):
    session = context.session()
    run = _run_or_404(slug)
    if run.status not in FINISHED_STATUSES or not runstore.has_report(session, run):
        return jsonify(
            status=run.status,
            error="This run has no report yet."
            if run.status not in FINISHED_STATUSES
            else "This run ended without a report (see its error).",
        ), 409
    with heavy_slot():
        pieces = runstore.report_json_pieces(session, run)
    return Response(pieces, mimetype="application/json")  # sent piece by piece (runstore.report_json_pieces)


def _run_or_404(slug: str) -> Run:
    run = runstore.get_run(context.session(), slug)
    if run is None:
        abort(404)
    return run


@bp.errorhandler(404)
def not_found(_error):
    return jsonify(error="No run with this id."), 404
