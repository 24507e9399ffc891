"""The job's child's helper processes, each in a real interpreter with torch: the warm processes' fork server
(engine.warm.ForkServer) and the end of Inductor's compile-worker pool once the report is written
(engine.child._end_compile_workers). A real job's warm processes, forked, are checked in test_compile_numbers.py."""

import ast
import importlib
import importlib.util
import inspect
import json
import subprocess
import sys
import textwrap
import time

from engine import warm
from engine.job import PROJECT_ROOT, JobRequest, _child_env
from engine.jobgroup import alive

FORK_SERVER_SCRIPT = """
import json, sys, time
from engine.warm import ForkServer

job = sys.argv[1]
server = ForkServer("cpu")
missing = server.run([job + "/missing", "inductor_default", job + "/out.json", ""], 60, job + "/missing.err")
started = time.monotonic()
hung = server.run([job, "inductor_default", job + "/out.json", ""], 3, job + "/hung.err")
print(json.dumps({"missing": missing, "hung": hung, "hung_s": time.monotonic() - started, "server": server.pid}))
"""

POOL_SCRIPT = """
import json, torch
import torch._inductor.config as inductor_config
from torch._inductor.async_compile import AsyncCompile
from engine.child import _end_compile_workers

inductor_config.compile_threads = 2
pool = AsyncCompile.process_pool()
_end_compile_workers()
print(json.dumps({"sidecar": pool.process.pid, "ended": pool.process.returncode is not None}))
"""


def run_script(script: str, *args: str) -> tuple[dict, str]:
    done = subprocess.run(
        [sys.executable, "-c", script, *args], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def test_the_fork_server_reports_failures_kills_what_overruns_and_ends_with_its_child(tmp_path):
    job = tmp_path / "job"
    job.mkdir()
    (job / "request.json").write_text(json.dumps({"filename": "slow.py", "device": "cpu"}))
    (job / "slow.py").write_text("import time\ntime.sleep(300)\n")
    result, _ = run_script(FORK_SERVER_SCRIPT, str(job))
    # A warm process that raised: its exit code, and why in its own stderr file (the child quotes it).
    assert result["missing"] == 1
    assert "FileNotFoundError" in (job / "missing.err").read_text()
    # One past its time: killed, reported as None well before the user's sleep would end.
    assert result["hung"] is None and result["hung_s"] < 60
    # The server holds nothing of the job once its child has gone.
    deadline = time.monotonic() + 10
    while alive(result["server"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(result["server"])


def test_the_compile_worker_pool_is_ended_at_once_when_the_report_is_written():
    result, stderr = run_script(POOL_SCRIPT)
    assert result["ended"] and not alive(result["sidecar"])
    # torch's own shutdown at exit found the pool ended: no "Ignored OSError in pool shutdown" with a traceback.
    assert "pool shutdown" not in stderr, stderr[-2000:]


def test_the_child_asks_for_cuda_without_starting_its_driver(tmp_path):
    # On torch 2.11, importing Inductor calls torch.cuda.is_available() (torch/_inductor/runtime/benchmarking.py):
    # by the driver, that started CUDA in the child before the fork server, and every forked warm process failed
    # "Cannot re-initialize CUDA in forked subprocess" (seen on an H100). By NVML it starts nothing. (No GPU here:
    # the device check that proved it is in docs/benchmarks.md, "The CLI against the plain script".)
    env = _child_env(str(tmp_path), 3, JobRequest(code="", device="cuda"))
    assert env["PYTORCH_NVML_BASED_CUDA_CHECK"] == "1"


def test_the_fork_server_imports_every_project_module_a_warm_process_imports():
    """engine.warm.MAIN_IMPORTS is what the fork server imports before it forks: a module main() imports and the
    list lacks is imported again in every warm process (a second or more each)."""
    imported = set()
    for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(warm.main)))):
        if isinstance(node, ast.ImportFrom) and node.module.split(".")[0] in ("engine", "contract"):
            package = hasattr(importlib.import_module(node.module), "__path__")
            for alias in node.names:  # `from engine import logtap` imports engine.logtap; `from a.b import f`, a.b
                submodule = f"{node.module}.{alias.name}"
                imported.add(submodule if package and importlib.util.find_spec(submodule) else node.module)
    assert imported == set(warm.MAIN_IMPORTS)
