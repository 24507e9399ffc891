"""Uploading a TORCH_TRACE log without a worker: POST /api/traces and the /import form queue an import (the log is
stored, never parsed, by the web process), with a size limit that says so; the diff API's answers."""

import io
import json
import os

from storage import runstore
from storage.models import IMPORT, TraceUpload
from tests.support import form_token, make_settings
from webapp import create_app

TRACE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "traces-h200-torch2.11", "seed_default.trace.log")


def upload(client, data: bytes, name="trace.log", path="/api/traces", **fields):
    return client.post(path, data={"trace": (io.BytesIO(data), name), **fields}, content_type="multipart/form-data")


def test_api_queues_an_import_and_answers_like_runs(client, db, broker_messages):
    data = open(TRACE, "rb").read()
    response = upload(client, data, "dedicated_log_torch_trace_abc.log")
    assert response.status_code == 202
    body = response.get_json()
    assert body["url"].endswith(f"/r/{body['id']}") and body["status_url"].endswith(f"/api/runs/{body['id']}")
    assert body["status"] == "queued" and broker_messages() == 1
    run = runstore.get_run(db, body["id"])
    assert run.kind == IMPORT and run.filename == "dedicated_log_torch_trace_abc.log" and run.code == ""
    stored = db.get(TraceUpload, run.id)
    assert stored.body == data and stored.size == len(data)
    status = client.get(body["status_url"]).get_json()
    assert status["status"] == "queued" and status["queue_position"] == 1


def test_uploads_past_the_limit_or_without_a_file_are_refused_with_a_reason(tmp_path, broker_messages):
    settings = make_settings(tmp_path, max_trace_mb=1)
    client = create_app(settings).test_client()
    response = upload(client, b"x" * (2 * 1024**2))
    assert response.status_code == 413
    assert "larger than 1 MiB, the upload limit: gzip it" in response.get_json()["errors"]["trace"]
    response = upload(client, b"x" * (1024**2 + 10))  # within the request envelope, over the file limit
    assert response.status_code == 413 and "1 MiB" in response.get_json()["errors"]["trace"]
    response = client.post("/api/traces", data={}, content_type="multipart/form-data")
    assert response.status_code == 400 and "Choose a file" in response.get_json()["errors"]["trace"]
    assert upload(client, b"").status_code == 400
    # The app's own limit (for code) still holds everywhere else.
    assert client.post("/api/runs", data=b"x" * (2 * 1024**2), content_type="application/json").status_code == 413
    assert broker_messages() == 0


def test_the_import_form_needs_its_csrf_token_and_redirects_to_the_report(client, db):
    data = open(TRACE, "rb").read()
    assert upload(client, data, path="/import").status_code == 400  # no CSRF token: refused
    response = upload(client, data, path="/import", **form_token(client))
    assert response.status_code == 303
    slug = response.headers["Location"].rsplit("/", 1)[1]
    page = client.get(f"/r/{slug}").get_data(as_text=True)
    assert "imported TORCH_TRACE log" in page and 'id="stages"' not in page  # no engine stages to show
    assert client.get("/import").status_code == 200


def test_diff_api_and_compare_box(client, db):
    with open(os.path.join(os.path.dirname(__file__), "..", "fixtures", "reports", "seed.json")) as f:
        report = json.load(f)
    slugs = []
    for _ in range(2):
        run = runstore.create_run(
            db,
            runstore.Submission(
                code=report["source"]["code"],
                filename="seed.py",
                device="cpu",
                train=None,
                configs=report["request"]["configs"],
            ),
        )
        runstore.store_report(db, run.id, report)
        slugs.append(run.slug)
    body = client.get(f"/api/diff/{slugs[0]}/{slugs[1]}").get_json()
    assert body["a"]["id"] == slugs[0] and body["b"]["id"] == slugs[1]
    assert all(g["identical"] for g in body["graphs"])
    assert client.get(f"/api/diff/{slugs[0]}/nosuchrun123").status_code == 404
    page = client.get(f"/diff/{slugs[0]}/{slugs[1]}")
    assert page.status_code == 200 and "Compare two runs" in page.get_data(as_text=True)
    response = client.get(f"/r/{slugs[0]}/compare", query_string={"with": f"https://x.example/r/{slugs[1]}/aot#g"})
    assert response.status_code == 303 and response.headers["Location"].endswith(f"/diff/{slugs[0]}/{slugs[1]}")
    assert client.get(f"/r/{slugs[0]}/compare", query_string={"with": "??"}).status_code == 400
