"""run_compile: one job, from claiming the run to its stored report. Progress reaches the database as it happens."""

from __future__ import annotations

import logging
import os
import secrets
import sys
import threading
import time
from contextlib import contextmanager
from datetime import UTC

from celery import signals

from contract.timeline import Recorder, merged
from contract.vocab import new_error_id
from engine import jobgroup, sandbox
from engine.job import JobRequest, PrestartedChild, run_job, warm_up_kernel_cache, warm_up_shared_pch
from engine.sink import Deferral, ReportSink
from storage import runstore
from storage.db import session_factory
from storage.models import JOB, Run
from storage.queue import RUN_TASK
from workers.celery_app import celery
from workers.deferred import deferral, deferred_work, job_request
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
    with deferred_work.held():  # deferred work in progress yields to this job
        try:
            _run(run, picked_up, timeline, settings, sessions)
        finally:  # the worker is free: the queue's wait estimates read how long each job held it
            with sessions() as session:
                runstore.release_run(session, run.id)


def _run(run: Run, picked_up: float, timeline: Recorder, settings, sessions) -> None:
    requested = run.created_at.replace(tzinfo=UTC).timestamp()  # the web app's submit time
    timeline.add("queue_wait", requested, picked_up)
    timeline.add("claim", picked_up, time.time())
    request = job_request(run, settings)
    prestarted = next_child.take(request, isolation_of(settings))
    next_child.job_started(run.device)
    job_dir = prestarted.job_dir if prestarted else os.path.join(settings.jobs_path, run.slug)
    if prestarted:  # the maintenance then judges that folder by this run (beside it: out of the job's reach)
        mark_prestarted_folder(settings, prestarted.job_dir, run.slug)
    with sessions() as session:
        stored = StoredRun(session, sessions, run, requested, timeline, settings)
        try:
            # scratch: the folder is removed (its tmpfs unmounted) before the final report is handed over
            run_job(
                request,
                job_dir=job_dir,
                sink=stored,
                isolation=isolation_of(settings),
                scratch=True,
                prestarted=prestarted,
            )
        except Exception:  # run_job always hands over a report; reaching here is a bug of ours, shown as such
            next_child.want(run.device)
            _fail_internally(sessions, run.id, run.slug, "the engine raised")


class StoredRun(ReportSink):
    """The worker's sink (engine.sink): the job's progress events, its report once the stages are collected, before
    the warm compile and at the end, into the run's record. Each stored report's timeline is written once, last,
    with the worker's phases and the store's own seconds up to that write.

    The report before the warm compile makes the run read as succeeded with every figure but the warm compile's,
    which the final report then fills in (the user waits some 10 s less on the CPU: docs/benchmarks.md)."""

    def __init__(self, session, sessions, run: Run, requested: float, worker: Recorder, settings):
        self.session, self.sessions, self.run_id, self.slug = session, sessions, run.id, run.slug
        self.device, self.queue, self.requested, self.worker = run.device, run.queue, requested, worker
        self.settings = settings
        self.limit_bytes = settings.report_limit_mb * 1024 * 1024
        self.early_stored_unix: float | None = None

    def event(self, event: dict) -> None:
        with self._rolled_back_on_error():
            runstore.record_event(self.session, self.run_id, event)

    def partial(self, report: dict) -> None:
        with self._rolled_back_on_error():
            runstore.store_partial_report(self.session, self.run_id, report)

    def defer_post_report(self) -> Deferral | None:
        """Other runs wait in this run's queue: its warm compile waits for the worker to be idle (workers.deferred)."""
        waiting = self.settings.defer_post_report and runstore.waiting_runs(self.session, self.queue)
        return deferral(self.settings, self.slug, waiting) if waiting else None

    def early(self, report: dict) -> None:
        started = time.time()
        with self._rolled_back_on_error():
            stored_ok = runstore.store_early_report(
                self.session, self.run_id, report, self.limit_bytes, self._timeline_with_store(started, early=True)
            )
        if not stored_ok:  # refused (too large): the final report decides
            self.early_stored_unix = None
            return
        # The final timeline shows this store beside the warm compile it overlapped.
        self.worker.add("store", started, self.early_stored_unix, depth=1)

    def final(self, report: dict) -> None:
        next_child.want(self.device)  # this job's child has exited: the next one's imports overlap the store
        started = time.time()
        job = report.get("timeline") or {}
        if job.get("origin_unix_s") is not None:  # the job's folder was removed after its timeline ended
            self.worker.add("cleanup", job["origin_unix_s"] + job["wall_s"], started)
        finish_timeline = self._timeline_with_store(started, early=False)
        try:
            if self.early_stored_unix is None:
                runstore.store_report(self.session, self.run_id, report, self.limit_bytes, finish_timeline)
            elif report.get("status") != "ok" or report.get("failure"):
                runstore.fail_warm_compile(self.session, self.run_id, report, finish_timeline)
            else:
                runstore.complete_early_report(self.session, self.run_id, report, finish_timeline)
        except Exception:
            self.session.rollback()
            _fail_internally(self.sessions, self.run_id, self.slug, "storing the report failed")

    def _timeline_with_store(self, started: float, early: bool):
        """What the store calls just before it writes the timeline: the job's timeline with the worker's phases,
        this store's seconds until now among them (for the early report, also when it was stored)."""

        def finish(job_timeline: dict | None) -> dict:
            now = time.time()
            store = Recorder("worker")
            store.add("store", started, now)
            if early:
                self.early_stored_unix = now
            return merged(
                job_timeline, self.requested, "request", self.worker, store, report_stored_unix=self.early_stored_unix
            )

        return finish

    @contextmanager
    def _rolled_back_on_error(self):
        try:
            yield
        except Exception:
            self.session.rollback()  # the job is killed (engine.sink); the session must be usable to fail the run
            raise


class Prestarter(threading.Thread):
    """Prestarts the sandboxed child of this pool process's next job (settings.prestart_child): at start,
    once the shared precompiled header is there, and after each job (``want``), or as a GPU job starts
    (``job_started``), for that job's device and the default limits. One thread starts them all and lives as long as the process: bubblewrap's --die-with-parent
    is tied to the thread that started it, and this process's main thread is Celery's."""

    PCH_WAIT_S = 900.0  # the longest a worker's header and kernel-cache warm-ups take (g++ on a loaded machine)
    EARLY_PRESTART_CORES = 4  # a GPU job's host thread, its compile's workers, the next child's import, and one spare

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

    def job_started(self, device: str) -> None:
        """A GPU job's step runs one host thread and its compile a few: where the worker has cores to spare, the next
        job's child imports torch beside this job instead of after it (on an H100 in a burst, that import was 8.5 s of
        each job's 13 s hold: docs/benchmarks.md). A CPU job's step wants every core (one OpenMP thread each), so its
        next child starts once it has ended (``want``, from the sink's final report)."""
        if device == "cuda" and len(os.sched_getaffinity(0)) >= self.EARLY_PRESTART_CORES:
            self.want(device)

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
    cpu_limited, limits = jobgroup.probe()
    print(f"{'INFO' if cpu_limited else 'WARNING'}: pt2scope worker job limits: {limits}", file=sys.stderr, flush=True)
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
    """In the pool process that runs the jobs (Celery forks it from the worker after worker_init); so is the
    thread that runs deferred post-report work."""
    next_child.begin(celery.conf.pt2scope_settings)
    deferred_work.begin(celery.conf.pt2scope_settings, isolation_of(celery.conf.pt2scope_settings))


@signals.worker_process_shutdown.connect
def _stop_prestarter(**_):
    next_child.stop()
    deferred_work.stop()


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
