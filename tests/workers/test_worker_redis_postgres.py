"""The production configuration: a job through a real worker on Redis, with PostgreSQL for the data, both the
servers running on this machine (.ci/run starts them if needed). Each test gets its own database and Redis db."""
import uuid

import psycopg
import pytest
import redis

from tests.support import FAST_CONFIGS, SEED, Worker, make_settings, wait_for_run
from webapp import create_app
from webapp.db import session_factory

POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"
REDIS_URL = "redis://127.0.0.1:6379/13"  # a db index of its own, flushed: no other user of this server is touched


@pytest.fixture
def production_settings(tmp_path):
    database = f"pt2scope_test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(POSTGRES, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{database}"')
    redis.Redis.from_url(REDIS_URL).flushdb()
    url = f"postgresql+psycopg://postgres@127.0.0.1:5432/{database}"
    try:
        yield make_settings(tmp_path, database_url=url, broker_url=REDIS_URL)
    finally:
        session_factory(url).kw["bind"].dispose()
        with psycopg.connect(POSTGRES, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE "{database}" WITH (FORCE)')
        redis.Redis.from_url(REDIS_URL).flushdb()


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
        stored = connection.execute("SELECT count(*) FROM report_sections JOIN runs ON runs.id = run_id "
                                    "WHERE runs.slug = %s", (run_id,)).fetchone()[0]
    assert stored == len(report)
