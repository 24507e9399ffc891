"""Compare two runs: /diff/<a>/<b> side by side, GET /api/diff/<a>/<b> as JSON (contract/diff.py does the work),
and /r/<slug>/compare?with=<link or id>, where a report's "Compare with..." box sends its reader."""

from __future__ import annotations

import re

from flask import Blueprint, abort, jsonify, redirect, render_template, request, url_for

from contract.diff import compare
from contract.report import Benchmark, Dynamo
from storage import runstore
from storage.models import FINISHED_STATUSES, Run
from webapp import context
from webapp.tabs import dynamo as dynamo_tab
from webapp.tabs.runtime import outcome

bp = Blueprint("diff", __name__)
SECTIONS = ["summary", "request", "dynamo", "aot", "inductor", "runtime", "environment"]
_SLUG_IN_LINK = re.compile(r"/(?:r|diff/[^/]+)/(?P<slug>[A-Za-z0-9_-]{8,32})")


def _run(slug: str) -> Run | None:
    run = runstore.get_run(context.session(), slug)
    return (
        run
        if run is not None and run.status in FINISHED_STATUSES and runstore.has_report(context.session(), run)
        else None
    )


def run_meta(run: Run, report: dict) -> dict:
    """What tells one side from the other: the file, its kind, device, configs, train or inference, the torch
    version, when it finished and its short id (two runs of one model.py differ in these, if in nothing else)."""
    environment, request = report.get("environment") or {}, report.get("request") or {}
    when = run.finished_at or run.created_at
    train = request.get("train") if request.get("train") is not None else run.train
    return {
        "id": run.slug,
        "short_id": run.slug[:8],
        "filename": run.filename,
        "kind": run.kind,
        "rank": run.rank,
        "device": run.device,
        "configs": run.configs,
        "mode": None if train is None else "training" if train else "inference",
        "torch_version": environment.get("torch_version"),
        "finished": when.strftime("%Y-%m-%d %H:%M UTC") if when else None,
        "url": url_for("pages.report", slug=run.slug, _external=True),
    }


def guard_counts(report: dict) -> dict:
    """Each frame's guards (compile id -> count) as the Dynamo tab counts them (webapp/tabs/dynamo.py)."""
    section = report.get("dynamo")
    if not section:
        return {}
    return {row["compile_id"]: row["count"] for row in dynamo_tab.guards_by_compile_id(Dynamo.model_validate(section))}


def speedup_words(report: dict) -> dict:
    """Each config's speedup in the Runtime tab's words (runtime.outcome): config -> (words, decided)."""
    words = {}
    for row in (report.get("runtime") or {}).get("benchmarks") or []:
        benchmark = Benchmark.model_validate(row)
        if benchmark.speedup is None and benchmark.config != "eager":
            continue
        result = outcome(benchmark)
        words[benchmark.config] = (result.words, result.decided)
    return words


def comparison(run_a: Run, run_b: Run) -> dict:
    session = context.session()
    a, b = (runstore.load_sections(session, run, SECTIONS) for run in (run_a, run_b))
    result = compare(a, b, (guard_counts(a), guard_counts(b)))
    words_a, words_b = speedup_words(a), speedup_words(b)
    for row in result["benchmarks"]:
        for side, words in (("a", words_a), ("b", words_b)):
            text, decided = words.get(row["config"], (None, False))
            row[f"{side}_speedup_text"], row[f"{side}_speedup_decided"] = text, decided
            row.pop(f"{side}_speedup", None)
    return {"a": run_meta(run_a, a), "b": run_meta(run_b, b), **result}


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
