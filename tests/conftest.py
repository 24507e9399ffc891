"""Shared by every test folder: kept minimal (fixtures live in each folder's conftest; helpers in tests/support.py)."""

import os
import sys
import time

import pytest

# The project's packages (engine, webapp, workers) and tests.support import from the repository root, however
# pytest was started.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.cpustat import cpu_jiffies  # noqa: E402

# Markers by need (declared in pyproject.toml), applied here by folder, file and fixture so that no test spells its
# own: `make test-fast` deselects what needs more than the virtual environment. The most specific entry wins.
MARKERS = {
    "": "unit",  # tests/*.py: the import rules, the job limits
    "web": "unit",
    "web/test_repro.py": "torch",  # runs the downloaded scripts
    "web/test_bisect_page.py": "torch",  # runs the minified repro
    "contract": "unit",
    "engine": "torch",
    "workers": "torch",
    "workers/test_device.py": "unit",
    "workers/test_fork_safety.py": "services",
    "security": "sandbox",
    "security/test_web_security.py": "unit",
    "browser": "browser",
    "deploy": "deploy",
}
FIXTURE_MARKERS = {"production_settings": "services"}  # PostgreSQL and Redis, scratch databases per test
TESTS = os.path.dirname(os.path.abspath(__file__))


def marker_for(path: str, fixtures) -> str:
    for fixture in fixtures:
        if fixture in FIXTURE_MARKERS:
            return FIXTURE_MARKERS[fixture]
    rel = os.path.relpath(path, TESTS).replace(os.sep, "/")
    folder = rel.rsplit("/", 1)[0] if "/" in rel else ""
    return MARKERS.get(rel) or MARKERS[folder.split("/")[0]]


def pytest_collection_modifyitems(config, items):
    for item in items:
        item.add_marker(marker_for(str(item.path), getattr(item, "fixturenames", ())))


# Where the suite waits rather than works: per test (set-up, call and tear-down together), the seconds the machine's
# cores sat idle meanwhile (/proc/stat), the 15 largest printed after --durations. A slow test that keeps the cores
# busy costs CPU work (compiles, imports); one that leaves them idle waits (limits run out, polls, heartbeats), and
# only the latter could share the machine with another test.
IDLE_REPORTED = 15
_idle_seconds: dict[str, tuple[float, float]] = {}


def _cpu_idle_jiffies() -> tuple[int, int]:
    spent = cpu_jiffies()
    return spent["idle"] + spent["iowait"], sum(spent.values())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    started, (idle_before, all_before) = time.monotonic(), _cpu_idle_jiffies()
    yield
    idle_after, all_after = _cpu_idle_jiffies()
    wall = time.monotonic() - started
    idle_share = (idle_after - idle_before) / max(1, all_after - all_before)
    _idle_seconds[item.nodeid] = (wall * idle_share, wall)


def pytest_terminal_summary(terminalreporter):
    if len(_idle_seconds) < IDLE_REPORTED:
        return
    terminalreporter.write_sep("=", f"{IDLE_REPORTED} tests that left the machine idle longest (time x idle share)")
    for nodeid, (idle, wall) in sorted(_idle_seconds.items(), key=lambda kv: -kv[1][0])[:IDLE_REPORTED]:
        terminalreporter.write_line(f"{idle:7.1f}s idle of {wall:7.1f}s {nodeid}")
    total_idle = sum(idle for idle, _ in _idle_seconds.values())
    total_wall = sum(wall for _, wall in _idle_seconds.values())
    terminalreporter.write_line(f"all tests: {total_idle:.0f} s idle of {total_wall:.0f} s")
