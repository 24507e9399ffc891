"""The sandbox, measured from inside a real job (real bubblewrap, real torch): what user code can reach."""

import json
import os
import sys

from engine.job import JobRequest, run_job
from engine.sandbox import Isolation, check
from storage.config import PROJECT_ROOT

PROBE = """
import json, os, socket
import torch

def attempt(fn):
    try:
        return ["ok", repr(fn())[:300]]
    except Exception as exc:
        return ["denied", f"{type(exc).__name__}: {exc}"]

def write(path):
    with open(path, "w") as f:
        f.write("pwned")

found = {
    "interfaces": [name for _, name in socket.if_nameindex()],
    "postgres": attempt(lambda: socket.create_connection(("127.0.0.1", 5432), timeout=3)),
    "dns": attempt(lambda: socket.getaddrinfo("pypi.org", 443)),
    "environment": sorted(os.environ),
    "project": sorted(os.listdir(PROJECT)),
    "storage_config": attempt(lambda: open(os.path.join(PROJECT, "storage", "config.py")).read()),
    "other_job": attempt(lambda: open(OTHER_JOB_FILE).read()),
    "write_engine": attempt(lambda: write(os.path.join(PROJECT, "engine", "pwned.py"))),
    "write_contract": attempt(lambda: write(os.path.join(PROJECT, "contract", "pwned.py"))),
    "write_venv": attempt(lambda: write(os.path.join(VENV, "pwned.py"))),
    "write_host_tmp": attempt(lambda: write(HOST_TMP_FILE)),
    "write_job_folder": attempt(lambda: write("mine.txt")),
    "uid": os.getuid(),
    "capabilities": [line.split()[1] for line in open("/proc/self/status") if line.startswith("CapEff")],
    "processes_visible": len([p for p in os.listdir("/proc") if p.isdigit()]),
}
print("PROBE" + json.dumps(found))
model = lambda x: x.sin()
example_inputs = (torch.ones(2),)
"""


def _probe(tmp_path, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgresql://pt2scope:secret@127.0.0.1/prod")
    monkeypatch.setenv("CELERY_BROKER_URL", "redis://:secret@127.0.0.1:6379/0")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    other_job = tmp_path / "other-job"
    other_job.mkdir()
    (other_job / "model.py").write_text("SECRET_MODEL = 1\n")
    host_tmp_file = f"/tmp/pt2scope-escape-{os.getpid()}"
    code = (
        f"PROJECT = {PROJECT_ROOT!r}\nVENV = {sys.prefix!r}\nOTHER_JOB_FILE = {str(other_job / 'model.py')!r}\n"
        f"HOST_TMP_FILE = {host_tmp_file!r}\n" + PROBE
    )
    report = run_job(JobRequest(code=code, configs=["eager"]), job_dir=str(tmp_path / "job"), isolation=Isolation())
    assert report["status"] == "ok", report["failure"]
    line = next(out for out in report["user_output"]["stdout"].splitlines() if out.startswith("PROBE"))
    return report, json.loads(line[len("PROBE") :]), host_tmp_file


def test_user_code_finds_no_network_no_secrets_and_nothing_to_write_outside_its_folder(tmp_path, monkeypatch):
    report, found, host_tmp_file = _probe(tmp_path, monkeypatch)
    # Network: only loopback in an empty namespace. PostgreSQL listens on this machine's 127.0.0.1:5432, so
    # reaching it would mean the job shares the host's network.
    assert found["interfaces"] == ["lo"]
    assert found["postgres"][0] == "denied" and "Connection refused" in found["postgres"][1]
    assert found["dns"][0] == "denied"
    # Environment: only what the child needs.
    assert not {"DATABASE_URL", "CELERY_BROKER_URL", "AWS_SECRET_ACCESS_KEY"} & set(found["environment"])
    assert all(not name.startswith(("PT2SCOPE_INSTANCE", "SECRET")) for name in found["environment"])
    # Files: of the project only the engine package (and the virtualenv) exist, read-only; other jobs and the
    # instance folder do not exist at all; the host's /tmp is not the job's.
    assert set(found["project"]) <= {"engine", "contract", ".venv"} and "engine" in found["project"]
    assert found["storage_config"][0] == "denied" and "No such file" in found["storage_config"][1]
    assert found["other_job"][0] == "denied"
    assert found["write_engine"][0] == "denied" and "Read-only" in found["write_engine"][1]
    assert found["write_contract"][0] == "denied" and "Read-only" in found["write_contract"][1]
    assert found["write_venv"][0] == "denied"
    assert found["write_job_folder"][0] == "ok"
    assert not os.path.exists(host_tmp_file) and not os.path.exists(os.path.join(PROJECT_ROOT, "engine", "pwned.py"))
    # Who: not root, no capabilities, alone in its process namespace.
    assert found["uid"] != 0 and found["capabilities"] == ["0000000000000000"]
    assert found["processes_visible"] <= 3  # bubblewrap's init, the child, maybe a compile helper
    assert report["isolation"]["mode"] == "bubblewrap" and report["isolation"]["network"].startswith("none")


def test_check_reports_bubblewrap_and_refuses_when_it_is_missing(monkeypatch):
    assert check(Isolation()).startswith("isolation: bubblewrap")
    assert "NONE" in check(Isolation(mode="none"))
    monkeypatch.setenv("PATH", "/nonexistent")
    try:
        check(Isolation())
    except Exception as exc:
        assert "bubblewrap" in str(exc) and "PT2SCOPE_ISOLATION=none" in str(exc)
    else:
        raise AssertionError("check() accepted a machine without bwrap")


def test_a_report_file_swapped_for_a_link_is_not_followed(tmp_path):
    """The job owns its folder: it may replace report.json and stdout.txt by links to the worker's files. The
    worker must not read through them (it runs as root here)."""
    secret = tmp_path / "worker-secret.txt"
    secret.write_text('{"status": "ok", "leak": "WORKER SECRET"}')
    secret.chmod(0o600)
    job = tmp_path / "job"
    code = (
        "import os\nos.remove('stdout.txt')\nos.symlink(%r, 'stdout.txt')\nos.symlink(%r, 'report.json')\nos._exit(0)\n"
    ) % (str(secret), str(secret))
    report = run_job(JobRequest(code=code, configs=["eager"]), job_dir=str(job), isolation=Isolation())
    assert os.path.islink(job / "report.json")  # the job did plant the links
    assert report["status"] == "failed" and "WORKER SECRET" not in json.dumps(report)


def test_the_child_python_is_named_by_a_path_that_is_bound_into_the_sandbox(tmp_path):
    """A virtual environment reached through a symlinked folder (a worktree's .venv -> another checkout's) is bound
    by its real path: the child must be started by that path, or bubblewrap finds no such file."""
    from engine.sandbox import CHILD_PYTHON, _bwrap

    args = _bwrap(Isolation(), str(tmp_path), {"PATH": "/usr/bin:/bin"}, "cpu", None)
    bound = [args[i + 1] for i, arg in enumerate(args) if arg == "--ro-bind"]
    assert any(CHILD_PYTHON.startswith(path.rstrip("/") + "/") for path in bound), (CHILD_PYTHON, bound)
    assert os.path.realpath(os.path.dirname(CHILD_PYTHON)) == os.path.dirname(CHILD_PYTHON)
