"""pt2scope's shared vocabulary: the types every tier agrees on (the report, compile ids, graph ids).

contract/README.md lists the modules and says how to add a report field; docs/report-schema.md is generated from
here (``python -m contract.docs``).

Dependency rule: pure Python plus pydantic; imports nothing else of pt2scope and never torch, Flask, Celery or
SQL, so the engine (both sides of its process boundary), the workers, storage, the web app and the tests can all
import it.
"""
