"""Database engine, sessions and migrations, used alike by the web app and the workers (no Flask here)."""

from __future__ import annotations

import os

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

MIGRATIONS_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "migrations")


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        _ensure_parent_dir(url)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(url, pool_pre_ping=True)


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    # WAL: the web app reads while a worker writes progress; without it readers and the writer block each other.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _ensure_parent_dir(url: str) -> None:
    path = url.split(":///", 1)[-1]
    if path and path != ":memory:":
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)


_factories: dict[str, sessionmaker[Session]] = {}


def session_factory(url: str) -> sessionmaker[Session]:
    """One engine (connection pool) per URL and process."""
    if url not in _factories:
        _factories[url] = sessionmaker(make_engine(url), expire_on_commit=False)
    return _factories[url]


def _drop_inherited_connections() -> None:
    """In a forked child (a Celery pool process), forget the parent's pooled connections without closing them.

    Otherwise parent and child talk over one socket: the worker's heartbeat thread and the job's progress writes
    interleave on one PostgreSQL session (seen as psycopg's "prepared statement _pg3_0 already exists", which
    failed the job). SQLAlchemy's documented remedy for os.fork: dispose(close=False) in the child.
    """
    for factory in _factories.values():
        factory.kw["bind"].dispose(close=False)


os.register_at_fork(after_in_child=_drop_inherited_connections)


def migrate(url: str) -> None:
    """Bring the schema to the newest Alembic revision (run by `make run` and by the tests' fixtures)."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", MIGRATIONS_PATH)
    config.attributes["database_url"] = url
    command.upgrade(config, "head")
