from tests.web.conftest import app, broker_messages, client, db, settings  # noqa: F401 - the web tests' fixtures
