import pytest

from engine.job import warm_up_shared_pch
from engine.sandbox import Isolation
from tests.web.conftest import app, broker_messages, client, db, settings  # noqa: F401 - the web tests' fixtures


@pytest.fixture(scope="session")
def shared_pch(tmp_path_factory):
    """A trusted precompiled header, built once per session (20-60 s of g++): test_shared_pch.py and
    test_kernel_cache.py share it."""
    isolation = Isolation(shared_pch_dir=str(tmp_path_factory.mktemp("pch")))
    assert any(name.endswith(".gch") for name in warm_up_shared_pch(isolation))
    assert warm_up_shared_pch(isolation) == []  # made for this torch and compiler already: no second compile
    return isolation
