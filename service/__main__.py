"""pt2scope's processes, one subcommand each (docs/deploy.md):

    python -m service serve     migrate, then gunicorn and one embedded worker (what `make run` calls); both end
                                with it, even when it is killed outright (SIGTERM to each: a warm shutdown)
    python -m service migrate   bring the database to the newest schema (the compose file's one-shot service)
    python -m service web       gunicorn only (the web container)
    python -m service worker    one Celery worker only (a worker container; one per GPU)
    python -m service health web|worker   exit 0 if this container's server answers or its worker beats

Every setting comes from the environment (storage.config.Settings, plus the few read here)."""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request

from storage import runstore
from storage.config import Settings
from storage.db import migrate, session_factory
from storage.queue import QUEUES
from workers.launch import dies_with_parent, web_command, worker_command, worker_queues

# A worker that died this many times within the window is not restarted: it would only die again (a worker that
# refuses to start, e.g. without a working sandbox, exits with code 3 at once).
WORKER_DEATHS_TO_GIVE_UP, WORKER_DEATHS_WINDOW_S = 3, 120.0


def serve(settings: Settings, host: str, port: int) -> int:
    migrate(settings.database_url)
    env = {**os.environ, **settings.to_env()}
    queues = worker_queues()
    print(
        f"pt2scope: http://{host}:{port}  (worker queues: {', '.join(queues)}; data in {settings.instance_path})",
        flush=True,
    )
    worker = EmbeddedWorker(queues, env)
    web = subprocess.Popen(web_command(host, port), env=env, preexec_fn=dies_with_parent())
    stopping, deaths = False, []

    def stop(*_):
        nonlocal stopping
        stopping = True
        for child in (web, worker.process):
            if child.poll() is None:
                child.terminate()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while not stopping:
        try:
            pid, _ = os.wait()  # a server without its worker would queue jobs forever: the worker is restarted
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        if pid != worker.process.pid or stopping:  # the web server ended (or we are stopping): end both
            break
        worker.ended()
        reap_worker(settings, worker.name)
        deaths = [t for t in deaths if t > time.monotonic() - WORKER_DEATHS_WINDOW_S] + [time.monotonic()]
        if len(deaths) >= WORKER_DEATHS_TO_GIVE_UP:
            print(
                f"pt2scope: the worker died {len(deaths)} times within {WORKER_DEATHS_WINDOW_S:g} s: stopping",
                file=sys.stderr,
                flush=True,
            )
            break
        print("pt2scope: the worker died: its runs are failed, a new worker starts", file=sys.stderr, flush=True)
        worker = EmbeddedWorker(queues, env)
    stop()
    return max((child.wait() for child in (web, worker.process)), default=0)


class EmbeddedWorker:
    """The embedded worker process, in a session of its own so that its pool process (and through it, the
    job's sandbox, which dies with its parent) can be killed with it."""

    started_count = 0

    def __init__(self, queues: list[str], env: dict):
        EmbeddedWorker.started_count += 1
        # A new name each start: the reaper must see the restart (socket.gethostname() spelt out, not %h, so the
        # launcher knows the name it has to reap).
        self.name = f"embedded-{os.getpid()}-{EmbeddedWorker.started_count}@{socket.gethostname()}"
        self.process = subprocess.Popen(
            worker_command(self.name, queues), env=env, start_new_session=True, preexec_fn=dies_with_parent()
        )

    def ended(self) -> None:
        """Kill what the dead worker left (its pool process)."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()


def reap_worker(settings: Settings, name: str) -> list[str]:
    """Fail the runs a dead worker held, at once (not after its heartbeat goes stale)."""
    with session_factory(settings.database_url)() as session:
        runstore.forget_worker(session, name)
        return runstore.reap_stale_runs(session, settings)


def default_worker_name(queues: list[str]) -> str:
    """Unique per start: in a container the hostname (%h) and the pid repeat after a restart, and a reused name
    with a reused pid would hide the restart from the reaper."""
    return f"{'+'.join(queues)}-{secrets.token_hex(3)}@%h"


def healthy(kind: str, settings: Settings, port: int) -> bool:
    if kind == "web":
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=5) as response:
                return response.status == 200
        except OSError:
            return False
    # A worker is healthy while it beats: the same signal the reaper and the status page use.
    with session_factory(settings.database_url)() as session:
        return any(
            worker.name.endswith("@" + socket.gethostname()) for worker in runstore.online_workers(session, settings)
        )


def build_parser() -> argparse.ArgumentParser:
    env = os.environ
    parser = argparse.ArgumentParser(prog="python -m service")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("migrate", help="upgrade the database schema")
    serve = commands.add_parser("serve", help="migrate, then serve with one embedded worker")
    web = commands.add_parser("web", help="serve the web tier only (gunicorn)")
    for command in (serve, web):
        command.add_argument("--host", default="127.0.0.1")
        command.add_argument("--port", type=int, default=int(env.get("PORT", 8000)))
    # WEB_CONCURRENCY is gunicorn's and platforms' usual name for the number of worker processes.
    web.add_argument("--workers", type=int, default=int(env.get("WEB_CONCURRENCY", 2)))
    web.add_argument("--threads", type=int, default=int(env.get("PT2SCOPE_WEB_THREADS", 8)))
    worker = commands.add_parser("worker", help="run one Celery worker (one job at a time)")
    worker.add_argument(
        "--queues",
        default=env.get("PT2SCOPE_WORKER_QUEUES", ""),
        help="comma-separated: cpu, gpu (default: cpu, and gpu when a GPU is visible)",
    )
    worker.add_argument(
        "--name",
        default=env.get("PT2SCOPE_WORKER_NAME", ""),
        help="unique among live workers; %%h is the host name (default: queues-random@%%h)",
    )
    worker.add_argument("--loglevel", default=env.get("PT2SCOPE_LOG_LEVEL", "INFO"))
    health = commands.add_parser("health", help="exit 0 if this host's web server answers or its worker beats")
    health.add_argument("kind", choices=("web", "worker"))
    health.add_argument("--port", type=int, default=int(env.get("PORT", 8000)))
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    if args.command == "migrate":
        migrate(settings.database_url)
        return 0
    if args.command == "serve":
        return serve(settings, args.host, args.port)
    if args.command == "health":
        return 0 if healthy(args.kind, settings, args.port) else 1
    if args.command == "web":
        command = web_command(args.host, args.port, args.workers, args.threads)
    else:
        queues = [q for q in args.queues.split(",") if q] or worker_queues()
        if not set(queues) <= set(QUEUES):
            parser.error(f"--queues {args.queues}: choose from {', '.join(QUEUES)}")
        command = worker_command(args.name or default_worker_name(queues), queues, args.loglevel)
    # Replace this process: the container's stop signal then reaches gunicorn or Celery directly.
    os.execve(command[0], command, {**os.environ, **settings.to_env()})


if __name__ == "__main__":
    sys.exit(main())
