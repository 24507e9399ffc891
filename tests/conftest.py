"""Shared by every test folder: kept minimal (fixtures live in each folder's conftest; helpers in tests/support.py)."""
import os
import sys

# The project's packages (engine, webapp, workers) and tests.support import from the repository root, however
# pytest was started.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
