"""Web hardening (docs/security.md): CSRF tokens on forms, security headers with a Content-Security-Policy that
allows no inline script, per-client rate limits on submissions, and a clear answer to an oversized request.

The JSON API takes no CSRF token: it accepts only `Content-Type: application/json` bodies (a cross-site page cannot
send those without a CORS preflight, which this app never grants) and acts on no cookie.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from datetime import datetime, timedelta

from flask import Flask, jsonify, render_template_string, request, session
from werkzeug.middleware.proxy_fix import ProxyFix

from storage import runstore
from storage.config import Settings
from storage.models import utcnow
from webapp import context

CSRF_FIELD = "csrf_token"
# No inline script and no eval anywhere; styles may be inline because the editor (CodeMirror) and the graph
# view set element styles at run time. Workers load from this origin only.
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "worker-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
}
MESSAGE_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>pt2scope</title>
<link rel="stylesheet" href="/static/style.css"></head><body><main><h1>{{ title }}</h1>
<p id="message">{{ message }}</p><p><a href="/">Back to the form</a></p></main></body></html>"""


def init_app(app: Flask, settings: Settings) -> None:
    app.secret_key = settings.secret_key or _instance_secret(settings.instance_path)
    app.config.update(SESSION_COOKIE_HTTPONLY=True, SESSION_COOKIE_SAMESITE="Lax")
    if settings.proxy_count:
        app.wsgi_app = ProxyFix(  # type: ignore[method-assign]  # Flask's documented way to wrap its WSGI app
            app.wsgi_app, x_for=settings.proxy_count, x_proto=settings.proxy_count, x_host=settings.proxy_count
        )
    app.jinja_env.globals["csrf_token"] = csrf_token
    app.before_request(_check_csrf)
    app.after_request(_add_security_headers)
    app.register_error_handler(413, _too_large)


def csrf_token() -> str:
    """The token every form posts back (templates: `{{ csrf_token() }}` in a hidden field named csrf_token)."""
    if CSRF_FIELD not in session:
        session[CSRF_FIELD] = secrets.token_urlsafe(32)
    return session[CSRF_FIELD]


def submission_limit() -> tuple[int, datetime] | None:
    """(count, since) for runstore.create_run, which checks it atomically; None when there is no limit."""
    settings = context.settings()
    if settings.rate_limit_count <= 0:
        return None
    return settings.rate_limit_count, utcnow() - timedelta(seconds=settings.rate_limit_window_s)


def rate_limited() -> tuple[str, int] | None:
    """(message, seconds to wait) when this client has used up its submissions for the window, else None."""
    limit = submission_limit()
    if limit is None:
        return None
    settings = context.settings()
    count, since = limit
    times = runstore.recent_submissions(context.session(), client_id(), since)
    if len(times) < count:
        return None
    oldest_counted = times[-count]
    wait = max(1, int((oldest_counted - since).total_seconds()) + 1)
    return (
        f"Too many runs: at most {settings.rate_limit_count} submissions per {settings.rate_limit_window_s:g} s "
        f"from one address. Try again in {wait} s."
    ), wait


def client_id() -> str:
    """This client's address as a keyed hash: enough to count its submissions, without storing the address."""
    address = (request.remote_addr or "unknown").encode()
    return hmac.new(_key(), address, hashlib.sha256).hexdigest()[:32]


def message_page(title: str, message: str, status: int, headers: dict | None = None):
    return render_template_string(MESSAGE_PAGE, title=title, message=message), status, headers or {}


def _key() -> bytes:
    from flask import current_app

    key = current_app.secret_key
    if key is None:
        raise RuntimeError("the app has no secret key (webapp.security.init_app sets one)")
    return key.encode() if isinstance(key, str) else key


def _check_csrf():
    if request.method in ("GET", "HEAD", "OPTIONS") or request.blueprint == "api":
        return None
    expected = session.get(CSRF_FIELD)
    if not expected or not hmac.compare_digest(request.form.get(CSRF_FIELD, ""), expected):
        return message_page(
            "The form could not be accepted",
            "This form did not come from this site's page or has expired (CSRF check). Reload the "
            "page and submit again.",
            400,
        )
    return None


def _add_security_headers(response):
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    return response


# The endpoints that take a TORCH_TRACE log (webapp/views/traces.py): the trace size limit is theirs, every other
# request keeps the app's, which is sized for code.
UPLOAD_ENDPOINTS = ("traces.import_upload", "api.create_trace_import")


def too_large_message() -> str:
    return (
        f"The log is larger than {context.settings().max_trace_mb} MiB, the upload limit: gzip it (logs shrink "
        "about tenfold), or upload fewer ranks."
    )


def _too_large(_error):
    limit_kib = context.settings().max_code_bytes // 1024
    if request.endpoint in UPLOAD_ENDPOINTS:
        message = too_large_message()
        if request.path.startswith("/api/"):
            return jsonify(errors={"trace": message}), 413
        return message_page("Too large", message, 413)
    message = (
        f"The request is too large: a model file may have at most {limit_kib} KiB (the whole request "
        f"{4 * limit_kib} KiB)."
    )
    if request.path.startswith("/api/"):
        return jsonify(errors={"body": message}), 413
    return message_page("Too large", message, 413)


def _instance_secret(instance_path: str) -> str:
    """A key made once and kept in the instance folder (mode 0600), shared by every web process using it."""
    path = os.path.join(instance_path, "secret_key")
    os.makedirs(instance_path, exist_ok=True)
    if not os.path.exists(path):
        # Written whole under a private name, then linked into place: a second process starting at the same
        # moment either wins the link or reads the winner's complete key.
        staging = f"{path}.{os.getpid()}.{secrets.token_hex(4)}"
        with open(os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
            f.write(secrets.token_urlsafe(48))
        try:
            os.link(staging, path)
        except FileExistsError:
            pass
        finally:
            os.unlink(staging)
    with open(path) as f:
        return f.read().strip()
