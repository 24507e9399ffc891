"""Compare two runs: /diff/<a>/<b> side by side, GET /api/diff/<a>/<b> as JSON (contract/diff.py does the work),
and /r/<slug>/compare?with=<link or id>, where a report's "Compare with..." box sends its reader."""

from __future__ import annotations

import json
import re
import threading

from flask import Blueprint, abort, current_app, jsonify, redirect, render_template, request, url_for

from contract.diff import compare
from contract.report import Benchmark, Dynamo
from storage import progress, runstore
from storage.models import FINISHED_STATUSES, Run
from webapp import context
from webapp.heavy import heavy_slot
from webapp.tabs import dynamo as dynamo_tab
from webapp.tabs.runtime import outcome

bp = Blueprint("diff", __name__)
SECTIONS = ["summary", "request", "dynamo", "aot", "inductor", "runtime", "debug", "environment"]
# A diff reads and compares both reports whole in the web process (100,000 graph nodes each: 2.3 s, 600 MB), so it
# is bounded three ways: two runs whose compared sections take more than DIFF_LIMIT_BYTES together, as stored, are
# refused before any is read; one diff at a time is computed per web process (DIFF_SLOT; a request that finds it
# taken for DIFF_WAIT_S is answered 503, Retry-After, rather than hold a thread that the other pages need); and each
# pair of finished runs is compared once, its result kept with the first run's report (runstore.report_piece).
DIFF_LIMIT_BYTES = 64 * 1024 * 1024
DIFF_WAIT_S = 0.1
DIFF_SLOT = threading.BoundedSemaphore(1)


class TooLarge(Exception):
    """Two runs too large to compare here; the message says so, with the sizes and the limit."""


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
    """Each frame's guards (compile id -> count) as the Dynamo tab counts them (webapp/tabs/dynamo.py); the graphs
    are not validated for it (most of a large section, and no guard)."""
    section = report.get("dynamo")
    if not section:
        return {}
    guards_only = Dynamo.model_validate({**section, "graphs": []})
    return {row["compile_id"]: row["count"] for row in dynamo_tab.guards_by_compile_id(guards_only)}


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
    """Both runs described (run_meta) and their reports compared (the kept comparison of this pair, if any)."""
    compared = json.loads(_comparison_text(run_a, run_b))
    return {**_metas(run_a, run_b), **compared}


def _metas(run_a: Run, run_b: Run) -> dict:
    small = [runstore.load_sections(context.session(), run, ["request", "environment"]) for run in (run_a, run_b)]
    return {"a": run_meta(run_a, small[0]), "b": run_meta(run_b, small[1])}


def _comparison_text(run_a: Run, run_b: Run) -> str:
    """The two reports compared, as JSON text: kept with the first run's report once computed, when neither run's
    job may still change its report (so a burst of the same diff computes it once per web process at most)."""
    session = context.session()
    key = f"diff-{run_b.slug}"
    text = runstore.report_piece(session, run_a, key)
    if text is None:
        text = json.dumps(_computed(session, run_a, run_b))
        settings = context.settings()
        if not any(progress.job_runs_on(run, settings) for run in (run_a, run_b)):
            runstore.keep_report_piece(session, run_a, key, text)
    return text


def _computed(session, run_a: Run, run_b: Run) -> dict:
    """The comparison, in this process's diff slot; TooLarge before anything is read when the compared sections
    take more than DIFF_LIMIT_BYTES together."""
    sizes = [runstore.section_bytes(session, run, SECTIONS) for run in (run_a, run_b)]
    if sum(sizes) > DIFF_LIMIT_BYTES:
        mib = [round(size / 2**20, 1) for size in sizes]
        raise TooLarge(
            f"These two reports are too large to compare on this server: their graphs, kernels and figures take "
            f"{mib[0]:g} MiB and {mib[1]:g} MiB, more than {DIFF_LIMIT_BYTES // 2**20} MiB together. Compare runs of "
            "a smaller model (fewer layers, or one block of it), or download both reports (report.json) and compare "
            "them where you have the memory."
        )
    with heavy_slot(DIFF_WAIT_S, DIFF_SLOT):
        a, b = (runstore.load_sections(session, run, SECTIONS) for run in (run_a, run_b))
        result = compare(a, b, (guard_counts(a), guard_counts(b)))
        words_a, words_b = speedup_words(a), speedup_words(b)
    for row in result["benchmarks"]:
        for side, words in (("a", words_a), ("b", words_b)):
            text, decided = words.get(row["config"], (None, False))
            row[f"{side}_speedup_text"], row[f"{side}_speedup_decided"] = text, decided
            row.pop(f"{side}_speedup", None)
    return result


@bp.get("/diff/<a>/<b>")
def diff_page(a: str, b: str):
    run_a, run_b = _run(a), _run(b)
    if run_a is None or run_b is None:
        missing = a if run_a is None else b
        return render_template("diff.html", error=f"No finished report with the id {missing}.", result=None), 404
    try:
        result = comparison(run_a, run_b)
    except TooLarge as exc:
        return render_template("diff.html", error=str(exc), result=None), 413
    return render_template("diff.html", error=None, result=result, run_a=run_a, run_b=run_b)


def diff_json(a: str, b: str):
    """GET /api/diff/<a>/<b>, on the API blueprint (webapp/views/api.py)."""
    run_a, run_b = _run(a), _run(b)
    if run_a is None or run_b is None:
        return jsonify(error=f"No finished report with the id {a if run_a is None else b}."), 404
    try:
        compared = _comparison_text(run_a, run_b)
    except TooLarge as exc:
        return jsonify(error=str(exc)), 413
    # The kept text is sent as it is, with the two runs' descriptions spliced in: never parsed per request.
    metas = json.dumps(_metas(run_a, run_b))
    body = metas[:-1] + ("," + compared[1:] if compared != "{}" else "}")
    return current_app.response_class(body, mimetype="application/json")


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
