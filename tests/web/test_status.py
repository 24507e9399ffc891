"""The status page and API: online workers with their devices, queue lengths; the health check."""

from datetime import timedelta

from storage import runstore
from storage.config import Settings
from storage.models import RUNNING, WorkerHeartbeat, utcnow
from storage.runstore import Submission
from tests.support import SEED
from webapp import create_app

H200_WORKER = {
    "cpu": "Intel(R) Xeon(R) Platinum 8480C",
    "cpus": 16,
    "gpus": ["NVIDIA H200"],
    "torch": "2.13.0+cu130",
    "triton": "3.7.0",
    "python": "3.11.7",
}


def _submit(db, device: str):
    return runstore.create_run(
        db, Submission(code=SEED, filename="seed.py", device=device, train=None, configs=["eager"])
    )


def test_status_lists_only_live_workers_with_their_device(client, db, settings):
    runstore.beat(db, "gpu0-ab12cd@node1", ["gpu"], pid=10, device=H200_WORKER)
    runstore.beat(db, "cpu-dead00@node2", ["cpu"], pid=11, device={**H200_WORKER, "gpus": []})
    db.get(WorkerHeartbeat, "cpu-dead00@node2").last_seen = utcnow() - timedelta(
        seconds=settings.worker_stale_after_s + 1
    )
    db.commit()

    status = client.get("/api/status").get_json()
    assert [w["name"] for w in status["workers"]] == ["gpu0-ab12cd@node1"]
    assert status["workers"][0]["device"] == H200_WORKER
    assert status["workers"][0]["queues"] == ["gpu"]
    assert status["queues"]["gpu"]["workers"] == 1 and status["queues"]["cpu"]["workers"] == 0

    page = client.get("/status").get_data(as_text=True)
    assert "gpu0-ab12cd@node1" in page and "cpu-dead00@node2" not in page
    for shown in ("NVIDIA H200", "Intel(R) Xeon(R) Platinum 8480C", "2.13.0+cu130", "3.7.0"):
        assert shown in page


def test_a_heartbeat_without_device_keeps_the_one_it_had(db, settings):
    runstore.beat(db, "w@host", ["cpu"], pid=5, device=H200_WORKER)
    runstore.beat(db, "w@host", ["cpu"], pid=5)
    assert db.get(WorkerHeartbeat, "w@host").device == H200_WORKER


def test_queue_lengths_count_waiting_and_running_runs_per_queue(client, db):
    for device in ("cpu", "cpu", "cpu", "cuda"):
        _submit(db, device)
    running = _submit(db, "cpu")
    runstore.claim_run(db, running.id, "w@host", pid=1)
    finished = _submit(db, "cuda")
    runstore.fail_run(db, finished, "load", "internal", "gone")

    queues = client.get("/api/status").get_json()["queues"]
    assert queues == {
        "cpu": {"queued": 3, "running": 1, "workers": 0},
        "gpu": {"queued": 1, "running": 0, "workers": 0},
    }
    assert running.status == RUNNING
    page = client.get("/status").get_data(as_text=True)
    assert '<tr data-queue="cpu"><td>cpu</td><td>3</td><td>1</td>' in page
    assert "No worker is online" in page


def test_health_is_ok_with_a_database_and_503_without(client, tmp_path):
    assert client.get("/api/health").get_json() == {"status": "ok"}
    # Nothing listens on port 1: the connection is refused at once.
    down = Settings.from_env(
        instance_path=str(tmp_path / "down"),
        database_url="postgresql+psycopg://postgres@127.0.0.1:1/none",
        broker_url=f"sqla+sqlite:///{tmp_path}/broker.sqlite",
    )
    response = create_app(down).test_client().get("/api/health")
    assert response.status_code == 503
    assert response.get_json() == {"status": "unavailable", "error": "database: OperationalError"}
