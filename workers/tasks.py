"""run_compile: one job, from claiming the run to its stored report. Progress reaches the database as it happens."""
from __future__ import annotations

import logging
import atexit
import os
import secrets
import shutil
import sys
import threading
import time
import traceback
from datetime import UTC

from celery import signals

from contract.timeline import Recorder, merged
from engine import sandbox
from engine.job import JobRequest, PrestartedChild, run_job, warm_up_shared_pch
from storage import runstore
from storage.db import session_factory
from storage.models import Run
from storage.queue import RUN_TASK
from workers.celery_app import celery
from workers.maintenance import Maintenance

log = logging.getLogger(__name__)
# The sandboxed child of this process's next job, started ahead (settings.prestart_child); None when there is none.
_next_child: PrestartedChild | None = None


@celery.task(name=RUN_TASK, bind=True)
def run_compile(self, run_id: int) -> None:
    picked_up, timeline = time.time(), Recorder("worker")
    settings = self.app.conf.pt2scope_settings
    sessions = session_factory(settings.database_url)
    with sessions() as session:
        run = runstore.claim_run(session, run_id, self.request.hostname, os.getpid())
    if run is None:
        log.info("run %s is not queued any more (redelivered or reaped): skipped", run_id)
        return
    requested = run.created_at.replace(tzinfo=UTC).timestamp()  # the web app's submit time
    timeline.add("queue_wait", requested, picked_up)
    timeline.add("claim", picked_up, time.time())
    job_dir = os.path.join(settings.jobs_path, run.slug)
    request = JobRequest(code=run.code, filename=run.filename, device=run.device, train=run.train,
                         configs=run.configs, **settings.job_limits())
    prestarted = _take_next_child()
    with sessions() as session:
        try:
            report = run_job(request, job_dir=job_dir, isolation=isolation_of(settings), prestarted=prestarted,
                             on_event=lambda event: runstore.record_event(session, run_id, event))
        except Exception:  # run_job always returns a report; reaching here is a bug of ours, shown as such
            log.exception("run %s: the engine raised", run.slug)
            runstore.fail_run(session, session.get(Run, run_id), "load", "internal",
                              "pt2scope failed to run the job:\n" + traceback.format_exc(limit=5))
            return
        finally:
            start_next_child(settings, run.device)  # its imports overlap this job's clean-up and store
            with timeline.span("cleanup"):
                for folder in (job_dir, prestarted and prestarted.job_dir):
                    if folder:  # the kernel cache and build files are not kept
                        shutil.rmtree(folder, ignore_errors=True)
        stored = time.time()
        report["timeline"] = merged(report.get("timeline"), requested, "request", timeline)
        runstore.store_report(session, run_id, report)
        # The store's own seconds are known only once it is done: the timeline section is written again with them.
        store = Recorder("worker")
        store.add("store", stored, time.time())
        runstore.replace_section(session, run_id, "timeline", merged(report["timeline"], requested, "request", store))


def start_next_child(settings, device: str = "cpu") -> None:
    """Start the sandboxed child of this process's next job (a fresh sandbox, used by one job only)."""
    global _next_child
    if not settings.prestart_child or _next_child is not None:
        return
    template = JobRequest(code="", device=device, **settings.job_limits())
    try:
        _next_child = PrestartedChild(template, os.path.join(settings.jobs_path, f"next-{secrets.token_hex(8)}"),
                                      isolation_of(settings))
    except OSError:  # the next job then starts its own child, as without this
        log.exception("could not start the next job's child ahead")


def _take_next_child() -> PrestartedChild | None:
    global _next_child
    child, _next_child = _next_child, None
    return child


@atexit.register
def _discard_next_child() -> None:
    child = _take_next_child()
    if child is not None:
        child.discard()


def isolation_of(settings) -> sandbox.Isolation:
    return sandbox.Isolation(mode=settings.isolation, shared_pch_dir=settings.pch_path)


@signals.worker_init.connect
def _check_isolation(sender, **_):
    """Say which isolation jobs get, loudly; refuse to start when the configured one cannot work here."""
    # Printed, not logged: Celery configures logging only after this signal.
    settings = sender.app.conf.pt2scope_settings
    try:
        line = sandbox.check(isolation_of(settings))
    except sandbox.IsolationError as exc:
        print(f"CRITICAL: pt2scope worker cannot start: {exc}", file=sys.stderr, flush=True)
        os._exit(3)  # Celery would log a SystemExit from a signal handler and carry on
    level = "WARNING" if settings.isolation == "none" else "INFO"
    print(f"{level}: pt2scope worker {line}", file=sys.stderr, flush=True)
    if settings.isolation == "bubblewrap" and settings.pch_warmup:
        threading.Thread(target=_warm_up_pch, args=(settings,), name="pt2scope-pch-warmup", daemon=True).start()


def _warm_up_pch(settings) -> None:
    try:
        added = warm_up_shared_pch(isolation_of(settings))
        log.info("shared precompiled header ready in %s (%d new files)", settings.pch_path, len(added))
    except Exception:  # jobs then compile their own header: slower, never wrong
        log.exception("precompiled-header warm-up failed")


@signals.worker_process_init.connect
def _start_first_child(**_):
    """The pool process that runs jobs starts its first job's child now (Celery's app is configured by then)."""
    start_next_child(celery.conf.pt2scope_settings)


@signals.worker_ready.connect
def _start_maintenance(sender, **_):
    queues = sorted(sender.app.amqp.queues.consume_from)
    sender.app.pt2scope_maintenance = Maintenance(sender.app.conf.pt2scope_settings, sender.hostname, queues)
    sender.app.pt2scope_maintenance.start()


@signals.worker_shutdown.connect
def _stop_maintenance(sender, **_):
    maintenance = getattr(sender.app, "pt2scope_maintenance", None)
    if maintenance is not None:
        maintenance.stop()
