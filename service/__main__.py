"""pt2scope's processes, one subcommand each (docs/deploy.md):

    python -m service serve     migrate, then gunicorn and one embedded worker (what `make run` calls)
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
import urllib.request

from storage import runstore
from storage.config import Settings
from storage.db import migrate, session_factory
from storage.queue import QUEUES
from workers.launch import web_command, worker_command, worker_queues


def serve(settings: Settings, host: str, port: int) -> int:
    migrate(settings.database_url)
    env = {**os.environ, **settings.to_env()}
    queues = worker_queues()
    print(f"pt2scope: http://{host}:{port}  (worker queues: {', '.join(queues)}; data in {settings.instance_path})",
          flush=True)
    worker = subprocess.Popen(worker_command(f"embedded-{os.getpid()}@%h", queues), env=env)
    web = subprocess.Popen(web_command(host, port), env=env)
    children = (web, worker)

    def stop(*_):
        for child in children:
            if child.poll() is None:
                child.terminate()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        os.wait()  # either child ending ends both: a server without its worker would queue jobs forever
    except ChildProcessError:
        pass
    stop()
    return max((child.wait() for child in children), default=0)


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
        return any(worker.name.endswith("@" + socket.gethostname())
                   for worker in runstore.online_workers(session, settings))


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
    worker.add_argument("--queues", default=env.get("PT2SCOPE_WORKER_QUEUES", ""),
                        help="comma-separated: cpu, gpu (default: cpu, and gpu when a GPU is visible)")
    worker.add_argument("--name", default=env.get("PT2SCOPE_WORKER_NAME", ""),
                        help="unique among live workers; %%h is the host name (default: queues-random@%%h)")
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
