"""Hostile and faulty code through a real worker (real broker, real bubblewrap): each run fails with a message
naming the cause or the limit, the report page shows it, and the worker takes the next job at once."""

import os
import signal
import subprocess
import sys
import urllib.request

import pytest

from engine import jobgroup
from engine.jobgroup import JobGroup
from storage.config import PROJECT_ROOT
from tests.support import SEED, Worker, make_settings, submittable, wait_for_run, wait_for_success, wait_until
from webapp import create_app
from workers.launch import dies_with_parent

CHEAP = ["eager", "backend_eager"]
# Tight limits so each hostile run ends in seconds; the defaults are in docs/security.md. The wall clock leaves
# room for 12 s of CPU on a loaded 2-core machine (load 10: 6 s of CPU took 22 s). The memory limit leaves room for
# importing the CUDA build of torch (requirements/torch.txt), whose address space alone exceeds 3 GiB: under 3072
# MiB even OpenBLAS's start-up allocation failed.
LIMITS = dict(job_time_limit_s=90.0, cpu_time_limit_s=12.0, memory_limit_mb=6144, process_limit=64, output_limit_mb=32)

HOSTILE = {
    "fork_bomb": (
        submittable("import os\nwhile True:\n    os.fork()\n"),
        "processes",
        "process limit of 64",
    ),
    "memory": (
        submittable("import torch\nhuge = torch.empty(12 * 2**30, dtype=torch.uint8)  # 12 GiB, twice the limit\n"),
        "memory",
        "memory limit of 6144 MiB",
    ),
    "output_flood": (
        submittable("import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n"),
        "output_limit",
        "limit of 32 MiB reached",
    ),
    "busy_loop": (submittable("while True:\n    pass\n"), "cpu_time", "CPU time limit of 12 s reached"),
    # A file the submit check cannot read for certain (globals() may bind anything): the engine says what is missing.
    "missing_names": ("import torch\nglobals()['x'] = 1\n", "missing_name", "defines no top-level `model`"),
    "model_exception": (
        "import torch\ndef f(x):\n    raise KeyError('no such layer')\nmodel = f\nexample_inputs = (torch.ones(2),)\n",
        "user_exception",
        "KeyError: 'no such layer' (model.py:3)",
    ),
}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    settings = make_settings(tmp_path_factory.mktemp("hostile"), **LIMITS)
    with Worker(settings) as worker:
        yield create_app(settings).test_client(), worker, settings


def test_each_hostile_run_is_stopped_at_its_limit_and_the_worker_carries_on(site):
    client, worker, _ = site
    run_ids = {
        name: client.post("/api/runs", json={"code": code, "configs": CHEAP}).get_json()["id"]
        for name, (code, _, _) in HOSTILE.items()
    }
    after = client.post("/api/runs", json={"code": SEED, "configs": CHEAP}).get_json()["id"]
    for name, (_, kind, message) in HOSTILE.items():
        status = wait_for_run(client, run_ids[name], timeout=120, worker=worker)
        error = status["error"]
        assert status["status"] == "failed" and error["kind"] == kind, (name, error)
        assert message in error["message"], (name, error["message"])
        page = client.get(f"/r/{run_ids[name]}").get_data(as_text=True)
        assert 'id="error"' in page and f"({kind})" in page
    wait_for_success(client, after, timeout=120, worker=worker)
    assert worker.process.poll() is None  # the same worker, still running


def test_the_report_says_which_isolation_was_in_force(site):
    client, worker, _ = site
    run_id = client.post("/api/runs", json={"code": SEED, "configs": ["eager"]}).get_json()["id"]
    wait_for_success(client, run_id, worker=worker)
    isolation = client.get(f"/api/runs/{run_id}/report").get_json()["isolation"]
    assert isolation["mode"] == "bubblewrap" and isolation["limits"]["process_limit"] == 64
    whole_job = JobGroup("pt2scope-probe-%d" % os.getpid(), None, 1)  # does this machine give jobs a cgroup?
    expected = (
        f"{whole_job.describe()} pids.max (the whole job; ended once its forks are refused for "
        f"{jobgroup.FORK_REFUSALS_S:g} s or it starts over {jobgroup.FORK_RATE_PER_S} processes a second for "
        f"{jobgroup.FORK_BOMB_S:g} s holding a {jobgroup.FORK_BOMB_SHARE:g} share of the limit)"
        if whole_job.enforced
        else "RLIMIT_NPROC"
    )
    cpu, cpu_limited = whole_job.describe_cpu(), whole_job.cpu_limited
    whole_job.close()
    assert isolation["enforced_by"]["process_limit"] == expected
    # The job's processes share one low CPU weight and at most the worker's cores (here: the cpu controller).
    assert isolation["enforced_by"]["cpu_cores"] == cpu and cpu_limited, cpu
    assert isolation["limits"]["cpu_cores"] == len(os.sched_getaffinity(0))
    overview = client.get(f"/r/{run_id}").get_data(as_text=True)
    assert 'id="overview-isolation"' in overview and "bubblewrap" in overview


def test_twenty_submissions_at_once_all_finish_and_survive_a_web_restart(tmp_path):
    settings = make_settings(tmp_path)
    client = create_app(settings).test_client()
    with Worker(settings) as first, Worker(settings):
        # fresh: twenty jobs, not one job that nineteen identical submissions share
        run_ids = [
            client.post("/api/runs", json={"code": SEED, "configs": ["eager"], "fresh": True}).get_json()["id"]
            for _ in range(20)
        ]
        statuses = [wait_for_run(client, run_id, timeout=600, worker=first) for run_id in run_ids]
    assert [s["status"] for s in statuses] == ["succeeded"] * 20
    # A real web server process, stopped and started again on the same database: every report is still there.
    for _restart in range(2):
        with _gunicorn(settings) as url:
            for run_id in run_ids:
                with urllib.request.urlopen(f"{url}/api/runs/{run_id}/report", timeout=30) as response:
                    assert response.status == 200 and b'"status":"ok"' in response.read()


class _gunicorn:
    def __init__(self, settings):
        self.settings = settings

    def __enter__(self):
        import socket

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}", "--workers", "1", "webapp:create_app()"],
            cwd=PROJECT_ROOT,
            env={**os.environ, **self.settings.to_env()},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=dies_with_parent(signal.SIGKILL),
        )
        url = f"http://127.0.0.1:{port}"

        def answers():
            try:
                with urllib.request.urlopen(f"{url}/", timeout=2):
                    return True
            except OSError:
                return False

        wait_until(answers, timeout=60, what="gunicorn to answer")
        return url

    def __exit__(self, *exc):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=30)
