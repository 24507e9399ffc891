"""Per-app and per-request state: settings, the Celery client, one database session per request."""

from __future__ import annotations

from dataclasses import dataclass

from celery import Celery
from flask import current_app, g
from sqlalchemy.orm import Session

from storage.config import Settings
from storage.db import session_factory
from storage.models import IMPORT, Run
from storage.queue import IMPORT_TASK, RUN_TASK


@dataclass
class Extension:
    settings: Settings
    celery: Celery


def settings() -> Settings:
    return current_app.extensions["pt2scope"].settings


def session() -> Session:
    if "db_session" not in g:
        g.db_session = session_factory(settings().database_url)()
    return g.db_session


def close_session(_exc=None) -> None:
    db_session = g.pop("db_session", None)
    if db_session is not None:
        db_session.close()


def enqueue(run: Run) -> None:
    """Send the run to its queue; the run row is committed first, so a fast worker always finds it."""
    task = IMPORT_TASK if run.kind == IMPORT else RUN_TASK
    current_app.extensions["pt2scope"].celery.send_task(task, args=[run.id], queue=run.queue)
