"""The web tier under hostile requests, without a worker: the rate limit holds under parallel submissions (SQLite
and PostgreSQL), bad text is a 400 naming the field, an internal error is an id and never our traceback."""
import json
import logging
import threading

import pytest

from storage import runstore
from tests.support import SEED, make_settings, scratch_postgres_and_redis
from webapp import create_app

REDIS_DB = 10  # a db index of its own, flushed: no other user of this server is touched


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request, tmp_path):
    if request.param == "sqlite":
        yield make_settings(tmp_path, rate_limit_count=30)
        return
    with scratch_postgres_and_redis(REDIS_DB) as (database_url, broker_url):
        yield make_settings(tmp_path, database_url=database_url, broker_url=broker_url, rate_limit_count=30)


def test_the_rate_limit_holds_when_45_submissions_arrive_at_once(settings):
    app = create_app(settings)
    codes, start = [], threading.Barrier(45)

    def submit():
        client = app.test_client()
        start.wait()
        codes.append(client.post("/api/runs", json={"code": SEED, "configs": ["eager"]}).status_code)

    threads = [threading.Thread(target=submit) for _ in range(45)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(codes) == [202] * 30 + [429] * 15  # was 32 of 45 through, against 30


@pytest.mark.parametrize("field, value", [("code", "x = '\ud800'\n"), ("filename", "model\udcff.py")])
def test_a_lone_surrogate_in_code_or_filename_is_a_400_naming_the_field(tmp_path, field, value):
    client = create_app(make_settings(tmp_path)).test_client()
    body = json.dumps({"code": SEED, "configs": ["eager"], field: value})  # \ud800 travels as a JSON escape
    response = client.post("/api/runs", data=body, content_type="application/json")
    assert response.status_code == 400, response.get_data(as_text=True)
    assert "surrogate" in response.get_json()["errors"][field]


def test_an_internal_error_is_answered_with_an_id_and_logged_with_the_traceback(tmp_path, monkeypatch, caplog):
    client = create_app(make_settings(tmp_path)).test_client()
    run_id = client.post("/api/runs", json={"code": SEED}).get_json()["id"]

    def broken(*_args, **_kwargs):
        raise RuntimeError("secret detail at /work/pt2scope/storage/runstore.py")
    monkeypatch.setattr(runstore, "stage_progress", broken)
    with caplog.at_level(logging.ERROR):
        api, page = client.get(f"/api/runs/{run_id}"), client.get(f"/r/{run_id}")
    for response in (api, page):
        text = response.get_data(as_text=True)
        assert response.status_code == 500 and "error id" in text
        assert "secret detail" not in text and "Traceback" not in text and "/work" not in text
    error_id = api.get_json()["error_id"]
    logged = [r for r in caplog.records if error_id in r.getMessage()]
    assert logged and "secret detail" in "".join(logging.Formatter().formatException(r.exc_info) for r in logged)
