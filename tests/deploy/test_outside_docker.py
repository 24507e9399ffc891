"""The images' install and start steps, run on this machine without Docker (tests/deploy/stack.py).

The web tier runs from a fresh virtual environment holding only what the web image installs (so without torch);
the worker from the project's environment (the worker image's requirements and torch pair).
Each runs its compose service's command and environment, pointed at this machine's PostgreSQL and Redis."""

import json
import socket
import subprocess
import sys
import urllib.request
from importlib import metadata

import pytest
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, text

from storage.db import MIGRATIONS_PATH
from tests.deploy import stack
from tests.support import SEED, wait_until

REDIS_DB = 12  # a db index of its own, flushed: no other user of this server is touched
CHEAP_CONFIGS = ["eager", "backend_eager"]


@pytest.fixture(scope="module")
def web_python(tmp_path_factory):
    """A new virtual environment with exactly the web image's `pip install` steps, run from the repository root
    as the Dockerfile runs them from /app."""
    venv = tmp_path_factory.mktemp("web-venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    for stage in stack.stage_chain(stack.dockerfile_stages(), "web"):
        for step in stage.arguments("RUN"):
            if step.startswith("pip install"):
                subprocess.run(
                    [python, "-m", *step.split()], cwd=stack.PROJECT_ROOT, check=True, stdout=subprocess.DEVNULL
                )
    return python


def http_json(url: str, body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def test_the_web_environment_has_no_torch(web_python):
    result = subprocess.run([web_python, "-c", "import torch"], capture_output=True, text=True)
    assert result.returncode != 0 and "No module named 'torch'" in result.stderr


def test_compose_services_run_here_and_a_job_goes_through(web_python, tmp_path):
    with stack.local_deployment(web_python, str(tmp_path), REDIS_DB) as deployment:
        head = ScriptDirectory.from_config(_alembic_config()).get_current_head()
        engine = create_engine(deployment.env["DATABASE_URL"])
        with engine.connect() as connection:  # the migrate service brought the schema to the newest revision
            assert connection.execute(text("SELECT version_num FROM alembic_version")).scalar() == head
        engine.dispose()

        base = deployment.base_url
        run = http_json(f"{base}/api/runs", {"code": SEED, "filename": "seed.py", "configs": CHEAP_CONFIGS})
        queues = http_json(f"{base}/api/status")["queues"]
        assert queues["cpu"] == {"queued": 1, "running": 0, "workers": 0}

        # The job's sandbox works on this machine; the warm-up compile (tens of seconds) is skipped here.
        worker = stack.LocalService(
            "worker",
            sys.executable,
            str(tmp_path / "worker.log"),
            PT2SCOPE_INSTANCE=str(tmp_path / "worker"),
            PT2SCOPE_PCH_WARMUP="false",
            PT2SCOPE_KERNEL_CACHE_GALLERY="none",
            **deployment.env,
        )
        with worker:
            wait_until(
                lambda: worker.process.poll() is None and stack.healthy(sys.executable, "worker", worker.env),
                timeout=120,
                what="the worker health check",
                interval=1.0,
            )
            status = wait_until(lambda: _finished(base, run["id"]), timeout=240, what="the job", interval=0.5)
            assert status["status"] == "succeeded", (status["error"], worker.output())
            assert [s["state"] for s in status["stages"] if s["stage"] in ("load", "eager", "dynamo")] == [
                "finished"
            ] * 3

            service = http_json(f"{base}/api/status")
            (listed,) = service["workers"]
            assert listed["queues"] == ["cpu"] and listed["name"].endswith("@" + socket.gethostname())
            assert listed["device"]["torch"] == metadata.version("torch")
            with open("/proc/cpuinfo") as f:
                assert listed["device"]["cpu"] in f.read()
            assert service["queues"]["cpu"] == {"queued": 0, "running": 0, "workers": 1}
            with urllib.request.urlopen(f"{base}/status", timeout=30) as page:
                assert listed["name"] in page.read().decode()
        assert not stack.healthy(sys.executable, "worker", worker.env)  # a stopped worker says goodbye
    assert deployment.web.process.returncode == 0, deployment.web.output()


def _finished(base: str, run_id: str) -> dict | None:
    status = http_json(f"{base}/api/runs/{run_id}")
    return status if status["status"] in ("succeeded", "failed") else None


def _alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", MIGRATIONS_PATH)
    return config
