"""The workers' Celery app (`celery -A workers.celery_app worker`): the shared queue settings plus the tasks."""

from __future__ import annotations

from storage.config import Settings
from storage.queue import make_celery

celery = make_celery(Settings.from_env(), include=("workers.tasks", "workers.imports"))
