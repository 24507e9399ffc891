"""A live pt2scope (werkzeug server thread + a real worker on the SQLite broker) for Playwright in Debian's
Chromium. One site, one worker and one Chromium for the browser tests, closed when they end (package scope): left
running for the rest of the session, the worker's broker polling and the idle browser were "other processes" to
every later test that times a job (tests/engine/test_runtime_truth.py counts them as contention)."""

import glob
import os
import threading
from dataclasses import dataclass

import pytest
from werkzeug.serving import make_server

from storage.config import PROJECT_ROOT, Settings
from storage.db import session_factory
from tests.support import Worker, make_settings, read_sample_report, store_sample_report
from webapp import create_app

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    assert os.path.exists(CHROMIUM), "browser tests need Debian's chromium: apt-get install -y chromium (.ci/run does)"
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        # Without these Chromium keeps calling Google's hosts, which this machine's closed network refuses.
        "args": ["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
    }


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "permissions": ["clipboard-read", "clipboard-write"]}


@dataclass
class Site:
    url: str
    settings: Settings
    worker: Worker


@pytest.fixture(scope="package")
def browser(launch_browser):
    """pytest-playwright's browser, at package scope (its own is the session's)."""
    browser = launch_browser()
    yield browser
    browser.close()


@pytest.fixture(scope="package")
def site(tmp_path_factory):
    settings = make_settings(tmp_path_factory.mktemp("site"))
    server = make_server("127.0.0.1", 0, create_app(settings), threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with Worker(settings) as worker:
            yield Site(f"http://127.0.0.1:{server.server_port}", settings, worker)
    finally:
        server.shutdown()


# Every real sample report (tests/fixtures/reports), the gallery examples and the large model among them.
SAMPLE_REPORTS = tuple(
    sorted(
        os.path.basename(path).split(".")[0]
        for path in glob.glob(os.path.join(PROJECT_ROOT, "tests", "fixtures", "reports", "*.json*"))
    )
)


@pytest.fixture(scope="package")
def sample_runs(site) -> dict[str, str]:
    """The real sample reports stored as finished runs on the site: name -> slug. Stored through runstore as a
    worker would (tests.support.store_sample_report), so no engine run is needed."""
    with session_factory(site.settings.database_url)() as session:
        return {name: store_sample_report(session, read_sample_report(name)).slug for name in SAMPLE_REPORTS}
