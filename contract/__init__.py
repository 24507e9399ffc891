"""pt2scope's shared vocabulary: the types every tier agrees on (the report, compile ids, graph ids).

contract/README.md lists the modules and says how to add a report field; docs/report-schema.md is generated from
here (``python -m contract.docs``).

Dependency rule: pure Python plus pydantic; imports nothing else of pt2scope and never torch, Flask, Celery or
SQL, so the engine (both sides of its process boundary), the workers, storage, the web app and the tests can all
import it.
"""

# The report first, whichever module is imported: contract/debug.py's models build on the report's shared ones, and
# the report imports them in turn (after defining those), so the report must be the one to start that import.
from contract import report as _report  # noqa: E402, F401
