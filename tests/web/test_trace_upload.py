"""Uploading a TORCH_TRACE log without a worker: POST /api/traces and the /import form queue an import (the log is
stored, never parsed, by the web process), with a size limit that says so; the diff API's answers."""

import http.client
import io
import json
import os
import socket
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from storage import runstore
from storage.db import session_factory
from storage.models import IMPORT, TraceUpload
from tests.support import LoggedProcess, form_token, make_settings, wait_until
from webapp import create_app
from workers.launch import web_command

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
    assert stored.size == len(data)
    written = os.path.join(os.path.dirname(db.get_bind().url.database), "written.log")
    runstore.write_upload(db, run.id, written)
    assert open(written, "rb").read() == data
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


class Web(LoggedProcess):
    """gunicorn as deployed (workers/launch.py), one process with threads, serving these settings."""

    def __init__(self, settings):
        self.settings = settings
        self.log_path = os.path.join(settings.instance_path, "web.log")
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]

    def __enter__(self):
        self.start(web_command("127.0.0.1", self.port, workers=1, threads=8), {**os.environ, **self.settings.to_env()})
        wait_until(self._answers, timeout=60, what="the web server")
        return self

    def _answers(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"the web server exited:\n{self.output()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/import", timeout=5) as response:
                return response.status == 200
        except OSError:
            return False

    def app_process_memory(self) -> tuple[int, int]:
        """(peak, current) resident MiB of the process serving requests (gunicorn's one worker)."""
        (pid,) = [int(p) for p in open(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read().split()]
        status = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status"))
        return int(status["VmHWM"].split()[0]) // 1024, int(status["VmRSS"].split()[0]) // 1024


def _post_file(port: int, path: str, boundary: str) -> int:
    """POST /api/traces with the multipart body in ``path``, streamed from the file as a browser sends it."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    with open(path, "rb") as body:
        connection.request(
            "POST",
            "/api/traces",
            body=body,
            headers={
                "Content-Type": f"multipart/form-data; boundary={boundary}",
                "Content-Length": str(os.path.getsize(path)),
            },
        )
        status = connection.getresponse().status
    connection.close()
    return status


def test_concurrent_large_uploads_are_never_held_whole_by_the_web_process(tmp_path):
    """Four 64 MiB uploads at once (four of 250 MB once took a web process to 2.2 GiB and left 1.2 GiB resident): each
    is stored in chunks as it is read, so the serving process grows by a few chunks, not by the uploads."""
    settings = make_settings(tmp_path, max_trace_mb=100, rate_limit_count=0)
    size, boundary = 64 * 1024**2, "pt2scopeboundary"
    bodies = []
    for i in range(4):
        path = tmp_path / f"upload{i}.multipart"
        with open(path, "wb") as f:
            f.write(
                f'--{boundary}\r\nContent-Disposition: form-data; name="trace"; filename="big{i}.log"\r\n'
                "Content-Type: application/octet-stream\r\n\r\n".encode()
            )
            block = bytes([65 + i]) * 1024**2
            for _ in range(size // len(block)):
                f.write(block)
            f.write(f"\r\n--{boundary}--\r\n".encode())
        bodies.append(str(path))
    with Web(settings) as web:
        before, _ = web.app_process_memory()
        with ThreadPoolExecutor(4) as pool:
            statuses = list(pool.map(lambda path: _post_file(web.port, path, boundary), bodies))
        peak, resident = web.app_process_memory()
    assert statuses == [202] * 4
    with session_factory(settings.database_url)() as session:
        uploads = session.query(TraceUpload).order_by(TraceUpload.run_id).all()
        assert [u.size for u in uploads] == [size] * 4
        for upload in uploads:  # each upload's chunks in order, none mixed with another's (they arrived at once)
            written = tmp_path / "written.log"
            runstore.write_upload(session, upload.run_id, str(written))
            letter = bytes([65 + int(upload.filename.removeprefix("big").removesuffix(".log"))])
            assert written.read_bytes() == letter * size
    # The uploads are 256 MiB together; chunks of 4 MiB, a few at a time in the four threads.
    assert peak - before < 96, (before, peak, resident)
    assert resident - before < 96, (before, peak, resident)
