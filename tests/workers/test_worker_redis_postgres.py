"""The production configuration: a job through a real worker on Redis, with PostgreSQL for the data, both the
servers running on this machine (.ci/run starts them if needed). Each test gets its own database and Redis db."""

import psycopg
import pytest

from tests.support import FAST_CONFIGS, SEED, Worker, make_settings, scratch_postgres_and_redis, wait_for_run
from webapp import create_app

REDIS_DB = 13  # a db index of its own, flushed: no other user of this server is touched


@pytest.fixture
def production_settings(tmp_path):
    with scratch_postgres_and_redis(REDIS_DB) as (database_url, broker_url):
        yield make_settings(tmp_path, database_url=database_url, broker_url=broker_url)


def test_job_through_redis_and_postgresql(production_settings):
    client = create_app(production_settings).test_client()
    with Worker(production_settings) as worker:
        run_id = client.post("/api/runs", json={"code": SEED, "configs": FAST_CONFIGS}).get_json()["id"]
        status = wait_for_run(client, run_id, worker=worker)
    assert status["status"] == "succeeded", status
    assert all(s["state"] == "finished" for s in status["stages"] if s["stage"] in ("load", "dynamo", "aot"))
    report = client.get(f"/api/runs/{run_id}/report").get_json()
    assert report["status"] == "ok" and report["dynamo"]["graphs"]
    with psycopg.connect(production_settings.database_url.replace("+psycopg", "")) as connection:
        stored = connection.execute(
            "SELECT count(*) FROM report_sections JOIN runs ON runs.id = run_id WHERE runs.slug = %s", (run_id,)
        ).fetchone()[0]
    assert stored == len(report)
