"""Concurrent submissions to the embedded default (`make run`): N clients submit at once over HTTP, one worker
runs the jobs. Reports each POST's latency and each run's submit-to-finish time, and that every run finished once.

    .venv/bin/python bench/concurrent_submissions.py [N]   (results: docs/benchmarks.md, "Job boundary")
"""

from __future__ import annotations

import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CODE = open(os.path.join(ROOT, "examples", "seed.py")).read()


def call(base: str, path: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(
        base + path, data=json.dumps(body).encode() if body else None, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    with tempfile.TemporaryDirectory(prefix="pt2scope-bench-submit-") as instance, socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        env = {
            **os.environ,
            "PT2SCOPE_INSTANCE": instance,
            "PT2SCOPE_PCH_WARMUP": "0",
            "PT2SCOPE_KERNEL_CACHE_GALLERY": "none",
            "PT2SCOPE_RATE_LIMIT": "0",
        }
        server = subprocess.Popen(
            [sys.executable, "-m", "service", "serve", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            while True:
                try:
                    if call(base, "/api/status")["workers"]:
                        break
                except OSError:
                    pass
                time.sleep(0.5)
            posts, finished, start = {}, {}, threading.Barrier(count)

            def submit(i: int) -> None:
                start.wait()
                t0 = time.perf_counter()
                run_id = call(base, "/api/runs", {"code": CODE, "configs": ["eager"]})["id"]
                posts[run_id] = (t0, time.perf_counter() - t0)

            threads = [threading.Thread(target=submit, args=(i,)) for i in range(count)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            while len(finished) < count:
                for run_id, (t0, _) in posts.items():
                    if run_id not in finished:
                        status = call(base, f"/api/runs/{run_id}")
                        if status["status"] in ("succeeded", "failed"):
                            finished[run_id] = (status["status"], time.perf_counter() - t0)
                time.sleep(0.2)
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait()
    post_s = [p for _, p in posts.values()]
    done_s = sorted(d for _, d in finished.values())
    statuses = sorted(s for s, _ in finished.values())
    print(
        f"load {open('/proc/loadavg').read().split()[0]}; {count} submissions at once, one embedded worker; "
        f"statuses: {statuses.count('succeeded')} succeeded, {statuses.count('failed')} failed"
    )
    print(f"POST latency: median {statistics.median(post_s):.3f} s (min {min(post_s):.3f}, max {max(post_s):.3f})")
    print(
        f"submit to finished: first {done_s[0]:.1f} s, median {statistics.median(done_s):.1f} s, last "
        f"{done_s[-1]:.1f} s ({done_s[-1] / count:.1f} s per run)"
    )


if __name__ == "__main__":
    main()
