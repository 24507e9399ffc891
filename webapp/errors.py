"""Errors of ours, answered without our internals: logged with an id and the traceback, shown as that id only.

Registered for every unhandled exception (Flask turns it into a 500): the API answers JSON, pages answer the
message page. A 4xx raised on purpose keeps its own handler.
"""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify, request

from contract.vocab import new_error_id
from webapp.security import message_page

bp = Blueprint("errors", __name__)


@bp.app_errorhandler(500)
def internal_error(error):
    error_id = new_error_id()
    original = getattr(error, "original_exception", None) or error
    current_app.logger.error(
        "error %s: %s %s",
        error_id,
        request.method,
        request.path,
        exc_info=(type(original), original, original.__traceback__),
    )
    message = f"Something went wrong on our side (error id {error_id}). Try again; if it persists, report the id."
    if request.path.startswith("/api/"):
        return jsonify(error=message, error_id=error_id), 500
    return message_page("Internal error", message, 500)
