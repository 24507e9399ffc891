import pytest

from tests.support import Worker, make_settings
from webapp import create_app


@pytest.fixture(scope="module")
def sqlite_site(tmp_path_factory):
    """The embedded default: SQLite data, the SQLite broker, one real worker process."""
    settings = make_settings(tmp_path_factory.mktemp("embedded"))
    with Worker(settings) as worker:
        yield create_app(settings).test_client(), worker
