"""Markers by need are applied by folder, file and fixture (tests/conftest.py); make test-fast selects on them."""

import os

from tests.conftest import TESTS, marker_for


def test_the_most_specific_rule_decides():
    assert marker_for(os.path.join(TESTS, "test_layers.py"), []) == "unit"
    assert marker_for(os.path.join(TESTS, "engine", "test_examples.py"), []) == "torch"
    assert marker_for(os.path.join(TESTS, "security", "test_sandbox.py"), []) == "sandbox"
    assert marker_for(os.path.join(TESTS, "security", "test_web_security.py"), []) == "unit"
    assert (
        marker_for(os.path.join(TESTS, "workers", "test_worker_redis_postgres.py"), ["tmp_path", "production_settings"])
        == "services"
    )


def test_every_test_folder_has_a_rule():
    folders = {
        name
        for name in os.listdir(TESTS)
        if os.path.isfile(os.path.join(TESTS, name, "__init__.py"))
        or os.path.isfile(os.path.join(TESTS, name, "conftest.py"))
    }
    for folder in folders - {"fixtures"}:
        marker_for(os.path.join(TESTS, folder, "test_anything.py"), [])  # a KeyError names the folder
