"""The JSON API without a worker: validation, queueing into the real SQLite broker, status and report reads."""

import json
import os

from contract.report import checked_report
from storage import runstore
from storage.config import PROJECT_ROOT
from storage.models import Run
from tests.support import FAST_CONFIGS, SEED
from webapp import create_app


def test_post_queues_a_run_and_answers_202(client, broker_messages):
    response = client.post("/api/runs", json={"code": SEED, "device": "cpu", "configs": ["aot_eager"]})
    assert response.status_code == 202
    body = response.get_json()
    assert body["url"].endswith(f"/r/{body['id']}")
    assert len(body["id"]) >= 20  # token_urlsafe(16): unguessable, not a counter
    assert broker_messages() == 1

    status = client.get(f"/api/runs/{body['id']}").get_json()
    assert status["status"] == "queued"
    assert status["queue_position"] == 1
    assert status["configs"] == ["eager", "aot_eager"]  # the engine's ladder order, plain eager always first
    assert [s["stage"] for s in status["stages"]][:3] == ["load", "eager", "dynamo"]
    # Every stage the job will run is pending; those its configs never run (no Inductor config) are skipped.
    assert {s["stage"]: s["state"] for s in status["stages"]} == {
        "load": "pending",
        "eager": "pending",
        "dynamo": "pending",
        "aot": "pending",
        "inductor": "skipped",
        "report": "pending",
        "benchmark": "pending",
        "profile": "skipped",
        "bisect": "skipped",  # only where a rung mismatches or fails: never in the plan
        "warm_compile": "skipped",
    }
    assert status["error"] is None and status["report_url"] is None

    second = client.post("/api/runs", json={"code": SEED, "configs": FAST_CONFIGS}).get_json()
    assert client.get(f"/api/runs/{second['id']}").get_json()["queue_position"] == 2


def test_invalid_requests_name_their_fields_and_queue_nothing(client, db, broker_messages):
    cases = [
        ({"code": "   "}, "code"),
        ({"code": SEED, "configs": ["inductor_turbo"]}, "configs"),
        ({"code": SEED, "device": "tpu"}, "device"),
        ({"code": SEED, "device": "cuda"}, "device"),  # no GPU worker online
        ({"code": SEED, "train": "sometimes"}, "train"),
        ({"code": SEED, "filename": "model.txt"}, "filename"),
        ({"code": "x = 1\n" * 50_000}, "code"),  # over the size limit
    ]
    for payload, field in cases:
        response = client.post("/api/runs", json=payload)
        assert response.status_code == 400, payload
        assert field in response.get_json()["errors"], (payload, response.get_json())
    assert client.post("/api/runs", data="not json", content_type="text/plain").status_code == 400
    assert db.query(Run).count() == 0
    assert broker_messages() == 0


def test_gpu_is_accepted_only_while_a_gpu_worker_beats(client, db, settings):
    assert client.post("/api/runs", json={"code": SEED, "device": "cuda"}).status_code == 400
    runstore.beat(db, "gpu-worker@host", ["cpu", "gpu"], pid=1)
    response = client.post("/api/runs", json={"code": SEED, "device": "cuda"})
    assert response.status_code == 202
    run = runstore.get_run(db, response.get_json()["id"])
    assert (run.queue, run.configs) == (
        "gpu",
        [
            "eager",
            "backend_eager",
            "aot_eager",
            "inductor_default",
            "inductor_reduce_overhead",
            "inductor_max_autotune",
        ],
    )


def test_unknown_run_is_404_and_report_waits_for_the_run(client):
    assert client.get("/api/runs/nope").status_code == 404
    run_id = client.post("/api/runs", json={"code": SEED}).get_json()["id"]
    response = client.get(f"/api/runs/{run_id}/report")
    assert response.status_code == 409
    assert response.get_json()["status"] == "queued"


def test_report_api_returns_the_stored_report_unchanged(client, db, settings):
    run_id = client.post("/api/runs", json={"code": SEED}).get_json()["id"]
    run = runstore.get_run(db, run_id)
    with open(os.path.join(PROJECT_ROOT, "tests", "fixtures", "reports", "seed.json")) as f:
        report = checked_report(json.load(f))  # stored as validated: the current version, every key present
    report["runtime"]["job_seconds"] = 4.2
    runstore.store_report(db, run.id, report)
    response = client.get(f"/api/runs/{run_id}/report")
    assert response.status_code == 200
    assert json.loads(response.data) == report
    status = client.get(f"/api/runs/{run_id}").get_json()
    assert status["status"] == "succeeded" and status["engine_seconds"] == 4.2
    assert status["summary"]["dynamo_graphs"] == 1
    restarted = create_app(settings).test_client()  # a new server process on the same database
    assert json.loads(restarted.get(f"/api/runs/{run_id}/report").data) == report
