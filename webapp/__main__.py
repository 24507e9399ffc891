"""`python -m webapp migrate` brings the database to the newest schema; `python -m webapp serve` (what
`make run` calls) migrates, then serves pt2scope with one embedded worker until interrupted."""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys

from webapp.config import Settings
from webapp.db import migrate
from workers.launch import worker_command, worker_queues


def serve(settings: Settings, host: str, port: int) -> int:
    migrate(settings.database_url)
    env = {**os.environ, **settings.to_env()}
    queues = worker_queues()
    print(f"pt2scope: http://{host}:{port}  (worker queues: {', '.join(queues)}; data in {settings.instance_path})",
          flush=True)
    worker = subprocess.Popen(worker_command(f"embedded-{os.getpid()}@%h", queues), env=env)
    web = subprocess.Popen([sys.executable, "-m", "gunicorn", "--bind", f"{host}:{port}", "--workers", "2",
                            "--threads", "8", "--access-logfile", "-", "webapp:create_app()"], env=env)
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


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m webapp")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("migrate", help="upgrade the database schema")
    serve_parser = commands.add_parser("serve", help="migrate, then serve with one embedded worker")
    serve_parser.add_argument("--host", default="127.0.0.1")
    serve_parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", 8000)))
    args = parser.parse_args()
    settings = Settings.from_env()
    if args.command == "migrate":
        migrate(settings.database_url)
        return 0
    return serve(settings, args.host, args.port)


if __name__ == "__main__":
    sys.exit(main())
