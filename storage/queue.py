"""The job queue both tiers speak: broker, queues, task names and limits. The web app sends work by task name
through it and never imports the workers; the workers build their Celery app from it (workers/celery_app.py)."""

from __future__ import annotations

from celery import Celery
from kombu import Queue
from kombu.transport import sqlalchemy as kombu_sqlalchemy

from storage.config import Settings

RUN_TASK = "pt2scope.run_compile"
IMPORT_TASK = "pt2scope.import_trace"  # a TORCH_TRACE upload (workers/imports.py)
QUEUES = ("cpu", "gpu")

# The SQLite broker polls its table; the default 1 s adds up to a second to every job's start. The transport
# rejects polling_interval in broker_transport_options (it is forwarded to create_engine and raises TypeError), so
# set the class attribute.
kombu_sqlalchemy.Transport.polling_interval = 0.1


def make_celery(settings: Settings, include: tuple[str, ...] = ()) -> Celery:
    """The Celery app for these settings; the workers name their task modules in ``include``, a sender none."""
    app = Celery("pt2scope", broker=settings.broker_url, set_as_current=False, include=list(include))
    app.conf.update(
        task_queues=[Queue(name) for name in QUEUES],
        task_default_queue="cpu",
        task_serializer="json",
        accept_content=["json"],
        task_ignore_result=True,  # results live in the database, written by the task itself
        # One job at a time per worker, taken only when it can start, acknowledged only once done.
        worker_concurrency=1,
        worker_prefetch_multiplier=1,
        task_acks_late=True,
        # No pool recycling per job: user code never runs in this process (the engine's sandboxed child is the fresh
        # process per job), and replacing the pool process idled the worker ~4.5 s after every job (measured).
        task_time_limit=settings.hard_time_limit_s,
        broker_connection_retry_on_startup=True,
        # Redis redelivers unacknowledged messages after visibility_timeout: it must exceed the longest job, or a
        # long job runs twice. Other transports ignore the option.
        broker_transport_options=(
            {"visibility_timeout": int(settings.hard_time_limit_s) + 300}
            if settings.broker_url.startswith(("redis", "rediss"))
            else {}
        ),
    )
    app.conf.pt2scope_settings = settings
    return app
