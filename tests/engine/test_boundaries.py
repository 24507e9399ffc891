"""The CLI contract, checked in fresh processes, and guarded capture (the import rules: tests/test_layers.py)."""

import os
import subprocess
import sys

import pytest

from engine.stages.base import Context

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_guarded_capture_reports_unavailable_instead_of_failing():
    ctx = Context(user_file="model.py", device="cpu", train=False, tap=None, emit=lambda e: None)
    with ctx.guard("inductor.some_private_hook"):
        raise AttributeError("module 'torch._inductor.config' has no attribute 'some_private_hook'")
    assert ctx.unavailable == [
        {
            "name": "inductor.some_private_hook",
            "reason": "AttributeError: module 'torch._inductor.config' has no attribute 'some_private_hook'",
        }
    ]


def cli(*args):
    return subprocess.run([sys.executable, "-m", "engine", "explore", *args], cwd=ROOT, capture_output=True, text=True)


def test_cli_prints_progress_and_a_summary(tmp_path):
    out = cli("examples/graph_break.py", "--configs", "eager,backend_eager", "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert "dynamo [backend_eager] ..." in out.stderr and "benchmark [backend_eager] done" in out.stderr
    # The report's own counts, under the names every page uses (contract/counts.py).
    assert "dynamo: 3 Dynamo graphs, 2 graph breaks, 2 unique graph breaks, 0 recompiles, " in out.stdout
    assert (tmp_path / "report.json").exists() and f"report: {tmp_path}/report.json" in out.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["--configs", "eager,turbo"], "error: unknown config 'turbo'"),
        (["--device", "tpu"], "invalid choice: 'tpu'"),
        (["--processes", "1"], "error: measuring processes must be 2 to 20 (a speedup is decided across at least 2"),
        (["--processes", "21"], "each one more costs a fresh process's import and warm compile), not 21"),
    ],
)
def test_cli_rejects_bad_requests_before_running(args, message, tmp_path):
    out = cli("examples/seed.py", *args, "--out", str(tmp_path))
    assert out.returncode == 2 and message in out.stderr


def test_cli_failure_is_one_line_and_nonzero(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\nmodel = lambda x: x\nexample_inputs = (torch.ones(2),\n")
    out = cli(str(bad), "--configs", "eager", "--out", str(tmp_path / "out"), "--quiet")
    assert out.returncode == 1
    first = out.stderr.strip().splitlines()[0]
    assert first.startswith("failed (syntax_error, stage load): SyntaxError:") and "bad.py:3" in first
