"""Bad input and faults: each gives a failed report naming the cause, the stage and the user's line."""

import pytest

from contract.report import checked_report
from tests.engine.conftest import run_code

FAST = ["eager", "backend_eager"]


def test_syntax_error_names_the_line(tmp_path):
    report, _ = run_code(tmp_path, "import torch\ndef f(x):\n    return x +\n", configs=FAST)
    failure = report["failure"]
    assert report["status"] == "failed" and failure["kind"] == "syntax_error" and failure["stage"] == "load"
    assert failure["line"] == 3 and "model.py:3" in failure["message"]


def test_missing_example_inputs_says_what_to_add(tmp_path):
    report, _ = run_code(tmp_path, "import torch\nmodel = torch.nn.Linear(2, 2)\n", configs=FAST)
    assert report["failure"]["kind"] == "missing_name"
    assert "example_inputs" in report["failure"]["message"] and "torch.randn" in report["failure"]["message"]


def test_exception_in_the_model_names_the_user_line(tmp_path):
    code = (
        "import torch\n\n\ndef f(x):\n    y = x * 2\n    raise ValueError('bad shape')\n\n\n"
        "model = f\nexample_inputs = (torch.ones(2),)\n"
    )
    report, events = run_code(tmp_path, code, configs=FAST)
    failure = report["failure"]
    assert failure["kind"] == "user_exception" and failure["stage"] == "eager" and failure["line"] == 6
    assert "ValueError: bad shape" in failure["message"] and "model.py:6" in failure["message"]
    assert "model.py" in failure["traceback"]
    assert events[-1]["state"] == "failed"


def test_compile_failure_in_torch_names_the_stage(tmp_path):
    # Works eagerly, but a backend that raises makes torch.compile fail: the report names the stage.
    code = (
        "import torch\nimport torch._dynamo\n\n"
        "@torch._dynamo.register_backend\ndef broken(gm, example_inputs):\n    raise RuntimeError('no kernels today')\n\n"
        "model = torch.compile(lambda x: x.sin(), backend='broken')\nexample_inputs = (torch.ones(3),)\n"
    )
    report, _ = run_code(tmp_path, code, configs=FAST)
    assert report["status"] == "failed" and "no kernels today" in report["failure"]["message"]
    assert report["failure"]["line"] == 6


def test_hang_is_killed_at_the_time_limit(tmp_path):
    code = "import torch\nmodel = lambda x: x\nwhile True:\n    pass\n"
    report, _ = run_code(tmp_path, code, configs=FAST, time_limit_s=8)
    assert report["failure"]["kind"] == "timeout" and "time limit of 8 s" in report["failure"]["message"]
    assert report["runtime"]["job_seconds"] < 20


def test_crash_of_the_child_becomes_a_failed_report(tmp_path):
    code = "import os\nos.kill(os.getpid(), 11)\n"
    report, _ = run_code(tmp_path, code, configs=FAST)
    assert report["failure"]["kind"] == "crash" and "SIGSEGV" in report["failure"]["message"]


def test_child_gets_no_secrets_from_the_parent_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgresql://secret@db/prod")
    code = (
        "import os, torch\nprint('ENV', sorted(os.environ))\nmodel = lambda x: x\nexample_inputs = (torch.ones(1),)\n"
    )
    report, _ = run_code(tmp_path, code, configs=["eager"])
    assert report["status"] == "ok"
    assert "DATABASE_URL" not in report["user_output"]["stdout"] and "ENV" in report["user_output"]["stdout"]


# The user's code can outlive the child's last write (an atexit hook) and replace report.json: the parent reads it
# as untrusted data and validates it (contract.report), so a wrong field is a failure naming it, never a crash.
SPOIL_THE_REPORT = """import atexit, json, torch


def spoil():
    with open("report.json") as f:
        report = json.load(f)
    {change}
    with open("report.json", "w") as f:
        json.dump(report, f)


atexit.register(spoil)
model = lambda x: x.sin()
example_inputs = (torch.ones(2),)
"""


@pytest.mark.parametrize(
    "change, named",
    [
        (
            'report["dynamo"]["summary"]["graph_count"] = "many"',
            "dynamo.summary.graph_count: Input should be a valid integer",
        ),
        (
            'report["runtime"]["benchmarks"][0]["verdict"] = "fast"',
            "runtime.benchmarks[0].verdict: Extra inputs are not permitted",
        ),
        ('report["schema_version"] = 99', "report schema_version 99 is not one this pt2scope reads"),
    ],
)
def test_an_invalid_report_from_the_child_is_a_failure_naming_the_field(tmp_path, change, named):
    report, _ = run_code(tmp_path, SPOIL_THE_REPORT.format(change=change), configs=["eager"])
    failure = report["failure"]
    assert report["status"] == "failed" and failure["kind"] == "invalid_report"
    assert failure["message"].startswith(f"report from the job is invalid: {named}")
    assert report["dynamo"]["graphs"] == []  # nothing of the invalid report is kept
    assert checked_report(report) == report
