"""Alembic environment: the URL comes from webapp.db.migrate(), or from the environment (Settings) on the CLI."""
from alembic import context

from webapp.config import Settings
from webapp.db import make_engine
from webapp.models import Base

url = context.config.attributes.get("database_url") or Settings.from_env().database_url
engine = make_engine(url)
with engine.connect() as connection:
    context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=url.startswith("sqlite"))
    with context.begin_transaction():
        context.run_migrations()
engine.dispose()
