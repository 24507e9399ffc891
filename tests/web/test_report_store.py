"""Storage and the report contract: a report is validated where it is stored, and a report stored under an older
schema_version is upgraded on its first read; an unknown version is refused with a clear message."""

import json
import os

import pytest
from sqlalchemy import event, select

from contract.report import SCHEMA_VERSION, ReportVersionError, checked_report
from storage import runstore
from storage.config import PROJECT_ROOT
from storage.db import session_factory
from storage.models import SUCCEEDED, ReportSection, Run
from tests.support import make_settings, scratch_postgres_and_redis
from webapp import create_app

REDIS_DB = 9  # a db index of its own, flushed: no other user of this server is touched


def _fixture(name: str) -> dict:
    with open(os.path.join(PROJECT_ROOT, "tests", "fixtures", "reports", f"{name}.json")) as f:
        return json.load(f)


def _new_run(db, report: dict):
    return runstore.create_run(
        db,
        runstore.Submission(
            code=report["source"]["code"],
            filename=report["source"]["filename"],
            device="cpu",
            train=None,
            configs=["eager"],
        ),
    )


def _stored_as_before(db, report: dict):
    """A finished run whose report was stored by an older pt2scope: its sections as they were, not validated."""
    run = _new_run(db, report)
    runstore._write_report(db, run.id, report)
    run.status = "succeeded"  # a report is served once its run has finished (a running one may be partial)
    db.commit()
    return run


def test_an_invalid_report_is_not_stored_and_fails_the_run_naming_the_field(client, db):
    report = _fixture("seed")
    report["runtime"]["benchmarks"][0]["median_ms"] = "fast"
    run = _new_run(db, report)
    runstore.store_report(db, run.id, report)
    error = client.get(f"/api/runs/{run.slug}").get_json()["error"]
    assert error["kind"] == "invalid_report" and error["stage"] == "report"
    assert error["message"] == (
        "report from the job is invalid: runtime.benchmarks[0].median_ms: Input should be a valid number"
    )
    assert not runstore.has_report(db, run)


def test_a_v1_report_stored_before_is_upgraded_on_its_first_read(client, db):
    report = _fixture("graph_break")
    assert report["schema_version"] == 1 and "isolation" not in report
    run = _stored_as_before(db, report)
    sections = runstore.load_sections(db, run, ["schema_version", "isolation", "runtime"])
    assert sections["schema_version"] == SCHEMA_VERSION
    assert sections["isolation"]["limits"]["time_limit_s"] is None  # v1 had no such section: v2's defaults
    assert all(b["grad_max_abs_error"] is None for b in sections["runtime"]["benchmarks"])
    # Upgraded in place, once: the rows now hold the current version, and every reader sees it.
    stored = db.scalar(
        select(ReportSection.body).where(ReportSection.run_id == run.id, ReportSection.name == "schema_version")
    )
    assert json.loads(stored) == SCHEMA_VERSION
    assert json.loads(client.get(f"/api/runs/{run.slug}/report").data)["schema_version"] == SCHEMA_VERSION
    assert client.get(f"/r/{run.slug}/graphs/dynamo-0.json").status_code == 200


def test_a_report_of_an_unknown_version_is_refused_with_a_clear_message(client, db):
    report = {**_fixture("seed"), "schema_version": 7}
    run = _stored_as_before(db, report)
    with pytest.raises(ReportVersionError, match="written by a newer pt2scope"):
        runstore.load_sections(db, run, ["dynamo"])
    db.rollback()
    response = client.get(f"/api/runs/{run.slug}/report")
    assert response.status_code == 500
    assert response.get_data(as_text=True) == (
        "this run's stored report cannot be read: report schema_version 7 is not one this pt2scope reads (1, 2, 3, 4): it "
        "was written by a newer pt2scope; upgrade this one to read it\n"
    )


@pytest.fixture
def production_settings(tmp_path):
    with scratch_postgres_and_redis(REDIS_DB) as (database_url, broker_url):
        yield make_settings(tmp_path, database_url=database_url, broker_url=broker_url)


def _downloads_match_the_stored_report(settings) -> None:
    """The download and the API's report are the stored sections' bytes sent piece by piece: the same JSON as the
    report stored, byte for byte through non-ASCII text, backslashes and quotes, with a Content-Length that
    matches (the pieces are summed, never joined)."""
    report = checked_report(_fixture("seed"))
    report["source"]["code"] += '\n# é ☃ 𝔼 "quoted" \\n \\u00e9 \\\\ C:\\path\n'
    report["dynamo"]["graphs"][0]["nodes"][1]["name"] = 'sin_\\"é☃'
    client = create_app(settings).test_client()
    with session_factory(settings.database_url)() as db:
        run = _new_run(db, report)
        runstore.store_report(db, run.id, report)
        slug = run.slug
    for url in (f"/api/runs/{slug}/report", f"/r/{slug}/report.json"):
        response = client.get(url)
        assert response.status_code == 200, url
        assert int(response.headers["Content-Length"]) == len(response.data), url
        assert json.loads(response.data) == report, url


def test_the_report_download_is_the_stored_report_on_sqlite(settings):
    _downloads_match_the_stored_report(settings)


def test_the_report_download_is_the_stored_report_on_postgresql(production_settings):
    _downloads_match_the_stored_report(production_settings)


def test_an_early_report_is_stored_in_one_commit_a_reader_sees_as_still_measuring(settings, db):
    """The report handed over before the warm compile: every commit a reader can see leaves the run either not yet
    finished or finished with no engine seconds (the job runs on). Before, "succeeded" with the report's seconds
    was committed first: a page polling then read a finished run with nothing still measuring and stopped (seen
    once in a suite under load: still_measuring [] where the warm compile was pending)."""
    run = _new_run(db, _fixture("seed"))
    seen = []
    readers = session_factory(settings.database_url)

    @event.listens_for(db, "after_commit")
    def read_as_a_page_does(_session):
        with readers() as reader:
            stored = reader.get_one(Run, run.id)
            seen.append((stored.status, stored.engine_seconds))

    assert runstore.store_early_report(db, run.id, checked_report(_fixture("seed")))
    assert seen and seen[-1] == (SUCCEEDED, None), seen
    assert all(status != SUCCEEDED or seconds is None for status, seconds in seen), seen
