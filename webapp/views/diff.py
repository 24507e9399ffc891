"""Compare two runs: /diff/<a>/<b> side by side, GET /api/diff/<a>/<b> as JSON (contract/diff.py does the work),
and /r/<slug>/compare?with=<link or id>, where a report's "Compare with..." box sends its reader."""

from __future__ import annotations

import re

from flask import Blueprint, abort, jsonify, redirect, render_template, request, url_for

from contract.diff import compare
from storage import runstore
from storage.models import FINISHED_STATUSES, Run
from webapp import context

bp = Blueprint("diff", __name__)
SECTIONS = ["dynamo", "aot", "inductor", "runtime", "environment"]
_SLUG_IN_LINK = re.compile(r"/(?:r|diff/[^/]+)/(?P<slug>[A-Za-z0-9_-]{8,32})")


def _run(slug: str) -> Run | None:
    run = runstore.get_run(context.session(), slug)
    return (
        run
        if run is not None and run.status in FINISHED_STATUSES and runstore.has_report(context.session(), run)
        else None
    )


def run_meta(run: Run, environment: dict) -> dict:
    return {
        "id": run.slug,
        "filename": run.filename,
        "kind": run.kind,
        "rank": run.rank,
        "device": run.device,
        "configs": run.configs,
        "torch_version": environment.get("torch_version"),
        "url": url_for("pages.report", slug=run.slug, _external=True),
    }


def comparison(run_a: Run, run_b: Run) -> dict:
    session = context.session()
    a, b = (runstore.load_sections(session, run, SECTIONS) for run in (run_a, run_b))
    return {
        "a": run_meta(run_a, a.get("environment") or {}),
        "b": run_meta(run_b, b.get("environment") or {}),
        **compare(a, b),
    }


@bp.get("/diff/<a>/<b>")
def diff_page(a: str, b: str):
    run_a, run_b = _run(a), _run(b)
    if run_a is None or run_b is None:
        missing = a if run_a is None else b
        return render_template("diff.html", error=f"No finished report with the id {missing}.", result=None), 404
    return render_template("diff.html", error=None, result=comparison(run_a, run_b), run_a=run_a, run_b=run_b)


def diff_json(a: str, b: str):
    """GET /api/diff/<a>/<b>, on the API blueprint (webapp/views/api.py)."""
    run_a, run_b = _run(a), _run(b)
    if run_a is None or run_b is None:
        return jsonify(error=f"No finished report with the id {a if run_a is None else b}."), 404
    return jsonify(comparison(run_a, run_b))


@bp.get("/r/<slug>/compare")
def compare_form(slug: str):
    """The "Compare with..." box: a pasted link (…/r/<id>…) or a bare id."""
    if runstore.get_run(context.session(), slug) is None:
        abort(404)
    other = (request.args.get("with") or "").strip()
    match = _SLUG_IN_LINK.search(other)
    other_slug = match["slug"] if match else other.strip("/")
    if not re.fullmatch(r"[A-Za-z0-9_-]{8,32}", other_slug or ""):
        return render_template("diff.html", error="Paste another report's link (…/r/<id>) or its id.", result=None), 400
    return redirect(url_for("diff.diff_page", a=slug, b=other_slug), code=303)
