"""run_compile: one job, from claiming the run to its stored report. Progress reaches the database as it happens."""
from __future__ import annotations

import logging
import os
import shutil
import traceback

from celery import signals

from engine.job import JobRequest, run_job
from webapp import runstore
from webapp.db import session_factory
from webapp.models import Run
from workers.celery_app import RUN_TASK, celery
from workers.maintenance import Maintenance

log = logging.getLogger(__name__)


@celery.task(name=RUN_TASK, bind=True)
def run_compile(self, run_id: int) -> None:
    settings = self.app.conf.pt2scope_settings
    sessions = session_factory(settings.database_url)
    with sessions() as session:
        run = runstore.claim_run(session, run_id, self.request.hostname, os.getpid())
    if run is None:
        log.info("run %s is not queued any more (redelivered or reaped): skipped", run_id)
        return
    job_dir = os.path.join(settings.jobs_path, run.slug)
    request = JobRequest(code=run.code, filename=run.filename, device=run.device, train=run.train,
                         configs=run.configs, time_limit_s=settings.job_time_limit_s)
    with sessions() as session:
        try:
            report = run_job(request, job_dir=job_dir,
                             on_event=lambda event: runstore.record_event(session, run_id, event))
        except Exception:  # run_job always returns a report; reaching here is a bug of ours, shown as such
            log.exception("run %s: the engine raised", run.slug)
            runstore.fail_run(session, session.get(Run, run_id), "load", "internal",
                              "pt2scope failed to run the job:\n" + traceback.format_exc(limit=5))
            return
        finally:
            shutil.rmtree(job_dir, ignore_errors=True)  # the kernel cache and build files are not kept
        runstore.store_report(session, run_id, report)


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
