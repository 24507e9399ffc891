"""pt2scope web app: pages and JSON API over stored runs. Never imports torch (nor engine modules that do).

Layers (tests/test_layers.py): webapp -> storage -> contract. Settings, models, migrations and every read and
write of runs live in storage/ (shared with the workers); work is sent by task name through storage/queue.py,
never by importing the workers.

    webapp/submission.py  validation of a new run (form and API)
    webapp/examples.py    the gallery, read from examples/*.py
    webapp/render.py      report sections to HTML (Pygments listings, tables)
    webapp/tabs/          what each report tab draws, one module per tab (the Overview's story and shared facts)
    webapp/numbers.py     numbers for people (3 significant figures, no e-notation), as Jinja filters
    webapp/errors.py      internal errors: logged with an id, answered with the id only
    webapp/views/         blueprints: pages (new run, run/report), api (/api/runs), status (/status, /api/status,
                          /api/health)
"""

from __future__ import annotations

from flask import Flask

from contract.report import ReportError
from storage.config import PROJECT_ROOT, Settings


def create_app(settings: Settings | None = None) -> Flask:
    settings = settings or Settings.from_env()
    app = Flask(
        __name__,
        instance_path=settings.instance_path,
        template_folder=f"{PROJECT_ROOT}/templates",
        static_folder=f"{PROJECT_ROOT}/static",
    )
    app.config["MAX_CONTENT_LENGTH"] = 4 * settings.max_code_bytes  # the code plus the form around it

    from contract.repro import REPRO_GRAPHS
    from storage.queue import make_celery
    from webapp import context, errors, numbers, render, security
    from webapp.views import api, diff, export, pages, status, traces

    app.extensions["pt2scope"] = context.Extension(settings=settings, celery=make_celery(settings))
    app.teardown_appcontext(context.close_session)
    app.jinja_env.filters.update(numbers.FILTERS)  # {{ value|ms }}: numbers formatted for people, one way
    app.jinja_env.filters["breakable"] = render.breakable  # long identifiers wrap at _ and . only
    app.jinja_env.globals["REPRO_GRAPHS"] = REPRO_GRAPHS  # the graph viewers that offer a repro.py
    security.init_app(app, settings)
    app.register_blueprint(pages.bp)
    app.register_blueprint(api.bp)
    app.register_blueprint(status.bp)
    app.register_blueprint(errors.bp)
    app.register_blueprint(traces.bp)
    app.register_blueprint(diff.bp)
    app.register_blueprint(export.bp)
    # First of all request hooks: the CSRF check parses the form, and a log is larger than the app's limit.
    app.before_request_funcs.setdefault(None, []).insert(0, traces.allow_trace_upload)
    app.register_error_handler(ReportError, _unreadable_report)
    return app


def _unreadable_report(exc: ReportError):
    """A stored report this version cannot read (an unknown schema_version, or one that does not validate)."""
    return f"this run's stored report cannot be read: {exc}\n", 500, {"Content-Type": "text/plain; charset=utf-8"}
