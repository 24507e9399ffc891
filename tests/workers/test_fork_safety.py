"""A Celery pool process is forked from the worker, whose heartbeat thread keeps database connections pooled:
the child must open its own, or both processes talk over one PostgreSQL session (which failed jobs under load)."""

import os

from sqlalchemy import text

from storage.db import session_factory

POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def test_a_forked_child_gets_its_own_database_session():
    sessions = session_factory(POSTGRES)
    with sessions() as session:  # leaves one connection pooled in this process, as the heartbeat does
        parent_backend = session.execute(text("SELECT pg_backend_pid()")).scalar()
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # the child reports its server session's pid and exits without running pytest's teardown
        try:
            with sessions() as session:
                os.write(write_end, str(session.execute(text("SELECT pg_backend_pid()")).scalar()).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as reader:
        child_backend = int(reader.read())
    os.waitpid(child, 0)
    assert child_backend != parent_backend
    with sessions() as session:  # and the parent's own connection still works
        assert session.execute(text("SELECT pg_backend_pid()")).scalar() == parent_backend
