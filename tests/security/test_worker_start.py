"""A worker says which isolation its jobs get when it starts, and refuses to start when it cannot provide it."""

import os
import subprocess
import sys

from storage.config import PROJECT_ROOT
from tests.support import Worker, make_settings
from workers.launch import worker_command


def test_a_worker_without_bubblewrap_refuses_to_start_and_says_why(tmp_path):
    settings = make_settings(tmp_path)
    env = {**os.environ, **settings.to_env(), "PATH": os.path.dirname(sys.executable)}  # no /usr/bin: no bwrap
    result = subprocess.run(
        worker_command("nobwrap@localhost", ["cpu"]),
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 3
    assert "CRITICAL: pt2scope worker cannot start: bubblewrap (bwrap) is not on PATH" in result.stderr
    assert "PT2SCOPE_ISOLATION=none" in result.stderr


def test_a_worker_announces_its_isolation_and_none_is_loud(tmp_path):
    for isolation, expected in (
        ("bubblewrap", "isolation: bubblewrap (no network"),
        ("none", "WARNING: pt2scope worker isolation: NONE"),
    ):
        settings = make_settings(tmp_path / isolation, isolation=isolation)
        with Worker(settings) as worker:
            pass
        log = open(worker.log_path).read()
        assert expected in log and f"isolation: {'NONE' if isolation == 'none' else 'bubblewrap'}" in log, log[-2000:]
