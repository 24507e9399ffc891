"""Web hardening without a worker: CSRF, headers, rate limits, size limits, uploads, traversal, listing."""

import io
import re

import pytest

from storage.models import Run
from tests.support import SEED, form_token, make_settings
from webapp import create_app
from webapp.security import CONTENT_SECURITY_POLICY


def test_a_form_post_without_the_sites_token_is_refused_and_queues_nothing(client, db, broker_messages):
    response = client.post("/", data={"code": SEED, "configs": ["eager"]})
    assert response.status_code == 400
    assert "did not come from this site" in response.get_data(as_text=True)
    forged = client.post("/", data={"code": SEED, "configs": ["eager"], "csrf_token": "guessed"})
    assert forged.status_code == 400
    assert db.query(Run).count() == 0 and broker_messages() == 0
    assert client.post("/", data={**form_token(client), "code": SEED, "configs": ["eager"]}).status_code == 303


def test_every_response_carries_the_security_headers_and_no_inline_script(client):
    run_id = client.post("/api/runs", json={"code": SEED}).get_json()["id"]
    for path in ("/", f"/r/{run_id}", f"/api/runs/{run_id}", "/no-such-page"):
        headers = client.get(path).headers
        assert headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY, path
        assert headers["X-Content-Type-Options"] == "nosniff" and headers["X-Frame-Options"] == "DENY"
    assert (
        "script-src 'self'" in CONTENT_SECURITY_POLICY
        and "unsafe-inline" not in CONTENT_SECURITY_POLICY.split("script-src")[1].split(";")[0]
    )
    for path in ("/", f"/r/{run_id}"):
        html = client.get(path).get_data(as_text=True)
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), path  # every script is a file
        assert not re.search(r"\son[a-z]+=", html), path  # no inline event handlers


def test_submissions_beyond_the_rate_limit_get_429_with_the_limit_named(tmp_path):
    client = create_app(make_settings(tmp_path, rate_limit_count=3, rate_limit_window_s=600)).test_client()
    for _ in range(3):
        assert client.post("/api/runs", json={"code": SEED}).status_code == 202
    refused = client.post("/api/runs", json={"code": SEED})
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0
    assert "at most 3 submissions per 600 s" in refused.get_json()["errors"]["rate_limit"]
    form = client.post("/", data={**form_token(client), "code": SEED, "configs": ["eager"]})
    assert form.status_code == 429 and "at most 3 submissions" in form.get_data(as_text=True)
    other_client = client.post("/api/runs", json={"code": SEED}, environ_base={"REMOTE_ADDR": "10.1.2.3"})
    assert other_client.status_code == 202  # the limit is per client


def test_oversized_code_uploads_and_requests_are_refused_with_the_limit(client, settings):
    limit_kib = settings.max_code_bytes // 1024
    big = "x = 1\n" * (settings.max_code_bytes // 6 + 10)
    api = client.post("/api/runs", json={"code": big})
    assert api.status_code == 400 and f"larger than {limit_kib} KiB" in api.get_json()["errors"]["code"]
    upload = client.post(
        "/",
        data={**form_token(client), "code": "", "upload": (io.BytesIO(big.encode()), "big.py")},
        content_type="multipart/form-data",
    )
    assert upload.status_code == 422 and f"larger than {limit_kib} KiB" in upload.get_data(as_text=True)
    huge = client.post("/api/runs", json={"code": "x" * (5 * settings.max_code_bytes)})
    assert huge.status_code == 413 and f"at most {limit_kib} KiB" in huge.get_json()["errors"]["body"]
    huge_form = client.post("/", data={**form_token(client), "code": "x" * (5 * settings.max_code_bytes)})
    assert huge_form.status_code == 413 and f"at most {limit_kib} KiB" in huge_form.get_data(as_text=True)


def test_only_python_text_is_accepted_and_nothing_is_unpickled(client, db):
    import pickle

    class Boom:
        def __reduce__(self):
            return (exec, ("open('/tmp/pt2scope-unpickled', 'w').write('x')",))

    payload = pickle.dumps(Boom())
    for filename, expected in (("model.pt", "Upload a Python file (.py)"), ("model.py", "not UTF-8 text")):
        response = client.post(
            "/",
            data={**form_token(client), "code": "", "upload": (io.BytesIO(payload), filename)},
            content_type="multipart/form-data",
        )
        assert response.status_code == 422 and expected in response.get_data(as_text=True)
    nul = client.post("/api/runs", json={"code": "import torch\0\n"})
    assert nul.status_code == 400 and "NUL bytes" in nul.get_json()["errors"]["code"]
    assert db.query(Run).count() == 0
    import os

    assert not os.path.exists("/tmp/pt2scope-unpickled")


@pytest.mark.parametrize(
    "path",
    [
        "/examples/..%2f..%2fwebapp%2fconfig.py",
        "/examples/../storage/config.py",
        "/static/../storage/config.py",
        "/static/..%2fwebapp%2fconfig.py",
        "/static/%2e%2e/storage/config.py",
        "/r/..%2f..%2fetc%2fpasswd",
        "/r/x/..%2f..%2fetc%2fpasswd",
        "/r/x/report.json/../../../etc/passwd",
        "/api/runs/..%2f..%2fetc%2fpasswd",
        "/r/x/graphs/..%2f..%2fetc%2fpasswd.json",
    ],
)
def test_no_url_reaches_a_file_outside_what_it_serves(client, path):
    response = client.get(path)
    assert response.status_code in (404, 308, 400), (path, response.status_code)
    body = response.get_data(as_text=True)
    assert "root:x:0:0" not in body and "class Settings" not in body


def test_runs_are_listed_only_where_the_operator_allows_it(client, tmp_path):
    run_id = client.post("/api/runs", json={"code": SEED}).get_json()["id"]
    closed = client.get("/api/runs")
    assert closed.status_code == 404 and "Listing runs is turned off" in closed.get_json()["error"]
    assert run_id not in client.get("/").get_data(as_text=True)
    listing = create_app(make_settings(tmp_path / "open", list_runs=True)).test_client()
    listed_id = listing.post("/api/runs", json={"code": SEED}).get_json()["id"]
    assert [r["id"] for r in listing.get("/api/runs").get_json()["runs"]] == [listed_id]
