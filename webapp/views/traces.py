"""Bring your own job: upload a TORCH_TRACE log (page /import, API POST /api/traces) and get a report.

The web process only checks the upload's size and stores it; a worker imports it (workers/imports.py) in a
limited child process. The log is never parsed here.
"""

from __future__ import annotations

import os

from flask import Blueprint, jsonify, redirect, render_template, request, url_for
from werkzeug.exceptions import RequestEntityTooLarge

from storage import runstore
from webapp import context, security
from webapp.security import UPLOAD_ENDPOINTS, too_large_message

bp = Blueprint("traces", __name__)
FORM_OVERHEAD_BYTES = 64 * 1024  # the multipart envelope and the CSRF field around the file
ACCEPTED = ".log, .txt, .gz, .zip, .tar, .tar.gz, .tgz"


class UploadError(ValueError):
    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


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
    """Store the upload a chunk at a time (never whole in this process) and queue its import (raises UploadError)."""
    session = context.session()
    filename = os.path.basename(upload.filename)[:200] or "trace.log"
    try:
        run = runstore.create_import(
            session, filename, upload.stream, context.settings().max_trace_mb * 1024**2, client=security.client_id()
        )
    except runstore.UploadTooLarge:
        raise UploadError(too_large_message(), 413) from None
    except ValueError:
        raise UploadError(f"{upload.filename} is empty.") from None
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
        upload = _upload()
        limited = security.rate_limited()
        if limited:
            return (
                render_template("import.html", error=limited[0], max_mb=settings.max_trace_mb, accepted=ACCEPTED),
                429,
                {"Retry-After": str(limited[1])},
            )
        run = _create(upload)
    except UploadError as exc:
        return render_template(
            "import.html", error=str(exc), max_mb=settings.max_trace_mb, accepted=ACCEPTED
        ), exc.status
    return redirect(url_for("pages.report", slug=run.slug), code=303)


def create_trace_import():
    """POST /api/traces, on the API blueprint (webapp/views/api.py): JSON errors, no CSRF token, like /api/runs."""
    try:
        upload = _upload()
        limited = security.rate_limited()
        if limited:
            return jsonify(errors={"rate_limit": limited[0]}), 429, {"Retry-After": str(limited[1])}
        run = _create(upload)
    except UploadError as exc:
        return jsonify(errors={"trace": str(exc)}), exc.status
    return jsonify(
        id=run.slug,
        url=url_for("pages.report", slug=run.slug, _external=True),
        status_url=url_for("api.get_run", slug=run.slug, _external=True),
        report_url=url_for("api.get_report", slug=run.slug, _external=True),
        status=run.status,
    ), 202
