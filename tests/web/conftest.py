import pytest
from sqlalchemy import create_engine, text

from storage.db import session_factory
from tests.support import make_settings
from webapp import create_app


@pytest.fixture
def settings(tmp_path):
    return make_settings(tmp_path)


@pytest.fixture
def app(settings):
    return create_app(settings)


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def db(settings):
    with session_factory(settings.database_url)() as session:
        yield session


@pytest.fixture
def broker_messages(settings):
    """Messages waiting in the real SQLite broker (no worker consumes them in these tests)."""

    def count() -> int:
        engine = create_engine(settings.broker_url.removeprefix("sqla+"))
        with engine.connect() as connection:
            has_table = engine.dialect.has_table(connection, "kombu_message")
            result = connection.execute(text("SELECT COUNT(*) FROM kombu_message")).scalar() if has_table else 0
        engine.dispose()
        return result

    return count
