"""import_trace: one uploaded TORCH_TRACE log, from claiming the run to its stored reports (one run per rank).

The log is untrusted data: it is parsed by engine.importjob in a child process with memory, CPU and time limits,
never in this process and never in the web process.
"""

from __future__ import annotations

import logging
import os
import shutil
import time

from contract.vocab import new_error_id
from engine.importjob import ImportFailed, ImportLimits, run_import
from storage import runstore
from storage.db import session_factory
from storage.models import IMPORT, Run
from storage.queue import IMPORT_TASK
from workers.celery_app import celery
from workers.deferred import deferred_work

log = logging.getLogger(__name__)


@celery.task(name=IMPORT_TASK, bind=True)
def import_trace(self, run_id: int) -> None:
    with deferred_work.held():  # an import holds the worker as a job does: deferred work yields to it
        _import_trace(self, run_id)


def _import_trace(self, run_id: int) -> None:
    settings = self.app.conf.pt2scope_settings
    sessions = session_factory(settings.database_url)
    with sessions() as session:
        own = session.get(Run, run_id)  # the fairest queued import, not necessarily this message's (fair_order)
        run = own and runstore.claim_next(session, own.queue, IMPORT, self.request.hostname, os.getpid())
        if run is None:
            log.info("no import is queued any more (redelivered or reaped): message for %s skipped", run_id)
            return
        run_id = run.id
        job_dir = os.path.join(settings.jobs_path, run.slug)
        os.makedirs(job_dir, exist_ok=True)
        log_path = os.path.join(job_dir, "upload")
        upload = runstore.write_upload(session, run_id, log_path)  # a chunk at a time
        if upload is None:
            shutil.rmtree(job_dir, ignore_errors=True)
            runstore.fail_run(session, run, "load", "bad_log", "the uploaded log is gone; upload it again")
            return
        filename = upload.filename
        started = time.monotonic()
        runstore.record_event(
            session, run_id, {"event": "stage", "stage": "load", "state": "started", "elapsed_s": 0.0}
        )
        limits = ImportLimits(
            time_limit_s=settings.job_time_limit_s,
            max_log_mb=settings.max_trace_expanded_mb,
            max_ranks=settings.max_trace_ranks,
        )
        try:
            reports = run_import(log_path, os.path.join(job_dir, "out"), filename, limits)
            seconds = round(time.monotonic() - started, 3)
            runstore.record_event(
                session,
                run_id,
                {"event": "stage", "stage": "load", "state": "finished", "elapsed_s": seconds, "seconds": seconds},
            )
            runstore.store_import(session, run_id, reports.first, reports.further())  # one report at a time
        except ImportFailed as exc:
            runstore.drop_upload(session, run_id)
            runstore.fail_run(session, session.get(type(run), run_id), "load", exc.kind, str(exc))
            return
        except Exception:  # a bug of ours, shown as such: the traceback goes to the log under an id
            session.rollback()
            error_id = new_error_id()
            log.exception("error %s: import %s failed", error_id, run.slug)
            runstore.drop_upload(session, run_id)
            runstore.fail_run(
                session,
                session.get(type(run), run_id),
                "load",
                "internal_error",
                f"pt2scope failed to import the log (error id {error_id}); if it fails again, report the error id.",
            )
            return
        finally:
            shutil.rmtree(job_dir, ignore_errors=True)
        runstore.release_run(session, run_id)
