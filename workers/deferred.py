"""The work after a report that jobs left for later (engine.sink.Deferral), run while the worker is idle.

A job whose report is readable while other runs wait in its queue ends without its warm compile and measuring
processes (StoredRun.defer_post_report), its folder kept in settings.deferred_path/<slug>: it holds the worker
only until its report is readable. The pool process's DeferredWork thread then runs that work
(engine.job.run_post_report), oldest first, whenever no job runs in this process and no run waits in the folder's
queue; a task that holds the worker stops it at once (``held``: it yields), and it is tried again later from the same
kept folder. Pool processes of one host share the folders: each claims one by renaming it.
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
from contextlib import contextmanager

from engine import sandbox
from engine.job import JobRequest, run_post_report
from engine.sink import Deferral
from storage import runstore
from storage.db import session_factory
from storage.models import SUCCEEDED, Run

log = logging.getLogger(__name__)

TAKEN = ".taken-"  # <slug>.taken-<pid>: a kept folder a pool process is running the work of
ATTEMPT = ".run-"  # <slug>.run-<pid>-<hex>: the scratch folder of one try


def job_request(run: Run, settings) -> JobRequest:
    """The engine's request for a run's job, with the worker's limits."""
    return JobRequest(
        code=run.code,
        filename=run.filename,
        device=run.device,
        train=run.train,
        configs=run.configs,
        **settings.job_limits(),
    )


def deferral(settings, slug: str, waiting: int) -> Deferral:
    jobs = f"{waiting} other run{'s' if waiting != 1 else ''}"
    return Deferral(
        reason=f"{jobs} waited for this worker when this report was readable",
        keep_dir=os.path.join(settings.deferred_path, slug),
    )


class DeferredWork(threading.Thread):
    """Runs kept folders' post-report work one at a time while this pool process has no job (its own thread, for
    the life of the process: bubblewrap's --die-with-parent is tied to the thread that starts the sandbox)."""

    POLL_S = 5.0  # how often an idle process looks for work other processes left (a job's end wakes it at once)

    def __init__(self) -> None:
        super().__init__(name="pt2scope-deferred-work", daemon=True)
        self.settings = None
        self.isolation: sandbox.Isolation | None = None
        self._busy = threading.Event()
        self._wake = threading.Event()
        self._attempt = threading.Lock()

    def begin(self, settings, isolation: sandbox.Isolation) -> None:
        self.settings, self.isolation = settings, isolation
        os.makedirs(settings.deferred_path, exist_ok=True)
        self.start()

    @contextmanager
    def held(self):
        """Around a task that holds the worker (a job, an import): deferred work in progress is stopped first (its
        child is killed within a poll of the pump, 0.25 s) and none starts until the task ends."""
        self._stop_work()
        try:
            yield
        finally:
            self._allow_work()

    def _stop_work(self) -> None:
        self._busy.set()
        with self._attempt:
            pass

    def stop(self) -> None:
        """The pool process ends: work in progress is stopped and its scratch folder removed (the kept folder
        stays for a later try, by this worker's next process or another of the host)."""
        self._stop_work()

    def _allow_work(self) -> None:
        self._busy.clear()
        self._wake.set()

    def run(self) -> None:
        sessions = session_factory(self.settings.database_url)
        while True:
            self._wake.wait(self.POLL_S)
            self._wake.clear()
            try:
                while not self._busy.is_set() and self._run_one(sessions):
                    pass
            except Exception:  # the work stays kept; the next wake tries again
                log.exception("deferred post-report work failed")

    def _run_one(self, sessions) -> bool:
        """The oldest kept folder's work, if its queue has no run waiting: True when one was done."""
        for slug in self._kept_slugs():
            with sessions() as session:
                run = runstore.get_run(session, slug)
                if run is None or run.status != SUCCEEDED:  # deleted, or its report was never stored
                    sandbox.remove_job_dir(os.path.join(self.settings.deferred_path, slug))
                    continue
                if runstore.waiting_runs(session, run.queue):
                    return False
                run_id, request = run.id, job_request(run, self.settings)
            with self._attempt:
                if self._busy.is_set():
                    return False
                kept = self._claim(slug)
                if kept is None:  # another pool process took it
                    continue
                report = self._attempt_in(slug, kept, request)
                if report is None:  # a job came: the folder goes back for a later try
                    os.rename(kept, os.path.join(self.settings.deferred_path, slug))
                    return False
            with sessions() as session:
                runstore.complete_deferred(session, run_id, report)
            sandbox.remove_job_dir(kept)
            return True
        return False

    def _attempt_in(self, slug: str, kept: str, request: JobRequest) -> dict | None:
        attempt = os.path.join(self.settings.deferred_path, f"{slug}{ATTEMPT}{os.getpid()}-{secrets.token_hex(4)}")
        return run_post_report(request, kept, attempt, isolation=self.isolation, should_yield=self._busy.is_set)

    def _claim(self, slug: str) -> str | None:
        kept = os.path.join(self.settings.deferred_path, slug)
        taken = f"{kept}{TAKEN}{os.getpid()}"
        try:
            os.rename(kept, taken)
        except FileNotFoundError:
            return None
        return taken

    def _kept_slugs(self) -> list[str]:
        """The kept folders waiting for their work, oldest first; what a dead pool process left mid-try is put
        back (a claimed folder) or removed (a try's scratch folder, whose processes are killed)."""
        root = self.settings.deferred_path
        waiting = []
        for name in os.listdir(root):
            path = os.path.join(root, name)
            for mark in (TAKEN, ATTEMPT):
                if mark in name:
                    pid = name.split(mark, 1)[1].split("-")[0]
                    if not (pid.isdigit() and runstore.process_exists(int(pid))):
                        if mark == TAKEN:
                            os.rename(path, os.path.join(root, name.split(mark, 1)[0]))
                        else:
                            sandbox.kill_processes_of_job_dir(path)
                            sandbox.remove_job_dir(path)
                    break
            else:
                waiting.append((os.stat(path).st_mtime, name))
        return [name for _, name in sorted(waiting)]


# Started in the pool process that runs the jobs (workers.tasks), never in the worker's main process.
deferred_work = DeferredWork()
