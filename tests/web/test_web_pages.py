"""Pages without a worker: the form (gallery, upload, validation next to the fields), the run page while queued,
and report tabs drawn from stored sample reports."""

import glob
import io
import json
import os
import re
from dataclasses import asdict

import pytest
from sqlalchemy import event

from contract.report import checked_report
from engine.job import JobRequest
from engine.reportfile import failed_report
from storage import runstore
from storage.config import PROJECT_ROOT
from storage.db import session_factory
from storage.models import Run
from tests.support import SEED, form_token

SAMPLE_REPORTS = sorted(glob.glob(os.path.join(PROJECT_ROOT, "tests", "fixtures", "reports", "*.json")))


def test_home_offers_the_gallery_in_order(client):
    html = client.get("/").get_data(as_text=True)
    names = re.findall(r'data-example="([a-z0-9_]+)"', html)
    assert names == [
        "seed",
        "graph_break",
        "inplace_views",
        "mlp_train",
        "attention",
        "conv_bn",
        "recompile",
        "custom_backend",
        "resnet18",
        "hf_bert",
        "tiny_gpt",
    ]
    assert "Inductor fuses into one kernel" in html  # titles come from each file's docstring
    assert 'src="/static/vendor/editor.bundle.js"' in html
    assert "<script>" not in html  # no inline script: a later CSP forbids it


def test_an_example_prefills_the_form_and_is_served_raw(client):
    html = client.get("/?example=graph_break").get_data(as_text=True)
    assert "print(&#34;halfway&#34;)" in html and 'value="graph_break.py"' in html
    raw = client.get("/examples/graph_break.py")
    assert raw.status_code == 200 and raw.get_data(as_text=True).startswith('"""Two graph breaks')
    assert client.get("/examples/nope.py").status_code == 404
    assert client.get("/?example=../etc").status_code == 404


def test_validation_errors_appear_next_to_their_field_and_nothing_is_queued(client, db, broker_messages):
    response = client.post("/", data={**form_token(client), "code": "", "device": "cuda", "configs": ["bogus"]})
    assert response.status_code == 422
    html = response.get_data(as_text=True)
    assert 'id="error-code"' in html and 'id="error-device"' in html
    assert db.query(Run).count() == 0 and broker_messages() == 0


def test_an_uploaded_file_becomes_the_runs_code(client, db):
    response = client.post(
        "/",
        data={
            **form_token(client),
            "code": "",
            "configs": ["aot_eager"],
            "upload": (io.BytesIO(SEED.encode()), "my_model.py"),
        },
        content_type="multipart/form-data",
    )
    assert response.status_code == 303
    slug = response.headers["Location"].rsplit("/", 1)[-1]
    run = runstore.get_run(db, slug)
    assert (run.code, run.filename, run.configs) == (SEED, "my_model.py", ["eager", "aot_eager"])

    bad = client.post(
        "/",
        data={**form_token(client), "code": "", "upload": (io.BytesIO(b"x"), "notes.txt")},
        content_type="multipart/form-data",
    )
    assert bad.status_code == 422 and 'id="error-upload"' in bad.get_data(as_text=True)


def test_a_form_with_every_box_unchecked_runs_eager_only(client, db):
    html = client.get("/").get_data(as_text=True)
    assert '<input type="hidden" name="configs" value="eager">' in html
    location = client.post("/", data={**form_token(client), "code": SEED, "configs": ["eager"]}).headers[
        "Location"
    ]  # that field only
    assert client.get(location.replace("/r/", "/api/runs/")).get_json()["configs"] == ["eager"]


def test_a_queued_run_shows_its_queue_position_and_pending_stages(client):
    location = client.post("/", data={**form_token(client), "code": SEED, "configs": ["aot_eager"]}).headers["Location"]
    html = client.get(location).get_data(as_text=True)
    assert 'id="queue-position">1<' in html
    # The steps in the order the job runs them: the recorded compile, its report, one benchmark per config.
    steps = re.findall(r'<li id="stage-([a-z_-]+)" data-stage="[a-z]+" data-state="([a-z]+)"', html)
    assert steps == [
        ("load", "pending"),
        ("eager", "pending"),
        ("dynamo", "pending"),
        ("aot", "pending"),
        ("report", "pending"),
        ("benchmark-eager", "pending"),
        ("benchmark-aot_eager", "pending"),
        ("benchmark-rounds", "pending"),
    ]
    assert 'src="/static/js/run.js"' in html
    assert re.search(r'<a id="tab-dynamo" class="waiting" aria-disabled="true"', html)  # no link before its stage


def _store(client, db, report: dict) -> Run:
    code = report.get("source", {}).get("code") or SEED
    filename = report.get("source", {}).get("filename") or "model.py"
    slug = client.post("/api/runs", json={"code": code, "filename": filename}).get_json()["id"]
    run = runstore.get_run(db, slug)
    runstore.store_report(db, run.id, report)
    return run


def test_sample_reports_exist():
    assert {"seed.json", "graph_break.json", "mlp_train.json"} <= {os.path.basename(p) for p in SAMPLE_REPORTS}


@pytest.mark.parametrize("path", SAMPLE_REPORTS, ids=os.path.basename)
def test_every_tab_of_a_sample_report_renders_its_artifacts(client, db, path):
    with open(path) as f:
        report = json.load(f)
    run = _store(client, db, report)
    pages = {
        tab: client.get(f"/r/{run.slug}" + ("" if tab == "overview" else f"/{tab}"))
        for tab in ("overview", "dynamo", "aot", "inductor", "runtime")
    }
    assert all(page.status_code == 200 for page in pages.values())
    html = {tab: page.get_data(as_text=True) for tab, page in pages.items()}
    assert all('id="L-1"' in page for page in html.values())  # the user's source, line-anchored, on every tab
    for graph in report["dynamo"]["graphs"]:
        first_line = graph["code"].strip().splitlines()[0]
        assert re.search(r"def\W", first_line) is None or "highlight" in html["dynamo"]
    for kernel in report["inductor"]["kernels"]:
        assert kernel["name"] in html["inductor"]
    for benchmark in report["runtime"]["benchmarks"]:
        assert benchmark["config"] in html["runtime"]
    download = client.get(f"/r/{run.slug}/report.json")
    assert download.headers["Content-Disposition"].startswith("attachment")
    assert json.loads(download.data) == checked_report(report)  # as stored: validated, upgraded to the current version


def test_graph_breaks_link_to_the_users_lines(client, db):
    with open(os.path.join(PROJECT_ROOT, "tests", "fixtures", "reports", "graph_break.json")) as f:
        report = json.load(f)
    run = _store(client, db, report)
    html = client.get(f"/r/{run.slug}/dynamo").get_data(as_text=True)
    breaks = report["dynamo"]["graph_breaks"]
    assert len(breaks) == 2
    for graph_break in breaks:
        assert f'href="#L-{graph_break["line"]}"' in html


def test_a_tab_reads_only_its_own_sections(client, db, settings):
    with open(os.path.join(PROJECT_ROOT, "tests", "fixtures", "reports", "seed.json")) as f:
        report = json.load(f)
    report["inductor"]["output_code"][0]["code"] = "HUGE_OUTPUT_CODE\n" * 20_000
    run = _store(client, db, report)
    assert runstore.has_report(db, run)
    engine = session_factory(settings.database_url).kw["bind"]
    fetched = []

    def record(_conn, _cursor, statement, parameters, _context, _many):
        if "report_sections" in statement:
            fetched.append(str(parameters))

    event.listen(engine, "before_cursor_execute", record)
    try:
        html = client.get(f"/r/{run.slug}/dynamo").get_data(as_text=True)
    finally:
        event.remove(engine, "before_cursor_execute", record)
    assert "HUGE_OUTPUT_CODE" not in html
    assert any("'dynamo'" in params for params in fetched)
    assert not any("inductor" in params and "dynamo" not in params for params in fetched)


def test_a_failed_run_shows_the_error_at_the_users_line(client, db):
    code = "import torch\n\ndef f(x):\n    return x.nope()\n\n\nmodel = f\nexample_inputs = (torch.ones(2),)\n"
    slug = client.post("/api/runs", json={"code": code}).get_json()["id"]
    run = runstore.get_run(db, slug)
    request = {**asdict(JobRequest(code=code)), "configs": ["eager"]}
    runstore.store_report(
        db,
        run.id,
        failed_report(
            request,
            "eager",
            "user_exception",
            "'Tensor' object has no attribute 'nope'",
            file="model.py",
            line=4,
            traceback_text="AttributeError: 'Tensor' object has no attribute 'nope'",
        ),
    )
    html = client.get(f"/r/{slug}").get_data(as_text=True)
    assert 'id="error-line"' in html and 'href="/r/' + slug + '#L-4"' in html and "return x.nope()" in html
    assert client.get(f"/api/runs/{slug}").get_json()["error"]["line"] == 4


def test_the_runtime_tab_draws_the_jobs_timeline_and_says_when_a_report_has_none(client, db):
    with open(os.path.join(PROJECT_ROOT, "tests", "fixtures", "reports", "seed.json")) as f:
        report = json.load(f)
    without = client.get(f"/r/{_store(client, db, dict(report)).slug}/runtime").get_data(as_text=True)
    assert 'id="runtime-timeline"' in without and "has no timeline" in without
    report["timeline"] = {
        "origin": "request",
        "origin_unix_s": 100.0,
        "wall_s": 4.0,
        "untracked_s": 1.0,
        "phases": [
            {"phase": "queue_wait", "side": "worker", "start_s": 0.0, "end_s": 1.0, "depth": 0, "config": None},
            {"phase": "untracked", "side": "parent", "start_s": 1.0, "end_s": 2.0, "depth": 0, "config": None},
            {"phase": "import_torch", "side": "child", "start_s": 2.0, "end_s": 4.0, "depth": 0, "config": None},
        ],
    }
    html = client.get(f"/r/{_store(client, db, report).slug}/runtime").get_data(as_text=True)
    assert "<strong>4 s</strong> from\n    the request" in html and "(25%)" in html
    figure = json.loads(
        re.search(r'aria-label="Job timeline by phase" data-chart=\'([^\']+)\'', html)
        .group(1)
        .replace("&#34;", '"')
        .replace("&#39;", "'")
        .replace("&amp;", "&")
    )
    bars = {trace["name"]: dict(zip(trace["y"], zip(trace["base"], trace["x"]))) for trace in figure["data"]}
    assert bars["child"] == {"import_torch #2": (2.0, 2.0)} and bars["worker"] == {"queue_wait #0": (0.0, 1.0)}
