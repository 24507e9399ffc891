"""The embedded default (`make run`: `python -m service serve`) heals: kill -9 of its worker's main process fails
the worker's run at once, removes the dead job's folder, and a new worker serves the next run; the site stays up.
kill -9 of the launcher itself ends its web server and worker."""

import json
import os
import signal
import socket
import sys
import urllib.request

from engine import sandbox
from engine.jobgroup import alive
from storage import runstore
from storage.db import session_factory
from tests.support import SEED, LoggedProcess, make_settings, submittable, wait_until


class Serve(LoggedProcess):
    def __init__(self, settings, port: int):
        self.settings, self.port = settings, port
        self.log_path = os.path.join(settings.instance_path, "serve.log")

    def __enter__(self):
        self.start(
            [sys.executable, "-m", "service", "serve", "--port", str(self.port)],
            {**os.environ, **self.settings.to_env()},
        )
        return self


def api(port: int, path: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        method="POST" if body else "GET",
        data=json.dumps(body).encode() if body else None,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def answers(port: int) -> bool:
    try:
        return bool(api(port, "/api/health"))
    except OSError:
        return False


def processes_naming(folder: str) -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if folder.encode() in f.read():
                    found.append(pid)
        except OSError:
            pass
    return found


def job_folder(settings, run_id: str) -> str | None:
    """The running job's folder: its own (named after the run) or that of the prestarted child for it."""
    for name in os.listdir(settings.jobs_path) if os.path.isdir(settings.jobs_path) else []:
        folder = os.path.join(settings.jobs_path, name)
        try:
            with open(os.path.join(folder, "request.json")) as f:
                if name == run_id or "time.sleep(600)" in f.read():
                    return folder
        except OSError:
            continue
    return None


def workers(settings) -> list:
    with session_factory(settings.database_url)() as session:
        return runstore.online_workers(session, settings)


def test_a_killed_embedded_worker_is_replaced_its_run_failed_and_a_killed_launcher_leaves_nothing(tmp_path):
    settings = make_settings(tmp_path)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    try:
        serve_and_kill_its_worker(settings, port)
    finally:  # whatever failed: no job folder (a tmpfs) outlives the test
        for name in os.listdir(settings.jobs_path) if os.path.isdir(settings.jobs_path) else []:
            sandbox.remove_job_dir(os.path.join(settings.jobs_path, name))


def serve_and_kill_its_worker(settings, port: int) -> None:
    with Serve(settings, port) as serve:
        wait_until(lambda: answers(port) and workers(settings), timeout=120, what="the site and its worker")
        first = workers(settings)[0]
        hang = api(port, "/api/runs", {"code": submittable("import time\ntime.sleep(600)\n"), "configs": ["eager"]})[
            "id"
        ]
        folder = wait_until(
            lambda: api(port, f"/api/runs/{hang}")["status"] == "running" and job_folder(settings, hang),
            timeout=120,
            what="the job to start",
        )
        os.kill(first.pid, signal.SIGKILL)
        status = wait_until(
            lambda: (data := api(port, f"/api/runs/{hang}"))["status"] == "failed" and data,
            timeout=30,
            what="the run to be failed",
        )
        assert status["error"]["kind"] == "worker_lost", status["error"]
        successor = wait_until(
            lambda: [w for w in workers(settings) if w.name != first.name], timeout=120, what="a new worker"
        )[0]
        wait_until(lambda: not os.path.exists(folder), timeout=30, what="the dead job's folder to go")
        assert folder not in open("/proc/self/mounts").read()
        wait_until(lambda: not processes_naming(folder), timeout=10, what="the dead job's processes to go")
        after = api(port, "/api/runs", {"code": SEED, "configs": ["eager"]})["id"]
        done = wait_until(
            lambda: (data := api(port, f"/api/runs/{after}"))["status"] in ("succeeded", "failed") and data,
            timeout=180,
            what="the next run",
        )
        assert done["status"] == "succeeded", done["error"]
        assert serve.process.poll() is None and successor.pid != first.pid
        # The launcher itself killed outright: its web server and worker end with it (and the worker's
        # prestarted child with the worker), instead of taking the cores of whatever runs next.
        with open(f"/proc/{serve.process.pid}/task/{serve.process.pid}/children") as f:
            children = [int(pid) for pid in f.read().split()]
        assert successor.pid in children and len(children) == 2, children
        os.kill(serve.process.pid, signal.SIGKILL)
        serve.process.wait()
        wait_until(lambda: not any(map(alive, children)), timeout=60, what="the web server and worker to end")
        wait_until(lambda: not processes_naming(settings.jobs_path), timeout=30, what="the prestarted child to end")
