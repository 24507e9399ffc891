"""Shared by every test folder: kept minimal (fixtures live in each folder's conftest; helpers in tests/support.py)."""

import os
import sys

# The project's packages (engine, webapp, workers) and tests.support import from the repository root, however
# pytest was started.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Markers by need (declared in pyproject.toml), applied here by folder, file and fixture so that no test spells its
# own: `make test-fast` deselects what needs more than the virtual environment. The most specific entry wins.
MARKERS = {
    "": "unit",  # tests/*.py: the import rules, the job limits
    "web": "unit",
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
