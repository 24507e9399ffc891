"""TORCH_TRACE import speed beside tlparse, on the same generated big log, in one session.

The log: the recorded H200 logs (tests/fixtures/traces-h200-torch2.11) replayed with new frame ids until it
reaches --mb, so every compile id is distinct (as in one long job with many compiled frames). Then, interleaved,
--reps times each: `tlparse LOG -o OUT` and `python -m engine import LOG` (its importer child imports no torch),
wall time and peak memory (RSS, /usr/bin/time); and the worker's path (engine.importjob.run_import, the reports read
back, then runstore.store_import, which validates them, into SQLite): when the report is viewable; and the whole
road through the API (issue 20 item 5: readable in under 15 s): the log POSTed to /api/traces of the embedded service
(`python -m service serve`, started once before the reps, as deployed: SQLite, its broker, one worker), until its
report answers on /api/runs/ID/report. Prints medians with min-max and the load.
    python bench/trace_import.py [--mb 100] [--reps 3] [--tlparse PATH]"""

import argparse
import http.client
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from datetime import UTC, datetime

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from tests.deploy.stack import embedded_service  # noqa: E402
from tests.support import wait_until  # noqa: E402

TRACES = os.path.join(ROOT, "tests", "fixtures", "traces-h200-torch2.11")
SOURCES = ("mlp_train_bf16", "graph_break", "recompile", "seed_default", "input_mutation_cudagraph_skip")


def make_log(path: str, megabytes: float) -> int:
    """Replay the recorded logs, shifting frame ids, until the file holds ``megabytes``; returns its size."""
    records = []
    for name in SOURCES:
        with open(os.path.join(TRACES, f"{name}.trace.log")) as f:
            records.append(f.read().splitlines(keepends=True))
    target, written, offset = megabytes * 1024**2, 0, 0
    with open(path, "w") as out:
        while written < target:
            for lines in records:
                frames = 0
                for line in lines:
                    start = line.find("] {")
                    if not line.startswith("\t") and start >= 0 and '"frame_id"' in line:
                        meta = json.loads(line[start + 2 :])
                        frames = max(frames, meta["frame_id"] + 1)
                        meta["frame_id"] += offset
                        line = line[: start + 2] + json.dumps(meta) + "\n"
                    out.write(line)
                    written += len(line)
                offset += frames
    return os.path.getsize(path)


def timed(command: list[str]) -> tuple[float, int]:
    """(wall seconds, peak RSS in MiB) of one command."""
    started = time.monotonic()
    done = subprocess.run(["/usr/bin/time", "-f", "%M", *command], capture_output=True, text=True, cwd=ROOT)
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"{command[0]} failed:\n{done.stderr[-2000:]}")
    return wall, int(done.stderr.strip().splitlines()[-1]) // 1024


def worker_path(log: str, out: str, url: str) -> tuple[float, float]:
    """What a worker does: (import seconds: run_import, its child started, reports read back;
    store seconds: runstore.store_import, validation included, into SQLite)."""
    from engine import importjob
    from storage import runstore
    from storage.db import session_factory

    limits = importjob.ImportLimits(time_limit_s=900.0)
    started = time.monotonic()
    reports = importjob.run_import(log, out, "big.log", limits)
    imported = time.monotonic() - started
    with session_factory(url)() as session:
        run = runstore.create_import(session, "big.log", io.BytesIO(b"-"), 10)
        started = time.monotonic()
        runstore.store_import(session, run.id, reports.first, reports.further())
        return imported, time.monotonic() - started


def through_the_api(log: str, base: str) -> tuple[float, float, str]:
    """(upload seconds: the POST until its 202; readable seconds: from the POST's start until /api/runs/ID/report
    answers with the report; where the time went, from the run's stored times: created (the upload stored), started
    (a worker claimed it), finished (the reports stored), and the report's GET)."""
    started = time.monotonic()
    answer = _post_file(f"{base}/api/traces", log)
    uploaded = time.monotonic() - started
    seen: dict = {}

    def report():
        with urllib.request.urlopen(f"{base}/api/runs/{answer['id']}", timeout=30) as response:
            seen["status"] = json.load(response)
        if seen["status"]["status"] == "failed":
            raise SystemExit(f"the import failed: {seen['status']['error']}")
        if seen["status"]["status"] != "succeeded":
            return None
        asked = time.monotonic()
        with urllib.request.urlopen(answer["report_url"], timeout=60) as response:
            json.load(response)
        seen["get_s"] = time.monotonic() - asked
        return seen

    wait_until(report, timeout=900, what="the imported report", interval=0.1)
    readable = time.monotonic() - started
    at = {k: _unix(seen["status"][f"{k}_at"]) for k in ("created", "started", "finished")}
    where = (
        f"queued {at['started'] - at['created']:.2f}, worker {at['finished'] - at['started']:.2f}, "
        f"the report's GET {seen['get_s']:.2f}"
    )
    return uploaded, readable, where


def _unix(iso: str) -> float:
    return datetime.fromisoformat(iso.removesuffix("Z")).replace(tzinfo=UTC).timestamp()


def _post_file(url: str, path: str) -> dict:
    """A multipart POST of the file as the form's `trace` field, streamed from disk (as a browser or curl sends it)."""
    boundary = "pt2scope-bench-boundary"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="trace"; filename="{os.path.basename(path)}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=300)
    connection.putrequest("POST", parts.path)
    connection.putheader("Content-Type", f"multipart/form-data; boundary={boundary}")
    connection.putheader("Content-Length", str(len(head) + os.path.getsize(path) + len(tail)))
    connection.endheaders()
    connection.send(head)
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            connection.send(chunk)
    connection.send(tail)
    response = connection.getresponse()
    body = json.loads(response.read())
    connection.close()
    if response.status != 202:
        raise SystemExit(f"upload refused ({response.status}): {body}")
    return body


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=100)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument(
        "--tlparse",
        default=shutil.which("tlparse") or os.path.join(os.path.dirname(sys.executable), "tlparse"),
        help="tlparse's binary; without one, only pt2scope is timed. For the bench only (not a requirement): "
        "pip install --target /tmp/tlparse-pkg tlparse==0.4.3, then --tlparse /tmp/tlparse-pkg/bin/tlparse",
    )
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="pt2scope-bench-trace-")
    log = os.path.join(folder, "dedicated_log_torch_trace_big.log")
    size = make_log(log, args.mb)
    print(
        f"log: {size / 1024**2:.1f} MiB, {sum(1 for _ in open(log)):,} lines; load before: "
        f"{open('/proc/loadavg').read().strip()}",
        flush=True,
    )
    from storage.db import migrate

    url = f"sqlite:///{folder}/bench.sqlite"
    migrate(url)
    results = {"tlparse": [], "pt2scope import": []} if os.path.exists(args.tlparse) else {"pt2scope import": []}
    worker, api = [], []
    with embedded_service(
        sys.executable,
        os.path.join(folder, "service"),
        os.path.join(folder, "serve.log"),
        PT2SCOPE_RATE_LIMIT="0",
        PT2SCOPE_PCH_WARMUP="false",  # an import compiles nothing
        PT2SCOPE_KERNEL_CACHE_GALLERY="none",
    ) as base:
        for rep in range(args.reps):
            for name in results:  # interleaved: all see the same machine, rep by rep
                out = os.path.join(folder, f"out-{name.split()[0]}-{rep}")
                command = (
                    [args.tlparse, log, "-o", out, "--overwrite", "--no-browser"]
                    if name == "tlparse"
                    else [sys.executable, "-m", "engine", "import", log, "--out", out]
                )
                wall, rss = timed(command)
                results[name].append((wall, rss))
                print(f"  {name:<16} rep {rep + 1}: {wall:6.2f} s, {rss:5d} MiB peak", flush=True)
            imported, stored = worker_path(log, os.path.join(folder, f"out-worker-{rep}"), url)
            worker.append((imported, stored))
            print(
                f"  worker path      rep {rep + 1}: import {imported:6.2f} s, store {stored:5.2f} s, "
                f"viewable after {imported + stored:6.2f} s",
                flush=True,
            )
            uploaded, readable, where = through_the_api(log, base)
            api.append((uploaded, readable))
            print(
                f"  through the API  rep {rep + 1}: upload {uploaded:6.2f} s, readable after {readable:6.2f} s ({where})",
                flush=True,
            )
    report_mb = os.path.getsize(os.path.join(folder, "out-pt2scope-0", "report.json")) / 1024**2
    print(f"load after: {open('/proc/loadavg').read().strip()}")
    for name, runs in results.items():
        walls, rss = [w for w, _ in runs], [r for _, r in runs]
        median = statistics.median(walls)
        print(
            f"{name:<16} median {median:6.2f} s (min {min(walls):.2f}, max {max(walls):.2f}), "
            f"{size / 1024**2 / median:5.1f} MiB/s, peak RSS median {statistics.median(rss)} MiB "
            f"(max {max(rss)})"
        )
    viewable = [i + s for i, s in worker]
    print(
        f"report.json {report_mb:.1f} MiB; worker path (storage validates, then stores in "
        f"SQLite): import median {statistics.median(i for i, _ in worker):.2f} s, store median "
        f"{statistics.median(s for _, s in worker):.2f} s, viewable after median {statistics.median(viewable):.2f} s "
        f"(min {min(viewable):.2f}, max {max(viewable):.2f})"
    )
    readable = [r for _, r in api]
    print(
        f"through the API (POST /api/traces of the embedded service until /api/runs/ID/report answers): upload median "
        f"{statistics.median(u for u, _ in api):.2f} s, readable after median {statistics.median(readable):.2f} s "
        f"(min {min(readable):.2f}, max {max(readable):.2f})"
    )
    if "tlparse" in results:
        reference = statistics.median(w for w, _ in results["tlparse"])
        print(
            f"against tlparse (median {reference:.2f} s): `python -m engine import` "
            f"{statistics.median(w for w, _ in results['pt2scope import']) / reference:.2f}x its time, viewable "
            f"through the worker {statistics.median(viewable) / reference:.2f}x, readable through the API "
            f"{statistics.median(readable) / reference:.2f}x"
        )
    else:
        print(f"tlparse not found at {args.tlparse}: no ratio (see --tlparse)")
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
