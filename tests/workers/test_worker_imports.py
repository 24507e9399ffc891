"""A real worker importing TORCH_TRACE uploads (the embedded default: SQLite, its broker): a log of two ranks
becomes two runs, a file that is no log a failed run that says why; the upload is gone either way."""

import io
import os
import zipfile

from storage import runstore
from storage.db import session_factory
from storage.models import TraceUpload
from tests.support import wait_for_run

TRACES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "traces-h200-torch2.11")


def post(client, data: bytes, name: str):
    return client.post(
        "/api/traces", data={"trace": (io.BytesIO(data), name)}, content_type="multipart/form-data"
    ).get_json()


def test_an_archive_of_ranks_becomes_one_run_per_rank(sqlite_site):
    client, worker = sqlite_site
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        for rank in (0, 1):
            z.write(os.path.join(TRACES, "recompile.trace.log"), f"t/dedicated_log_torch_trace_rank_{rank}_x.log")
    body = post(client, archive.getvalue(), "trace.zip")
    status = wait_for_run(client, body["id"], timeout=180, worker=worker)
    assert status["status"] == "succeeded", status["error"]
    assert status["summary"]["recompiles"] == 2 and status["summary"]["dynamo_graphs"] == 3
    report = client.get(body["report_url"]).get_json()
    ranks = report["trace_import"]["ranks"]
    assert [r["rank"] for r in ranks] == [0, 1] and ranks[0]["id"] == body["id"]
    assert report["trace_import"]["differing_ranks"] == []
    other = client.get(f"/api/runs/{ranks[1]['id']}").get_json()
    assert other["status"] == "succeeded" and other["summary"]["recompiles"] == 2
    assert report["request"]["time_limit_s"] == worker.settings.job_time_limit_s  # the worker's own limit
    with session_factory(worker.settings.database_url)() as session:
        assert session.query(TraceUpload).count() == 0
        assert runstore.get_run(session, ranks[1]["id"]).parent_id == runstore.get_run(session, body["id"]).id


def test_a_file_that_is_no_log_fails_with_the_reason(sqlite_site):
    client, worker = sqlite_site
    body = post(client, b"just some notes\nnothing structured\n", "notes.log")
    status = wait_for_run(client, body["id"], timeout=120, worker=worker)
    assert status["status"] == "failed" and status["error"]["kind"] == "bad_log"
    assert "holds no structured-trace record in 2 line(s)" in status["error"]["message"]
