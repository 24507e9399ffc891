"""One sandboxed CUDA job on a GPU machine: the GPU is visible inside bubblewrap, the network is not.

    python bench/gpu_sandbox_check.py            # prints a table; exit 0 when every check passes

Self-contained for a bare GPU host (root, no bubblewrap, no network): when `bwrap` is not on PATH it unpacks
bench/vendor/bubblewrap_*.deb (fetched on a Debian machine with `apt-get download bubblewrap`; ignored by git, so
the device tool must carry bench/vendor) into /tmp and uses that. Needs torch with CUDA, and prlimit and setpriv
(util-linux). The job compiles the seed with eager and inductor_default (Triton) and probes from inside: the GPU,
the network interfaces, a TCP connection to a listener on the host's loopback (no traffic leaves the machine),
and the environment.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

PROBE = """
import json, os, socket
import torch

def attempt(fn):
    try:
        return "reached: " + repr(fn())[:80]
    except Exception as exc:
        return f"refused ({type(exc).__name__}: {exc})"[:120]

print("PROBE" + json.dumps({
    "cuda_available": torch.cuda.is_available(),
    "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    "interfaces": [name for _, name in socket.if_nameindex()],
    # The host listens on its loopback at HOST_PORT; a job in its own network namespace has another lo.
    "tcp_out": attempt(lambda: socket.create_connection(("127.0.0.1", HOST_PORT), timeout=3)),
    "uid": os.getuid(),
    "environment": sorted(os.environ),
}))

def f(x):
    return torch.sin(x) * torch.cos(x) + torch.tanh(x)

model = f
example_inputs = (torch.randn(1024, 1024),)
"""


def ensure_bwrap() -> str:
    found = shutil.which("bwrap")
    if found:
        return found
    debs = sorted(glob.glob(os.path.join(ROOT, "bench", "vendor", "bubblewrap_*.deb")))
    if not debs:
        sys.exit(
            "no bwrap on PATH and no bench/vendor/bubblewrap_*.deb: run `apt-get download bubblewrap` into "
            "bench/vendor on a Debian machine and carry that folder"
        )
    target = os.path.join(tempfile.gettempdir(), "pt2scope-bwrap")
    subprocess.run(["dpkg-deb", "-x", debs[-1], target], check=True)
    os.environ["PATH"] = os.path.join(target, "usr", "bin") + os.pathsep + os.environ["PATH"]
    return shutil.which("bwrap")


def main() -> int:
    from engine.job import JobRequest, run_job
    from engine.sandbox import Isolation, IsolationError, check

    rows = [("bwrap", ensure_bwrap()), ("host interfaces", ", ".join(n for _, n in socket.if_nameindex()))]
    isolation = Isolation()
    try:
        rows.append(("sandbox check", check(isolation)))
    except IsolationError as exc:
        rows.append(("sandbox check", f"FAILED: {exc}"))
        _print(rows)
        return 1
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="pt2scope-gpu-sandbox-") as job_dir:
        report = run_job(
            JobRequest(
                code=PROBE.replace("HOST_PORT", str(port)),
                filename="probe.py",
                device="cuda",
                configs=["eager", "inductor_default"],
            ),
            job_dir,
            isolation=isolation,
        )
    listener.close()
    line = next((out for out in report["user_output"]["stdout"].splitlines() if out.startswith("PROBE")), "PROBE{}")
    probe = json.loads(line[len("PROBE") :])
    benchmarks = {b["config"]: b for b in report["runtime"].get("benchmarks", [])}
    inductor = benchmarks.get("inductor_default", {})
    rows += [
        (
            "job status",
            report["status"]
            + (f" ({report['failure']['kind']}: {report['failure']['message'][:200]})" if report["failure"] else ""),
        ),
        ("isolation in report", f"{report['isolation'].get('mode')}, network: {report['isolation'].get('network')}"),
        ("GPU inside", f"{probe.get('cuda_available')} ({probe.get('gpu')})"),
        ("interfaces inside", ", ".join(probe.get("interfaces", []))),
        (f"TCP to the host's 127.0.0.1:{port} inside", probe.get("tcp_out")),
        ("uid inside", probe.get("uid")),
        ("secrets in environment", [v for v in probe.get("environment", []) if "URL" in v or "KEY" in v] or "none"),
        ("kernels (Triton)", len(report["inductor"]["kernels"])),
        (
            "inductor_default",
            f"{inductor.get('status')}, median {inductor.get('median_ms')} ms, "
            f"speedup {inductor.get('speedup_vs_eager')}x, max abs err {inductor.get('max_abs_error')}",
        ),
        ("memory limit", report["isolation"].get("enforced_by", {}).get("memory_limit_mb")),
        ("job seconds", f"{report['runtime'].get('job_seconds')} (wall {time.monotonic() - started:.1f})"),
    ]
    _print(rows)
    ok = (
        report["status"] == "ok"
        and probe.get("cuda_available")
        and probe.get("interfaces") == ["lo"]
        and str(probe.get("tcp_out", "")).startswith("refused")
        and report["inductor"]["kernels"]
    )
    print("RESULT:", "PASS" if ok else "FAIL")
    if not ok:
        print(report["user_output"]["stderr"][-3000:])
    return 0 if ok else 1


def _print(rows) -> None:
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    sys.exit(main())
