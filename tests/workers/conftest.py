import pytest

from tests.support import Worker, make_settings
from webapp import create_app


@pytest.fixture(scope="package")
def sqlite_site(tmp_path_factory):
    """The embedded default: SQLite data, the SQLite broker, one real worker process, shared by every test here that
    needs no worker of its own (a worker's start imports torch in its prestarted child). Stopped when the worker
    tests end: idle, it polls its broker and keeps a prestarted child, CPU that later timing tests count."""
    settings = make_settings(tmp_path_factory.mktemp("embedded"))
    with Worker(settings) as worker:
        yield create_app(settings).test_client(), worker
