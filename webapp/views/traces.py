"""Bring your own job: upload a TORCH_TRACE log (page /import, API POST /api/traces) and get a report.

The web process only checks the upload's size and stores it; a worker imports it (workers/imports.py) in a
limited child process. The log is never parsed here.
"""

from __future__ import annotations

import os

from flask import Blueprint, jsonify, redirect, render_template, request, url_for
from werkzeug.exceptions import RequestEntityTooLarge

from storage import runstore
from storage.text import storable
from webapp import context, security
from webapp.security import UPLOAD_ENDPOINTS, too_large_message

bp = Blueprint("traces", __name__)
FORM_OVERHEAD_BYTES = 64 * 1024  # the multipart envelope and the CSRF field around the file
ACCEPTED = ".log, .txt, .gz, .zip, .tar, .tar.gz, .tgz"


class UploadError(ValueError):
    def __init__(self, message: str, status: int = 400, retry_after: int | None = None):
        super().__init__(message)
        self.status, self.retry_after = status, retry_after

    def headers(self) -> dict:
        return {} if self.retry_after is None else {"Retry-After": str(self.retry_after)}


def _rate_limited() -> UploadError:
    message, wait = security.rate_limited() or ("Too many runs from one address: try again in a minute.", 60)
    return UploadError(message, 429, wait)


def allow_trace_upload() -> None:
    """Before any other request hook (the CSRF check reads the form): an upload endpoint may take a log, every
    other request keeps the app's limit, which is sized for code."""
    if request.endpoint in UPLOAD_ENDPOINTS:
        request.max_content_length = context.settings().max_trace_mb * 1024**2 + FORM_OVERHEAD_BYTES


def _upload():
    """The uploaded file (werkzeug has spooled it to a temporary file), before the size check (raises UploadError)."""
    try:
        upload = request.files.get("trace")
    except RequestEntityTooLarge:
        raise UploadError(too_large_message(), 413) from None
    if upload is None or not upload.filename:
        raise UploadError(
            "Choose a file: the log TORCH_TRACE=DIR wrote (DIR/dedicated_log_torch_trace_*.log), "
            f"or DIR as one archive ({ACCEPTED})."
        )
    return upload


def _create(upload):
    """Store the upload a chunk at a time (never whole in this process) and queue its import (raises UploadError;
    429 when this client has used up its submissions, checked and counted in one step: runstore.create_import)."""
    session = context.session()
    # Any text a browser sends: NUL (which PostgreSQL refuses) and unpaired surrogates are made visible escapes.
    filename = storable(os.path.basename(upload.filename)[:200]) or "trace.log"
    if security.rate_limited():  # refused at once; the atomic check below holds the limit under a burst
        raise _rate_limited()
    try:
        run = runstore.create_import(
            session,
            filename,
            upload.stream,
            context.settings().max_trace_mb * 1024**2,
            client=security.client_id(),
            limit=security.submission_limit(),
        )
    except runstore.UploadTooLarge:
        raise UploadError(too_large_message(), 413) from None
    except ValueError:
        raise UploadError(f"{upload.filename} is empty.") from None
    if run is None:
        raise _rate_limited()
    try:
        context.enqueue(run)
    except Exception as exc:  # broker down: say so on the run rather than leave it queued forever
        runstore.drop_upload(session, run.id)
        runstore.fail_run(session, run, "load", "queue_unavailable", f"the job queue is unavailable: {exc}")
    return run


@bp.get("/import")
def import_form():
    return render_template("import.html", error=None, max_mb=context.settings().max_trace_mb, accepted=ACCEPTED)


@bp.post("/import")
def import_upload():
    settings = context.settings()
    try:
        run = _create(_upload())
    except UploadError as exc:
        page = render_template("import.html", error=str(exc), max_mb=settings.max_trace_mb, accepted=ACCEPTED)
        return page, exc.status, exc.headers()
    return redirect(url_for("pages.report", slug=run.slug), code=303)


def create_trace_import():
    """POST /api/traces, on the API blueprint (webapp/views/api.py): JSON errors, no CSRF token, like /api/runs."""
    try:
        run = _create(_upload())
    except UploadError as exc:
        return jsonify(errors={"rate_limit" if exc.status == 429 else "trace": str(exc)}), exc.status, exc.headers()
    return jsonify(
        id=run.slug,
        url=url_for("pages.report", slug=run.slug, _external=True),
        status_url=url_for("api.get_run", slug=run.slug, _external=True),
        report_url=url_for("api.get_report", slug=run.slug, _external=True),
        status=run.status,
    ), 202
