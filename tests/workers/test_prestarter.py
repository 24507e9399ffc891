"""When a worker starts the child of its next job (workers.tasks.Prestarter): beside a GPU job where the worker has
cores to spare, so that in a burst the next job's imports are done when it is claimed (on an H100 each job of a
classroom burst spent 8.5 s of its 13 s hold importing torch, the child having been started only as the job before
ended); after a CPU job, whose step wants every core. Real sandboxed children, real torch."""

import os
import time

from engine.job import JobRequest
from engine.sandbox import Isolation
from tests.support import make_settings
from workers.tasks import Prestarter, isolation_of


def take_within(prestarter: Prestarter, request: JobRequest, isolation: Isolation, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        child = prestarter.take(request, isolation)
        if child is not None:
            return child
        time.sleep(0.1)
    raise AssertionError(f"no child was prestarted for a {request.device} job")


def test_a_gpu_job_starts_the_next_child_beside_it_and_a_cpu_job_does_not(tmp_path, monkeypatch):
    settings = make_settings(tmp_path)
    isolation = isolation_of(settings)
    cpu_job = JobRequest(code="x = 1", device="cpu", **settings.job_limits())
    gpu_job = JobRequest(code="x = 1", device="cuda", **settings.job_limits())
    prestarter = Prestarter()
    prestarter.begin(settings)
    try:
        take_within(prestarter, cpu_job, isolation).discard()  # the one started with the worker, taken by a job

        monkeypatch.setattr(Prestarter, "EARLY_PRESTART_CORES", len(os.sched_getaffinity(0)) + 1)
        prestarter.job_started("cuda")  # a GPU host without a core to spare: after the job, as a CPU job
        prestarter.job_started("cpu")
        time.sleep(1.0)  # the prestarter's thread starts a wanted child within milliseconds
        assert prestarter.take(cpu_job, isolation) is None and prestarter.take(gpu_job, isolation) is None

        monkeypatch.setattr(Prestarter, "EARLY_PRESTART_CORES", len(os.sched_getaffinity(0)))
        prestarter.job_started("cpu")
        time.sleep(1.0)
        assert prestarter.take(cpu_job, isolation) is None
        prestarter.job_started("cuda")  # while that job runs, the next one's child is started for its device
        child = take_within(prestarter, gpu_job, isolation)
        assert child.fits(gpu_job, isolation, scratch=True)
        child.discard()
    finally:
        prestarter.stop()
