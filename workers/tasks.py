"""run_compile: one job, from claiming the run to its stored report. Progress reaches the database as it happens."""

from __future__ import annotations

import logging
import os
import secrets
import sys
import threading
import time
from datetime import UTC

from celery import signals

from contract.timeline import Recorder, merged
from contract.vocab import new_error_id
from engine import sandbox
from engine.job import (
    JobRequest,
    PrestartedChild,
    read_partial_report,
    run_job,
    warm_up_kernel_cache,
    warm_up_shared_pch,
)
from storage import runstore
from storage.db import session_factory
from storage.models import JOB, Run
from storage.queue import RUN_TASK
from workers.celery_app import celery
from workers.device import visible_gpus
from workers.maintenance import PRESTART_PREFIX, Maintenance, mark_prestarted_folder

log = logging.getLogger(__name__)


@celery.task(name=RUN_TASK, bind=True)
def run_compile(self, run_id: int) -> None:
    picked_up, timeline = time.time(), Recorder("worker")
    settings = self.app.conf.pt2scope_settings
    sessions = session_factory(settings.database_url)
    with sessions() as session:  # the fairest queued run of its queue, not necessarily this message's (fair_order)
        own = session.get(Run, run_id)
        run = own and runstore.claim_next(session, own.queue, JOB, self.request.hostname, os.getpid())
    if run is None:
        log.info("no run is queued any more (redelivered or reaped): message for run %s skipped", run_id)
        return
    try:
        _run(run, picked_up, timeline, settings, sessions)
    finally:  # the worker is free: the queue's wait estimates read how long each job held it
        with sessions() as session:
            runstore.release_run(session, run.id)


def _run(run: Run, picked_up: float, timeline: Recorder, settings, sessions) -> None:
    run_id = run.id
    requested = run.created_at.replace(tzinfo=UTC).timestamp()  # the web app's submit time
    timeline.add("queue_wait", requested, picked_up)
    timeline.add("claim", picked_up, time.time())
    request = JobRequest(
        code=run.code,
        filename=run.filename,
        device=run.device,
        train=run.train,
        configs=run.configs,
        **settings.job_limits(),
    )
    prestarted = next_child.take(request, isolation_of(settings))
    job_dir = prestarted.job_dir if prestarted else os.path.join(settings.jobs_path, run.slug)
    if prestarted:  # the maintenance then judges that folder by this run (beside it: out of the job's reach)
        mark_prestarted_folder(settings, prestarted.job_dir, run.slug)
    with sessions() as session:
        record = _progress_recorder(session, run_id, job_dir, request)
        early = EarlyReport(session, run_id, requested, timeline, settings)
        try:
            # scratch: the folder is removed (its tmpfs unmounted) before run_job returns, whatever happened
            report = run_job(
                request,
                job_dir=job_dir,
                isolation=isolation_of(settings),
                on_event=record,
                on_report=early.store,
                scratch=True,
                prestarted=prestarted,
            )
        except Exception:  # run_job always returns a report; reaching here is a bug of ours, shown as such
            _fail_internally(sessions, run_id, run.slug, "the engine raised")
            return
        finally:
            next_child.want(run.device)  # this job's child has exited: the next one's imports overlap the store
        _store_final_report(session, sessions, run, report, requested, timeline, early, settings)


def _progress_recorder(session, run_id: int, job_dir: str, request: JobRequest):
    """The job's progress events into the run's record; at each finished stage whose tabs are then complete, the
    report as the child has it so far, so those tabs are readable before the job ends."""

    def record(event: dict) -> None:
        try:
            runstore.record_event(session, run_id, event)
            if (
                event.get("event") == "stage"
                and event.get("state") == "finished"
                and event.get("stage") in runstore.SECTIONS_READY_AFTER.values()
            ):
                partial = read_partial_report(job_dir, request)
                if partial:
                    runstore.store_partial_report(session, run_id, partial)
        except Exception:
            session.rollback()  # the job is killed (engine.job); the session must be usable to fail the run
            raise

    return record


def _store_final_report(session, sessions, run: Run, report: dict, requested: float, timeline, early, settings):
    """The finished report stored (completing the early one where it was stored), its timeline with the worker's
    phases, the store's own seconds last."""
    run_id = run.id
    stored = time.time()
    job = report.get("timeline") or {}
    if job.get("origin_unix_s") is not None:  # the job's folder was removed after its timeline ended
        timeline.add("cleanup", job["origin_unix_s"] + job["wall_s"], stored)
    report["timeline"] = merged(job, requested, "request", timeline, report_stored_unix=early.stored_unix)
    try:
        if early.stored_unix is not None:
            early.complete(report)
        else:
            runstore.store_report(session, run_id, report, limit_bytes=settings.report_limit_mb * 1024 * 1024)
        # The store's own seconds are known only once it is done: the timeline section is written again.
        store = Recorder("worker")
        store.add("store", stored, time.time())
        runstore.replace_section(session, run_id, "timeline", merged(report["timeline"], requested, "request", store))
        if early.stored_unix is not None:  # last: the pages stop saying "still measuring" (still_measuring)
            runstore.set_engine_seconds(session, run_id, report)
    except Exception:
        session.rollback()
        _fail_internally(sessions, run_id, run.slug, "storing the report failed")


class EarlyReport:
    """The report stored before the warm compile (engine.job.run_job's on_report): the run reads as succeeded with
    every figure but the warm compile's, which the final report then fills in (the user waits some 10 s less on
    the CPU: docs/benchmarks.md)."""

    # What the final report changes after the early one: the warm compile's figures (runtime), its stage entry and
    # its events' output, and the timeline (rewritten last, by the caller).
    SECTIONS_AFTER = ("runtime", "stages", "user_output")

    def __init__(self, session, run_id: int, requested: float, worker: Recorder, settings):
        self.session, self.run_id, self.requested = session, run_id, requested
        self.worker, self.settings = worker, settings
        self.stored_unix: float | None = None

    def store(self, report: dict) -> None:
        started = time.time()
        stored = Recorder("worker")
        report["timeline"] = merged(report.get("timeline"), self.requested, "request", self.worker)
        try:
            stored_ok = runstore.store_early_report(
                self.session, self.run_id, report, limit_bytes=self.settings.report_limit_mb * 1024 * 1024
            )
        except Exception:
            self.session.rollback()
            raise
        if not stored_ok:  # refused (too large): the final report decides
            return
        self.stored_unix = time.time()
        stored.add("store", started, self.stored_unix)
        runstore.replace_section(
            self.session,
            self.run_id,
            "timeline",
            merged(report["timeline"], self.requested, "request", stored, report_stored_unix=self.stored_unix),
        )
        # The final timeline shows this store beside the warm compile it overlapped.
        self.worker.add("store", started, self.stored_unix, depth=1)

    def complete(self, report: dict) -> None:
        """Fill in the warm compile (the caller then rewrites the timeline and sets the engine seconds). A job that
        failed after the early report (killed at its time limit in the warm compile, say) keeps the early report,
        with the warm compile marked failed and why."""
        if report.get("status") != "ok" or report.get("failure"):
            failure = report.get("failure") or {}
            stored = runstore.load_sections(self.session, self.session.get(Run, self.run_id), ["runtime"])
            runtime = stored.get("runtime") or {}
            failed = {"status": "failed", "reason": f"the job ended in the warm compile: {failure.get('message')}"}
            for label in ("warmup", "warm"):
                if (runtime.get("compile_cache") or {}).get(label, {}).get("status") == "pending":
                    runtime["compile_cache"][label] = failed
            runstore.replace_section(self.session, self.run_id, "runtime", runtime)
            return
        for name in self.SECTIONS_AFTER:
            runstore.replace_section(self.session, self.run_id, name, report[name])


class Prestarter(threading.Thread):
    """Prestarts the sandboxed child of this pool process's next job (settings.prestart_child): at start,
    once the shared precompiled header is there, and after each job (``want``), for that job's device and the
    default limits. One thread starts them all and lives as long as the process: bubblewrap's --die-with-parent
    is tied to the thread that started it, and this process's main thread is Celery's."""

    PCH_WAIT_S = 900.0  # the longest a worker's header and kernel-cache warm-ups take (g++ on a loaded machine)

    def __init__(self) -> None:
        super().__init__(name="pt2scope-prestarter", daemon=True)
        self.settings = None
        self._lock = threading.Lock()
        self._wanted = threading.Event()
        self._device = "cpu"
        self._child: PrestartedChild | None = None
        self._stopped = False
        # Started: is_alive() cannot say (in Celery's pool process the thread reads "stopped" after the first job
        # while it still runs and waits; measured).
        self._begun = False

    def begin(self, settings) -> None:
        self.settings = settings
        if settings.prestart_child:
            self.start()
            self._begun = True

    def want(self, device: str) -> None:
        if self._begun:
            self._device = device
            self._wanted.set()

    def take(self, request: JobRequest, isolation: sandbox.Isolation) -> PrestartedChild | None:
        """The prestarted child, if it fits this job (else it is discarded; the job then starts its own)."""
        with self._lock:  # waits for a child being started right now
            child, self._child = self._child, None
        if child is not None and not child.fits(request, isolation, scratch=True):
            child.discard()
            child = None
        return child

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            child, self._child = self._child, None
        if child is not None:
            child.discard()

    def run(self) -> None:
        self._wait_for_shared_pch()
        self._wanted.set()
        while True:
            self._wanted.wait()
            self._wanted.clear()
            with self._lock:
                if self._stopped or self._child is not None:
                    continue
                template = JobRequest(code="", device=self._device, **self.settings.job_limits())
                folder = os.path.join(self.settings.jobs_path, f"{PRESTART_PREFIX}{os.getpid()}-{secrets.token_hex(6)}")
                try:
                    self._child = PrestartedChild(template, folder, isolation_of(self.settings), scratch=True)
                except Exception:  # the next job then starts its own child, as without this
                    log.exception("could not prestart the next job's child")

    def _wait_for_shared_pch(self) -> None:
        """A child started before the header and the trusted kernel cache are published would not have them bound
        (and would be discarded at the first job)."""
        if self.settings.isolation != "bubblewrap" or not self.settings.pch_warmup:
            return
        deadline = time.monotonic() + self.PCH_WAIT_S
        stamp = os.path.join(self.settings.pch_path, ".built-for")
        isolation = isolation_of(self.settings)

        def ready() -> bool:
            if not os.path.exists(stamp):
                return False
            return not self.settings.kernel_cache_files() or sandbox.kernel_store_id(isolation) is not None

        while not ready() and time.monotonic() < deadline:
            time.sleep(0.5)


# Started in the pool process that runs the jobs (_start_prestarter); never in the worker's main process.
next_child = Prestarter()


def _fail_internally(sessions, run_id: int, slug: str, what: str) -> None:
    """Fail the run for an error of ours: the traceback goes to the log under an id, the user sees the id."""
    error_id = new_error_id()
    log.exception("error %s: run %s: %s", error_id, slug, what)
    exc = sys.exc_info()[1]
    with sessions() as session:
        runstore.fail_run(
            session,
            session.get(Run, run_id),
            "report",
            "internal_error",
            f"pt2scope failed to finish this run: {what} ({type(exc).__name__}, error id "
            f"{error_id}). Submit it again; if it fails again, report the error id.",
        )


def isolation_of(settings) -> sandbox.Isolation:
    return sandbox.Isolation(
        mode=settings.isolation, shared_pch_dir=settings.pch_path, kernel_cache_dir=settings.kernel_cache_path
    )


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
    gallery = settings.kernel_cache_files()
    if settings.isolation == "bubblewrap" and (settings.pch_warmup or gallery):
        threading.Thread(
            target=_warm_up_caches, args=(settings, gallery), name="pt2scope-cache-warmup", daemon=True
        ).start()


def _warm_up_caches(settings, gallery: list[str]) -> None:
    """The trusted precompiled header, then the trusted kernel cache of the gallery files (compiled with it)."""
    if settings.pch_warmup:
        try:
            added = warm_up_shared_pch(isolation_of(settings))
            log.info("shared precompiled header ready in %s (%d new files)", settings.pch_path, len(added))
        except Exception:  # jobs then compile their own header: slower, never wrong
            log.exception("precompiled-header warm-up failed")
    if not gallery:
        return
    devices = ("cpu", "cuda") if visible_gpus() else ("cpu",)
    try:
        added = warm_up_kernel_cache(isolation_of(settings), settings.examples_dir, gallery, devices)
        log.info("trusted kernel cache ready in %s (%d new files)", settings.kernel_cache_path, len(added))
    except Exception:  # jobs then compile every kernel themselves: slower, never wrong
        log.exception("kernel-cache warm-up failed")


@signals.worker_process_init.connect
def _start_prestarter(**_):
    """In the pool process that runs the jobs (Celery forks it from the worker after worker_init)."""
    next_child.begin(celery.conf.pt2scope_settings)


@signals.worker_process_shutdown.connect
def _stop_prestarter(**_):
    next_child.stop()


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
