"""The Dockerfile and docker-compose.yml, read as data, and their services run on this machine without Docker.

Docker cannot run here, so the tests (tests/deploy) and the benches (bench/throughput.py, bench/api_latency.py)
start each service with the command and environment the compose file and the image give it, with the
containers' addresses replaced by this machine's PostgreSQL and Redis. Only `python` differs: a virtual
environment that holds what the service's image installs.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass, field

import yaml

from storage.config import PROJECT_ROOT
from tests.support import LoggedProcess, scratch_postgres_and_redis, wait_until

DOCKERFILE = os.path.join(PROJECT_ROOT, "Dockerfile")
COMPOSE_FILE = os.path.join(PROJECT_ROOT, "docker-compose.yml")


@dataclass
class Stage:
    name: str
    parent: str  # the FROM image, or the stage it builds on
    instructions: list[tuple[str, str]] = field(default_factory=list)  # (INSTRUCTION, arguments)

    def arguments(self, instruction: str) -> list[str]:
        return [args for name, args in self.instructions if name == instruction]


def dockerfile_stages(path: str = DOCKERFILE) -> dict[str, Stage]:
    """Stages by name, instructions with their continuation lines joined (comments dropped)."""
    stages: dict[str, Stage] = {}
    logical, current = "", None
    with open(path) as f:
        for line in f:
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            logical += stripped[:-1].rstrip() + " " if stripped.endswith("\\") else stripped
            if stripped.endswith("\\"):
                continue
            instruction, _, args = logical.partition(" ")
            logical = ""
            if instruction.upper() == "FROM":
                words = args.split()
                current = Stage(name=words[2] if len(words) > 2 else words[0], parent=words[0])
                stages[current.name] = current
            elif current is not None:
                current.instructions.append((instruction.upper(), args.strip()))
    return stages


def stage_chain(stages: dict[str, Stage], target: str) -> list[Stage]:
    """The target and the stages it builds on, base first."""
    chain = []
    while target in stages:
        chain.insert(0, stages[target])
        target = stages[target].parent
    return chain


def exec_form(args: str) -> list[str]:
    """CMD/HEALTHCHECK CMD in exec (JSON) form, as a list."""
    return yaml.safe_load(args)


def image_environment(stages: dict[str, Stage], target: str) -> dict[str, str]:
    env = {}
    for stage in stage_chain(stages, target):
        for args in stage.arguments("ENV"):
            env.update(dict(word.split("=", 1) for word in shlex.split(args)))
    return env


def compose(path: str = COMPOSE_FILE) -> dict:
    with open(path) as f:
        return yaml.safe_load(f)  # merge keys (<<) and anchors are resolved by PyYAML


def service_command(service: str) -> list[str]:
    """What a compose service runs: its command, or its image's CMD."""
    spec = compose()["services"][service]
    if "command" in spec:
        return list(spec["command"])
    return exec_form(dockerfile_stages()[spec["build"]["target"]].arguments("CMD")[-1])


def service_environment(service: str, **local: str) -> dict[str, str]:
    """The environment a service's container gets (image ENV, then compose's), then ``local`` overrides."""
    spec = compose()["services"][service]
    target = spec["build"]["target"] if "build" in spec else _target_of_image(spec["image"])
    env = {**image_environment(dockerfile_stages(), target), **{k: str(v) for k, v in spec["environment"].items()}}
    return {**env, **local}


def _target_of_image(image: str) -> str:
    for spec in compose()["services"].values():
        if spec.get("image") == image and "build" in spec:
            return spec["build"]["target"]
    raise KeyError(image)


class LocalService(LoggedProcess):
    """One compose service run here: its command with ``python`` as the interpreter, its environment with the
    given overrides (on top of this process's PATH and the like). Stopped with SIGTERM, as `docker stop` does."""

    def __init__(self, service: str, python: str, log_path: str, **env: str):
        self.service, self.log_path = service, log_path
        command = service_command(service)
        assert command[0] == "python", command
        self.command = [python, *command[1:]]
        self.env = {**os.environ, **service_environment(service, **env)}

    stop_timeout = 60.0

    def __enter__(self) -> LocalService:
        self.start(self.command, self.env)
        return self

    def run_once(self, timeout: float) -> subprocess.CompletedProcess:
        """For one-shot services (migrate): run to the end."""
        return subprocess.run(
            self.command, cwd=PROJECT_ROOT, env=self.env, capture_output=True, text=True, timeout=timeout
        )


@dataclass
class LocalDeployment:
    base_url: str
    env: dict[str, str]  # what replaces the containers' addresses: DATABASE_URL, CELERY_BROKER_URL, PORT
    web: LocalService


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(python: str, service: str, env: dict) -> bool:
    """The service's compose health check (["CMD", "python", ...]), run here with ``python``."""
    test = compose()["services"][service]["healthcheck"]["test"]
    return subprocess.run([python, *test[2:]], cwd=PROJECT_ROOT, env=env, capture_output=True).returncode == 0


@contextmanager
def local_deployment(web_python: str, workdir: str, redis_db: int, **env: str):
    """A new database and Redis db, the migrate service run to its end, then the web service, healthy.
    Workers are the caller's: ``LocalService("worker", python, log, **deployment.env)``."""
    with scratch_postgres_and_redis(redis_db) as (database_url, broker_url):
        local = {"DATABASE_URL": database_url, "CELERY_BROKER_URL": broker_url, "PORT": str(free_port()), **env}
        migrate = LocalService(
            "migrate",
            web_python,
            os.path.join(workdir, "migrate.log"),
            PT2SCOPE_INSTANCE=os.path.join(workdir, "migrate"),
            **local,
        )
        result = migrate.run_once(timeout=120)
        if result.returncode != 0:
            raise RuntimeError(f"migrate failed:\n{result.stderr[-3000:]}")
        with LocalService(
            "web", web_python, os.path.join(workdir, "web.log"), PT2SCOPE_INSTANCE=os.path.join(workdir, "web"), **local
        ) as web:
            wait_until(
                lambda: web.process.poll() is None and healthy(web_python, "web", web.env),
                timeout=60,
                what="the web health check",
            )
            yield LocalDeployment(f"http://127.0.0.1:{local['PORT']}", local, web)


@contextmanager
def embedded_service(python: str, instance: str, log_path: str, queue: str = "cpu", **env: str):
    """`python -m service serve` (the embedded default: SQLite, its broker, one worker) on a port of its own, with
    its worker beating on ``queue``; yields the base URL. Stopped as `make run` is (SIGTERM), killed if it lingers."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            [python, "-m", "service", "serve", "--port", str(port)],
            cwd=PROJECT_ROOT,
            env={**os.environ, "PT2SCOPE_INSTANCE": instance, **env},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            wait_until(
                lambda: (_status_or_none(base) or {}).get("queues", {}).get(queue, {}).get("workers", 0) >= 1,
                timeout=300,
                what="the embedded worker to beat",
                interval=0.5,
            )
            yield base
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)


def _status_or_none(base: str) -> dict | None:
    try:
        with urllib.request.urlopen(f"{base}/api/status", timeout=10) as response:
            return json.load(response)
    except OSError:
        return None
