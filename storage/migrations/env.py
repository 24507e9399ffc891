"""Alembic environment: the URL comes from storage.db.migrate(), or from the environment (Settings) on the CLI."""

from alembic import context

from storage.config import Settings
from storage.db import make_engine
from storage.models import Base

url = context.config.attributes.get("database_url") or Settings.from_env().database_url
engine = make_engine(url)
with engine.connect() as connection:
    context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=url.startswith("sqlite"))
    with context.begin_transaction():
        context.run_migrations()
engine.dispose()
